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
        .map(|m| m.session_id.into_string())
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
        .map(|(p, m)| (p, m.session_id.into_string()))
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

#[test]
fn a_store_marked_volatile_is_never_fsynced_and_one_unmarked_is_again() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let store = SessionStore::new(&sessions);
    let write = |writer: &mut SessionWriter| {
        writer.append_message(&Message::user("m")).unwrap();
        let m = writer.metadata().clone();
        writer.write_metadata(&m).unwrap();
        writer.sync().unwrap();
        writer.fsyncs()
    };
    let guard = super::volatile::mark(&sessions);
    let mut scratch = store.create(&meta("a", "2025-01-01T00:00:00Z")).unwrap();
    assert_eq!(write(&mut scratch), 0);
    // Written all the same.
    assert_eq!(store.load("a").unwrap().transcript.len(), 1);
    // Another store of the process is synced as always.
    let other = tempfile::tempdir().unwrap();
    let mut durable = SessionStore::new(other.path())
        .create(&meta("b", "2025-01-01T00:00:00Z"))
        .unwrap();
    assert!(write(&mut durable) > 0);
    drop(guard);
    assert!(write(&mut scratch) > 0, "synced once no longer marked");
}

#[cfg(unix)]
#[test]
fn a_volatile_store_writes_metadata_in_place_and_a_durable_one_through_a_new_file() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let store = SessionStore::new(&sessions);
    let inode = |id: &str| {
        std::fs::metadata(sessions.join(id).join("metadata.json"))
            .unwrap()
            .ino()
    };
    let rewrite = |writer: &mut SessionWriter, turns: u32| {
        let mut m = writer.metadata().clone();
        m.turn_count = turns;
        writer.write_metadata(&m).unwrap();
    };
    let guard = super::volatile::mark(&sessions);
    let mut scratch = store.create(&meta("a", "2025-01-01T00:00:00Z")).unwrap();
    let first = inode("a");
    // A longer text, then a shorter one: the file holds exactly the last.
    rewrite(&mut scratch, 123_456_789);
    rewrite(&mut scratch, 7);
    assert_eq!(inode("a"), first, "the same file: no inode made");
    assert!(!sessions.join("a").join("metadata.json.backup").exists());
    assert_eq!(store.load_metadata("a").unwrap().0.turn_count, 7);
    drop(guard);
    rewrite(&mut scratch, 8);
    assert_ne!(inode("a"), first, "unmarked: a new file renamed over it");
    assert_eq!(store.load_metadata("a").unwrap().0.turn_count, 8);
}

#[test]
fn an_active_session_without_its_writer_reads_as_interrupted() {
    use crate::session::metadata::SessionStatus;
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let statuses = |store: &SessionStore| -> Vec<(String, SessionStatus)> {
        let mut all: Vec<_> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|m| (m.session_id.into_string(), m.status))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    };
    let mut writers = Vec::new();
    for (id, status) in [
        ("done", SessionStatus::Completed),
        ("queued", SessionStatus::Queued),
        ("running", SessionStatus::Running),
        ("waiting", SessionStatus::Waiting),
    ] {
        let m = Metadata {
            status,
            ..meta(id, "2025-01-01T00:00:00Z")
        };
        writers.push(store.create(&m).unwrap());
    }
    // Writers alive: every status as written.
    let written = [
        ("done".to_string(), SessionStatus::Completed),
        ("queued".to_string(), SessionStatus::Queued),
        ("running".to_string(), SessionStatus::Running),
        ("waiting".to_string(), SessionStatus::Waiting),
    ];
    assert_eq!(statuses(&store), written);
    // The writers are gone (as after `kill -9`: the OS drops the locks).
    writers.clear();
    assert_eq!(
        statuses(&store),
        [
            ("done".to_string(), SessionStatus::Completed),
            ("queued".to_string(), SessionStatus::Interrupted),
            ("running".to_string(), SessionStatus::Interrupted),
            ("waiting".to_string(), SessionStatus::Interrupted),
        ]
    );
    assert_eq!(
        store.load("running").unwrap().metadata.status,
        SessionStatus::Interrupted
    );
    let on_disk = std::fs::read_to_string(dir.path().join("running").join(METADATA_FILE)).unwrap();
    assert!(on_disk.contains("\"running\""), "the file is not changed");
    // A writer that opens it again sees what was written, and readers see it running.
    let writer = store.open("running").unwrap();
    assert_eq!(writer.metadata().status, SessionStatus::Running);
    assert_eq!(
        store.load("running").unwrap().metadata.status,
        SessionStatus::Running
    );
    drop(writer);
    // No lock file (a session arbor never opened): the status stays as written.
    std::fs::remove_file(dir.path().join("queued").join(LOCK_FILE)).unwrap();
    assert_eq!(
        store.load("queued").unwrap().metadata.status,
        SessionStatus::Queued
    );
}

#[test]
fn short_ids_resolve_roots_before_their_children_and_children_by_span() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    use crate::session::ids::SessionId;
    let root = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b";
    let child = SessionId::child_with_span(&root.into(), "explorer", "1eb7af22aaaaaaaa");
    let sibling = SessionId::child_with_span(&root.into(), "coder", "1eb7ffffbbbbbbbb");
    let grandchild = SessionId::child_with_span(&child, "x", "0123456789abcdef");
    let other_root = "9b1c7e2f-0000-4000-8000-000000000000";
    for id in [root, &child, &sibling, &grandchild, other_root] {
        std::fs::create_dir(dir.path().join(id)).unwrap();
    }
    // The root's 8-character prefix: the root, not its children (whose ids start
    // with the same digits).
    assert_eq!(store.resolve("9b1c7e2e").unwrap(), root);
    // A child's span as the TUI shows it, with or without `#`; a child span prefix
    // beats the grandchild whose parent span it is.
    assert_eq!(store.resolve("1eb7af22").unwrap(), child);
    assert_eq!(store.resolve(" #1eb7af22 ").unwrap(), child);
    assert_eq!(store.resolve("01234567").unwrap(), grandchild);
    // Whole-id prefixes of sub-sessions still work.
    assert_eq!(store.resolve("9b1c7e2e0a4b4f7e-1eb7f").unwrap(), sibling);
    // Real ambiguity lists the candidates.
    match store.resolve("1eb7") {
        Err(StoreError::Ambiguous { prefix, matches }) => {
            assert_eq!(prefix, "1eb7");
            assert_eq!(matches, [child.clone(), sibling.clone()]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    match store.resolve("9b1c7e2") {
        Err(StoreError::Ambiguous { matches, .. }) => {
            assert_eq!(matches, [root.to_string(), other_root.to_string()]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    match store.resolve("9b1c7e2e0a4b4f7e-") {
        Err(StoreError::Ambiguous { matches, .. }) => {
            assert_eq!(matches, [child.clone(), sibling.clone()]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert!(matches!(store.resolve("#"), Err(StoreError::NotFound(p)) if p == "#"));
    assert!(matches!(store.resolve("#ffff"), Err(StoreError::NotFound(p)) if p == "#ffff"));
}

#[test]
fn a_new_session_directory_appears_whole_with_its_metadata() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::new(root.path().join("sessions"));
    // What a creation killed before its rename leaves: not a session.
    let leftover = store.root().join(format!("{STAGING_PREFIX}killed"));
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join(LOCK_FILE), "1").unwrap();

    let writer = store
        .create_with_secrets(
            &meta("s1", "2025-01-01T00:00:00Z"),
            ["sk-0123456789".to_string()],
        )
        .unwrap();
    let dir = store.root().join("s1");
    assert_eq!(writer.dir(), dir.as_path());
    assert!(dir.join(METADATA_FILE).is_file());
    assert!(!dir.join(METADATA_BACKUP).exists(), "written once");
    let names: Vec<String> = std::fs::read_dir(store.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(STAGING_PREFIX))
        .collect();
    assert_eq!(names, [format!("{STAGING_PREFIX}killed")]);
    let listing = store.listing().unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert!(listing.unreadable.is_empty());
    // The writer holds the lock at the session's own path.
    assert!(matches!(store.open("s1"), Err(StoreError::Locked { .. })));
    drop(writer);
    assert!(store.open("s1").is_ok());

    // The leftover goes once it is old enough and no one holds its lock.
    let minute = std::time::Duration::from_secs(60);
    assert_eq!(store.sweep_abandoned_creations(minute), 0, "too recent");
    let held = lock::acquire(&leftover, "killed").unwrap();
    assert_eq!(
        store.sweep_abandoned_creations(std::time::Duration::ZERO),
        0,
        "in progress"
    );
    drop(held);
    assert_eq!(
        store.sweep_abandoned_creations(std::time::Duration::ZERO),
        1
    );
    assert!(!leftover.exists());
    assert!(
        dir.join(METADATA_FILE).is_file(),
        "sessions are never swept"
    );
}
