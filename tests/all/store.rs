//! The session store end to end: files on disk, crash recovery, locking across
//! processes, redaction, trees and exports (SPEC §7, §14, §17).

use std::path::Path;

use arbor::session::message::{AssistantMessage, ContentBlock, ToolCall};
use arbor::session::protocol::{DeltaKind, SessionStartEvent, ToolErrorEvent, ToolPreEvent};
use arbor::session::store::{METADATA_BACKUP, METADATA_FILE, METADATA_TEMP, TRANSCRIPT_FILE};
use arbor::session::{EngineEvent, Event};
use arbor::session::{Message, Metadata, SessionStatus, SessionStore, StoreError};
use serde_json::{Value, json};

mod lock;
mod tree_export;

const ROOT: &str = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b";

fn meta(id: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        agent_name: Some("planner".into()),
        created: "2025-01-01T00:00:00Z".into(),
        last_updated: "2025-01-01T00:00:00Z".into(),
        config: Some(json!({"session": {"orchestrator": "loop-basic"}})),
        ..Default::default()
    }
}

fn child_meta(id: &str, parent: &str, created: &str) -> Metadata {
    Metadata {
        parent_id: Some(parent.into()),
        created: created.into(),
        last_updated: created.into(),
        depth: 1,
        ..meta(id)
    }
}

fn assistant(text: &str, call: Option<(&str, &str)>) -> Message {
    let mut a = AssistantMessage {
        content: vec![ContentBlock::Text { text: text.into() }],
        ..Default::default()
    };
    if let Some((id, tool)) = call {
        a.content.push(ContentBlock::ToolCall {
            id: id.into(),
            name: tool.into(),
            input: json!({"path": "src"}).into(),
        });
        a.tool_calls.push(ToolCall {
            id: id.into(),
            tool: tool.into(),
            arguments: json!({"path": "src"}).into(),
        });
    }
    Message::Assistant(a)
}

fn transcript() -> Vec<Message> {
    let call = ToolCall {
        id: "c1".into(),
        tool: "glob".into(),
        arguments: json!({}).into(),
    };
    vec![
        Message::user("list the files"),
        assistant("looking", Some(("c1", "glob"))),
        Message::tool_result(&call, "a.rs\nb.rs", false),
        assistant("two files", None),
    ]
}

fn unwrap_err<T: std::fmt::Debug>(r: Result<T, StoreError>) -> StoreError {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

#[test]
fn round_trip_create_append_sync_load() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path().join("sessions"));
    let mut writer = store.create(&meta(ROOT)).unwrap();
    assert_eq!(writer.id(), ROOT);
    let messages = transcript();
    for m in &messages {
        writer.append_message(m).unwrap();
    }
    let start = EngineEvent::SessionStart(SessionStartEvent::default());
    writer.append_event(&Event::new(ROOT, None, start)).unwrap();
    let delta = EngineEvent::delta(DeltaKind::Text, "x");
    writer.append_event(&Event::new(ROOT, None, delta)).unwrap();
    let mut updated = meta(ROOT);
    updated.turn_count = 1;
    updated.status = SessionStatus::Completed;
    writer.write_metadata(&updated).unwrap();
    writer.sync().unwrap();

    // Readable while the writer holds the lock.
    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript, messages);
    assert_eq!(loaded.metadata, updated);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);

    let dir = store.session_dir(ROOT).unwrap();
    let lines = std::fs::read_to_string(dir.join(TRANSCRIPT_FILE)).unwrap();
    assert_eq!(lines.lines().count(), 4);
    assert!(lines.ends_with('\n'));
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let events: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "deltas are not logged");
    assert_eq!(events[0]["event"], "session:start");
    assert_eq!(events[0]["schema"]["name"], "amplifier.log");

    // Appending after a reopen never rewrites what is there.
    drop(writer);
    let mut writer = store.open(ROOT).unwrap();
    writer.append_message(&Message::user("again")).unwrap();
    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript.len(), 5);
    assert!(
        std::fs::read_to_string(dir.join(TRANSCRIPT_FILE))
            .unwrap()
            .starts_with(&lines)
    );
}

#[test]
fn torn_last_line_is_dropped_and_a_resume_appends_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut writer = store.create(&meta(ROOT)).unwrap();
    let messages = transcript();
    for m in &messages {
        writer.append_message(m).unwrap();
    }
    drop(writer);
    let path = store.session_dir(ROOT).unwrap().join(TRANSCRIPT_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"role":"assistant","content":[{"type":"te"#);
    std::fs::write(&path, &bytes).unwrap();

    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript, messages);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("torn last line"),
        "{:?}",
        loaded.warnings
    );

    let mut writer = store.open(ROOT).unwrap();
    writer
        .append_message(&Message::user("after the crash"))
        .unwrap();
    let loaded = store.load(ROOT).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.transcript.len(), 5);
    assert_eq!(loaded.transcript[4].text(), "after the crash");
}

#[test]
fn bad_middle_line_is_reported_with_its_line_number() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    drop(store.create(&meta(ROOT)).unwrap());
    let path = store.session_dir(ROOT).unwrap().join(TRANSCRIPT_FILE);
    let good = serde_json::to_string(&Message::user("hi")).unwrap();
    std::fs::write(&path, format!("{good}\n{good}\n{{broken\n{good}\n")).unwrap();
    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript.len(), 3);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].starts_with("transcript.jsonl line 3: skipped"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn truncated_metadata_falls_back_to_backup() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut writer = store.create(&meta(ROOT)).unwrap();
    let mut second = meta(ROOT);
    second.turn_count = 2;
    writer.write_metadata(&second).unwrap();
    drop(writer);
    let dir = store.session_dir(ROOT).unwrap();
    let text = std::fs::read_to_string(dir.join(METADATA_FILE)).unwrap();
    std::fs::write(dir.join(METADATA_FILE), &text[..text.len() / 2]).unwrap();

    let loaded = store.load(ROOT).unwrap();
    assert_eq!(
        loaded.metadata,
        meta(ROOT),
        "the backup is the first version"
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("used metadata.json.backup")),
        "{:?}",
        loaded.warnings
    );
    assert!(store.open(ROOT).is_ok(), "a resume can use the backup too");
}

#[test]
fn garbage_metadata_without_backup_is_corrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    drop(store.create(&meta(ROOT)).unwrap());
    let dir = store.session_dir(ROOT).unwrap();
    std::fs::write(dir.join(METADATA_FILE), b"\x00\xffnot json").unwrap();
    let err = unwrap_err(store.load(ROOT));
    assert!(
        matches!(&err, StoreError::Corrupted { id, .. } if id == ROOT),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("Corrupted session metadata for '{ROOT}'")),
        "{err}"
    );
    assert!(matches!(
        store.open(ROOT),
        Err(StoreError::Corrupted { .. })
    ));
    // Listing shows it, with the reason, rather than failing or hiding it.
    assert!(store.list().unwrap().is_empty());
    let listing = store.listing().unwrap();
    assert_eq!(listing.unreadable.len(), 1);
    assert_eq!(listing.unreadable[0].session_id, ROOT);
    assert_eq!(listing.unreadable[0].reason, err.to_string());
}

#[test]
fn metadata_without_config_still_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let dir = tmp.path().join("legacy");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join(METADATA_FILE),
        br#"{"session_id":"legacy","created":"2025-01-01T00:00:00Z","bundle":"foundation","custom":1}"#,
    )
    .unwrap();
    let loaded = store.load("legacy").unwrap();
    assert_eq!(loaded.metadata.config, None);
    assert_eq!(loaded.metadata.extra["custom"], 1);
    assert!(loaded.transcript.is_empty());
}

#[test]
fn missing_session_has_the_exact_message() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let id = "0000000000000000-0123456789abcdef_explorer";
    for err in [
        unwrap_err(store.load(id)),
        unwrap_err(store.open(id)),
        unwrap_err(store.load_metadata(id)),
    ] {
        assert_eq!(
            err.to_string(),
            format!("Sub-session '{id}' not found. It may have expired or was never created.")
        );
    }
}

fn tree_listing(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out
}

#[test]
fn invalid_ids_are_refused_before_touching_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let inner = tmp.path().join("projects").join("p");
    std::fs::create_dir_all(&inner).unwrap();
    let store = SessionStore::new(inner.join("sessions"));
    let before = tree_listing(tmp.path());
    for bad in [
        "../etc",
        "a/b",
        ".hidden",
        "",
        "a\0b",
        "..",
        "a\\b",
        "x/../../y",
    ] {
        let refused =
            |e: StoreError| matches!(e, StoreError::InvalidId { ref id, .. } if id == bad);
        assert!(
            refused(unwrap_err(store.create(&meta(bad)))),
            "create {bad:?}"
        );
        assert!(refused(unwrap_err(store.open(bad))), "open {bad:?}");
        assert!(refused(unwrap_err(store.load(bad))), "load {bad:?}");
        assert!(
            refused(unwrap_err(store.load_metadata(bad))),
            "load_metadata {bad:?}"
        );
        assert!(
            refused(unwrap_err(store.session_dir(bad))),
            "session_dir {bad:?}"
        );
        assert!(!store.exists(bad));
        if !bad.is_empty() {
            assert!(refused(unwrap_err(store.resolve(bad))), "resolve {bad:?}");
        }
    }
    assert_eq!(tree_listing(tmp.path()), before, "something was created");
}

#[test]
fn secrets_never_reach_metadata_or_events() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut m = meta(ROOT);
    m.config = Some(json!({
        "providers": [{"module": "provider-openai", "config": {
            "api_key": "sk-live-0123456789",
            "max_tokens": 4096,
            "model": "gpt-5",
            "headers": {"Authorization": "Bearer sk-live-0123456789"},
        }}],
    }));
    m.agent_overlay = json!({"providers": [{"config": {"client_secret": "shh-very-secret"}}]});
    m.name = Some("uses sk-live-0123456789".into());
    let mut writer = store
        .create_with_secrets(&m, ["sk-live-0123456789".to_string()])
        .unwrap();
    let mut second = m.clone();
    second.turn_count = 1;
    writer.write_metadata(&second).unwrap();
    let error = EngineEvent::ToolError(ToolErrorEvent {
        tool_name: "bash".into(),
        tool_call_id: "c0".into(),
        error: "401 for key sk-live-0123456789".into(),
        ..Default::default()
    });
    writer.append_event(&Event::new(ROOT, None, error)).unwrap();
    let call = EngineEvent::ToolPre(ToolPreEvent {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
        tool_input: json!({"command": "curl", "x-api-key": "abc"}),
        task: None,
    });
    writer.append_event(&Event::new(ROOT, None, call)).unwrap();
    writer
        .append_message(&Message::user("my key is sk-live-0123456789"))
        .unwrap();
    writer.sync().unwrap();

    let dir = store.session_dir(ROOT).unwrap();
    for file in [
        METADATA_FILE,
        METADATA_BACKUP,
        "events.jsonl",
        TRANSCRIPT_FILE,
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.contains("sk-live-0123456789"), "{file}: {text}");
        assert!(!text.contains("shh-very-secret"), "{file}: {text}");
        assert!(text.contains("[REDACTED]"), "{file}: {text}");
    }
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(events.contains(r#""x-api-key":"[REDACTED]""#), "{events}");
    let loaded = store.load(ROOT).unwrap();
    let config = &loaded.metadata.config.unwrap()["providers"][0]["config"];
    assert_eq!(config["api_key"], "[REDACTED]");
    assert_eq!(config["headers"]["Authorization"], "[REDACTED]");
    assert_eq!(config["max_tokens"], 4096);
    assert_eq!(config["model"], "gpt-5");
    assert_eq!(
        writer.metadata().config.as_ref().unwrap()["providers"][0]["config"]["api_key"],
        "[REDACTED]"
    );
}

#[test]
fn metadata_writes_leave_no_temp_and_keep_the_previous_version() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut writer = store.create(&meta(ROOT)).unwrap();
    let dir = store.session_dir(ROOT).unwrap();
    assert!(!dir.join(METADATA_BACKUP).exists());
    for turn in 1..=3 {
        let mut m = meta(ROOT);
        m.turn_count = turn;
        writer.write_metadata(&m).unwrap();
        assert!(!dir.join(METADATA_TEMP).exists());
        let main: Metadata =
            serde_json::from_slice(&std::fs::read(dir.join(METADATA_FILE)).unwrap()).unwrap();
        let backup: Metadata =
            serde_json::from_slice(&std::fs::read(dir.join(METADATA_BACKUP)).unwrap()).unwrap();
        assert_eq!((main.turn_count, backup.turn_count), (turn, turn - 1));
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}
