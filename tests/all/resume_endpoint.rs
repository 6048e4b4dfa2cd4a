//! A resumed session follows the current endpoint (issue 8 item 7, SPEC §7 "Resume"):
//! created against server A, resumed while the environment or the config file names
//! server B, its next request reaches B, never A, and the change is noted for the
//! person (stderr, `events.jsonl`) without reaching the model.

use crate::support;

use serde_json::Value;
use support::*;

fn server(text: &str) -> ScriptedServer {
    ScriptedServer::sequence(vec![Reply::Sse(sse_text(text))])
}

/// Runs `args` in `env` with `OPENAI_BASE_URL` (when given); returns (json result, stderr).
fn run(env: &TestEnv, base_url: Option<&str>, args: &[&str]) -> (Value, String) {
    let mut cmd = env.cmd();
    if let Some(url) = base_url {
        cmd.env("OPENAI_BASE_URL", url);
    }
    let out = cmd.args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    (serde_json::from_str(stdout.trim()).unwrap(), stderr)
}

/// Checks that the resume reached `b` only, noted the move, and kept it from the model.
fn assert_moved(env: &TestEnv, id: &str, a: &ScriptedServer, b: &ScriptedServer, stderr: &str) {
    assert_eq!(a.requests().len(), 1, "A got only the first turn");
    let to_b = b.requests();
    assert_eq!(to_b.len(), 1, "the resumed turn went to B");
    assert_eq!(last_user_text(&to_b[0]), "Again");
    let note = format!("endpoint changed: openai {} → {}", a.base_url, b.base_url);
    assert!(stderr.contains(&note), "stderr: {stderr}");
    assert!(
        !to_b[0].to_string().contains("endpoint changed"),
        "the note is not sent to the model"
    );
    let events = read_jsonl(&env.sessions_dir().join(id).join("events.jsonl"));
    let logged = events
        .iter()
        .find(|e| e["event"] == "provider:endpoint_changed")
        .expect("the change is logged");
    assert_eq!(logged["data"]["from"], a.base_url.as_str());
    assert_eq!(logged["data"]["to"], b.base_url.as_str());
    let meta = env.metadata(id);
    assert_eq!(
        meta["config"]["providers"][0]["config"]["base_url"],
        b.base_url.as_str(),
        "the session now records B"
    );
}

#[test]
fn resume_follows_openai_base_url_from_the_environment() {
    let (a, b) = (server("From A."), server("From B."));
    let env = TestEnv::new();
    let (first, _) = run(
        &env,
        Some(&a.base_url),
        &["run", "--output-format", "json", "Hello"],
    );
    assert_eq!(first["response"], "From A.");
    let id = first["session_id"].as_str().unwrap();
    let (resumed, stderr) = run(
        &env,
        Some(&b.base_url),
        &["session", "resume", id, "Again", "--output-format", "json"],
    );
    assert_eq!(resumed["response"], "From B.");
    assert_moved(&env, id, &a, &b, &stderr);

    // Resumed again with B still current: nothing moves, nothing is noted.
    let (_, stderr) = run(
        &env,
        Some(&b.base_url),
        &[
            "session",
            "resume",
            id,
            "Once more",
            "--output-format",
            "json",
        ],
    );
    assert!(!stderr.contains("endpoint changed"), "stderr: {stderr}");
    assert_eq!(b.requests().len(), 2);
}

#[test]
fn resume_follows_the_config_file() {
    let (a, b) = (server("From A."), server("From B."));
    let env = TestEnv::new();
    env.use_openai(&a.base_url, "sk-test-endpoint");
    let (first, _) = run(&env, None, &["run", "--output-format", "json", "Hello"]);
    let id = first["session_id"].as_str().unwrap();
    env.use_openai(&b.base_url, "sk-test-endpoint");
    // The environment's endpoint does not outrank the config file's.
    let (resumed, stderr) = run(
        &env,
        Some("http://127.0.0.1:9/v1"),
        &["session", "resume", id, "Again", "--output-format", "json"],
    );
    assert_eq!(resumed["response"], "From B.");
    assert_moved(&env, id, &a, &b, &stderr);
}
