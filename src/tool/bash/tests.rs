//! The bash tool against a real `sh`, in temp directories. Timeouts here are short real
//! waits (a process cannot run on tokio's paused clock); no test asserts a duration.

use std::path::Path;

use serde_json::{Value, json};

use super::*;

fn ctx(dir: &Path, cancel: CancellationToken) -> ToolContext {
    ToolContext {
        cancel,
        ..ToolContext::in_dir(dir)
    }
}

fn body(out: &ToolOutput) -> Value {
    serde_json::from_str(&out.content).unwrap_or_else(|e| panic!("{e}: {}", out.content))
}

async fn bash(dir: &Path, input: Value) -> ToolOutput {
    Bash::default()
        .call(input, ctx(dir, CancellationToken::new()))
        .await
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) for the file the command writes its background child's pid to.
async fn pid_from(file: &Path) -> u32 {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the command never wrote {}", file.display());
}

/// A killed process disappears asynchronously (its reaper runs after the kill).
async fn assert_dies(pid: u32) {
    for _ in 0..500 {
        if is_dead(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {pid} is still alive");
}

#[tokio::test]
async fn runs_in_the_working_directory_and_reports_streams_and_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.txt"), "").unwrap();
    let out = bash(dir.path(), json!({"command": "ls; echo oops >&2"})).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        body(&out),
        json!({"stdout": "here.txt\n", "stderr": "oops\n", "returncode": 0})
    );
    let out = bash(dir.path(), json!({"command": "echo partial; exit 3"})).await;
    assert!(out.is_error);
    assert_eq!(body(&out)["returncode"], 3);
    assert_eq!(body(&out)["stdout"], "partial\n");
}

#[tokio::test]
async fn stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let out = bash(dir.path(), json!({"command": "cat; echo done"})).await;
    assert_eq!(body(&out)["stdout"], "done\n");
}

#[tokio::test]
async fn bad_input_is_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    for (input, needle) in [
        (json!({}), "non-empty 'command'"),
        (json!({"command": "  "}), "non-empty 'command'"),
        (json!({"command": 5}), "must be a string"),
        (json!({"command": "true", "timeout": -1}), "positive number"),
        (
            json!({"command": "true", "timeout": "soon"}),
            "positive number",
        ),
    ] {
        let out = bash(dir.path(), input).await;
        assert!(
            out.is_error && out.content.contains(needle),
            "{}",
            out.content
        );
    }
}

#[test]
fn timeouts_default_to_120_s_and_are_capped_at_600() {
    assert_eq!(Bash::default().default_timeout, DEFAULT_TIMEOUT);
    assert_eq!(DEFAULT_TIMEOUT, Duration::from_secs(120));
    assert_eq!(seconds(Some(&json!(5000))), Some(MAX_TIMEOUT));
    assert_eq!(seconds(Some(&json!("30"))), Some(Duration::from_secs(30)));
    assert_eq!(seconds(Some(&json!(0))), None);
    assert_eq!(
        Bash::new(Duration::from_secs(9000)).default_timeout,
        MAX_TIMEOUT
    );
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let out = bash(
        dir.path(),
        json!({"command": "echo FIRST; yes filler | head -c 200000; echo; echo LAST"}),
    )
    .await;
    assert!(!out.is_error, "{}", &out.content[..200]);
    let b = body(&out);
    assert_eq!(b["truncated"], true);
    let stdout = b["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("FIRST\nfiller"), "{}", &stdout[..40]);
    assert!(stdout.ends_with("\nLAST\n"));
    assert!(stdout.contains(" bytes cut …\n"));
    assert!(stdout.len() <= output::HEAD_BYTES + output::TAIL_BYTES + 64);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "sleep 100 & echo $! > child.pid; wait",
        dir.path(),
        Duration::from_secs(2),
        &CancellationToken::new(),
    )
    .await;
    assert!(out.is_error);
    let b = body(&out);
    assert_eq!(b["returncode"], Value::Null);
    assert!(
        b["error"]
            .as_str()
            .unwrap()
            .starts_with("Command timed out after 2 seconds"),
        "{b}"
    );
    assert_dies(pid_from(&dir.path().join("child.pid")).await).await;
}

#[tokio::test]
async fn cancelling_the_turn_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let call = Bash::default().call(
        json!({"command": "sleep 100 & echo $! > child.pid; wait"}),
        ctx(dir.path(), cancel.clone()),
    );
    let running = tokio::spawn(call);
    let pid = pid_from(&dir.path().join("child.pid")).await;
    assert!(!is_dead(pid));
    cancel.cancel();
    let out = running.await.unwrap();
    assert!(out.is_error);
    assert!(out.content.contains("cancelled"), "{}", out.content);
    assert_dies(pid).await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let call = Bash::default().call(
        json!({"command": "sleep 100 & echo $! > child.pid; wait"}),
        ctx(dir.path(), CancellationToken::new()),
    );
    let running = tokio::spawn(call);
    let pid = pid_from(&dir.path().join("child.pid")).await;
    running.abort();
    let _ = running.await;
    assert_dies(pid).await;
}

#[tokio::test]
async fn background_leftovers_die_with_the_shell_and_do_not_hold_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let out = bash(
        dir.path(),
        json!({"command": "sleep 100 & echo $! > child.pid; echo started"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(body(&out)["stdout"], "started\n");
    assert_dies(pid_from(&dir.path().join("child.pid")).await).await;
}
