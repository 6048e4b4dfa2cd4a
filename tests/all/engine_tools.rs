//! The write and shell tools through real turns (scripted provider, temp dirs): a
//! session's writes and edits land in its metadata's `files_changed`, and a configured
//! key printed by a command reaches neither the model nor the session files.

use crate::support::fixture;

use arbor::engine::testing::{Drive, Step};
use arbor::provider::ChatRequest;
use arbor::session::message::Message;
use fixture::*;
use serde_json::{Value, json};

fn tool_results(r: &ChatRequest) -> usize {
    r.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count()
}

fn tools_plan() -> Value {
    plan(json!({"tools": [{"module": "tool-filesystem"}, {"module": "tool-bash"}]}))
}

#[tokio::test]
async fn writes_and_edits_are_recorded_in_files_changed() {
    let fx = Fixture::new(tools_plan(), &[], |r| match tool_results(r) {
        0 => vec![
            Step::call(
                "w1",
                "write_file",
                json!({"file_path": "notes/a.txt", "content": "one\ntwo\n"}),
            ),
            Step::call(
                "w2",
                "write_file",
                json!({"file_path": "inside.txt", "content": "inside\nmore\n"}),
            ),
        ],
        2 => vec![Step::call(
            "e1",
            "edit_file",
            json!({"file_path": "notes/a.txt", "old_string": "two", "new_string": "2\n3"}),
        )],
        _ => vec![Step::text("done")],
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "write".into()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.paths.cwd.join("notes/a.txt")).unwrap(),
        "one\n2\n3\n"
    );
    let tools: Vec<String> = tool_names(&fx.provider.requests()[0]);
    assert_eq!(
        tools,
        [
            "read_file",
            "list_directory",
            "write_file",
            "edit_file",
            "bash"
        ]
    );
    let m = fx.metadata(&id);
    assert_eq!(
        m["files_changed"],
        json!([
            {"path": "inside.txt", "tool": "write_file", "lines_added": 1, "lines_removed": 0, "created": false, "changes": 1},
            {"path": "notes/a.txt", "tool": "edit_file", "lines_added": 4, "lines_removed": 1, "created": true, "changes": 2}
        ])
    );
}

#[tokio::test]
async fn a_key_printed_by_a_command_is_scrubbed_from_the_result() {
    let command = format!("echo key={SECRET}; echo {SECRET} >&2");
    let fx = Fixture::new(tools_plan(), &[], move |r| {
        if tool_results(r) == 0 {
            vec![Step::call("b1", "bash", json!({"command": command}))]
        } else {
            vec![Step::text("done")]
        }
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "print it".into()).await.unwrap();
    let result = tool_result(&fx.transcript(&id), "b1");
    let body: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"stdout": "key=[REDACTED]\n", "stderr": "[REDACTED]\n", "returncode": 0})
    );
    // What the model was sent back, not only what was stored.
    let requests = fx.provider.requests();
    let sent: Vec<&Message> = requests[1]
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .collect();
    let sent = serde_json::to_string(&sent).unwrap();
    assert!(sent.contains("key=[REDACTED]"), "{sent}");
    assert!(!sent.contains(SECRET), "{sent}");
    // The session files keep no key (the command itself, in the assistant's call, is
    // redacted by the store's writer).
    assert!(!fx.all_session_text().contains(SECRET));
}
