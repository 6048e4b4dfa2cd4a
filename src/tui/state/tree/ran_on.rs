//! Where a remote sub-session runs (issue 27): metadata `ran_on` (`{worker, host,
//! pid}`, written by the root when a worker starts the job) as the tree shows it — a
//! dim `@host` after the row's label, or `@w-1a2b3c4d` (the worker id) when the worker
//! runs on this machine, where the host would tell the sessions apart by nothing.
//!
//! The root records `ran_on` in the child's stored metadata only (no bus event carries
//! it), so the tree learns it from listings: a sub-session going from `queued` to
//! `running` (a remote job taken by a worker, or a local child getting its provider
//! slot) asks for one listing ([`SessionTree::take_listing_request`]); requests made
//! while one is in flight are folded into one more after it.
//!
//! Owns: [`Node::place`], [`place_long`], the local host name the tree compares with,
//! the listing requests. Does not own: the record (`remote::wire::RanOn`), drawing
//! (`views::tree`, `views::chat`).

use super::{Node, SessionTree};
use crate::remote::RanOn;

/// Whether a listing for `ran_on` is wanted and whether one is in flight.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Listing {
    /// A sub-session left the queue since the last listing went out.
    pub wanted: bool,
    /// A listing asked for here has not been answered yet.
    pub in_flight: bool,
}

impl Node {
    /// The short place of a remote sub-session for its tree row: `@host`, or
    /// `@<worker id>` when the host is `local_host` (this machine); `None` for a
    /// session that ran here.
    pub fn place(&self, local_host: Option<&str>) -> Option<String> {
        let r = self.ran_on.as_ref()?;
        if local_host == Some(r.host.as_str()) || r.host.is_empty() {
            Some(format!("@{}", r.worker))
        } else {
            Some(format!("@{}", r.host))
        }
    }
}

/// The long place for a header or the details: `on build-1 (worker w-1a2b3c4d, pid
/// 4242)`.
pub fn place_long(r: &RanOn) -> String {
    format!("on {} (worker {}, pid {})", r.host, r.worker, r.pid)
}

impl SessionTree {
    /// Sets this machine's host name (`remote::wire::hostname`), which [`Node::place`]
    /// compares a worker's host with.
    pub fn set_local_host(&mut self, host: impl Into<String>) {
        self.local_host = Some(host.into());
    }

    /// This machine's host name, when set.
    pub fn local_host(&self) -> Option<&str> {
        self.local_host.as_deref()
    }

    /// True (once) when the front end should list the sessions to learn a sub-session's
    /// `ran_on`: one was asked for and none is in flight. The caller sends
    /// `ListSessions`; [`SessionTree::refresh_marks`] marks it answered.
    pub fn take_listing_request(&mut self) -> bool {
        if self.listing.wanted && !self.listing.in_flight {
            self.listing = Listing {
                wanted: false,
                in_flight: true,
            };
            return true;
        }
        false
    }

    /// A listing arrived: the next request may go out.
    pub(super) fn listing_answered(&mut self) {
        self.listing.in_flight = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{EngineEvent, SessionStatus};
    use crate::tui::testing::{event as ev, fork, to_tree};

    fn ran_on(host: &str) -> RanOn {
        RanOn {
            worker: "w-1a2b3c4d".into(),
            host: host.into(),
            pid: 4242,
        }
    }

    #[test]
    fn a_worker_elsewhere_is_named_by_its_host_and_one_here_by_its_id() {
        let mut node = Node::new("a-b_explorer", Some("root".into()), None);
        assert_eq!(node.place(Some("laptop")), None);
        node.ran_on = Some(ran_on("build-1"));
        assert_eq!(node.place(Some("laptop")).as_deref(), Some("@build-1"));
        assert_eq!(node.place(None).as_deref(), Some("@build-1"));
        assert_eq!(node.place(Some("build-1")).as_deref(), Some("@w-1a2b3c4d"));
        assert_eq!(
            place_long(&ran_on("build-1")),
            "on build-1 (worker w-1a2b3c4d, pid 4242)"
        );
    }

    #[test]
    fn a_child_leaving_the_queue_asks_for_one_listing_at_a_time() {
        let child = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";
        let at = "2025-03-01T12:00:00Z";
        let mut tree = SessionTree::default();
        to_tree(
            &mut tree,
            &ev(fork("root", "explorer"), child, Some("root"), at),
        );
        to_tree(
            &mut tree,
            &ev(
                EngineEvent::status(SessionStatus::Running),
                child,
                Some("root"),
                at,
            ),
        );
        assert!(
            !tree.take_listing_request(),
            "not queued before: nothing to learn"
        );
        to_tree(
            &mut tree,
            &ev(
                EngineEvent::status(SessionStatus::Queued),
                child,
                Some("root"),
                at,
            ),
        );
        to_tree(
            &mut tree,
            &ev(
                EngineEvent::status(SessionStatus::Running),
                child,
                Some("root"),
                at,
            ),
        );
        assert!(tree.take_listing_request());
        assert!(!tree.take_listing_request(), "one in flight");
        // Another child leaves the queue while the listing is in flight: one more after.
        to_tree(
            &mut tree,
            &ev(
                EngineEvent::status(SessionStatus::Queued),
                child,
                Some("root"),
                at,
            ),
        );
        to_tree(
            &mut tree,
            &ev(
                EngineEvent::status(SessionStatus::Running),
                child,
                Some("root"),
                at,
            ),
        );
        assert!(!tree.take_listing_request());
        tree.refresh_marks(&[]);
        assert!(tree.take_listing_request());
        tree.refresh_marks(&[]);
        assert!(!tree.take_listing_request());
    }
}
