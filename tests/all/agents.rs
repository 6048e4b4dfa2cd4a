//! Agent files, the registry and bundles against real Amplifier material
//! (`../shared/fixtures`) and temp dirs. Never touches the real home: every `Paths`
//! is built from a map with `AMPLIFIER_HOME`, `HOME` and `ARBOR_CONFIG` in a temp dir.
//! Hot reload is `tests/all/agent_reload.rs`.

use crate::support::agent_home;
use crate::support::shared;

use std::path::Path;

use agent_home::{agent, empty_bundle, load, paths_in, write};
use arbor::agent::Bundle;
use arbor::agent::{AgentSource, Registry, registry::validate_file};
use arbor::config::merge::merge_for_spawn;
use arbor::tool::mount::ToolSet;
use serde_json::{Value, json};

fn copy_md(from: &Path, to: &Path) -> usize {
    std::fs::create_dir_all(to).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            n += 1;
        }
    }
    n
}

#[test]
fn every_real_amplifier_agent_loads_valid() {
    let Some(src) = shared::fixtures("amplifier/agents") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    assert_eq!(copy_md(&src, &paths.user_agents_dir()), 17);
    let reg = load(&paths, &empty_bundle());
    assert_eq!(reg.agents().len(), 17);
    for a in reg.agents() {
        assert!(a.is_valid(), "{}: {:?}", a.name, a.errors);
        assert_eq!(a.source, AgentSource::User);
        assert!(
            !a.description.is_empty() && !a.instruction.is_empty(),
            "{}",
            a.name
        );
    }
    let zen = reg.get("zen-architect").unwrap();
    assert_eq!(zen.overlay["model_role"], json!(["reasoning", "general"]));
    assert_eq!(
        zen.overlay["provider_preferences"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    assert_eq!(
        zen.overlay["provider_preferences"][0],
        json!({"provider": "anthropic", "model": "claude-opus-*"})
    );
    let tools: Vec<&str> = zen.overlay["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["module"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"tool-lsp") && tools.contains(&"tool-filesystem"),
        "{tools:?}"
    );
    assert!(
        zen.warnings
            .contains(&"unavailable module tool-lsp".to_string()),
        "{:?}",
        zen.warnings
    );
    assert!(zen.summary().starts_with("Use this agent PROACTIVELY"));
}

#[test]
fn bundle_agent_dirs_load_valid_as_project_agents() {
    for sub in [
        "amplifier/bundles/anchors/agents",
        "amplifier/bundles/build-up/agents",
    ] {
        let Some(src) = shared::fixtures(sub) else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths_in(tmp.path());
        let n = copy_md(&src, &paths.cwd.join(".amplifier/agents"));
        // A nested working directory finds the nearest ancestor's `.amplifier/agents`.
        let mut nested = paths.clone();
        nested.cwd = paths.cwd.join("src/deep");
        std::fs::create_dir_all(&nested.cwd).unwrap();
        let reg = load(&nested, &empty_bundle());
        assert_eq!(reg.agents().len(), n, "{sub}");
        for a in reg.agents() {
            assert!(a.is_valid(), "{sub} {}: {:?}", a.name, a.errors);
            assert_eq!(a.source, AgentSource::Project);
        }
    }
}

#[test]
fn every_fixture_bundle_loads() {
    let Some(dir) = shared::fixtures("amplifier/bundles") else {
        return;
    };
    let cases = [
        ("foundation-bundle.md", "foundation", 0),
        ("minimal.yaml", "foundation-minimal", 0),
        ("amplifier-dev.yaml", "amplifier-dev", 0),
        ("with-anthropic.yaml", "foundation-anthropic", 0),
        ("with-openai.yaml", "foundation-openai", 0),
        ("anchors/bundle.md", "anchors", 6),
    ];
    for (file, name, agents) in cases {
        let b = Bundle::load(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(b.name, name);
        assert_eq!(b.agent_files.len(), agents, "{file}");
        assert!(b.mount_plan.extra.get("includes").is_none());
    }
    let foundation = Bundle::load(&dir.join("foundation-bundle.md")).unwrap();
    assert!(
        foundation
            .mount_plan
            .instruction()
            .starts_with("# Foundation Bundle")
    );
    assert_eq!(
        foundation.mount_plan.agents().unwrap().to_value()["include"]
            .as_array()
            .unwrap()
            .len(),
        11
    );
    assert!(foundation.warnings.iter().any(|w| w
        == "include unavailable: git+https://github.com/microsoft/amplifier-bundle-recipes@main#subdirectory=behaviors/recipes.yaml (remote bundles are not fetched)"));
    // tool-bash and tool-web are arbor's own modules now (issue 29).
    for module in ["tool-bash", "tool-web"] {
        assert!(
            !foundation
                .warnings
                .iter()
                .any(|w| w.contains(&format!("module {module}"))),
            "{:?}",
            foundation.warnings
        );
    }
    let minimal = Bundle::load(&dir.join("minimal.yaml")).unwrap();
    assert_eq!(minimal.version.as_deref(), Some("1.0.0"));
    assert_eq!(
        minimal.mount_plan.to_value()["session"]["orchestrator"]["module"],
        "loop-basic"
    );
    // The anchors bundle's agents resolve as `anchors:name`.
    let anchors = Bundle::load(&dir.join("anchors/bundle.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let reg = load(&paths_in(tmp.path()), &anchors);
    let architect = reg.get("anchors:architect").unwrap();
    assert!(architect.is_valid());
    assert_eq!(architect.namespace.as_deref(), Some("anchors"));
}

#[test]
fn builtin_bundle_agents_are_all_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = load(&paths_in(tmp.path()), &Bundle::builtin());
    let names = reg.valid_names();
    for want in [
        "explorer",
        "implementer",
        "researcher",
        "reviewer",
        "zen-architect",
    ] {
        assert!(names.contains(&want.to_string()), "{names:?}");
    }
    for a in reg.agents() {
        assert!(
            a.is_valid() && a.warnings.is_empty(),
            "{}: {:?} {:?}",
            a.name,
            a.errors,
            a.warnings
        );
        assert_eq!(a.display_path(), format!("builtin:{}", a.name));
        let lines = a.instruction.lines().count();
        assert!(
            (20..=60).contains(&lines),
            "{} has {lines} instruction lines",
            a.name
        );
    }
    assert_eq!(
        reg.get("zen-architect").unwrap().overlay["model_role"],
        json!(["reasoning", "general"])
    );
    assert_eq!(
        reg.get("reviewer").unwrap().overlay["agents"],
        json!("none")
    );
    assert_eq!(reg.get("arbor:reviewer").unwrap().name, "reviewer");
}

#[test]
fn spawning_a_builtin_agent_from_the_builtin_root() {
    let bundle = Bundle::builtin();
    let tmp = tempfile::tempdir().unwrap();
    let reg = load(&paths_in(tmp.path()), &bundle);
    let reviewer = reg.get("reviewer").unwrap();
    let child = merge_for_spawn(&bundle.mount_plan, &reviewer.overlay, &Value::Null);
    assert_eq!(child.instruction(), reviewer.instruction);
    assert_eq!(child.agents().map(|a| a.to_value()), Some(json!("none")));
    assert_eq!(child.model_roles(), ["critique"]);
    let tools: Vec<_> = child.tools().into_iter().map(|t| t.module).collect();
    assert_eq!(
        tools,
        ["tool-filesystem", "tool-search", "tool-todo", "tool-task"]
    );
    assert_eq!(child.tools()[0].config, json!({"read_only": true}));
    assert_eq!(child.max_iterations(), 50);
}

/// In the built-in bundle only the root and `implementer` may write files and run
/// commands (behind approvals); every other built-in agent spawned from the root stays
/// read-only, and so does its child, and a custom agent without tools of its own
/// inherits the root's writes but not `bash`.
#[test]
fn the_builtin_bundle_gives_hands_to_the_root_and_the_implementer_only() {
    let bundle = Bundle::builtin();
    let tmp = tempfile::tempdir().unwrap();
    let reg = load(&paths_in(tmp.path()), &bundle);
    let acting = ["write_file", "edit_file", "bash"];
    let mut plans = vec![("root".to_string(), bundle.mount_plan.clone())];
    for agent in reg.agents() {
        let spawned = merge_for_spawn(&bundle.mount_plan, &agent.overlay, &Value::Null);
        plans.push((agent.name.clone(), spawned));
    }
    assert!(plans.len() > 5, "{}", plans.len());
    for (name, plan) in &plans {
        let tools = ToolSet::mount(plan, 0, None).names();
        assert!(
            tools.contains(&"read_file".to_string()),
            "{name}: {tools:?}"
        );
        let hands = ["root", "implementer"].contains(&name.as_str());
        for tool in acting {
            assert_eq!(
                tools.contains(&tool.to_string()),
                hands,
                "{name}: {tools:?}"
            );
        }
    }
    // A read-only agent's own children stay read-only.
    let reviewer = &plans.iter().find(|(n, _)| n == "reviewer").unwrap().1;
    let researcher = reg.get("researcher").unwrap();
    let grandchild = merge_for_spawn(reviewer, &json!({"instruction": "x"}), &Value::Null);
    let tools = ToolSet::mount(&grandchild, 0, None).names();
    assert!(
        !tools.iter().any(|t| acting.contains(&t.as_str())),
        "{tools:?}"
    );
    let again = merge_for_spawn(reviewer, &researcher.overlay, &Value::Null);
    let tools = ToolSet::mount(&again, 0, None).names();
    assert!(
        !tools.iter().any(|t| acting.contains(&t.as_str())),
        "{tools:?}"
    );
    // A custom agent without tools writes (asking first) but runs no command.
    let custom = merge_for_spawn(
        &bundle.mount_plan,
        &json!({"instruction": "You help."}),
        &Value::Null,
    );
    let tools = ToolSet::mount(&custom, 0, None).names();
    assert!(tools.contains(&"write_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"bash".to_string()), "{tools:?}");
}

// ---- bad input: clear messages, nothing lost ----

#[test]
fn malformed_yaml_points_at_path_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    let bad = paths.user_agents_dir().join("broken.md");
    write(
        &bad,
        "---\nmeta:\n  name: broken\n  description: fine\nmodel_role: fast: extra\ntools: []\n---\nBody\n",
    );
    write(
        &paths.user_agents_dir().join("good.md"),
        &agent("good", "ok"),
    );
    let reg = load(&paths, &empty_bundle());
    assert_eq!(reg.valid_names(), ["good"]);
    let broken = reg.get("broken").unwrap();
    let e = &broken.errors[0];
    let shown = e.to_string();
    // Line 5 of the file (the YAML's line 4) holds the stray `:` at column 17.
    assert_eq!(
        shown,
        format!(
            "{}:5:17: invalid YAML: mapping values are not allowed in this context",
            bad.display()
        )
    );
    assert_eq!(broken.overlay, json!({}));
}

#[test]
fn missing_closing_delimiter_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("open.md");
    write(&p, "---\nmeta:\n  name: open\nBody but no closing line\n");
    let def = validate_file(&p);
    assert!(!def.is_valid());
    assert_eq!(def.errors[0].line, 1);
    assert!(
        def.errors[0]
            .message
            .contains("never closed with a '---' line"),
        "{}",
        def.errors[0]
    );
}

#[test]
fn agents_maybe_is_invalid() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("maybe.md");
    write(&p, "---\nmeta:\n  name: maybe\nagents: maybe\n---\nBody\n");
    let def = validate_file(&p);
    assert_eq!(
        def.errors[0].to_string(),
        format!(
            "{}:4:9: agents: expected all, none or a list of names, got 'maybe'",
            p.display()
        )
    );
}

#[test]
fn env_override_to_a_missing_file_is_an_error_on_that_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    write(
        &paths.user_agents_dir().join("zen-architect.md"),
        &agent("zen-architect", "user copy"),
    );
    let vars = [(
        "AMPLIFIER_AGENT_ZEN_ARCHITECT".to_string(),
        "/nonexistent/zen.md".to_string(),
    )];
    let reg = Registry::load_with_vars(&paths, &empty_bundle(), &vars);
    let zen = reg.get("zen-architect").unwrap();
    assert_eq!(zen.source, AgentSource::Env);
    assert!(!zen.is_valid());
    assert!(zen.errors[0].message.contains(
        "AMPLIFIER_AGENT_ZEN_ARCHITECT is set but the file /nonexistent/zen.md does not exist"
    ));
    assert_eq!(zen.shadows[0].source, AgentSource::User);
    // The same through `load` with a lookup function.
    let env =
        |k: &str| (k == "AMPLIFIER_AGENT_ZEN_ARCHITECT").then(|| "/nonexistent/zen.md".to_string());
    let reg = Registry::load(&paths, &empty_bundle(), &env);
    assert!(!reg.get("zen-architect").unwrap().is_valid());
}

#[test]
fn env_override_wins_and_env_only_agents_appear() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    write(
        &paths.user_agents_dir().join("zen-architect.md"),
        &agent("zen-architect", "user copy"),
    );
    let over = tmp.path().join("elsewhere/zen.md");
    write(&over, &agent("zen-architect", "env copy"));
    let solo = tmp.path().join("elsewhere/solo.md");
    write(&solo, &agent("whatever", "solo"));
    let vars = [
        (
            "AMPLIFIER_AGENT_ZEN_ARCHITECT".to_string(),
            over.display().to_string(),
        ),
        (
            "AMPLIFIER_AGENT_MY_HELPER".to_string(),
            solo.display().to_string(),
        ),
        ("UNRELATED".to_string(), "x".to_string()),
    ];
    let reg = Registry::load_with_vars(&paths, &empty_bundle(), &vars);
    let zen = reg.get("zen-architect").unwrap();
    assert_eq!(
        (zen.source, zen.description.as_str()),
        (AgentSource::Env, "env copy")
    );
    let helper = reg.get("my-helper").unwrap();
    assert!(helper.is_valid());
    assert_eq!(helper.description, "solo");
    assert!(helper.warnings[0].contains("selects it as 'my-helper'"));
    assert_eq!(reg.valid_names(), ["my-helper", "zen-architect"]);
}

#[test]
fn two_hundred_files_twenty_broken() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    let dir = paths.user_agents_dir();
    for i in 0..200 {
        let text = if i % 10 == 3 {
            format!("---\nmeta:\n  name: agent-{i:03}\n  description: [broken\n---\nBody\n")
        } else {
            agent(&format!("agent-{i:03}"), &format!("number {i}"))
        };
        write(&dir.join(format!("agent-{i:03}.md")), &text);
    }
    let reg = load(&paths, &empty_bundle());
    assert_eq!(reg.agents().len(), 200);
    assert_eq!(reg.valid_names().len(), 180);
    let invalid: Vec<_> = reg.invalid().collect();
    assert_eq!(invalid.len(), 20);
    for a in invalid {
        let e = &a.errors[0];
        assert!(
            e.path.ends_with(&format!("{}.md", a.name)) && e.line >= 4 && e.column >= 1,
            "{e}"
        );
    }
}

#[test]
fn unknown_agents_are_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = load(&paths_in(tmp.path()), &Bundle::builtin());
    assert!(reg.get("no-such-agent").is_none());
    assert!(reg.get("arbor:no-such-agent").is_none());
    assert!(reg.get("other:reviewer").is_none());
    assert!(reg.get("").is_none());
}

// ---- resolution ----

#[test]
fn user_beats_project_beats_bundle_and_shadows_are_kept_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = paths_in(tmp.path());
    write(
        &paths.user_agents_dir().join("reviewer.md"),
        &agent("reviewer", "user"),
    );
    write(
        &paths.cwd.join(".amplifier/agents/reviewer.md"),
        &agent("reviewer", "project"),
    );
    let reg = load(&paths, &Bundle::builtin());
    let r = reg.get("reviewer").unwrap();
    assert_eq!(
        (r.source, r.description.as_str()),
        (AgentSource::User, "user")
    );
    let shadows: Vec<_> = r
        .shadows
        .iter()
        .map(|s| (s.source, s.path.clone()))
        .collect();
    assert_eq!(
        shadows,
        [
            (
                AgentSource::Project,
                paths
                    .cwd
                    .join(".amplifier/agents/reviewer.md")
                    .display()
                    .to_string()
            ),
            (AgentSource::Bundle, "builtin:reviewer".to_string()),
        ]
    );
    // `ns:name` still reaches the bundle's own definition.
    let bundled = reg.get("arbor:reviewer").unwrap();
    assert_eq!(bundled.source, AgentSource::Bundle);
    assert!(bundled.description.contains("Critically reviews"));
    // Winners are sorted by name.
    let names: Vec<_> = reg.agents().iter().map(|a| a.name.clone()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}
