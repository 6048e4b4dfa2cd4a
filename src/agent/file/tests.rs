//! Unit tests for agent-file parsing. Amplifier's own cases run in
//! `tests/all/conformance.rs`.

use std::path::Path;

use serde_json::json;

use super::*;

fn parse(text: &str) -> AgentDef {
    let origin = AgentOrigin {
        path: Some(Path::new("/tmp/t/stem-name.md")),
        stem: "stem-name",
        source: AgentSource::User,
        namespace: None,
    };
    parse_agent(text, &origin)
}

#[test]
fn meta_form_normalizes_into_the_overlay() {
    let def = parse(
        "---\nmeta:\n  name: test-agent\n  description: A test agent\n  extra: kept\n\nmodel_role: fast\n\nprovider_preferences:\n  - provider: anthropic\n    model: claude-haiku-*\n---\n\n# Test Agent\n\nYou are a test agent.\n",
    );
    assert!(def.is_valid(), "{:?}", def.errors);
    assert_eq!(def.name, "test-agent");
    assert_eq!(def.description, "A test agent");
    assert_eq!(def.instruction, "# Test Agent\n\nYou are a test agent.");
    assert_eq!(
        def.overlay,
        json!({
            "meta": {"name": "test-agent", "description": "A test agent", "extra": "kept"},
            "model_role": "fast",
            "provider_preferences": [{"provider": "anthropic", "model": "claude-haiku-*"}],
            "instruction": "# Test Agent\n\nYou are a test agent."
        })
    );
}

#[test]
fn flat_form_moves_name_and_description_under_meta() {
    let def = parse(
        "---\nname: flat-agent\ndescription: Flat form\nmodel_role: coding\ncustom_key: 1\ntools:\n  - module: tool-search\n---\nDo things.\n",
    );
    assert!(def.is_valid());
    assert_eq!(def.name, "flat-agent");
    assert_eq!(
        def.overlay["meta"],
        json!({"name": "flat-agent", "description": "Flat form"})
    );
    assert!(def.overlay.get("name").is_none());
    assert_eq!(def.overlay["custom_key"], json!(1));
    assert_eq!(def.warnings, ["unknown key 'custom_key' kept"]);
}

#[test]
fn name_defaults_to_the_file_stem() {
    let def = parse("---\nmodel_role: fast\n---\nBody\n");
    assert_eq!(def.name, "stem-name");
    assert_eq!(
        (def.name.as_str(), def.description.as_str()),
        ("stem-name", "")
    );
    let def = parse("---\nmeta:\n  name:\n  description: d\n---\nBody\n");
    assert_eq!(def.name, "stem-name");
}

#[test]
fn top_level_model_role_wins_over_meta() {
    let def =
        parse("---\nmeta:\n  name: m\n  model_role: fast\nmodel_role: reasoning\n---\nBody\n");
    assert_eq!(def.overlay["model_role"], json!("reasoning"));
    let def = parse("---\nmeta:\n  name: m\n  model_role: fast\n---\nBody\n");
    assert_eq!(def.overlay["model_role"], json!("fast"));
}

#[test]
fn arbor_extensions_are_kept() {
    let def = parse(
        "---\nmeta: {name: lead}\nsub_agents: [reviewer, tester]\ndisallow_transfer_to_parent: true\ndisallow_transfer_to_peers: false\nspawn: {exclude_tools: [tool-task]}\nagents: [reviewer]\n---\nLead.\n",
    );
    assert!(def.is_valid(), "{:?}", def.errors);
    assert!(def.warnings.is_empty(), "{:?}", def.warnings);
    assert_eq!(def.overlay["sub_agents"], json!(["reviewer", "tester"]));
    assert_eq!(def.overlay["disallow_transfer_to_parent"], json!(true));
    assert_eq!(
        def.overlay["spawn"],
        json!({"exclude_tools": ["tool-task"]})
    );
    assert_eq!(def.overlay["agents"], json!(["reviewer"]));
}

#[test]
fn empty_body_has_no_instruction_key() {
    let def = parse("---\nmeta:\n  name: m\n---\n\n   \n");
    assert!(def.is_valid());
    assert_eq!(def.instruction, "");
    assert!(def.overlay.get("instruction").is_none());
}

#[test]
fn malformed_yaml_reports_the_files_line() {
    // Line 4 of the file is the bad one (the YAML starts on line 2).
    let def = parse(
        "---\nmeta:\n  name: broken\n  description: [unclosed\nmodel_role: fast\n---\nBody\n",
    );
    assert!(!def.is_valid());
    assert_eq!(def.overlay, json!({}));
    let e = &def.errors[0];
    assert_eq!(e.path, "/tmp/t/stem-name.md");
    assert!((4..=6).contains(&e.line), "{e}");
    assert!(e.column >= 1);
    assert!(e.message.starts_with("invalid YAML"), "{e}");
    assert!(!e.message.contains('\n'));
    assert_eq!(def.name, "stem-name");
}

#[test]
fn yaml_error_on_a_specific_line() {
    let def = parse("---\nmeta:\n  name: a\nmodel_role: fast\nbad: : :\n---\nBody\n");
    let e = &def.errors[0];
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn duplicate_keys_are_an_error() {
    let def = parse("---\nmodel_role: fast\nmodel_role: slow\n---\nBody\n");
    assert!(!def.is_valid());
    assert_eq!(def.errors[0].line, 3, "{}", def.errors[0]);
}

#[test]
fn a_file_without_frontmatter_is_all_instruction_and_a_missing_close_is_an_error() {
    // As foundation's loader: no frontmatter → name from the stem, the text the body.
    let def = parse("\u{feff}# Just a prompt\n\nBe helpful.\n");
    assert!(def.is_valid(), "{:?}", def.errors);
    assert_eq!(def.instruction, "# Just a prompt\n\nBe helpful.");
    assert_eq!(
        (def.name.as_str(), def.description.as_str()),
        ("stem-name", "")
    );
    let def = parse("---\nmeta:\n  name: x\nBody without a closing line\n");
    assert!(
        def.errors[0].message.contains("never closed"),
        "{}",
        def.errors[0]
    );
    assert_eq!(def.errors[0].line, 1);
}

#[test]
fn agents_maybe_is_invalid_and_points_at_the_value() {
    let def = parse("---\nmeta:\n  name: typo\nagents: maybe\n---\nBody\n");
    assert!(!def.is_valid());
    let e = &def.errors[0];
    assert_eq!(
        e.message,
        "agents: expected all, none or a list of names, got 'maybe'"
    );
    assert_eq!((e.line, e.column), (4, 9));
    assert_eq!(
        e.to_string(),
        "/tmp/t/stem-name.md:4:9: agents: expected all, none or a list of names, got 'maybe'"
    );
    assert_eq!(def.overlay, json!({}));
}

#[test]
fn agents_null_and_numbers_are_invalid() {
    assert!(!parse("---\nagents:\n---\nB\n").is_valid());
    assert!(!parse("---\nagents: 42\n---\nB\n").is_valid());
    assert!(parse("---\nagents: none\n---\nB\n").is_valid());
    assert!(parse("---\nagents: []\n---\nB\n").is_valid());
}

#[test]
fn roster_mapping_in_an_agent_file_is_a_warning() {
    let def = parse("---\nagents:\n  include:\n    - foundation:explorer\n---\nB\n");
    assert!(def.is_valid());
    assert!(def.warnings.iter().any(|w| w.contains("roster")));
}

#[test]
fn unavailable_modules_are_warnings_not_errors() {
    let def = parse(
        "---\ntools:\n  - module: tool-filesystem\n  - module: tool-lsp\nproviders:\n  - module: provider-gemini\n---\nB\n",
    );
    assert!(def.is_valid());
    assert_eq!(
        def.warnings,
        [
            "unavailable module tool-lsp",
            "unavailable module provider-gemini"
        ]
    );
}

#[test]
fn ill_typed_keys_are_errors() {
    let def = parse("---\ntools: tool-filesystem\n---\nB\n");
    assert_eq!(
        def.errors[0].message,
        "tools: expected a list of modules, got 'tool-filesystem'"
    );
    let def = parse("---\nmeta: just text\n---\nB\n");
    assert!(!def.is_valid());
    let def = parse("---\n- a\n- b\n---\nB\n");
    assert!(def.errors[0].message.contains("must be a mapping"));
}

#[test]
fn bad_names_are_errors() {
    let def = parse("---\nmeta:\n  name: ../escape\n---\nB\n");
    assert!(!def.is_valid());
    assert!(def.errors[0].message.starts_with("name '../escape'"));
}

#[test]
fn bom_and_crlf_files_parse() {
    let def = parse(
        "\u{feff}---\r\nmeta:\r\n  name: windows-agent\r\n  description: Win\r\nmodel_role: fast\r\n---\r\n\r\nYou are a helpful agent.\r\n",
    );
    assert!(def.is_valid(), "{:?}", def.errors);
    assert_eq!(def.name, "windows-agent");
    assert_eq!(def.instruction, "You are a helpful agent.");
}

#[test]
fn unreadable_file_is_an_invalid_agent() {
    let def = load_agent_file(
        Path::new("/nonexistent/dir/ghost.md"),
        AgentSource::User,
        None,
    );
    assert_eq!(def.name, "ghost");
    assert!(def.errors[0].message.starts_with("cannot read agent file"));
}

#[test]
fn never_panics_on_odd_yaml() {
    for text in [
        "---\n&a [*a]\n---\n",
        "---\n!!binary xyz\n---\n",
        "---\n? [a]\n: b\n---\n",
        "---\nmeta: &m {name: a}\nx: *m\n---\n",
        "---\n\t\n---\n",
        "---\n'unterminated\n---\n",
    ] {
        let _ = parse(text);
    }
}

#[test]
fn underindented_quoted_continuation_lines_are_accepted_like_pyyaml() {
    let def = parse(
        "---\nmeta:\n  name: q\n  description: \"First line\n\nsecond: with colon\n'quoted' words\"\nmodel_role: fast\n---\nBody\n",
    );
    assert!(def.is_valid(), "{:?}", def.errors);
    assert_eq!(
        def.description,
        "First line\nsecond: with colon 'quoted' words"
    );
    assert_eq!(def.overlay["model_role"], json!("fast"));
    // An unterminated quote is still an error, reported where saphyr found it.
    let def = parse("---\nmeta:\n  description: \"never closed\nmodel_role: fast\n---\nBody\n");
    assert!(!def.is_valid());
}
