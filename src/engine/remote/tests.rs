//! Unit tests of the root side of remote sub-sessions without a NATS server: applying
//! a worker's messages to a live session, approvals travelling back, the registry of
//! remote runs. The NATS path is tested end to end in `tests/all/remote_root.rs`.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::apply::{Applier, Finished, merge_metadata};
use super::{Forward, RemoteRuns};
use crate::config::MountPlan;
use crate::engine::approvals::{ApprovalMode, PendingApprovals};
use crate::engine::live::LiveSession;
use crate::remote::RanOn;
use crate::session::message::{AssistantMessage, ContentBlock};
use crate::session::protocol::{
    AllowScope, ApprovalDecision, ApprovalRequiredEvent, DeltaKind, SessionResumeEvent,
};
use crate::session::{
    EngineEvent, Event, EventBus, Message, Metadata, SessionId, SessionStatus, SessionStore,
};

/// A live sub-session in a temp store, with a subscriber on its bus.
struct Fixture {
    _dir: tempfile::TempDir,
    store: SessionStore,
    child: Arc<LiveSession>,
    events: UnboundedReceiver<Arc<Event>>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let root = SessionId::new_root();
    let id = SessionId::child(&root, "builder");
    let metadata = Metadata {
        session_id: id.clone(),
        parent_id: Some(root.clone()),
        agent_name: Some("builder".into()),
        depth: 1,
        config: Some(json!({})),
        ..Default::default()
    };
    let writer = store.create(&metadata).unwrap();
    let bus = EventBus::new();
    let events = bus.subscribe();
    let child = Arc::new(LiveSession::new(
        metadata,
        root,
        MountPlan::default(),
        writer,
        Vec::new(),
        bus,
        dir.path().to_path_buf(),
    ));
    Fixture {
        _dir: dir,
        store,
        child,
        events,
    }
}

fn worker(n: u32) -> RanOn {
    RanOn {
        worker: format!("w-0000000{n}"),
        host: "box".into(),
        pid: 100 + n,
    }
}

fn of(child: &LiveSession, msg: EngineEvent) -> Event {
    Event::new(&child.id, child.parent_id.as_deref(), msg)
}

fn assistant(text: &str) -> Message {
    Message::Assistant(AssistantMessage {
        content: vec![ContentBlock::Text { text: text.into() }],
        ..Default::default()
    })
}

/// Sub-session `scout` (of `parent`) appended the assistant message `text`.
fn scout_says(scout: &str, parent: &str, text: &str) -> Event {
    Event::new(
        scout,
        Some(parent),
        EngineEvent::MessageAppended(crate::session::protocol::MessageAppendedEvent {
            message: assistant(text),
        }),
    )
}

fn drain(events: &mut UnboundedReceiver<Arc<Event>>) -> Vec<&'static str> {
    let mut names = Vec::new();
    while let Ok(event) = events.try_recv() {
        names.push(event.msg.name());
    }
    names
}

#[test]
fn a_workers_events_land_in_the_roots_store() {
    let mut f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, _rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    applier.started(worker(1), 1);
    let child = f.child.clone();
    applier.event(of(&child, EngineEvent::status(SessionStatus::Running)));
    applier.event(of(&child, EngineEvent::appended(Message::user("build it"))));
    applier.event(of(&child, EngineEvent::delta(DeltaKind::Text, "do")));
    applier.event(of(&child, EngineEvent::appended(assistant("done"))));
    // The worker loading its scratch copy, and another session's event: not applied.
    applier.event(of(
        &child,
        EngineEvent::SessionResume(SessionResumeEvent {
            agent: "builder".into(),
            depth: 1,
            turn_count: 0,
            status: SessionStatus::Idle,
        }),
    ));
    applier.event(Event::new(
        "someone-else",
        None,
        EngineEvent::appended(Message::user("not mine")),
    ));
    child.sync();
    let loaded = f.store.load(&child.id).unwrap();
    let texts: Vec<String> = loaded.transcript.iter().map(Message::text).collect();
    assert_eq!(texts, ["build it", "done"]);
    assert_eq!(loaded.metadata.status, SessionStatus::Running);
    assert_eq!(loaded.metadata.arbor.ran_on, Some(worker(1)));
    assert_eq!(
        serde_json::to_value(&loaded.metadata).unwrap()["ran_on"]["pid"],
        101
    );
    let names = drain(&mut f.events);
    assert_eq!(
        names,
        [
            "session:status",
            "message:appended",
            "content_block:delta",
            "message:appended"
        ]
    );
}

#[test]
fn a_lost_worker_leaves_its_text_partial_and_the_session_interrupted() {
    let f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, _rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    let child = f.child.clone();
    applier.started(worker(1), 1);
    applier.event(of(&child, EngineEvent::status(SessionStatus::Running)));
    applier.event(of(&child, EngineEvent::appended(Message::user("go"))));
    applier.event(of(&child, EngineEvent::delta(DeltaKind::Text, "half an ")));
    applier.event(of(&child, EngineEvent::delta(DeltaKind::Thinking, "hmm")));
    applier.event(of(&child, EngineEvent::delta(DeltaKind::Text, "answer")));
    // Worker 2 took over (redelivery): worker 1 lost its lease.
    applier.started(worker(2), 2);
    let metadata = child.metadata();
    assert_eq!(metadata.status, SessionStatus::Interrupted);
    assert_eq!(metadata.arbor.ran_on, Some(worker(2)));
    let transcript = child.transcript_snapshot();
    let Some(Message::Assistant(partial)) = transcript.last() else {
        panic!("no partial message: {transcript:?}");
    };
    assert_eq!(Message::Assistant(partial.clone()).text(), "half an answer");
    let meta = serde_json::to_value(&partial.metadata).unwrap();
    assert_eq!(meta["partial"], true, "{meta}");
    assert!(
        meta["error"].as_str().unwrap().contains("w-00000001"),
        "{meta}"
    );
    // Said once: a sync request of the same holder changes nothing more.
    applier.lease_lost();
    assert_eq!(child.transcript_snapshot().len(), 2);
}

#[tokio::test]
async fn an_approval_answered_at_the_root_travels_to_the_worker() {
    let f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, mut rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    let child = f.child.clone();
    applier.event(of(
        &child,
        EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            agent: "builder".into(),
            summary: "rm -rf target".into(),
            ..Default::default()
        }),
    ));
    assert_eq!(approvals.waiting_in(&child.id), 1);
    let deny = ApprovalDecision::Deny {
        reason: Some("not now".into()),
    };
    approvals
        .resolve(&child.id, "call_1", deny.clone())
        .unwrap();
    let forwarded = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .unwrap();
    assert_eq!(
        forwarded,
        Some(Forward::Approval {
            tool_call_id: "call_1".into(),
            decision: deny
        })
    );
}

#[test]
fn a_headless_root_answers_a_workers_approval_at_once() {
    let f = fixture();
    let approvals = PendingApprovals::default();
    let child = f.child.clone();
    let required = || {
        of(
            &child,
            EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
                tool_call_id: "call_9".into(),
                tool_name: "bash".into(),
                ..Default::default()
            }),
        )
    };
    for (yes, expected) in [
        (
            true,
            ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
        ),
        (
            false,
            ApprovalDecision::Deny {
                reason: Some("headless run without --yes".into()),
            },
        ),
    ] {
        let (tx, mut rx) = unbounded_channel();
        let mut applier = Applier::new(
            child.clone(),
            &approvals,
            ApprovalMode::Headless { yes },
            tx,
        );
        applier.event(required());
        assert_eq!(
            rx.try_recv().ok(),
            Some(Forward::Approval {
                tool_call_id: "call_9".into(),
                decision: expected
            })
        );
        assert_eq!(approvals.waiting_in(&child.id), 0);
    }
}

#[test]
fn done_merges_the_workers_metadata_and_keeps_the_roots_identity() {
    let f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, _rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    let child = f.child.clone();
    applier.started(worker(3), 1);
    let mut theirs = Metadata {
        session_id: "scratch".into(),
        working_dir: Some("/worker/scratch/wt".into()),
        turn_count: 1,
        model: Some("openai/gpt-x".into()),
        name: Some("Built it".into()),
        ..Default::default()
    };
    theirs.usage.input_tokens = 42;
    theirs.arbor.resolved_model = Some(crate::session::metadata::ResolvedModel {
        provider: "the worker's".into(),
        model: String::new(),
        via: crate::session::metadata::Via::Parent,
        role: None,
        reason: None,
    });
    let outcome = applier.done(
        Finished {
            status: SessionStatus::Completed,
            response: "all built".into(),
            error: None,
        },
        &theirs,
    );
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.response, "all built");
    assert_eq!(outcome.turn_count, 1);
    let ours = f.store.load(&child.id).unwrap().metadata;
    assert_eq!(ours.session_id, child.id);
    assert_eq!(ours.status, SessionStatus::Completed);
    assert_eq!(ours.turn_count, 1);
    assert_eq!(ours.usage.input_tokens, 42);
    assert_eq!(ours.model.as_deref(), Some("openai/gpt-x"));
    assert_eq!(ours.name.as_deref(), Some("Built it"));
    assert_ne!(ours.working_dir.as_deref(), Some("/worker/scratch/wt"));
    assert!(ours.arbor.resolved_model.is_none());
    assert_eq!(ours.arbor.ran_on, Some(worker(3)));
    // A name the root has already is kept.
    let mut named = Metadata {
        name: Some("Mine".into()),
        ..Default::default()
    };
    merge_metadata(&mut named, &theirs, SessionStatus::Failed);
    assert_eq!(named.name.as_deref(), Some("Mine"));
    assert_eq!(named.status, SessionStatus::Failed);
}

#[test]
fn a_run_that_ends_without_an_answer_closes_the_turn_with_its_error() {
    let mut f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, _rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    let error = "remote sub-session: cannot reach NATS at nats://127.0.0.1:1: refused";
    let outcome = applier.ended_without_answer(SessionStatus::Failed, Some(error.into()));
    assert_eq!(outcome.status, SessionStatus::Failed);
    assert_eq!(outcome.error.unwrap().to_string(), error);
    assert_eq!(f.child.metadata().status, SessionStatus::Failed);
    assert_eq!(
        drain(&mut f.events),
        ["session:status", "orchestrator:complete", "session:end"]
    );
}

#[test]
fn controls_reach_only_sessions_running_remotely() {
    let runs = RemoteRuns::new(std::sync::Weak::<NoAdopt>::new());
    assert!(!runs.forward("s1", Forward::Steer("hi".into())));
    let (tx, mut rx) = unbounded_channel();
    {
        let _registered = runs.register("s1", tx);
        assert!(runs.is_remote("s1"));
        assert!(runs.forward("s1", Forward::Queue("next".into())));
        assert_eq!(rx.try_recv().ok(), Some(Forward::Queue("next".into())));
        assert!(!runs.forward("s2", Forward::Steer("hi".into())));
    }
    assert!(!runs.is_remote("s1"), "unregistered when the run ends");
    assert!(!runs.forward("s1", Forward::Steer("late".into())));
    assert_eq!(runs.refused_writes(), 0);
}

#[tokio::test]
async fn a_workers_approval_says_which_worker_runs_the_command() {
    let mut f = fixture();
    let approvals = PendingApprovals::default();
    let (tx, _rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx);
    let child = f.child.clone();
    applier.started(
        RanOn {
            worker: "w-88509e8c".into(),
            host: "build-2".into(),
            pid: 7,
        },
        1,
    );
    applier.event(of(
        &child,
        EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            agent: "builder".into(),
            summary: "make".into(),
            command: Some("make".into()),
            sandbox: Some(
                "sandboxed: writes ./, no network; runs in worktree arbor/9f6d2526".into(),
            ),
            ..Default::default()
        }),
    ));
    let mut shown = None;
    while let Ok(event) = f.events.try_recv() {
        if let EngineEvent::ApprovalRequired(required) = &event.msg {
            shown = required.sandbox.clone();
        }
    }
    assert_eq!(
        shown.as_deref(),
        Some("sandboxed: writes ./, no network; on worker w-88509e8c (build-2)")
    );
}

/// Adopts nothing (the registry test makes no sub-session live).
struct NoAdopt;

impl super::Adopt for NoAdopt {
    fn adopt(
        &self,
        _metadata: crate::session::Metadata,
        _plan: crate::config::MountPlan,
    ) -> Result<Arc<LiveSession>, crate::engine::outcome::EngineError> {
        unreachable!("not called")
    }

    fn resume(&self, _id: &str) -> Result<Arc<LiveSession>, crate::engine::outcome::EngineError> {
        unreachable!("not called")
    }
}

/// Makes a remote child's sub-sessions live in the fixture's store, as the runtime does.
struct StoreAdopt {
    store: SessionStore,
    root: SessionId,
    dir: std::path::PathBuf,
}

impl super::Adopt for StoreAdopt {
    fn adopt(
        &self,
        metadata: Metadata,
        plan: MountPlan,
    ) -> Result<Arc<LiveSession>, crate::engine::outcome::EngineError> {
        let writer = self.store.create(&metadata).unwrap();
        Ok(Arc::new(LiveSession::new(
            metadata,
            self.root.clone(),
            plan,
            writer,
            Vec::new(),
            crate::session::EventBus::new(),
            self.dir.clone(),
        )))
    }

    fn resume(&self, id: &str) -> Result<Arc<LiveSession>, crate::engine::outcome::EngineError> {
        let loaded = self.store.load(id)?;
        let plan = MountPlan::from_value(loaded.metadata.config.clone().unwrap_or_default());
        Ok(Arc::new(LiveSession::new(
            loaded.metadata,
            self.root.clone(),
            plan,
            self.store.open(id)?,
            loaded.transcript,
            crate::session::EventBus::new(),
            self.dir.clone(),
        )))
    }
}

/// Remote runs whose sub-sessions are made live in `f`'s store (keep the adopter
/// alive as long as the runs).
fn store_runs(f: &Fixture) -> (Arc<dyn super::Adopt>, RemoteRuns) {
    let adopt: Arc<dyn super::Adopt> = Arc::new(StoreAdopt {
        store: f.store.clone(),
        root: f.child.parent_id.clone().unwrap(),
        dir: f._dir.path().to_path_buf(),
    });
    let runs = RemoteRuns::new(Arc::downgrade(&adopt));
    (adopt, runs)
}

#[tokio::test]
async fn a_carried_sub_session_the_worker_resumed_is_loaded_merged_and_kept() {
    let f = fixture();
    let (_adopt, runs) = store_runs(&f);
    let limits =
        crate::engine::limits::TreeLimits::new(crate::config::Limits::default(), f.store.clone());
    // A scout of the child's earlier run, stored at the root.
    let scout = SessionId::child(&f.child.id, "scout");
    let at_root = Metadata {
        session_id: scout.clone(),
        parent_id: Some(f.child.id.clone()),
        agent_name: Some("scout".into()),
        depth: 2,
        turn_count: 1,
        status: SessionStatus::Completed,
        working_dir: Some("/root/checkout".into()),
        config: Some(json!({})),
        ..Default::default()
    };
    let mut writer = f.store.create(&at_root).unwrap();
    writer.append_message(&Message::user("Look")).unwrap();
    writer.append_message(&assistant("found it")).unwrap();
    drop(writer);
    let (tx, _rx) = unbounded_channel();
    let approvals = PendingApprovals::default();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx)
        .in_tree(&limits, &runs);
    applier.started(worker(1), 1);
    let on_worker = Metadata {
        turn_count: 2,
        status: SessionStatus::Running,
        working_dir: Some("/worker/job-1/work".into()),
        ..at_root.clone()
    };
    // Neither reserved nor carried: not kept.
    applier.sub_session(on_worker.clone());
    assert!(!runs.is_remote(&scout));
    // Carried by the job: loaded, the worker's turn merged in, kept for controls.
    applier.carry(vec![scout.clone()]);
    applier.sub_session(on_worker);
    assert!(runs.is_remote(&scout));
    let (stored, _) = f.store.load_metadata(&scout).unwrap();
    assert_eq!(stored.turn_count, 2);
    assert_eq!(stored.status, SessionStatus::Running);
    assert_eq!(stored.working_dir.as_deref(), Some("/root/checkout"));
    assert_eq!(stored.arbor.ran_on, Some(worker(1)));
    applier.event(scout_says(&scout, &f.child.id, "found it again"));
    let texts: Vec<String> = f
        .store
        .load(&scout)
        .unwrap()
        .transcript
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["Look", "found it", "found it again"]);
}

#[tokio::test]
async fn a_remote_childs_own_sub_sessions_are_counted_kept_and_controlled_through_the_run() {
    let f = fixture();
    let (_adopt, runs) = store_runs(&f);
    let limits = crate::engine::limits::TreeLimits::new(
        crate::config::Limits {
            max_sessions_per_tree: 3,
            ..Default::default()
        },
        f.store.clone(),
    );
    limits.root_created(f.child.parent_id.as_deref().unwrap());
    limits
        .reserve(f.child.parent_id.as_deref().unwrap(), &f.child.id)
        .unwrap();
    let approvals = PendingApprovals::default();
    let (tx, mut rx) = unbounded_channel();
    let mut applier = Applier::new(f.child.clone(), &approvals, ApprovalMode::Interactive, tx)
        .in_tree(&limits, &runs);
    applier.started(worker(1), 1);
    f.child
        .update_metadata(|m| m.working_dir = Some("/root/checkout".into()));

    // Counted against the root's limit: one fits (root + child + one), not two.
    let scout = SessionId::child(&f.child.id, "scout");
    applier.reserve(&f.child.id, &scout, "scout");
    assert_eq!(
        rx.try_recv().ok(),
        Some(Forward::Reserved {
            child: scout.to_string(),
            refused: None
        })
    );
    let second = SessionId::child(&f.child.id, "scout");
    applier.reserve(&f.child.id, &second, "scout");
    let Ok(Forward::Reserved {
        refused: Some(why), ..
    }) = rx.try_recv()
    else {
        panic!("the second spawn was not refused");
    };
    assert!(why.contains("max_sessions_per_tree is 3"), "{why}");
    applier.reserve("a-stranger", &SessionId::child(&f.child.id, "x"), "x");
    let Ok(Forward::Reserved {
        refused: Some(why), ..
    }) = rx.try_recv()
    else {
        panic!("a spawn under a session of another run was not refused");
    };
    assert!(why.contains("not a session of this remote run"), "{why}");

    // Kept when the worker sends it: the child's working directory, the holder.
    let worker_metadata = |id: &SessionId| Metadata {
        session_id: id.clone(),
        parent_id: Some(f.child.id.clone()),
        agent_name: Some("scout".into()),
        depth: 2,
        working_dir: Some("/worker/job-1/work".into()),
        config: Some(json!({})),
        ..Default::default()
    };
    applier.sub_session(worker_metadata(&second));
    assert!(
        !runs.is_remote(&second),
        "a spawn the root refused is not kept"
    );
    applier.sub_session(worker_metadata(&scout));
    assert!(runs.is_remote(&scout));
    let (stored, _) = f.store.load_metadata(&scout).unwrap();
    assert_eq!(stored.working_dir.as_deref(), Some("/root/checkout"));
    assert_eq!(stored.arbor.ran_on, Some(worker(1)));

    // Its events are its own; its approval and steer go out marked with its id.
    applier.event(scout_says(&scout, &f.child.id, "scout found it"));
    let transcript = f.store.load(&scout).unwrap().transcript;
    assert!(matches!(transcript.last(), Some(m) if m.text() == "scout found it"));
    assert!(f.child.transcript_snapshot().is_empty());
    applier.event(Event::new(
        &scout,
        Some(&f.child.id),
        EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "c1".into(),
            ..Default::default()
        }),
    ));
    assert_eq!(approvals.waiting_in(&scout), 1);
    approvals
        .resolve(
            &scout,
            "c1",
            ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
        )
        .unwrap();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .unwrap();
    assert_eq!(
        answer,
        Some(Forward::Of {
            session_id: scout.to_string(),
            forward: Box::new(Forward::Approval {
                tool_call_id: "c1".into(),
                decision: ApprovalDecision::Allow {
                    scope: AllowScope::Once
                },
            }),
        })
    );
    assert!(runs.forward(&scout, Forward::Steer("look left".into())));
    let steer = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .unwrap();
    assert_eq!(
        steer,
        Some(Forward::Of {
            session_id: scout.to_string(),
            forward: Box::new(Forward::Steer("look left".into())),
        })
    );
    // A run that ends while it waits for a person leaves it interrupted, asking nobody.
    applier.event(Event::new(
        &scout,
        Some(&f.child.id),
        EngineEvent::status(SessionStatus::Waiting),
    ));
    applier.event(Event::new(
        &scout,
        Some(&f.child.id),
        EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "c2".into(),
            ..Default::default()
        }),
    ));
    assert_eq!(approvals.waiting_in(&scout), 1);
    applier.ended_without_answer(SessionStatus::Cancelled, None);
    assert_eq!(approvals.waiting_in(&scout), 0);
    let (stored, _) = f.store.load_metadata(&scout).unwrap();
    assert_eq!(stored.status, SessionStatus::Interrupted);
    drop(applier);
    assert!(!runs.is_remote(&scout), "its entry ends with the run");
}
