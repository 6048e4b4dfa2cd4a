//! Opening a 100k-message session (SPEC §16): `SessionStore::load` (metadata +
//! transcript parse) of a generated session whose transcript mixes user messages,
//! assistant text, tool calls and ~1.5 KB tool results. Run: `cargo bench --bench session`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use arbor::session::SessionStore;
use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};

fn main() {
    divan::main();
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
