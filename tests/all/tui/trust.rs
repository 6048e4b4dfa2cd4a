//! The start-up trust prompt in the App (SPEC §12 "Trust"): modal until answered, the
//! composer keeps its text; `y` records the project in the trust store, `n` leaves it
//! untrusted; a directory without `.amplifier/agents/` or `.mcp.json` is never asked
//! about and nothing blocks the composer. The store is a temp file.

use std::path::Path;

use arbor::config::trust::{TrustStore, untrusted_project};
use arbor::paths::Paths;
use arbor::tui::keymap::Context;
use arbor::tui::state::trust::TrustPrompt;

use super::*;

/// `Paths` whose project directory is `cwd` and whose state (the trust store) is under
/// `root/state`.
fn paths(root: &Path, cwd: &Path) -> Paths {
    let vars = [
        ("HOME", root.join("home")),
        ("AMPLIFIER_HOME", root.join("amp")),
        ("ARBOR_CONFIG", root.join("config.yaml")),
        ("XDG_STATE_HOME", root.join("state")),
    ];
    let lookup = move |k: &str| {
        vars.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.display().to_string())
    };
    Paths::from_env_map(&lookup, cwd.to_path_buf())
}

/// A harness asked about `project` the way `tui::run` asks at start.
fn asked(root: &Path, project: &Path) -> (Harness, Paths) {
    let paths = paths(root, project);
    let mut h = harness();
    let untrusted = untrusted_project(&paths).expect("the project needs trust");
    h.app
        .ask_trust(TrustPrompt::new(untrusted, paths.trust_file(), None));
    (h, paths)
}

fn cloned_repo(root: &Path) -> std::path::PathBuf {
    let project = root.join("cloned-repo");
    std::fs::create_dir_all(project.join(".amplifier/agents")).unwrap();
    std::fs::write(project.join(".mcp.json"), "{\"mcpServers\": {}}").unwrap();
    std::fs::canonicalize(project).unwrap()
}

#[test]
fn y_trusts_the_project_and_the_composer_keeps_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let project = cloned_repo(tmp.path());
    let (mut h, paths) = asked(tmp.path(), &project);
    let screen = h.screen(80, 24);
    assert!(screen.contains("Trust this project?"), "{screen}");
    // Its one power file (the agents directory is empty), never what it lacks.
    assert!(
        screen.contains(".mcp.json — MCP servers (none listed)"),
        "{screen}"
    );
    assert!(!screen.contains(".amplifier/agents/"), "{screen}");
    assert!(screen.contains("y trust · n/Esc not now"), "{screen}");
    let hint = Keymap::defaults().hints(Context::Trust);
    assert_eq!(hint.first().map(|(k, _)| k.as_str()), Some("y"), "{hint:?}");
    assert!(screen.contains("y Trust this project"), "{screen}");

    // Typing does not reach the composer while the prompt waits.
    h.type_text("hello");
    assert_eq!(h.app.composer_text(), "");
    assert!(h.app.trust_prompt().is_some(), "a stray key answered it");

    h.press(KeyCode::Char('y'));
    assert!(h.app.trust_prompt().is_none());
    let store = TrustStore::load(&paths.trust_file()).unwrap();
    assert!(store.is_trusted(&project));
    assert!(untrusted_project(&paths).is_none());
    let screen = h.screen(80, 24);
    assert!(!screen.contains("Trust this project?"), "{screen}");
    assert!(screen.contains("trusted"), "{screen}");
    h.type_text("go");
    assert_eq!(h.app.composer_text(), "go");
    assert!(
        h.drain().is_empty(),
        "answering trust sends nothing to the engine"
    );
}

#[test]
fn n_and_esc_leave_it_untrusted() {
    let tmp = tempfile::tempdir().unwrap();
    let project = cloned_repo(tmp.path());
    for key in [KeyCode::Char('n'), KeyCode::Esc] {
        let (mut h, paths) = asked(tmp.path(), &project);
        h.press(key);
        assert!(h.app.trust_prompt().is_none(), "{key:?}");
        assert!(!paths.trust_file().exists(), "{key:?} wrote the store");
        assert!(untrusted_project(&paths).is_some());
        let screen = h.screen(80, 24);
        assert!(screen.contains("not trusted"), "{screen}");
    }
}

#[test]
fn a_plain_directory_is_never_asked_about() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(untrusted_project(&paths(tmp.path(), &plain)), None);
    let mut h = harness();
    assert!(h.app.trust_prompt().is_none());
    h.type_text("hi");
    assert_eq!(h.app.composer_text(), "hi");
}
