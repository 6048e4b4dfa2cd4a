use super::*;
use crate::config::sandbox::SandboxNetwork;

fn paths(home: &Path) -> Paths {
    let h = home.display().to_string();
    Paths::from_env_map(
        &|k| match k {
            "HOME" => Some(h.clone()),
            _ => None,
        },
        home.to_path_buf(),
    )
}

#[test]
fn deny_list_covers_keys_arbor_config_and_amplifier_keys() {
    let home = Path::new("/home/u");
    let list = deny_list(&paths(home), Some(home));
    for want in [
        "/home/u/.ssh",
        "/home/u/.aws",
        "/home/u/.gnupg",
        "/home/u/.config/arbor",
        "/home/u/.config/arbor/config.yaml",
        "/home/u/.amplifier/keys.env",
    ] {
        assert!(list.contains(&PathBuf::from(want)), "{want}: {list:?}");
    }
}

#[test]
fn mode_off_runs_unsandboxed_or_is_refused_when_required() {
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Sandbox::new(
        SandboxConfig {
            mode: SandboxMode::Off,
            ..SandboxConfig::default()
        },
        &paths(dir.path()),
    );
    assert_eq!(
        sandbox.decide(dir.path(), &[".".into()]),
        Decision::Unsandboxed {
            note: "NOT sandboxed (sandbox.mode is off)".into()
        }
    );
    sandbox.config.required = true;
    assert_eq!(
        sandbox.decide(dir.path(), &[".".into()]),
        Decision::Refused {
            reason: "refused: sandbox.required is true and sandbox.mode is off".into()
        }
    );
}

#[test]
fn a_process_that_is_not_arbor_has_no_helper() {
    let dir = tempfile::tempdir().unwrap();
    // The unit-test harness is `arbor-<hash>`, not `arbor`.
    let sandbox = Sandbox::new(
        SandboxConfig {
            network: SandboxNetwork::Allow,
            ..SandboxConfig::default()
        },
        &paths(dir.path()),
    );
    match sandbox.decide(dir.path(), &[]) {
        Decision::Unsandboxed { note } => {
            assert!(
                note.starts_with("NOT sandboxed (the sandbox is unavailable: "),
                "{note}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn writable_roots_resolve_against_the_dir_and_home_and_skip_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let sandbox = Sandbox {
        home: Some(dir.path().join("sub")),
        ..Sandbox::default()
    };
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let roots = sandbox.roots(
        dir.path(),
        &[
            ".".into(),
            "sub".into(),
            "~/".into(),
            "missing".into(),
            "~".into(),
        ],
    );
    assert_eq!(roots, [root.clone(), root.join("sub")]);
    assert_eq!(show_root(&root, dir.path()), "./");
    assert_eq!(show_root(&root.join("sub"), dir.path()), "./sub");
    assert_eq!(show_root(Path::new("/elsewhere"), dir.path()), "/elsewhere");
}

/// A probe step's failure crosses from the helper as a plain JSON string (the form
/// before it was typed), and `usable` names the step that is missing.
#[test]
fn probe_steps_keep_their_json_and_usable_says_which_step_fails() {
    let probe = Probe::default();
    let json = serde_json::to_value(&probe).unwrap();
    assert_eq!(json["landlock"], serde_json::json!({"Err": "not tried"}));
    let back: Probe = serde_json::from_value(json).unwrap();
    assert_eq!(back, probe);
    let why = probe.usable(true).unwrap_err();
    assert_eq!(why, SandboxError::Landlock(StepError::from("not tried")));
    assert_eq!(why.to_string(), "Landlock: not tried");
    let only_seccomp = Probe {
        landlock: Ok(()),
        no_new_privs: Ok(()),
        ..Probe::default()
    };
    assert!(only_seccomp.usable(true).is_ok());
    assert!(matches!(
        only_seccomp.usable(false),
        Err(SandboxError::Seccomp(_))
    ));
}
