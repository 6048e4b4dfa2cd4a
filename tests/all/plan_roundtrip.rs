//! The typed mount plan is lossless (issue 24 item 5): every mount plan and overlay of
//! Amplifier's fixtures (`../shared/fixtures/amplifier` bundles and agent files, the
//! plans of `peer-cases/amplifier-merge.yaml`), arbor's built-in bundle and the plan a
//! real `arbor run` stores in `metadata.json` parse into `MountPlan` and write back to
//! the same JSON, key order included (the same bytes). The snapshot records which keys
//! each file's plan reads into named fields and which it keeps in `extra`.

use crate::support::{self, *};

use std::path::{Path, PathBuf};

use arbor::config::MountPlan;
use arbor::session::Metadata;
use serde_json::Value;

/// `value` parsed as a plan and written back, as a string (key order kept).
fn round_trip(value: &Value) -> String {
    let plan: MountPlan = serde_json::from_value(value.clone()).unwrap();
    serde_json::to_string(&plan).unwrap()
}

/// One line: the named fields the plan filled, then its `extra` keys.
fn summary(name: &str, value: &Value) -> String {
    let plan = MountPlan::from_value(value.clone());
    let mut named = Vec::new();
    for (key, set) in [
        ("session", plan.session.is_some()),
        ("providers", plan.providers.is_some()),
        ("tools", plan.tools.is_some()),
        ("hooks", plan.hooks.is_some()),
        ("agents", plan.agents.is_some()),
        ("spawn", plan.spawn.is_some()),
        ("instruction", plan.instruction.is_some()),
        ("model_role", plan.model_role.is_some()),
        ("provider_preferences", plan.provider_preferences.is_some()),
        ("approvals", plan.approvals.is_some()),
    ] {
        if set {
            named.push(key);
        }
    }
    let extra: Vec<&str> = plan.extra.keys().map(String::as_str).collect();
    format!(
        "{name}: named [{}] extra [{}]",
        named.join(", "),
        extra.join(", ")
    )
}

/// Asserts `value` round-trips to the same bytes and the same JSON value.
fn assert_lossless(name: &str, value: &Value) {
    let back = round_trip(value);
    assert_eq!(
        back,
        serde_json::to_string(value).unwrap(),
        "{name}: bytes differ"
    );
    let reparsed: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(&reparsed, value, "{name}: value differs");
}

/// Every `.yaml` and `.md` file under `dir`, sorted.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "md")
        ) {
            out.push(path);
        }
    }
}

/// The YAML document of a bundle or agent file (an `.md` file's frontmatter); `None`
/// for a markdown file without one (a README) and for the few agent files whose
/// frontmatter is not YAML (arbor's agent loader reads those leniently, no plan).
fn document(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let yaml = if path.extension().is_some_and(|e| e == "md") {
        arbor::agent::frontmatter::split(&text)
            .ok()?
            .yaml
            .to_string()
    } else {
        text
    };
    arbor::config::yaml::from_str(&yaml).ok()
}

#[test]
fn amplifier_bundles_and_agent_files_round_trip_byte_for_byte() {
    let Some(root) = support::shared::fixtures("amplifier") else {
        return;
    };
    let mut paths = Vec::new();
    for sub in ["bundles", "agents"] {
        files(&root.join(sub), &mut paths);
    }
    let mut lines = Vec::new();
    for path in paths {
        let Some(doc) = document(&path) else {
            continue;
        };
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        assert_lossless(&name, &doc);
        lines.push(summary(&name, &doc));
    }
    assert!(lines.len() >= 30, "{lines:#?}");
    insta::assert_snapshot!("amplifier_plans", lines.join("\n"));
}

/// The plans Amplifier's merge cases give and expect (`parent`, `overlay`,
/// `parent_config`, `agent_config`, `expected` maps).
#[test]
fn amplifier_merge_case_plans_round_trip_byte_for_byte() {
    let Some(path) = support::shared::fixtures("peer-cases/amplifier-merge.yaml") else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let cases: Vec<Value> = arbor::config::yaml::from_str(&text).unwrap();
    let mut checked = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let input = case.get("input").and_then(Value::as_object);
        let plans = input
            .into_iter()
            .flatten()
            .filter(|(key, _)| {
                ["parent", "overlay", "parent_config", "agent_config"].contains(&key.as_str())
            })
            .map(|(_, v)| v)
            .chain(case.get("expected"));
        for plan in plans.filter(|v| v.is_object()) {
            assert_lossless(name, plan);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} plans checked");
}

/// A plan with every named key holding a value of another type, module items that are
/// not plain entries, and unknown keys: read without loss, the odd values left alone.
#[test]
fn odd_values_stay_where_they_were() {
    let odd = serde_json::json!({
        "zeta": 1,
        "tools": [
            "tool-bash",
            {"config": {"a": 1}, "module": "tool-filesystem"},
            {"module": "tool-search", "config": null},
            {"module": 5},
            7
        ],
        "instruction": null,
        "session": "loop-basic",
        "providers": {"not": "a list"},
        "model_role": ["fast", 3],
        "hooks": [{"module": "hooks-logging", "id": "log", "extra_key": true}],
        "agents": {"include": ["foundation:explorer"]}
    });
    assert_lossless("odd", &odd);
    let plan = MountPlan::from_value(odd);
    assert_eq!(plan.instruction(), "");
    assert!(plan.session.is_none() && plan.extra.contains_key("session"));
    assert!(plan.providers().is_empty());
    assert!(plan.model_roles().is_empty());
    let tools: Vec<String> = plan.tools().into_iter().map(|t| t.module).collect();
    assert_eq!(tools, ["tool-bash", "tool-filesystem", "tool-search"]);
    assert_eq!(plan.hooks()[0].id.as_deref(), Some("log"));
}

/// arbor's own plans: the built-in bundle's, and the one a real `arbor run` stores in
/// `metadata.json` (`config`), which the store reads back into the same JSON.
#[test]
fn arbors_builtin_and_stored_plans_round_trip() {
    let builtin = arbor::agent::Bundle::builtin().mount_plan.to_value();
    assert_lossless("builtin", &builtin);

    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("done"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    env.cmd().args(["run", "hello"]).assert().success();
    let sessions = env.sessions_dir();
    let dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(dir.join("metadata.json")).unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    let config = raw.get("config").cloned().unwrap();
    assert_lossless("stored config", &config);
    let meta: Metadata = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_value(&meta).unwrap(),
        raw,
        "metadata.json round trip"
    );
}
