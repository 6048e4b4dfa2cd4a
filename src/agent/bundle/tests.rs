//! Unit tests for bundle loading.

use serde_json::json;

use crate::config::mount_plan::{AgentAccess, SpawnPolicy};

use super::*;

#[test]
fn builtin_bundle_loads_with_its_agents() {
    let b = Bundle::builtin();
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
    assert_eq!(b.name, "arbor");
    assert!(b.path.is_none());
    assert!(b.mount_plan.instruction().contains("task"));
    assert_eq!(b.mount_plan.max_iterations(), 50);
    assert_eq!(
        b.mount_plan.task_tool_config(),
        json!({"max_recursion_depth": 2, "max_parallel": 4})
    );
    assert_eq!(
        b.mount_plan.agents().map(AgentAccess::to_value),
        Some(json!("all"))
    );
    assert!(b.mount_plan.providers().is_empty());
    let tools: Vec<_> = b.mount_plan.tools().into_iter().map(|t| t.module).collect();
    assert_eq!(
        tools,
        [
            "tool-filesystem",
            "tool-bash",
            "tool-search",
            "tool-todo",
            "tool-web",
            "tool-task"
        ]
    );
    assert_eq!(
        b.mount_plan.spawn().map(SpawnPolicy::to_value),
        Some(json!({"exclude_tools": ["tool-bash", "tool-web"]}))
    );
    let stems: Vec<_> = b.agent_files.iter().map(|f| f.stem.as_str()).collect();
    for want in [
        "zen-architect",
        "researcher",
        "implementer",
        "reviewer",
        "explorer",
    ] {
        assert!(stems.contains(&want), "missing {want}");
    }
    assert!(b.agent_files.iter().all(|f| f.path.is_none()));
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn yaml_bundle_with_every_key() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        "b.yaml",
        "bundle:\n  name: demo\n  version: 1.2\n  description: Demo\nsession:\n  orchestrator: {module: loop-basic}\nproviders: [{module: provider-openai}]\ntools: [tool-filesystem]\nhooks: []\nspawn: {exclude_tools: [tool-task]}\nagents: [a, b]\ncustom: kept\n",
    );
    let b = Bundle::load(&p).unwrap();
    assert_eq!(b.name, "demo");
    assert_eq!(b.version.as_deref(), Some("1.2"));
    assert_eq!(b.description.as_deref(), Some("Demo"));
    assert_eq!(b.path.as_deref(), Some(p.as_path()));
    assert_eq!(
        b.mount_plan.agents().map(AgentAccess::to_value),
        Some(json!(["a", "b"]))
    );
    assert_eq!(b.mount_plan.extra.get("custom"), Some(&json!("kept")));
    assert!(b.mount_plan.extra.get("bundle").is_none());
    assert_eq!(
        b.mount_plan.spawn().map(SpawnPolicy::to_value),
        Some(json!({"exclude_tools": ["tool-task"]}))
    );
}

#[test]
fn markdown_bundle_body_is_the_root_instruction_and_agents_come_from_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("agents")).unwrap();
    write(
        &tmp.path().join("agents"),
        "helper.md",
        "---\nmeta: {name: helper}\n---\nHelp.\n",
    );
    write(&tmp.path().join("agents"), "notes.txt", "ignored");
    let p = write(
        tmp.path(),
        "bundle.md",
        "---\nbundle: {name: mine}\nagents: all\n---\n\nYou are root.\n",
    );
    let b = Bundle::load(&p).unwrap();
    assert_eq!(b.mount_plan.instruction(), "You are root.");
    assert_eq!(b.agent_files.len(), 1);
    assert_eq!(b.agent_files[0].stem, "helper");
    // A directory means its bundle.md.
    assert_eq!(Bundle::load(tmp.path()).unwrap().name, "mine");
}

#[test]
fn includes_are_reported_not_fetched() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        "b.yaml",
        "bundle: {name: x}\nincludes:\n  - bundle: git+https://github.com/microsoft/amplifier-foundation@main\n  - foundation\n",
    );
    let b = Bundle::load(&p).unwrap();
    assert_eq!(
        b.warnings,
        [
            "include unavailable: git+https://github.com/microsoft/amplifier-foundation@main (remote bundles are not fetched)",
            "include unavailable: foundation (not found locally)"
        ]
    );
    assert!(b.mount_plan.extra.get("includes").is_none());
}

#[test]
fn roster_agents_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        "b.yaml",
        "bundle: {name: x}\nagents:\n  include: [x:one, x:two]\n",
    );
    let b = Bundle::load(&p).unwrap();
    assert_eq!(
        b.mount_plan.agents().map(AgentAccess::to_value),
        Some(json!({"include": ["x:one", "x:two"]}))
    );
}

#[test]
fn bad_bundles_are_errors_with_positions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "b.yaml", "bundle: {name: x}\nagents: maybe\n");
    match Bundle::load(&p) {
        Err(BundleError::Parse {
            line,
            column,
            message,
            ..
        }) => {
            assert_eq!((line, column), (2, 9));
            assert!(message.contains("'maybe'"));
        }
        other => panic!("{other:?}"),
    }
    let p = write(
        tmp.path(),
        "c.md",
        "---\nbundle: {name: x}\ntools: [unclosed\n---\n",
    );
    match Bundle::load(&p) {
        Err(BundleError::Parse { line, .. }) => assert!(line >= 3, "{line}"),
        other => panic!("{other:?}"),
    }
    let p = write(tmp.path(), "d.md", "# no frontmatter\n");
    assert!(
        Bundle::load(&p)
            .unwrap_err()
            .to_string()
            .contains("no YAML frontmatter")
    );
    assert!(matches!(
        Bundle::load(&tmp.path().join("missing.yaml")),
        Err(BundleError::Read { .. })
    ));
}

#[test]
fn nameless_bundle_uses_its_directory_or_stem() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-bundle");
    std::fs::create_dir(&dir).unwrap();
    let p = write(&dir, "bundle.md", "---\ntools: []\n---\nRoot\n");
    let b = Bundle::load(&p).unwrap();
    assert_eq!(b.name, "my-bundle");
    assert!(b.warnings[0].contains("no bundle.name"));
    let p = write(tmp.path(), "other.yaml", "tools: []\n");
    assert_eq!(Bundle::load(&p).unwrap().name, "other");
}
