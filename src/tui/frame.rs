//! Frame scheduling: redraw on demand, coalesced, capped (~60 fps). A request made
//! while a frame is pending is merged into it; a request right after a draw waits for
//! the minimum interval — unless it is urgent ([`FrameScheduler::request_now`]: the
//! frame shows the person's own input, which is never held back by the cap). There is
//! no fixed-rate loop.
//!
//! Owns: when to draw. Does not own: what to draw (`app`).

use std::time::Duration;

use tokio::time::Instant;

/// Minimum time between frames (~60 fps).
pub const MIN_FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// Coalescing frame requester.
#[derive(Debug, Clone)]
pub struct FrameScheduler {
    min_interval: Duration,
    last: Option<Instant>,
    pending: Option<Instant>,
}

impl FrameScheduler {
    /// A scheduler allowing at most one frame per `min_interval`.
    pub fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            last: None,
            pending: None,
        }
    }

    /// Asks for a frame as soon as allowed; merged with a pending request.
    pub fn request(&mut self, now: Instant) {
        if self.pending.is_none() {
            let at = self.last.map_or(now, |l| (l + self.min_interval).max(now));
            self.pending = Some(at);
        }
    }

    /// Asks for a frame now, whatever the cap (a frame that shows input); a pending
    /// request is brought forward to `now`.
    pub fn request_now(&mut self, now: Instant) {
        self.pending = Some(self.pending.map_or(now, |at| at.min(now)));
    }

    /// When the pending frame is due.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending
    }

    /// Records that a frame was drawn at `now`.
    pub fn drawn(&mut self, now: Instant) {
        self.last = Some(now);
        self.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_coalesce_and_are_capped() {
        let mut f = FrameScheduler::new(MIN_FRAME_INTERVAL);
        let t0 = Instant::now();
        f.request(t0);
        f.request(t0 + Duration::from_millis(5));
        assert_eq!(f.deadline(), Some(t0));
        f.drawn(t0);
        assert_eq!(f.deadline(), None);
        f.request(t0 + Duration::from_millis(1));
        assert_eq!(f.deadline(), Some(t0 + MIN_FRAME_INTERVAL));
        f.drawn(t0 + MIN_FRAME_INTERVAL);
        f.request(t0 + Duration::from_millis(100));
        assert_eq!(f.deadline(), Some(t0 + Duration::from_millis(100)));
    }

    #[test]
    fn an_urgent_request_is_due_at_once_even_right_after_a_frame() {
        let mut f = FrameScheduler::new(MIN_FRAME_INTERVAL);
        let t0 = Instant::now();
        f.drawn(t0);
        f.request(t0 + Duration::from_millis(2));
        assert_eq!(f.deadline(), Some(t0 + MIN_FRAME_INTERVAL), "capped");
        let key = t0 + Duration::from_millis(3);
        f.request_now(key);
        assert_eq!(f.deadline(), Some(key), "brought forward");
        f.drawn(key);
        f.request_now(key + Duration::from_millis(1));
        assert_eq!(f.deadline(), Some(key + Duration::from_millis(1)));
    }
}
