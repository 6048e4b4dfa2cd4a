//! Unit tests of the store's listing, ordering and resolution.

use super::*;

fn meta(id: &str, updated: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        last_updated: updated.into(),
        config: Some(serde_json::json!({})),
        ..Default::default()
    }
}

#[test]
fn list_is_newest_first_and_skips_junk() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    assert!(store.list().unwrap().is_empty(), "missing root is empty");
    for (id, t) in [
        ("old", "2025-01-01T00:00:00Z"),
        ("naive", "2025-06-01T00:00:00.123456"),
        ("new", "2025-12-01T00:00:00+00:00"),
    ] {
        store.create(&meta(id, t)).unwrap();
    }
    std::fs::create_dir(store.root().join("empty-dir")).unwrap();
    std::fs::create_dir(store.root().join(".hidden")).unwrap();
    std::fs::write(store.root().join("stray-file"), b"x").unwrap();
    let ids: Vec<String> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|m| m.session_id)
        .collect();
    assert_eq!(ids, ["new", "naive", "old"]);
}

#[test]
fn resolve_exact_prefix_ambiguous_missing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    for id in ["abc", "abcdef", "abx1", "zzz"] {
        std::fs::create_dir(dir.path().join(id)).unwrap();
    }
    assert_eq!(store.resolve("abc").unwrap(), "abc");
    assert_eq!(store.resolve(" abcd ").unwrap(), "abcdef");
    assert_eq!(store.resolve("z").unwrap(), "zzz");
    match store.resolve("ab") {
        Err(StoreError::Ambiguous { prefix, matches }) => {
            assert_eq!(prefix, "ab");
            assert_eq!(matches, ["abc", "abcdef", "abx1"]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert!(matches!(store.resolve("q"), Err(StoreError::NotFound(p)) if p == "q"));
    assert!(matches!(
        store.resolve("../a"),
        Err(StoreError::InvalidId { .. })
    ));
    assert!(matches!(
        store.resolve("  "),
        Err(StoreError::InvalidId { .. })
    ));
}

#[test]
fn all_projects_are_listed_with_their_sessions_dir() {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let a = SessionStore::new(projects.join("-home-a").join("sessions"));
    let b = SessionStore::new(projects.join("-home-b").join("sessions"));
    a.create(&meta("s1", "2025-01-01T00:00:00Z")).unwrap();
    b.create(&meta("s2", "2025-02-01T00:00:00Z")).unwrap();
    std::fs::create_dir_all(projects.join("no-sessions")).unwrap();
    let all = list_all_projects(&projects).unwrap();
    let got: Vec<(PathBuf, String)> = all
        .sessions
        .into_iter()
        .map(|(p, m)| (p, m.session_id))
        .collect();
    assert_eq!(
        got,
        [
            (b.root().to_path_buf(), "s2".to_string()),
            (a.root().to_path_buf(), "s1".to_string())
        ]
    );
    assert!(
        list_all_projects(&dir.path().join("none"))
            .unwrap()
            .sessions
            .is_empty()
    );
}

#[test]
fn open_fixes_a_metadata_id_that_disagrees_with_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    drop(store.create(&meta("copy", "2025-01-01T00:00:00Z")).unwrap());
    let path = dir.path().join("copy").join(METADATA_FILE);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"copy\"", "\"original\"");
    std::fs::write(&path, text).unwrap();
    let mut writer = store.open("copy").unwrap();
    assert_eq!(writer.id(), "copy");
    let m = writer.metadata().clone();
    writer.write_metadata(&m).unwrap();
    let wrong = Metadata {
        session_id: "other".into(),
        ..m
    };
    assert!(matches!(
        writer.write_metadata(&wrong),
        Err(StoreError::InvalidId { .. })
    ));
}

#[test]
fn a_failed_creation_removes_only_a_directory_it_made() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sessions").join("s1");
    let full = || {
        io_err(
            "writing metadata.json.tmp".into(),
            std::io::ErrorKind::StorageFull.into(),
        )
    };
    let failed = in_new_dir(&dir, || -> Result<(), StoreError> {
        std::fs::write(dir.join(LOCK_FILE), "1").unwrap();
        Err(full())
    });
    assert!(matches!(failed, Err(StoreError::Io { .. })));
    assert!(!dir.exists(), "no directory holding only a lock");
    assert!(root.path().join("sessions").is_dir());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("transcript.jsonl"), "{}\n").unwrap();
    assert!(in_new_dir(&dir, || -> Result<(), StoreError> { Err(full()) }).is_err());
    assert!(
        dir.join("transcript.jsonl").exists(),
        "an existing session is kept"
    );
    assert_eq!(in_new_dir(&root.path().join("s2"), || Ok(7)).unwrap(), 7);
    assert!(root.path().join("s2").is_dir());
}

#[test]
fn writes_are_readable_at_once_and_fsynced_only_by_sync() {
    use crate::session::protocol::PromptSubmitEvent;
    use crate::session::{EngineEvent, Event};
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut writer = store.create(&meta("s", "2025-01-01T00:00:00Z")).unwrap();
    for n in 1..=20 {
        writer
            .append_message(&Message::user(format!("m{n}")))
            .unwrap();
        let mut m = writer.metadata().clone();
        m.turn_count = n;
        writer.write_metadata(&m).unwrap();
        writer
            .append_event(&Event::new(
                "s",
                None,
                EngineEvent::PromptSubmit(PromptSubmitEvent {
                    prompt: format!("m{n}"),
                }),
            ))
            .unwrap();
        // Each message and metadata version is on disk for any reader right away.
        let loaded = store.load("s").unwrap();
        assert_eq!(
            (loaded.transcript.len(), loaded.metadata.turn_count),
            (n as usize, n)
        );
    }
    assert_eq!(writer.fsyncs(), 0, "no fsync per message or metadata write");
    writer.sync().unwrap();
    // transcript + events + metadata.json, its backup and the directory.
    assert_eq!(writer.fsyncs(), 5);
    writer.sync().unwrap();
    assert_eq!(writer.fsyncs(), 5, "nothing written since: nothing synced");
    writer.append_message(&Message::user("one more")).unwrap();
    writer.sync().unwrap();
    assert_eq!(writer.fsyncs(), 6, "only the transcript changed");
}
