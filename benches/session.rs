//! Opening a 100k-message session (SPEC §16): `SessionStore::load` (metadata +
//! transcript parse) of a generated session whose transcript mixes user messages,
//! assistant text, tool calls and ~1.5 KB tool results; and the peak RSS of doing so.
//!
//! `session_open_tail` times the tail-first open (`SessionStore::load_tail`: the
//! newest 256 messages) that the TUI draws from before the rest is read.
//!
//! The time is a divan bench. The peak is the `VmHWM` of a fresh process (this bench
//! binary re-run with `ARBOR_BENCH_LOAD_PEAK` set) that loads the session once and
//! keeps it, next to the same process that does not load it (the baseline); measured
//! after divan's table, median of `PEAK_RUNS`. Run: `cargo bench --bench session`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;
#[path = "common/rss.rs"]
mod rss;

use std::path::Path;
use std::process::Command;

use arbor::session::SessionStore;
use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};

/// Set in a child run: `<sessions dir>\n<session id>` loads that session and prints
/// the process's peak RSS in KiB; an empty id prints the baseline without loading.
const PEAK_CHILD: &str = "ARBOR_BENCH_LOAD_PEAK";
const PEAK_MESSAGES: usize = 100_000;
const PEAK_RUNS: usize = 5;

fn main() {
    if let Ok(job) = std::env::var(PEAK_CHILD) {
        peak_child(&job);
        return;
    }
    divan::main();
    load_peak();
}

#[divan::bench(args = [1_000, 100_000], sample_count = 10)]
fn session_load(bencher: Bencher, messages: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let id = generate::create_session(&store, messages);
    let bytes = std::fs::metadata(store.session_dir(&id).unwrap().join("transcript.jsonl"))
        .unwrap()
        .len();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.transcript.len(), messages);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    bencher
        .counter(ItemsCount::new(messages))
        .counter(BytesCount::new(bytes))
        .bench(|| store.load(&id).unwrap());
}

/// Tail-first open (`SessionStore::load_tail`, as the TUI opens a thread): the newest
/// 256 messages and the metadata; the earlier part is read afterwards, off this path.
#[divan::bench(args = [1_000, 100_000], sample_count = 10)]
fn session_open_tail(bencher: Bencher, messages: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let id = generate::create_session(&store, messages);
    let (tail, _) = store.load_tail(&id, 256).unwrap();
    assert!(tail.transcript.len() >= 256);
    bencher.bench(|| store.load_tail(&id, 256).unwrap());
}

/// In the child: load (or not) and print `VmHWM` while the session is still held.
fn peak_child(job: &str) {
    let (dir, id) = job.split_once('\n').unwrap();
    let store = SessionStore::new(dir);
    let loaded = (!id.is_empty()).then(|| store.load(id).unwrap());
    if let Some(l) = &loaded {
        assert_eq!(l.transcript.len(), PEAK_MESSAGES);
    }
    println!("{}", rss::own_peak_kib().unwrap_or(0));
    drop(loaded);
}

/// Peak RSS (KiB) of a child run for `id` (empty: baseline).
fn child_peak(dir: &Path, id: &str) -> Option<u64> {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(PEAK_CHILD, format!("{}\n{id}", dir.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|&k| k > 0)
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// The README's "peak" for opening a 100k-message session.
fn load_peak() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    let store = SessionStore::new(&dir);
    let id = generate::create_session(&store, PEAK_MESSAGES);
    let runs = |id: &str| {
        median(
            (0..PEAK_RUNS)
                .filter_map(|_| child_peak(&dir, id))
                .collect(),
        )
    };
    let (base, load) = (runs(""), runs(&id));
    println!(
        "\n| measure (separate process, VmHWM, median of {PEAK_RUNS}) | peak RSS |\n|---|---|\n\
         | `SessionStore::load` of a {PEAK_MESSAGES}-message session, session held | {} |\n\
         | the same process without loading (baseline) | {} |",
        rss::mib(load),
        rss::mib(base),
    );
}
