//! Replaying a transcript's writes and edits into diffs.

use serde_json::{Value, json};

use super::*;

/// An assistant message calling `tool` with `input` (call id `id`), then its result.
fn call(id: &str, tool: &str, input: Value, result: Value, is_error: bool) -> Vec<Message> {
    let assistant = json!({
        "role": "assistant",
        "content": [{"type": "tool_call", "id": id, "name": tool, "input": input}],
        "tool_calls": [{"id": id, "tool": tool, "arguments": input}],
    });
    let content = if result.is_string() {
        result.as_str().unwrap_or_default().to_string()
    } else {
        result.to_string()
    };
    let tool_msg = json!({
        "role": "tool", "name": tool, "tool_call_id": id, "content": content, "is_error": is_error,
    });
    vec![
        serde_json::from_value(assistant).unwrap(),
        serde_json::from_value(tool_msg).unwrap(),
    ]
}

fn write(id: &str, path: &str, content: &str, created: bool) -> Vec<Message> {
    call(
        id,
        "write_file",
        json!({"file_path": path, "content": content}),
        json!({"file_path": path, "bytes": content.len(), "created": created}),
        false,
    )
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> Vec<Message> {
    call(
        id,
        "edit_file",
        json!({"file_path": path, "old_string": old, "new_string": new}),
        json!({"file_path": path, "replacements_made": 1}),
        false,
    )
}

#[test]
fn a_created_then_edited_file_is_one_diff_from_nothing() {
    let mut t = write("1", "src/new.rs", "fn a() {}\nfn b() {}\n", true);
    t.extend(edit("2", "src/new.rs", "fn b() {}", "fn c() {}"));
    let files = replay(&t);
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0].diff,
        "--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1,2 @@\n+fn a() {}\n+fn c() {}\n"
    );
    assert_eq!((files[0].added, files[0].removed), (2, 0));
}

#[test]
fn edits_of_unknown_content_have_no_line_numbers_and_later_ones_do() {
    let mut t = edit("1", "lib.rs", "old line", "new line");
    t.extend(write("2", "lib.rs", "a\nb\nc\n", false));
    t.extend(edit("3", "lib.rs", "b", "B"));
    let files = replay(&t);
    assert_eq!(
        files[0].diff,
        "--- a/lib.rs\n+++ b/lib.rs\n\
         @@ edit_file (line numbers unknown) @@\n-old line\n+new line\n\
         @@ write_file replaced the whole file (its earlier content is not in the transcript) @@\n\
         +a\n+b\n+c\n\
         @@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    );
    assert_eq!((files[0].added, files[0].removed), (5, 2));
}

#[test]
fn recorded_hunks_place_edits_of_unknown_content_each_as_its_own_patch() {
    let mut t = edit("1", "lib.rs", "b", "B");
    t.extend(edit("2", "lib.rs", "B", "BB"));
    t.extend(edit("3", "lib.rs", "c", "C"));
    let recorded = HashMap::from([
        ("1".to_string(), "@@ -1,2 +1,2 @@\n a\n-b\n+B\n".to_string()),
        (
            "2".to_string(),
            "@@ -1,2 +1,2 @@\n a\n-B\n+BB\n".to_string(),
        ),
    ]);
    let files = replay_with(&t, &recorded);
    // The third edit has no recorded hunks: the file is a readable record again.
    assert!(
        files[0].diff.contains("(line numbers unknown)"),
        "{}",
        files[0].diff
    );
    let files = replay_with(&t[..4], &recorded);
    assert_eq!(
        files[0].diff,
        "--- a/lib.rs\n+++ b/lib.rs\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\
         --- a/lib.rs\n+++ b/lib.rs\n@@ -1,2 +1,2 @@\n a\n-B\n+BB\n"
    );
    assert_eq!((files[0].added, files[0].removed), (2, 2));
}

#[test]
fn failed_and_denied_calls_and_other_tools_change_nothing() {
    let mut t = call(
        "1",
        "write_file",
        json!({"file_path": "x.txt", "content": "x"}),
        json!("denied: write_file needs approval; run with --yes"),
        true,
    );
    t.extend(call(
        "2",
        "edit_file",
        json!({"file_path": "y.txt", "old_string": "a", "new_string": "b"}),
        json!("old_string not found in 'y.txt' (0 matches)"),
        true,
    ));
    t.extend(call(
        "3",
        "read_file",
        json!({"file_path": "z.txt"}),
        json!({"file_path": "z.txt"}),
        false,
    ));
    assert!(replay(&t).is_empty());
}

#[test]
fn files_come_by_path_and_render_joins_them() {
    let mut t = write("1", "b.txt", "b\n", true);
    t.extend(write("2", "a.txt", "", true));
    let files = replay(&t);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "b.txt"]);
    assert_eq!(
        files[0].diff,
        "--- /dev/null\n+++ b/a.txt\n@@ empty file @@\n"
    );
    let one = SessionDiff {
        session_id: "s1".into(),
        agent: Some("arbor".into()),
        files,
    };
    let text = render(std::slice::from_ref(&one));
    assert!(text.starts_with("--- /dev/null\n+++ b/a.txt\n"), "{text}");
    let two = render(&[one.clone(), one]);
    assert!(
        two.starts_with("# session s1 (arbor)\n--- /dev/null"),
        "{two}"
    );
}
