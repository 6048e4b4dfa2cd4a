//! Front ends drive the engine only through its handle (issue 24 item 1, STYLE.md
//! "One engine handle for every front end"): the TUI never reads the session store
//! nor parses a transcript (`engine::Engine` opens and follows sessions), and no
//! front end runs, continues or cancels a turn on the runtime around the handle.
//! Source scan of `src/tui`, `src/cli` and `src/acp` (comments left out).

use std::path::Path;

/// Every `.rs` file under `dir`, with its code lines (no `//` comment lines).
fn code_of(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            code_of(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            out.push((path.display().to_string(), code.join("\n")));
        }
    }
}

fn offenders(dir: &str, needles: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    code_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut files);
    let mut found = Vec::new();
    for (file, code) in &files {
        for needle in needles {
            if code.contains(needle) {
                found.push(format!("{file}: {needle}"));
            }
        }
    }
    found
}

#[test]
fn the_tui_reads_no_store_and_parses_no_transcript() {
    let found = offenders(
        "src/tui",
        &[
            "SessionStore",
            "parse_transcript",
            "load_tail_covering",
            ".store()",
            "park_transcript",
            "transcript_snapshot",
        ],
    );
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn front_ends_run_no_turn_around_the_engine_handle() {
    let turns = [
        "runtime.run_turn(",
        "runtime.continue_turn(",
        "runtime.continue_interrupted(",
        "runtime.create_root",
        "runtime.set_model(",
        "runtime.steer(",
        "runtime.queue(",
        "runtime.cancel(",
        "runtime.resolve_approval(",
    ];
    let mut found = offenders("src/tui", &turns);
    found.extend(offenders("src/cli", &turns));
    found.extend(offenders("src/acp", &turns));
    assert!(found.is_empty(), "{found:#?}");
}

/// Issue 36: the TUI reads the engine's one ordered stream (`Engine::connect`); it
/// never subscribes to the bus on its own nor drains it, and the engine's replies
/// reach it whole (no mirror of them).
#[test]
fn the_tui_reads_one_stream_and_mirrors_no_reply() {
    let found = offenders(
        "src/tui",
        &[
            ".subscribe(",
            "subscribe_with(",
            ".bus()",
            "Replies::new(",
            "Replies::channel(",
        ],
    );
    assert!(found.is_empty(), "{found:#?}");
}

/// Issue 36: one exhaustive dispatcher over the engine's events in the TUI
/// (`state/dispatch.rs`): no other file of `src/tui` names an event variant in a
/// pattern (test code aside), so a new event is named by the compiler there alone.
#[test]
fn the_tui_matches_engine_events_in_one_place() {
    let mut files = Vec::new();
    code_of(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui"),
        &mut files,
    );
    let pattern = regex::Regex::new(r"EngineEvent::\w+\s*(\(|\{)[^;]*?=>").unwrap();
    let mut matching: Vec<String> = files
        .iter()
        .filter(|(file, _)| {
            !(file.ends_with("tests.rs")
                || file.ends_with("testing.rs")
                || file.contains("/tests/"))
        })
        .filter_map(|(file, code)| {
            // Unit tests at the end of a file construct events freely.
            let code = code.split("#[cfg(test)]").next().unwrap_or_default();
            pattern.is_match(code).then(|| file.clone())
        })
        .collect();
    matching.sort();
    assert_eq!(matching.len(), 1, "{matching:#?}");
    assert!(
        matching[0].ends_with("src/tui/state/dispatch.rs"),
        "{matching:#?}"
    );
    let dispatch = &files
        .iter()
        .find(|(file, _)| file.ends_with("src/tui/state/dispatch.rs"))
        .unwrap()
        .1;
    assert_eq!(dispatch.matches("match &event.msg").count(), 1);
    assert!(!dispatch.contains("_ =>"), "no wildcard arm");
}
