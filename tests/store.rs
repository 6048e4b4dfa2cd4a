//! The session store end to end: files on disk, crash recovery, locking across
//! processes, redaction, trees and exports (SPEC §7, §14, §17).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use arbor::session::events::{Event, names};
use arbor::session::export::{export_json, export_markdown};
use arbor::session::message::{AssistantMessage, ContentBlock, ToolCall};
use arbor::session::store::{METADATA_BACKUP, METADATA_FILE, METADATA_TEMP, TRANSCRIPT_FILE};
use arbor::session::tree::{build_tree, subtree_ids};
use arbor::session::{Message, Metadata, SessionStatus, SessionStore, StoreError, ids};
use serde_json::{Value, json};

const ROOT: &str = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b";

fn meta(id: &str) -> Metadata {
    Metadata {
        session_id: id.to_string(),
        agent_name: Some("planner".into()),
        created: "2025-01-01T00:00:00Z".into(),
        last_updated: "2025-01-01T00:00:00Z".into(),
        config: Some(json!({"session": {"orchestrator": "loop-basic"}})),
        ..Default::default()
    }
}

fn child_meta(id: &str, parent: &str, created: &str) -> Metadata {
    Metadata {
        parent_id: Some(parent.to_string()),
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
            input: json!({"path": "src"}),
        });
        a.tool_calls.push(ToolCall {
            id: id.into(),
            tool: tool.into(),
            arguments: json!({"path": "src"}),
        });
    }
    Message::Assistant(a)
}

fn transcript() -> Vec<Message> {
    let call = ToolCall {
        id: "c1".into(),
        tool: "glob".into(),
        arguments: json!({}),
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
    for m in transcript() {
        writer.append_message(&m).unwrap();
    }
    writer
        .append_event(&Event::new(names::SESSION_START, ROOT, None, json!({})))
        .unwrap();
    writer
        .append_event(&Event::new(
            names::CONTENT_BLOCK_DELTA,
            ROOT,
            None,
            json!({"delta": "x"}),
        ))
        .unwrap();
    let mut updated = meta(ROOT);
    updated.turn_count = 1;
    updated.status = SessionStatus::Completed;
    writer.write_metadata(&updated).unwrap();
    writer.sync().unwrap();

    // Readable while the writer holds the lock.
    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript, transcript());
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
    for m in transcript() {
        writer.append_message(&m).unwrap();
    }
    drop(writer);
    let path = store.session_dir(ROOT).unwrap().join(TRANSCRIPT_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"role":"assistant","content":[{"type":"te"#);
    std::fs::write(&path, &bytes).unwrap();

    let loaded = store.load(ROOT).unwrap();
    assert_eq!(loaded.transcript, transcript());
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
    // Listing skips it rather than failing.
    assert!(store.list().unwrap().is_empty());
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
fn second_writer_in_this_process_is_locked_until_the_first_drops() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let writer = store.create(&meta(ROOT)).unwrap();
    let pid = std::process::id();
    for err in [
        unwrap_err(store.open(ROOT)),
        unwrap_err(store.create(&meta(ROOT))),
    ] {
        assert!(matches!(&err, StoreError::Locked { id, pid: p } if id == ROOT && *p == pid));
        assert_eq!(
            err.to_string(),
            format!("session '{ROOT}' is open in another process (pid {pid})")
        );
    }
    assert!(store.load(ROOT).is_ok(), "reading needs no lock");
    assert_eq!(store.list().unwrap().len(), 1);
    drop(writer);
    assert!(store.open(ROOT).is_ok());
}

/// Helper run in a child process by `lock_held_by_another_process_*`: holds the lock
/// of `ARBOR_TEST_LOCK_STORE`/`ROOT`, prints `locked`, and waits for stdin to close.
#[test]
#[ignore = "helper for the cross-process lock test"]
fn helper_hold_lock() {
    let Ok(root) = std::env::var("ARBOR_TEST_LOCK_STORE") else {
        return;
    };
    let _writer = SessionStore::new(root).open(ROOT).unwrap();
    println!("locked");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

fn spawn_holder(root: &Path) -> (std::process::Child, u32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "helper_hold_lock",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ARBOR_TEST_LOCK_STORE", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let locked = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.trim() == "locked");
    assert!(locked, "helper never took the lock");
    let pid = child.id();
    (child, pid)
}

#[test]
fn lock_held_by_another_process_names_it_and_dies_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    drop(store.create(&meta(ROOT)).unwrap());

    // Clean exit releases the lock.
    let (mut child, pid) = spawn_holder(store.root());
    let err = unwrap_err(store.open(ROOT));
    assert!(
        matches!(err, StoreError::Locked { pid: p, .. } if p == pid),
        "{err:?}"
    );
    assert!(store.load(ROOT).is_ok());
    drop(child.stdin.take());
    child.wait().unwrap();
    drop(store.open(ROOT).unwrap());

    // SIGKILL leaves no stale lock either.
    let (mut child, pid) = spawn_holder(store.root());
    assert!(matches!(store.open(ROOT), Err(StoreError::Locked { pid: p, .. }) if p == pid));
    child.kill().unwrap();
    child.wait().unwrap();
    let writer = store.open(ROOT).unwrap();
    assert_eq!(writer.id(), ROOT);
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
    let mut writer = store.create(&m).unwrap();
    writer.set_secrets(["sk-live-0123456789".to_string()]);
    writer
        .append_event(&Event::new(
            names::PROVIDER_ERROR,
            ROOT,
            None,
            json!({"error": "401 for key sk-live-0123456789", "request": {"x-api-key": "abc"}}),
        ))
        .unwrap();
    writer
        .append_message(&Message::user("my key is sk-live-0123456789"))
        .unwrap();
    writer.sync().unwrap();

    let dir = store.session_dir(ROOT).unwrap();
    for file in [METADATA_FILE, "events.jsonl", TRANSCRIPT_FILE] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.contains("sk-live-0123456789"), "{file}: {text}");
        assert!(!text.contains("shh-very-secret"), "{file}: {text}");
        assert!(text.contains("[REDACTED]"), "{file}: {text}");
    }
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

/// root → (planner child, coder child → grandchild), built with real ids.
fn family(store: &SessionStore) -> (String, String, String) {
    let a = ids::child_id_with_span(ROOT, "planner", "00000000000000aa");
    let b = ids::child_id_with_span(ROOT, "coder", "00000000000000bb");
    let g = ids::new_child_id(&b, "Test Writer");
    assert!(
        g.starts_with("00000000000000bb-") && g.ends_with("_test-writer"),
        "{g}"
    );
    let mut w = store.create(&meta(ROOT)).unwrap();
    for m in transcript() {
        w.append_message(&m).unwrap();
    }
    for (id, parent, created) in [
        (&b, ROOT, "2025-01-01T00:00:02Z"),
        (&a, ROOT, "2025-01-01T00:00:01Z"),
        (&g, b.as_str(), "2025-01-01T00:00:03Z"),
    ] {
        let mut w = store.create(&child_meta(id, parent, created)).unwrap();
        w.append_message(&Message::user(format!("task for {id}")))
            .unwrap();
    }
    (a, b, g)
}

#[test]
fn tree_of_stored_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let (a, b, g) = family(&store);
    let tree = build_tree(store.list().unwrap());
    assert_eq!(tree.len(), 1);
    assert_eq!(
        subtree_ids(&tree, ROOT),
        [ROOT, a.as_str(), b.as_str(), g.as_str()]
    );
    assert_eq!(subtree_ids(&tree, &b), [b.as_str(), g.as_str()]);
}

#[test]
fn export_holds_the_whole_subtree() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let (a, b, g) = family(&store);

    let md = export_markdown(&store, ROOT).unwrap();
    let pos = |id: &str| md.find(&format!("## Session `{id}`")).unwrap();
    assert!(
        pos(ROOT) < pos(&a) && pos(&a) < pos(&b) && pos(&b) < pos(&g),
        "{md}"
    );
    assert!(md.contains("list the files") && md.contains(&format!("task for {g}")));
    assert!(
        md.contains("Tool call `glob` (`c1`)") && md.contains("a.rs\nb.rs"),
        "{md}"
    );

    let sub = export_markdown(&store, &b).unwrap();
    assert!(sub.contains(&g) && !sub.contains(&a) && !sub.contains("list the files"));

    let doc: Value = serde_json::from_str(&export_json(&store, ROOT).unwrap()).unwrap();
    assert_eq!(doc["format"], "arbor.session-export");
    let root = &doc["session"];
    assert_eq!(root["metadata"]["session_id"], ROOT);
    assert_eq!(root["transcript"].as_array().unwrap().len(), 4);
    assert_eq!(root["children"][0]["metadata"]["session_id"], a.as_str());
    assert_eq!(root["children"][1]["metadata"]["session_id"], b.as_str());
    assert_eq!(
        root["children"][1]["children"][0]["metadata"]["session_id"],
        g.as_str()
    );
    assert_eq!(
        root["children"][1]["children"][0]["transcript"][0]["content"],
        format!("task for {g}")
    );

    assert!(matches!(
        export_json(&store, "nope"),
        Err(StoreError::NotFound(_))
    ));
}

/// Amplifier's `find_session` and `SessionStore.exists` cases against `resolve` and
/// `exists`. Deviations (arbor asserts its own behaviour): arbor resolves sub-sessions
/// too (no `top_level_only`), and its errors are `NotFound`/`Ambiguous`/`InvalidId`
/// rather than Amplifier's message texts.
#[test]
fn amplifier_find_session_cases() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/peer-cases/amplifier-ids.yaml"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("note: {path} absent; skipping");
        return;
    };
    let cases: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
    let mut ran = 0;
    for case in &cases {
        let function = case["function"].as_str().unwrap_or("");
        if function != "app_cli.SessionStore.find_session"
            && function != "app_cli.SessionStore.exists"
        {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let input = &case["input"];
        let tmp = tempfile::tempdir().unwrap();
        for dir in input["existing_dirs"].as_array().unwrap() {
            std::fs::create_dir(tmp.path().join(dir.as_str().unwrap())).unwrap();
        }
        let store = SessionStore::new(tmp.path());
        ran += 1;
        if function == "app_cli.SessionStore.exists" {
            let id = input["session_id"].as_str().unwrap();
            assert_eq!(
                store.exists(id),
                case["expected"].as_bool().unwrap(),
                "{name}"
            );
            continue;
        }
        let partial = input["partial_id"].as_str().unwrap();
        let got = store.resolve(partial);
        let top_level_only = input.get("top_level_only").and_then(Value::as_bool) != Some(false);
        let sub_session_deviation = top_level_only
            && input["existing_dirs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| ids::is_sub_session(d.as_str().unwrap()));
        if sub_session_deviation {
            assert_eq!(
                got.unwrap(),
                input["existing_dirs"][0].as_str().unwrap(),
                "{name}"
            );
        } else if let Some(expected) = case["expected"].as_str() {
            assert_eq!(got.unwrap(), expected, "{name}");
        } else {
            let contains = case["expected_error"]["contains"][0].as_str().unwrap();
            match got {
                Err(StoreError::Ambiguous { matches, .. }) if contains.starts_with("Ambiguous") => {
                    assert_eq!(
                        matches.len(),
                        input["existing_dirs"].as_array().unwrap().len(),
                        "{name}"
                    );
                }
                Err(StoreError::InvalidId { .. }) if contains.contains("cannot be empty") => {}
                Err(StoreError::NotFound(_)) if contains.starts_with("No session found") => {}
                other => panic!("{name}: unexpected {other:?}"),
            }
        }
    }
    assert!(ran >= 10, "only {ran} cases mapped");
}
