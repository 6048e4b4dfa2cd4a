//! Where a node runs (issue 27), through the `App`: a sub-session leaving the queue
//! makes the TUI list the sessions once, and the listed `ran_on` (written by the root
//! when a worker started the job) shows in the child's tree row while it runs.

use super::*;

fn meta(id: &str, parent: Option<&str>, agent: &str, status: SessionStatus) -> Metadata {
    Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        created: T0.into(),
        last_updated: T0.into(),
        status,
        ..Default::default()
    }
}

#[test]
fn a_child_started_on_a_worker_shows_its_host_in_the_tree_while_it_runs() {
    let mut h = harness();
    h.drain();
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.engine(fork(ROOT, "explorer"), CHILD, Some(ROOT), 1);
    h.engine(
        EngineEvent::status(SessionStatus::Queued),
        CHILD,
        Some(ROOT),
        1,
    );
    assert!(h.drain().is_empty(), "nothing to learn while it waits");
    // A worker took the job: the root recorded `ran_on`, the child runs.
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        CHILD,
        Some(ROOT),
        2,
    );
    assert_eq!(h.drain(), [EngineCommand::ListSessions]);
    let mut child = meta(CHILD, Some(ROOT), "explorer", SessionStatus::Running);
    child.arbor.ran_on = Some(
        serde_json::from_value(json!({"worker": "w-1a2b3c4d", "host": "build-1", "pid": 4242}))
            .unwrap(),
    );
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect", SessionStatus::Running),
            child,
        ]))));
    assert!(h.drain().is_empty(), "one listing, not a loop");
    let screen = h.screen(120, 12);
    let row = screen
        .lines()
        .find(|l| l.contains("explorer"))
        .unwrap_or_default();
    assert!(row.contains("explorer @build-1"), "{screen}");
}
