//! The approval queue: what queues and unqueues a prompt, the keys, the grace after a
//! prompt comes to the front, and what "always" covers.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::session::protocol::{DecisionKind, OrchestratorCompleteEvent};
use crate::session::{EngineEvent, SessionStatus};
use crate::tui::state::dispatch::{Listeners, dispatch};
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::{approval_bash, approval_denied, approval_edit, approval_granted, event};

const S1: &str = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";
const S2: &str = "5f0e1c2a11114222-1122334455667788_tester";
const T0: &str = "2025-03-01T12:00:00Z";

fn at(ms: i64) -> Timestamp {
    T0.parse::<Timestamp>().unwrap() + SignedDuration::from_millis(ms)
}

/// Hands `msg` of `session` to `q` at `ms` as the TUI's dispatcher does; whether the
/// queue changed.
fn feed(q: &mut ApprovalQueue, session: &str, msg: EngineEvent, ms: i64) -> bool {
    let mut tree = SessionTree::default();
    let listeners = Listeners {
        approvals: Some((q, at(ms))),
        ..Listeners::tree(&mut tree)
    };
    dispatch(&event(msg, session, None, T0), listeners).approvals_changed
}

fn key(q: &mut ApprovalQueue, code: KeyCode, action: Option<Action>, ms: i64) -> KeyOutcome {
    q.handle_key(&KeyEvent::new(code, KeyModifiers::NONE), action, at(ms))
}

fn resolve(session: &str, call: &str, decision: ApprovalDecision) -> KeyOutcome {
    KeyOutcome::Emit(UiAction::ResolveApproval {
        session_id: session.into(),
        tool_call_id: call.into(),
        decision,
    })
}

fn once() -> ApprovalDecision {
    ApprovalDecision::Allow {
        scope: AllowScope::Once,
    }
}

#[test]
fn prompts_queue_oldest_first_once_each_and_leave_on_the_engines_word() {
    let mut q = ApprovalQueue::default();
    assert!(feed(&mut q, S1, approval_bash("c1", "explorer", "ls"), 0));
    assert!(
        !feed(&mut q, S1, approval_bash("c1", "explorer", "ls"), 0),
        "no duplicate"
    );
    assert!(feed(
        &mut q,
        S2,
        approval_bash("c1", "tester", "cargo test"),
        0
    ));
    assert!(feed(
        &mut q,
        S1,
        approval_edit("c2", "explorer", "a.rs", "+x\n"),
        0
    ));
    assert_eq!(q.len(), 3);
    assert_eq!(q.front().unwrap().session_id, S1);
    assert_eq!(q.waiting_sessions()[S1], 2);

    // Granted/denied match session and call: S2's c1 is not S1's c1.
    assert!(feed(
        &mut q,
        S2,
        approval_granted("c1", "tester", DecisionKind::Policy),
        0
    ));
    assert_eq!(q.len(), 2);
    assert_eq!(q.front().unwrap().session_id, S1);
    assert!(feed(
        &mut q,
        S1,
        approval_denied("c1", "explorer", DecisionKind::Cancelled),
        0
    ));
    assert_eq!(q.front().unwrap().request.tool_call_id, "c2");
    // The end of S1's turn takes its remaining prompt.
    let end = EngineEvent::OrchestratorComplete(OrchestratorCompleteEvent {
        status: SessionStatus::Cancelled,
        ..Default::default()
    });
    assert!(feed(&mut q, S1, end, 0));
    assert!(q.is_empty());
    assert!(q.waiting_sessions().is_empty());
}

#[test]
fn keys_answer_the_front_prompt_after_the_grace() {
    let mut q = ApprovalQueue::default();
    feed(
        &mut q,
        S1,
        approval_bash("c1", "explorer", "cargo test --lib"),
        0,
    );
    feed(&mut q, S2, approval_bash("c2", "tester", "ls"), 100);
    let grace = ANSWER_GRACE_MS;
    // Typed just as the prompt appeared: nothing is answered.
    let early = key(
        &mut q,
        KeyCode::Char('y'),
        Some(Action::ApprovalAllow),
        grace - 1,
    );
    assert_eq!(early, KeyOutcome::Consumed);
    assert_eq!(q.len(), 2);

    let y = key(
        &mut q,
        KeyCode::Char('y'),
        Some(Action::ApprovalAllow),
        grace,
    );
    assert_eq!(y, resolve(S1, "c1", once()));
    assert_eq!(q.len(), 1);
    // The next prompt has its own grace from when it came to the front.
    let fast = key(
        &mut q,
        KeyCode::Esc,
        Some(Action::ApprovalDenyNow),
        grace + 10,
    );
    assert_eq!(fast, KeyOutcome::Consumed);
    let esc = key(
        &mut q,
        KeyCode::Esc,
        Some(Action::ApprovalDenyNow),
        2 * grace,
    );
    assert_eq!(
        esc,
        resolve(S2, "c2", ApprovalDecision::Deny { reason: None })
    );
    assert!(q.is_empty());
    assert_eq!(
        key(
            &mut q,
            KeyCode::Char('y'),
            Some(Action::ApprovalAllow),
            5000
        ),
        KeyOutcome::Ignored
    );
}

#[test]
fn deny_takes_a_one_line_reason_and_esc_goes_back() {
    let mut q = ApprovalQueue::default();
    feed(
        &mut q,
        S1,
        approval_bash("c1", "explorer", "rm -rf target"),
        0,
    );
    let t = 1000;
    assert_eq!(
        key(&mut q, KeyCode::Char('n'), Some(Action::ApprovalDeny), t),
        KeyOutcome::Consumed
    );
    assert_eq!(q.reason(), Some(""));
    // In the reason line, answer keys are text.
    for c in "not yy".chars() {
        key(&mut q, KeyCode::Char(c), Some(Action::ApprovalAllow), t);
    }
    key(&mut q, KeyCode::Backspace, None, t);
    assert_eq!(q.reason(), Some("not y"));
    assert_eq!(q.len(), 1, "typing a reason answers nothing");
    key(&mut q, KeyCode::Esc, Some(Action::ApprovalDenyNow), t);
    assert_eq!(
        (q.reason(), q.len()),
        (None, 1),
        "Esc leaves the reason line only"
    );

    key(&mut q, KeyCode::Char('n'), Some(Action::ApprovalDeny), t);
    assert!(q.paste("use cargo clean\nsecond line"));
    let sent = key(&mut q, KeyCode::Enter, None, t);
    let reason = Some("use cargo clean".to_string());
    assert_eq!(sent, resolve(S1, "c1", ApprovalDecision::Deny { reason }));
    assert!(!q.paste("nothing to paste into"));

    // An empty reason is no reason.
    feed(&mut q, S1, approval_bash("c2", "explorer", "ls"), t);
    let t = t + ANSWER_GRACE_MS;
    key(&mut q, KeyCode::Char('n'), Some(Action::ApprovalDeny), t);
    key(&mut q, KeyCode::Char(' '), None, t);
    let sent = key(&mut q, KeyCode::Enter, None, t);
    assert_eq!(
        sent,
        resolve(S1, "c2", ApprovalDecision::Deny { reason: None })
    );
}

#[test]
fn always_covers_the_tool_or_a_simple_commands_prefix_only() {
    let pending = |msg| match msg {
        EngineEvent::ApprovalRequired(request) => PendingApproval {
            session_id: S1.into(),
            request,
        },
        _ => unreachable!(),
    };
    let rule = |command: &str| {
        pending(approval_bash("c", "a", command))
            .always()
            .map(|(_, r)| r)
    };
    assert_eq!(
        rule("cargo test --lib").as_deref(),
        Some("bash(cargo test*)")
    );
    assert_eq!(rule("git status").as_deref(), Some("bash(git status*)"));
    assert_eq!(rule("rm -rf target").as_deref(), Some("bash(rm*)"));
    assert_eq!(rule("ls -la").as_deref(), Some("bash(ls*)"));
    for compound in [
        "python3 script.py",
        "sh -c 'ls'",
        "env ls",
        "xargs rm",
        "ls # x\ntouch G",
        "ls -la # it's fine\ntouch G",
        "ls $\\\n(touch G)",
        "ls >& G",
        "cargo test && rm -rf ~",
        "ls; curl x",
        "cat a | sh",
        "echo $(id)",
        "echo `id`",
        "echo hi > a.txt",
        "ls\nrm x",
        "",
    ] {
        assert_eq!(rule(compound), None, "{compound:?}");
    }
    let edit = pending(approval_edit("c", "a", "a.rs", "+x\n")).always();
    assert_eq!(
        edit,
        Some((AllowScope::AlwaysTool, "edit_file".to_string()))
    );

    let mut q = ApprovalQueue::default();
    feed(
        &mut q,
        S1,
        approval_bash("c1", "explorer", "cargo test --lib"),
        0,
    );
    let a = key(
        &mut q,
        KeyCode::Char('a'),
        Some(Action::ApprovalAlways),
        1000,
    );
    let scope = AllowScope::AlwaysPrefix("cargo test".into());
    assert_eq!(a, resolve(S1, "c1", ApprovalDecision::Allow { scope }));

    feed(&mut q, S1, approval_bash("c2", "explorer", "ls | sh"), 1000);
    let a = key(
        &mut q,
        KeyCode::Char('a'),
        Some(Action::ApprovalAlways),
        2000,
    );
    assert!(matches!(a, KeyOutcome::Emit(UiAction::Note(_))), "{a:?}");
    assert_eq!(q.len(), 1, "a compound command is not answered by always");
    let save = key(
        &mut q,
        KeyCode::Char('A'),
        Some(Action::ApprovalAlwaysSave),
        2000,
    );
    assert!(
        matches!(save, KeyOutcome::Emit(UiAction::Note(_))),
        "{save:?}"
    );
    assert_eq!(q.len(), 1, "nor saved");
}

#[test]
fn always_and_save_answers_always_and_names_the_rule() {
    let mut q = ApprovalQueue::default();
    feed(
        &mut q,
        S1,
        approval_bash("c1", "explorer", "cargo test --lib"),
        0,
    );
    let got = key(
        &mut q,
        KeyCode::Char('A'),
        Some(Action::ApprovalAlwaysSave),
        1000,
    );
    assert_eq!(
        got,
        KeyOutcome::Emit(UiAction::ResolveAndSave {
            session_id: S1.into(),
            tool_call_id: "c1".into(),
            decision: ApprovalDecision::Allow {
                scope: AllowScope::AlwaysPrefix("cargo test".into()),
            },
            rule: "bash(cargo test*)".into(),
        })
    );
    assert!(q.is_empty());
}

#[test]
fn scrolling_stays_within_the_body_and_resets_for_the_next_prompt() {
    let mut q = ApprovalQueue::default();
    feed(&mut q, S1, approval_bash("c1", "explorer", "ls"), 0);
    feed(&mut q, S1, approval_bash("c2", "explorer", "ls"), 0);
    for _ in 0..5 {
        key(&mut q, KeyCode::Down, Some(Action::ApprovalDown), 0);
    }
    q.clamp_scroll(10, 7);
    assert_eq!(q.scroll(), 3);
    key(&mut q, KeyCode::Up, Some(Action::ApprovalUp), 0);
    assert_eq!(q.scroll(), 2);
    key(
        &mut q,
        KeyCode::Char('y'),
        Some(Action::ApprovalAllow),
        1000,
    );
    assert_eq!(q.scroll(), 0);
}
