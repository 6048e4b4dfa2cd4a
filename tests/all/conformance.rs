//! Amplifier conformance (issue 3, scope 7): every case of the peer-case files in
//! `../shared/fixtures/peer-cases/` run against arbor's own functions.
//!
//! Each case passes, or is listed in `tests/all/conformance/deviations.yaml` as a deliberate
//! `deviation` (it must still fail: a listed case that passes fails the test) or as
//! `not_applicable` (no arbor counterpart). Anything else fails the test. The summary
//! line `N passed, M deviations, K not applicable` goes to stdout and stderr, bypassing
//! the test harness's capture, on its own line.
//!
//! `adk-selection.yaml` (agent transfer and selection, issue 12) runs against
//! `arbor::agent::{tree, select}` with the `python_2026_router` values.
//!
//! Extra cases (issue 12, scope 4): every `*.yaml` in the directory named by
//! `ARBOR_EXTRA_CASES`, same schema, dispatched by each case's `function` to whichever
//! runner maps it, keys no runner reads ignored, no deviations allowed; the line
//! `extra: N passed, M failed` goes out like the summary, and any failure fails the test.

use std::io::Write;

use serde_json::Value;

mod adk;
mod agent_files;
mod deviations;
mod eval;
mod eval_tests;
mod ids;
mod merge;
mod routing;
use crate::support::shared;

use deviations::{Deviations, Verdict};

const DEVIATIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/all/conformance/deviations.yaml"
);

type Runner = fn(&Value) -> Option<Result<(), String>>;

/// The case files and their runners.
const FILES: &[(&str, Runner)] = &[
    ("amplifier-merge.yaml", merge::run),
    ("amplifier-agent-files.yaml", agent_files::run),
    ("amplifier-ids.yaml", ids::run),
    ("amplifier-routing.yaml", routing::run),
    ("adk-selection.yaml", adk::run),
];

/// Writes `line` on its own line to stdout and stderr, past the harness's capture.
fn announce(line: &str) {
    let _ = writeln!(std::io::stdout(), "\n{line}");
    let _ = writeln!(std::io::stderr(), "\n{line}");
}

/// Parses a case file. Only `true`/`false` are booleans: the files were written by
/// PyYAML, which reads `y`/`n` as strings (serde-saphyr's default would not).
fn parse_cases(text: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, serde_saphyr::options! { strict_booleans: true })
}

#[derive(Default)]
struct Tally {
    passed: usize,
    deviations: usize,
    not_applicable: usize,
}

#[test]
fn amplifier_peer_cases() {
    let Some(dir) = shared::fixtures("peer-cases") else {
        announce(
            "note: ../shared/fixtures/peer-cases is absent; Amplifier conformance cases skipped",
        );
        return;
    };
    let mut deviations = Deviations::parse(&std::fs::read_to_string(DEVIATIONS).unwrap())
        .unwrap_or_else(|e| panic!("{DEVIATIONS}: {e}"));
    let mut total = Tally::default();
    let mut failures = Vec::new();
    let mut bugs = Vec::new();
    for (file, run) in FILES {
        let text =
            std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let cases = parse_cases(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut tally = Tally::default();
        for case in &cases {
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>");
            match deviations.judge(file, name, run(case)) {
                Verdict::Passed => tally.passed += 1,
                Verdict::Deviation => {
                    tally.deviations += 1;
                    if let Some(e) = deviations.entry(file, name)
                        && e.status.as_deref() == Some("bug")
                    {
                        bugs.push(format!("{file}: {name}: {}", e.reason));
                    }
                }
                Verdict::NotApplicable => tally.not_applicable += 1,
                Verdict::Failed(why) => failures.push(format!("{file}: {name}\n    {why}")),
            }
        }
        println!(
            "{file}: {} cases: {} pass, {} deviate, {} n/a",
            cases.len(),
            tally.passed,
            tally.deviations,
            tally.not_applicable
        );
        total.passed += tally.passed;
        total.deviations += tally.deviations;
        total.not_applicable += tally.not_applicable;
    }
    for (file, name) in deviations.unused() {
        failures.push(format!(
            "{file}: {name}\n    listed in deviations.yaml but no such case"
        ));
    }
    for bug in &bugs {
        println!("known bug (status: bug): {bug}");
    }
    announce(&format!(
        "{} passed, {} deviations, {} not applicable",
        total.passed, total.deviations, total.not_applicable
    ));
    assert!(
        failures.is_empty(),
        "{} conformance case(s) neither pass nor are listed correctly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs every `*.yaml` case file in `dir` (sorted by name) with no deviations:
/// `(passed, failures)`, each failure `file: case: why`. A case whose function no
/// runner maps fails.
fn run_extra(dir: &std::path::Path) -> Result<(usize, Vec<String>), String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut passed = 0;
    let mut failures = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
        let cases = parse_cases(&text).map_err(|e| format!("{file}: {e}"))?;
        for case in &cases {
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>");
            let outcome =
                eval::ignoring_unknown_keys(|| FILES.iter().find_map(|(_, run)| run(case)));
            match outcome {
                Some(Ok(())) => passed += 1,
                Some(Err(why)) => failures.push(format!("{file}: {name}\n    {why}")),
                None => failures.push(format!(
                    "{file}: {name}\n    no arbor mapping for function {}",
                    case.get("function").unwrap_or(&Value::Null)
                )),
            }
        }
    }
    Ok((passed, failures))
}

#[test]
fn extra_cases_from_arbor_extra_cases() {
    let Some(dir) = std::env::var_os("ARBOR_EXTRA_CASES").filter(|d| !d.is_empty()) else {
        announce("note: ARBOR_EXTRA_CASES is not set; no extra conformance cases");
        return;
    };
    let (passed, failures) =
        run_extra(std::path::Path::new(&dir)).unwrap_or_else(|e| panic!("ARBOR_EXTRA_CASES: {e}"));
    announce(&format!(
        "extra: {passed} passed, {} failed",
        failures.len()
    ));
    assert!(
        failures.is_empty(),
        "{} extra conformance case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The extra-case runner dispatches by `function` across all files, ignores keys no
/// runner reads and counts an unmapped function as a failure.
#[test]
fn extra_cases_are_dispatched_by_function() {
    let dir = tempfile::tempdir().unwrap();
    let cases = r#"
- name: transfer-target
  function: find_agent_to_run
  some_future_key: ignored
  input:
    tree: {name: helpdesk, kind: llm, sub_agents: [{name: billing, kind: llm}]}
    history:
    - {author: helpdesk, function_calls: [{id: c1, name: transfer_to_agent}]}
    - {author: helpdesk, function_responses: [{id: c1, name: transfer_to_agent}], actions: {transfer_to_agent: billing}}
    new_message: null
  expected: {agent: billing}
- name: wrong
  function: is_transferable_across_agent_tree
  input: {tree: {name: a, kind: non_llm}, agent: a}
  expected: true
- name: unmapped
  function: no.such.function
  input: {}
  expected: 1
"#;
    std::fs::write(dir.path().join("a.yaml"), cases).unwrap();
    let merge = r#"
- name: ids
  function: foundation.tracing.generate_sub_session_id
  input:
    agent_name: zen-architect
    parent_session_id: 1111111111111111-2222222222222222_zen-architect
    parent_trace_id: null
    uuid_hex: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  expected: 2222222222222222-aaaaaaaaaaaaaaaa_zen-architect
"#;
    std::fs::write(dir.path().join("b.yaml"), merge).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a case file").unwrap();
    let (passed, failures) = run_extra(dir.path()).unwrap();
    assert_eq!(passed, 2, "{failures:?}");
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(failures[0].starts_with("a.yaml: wrong"), "{failures:?}");
    assert!(failures[1].contains("no arbor mapping"), "{failures:?}");
}
