//! Approval prompts in the App, fed `approval:*` events as the engine's gate publishes
//! them (no engine runs): each answer key sends its `ResolveApproval`, the prompt takes
//! the keyboard and keeps the composer's text, queues, and leaves when the engine
//! decides; the tree and the status bar show what waits.

use arbor::session::protocol::{AllowScope, ApprovalDecision, DecisionKind};
use arbor::tui::keymap::Context;
use arbor::tui::testing::{SAMPLE_DIFF, approval_bash, approval_denied, approval_edit};

use super::*;

const TESTER: &str = "5f0e1c2a11114222-1122334455667788_tester";

/// The root thread open with its explorer child running, the person halfway through
/// a message in the composer, and the child's `bash` call waiting.
fn with_child_asking(command: &str) -> Harness {
    let mut h = super::live::with_child_running();
    h.press(KeyCode::Tab); // chat → composer
    h.type_text("half-written");
    h.engine(
        approval_bash("call_7", "explorer", command),
        CHILD,
        Some(ROOT),
        21,
    );
    h.engine(
        EngineEvent::status(SessionStatus::Waiting),
        CHILD,
        Some(ROOT),
        21,
    );
    // Past the grace that protects keys typed just before the prompt appeared.
    h.clock.advance(Duration::from_secs(1));
    h
}

fn resolved(session: &str, call: &str, decision: ApprovalDecision) -> EngineCommand {
    EngineCommand::ResolveApproval {
        session_id: session.into(),
        tool_call_id: call.into(),
        decision,
    }
}

#[test]
fn y_allows_once_and_the_composer_keeps_its_text() {
    let mut h = with_child_asking("cargo test --lib");
    let screen = h.screen(80, 24);
    assert!(
        screen.contains("explorer #0a1b2c3d wants to run bash"),
        "{screen}"
    );
    assert!(screen.contains("$ cargo test --lib"), "{screen}");
    assert!(screen.contains("⚑ 1 need you"), "{screen}");
    insta::assert_snapshot!("approval_over_the_app_80", screen);

    h.press(KeyCode::Char('y'));
    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", once)]);
    assert!(h.app.approvals().is_empty());
    assert_eq!(h.app.composer_text(), "half-written");
    // The keyboard is the composer's again.
    h.type_text("!");
    assert_eq!(h.app.composer_text(), "half-written!");
    let screen = h.screen(80, 24);
    assert!(!screen.contains("Approval needed"), "{screen}");
    assert!(screen.contains("allowed once"), "{screen}");
}

#[test]
fn a_allows_the_command_prefix_always() {
    let mut h = with_child_asking("cargo test --lib");
    assert!(h.screen(80, 24).contains("a always: bash(cargo test*)"));
    h.press(KeyCode::Char('a'));
    let always = ApprovalDecision::Allow {
        scope: AllowScope::AlwaysPrefix("cargo test".into()),
    };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", always)]);
    assert_eq!(h.app.composer_text(), "half-written");
}

/// Issue 22: `A` answers "always" and writes the rule it shows into the config file,
/// keeping what was there.
#[test]
fn shift_a_allows_always_and_saves_the_rule_to_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "# mine\napprovals:\n  bash: ask\n").unwrap();
    let mut h = with_child_asking("cargo test --lib");
    h.app.set_config_file(config.clone());
    h.press(KeyCode::Char('A'));
    let always = ApprovalDecision::Allow {
        scope: AllowScope::AlwaysPrefix("cargo test".into()),
    };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", always)]);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# mine\napprovals:\n  \"bash(cargo test*)\": allow\n  bash: ask\n"
    );
    assert!(h.screen(80, 24).contains("saved"), "{}", h.screen(80, 24));
    // The watcher then sees the file change: that was this save, so no note asks for
    // a restart (issue 39); a later change of the person's own still does.
    let changed = || arbor::tui::AppEvent::Reload(arbor::agent::reload::ReloadEvent::ConfigChanged);
    h.app.handle(changed());
    assert!(
        !h.screen(80, 24).contains("restart"),
        "{}",
        h.screen(80, 24)
    );
    h.app.handle(changed());
    assert!(
        h.screen(80, 24).contains("restart arbor"),
        "{}",
        h.screen(80, 24)
    );

    // A wrapper is never saved (nor granted): the prompt stays.
    let mut h = with_child_asking("env cargo test");
    h.app.set_config_file(config.clone());
    h.press(KeyCode::Char('A'));
    assert!(h.drain().is_empty());
    assert!(!std::fs::read_to_string(&config).unwrap().contains("env"));
}

#[test]
fn n_with_a_reason_denies_with_it() {
    let mut h = with_child_asking("rm -rf target");
    h.press(KeyCode::Char('n'));
    h.type_text("use cargo clean");
    assert!(
        h.drain().is_empty(),
        "nothing is sent while typing the reason"
    );
    assert!(h.screen(80, 24).contains("> use cargo clean"));
    h.press(KeyCode::Enter);
    let deny = ApprovalDecision::Deny {
        reason: Some("use cargo clean".into()),
    };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", deny)]);
    assert_eq!(
        h.app.composer_text(),
        "half-written",
        "Enter did not submit"
    );
}

#[test]
fn esc_denies_and_cancels_nothing() {
    let mut h = with_child_asking("rm -rf target");
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 22);
    h.press(KeyCode::Esc);
    let deny = ApprovalDecision::Deny { reason: None };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", deny)]);
    // A second Esc at once is part of the answer, not a cancel (issue 23 item 2).
    h.press(KeyCode::Esc);
    assert!(
        h.drain().is_empty(),
        "the Esc right after the answer cancelled"
    );
    // With the prompt gone, Esc is the open thread's cancel again: the asking child
    // still runs, so it asks first.
    h.clock.advance(std::time::Duration::from_secs(2));
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty());
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        [EngineCommand::Cancel {
            session_id: ROOT.into()
        }]
    );
}

#[test]
fn keys_typed_as_the_prompt_appears_answer_nothing() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab);
    h.type_text("ok ");
    h.engine(
        approval_bash("call_1", "explorer", "ls"),
        CHILD,
        Some(ROOT),
        21,
    );
    h.type_text("yes");
    assert!(h.drain().is_empty(), "no answer within the grace");
    assert_eq!(h.app.approvals().len(), 1);
    assert_eq!(h.app.composer_text(), "ok ", "the prompt had the keyboard");
    h.clock.advance(Duration::from_secs(1));
    h.press(KeyCode::Char('y'));
    assert_eq!(h.drain().len(), 1);
}

#[test]
fn prompts_queue_over_any_thread_and_overlay_and_leave_when_the_engine_decides() {
    let mut h = with_root_open();
    h.press(KeyCode::F(1));
    assert_eq!(h.app.overlay(), Overlay::Help);
    h.engine(fork(ROOT, "tester"), TESTER, Some(ROOT), 2);
    h.engine(
        approval_bash("call_1", "explorer", "ls"),
        CHILD,
        Some(ROOT),
        21,
    );
    h.engine(
        approval_edit("call_2", "tester", "src/lib.rs", SAMPLE_DIFF),
        TESTER,
        Some(ROOT),
        22,
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("Approval needed · 1 of 2"), "{screen}");
    assert!(screen.contains("⚑ 2 need you"), "{screen}");

    // The subtree was cancelled: the engine denies the first call; the next shows.
    h.engine(
        approval_denied("call_1", "explorer", DecisionKind::Cancelled),
        CHILD,
        Some(ROOT),
        23,
    );
    let screen = h.screen(80, 24);
    assert!(!screen.contains("1 of"), "{screen}");
    assert!(
        screen.contains("tester #11223344 wants to use edit_file"),
        "{screen}"
    );
    assert!(screen.contains("+pub mod settings;"), "{screen}");
    assert!(screen.contains("⚑ 1 need you"), "{screen}");

    // The prompt has the keys, not the help overlay under it.
    h.clock.advance(Duration::from_secs(1));
    h.press(KeyCode::Char('a'));
    let always = ApprovalDecision::Allow {
        scope: AllowScope::AlwaysTool,
    };
    assert_eq!(h.drain(), [resolved(TESTER, "call_2", always)]);
    assert_eq!(
        h.app.overlay(),
        Overlay::Help,
        "the help overlay is still open"
    );
}

#[test]
fn the_asking_node_shows_the_waiting_glyph_until_answered() {
    let mut h = with_child_asking("ls");
    let node_row = |h: &mut Harness| {
        h.screen(100, 24)
            .lines()
            .find(|l| l.contains("expl") && l.starts_with('│'))
            .map(str::to_string)
            .unwrap()
    };
    assert!(node_row(&mut h).contains("⚑ expl"), "{}", node_row(&mut h));
    h.press(KeyCode::Char('y'));
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        CHILD,
        Some(ROOT),
        30,
    );
    assert!(!node_row(&mut h).contains('⚑'), "{}", node_row(&mut h));
}

#[test]
fn the_help_overlay_lists_the_prompts_keys_and_ctrl_c_still_quits() {
    let mut h = harness();
    let keymap = Keymap::defaults();
    assert_eq!(
        keymap.hints(Context::Approval).first(),
        Some(&("y".to_string(), "Allow once"))
    );
    h.press(KeyCode::F(1));
    let mut screen = h.screen(80, 40);
    for _ in 0..200 {
        if screen.contains("Deny, with a reason") {
            break;
        }
        h.press(KeyCode::Down);
        screen = h.screen(80, 40);
    }
    assert!(screen.contains("Approval prompt"), "{screen}");
    assert!(
        screen.contains("Deny, with a reason for the model"),
        "{screen}"
    );

    let mut h = with_child_asking("ls");
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(h.app.should_quit());
    assert!(h.drain().is_empty(), "quitting answers nothing");
}

/// Issue 23 item 8: Ctrl+g in the prompt opens the asking child's thread with the
/// prompt docked below; the thread scrolls, `y` still answers, Ctrl+g goes back.
#[test]
fn ctrl_g_docks_the_prompt_to_read_the_asking_thread_and_it_still_answers() {
    let mut h = with_child_asking("cargo test --lib");
    h.drain();
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }],
        "the asking session's thread opens"
    );
    assert!(h.app.approvals().docked());
    assert_eq!(h.app.focus(), Focus::Chat);
    h.load(
        CHILD,
        Some(ROOT),
        "explorer",
        vec![
            msg(json!({"role": "user", "content": "Run the tests"})),
            msg(json!({"role": "assistant", "content": "I will run cargo test now."})),
        ],
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("I will run cargo test now."), "{screen}");
    assert!(screen.contains("Approval needed · docked"), "{screen}");
    assert!(screen.contains("$ cargo test --lib"), "{screen}");
    assert!(screen.contains("back to the prompt"), "{screen}");
    insta::assert_snapshot!("approval_docked_80", screen);
    // The chat takes its keys (nothing answers), Ctrl+g brings the prompt back…
    h.press(KeyCode::Up);
    h.press(KeyCode::Down);
    assert!(h.drain().is_empty());
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert!(!h.app.approvals().docked());
    assert!(h.screen(80, 24).contains("wants to run bash"));
    // …and docked again, `y` answers from the thread.
    h.press(KeyCode::Char('t'));
    assert!(h.app.approvals().docked());
    h.press(KeyCode::Char('y'));
    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", once)]);
    assert!(h.app.approvals().is_empty());
    assert_eq!(h.app.composer_text(), "half-written");
}

/// Issue 23 item 2 with the prompt docked: Esc in the asking thread brings the
/// prompt back (no answer, no cancel); a second Esc at once is part of that (the
/// prompt's grace starts again), not a deny; a later Esc denies the call and nothing
/// else, and an Esc right after that cancels nothing. No running session is ever
/// cancelled on the way.
#[test]
fn esc_in_the_docked_thread_brings_the_prompt_back_and_never_cancels() {
    let mut h = with_child_asking("rm -rf target");
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 22);
    h.drain();
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert!(h.app.approvals().docked());
    h.drain();
    h.clock.advance(Duration::from_secs(3));
    h.press(KeyCode::Esc);
    assert!(!h.app.approvals().docked(), "Esc brings the prompt back");
    assert!(h.drain().is_empty(), "and answers or cancels nothing");
    h.clock.advance(Duration::from_millis(150));
    h.press(KeyCode::Esc);
    assert!(
        h.drain().is_empty(),
        "a double tap brought the prompt back; it did not also deny"
    );
    assert!(!h.app.approvals().is_empty(), "the prompt still asks");
    assert!(h.screen(80, 24).contains("wants to run bash"));

    h.clock.advance(Duration::from_secs(1));
    h.press(KeyCode::Esc);
    let deny = ApprovalDecision::Deny { reason: None };
    assert_eq!(h.drain(), [resolved(CHILD, "call_7", deny)], "only a deny");
    h.press(KeyCode::Esc);
    assert!(
        h.drain().is_empty(),
        "the Esc right after the answer cancelled"
    );
    assert!(h.app.tree().get(ROOT).unwrap().status.turn_in_progress());
    assert!(h.app.tree().get(CHILD).unwrap().status.turn_in_progress());
}
