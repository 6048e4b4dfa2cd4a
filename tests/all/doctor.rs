//! `arbor doctor` through the real binary: a keymap, theme or bundle the TUI or engine
//! cannot use is a problem (non-zero exit) named in the report (issue 15 item 6).

use crate::support;

use std::sync::Arc;

use futures::FutureExt;
use support::*;

/// A reachable provider in the config plus `extra` config lines; runs `doctor` and
/// returns (success, stdout).
fn doctor(env: &TestEnv, server: &ScriptedServer, extra: &str, args: &[&str]) -> (bool, String) {
    env.use_openai(&server.base_url, "sk-x");
    env.append_config(extra);
    let out = env.cmd().args(args).arg("doctor").output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn server() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|_| {
        async { Reply::Sse(sse_text("unused")) }.boxed()
    }))
}

#[test]
fn an_unknown_keymap_action_or_key_fails_doctor_naming_it() {
    let server = server();
    let env = TestEnv::new();
    let (ok, out) = doctor(&env, &server, "keymap: {fly-to-moon: ctrl+q}\n", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("keymap    unusable"), "{out}");
    assert!(out.contains("unknown action \"fly-to-moon\""), "{out}");

    let (ok, out) = doctor(&env, &server, "keymap: {tree.cancel: hyper+q}\n", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("tree.cancel"), "{out}");
    assert!(out.contains("hyper"), "{out}");

    // A plain character bound in the composer would block typing.
    let (ok, out) = doctor(&env, &server, "keymap: {composer.submit: q}\n", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("composer.submit"), "{out}");

    let (ok, out) = doctor(&env, &server, "keymap: {tree.cancel: c}\n", &[]);
    assert!(ok, "{out}");
    assert!(out.contains("keymap    1 override"), "{out}");
    assert!(out.contains("no problems found"), "{out}");
}

#[test]
fn an_unknown_or_invalid_theme_fails_doctor_naming_it() {
    let server = server();
    let env = TestEnv::new();
    let (ok, out) = doctor(&env, &server, "theme: solarized-nope\n", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("unknown theme 'solarized-nope'"), "{out}");

    let (ok, out) = doctor(&env, &server, "theme: light\n", &[]);
    assert!(ok, "{out}");
    assert!(out.contains("theme     light"), "{out}");

    // A broken user theme (in HOME's XDG config dir) fails even while another theme
    // is selected.
    let themes = env.home.join(".config/arbor/themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(
        themes.join("mine.yaml"),
        "slots:\n  chat.user: {fg: not-a-colour}\n",
    )
    .unwrap();
    let (ok, out) = doctor(&env, &server, "theme: light\n", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("theme 'mine'"), "{out}");
    std::fs::write(themes.join("mine.yaml"), "extends: dark\nslots: {}\n").unwrap();
    let (ok, out) = doctor(&env, &server, "theme: mine\n", &[]);
    assert!(ok, "{out}");
    assert!(out.contains("theme     mine"), "{out}");
}

#[test]
fn a_bundle_arbor_cannot_run_fails_doctor_naming_the_modules() {
    let server = server();
    let env = TestEnv::new();
    let bundle = env.dir.path().join("bundle.md");
    std::fs::write(
        &bundle,
        "---\nbundle: {name: odd}\ntools:\n  - module: tool-filesystem\n  - module: tool-lsp\n  - module: tool-task\nhooks:\n  - module: hooks-logging\nagents: all\n---\nYou help.\n",
    )
    .unwrap();
    let b = bundle.to_str().unwrap();
    let (ok, out) = doctor(&env, &server, "", &["--bundle", b]);
    assert!(!ok, "{out}");
    assert!(out.contains("tools: module tool-lsp"), "{out}");
    assert!(out.contains("hooks: module hooks-logging"), "{out}");
    assert!(!out.contains("no delegation tool"), "{out}");
    assert!(out.contains("delegation tool mounted: tool-task"), "{out}");

    // Agents to delegate to (a user agent), but no task tool to reach them.
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("helper.md"),
        "---\nmeta: {name: helper, description: Helps.}\n---\nYou help.\n",
    )
    .unwrap();
    std::fs::write(
        &bundle,
        "---\nbundle: {name: odd}\ntools:\n  - module: tool-filesystem\nagents: all\n---\nYou help.\n",
    )
    .unwrap();
    let (ok, out) = doctor(&env, &server, "", &["--bundle", b]);
    assert!(!ok, "{out}");
    assert!(out.contains("no delegation tool"), "{out}");
    assert!(out.contains("tool-task"), "{out}");

    // Amplifier's delegate tool counts as a delegation tool.
    std::fs::write(
        &bundle,
        "---\nbundle: {name: odd}\ntools:\n  - module: tool-filesystem\n  - module: tool-delegate\nagents: all\n---\nYou help.\n",
    )
    .unwrap();
    let (ok, out) = doctor(&env, &server, "", &["--bundle", b]);
    assert!(ok, "{out}");
    assert!(
        out.contains("delegation tool mounted: tool-delegate (1 agent available)"),
        "{out}"
    );

    // With `agents: none` there is nothing to delegate to: a fine bundle.
    std::fs::write(
        &bundle,
        "---\nbundle: {name: odd}\ntools:\n  - module: tool-filesystem\nagents: none\n---\nYou help.\n",
    )
    .unwrap();
    let (ok, out) = doctor(&env, &server, "", &["--bundle", b]);
    assert!(ok, "{out}");
}

/// Issue 23 item 10: every bad config key and every bad keymap entry is reported,
/// once each, with the config file's path once.
#[test]
fn doctor_reports_every_config_and_keymap_error_once() {
    let env = TestEnv::new();
    std::fs::write(&env.config, "notify: beep\nmouse: sometimes\n").unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("beep") && text.contains("sometimes"),
        "{text}"
    );
    let path = env.config.display().to_string();
    assert_eq!(text.matches(&path).count(), 1, "{text}");

    let server = server();
    let (ok, out) = doctor(
        &env,
        &server,
        "keymap: {fly-to-moon: ctrl+q, swim: ctrl+w, tree.cancel: hyper+q}\n",
        &[],
    );
    assert!(!ok, "{out}");
    for needle in ["\"fly-to-moon\"", "\"swim\"", "\"hyper+q\""] {
        assert_eq!(out.matches(needle).count(), 1, "{needle}: {out}");
    }
    assert_eq!(out.matches("  known   ").count(), 1, "{out}");
    assert!(out.contains("problems  3"), "{out}");
}
