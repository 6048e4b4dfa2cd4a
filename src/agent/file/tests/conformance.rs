//! Runs Amplifier's agent-file cases (`../shared/fixtures/peer-cases/
//! amplifier-agent-files.yaml`): `parse_frontmatter` onto [`frontmatter::split`] +
//! [`parse_yaml`], `_load_agent_file_metadata` onto [`parse_agent`] (its
//! `expected_subset` and `expected_error` cases).
//!
//! Deliberate deviations: the frontmatter cases in `FRONTMATTER_DEVIATIONS`; files
//! without frontmatter (an error in arbor); Python wording in error messages; and the
//! whole-result `expected` cases of `_load_agent_file_metadata`, whose shape differs
//! (arbor keeps unknown keys and nests `name`/`description` under `meta`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::*;
use crate::agent::frontmatter;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/fixtures/peer-cases/amplifier-agent-files.yaml"
);

/// `parse_frontmatter` cases arbor answers differently on purpose (line-based
/// delimiters; no frontmatter is an error, see `agent::frontmatter`).
const FRONTMATTER_DEVIATIONS: &[&str] = &[
    "frontmatter: BOM then plain markdown gives empty mapping and BOM-less body",
    "frontmatter: empty block '---\\n---' is NOT recognised as frontmatter",
    "frontmatter: text right after the closing --- on the same line becomes body",
    "frontmatter: a '----' line closes the block and leaves one dash in the body",
];

/// Python-specific words in expected error messages that arbor words differently.
const PYTHON_WORDS: &[&str] = &["None", "(NoneType)", "False", "(bool)", "(str)"];

#[test]
fn amplifier_agent_file_cases() {
    let file = Path::new(CASES);
    if !file.is_file() {
        println!("note: {CASES} is absent; skipping the Amplifier agent-file cases");
        return;
    }
    let cases: Vec<Value> =
        serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut ran = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let input = &case["input"];
        match case["function"].as_str().unwrap() {
            "foundation.io.parse_frontmatter" if !FRONTMATTER_DEVIATIONS.contains(&name) => {
                let fm = frontmatter::split(input["text"].as_str().unwrap()).unwrap();
                let yaml = parse_yaml(&fm.yaml, fm.yaml_line).unwrap();
                let front = if yaml.is_null() { json!({}) } else { yaml };
                let body = fm.body.trim_start_matches(['\n', '\r']);
                if let Some(want) = case.get("expected") {
                    assert_eq!(front, want["frontmatter"], "{name}");
                    assert_eq!(body, want["body"].as_str().unwrap(), "{name}");
                }
                for c in case
                    .get("expected_checks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let path = c["path"].as_str().unwrap();
                    let got = if let Some(p) = path.strip_prefix("frontmatter.") {
                        p.split('.').fold(&front, |v, k| &v[k]).clone()
                    } else {
                        json!(body)
                    };
                    if let Some(want) = c.get("equals") {
                        assert_eq!(&got, want, "{name}");
                    }
                    if let Some(want) = c.get("stripped_equals") {
                        assert_eq!(
                            got.as_str().unwrap().trim(),
                            want.as_str().unwrap(),
                            "{name}"
                        );
                    }
                    if let Some(p) = c.get("not_starts_with") {
                        assert!(
                            !got.as_str().unwrap().starts_with(p.as_str().unwrap()),
                            "{name}"
                        );
                    }
                }
                ran += 1;
            }
            "foundation._load_agent_file_metadata" => {
                let Some(text) = input["file_text"]
                    .as_str()
                    .filter(|t| t.trim_start_matches('\u{feff}').starts_with("---\n"))
                else {
                    continue; // no frontmatter: an error in arbor (deliberate)
                };
                let path = PathBuf::from(input["path"].as_str().unwrap());
                let stem = input["fallback_name"].as_str().unwrap();
                let origin = AgentOrigin {
                    path: Some(&path),
                    stem,
                    source: AgentSource::User,
                    namespace: None,
                };
                let def = parse_agent(text, &origin);
                if let Some(err) = case.get("expected_error") {
                    assert!(!def.is_valid(), "{name}");
                    let shown = def.errors[0].to_string();
                    for want in err["contains"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_str)
                    {
                        if !PYTHON_WORDS.contains(&want) {
                            assert!(shown.contains(want), "{name}: {shown} lacks {want}");
                        }
                    }
                } else if let Some(subset) = case.get("expected_subset").and_then(Value::as_object)
                {
                    assert!(def.is_valid(), "{name}: {:?}", def.errors);
                    for (k, v) in subset {
                        let got = match k.as_str() {
                            "name" => json!(def.name),
                            "description" => json!(def.description),
                            _ => def.overlay[k].clone(),
                        };
                        assert_eq!(&got, v, "{name}: {k}");
                    }
                } else {
                    continue;
                }
                ran += 1;
            }
            _ => {}
        }
    }
    assert!(ran >= 24, "only {ran} cases ran");
}
