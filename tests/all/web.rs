//! `web_fetch` (issue 29) through the real binary and a scripted loopback provider:
//! the built-in root fetches a loopback HTML page — allowed by config `web:
//! {allow_private_addresses: true}` and `--yes` — and the model gets its text as
//! Markdown without markup, scripts or navigation; without that config loopback is
//! refused, and without `--yes` the call is not run (it asks by default).

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::{Value, json};
use support::*;

const PAGE: &str = "<!doctype html><html><head><title>Notes</title>\
<style>body{color:red}</style><script>var secret = 'tracking';</script></head>\
<body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>\
<h1>Release notes</h1><p>Version <b>2.0</b> adds <a href='https://example.org/x'>hooks</a>.</p>\
<ul><li>fast</li><li>safe</li></ul></body></html>";

/// Serves `PAGE` as `text/html` to every request on a loopback port.
fn page_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                PAGE.len()
            );
        }
    });
    format!("http://{addr}/notes")
}

fn fetch_result(env: &TestEnv, url: &str, extra_args: &[&str]) -> String {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[("f1", "web_fetch", json!({"url": url}))])),
        Reply::Sse(sse_text("read it")),
    ]);
    let mut config = std::fs::read_to_string(&env.config).unwrap_or_default();
    let web = config
        .lines()
        .filter(|l| l.starts_with("web:"))
        .collect::<Vec<_>>()
        .join("\n");
    env.use_openai(&server.base_url, "sk-test");
    config = std::fs::read_to_string(&env.config).unwrap();
    if !web.is_empty() {
        config.push_str(&format!("{web}\n"));
    }
    std::fs::write(&env.config, config).unwrap();
    let mut args = vec!["run", "--output-format", "json"];
    args.extend_from_slice(extra_args);
    args.push("read the notes");
    let out = env.cmd().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "f1")
        .map(content_text)
        .unwrap()
}

#[test]
fn web_fetch_of_a_loopback_page_returns_its_text_without_markup() {
    let url = page_server();
    let env = TestEnv::new();

    // Loopback is refused by default.
    let refused = fetch_result(&env, &url, &["--yes"]);
    assert!(refused.contains("private or local address"), "{refused}");

    std::fs::write(&env.config, "web: {allow_private_addresses: true}\n").unwrap();
    // Asks by default: headless without --yes it does not run.
    let denied = fetch_result(&env, &url, &[]);
    assert!(denied.contains("--yes"), "{denied}");

    let fetched = fetch_result(&env, &url, &["--yes"]);
    let body: Value = serde_json::from_str(&fetched).unwrap();
    let content = body["content"].as_str().unwrap();
    assert!(content.contains("# Release notes"), "{content}");
    assert!(
        content.contains("Version **2.0** adds [hooks](https://example.org/x)."),
        "{content}"
    );
    assert!(
        content.contains("fast") && content.contains("safe"),
        "{content}"
    );
    for markup in ["<", "tracking", "color:red", "About"] {
        assert!(!content.contains(markup), "{markup} in {content}");
    }
    assert_eq!(body["status"], 200);
    assert_eq!(body["truncated"], false);
    assert!(
        body["content_type"]
            .as_str()
            .unwrap()
            .starts_with("text/html")
    );
}
