//! Amplifier conformance (issue 3, scope 7): every case of the peer-case files in
//! `../shared/fixtures/peer-cases/` run against arbor's own functions.
//!
//! Each case passes, or is listed in `tests/conformance/deviations.yaml` as a deliberate
//! `deviation` (it must still fail: a listed case that passes fails the test) or as
//! `not_applicable` (no arbor counterpart). Anything else fails the test. The summary
//! line `N passed, M deviations, K not applicable` goes to stdout and stderr, bypassing
//! the test harness's capture, on its own line.
//!
//! `adk-selection.yaml` (agent transfer) is skipped: it belongs to a later issue.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use serde_json::Value;

#[path = "conformance/agent_files.rs"]
mod agent_files;
#[path = "conformance/deviations.rs"]
mod deviations;
#[path = "conformance/eval.rs"]
mod eval;
#[path = "conformance/eval_tests.rs"]
mod eval_tests;
#[path = "conformance/ids.rs"]
mod ids;
#[path = "conformance/merge.rs"]
mod merge;
#[path = "conformance/routing.rs"]
mod routing;
#[path = "support/shared.rs"]
mod shared;

use deviations::{Deviations, Verdict};

const DEVIATIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/conformance/deviations.yaml"
);

type Runner = fn(&Value) -> Option<Result<(), String>>;

/// The case files and their runners.
const FILES: &[(&str, Runner)] = &[
    ("amplifier-merge.yaml", merge::run),
    ("amplifier-agent-files.yaml", agent_files::run),
    ("amplifier-ids.yaml", ids::run),
    ("amplifier-routing.yaml", routing::run),
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
    println!("adk-selection.yaml: skipped (agent transfer and selection is a later issue)");
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
