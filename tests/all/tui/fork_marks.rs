//! How issue 25's marks read where the person looks: an opened fork's chat header
//! reads like a root's and names where it was cut (`fork of #<parent> @<turn>`), not
//! `sub-session #…` (a fork is a root for depth and limits), and its tree row takes
//! no task from its first message; an implementer's
//! unmerged worktree keeps its `⎇` mark at the default tree width, its task text
//! yielding first.

use super::*;

const FORK: &str = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";
const KID: &str = "5f0e1c2a11114222-1a2b3c4d5e6f7081_implementer";

fn meta(id: &str, parent: Option<&str>, agent: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        created: T0.into(),
        last_updated: T0.into(),
        status: SessionStatus::Completed,
        ..Default::default()
    }
}

/// The chat pane's header: the top border of the screen right of the tree.
fn chat_header(screen: &str) -> String {
    let top = screen.lines().next().unwrap_or_default();
    top.chars().skip(30).collect()
}

#[test]
fn an_opened_fork_reads_like_a_root_and_names_where_it_was_cut() {
    let mut h = harness();
    let mut fork = meta(FORK, Some(ROOT), "zen-architect");
    fork.forked_from_turn = Some(3);
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect"),
            fork,
        ]))));
    h.press(KeyCode::Tab); // composer → tree
    h.press(KeyCode::Right); // expand the root
    h.press(KeyCode::Down);
    assert_eq!(h.app.tree().selected.as_deref(), Some(FORK));
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: FORK.into()
        }]
    );
    h.load(FORK, Some(ROOT), "zen-architect", root_transcript());
    let screen = h.screen(100, 12);
    let header = chat_header(&screen);
    assert!(
        header.contains("#9e8d7c6b · fork of #5f0e1c2a @3 · zen-architect"),
        "{screen}"
    );
    assert!(!screen.contains("sub-session"), "{screen}");
    insta::assert_snapshot!("fork_header_100", screen);
    // Its tree row is a root's too: no task from its first message, the fork mark.
    let screen = h.screen(200, 12);
    assert!(screen.contains("zen-architect (fork @3)"), "{screen}");
}

#[test]
fn a_sub_session_still_says_sub_session() {
    let mut h = harness();
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect"),
            meta(KID, Some(ROOT), "implementer"),
        ]))));
    h.press(KeyCode::Tab);
    h.press(KeyCode::Right);
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    h.drain();
    h.load(KID, Some(ROOT), "implementer", vec![]);
    let screen = h.screen(100, 12);
    assert!(
        chat_header(&screen).contains("sub-session #1a2b3c4d · implementer"),
        "{screen}"
    );
    assert!(!screen.contains("fork of"), "{screen}");
}

#[test]
fn the_unmerged_mark_stays_at_the_default_tree_width() {
    let mut h = harness();
    let mut kid = meta(KID, Some(ROOT), "implementer");
    kid.arbor.worktree = Some(serde_json::from_value(json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": "active"})).unwrap());
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect"),
            kid,
        ]))));
    h.engine(
        appended(json!({"role": "user", "content": "Change VALUE in app.py to 'B'"})),
        KID,
        Some(ROOT),
        5,
    );
    h.press(KeyCode::Tab);
    h.press(KeyCode::Right);
    // The default layout at 100 columns: a 30-column tree; the row keeps `⎇` and
    // the word "unmerged", the task and branch name yield.
    let screen = h.screen(100, 12);
    let row = screen
        .lines()
        .find(|l| l.contains("impl"))
        .unwrap_or_default()
        .chars()
        .take(30)
        .collect::<String>();
    assert!(row.contains("⎇ unmerged"), "{screen}");
    insta::assert_snapshot!("unmerged_mark_100", screen);
    // The widest tree (48 columns) keeps the agent's name and some of the task.
    let screen = h.screen(200, 12);
    assert!(
        screen.contains("implementer · Change… ⎇ unmerged 0s ago"),
        "{screen}"
    );
}
