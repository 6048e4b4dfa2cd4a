//! Front ends drive the engine only through its handle (issue 24 item 1, issue 36
//! item 4, STYLE.md "One engine handle for every front end"): the TUI never reads the
//! session store nor parses a transcript (`engine::Engine` opens and follows
//! sessions), no front end runs, continues or cancels a turn on the runtime around the
//! handle, and `arbor` (`src/cli`), the ACP server and the worker neither see the
//! runtime nor open the store. Source scan of `src/tui`, `src/cli`, `src/acp` and
//! `src/worker` (comments left out).

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
    found.extend(offenders("src/worker", &turns));
    assert!(found.is_empty(), "{found:#?}");
}

/// Whether `code` names `ident` (a whole identifier, not a part of a longer one:
/// `RuntimeOptions` does not name `Runtime`).
fn names(code: &str, ident: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == ident)
}

/// Issue 36 item 4: every `arbor …` subcommand, the ACP server and the worker get an
/// `Engine` (`Engine::headless` over the context's options) and ask it by commands
/// and queries; none names the `Runtime`, calls one (`runtime.`), opens the store
/// (`SessionStore`, `.store()`) or lists every project's (`list_all_projects`).
///
/// The TUI's start (`src/cli/tui_cmd.rs`) gets an `Engine::interactive` too. One
/// exception, as narrow as it can be: the worker writes the scratch copy of a job's
/// session its engine resumes from (`worker::scratch`) and reads it back, so it may
/// name `SessionStore`.
#[test]
fn front_ends_see_no_runtime_and_open_no_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["src/cli", "src/acp", "src/worker"] {
        let mut files = Vec::new();
        code_of(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no code under {dir}");
        for (file, code) in &files {
            let mut say = |what: &str| found.push(format!("{file}: {what}"));
            if names(code, "Runtime") {
                say("Runtime");
            }
            if code.contains("runtime.") {
                say("runtime.");
            }
            if dir != "src/worker" && names(code, "SessionStore") {
                say("SessionStore");
            }
            for needle in [".store()", "list_all_projects"] {
                if code.contains(needle) {
                    say(needle);
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Every `pub use …;` statement of `code` (one string each, however many lines it
/// spans); `pub(crate) use` and `pub(super) use` are not public.
fn public_uses(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find("pub use ") {
        let tail = &rest[start..];
        let end = tail.find(';').map_or(tail.len(), |e| e + 1);
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

/// Issue 36 ("the handle is the only door"): the `Runtime` is private to the engine.
/// No module exports it (`pub use … Runtime`, `runtime::*`, a `pub mod runtime`: the
/// options it is built from stay public), it is declared
/// `pub(crate)`, the `Engine` hands it to nobody (no `pub fn` of the handle names it),
/// and no front end uses the tests' `engine::testing` (its `Drive` reads inside the
/// engine).
#[test]
fn the_runtime_stays_inside_the_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    code_of(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for (file, code) in &files {
        for statement in public_uses(code) {
            if names(statement, "Runtime") || statement.contains("runtime::*") {
                found.push(format!("{file}: {statement}"));
            }
        }
        if code.contains("pub mod runtime") {
            found.push(format!("{file}: pub mod runtime"));
        }
        if code.contains("pub struct Runtime ") {
            found.push(format!("{file}: pub struct Runtime"));
        }
        if file.contains("/engine/handle") {
            for line in code
                .lines()
                .filter(|l| l.trim_start().starts_with("pub fn"))
            {
                if names(line, "Runtime") {
                    found.push(format!("{file}: {}", line.trim()));
                }
            }
        }
    }
    for dir in ["src/tui", "src/cli", "src/acp", "src/worker"] {
        found.extend(offenders(dir, &["engine::testing", "testing::Drive"]));
    }
    assert!(found.is_empty(), "{found:#?}");
    let runtime = files
        .iter()
        .find(|(file, _)| file.ends_with("src/engine/runtime.rs"))
        .unwrap();
    assert!(runtime.1.contains("pub(crate) struct Runtime {"));
}

/// [`public_uses`] finds an export of the runtime as `src/engine/mod.rs` had it before
/// issue 36 closed, over several lines, and not a crate-private one.
#[test]
fn public_uses_sees_every_public_export() {
    let before = "pub use handle::{\n    Engine,\n};\n\
                  pub use runtime::{RootOptions, Runtime, RuntimeHooks};\n\
                  pub(crate) use runtime::Runtime;";
    let uses = public_uses(before);
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert!(names(uses[1], "Runtime"));
    assert!(!names(uses[0], "Runtime"));
}

/// [`names`] finds what the scan above looks for in the code issue 36 removed (a
/// front end that built a runtime and opened the store), and not a longer name.
#[test]
fn names_sees_whole_identifiers_only() {
    let before = "match runtime.rename(&id, &title) {}\n\
                  pub fn store(&self) -> SessionStore { SessionStore::new(dir) }\n\
                  fn runtime(&self) -> Arc<Runtime> {}";
    assert!(names(before, "Runtime"));
    assert!(names(before, "SessionStore"));
    assert!(!names("RuntimeOptions { .. }", "Runtime"));
    assert!(!names("SessionStoreGuard::new(dir)", "SessionStore"));
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
