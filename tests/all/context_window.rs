//! Issue 26 "Done when": long sessions under a context limit, through the real binary.
//!
//! A loopback OpenAI-compatible server enforces a 4,000-token window the way OpenAI
//! does (400 `context_length_exceeded` when a request is over), counting ≈ characters
//! / 4 of the messages, system prompt and tools as sent. Eight growing turns, each in
//! its own `arbor` process (turn 1 `run`, then `session resume`, so the compaction is
//! read back from `events.jsonl` every time), must all be answered.

use crate::support::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The window the server enforces, tokens.
const WINDOW: u64 = 4_000;

/// Tokens of a chat request as the server counts them: characters of the messages
/// array, system prompt and tools as JSON, divided by 4.
fn request_tokens(body: &Value) -> u64 {
    let chars = body["messages"].to_string().len() + body["tools"].to_string().len();
    (chars as u64).div_ceil(4)
}

/// An OpenAI stream answering `text` whose usage reports `prompt` input tokens.
fn sse_answer(text: &str, prompt: u64) -> String {
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "window-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let completion = (text.len() as u64).div_ceil(4);
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
        "model": "window-model", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}});
    chunk(json!({"role": "assistant", "content": text}), None)
        + &chunk(json!({}), Some("stop"))
        + &format!("data: {usage}\n\ndata: [DONE]\n\n")
}

/// Turn `i`'s user message: grows with `i` (≈ 90·i tokens).
fn prompt(i: usize) -> String {
    format!("turn {i}: {}", "lorem ipsum ".repeat(30 * i))
}

/// The answer to turn `i` (≈ 75·i tokens).
fn answer(i: usize) -> String {
    format!("answer {i}: {}", "dolor sit ".repeat(30 * i))
}

/// A server with a 4,000-token window: over it, OpenAI's 400; a summary request
/// (arbor's compaction) gets a summary; turn `i` gets [`answer`]`(i)`. Records the
/// largest request it saw.
fn window_server(largest: Arc<AtomicU64>) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let tokens = request_tokens(&body);
        largest.fetch_max(tokens, Ordering::SeqCst);
        let system = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let last = last_user_text(&body);
        let reply = if tokens > WINDOW {
            Reply::Status(
                400,
                json!({"error": {"message": format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens."),
                    "type": "invalid_request_error", "param": "messages",
                    "code": "context_length_exceeded"}})
                .to_string(),
            )
        } else if system.starts_with("You compact") {
            Reply::Sse(sse_answer(
                "Summary: the person sent numbered turns of lorem ipsum; each was answered with dolor sit.",
                tokens,
            ))
        } else {
            let i: usize = last
                .strip_prefix("turn ")
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            Reply::Sse(sse_answer(&answer(i), tokens))
        };
        Box::pin(async move { reply })
    }))
}

#[test]
fn eight_growing_turns_fit_a_4000_token_window() {
    let largest = Arc::new(AtomicU64::new(0));
    let server = window_server(largest.clone());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    // The limit comes from the bundle's `session.context` (Amplifier's keys).
    let bundle = env.dir.path().join("bundle.md");
    std::fs::write(
        &bundle,
        "---\nbundle: {name: window, version: 0.1.0}\nsession:\n  orchestrator: {module: loop-streaming}\n  context:\n    module: context-simple\n    config: {max_tokens: 4000, compact_threshold: 0.8}\ntools: []\nagents: none\n---\n\nYou answer briefly.\n",
    )
    .unwrap();
    let first = env
        .cmd()
        .arg("--bundle")
        .arg(&bundle)
        .args(["run", "--output-format", "json", &prompt(1)])
        .output()
        .unwrap();
    let out: Value = serde_json::from_slice(&first.stdout).unwrap_or_else(|_| {
        panic!("{}", String::from_utf8_lossy(&first.stderr));
    });
    assert_eq!(out["status"], "success", "{out}");
    let id = out["session_id"].as_str().unwrap().to_string();
    for i in 2..=8 {
        let run = env
            .cmd()
            .args([
                "session",
                "resume",
                &id,
                &prompt(i),
                "--output-format",
                "json",
            ])
            .output()
            .unwrap();
        let out: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|_| {
            panic!("turn {i}: {}", String::from_utf8_lossy(&run.stderr));
        });
        assert_eq!(out["status"], "success", "turn {i}: {out}");
        assert!(
            out["response"]
                .as_str()
                .unwrap()
                .starts_with(&format!("answer {i}:")),
            "turn {i}: {out}"
        );
    }

    // No request was over the window (the server would have refused it).
    let requests = server.requests();
    assert!(
        largest.load(Ordering::SeqCst) <= WINDOW,
        "{}",
        largest.load(Ordering::SeqCst)
    );
    // The newest turns went verbatim: the last turn's request ends with prompt 8 and
    // holds turn 7 whole.
    let last = requests
        .iter()
        .rev()
        .find(|r| last_user_text(r).starts_with("turn 8:"))
        .unwrap();
    let texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(content_text)
        .collect();
    assert_eq!(texts.last().unwrap(), &prompt(8));
    assert!(
        texts.contains(&prompt(7)) && texts.contains(&answer(7)),
        "{texts:?}"
    );
    // ... and the oldest ones were not: a summary stands in for them.
    assert!(!texts.contains(&prompt(1)));
    assert!(
        texts.iter().any(|t| t.contains("Summary: the person sent")),
        "{texts:?}"
    );
    // The summary is the model's text: it goes as an assistant message, never with
    // the authority of the person's own words (issue 34 item 9), after arbor's own
    // note as the user turn that opens the request.
    let sent = last["messages"].as_array().unwrap();
    let at = sent
        .iter()
        .position(|m| content_text(m).contains("Summary: the person sent"))
        .unwrap();
    assert_eq!(sent[at]["role"], "assistant", "{:#}", sent[at]);
    assert_eq!(sent[at - 1]["role"], "user", "{:#}", sent[at - 1]);
    assert!(
        content_text(&sent[at - 1]).starts_with("[arbor: the earlier conversation was compacted"),
        "{:#}",
        sent[at - 1]
    );
    assert!(
        !sent
            .iter()
            .any(|m| m["role"] == "user" && content_text(m).contains("Summary:")),
        "a user message carries the model's summary: {texts:?}"
    );

    // The transcript holds all sixteen messages, as they were.
    let dir = env.sessions_dir().join(&id);
    let transcript = read_jsonl(&dir.join("transcript.jsonl"));
    assert_eq!(transcript.len(), 16);
    assert_eq!(content_text(&transcript[0]), prompt(1));
    assert_eq!(content_text(&transcript[15]), answer(8));
    // Turns are the person's eight messages: the summary is in none of them, nor does
    // it add one (turn counting, rewind and fork read these).
    let users: Vec<String> = transcript
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content_text)
        .collect();
    assert_eq!(users, (1..=8).map(prompt).collect::<Vec<_>>());
    assert_eq!(env.metadata(&id)["turn_count"], 8);
    // The compaction is recorded.
    let events = read_jsonl(&dir.join("events.jsonl"));
    let compactions: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "context:compaction")
        .collect();
    assert!(!compactions.is_empty());
    let c = &compactions.last().unwrap()["data"];
    assert_eq!(c["budget"], 4000);
    assert!(
        c["after_tokens"].as_u64() < c["before_tokens"].as_u64(),
        "{c}"
    );
    assert!(c["summary"].as_str().unwrap().starts_with("Summary:"));
    // It was made by an earlier process than turn 8's (turn 8's user message is
    // transcript index 14), yet turn 8's request carried its summary: the record was
    // read back from events.jsonl on resume.
    assert!(c["at_message"].as_u64().unwrap() <= 14, "{c}");

    // `session show --json` reports the context use.
    let show = env
        .cmd()
        .args(["session", "show", &id, "--json"])
        .output()
        .unwrap();
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(show["context"]["max_tokens"], 4000, "{show}");
    let tokens = show["context"]["tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= WINDOW, "{show}");
}

/// A single turn larger than the window fails with a clear error after one try, not
/// a loop of compactions.
#[test]
fn a_turn_too_large_for_the_window_fails_clearly() {
    let largest = Arc::new(AtomicU64::new(0));
    let server = window_server(largest);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    // The limit from the config file this time.
    env.append_config("context:\n  max_tokens: 4000\n");
    let huge = "x".repeat(40_000);
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", &huge])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("more than this session's context limit of 4000"),
        "{v}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// A limit set larger than the server's real window: the server's 400
/// `context_length_exceeded` makes arbor compact and send the request once more,
/// and every turn is still answered.
#[test]
fn an_overflow_the_estimate_missed_compacts_and_retries_once() {
    let largest = Arc::new(AtomicU64::new(0));
    let server = window_server(largest);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    env.append_config("context:\n  max_tokens: 9000\n");
    let bundle = env.dir.path().join("bundle.md");
    std::fs::write(
        &bundle,
        "---\nbundle: {name: window, version: 0.1.0}\ntools: []\nagents: none\n---\n\nYou answer briefly.\n",
    )
    .unwrap();
    let run = |args: &[&str]| -> Value {
        let out = env
            .cmd()
            .arg("--bundle")
            .arg(&bundle)
            .args(args)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
    };
    let first = run(&["run", "--output-format", "json", &prompt(1)]);
    let id = first["session_id"].as_str().unwrap().to_string();
    for i in 2..=8 {
        let out = run(&[
            "session",
            "resume",
            &id,
            &prompt(i),
            "--output-format",
            "json",
        ]);
        assert_eq!(out["status"], "success", "turn {i}: {out}");
    }
    let dir = env.sessions_dir().join(&id);
    let events = read_jsonl(&dir.join("events.jsonl"));
    let overflows = events
        .iter()
        .filter(|e| e["event"] == "context:compaction" && e["data"]["trigger"] == "overflow")
        .count();
    assert!(overflows >= 1, "no compaction after an overflow");
    let refused = server
        .requests()
        .iter()
        .filter(|r| request_tokens(r) > WINDOW)
        .count();
    assert_eq!(
        refused, overflows,
        "one refused request per overflow compaction"
    );
}
