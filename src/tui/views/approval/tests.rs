//! Snapshots of the approval prompt (command and diff forms at 80×24 and 40 columns,
//! the queue count, the reason line, a scrolled long command) and of what waits
//! elsewhere: the tree's waiting glyph and the status bar's count.

use jiff::Timestamp;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::*;
use crate::session::protocol::{ApprovalRequiredEvent, OrchestratorCompleteEvent};
use crate::session::{EngineEvent, Event, SessionStatus};
use crate::tui::state::dispatch::{Listeners, dispatch};
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::{SAMPLE_DIFF, approval_bash, approval_edit, event, fork, start, to_tree};
use crate::tui::views::status::StatusView;
use crate::tui::views::tests::render;
use crate::tui::views::tree::TreeView;

const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
const EXPLORER: &str = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";
const TESTER: &str = "5f0e1c2a11114222-1122334455667788_tester";
const T0: &str = "2025-03-01T12:00:00Z";

fn t0() -> Timestamp {
    T0.parse().unwrap()
}

fn ev(msg: EngineEvent, id: &str, parent: Option<&str>) -> Event {
    event(msg, id, parent, T0)
}

fn queue(events: Vec<Event>) -> ApprovalQueue {
    let mut q = ApprovalQueue::default();
    for e in &events {
        let mut scratch = SessionTree::default();
        let listeners = Listeners {
            approvals: Some((&mut q, t0())),
            ..Listeners::tree(&mut scratch)
        };
        dispatch(e, listeners);
    }
    q
}

fn view<'a>(q: &'a ApprovalQueue, km: &'a Keymap, theme: &'a Theme) -> ApprovalView<'a> {
    ApprovalView {
        queue: q,
        keymap: km,
        theme,
    }
}

fn bash(command: &str) -> Event {
    ev(
        approval_bash("call_1", "explorer", command),
        EXPLORER,
        Some(ROOT),
    )
}

fn edit() -> Event {
    ev(
        approval_edit("call_2", "implementer", "src/lib.rs", SAMPLE_DIFF),
        ROOT,
        None,
    )
}

#[test]
fn command_form_at_80_and_40_columns() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    let q = queue(vec![bash("cargo test --lib -- approvals")]);
    let v = view(&q, &km, &theme);
    insta::assert_snapshot!("approval_command_80", render(&v, 80, 24));
    insta::assert_snapshot!("approval_command_40", render(&v, 40, 24));
}

#[test]
fn diff_form_at_80_and_40_columns_with_coloured_lines() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    let q = queue(vec![edit()]);
    let v = view(&q, &km, &theme);
    let screen = render(&v, 80, 24);
    insta::assert_snapshot!("approval_diff_80", screen);
    insta::assert_snapshot!("approval_diff_40", render(&v, 40, 24));

    // Added and removed lines take the theme's diff slots.
    let area = Rect::new(0, 0, 80, 24);
    let mut buf = Buffer::empty(area);
    (&v).render(area, &mut buf);
    let style_of = |needle: &str| {
        let (y, line) = screen
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
            .unwrap();
        let x = line[..line.find(needle).unwrap()].chars().count();
        buf[(u16::try_from(x).unwrap(), u16::try_from(y).unwrap())].fg
    };
    let fg = |slot| theme.style(slot).fg.unwrap();
    assert_eq!(style_of("+pub mod settings;"), fg(Slot::DiffAdded));
    assert_eq!(style_of("-pub mod config;"), fg(Slot::DiffRemoved));
    assert_eq!(style_of("@@ -1,4 +1,4 @@"), fg(Slot::DiffHunk));
    assert_ne!(fg(Slot::DiffAdded), fg(Slot::DiffRemoved));
}

#[test]
fn several_prompts_show_one_of_n_and_the_reason_line() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    let mut q = queue(vec![
        bash("rm -rf target"),
        edit(),
        ev(approval_bash("call_3", "tester", "ls"), TESTER, Some(ROOT)),
    ]);
    insta::assert_snapshot!("approval_queue_80", render(&view(&q, &km, &theme), 80, 24));
    let n = crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('n'));
    let later = t0() + jiff::SignedDuration::from_secs(1);
    q.handle_key(&n, Some(Action::ApprovalDeny), later);
    assert!(q.paste("use cargo clean instead"));
    insta::assert_snapshot!("approval_reason_40", render(&view(&q, &km, &theme), 40, 24));
}

#[test]
fn a_long_command_is_shown_whole_scrolled_and_exact() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    // 30 lines: taller than the prompt can be at 80×24.
    let script: String = (1..=30).map(|i| format!("echo step {i}\n")).collect();
    let q = queue(vec![bash(&script)]);
    let v = view(&q, &km, &theme);
    let layout = v.layout(Rect::new(0, 0, 80, 23)).unwrap();
    assert_eq!(layout.body_rows, 30);
    assert!(layout.body_visible < 30);
    let screen = render(&v, 80, 23);
    assert!(screen.contains("1–"), "{screen}");
    assert!(screen.contains("of 30 rows"), "{screen}");

    // Rows break between characters, never at a space, and hide nothing.
    let rows = exact_rows(
        "rm -rf / tmp/cache\u{1b}[2K",
        "$ ",
        "  ",
        Style::default(),
        8,
    );
    let texts: Vec<String> = rows.iter().map(crate::tui::wrap::plain).collect();
    assert_eq!(texts, ["$ rm -rf", "   / tmp", "  /cache", "  ␛[2K"]);
    assert_eq!(
        visible("ls\u{202e}txt.exe\u{200b}"),
        "ls⟨U+202E⟩txt.exe⟨U+200B⟩"
    );
}

#[test]
fn a_prompt_without_command_or_diff_shows_its_summary() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    let request = EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: "call_9".into(),
        tool_name: "mcp__github__create_issue".into(),
        agent: "zen-architect".into(),
        summary: "mcp__github__create_issue".into(),
        command: None,
        diff: None,
        sandbox: None,
        escalation: None,
    });
    let q = queue(vec![ev(request, ROOT, None)]);
    let screen = render(&view(&q, &km, &theme), 60, 12);
    assert!(
        screen.contains("zen-architect #5f0e1c2a wants to use"),
        "{screen}"
    );
    assert!(
        screen.contains("always: mcp__github__create_issue"),
        "{screen}"
    );
}

fn waiting_tree() -> SessionTree {
    let mut t = SessionTree::default();
    to_tree(&mut t, &ev(start("zen-architect"), ROOT, None));
    to_tree(&mut t, &ev(fork(ROOT, "explorer"), EXPLORER, Some(ROOT)));
    to_tree(&mut t, &ev(fork(ROOT, "tester"), TESTER, Some(ROOT)));
    for id in [ROOT, EXPLORER, TESTER] {
        let parent = (id != ROOT).then_some(ROOT);
        to_tree(
            &mut t,
            &ev(EngineEvent::status(SessionStatus::Running), id, parent),
        );
    }
    // The tester's status says waiting; the explorer has a prompt queued.
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Waiting),
            TESTER,
            Some(ROOT),
        ),
    );
    let q = queue(vec![bash("cargo test")]);
    t.set_waiting(q.waiting_sessions());
    t
}

fn tree_view<'a>(tree: &'a SessionTree, theme: &'a Theme) -> TreeView<'a> {
    TreeView {
        tree,
        theme,
        now: t0(),
        focused: false,
        open: Some(ROOT),
    }
}

#[test]
fn the_tree_marks_waiting_sessions_and_a_collapsed_parent_counts_them() {
    let theme = Theme::builtin_dark(false);
    let mut tree = waiting_tree();
    assert!(tree.is_waiting(EXPLORER) && tree.is_waiting(TESTER));
    assert!(!tree.is_waiting(ROOT));
    insta::assert_snapshot!("tree_80_waiting", render(&tree_view(&tree, &theme), 80, 8));
    tree.selected = Some(ROOT.into());
    tree.set_collapsed(true);
    let rows = tree.rows();
    assert_eq!((rows.len(), rows[0].hidden_needs_you), (1, 2));
    insta::assert_snapshot!(
        "tree_40_waiting_collapsed",
        render(&tree_view(&tree, &theme), 40, 6)
    );

    // A turn's end takes its prompts; the status no longer says waiting either.
    let mut q = queue(vec![bash("cargo test")]);
    let end = EngineEvent::OrchestratorComplete(OrchestratorCompleteEvent {
        status: SessionStatus::Completed,
        ..Default::default()
    });
    let mut scratch = SessionTree::default();
    let listeners = Listeners {
        approvals: Some((&mut q, t0())),
        ..Listeners::tree(&mut scratch)
    };
    dispatch(&ev(end, EXPLORER, Some(ROOT)), listeners);
    tree.set_waiting(q.waiting_sessions());
    assert!(!tree.is_waiting(EXPLORER));
}

#[test]
fn the_status_bar_counts_what_waits() {
    let theme = Theme::builtin_dark(false);
    let km = Keymap::defaults();
    let ok = Ok("openai/gpt-4o".to_string());
    let status = StatusView {
        provider: &ok,
        needs_you: 2,
        needs_you_key: "Ctrl+g".into(),
        running: 3,
        context: None,
        usage: None,
        note: None,
        reload: None,
        hints: km.hints(crate::tui::keymap::Context::Approval),
        mouse_off: None,
        theme: &theme,
    };
    let wide = render(&status, 80, 1);
    assert!(wide.contains("⚑ 2 need you (Ctrl+g)"), "{wide}");
    insta::assert_snapshot!("status_80_waiting", wide);
    let narrow = render(&status, 40, 1);
    assert!(narrow.contains("⚑2"), "{narrow}");
    insta::assert_snapshot!("status_40_waiting", narrow);
}

#[test]
fn a_bash_prompt_says_whether_it_runs_sandboxed() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    for note in [
        "sandboxed: writes ./, no network",
        "NOT sandboxed (sandbox.mode is off)",
    ] {
        let request = EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            agent: "zen-architect".into(),
            summary: "cargo test".into(),
            command: Some("cargo test".into()),
            diff: None,
            sandbox: Some(note.into()),
            escalation: None,
        });
        let q = queue(vec![ev(request, ROOT, None)]);
        let screen = render(&view(&q, &km, &theme), 60, 12);
        assert!(screen.contains(note), "{screen}");
        assert!(screen.contains("$ cargo test"), "{screen}");
    }
}

#[test]
fn a_merge_review_shows_its_files_then_d_shows_the_diff() {
    let (km, theme) = (Keymap::defaults(), Theme::builtin_dark(false));
    let diff = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n\
                -X = 1\n+X = 2\ndiff --git a/old.py b/old.py\n--- a/old.py\n+++ /dev/null\n\
                @@ -1 +0,0 @@\n-gone\n";
    let review = EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: "merge-0a1b2c3d".into(),
        tool_name: crate::engine::review::TOOL.into(),
        agent: "implementer".into(),
        summary: "merge #0a1b2c3d (2 files) into /repo?".into(),
        command: None,
        diff: Some(diff.into()),
        sandbox: None,
        escalation: None,
    });
    let mut q = queue(vec![ev(review, EXPLORER, Some(ROOT))]);
    assert_eq!(
        q.front().map(PendingApproval::changed_files),
        Some(vec!["calc.py".to_string(), "old.py".to_string()])
    );
    let folded = render(&view(&q, &km, &theme), 80, 24);
    insta::assert_snapshot!("approval_merge_80", folded);
    assert!(!folded.contains("+X = 2"), "{folded}");
    let later = t0() + jiff::SignedDuration::from_secs(1);
    let d = crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('d'));
    q.handle_key(&d, Some(Action::ApprovalDiff), later);
    let open = render(&view(&q, &km, &theme), 80, 24);
    assert!(open.contains("+X = 2"), "{open}");
    assert!(open.contains("d files only"), "{open}");
    // No "always" for a merge: each child is answered on its own.
    let a = crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('a'));
    assert!(matches!(
        q.handle_key(&a, Some(Action::ApprovalAlways), later),
        crate::tui::action::KeyOutcome::Emit(crate::tui::action::UiAction::Note(n))
            if n.contains("answered on its own")
    ));
    assert_eq!(q.len(), 1);
}
