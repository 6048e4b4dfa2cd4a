//! Bad input through the real binary: a clear message, nothing lost, no panic.
//! Damaged sessions (truncated metadata, no `config`, a lock held by another process)
//! and failing providers (401, 500, a mid-stream error event, a connection closed
//! mid-stream), each leaving the session resumable.

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use predicates::prelude::*;
use serde_json::{Value, json};
use support::*;

/// Runs one successful turn and returns the env, the server and the new session's dir.
fn session_with_one_turn() -> (TestEnv, ScriptedServer, String, PathBuf) {
    let server = ScriptedServer::start(Arc::new(|_| {
        async { Reply::Sse(sse_text("First answer.")) }.boxed()
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "start"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["session_id"].as_str().unwrap().to_string();
    let dir = env.sessions_dir().join(&id);
    (env, server, id, dir)
}

fn run_json(env: &TestEnv, args: &[&str]) -> (bool, Value, String) {
    let out = env.cmd().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    (out.status.success(), v, stderr)
}

/// `session show --json ID` succeeds warning `warning` on stderr, then a resume runs
/// (the scripted server answers "First answer.").
fn shows_with_warning_then_resumes(env: &TestEnv, id: &str, warning: &str) {
    let out = env
        .cmd()
        .args(["session", "show", id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(warning), "{stderr}");
    let (ok, v, _) = run_json(
        env,
        &["session", "resume", id, "go on", "--output-format", "json"],
    );
    assert!(ok, "{v}");
    assert_eq!(v["response"], "First answer.");
}

#[test]
fn truncated_metadata_falls_back_to_the_backup() {
    let (env, _server, id, dir) = session_with_one_turn();
    assert!(dir.join("metadata.json.backup").exists());
    let meta = std::fs::read_to_string(dir.join("metadata.json")).unwrap();
    std::fs::write(dir.join("metadata.json"), &meta[..meta.len() / 2]).unwrap();
    shows_with_warning_then_resumes(&env, &id, "used metadata.json.backup");
    // The resume rewrote a whole, parseable metadata.json.
    let fixed: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(fixed["turn_count"], 2);
}

#[test]
fn sub_session_metadata_without_config_is_reported_as_corrupted() {
    // A root without `config` is rebuilt from its bundle (tests/all/interop.rs);
    // a sub-session has nothing to rebuild from.
    let (env, _server, id, dir) = session_with_one_turn();
    for name in ["metadata.json", "metadata.json.backup"] {
        let mut meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        meta.as_object_mut().unwrap().remove("config");
        meta["parent_id"] = Value::from("4f6d2c1a-9b7e-4c3d-8a2f-1e0d9c8b7a65");
        std::fs::write(dir.join(name), meta.to_string()).unwrap();
    }
    let transcript = std::fs::read(dir.join("transcript.jsonl")).unwrap();
    env.cmd()
        .args(["session", "resume", &id, "go on"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "Corrupted session metadata for '{id}'"
        )));
    assert_eq!(
        std::fs::read(dir.join("transcript.jsonl")).unwrap(),
        transcript,
        "nothing lost"
    );
}

#[test]
fn a_session_locked_by_another_process_is_refused_with_its_pid() {
    let (env, _server, id, dir) = session_with_one_turn();
    let transcript = std::fs::read(dir.join("transcript.jsonl")).unwrap();
    let store = arbor::session::SessionStore::new(env.sessions_dir());
    let writer = store.open(&id).unwrap();
    env.cmd()
        .args(["session", "resume", &id, "go on"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "session '{id}' is open in another process (pid {})",
            std::process::id()
        )));
    // Reading still works while it is locked.
    env.cmd().args(["session", "show", &id]).assert().success();
    drop(writer);
    assert_eq!(
        std::fs::read(dir.join("transcript.jsonl")).unwrap(),
        transcript
    );
    env.cmd()
        .args(["session", "resume", &id, "go on"])
        .assert()
        .success();
}

#[test]
fn a_401_names_the_provider_status_and_api_message() {
    let server = ScriptedServer::start(Arc::new(|_| {
        async {
            Reply::Status(
                401,
                json!({"error": {"message": "Incorrect API key provided: sk-bad.", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string(),
            )
        }
        .boxed()
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-bad");
    let (ok, v, _) = run_json(&env, &["run", "--output-format", "json", "hi"]);
    assert!(!ok);
    assert_eq!(v["status"], "error");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("Incorrect API key provided"), "{error}");
    assert!(error.contains("401"), "{error}");
    assert!(error.contains("openai"), "{error}");
    assert_eq!(server.requests().len(), 1, "auth errors are not retried");
    // The session exists, failed, and is resumable.
    let id = v["session_id"].as_str().unwrap();
    assert_eq!(env.metadata(id)["status"], "failed");
}

#[test]
fn a_500_is_retried_then_reported() {
    let server_error = |wait_ms: &str| {
        Reply::StatusWithHeaders(
            500,
            vec![("retry-after-ms".into(), wait_ms.into())],
            json!({"error": {"message": "The server had an error while processing your request."}})
                .to_string(),
        )
    };
    let server = ScriptedServer::sequence(vec![
        server_error("10"),
        Reply::Sse(sse_text("Recovered after a retry.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let (ok, v, _) = run_json(&env, &["run", "--output-format", "json", "hi"]);
    assert!(ok, "{v}");
    assert_eq!(v["response"], "Recovered after a retry.");
    assert_eq!(server.requests().len(), 2);

    // Always 500: the error names the status and the API's message.
    let server = ScriptedServer::sequence(vec![server_error("5")]);
    env.use_openai(&server.base_url, "sk-x");
    let (ok, v, _) = run_json(&env, &["run", "--output-format", "json", "hi"]);
    assert!(!ok);
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("The server had an error"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 4, "at most 4 attempts");
}

fn partial_stream() -> String {
    let full = sse_text("Partial words before the failure");
    // Keep the role chunk and three content chunks.
    full.split("\n\n")
        .take(4)
        .map(|c| format!("{c}\n\n"))
        .collect()
}

#[test]
fn a_mid_stream_error_keeps_partial_text_and_the_session_resumes() {
    let error = json!({"error": {"message": "Token limit reached", "code": 400}});
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(format!(
            "{}data: {error}\n\ndata: [DONE]\n\n",
            partial_stream()
        )),
        Reply::Sse(sse_text("Resumed fine.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let (ok, v, _) = run_json(&env, &["run", "--output-format", "json", "hi"]);
    assert!(!ok);
    assert!(
        v["error"].as_str().unwrap().contains("Token limit reached"),
        "{v}"
    );
    assert_eq!(v["response"], "Partial words before");
    let id = v["session_id"].as_str().unwrap().to_string();
    let transcript = read_jsonl(&env.sessions_dir().join(&id).join("transcript.jsonl"));
    assert_eq!(
        transcript.last().unwrap()["content"][0]["text"],
        "Partial words before"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once output reached the user"
    );
    let (ok, v, _) = run_json(
        &env,
        &["session", "resume", &id, "again", "--output-format", "json"],
    );
    assert!(ok, "{v}");
    assert_eq!(v["response"], "Resumed fine.");
}

#[test]
fn a_connection_closed_mid_stream_keeps_partial_text_and_the_session_resumes() {
    let server = ScriptedServer::sequence(vec![
        Reply::SseCut(partial_stream()),
        Reply::Sse(sse_text("Back again.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let (ok, v, _) = run_json(&env, &["run", "--output-format", "json", "hi"]);
    assert!(!ok);
    assert_eq!(v["status"], "error");
    assert_eq!(v["response"], "Partial words before");
    let id = v["session_id"].as_str().unwrap().to_string();
    let (ok, v, _) = run_json(
        &env,
        &["session", "resume", &id, "again", "--output-format", "json"],
    );
    assert!(ok, "{v}");
    assert_eq!(v["response"], "Back again.");
    let transcript = read_jsonl(&env.sessions_dir().join(&id).join("transcript.jsonl"));
    let texts: Vec<String> = transcript
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Partial words before")),
        "{texts:?}"
    );
}

/// Ctrl+C (SIGINT) during `arbor run` cancels the turn: the final object says
/// `cancelled`, the exit code is non-zero, and the session resumes afterwards.
#[cfg(unix)]
#[test]
fn sigint_cancels_a_running_turn_and_the_session_resumes() {
    use std::time::{Duration, Instant};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let server = ScriptedServer::start(Arc::new(move |_| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                // Hang until the client goes away.
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Reply::Sse(sse_text("After the interruption."))
        }
        .boxed()
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let child = env
        .std_cmd()
        .args(["run", "--output-format", "json", "take your time"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the request never arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["status"], "cancelled", "{v}");
    let id = v["session_id"].as_str().unwrap().to_string();
    assert_eq!(env.metadata(&id)["status"], "cancelled");
    let (ok, v, _) = run_json(
        &env,
        &["session", "resume", &id, "go on", "--output-format", "json"],
    );
    assert!(ok, "{v}");
    assert_eq!(v["response"], "After the interruption.");
}

/// A 401 whose body echoes the key (and the `Authorization` header it came in) never
/// shows the key: not on stdout or stderr in any output format, not in the session's
/// files, not in the log — whether the key came from the config file or the
/// environment.
#[test]
fn a_key_echoed_by_a_401_appears_nowhere() {
    const KEY: &str = "sk-live-0123456789abcdefECHOED";
    const OTHER: &str = "tok-opaque-98765432109876";
    let body = json!({"error": {
        "message": format!("Incorrect API key provided: {KEY}. Received headers: Authorization: Bearer {KEY}; x-api-key: {OTHER}"),
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }})
    .to_string();
    let server = ScriptedServer::sequence(vec![Reply::Status(401, body)]);
    let env = TestEnv::new();
    for (from_env, format) in [(true, "jsonl"), (false, "text"), (false, "json")] {
        let mut cmd = env.cmd();
        if from_env {
            std::fs::write(
                &env.config,
                format!(
                    "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{}\"\n      default_model: scripted-model\n",
                    server.base_url
                ),
            )
            .unwrap();
            cmd.env("OPENAI_API_KEY", KEY);
        } else {
            env.use_openai(&server.base_url, KEY);
        }
        let out = cmd
            .env("ARBOR_LOG", "trace")
            .args(["run", "--output-format", format, "hi"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(shown.contains("Incorrect API key provided"), "{shown}");
        assert!(shown.contains("401"), "{shown}");
        for secret in [KEY, OTHER] {
            assert!(!shown.contains(secret), "{format}: {shown}");
        }
    }
    assert_eq!(server.requests().len(), 3);
    let sessions = env.sessions_dir();
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), 3);
    assert_eq!(
        files_containing(&sessions, "Incorrect API key provided").len(),
        3,
        "each session's events record the error (scrubbed, not dropped)"
    );
    let log = env.home.join(".local/state/arbor/arbor.log");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("Incorrect API key provided"),
        "the log records the error"
    );
    assert_eq!(
        files_containing(env.dir.path(), KEY),
        std::slice::from_ref(&env.config),
        "only the config file holds the key"
    );
    assert_eq!(
        files_containing(env.dir.path(), OTHER),
        Vec::<PathBuf>::new()
    );
}

/// A transcript that is a symlink to `/dev/zero`, or a FIFO, is refused at once by
/// `show`, `export` and `resume` (it used to hang, or fill memory), naming the file.
#[cfg(unix)]
#[test]
fn a_transcript_that_is_not_a_regular_file_is_refused_at_once() {
    let (env, _server, id, dir) = session_with_one_turn();
    let transcript = dir.join("transcript.jsonl");
    for fifo in [false, true] {
        std::fs::remove_file(&transcript).unwrap();
        if fifo {
            let made = std::process::Command::new("mkfifo")
                .arg(&transcript)
                .status()
                .unwrap();
            assert!(made.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", &transcript).unwrap();
        }
        let kind = if fifo { "a FIFO" } else { "a device" };
        for args in [
            &["session", "show", &id][..],
            &["session", "export", &id, "--format", "md"][..],
            &["session", "resume", &id, "go on"][..],
        ] {
            let out = env
                .cmd()
                .timeout(std::time::Duration::from_secs(10))
                .args(args)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "{}: {kind}, not a regular file",
                    transcript.display()
                )),
                "{args:?}: {stderr}"
            );
        }
    }
}

/// A kill between writing `metadata.json.tmp` and renaming it left a directory holding
/// only that temp file: the session is listed, shown and resumed from it.
#[test]
fn a_session_holding_only_its_metadata_temp_is_listed_and_resumable() {
    let (env, _server, id, dir) = session_with_one_turn();
    std::fs::rename(dir.join("metadata.json"), dir.join("metadata.json.tmp")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // `checkpoints.git`, the session's private checkpoints (issue 25).
            std::fs::remove_dir_all(path).unwrap();
        } else if path.file_name().unwrap() != "metadata.json.tmp" {
            std::fs::remove_file(path).unwrap();
        }
    }
    let out = env.cmd().args(["session", "list"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    shows_with_warning_then_resumes(&env, &id, "used metadata.json.tmp");
    assert_eq!(env.metadata(&id)["turn_count"], 2);
}

/// `session list` hides no session directory: garbage metadata with nothing to rebuild
/// from, and a directory a kill left holding only its lock, are listed with the
/// reason; one whose metadata is lost but whose transcript survived is rebuilt and
/// shown as `interrupted`.
#[test]
fn session_list_shows_unreadable_and_rebuilt_sessions() {
    let (env, _server, id, dir) = session_with_one_turn();
    let sessions = env.sessions_dir();
    let garbage = "11111111-1111-4111-8111-111111111111";
    std::fs::create_dir_all(sessions.join(garbage)).unwrap();
    std::fs::write(sessions.join(garbage).join("metadata.json"), "garbage").unwrap();
    let lock_only = "22222222-2222-4222-8222-222222222222";
    std::fs::create_dir_all(sessions.join(lock_only)).unwrap();
    std::fs::write(sessions.join(lock_only).join("lock"), "4242").unwrap();
    for name in ["metadata.json", "metadata.json.backup"] {
        let _ = std::fs::remove_file(dir.join(name));
    }

    let out = env.cmd().args(["session", "list"]).output().unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let row = |needle: &str| {
        table
            .lines()
            .find(|l| l.starts_with(needle))
            .unwrap_or_else(|| panic!("{needle} not listed:\n{table}"))
            .to_string()
    };
    assert!(row(&id).contains("interrupted"), "{table}");
    assert!(
        row(garbage).contains(&format!(
            "unreadable   -                 -  Corrupted session metadata for '{garbage}': metadata.json unreadable"
        )),
        "{table}"
    );
    assert!(
        row(lock_only).contains("metadata.json missing; metadata.json.backup missing; metadata.json.tmp missing; nothing to rebuild it from"),
        "{table}"
    );

    let (ok, v, _) = run_json(&env, &["session", "list", "--json"]);
    assert!(ok);
    let by_id = |want: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|e| e["session_id"] == want)
            .unwrap_or_else(|| panic!("{want} missing: {v}"))
            .clone()
    };
    let rebuilt = by_id(&id);
    assert_eq!(rebuilt["status"], "interrupted");
    assert_eq!(rebuilt["agent_name"], "arbor");
    assert_eq!(rebuilt["turn_count"], 1);
    assert_eq!(by_id(garbage)["status"], "unreadable");
    assert!(
        by_id(garbage)["error"]
            .as_str()
            .unwrap()
            .contains("metadata.json unreadable"),
        "{v}"
    );

    let out = env.cmd().args(["session", "show", &id]).output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("metadata rebuilt from transcript.jsonl and events.jsonl"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.cmd()
        .args(["session", "show", garbage])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "Corrupted session metadata for '{garbage}'"
        )));
}

/// A log file that cannot be opened (a read-only state directory, as inside the
/// sandbox; here also a directory where the file should be, which even root cannot
/// open for writing) leaves arbor without a log, not panicking: `session list` works.
#[test]
fn an_unopenable_log_file_means_no_log_not_a_panic() {
    let env = TestEnv::new();
    let state = env.dir.path().join("state");
    let log_dir = state.join("arbor");
    std::fs::create_dir_all(log_dir.join("arbor.log")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&log_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let out = env
        .cmd()
        .env("XDG_STATE_HOME", &state)
        .args(["session", "list"])
        .output()
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&log_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Every help text of every subcommand, walked through clap's own tree: none names an
/// internal issue number (`issue 27`), and every argument has a help line (issue 39).
#[test]
fn help_texts_name_no_issue_and_every_argument_is_explained() {
    use clap::CommandFactory;
    fn walk(cmd: &mut clap::Command, path: &str, found: &mut Vec<String>) {
        let help = cmd.render_long_help().to_string();
        let issue = regex_lite_issue(&help);
        if let Some(line) = issue {
            found.push(format!("{path}: {line}"));
        }
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id != "help"
                && id != "version"
                && arg.get_help().is_none()
                && arg.get_long_help().is_none()
            {
                found.push(format!("{path}: argument {id} has no help"));
            }
        }
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        for name in names {
            if let Some(sub) = cmd.find_subcommand_mut(&name) {
                walk(sub, &format!("{path} {name}"), found);
            }
        }
    }
    /// The first line with `issue` followed by a number.
    fn regex_lite_issue(text: &str) -> Option<String> {
        text.lines()
            .find(|l| {
                l.match_indices("issue ").any(|(i, m)| {
                    l[i + m.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit())
                })
            })
            .map(str::to_string)
    }
    let mut cmd = arbor::cli::Cli::command();
    let mut found = Vec::new();
    walk(&mut cmd, "arbor", &mut found);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_worker_with_a_url_of_another_scheme_exits_at_once_naming_it() {
    let env = TestEnv::new();
    env.cmd()
        .args(["worker", "--nats", "http://user:pw@x:4222"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--nats: expected a URL starting with nats://, tls://, ws://, wss://, got http://user:***@x:4222",
        ));
}

#[test]
fn the_tuis_resume_of_an_unknown_id_says_which_project_it_searched_before_taking_the_terminal() {
    let env = TestEnv::new();
    env.cmd()
        .args(["--resume", "bogus"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "No session id or short id starts with 'bogus'. Looked among the sessions of project",
        ))
        .stderr(predicate::str::contains("Sub-session").not());
}

#[test]
fn arbor_run_refuses_a_slash_command_it_cannot_run_and_sends_nothing() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("sent"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    env.cmd()
        .args(["run", "/nosuchcmd do it"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("unknown command /nosuchcmd"));
    env.cmd()
        .args(["run", "/compact"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("/compact is a command of the TUI"));
    assert!(
        server.requests().is_empty(),
        "a refused prompt reached the model"
    );
    // A path is a message, not a command.
    env.cmd()
        .args(["run", "/usr/bin/env is what?"])
        .assert()
        .success()
        .stdout(predicate::str::contains("sent"));
}
