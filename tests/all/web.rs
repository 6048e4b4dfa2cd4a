//! `web_fetch` (issue 29) through the real binary and a scripted loopback provider:
//! the built-in root fetches a loopback HTML page — allowed by config `web:
//! {allow_private_addresses: true}` and `--yes` — and the model gets its text as
//! Markdown without markup, scripts or navigation; without that config loopback is
//! refused, and without `--yes` the call is not run (it asks by default). `web_search`
//! is offered only with config `web: {search_url}`, GETs a loopback SearxNG-style JSON
//! endpoint under the same rules, and returns a short `{title, url, snippet}` list.

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
    let config = std::fs::read_to_string(&env.config).unwrap_or_default();
    let web = config
        .lines()
        .filter(|l| l.starts_with("web:"))
        .collect::<Vec<_>>()
        .join("\n");
    env.use_openai(&server.base_url, "sk-test");
    if !web.is_empty() {
        env.append_config(&format!("{web}\n"));
    }
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

const RESULTS: &str = r#"{"query": "arbor hooks", "results": [
{"title": "Arbor hooks", "url": "https://example.org/hooks", "content": "How hooks run.", "engine": "x"},
{"title": "No URL here"},
{"title": "Arbor tools", "url": "https://example.org/tools", "content": "Tools list."},
{"title": "Third", "url": "https://example.org/3", "content": "c"}]}"#;

/// Serves `RESULTS` as SearxNG-style JSON on a loopback port; the request lines it saw
/// go to the returned list.
fn search_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            log.lock()
                .unwrap()
                .push(head.lines().next().unwrap_or("").to_string());
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{RESULTS}",
                RESULTS.len()
            );
        }
    });
    (
        format!("http://{addr}/search?q={{query}}&format=json"),
        seen,
    )
}

/// Runs one turn whose model calls `web_search {query: "arbor hooks"}` under
/// `web_yaml`; returns the tool names the model was offered and the call's result.
fn search_result(web_yaml: &str, extra_args: &[&str]) -> (Vec<String>, String) {
    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "s1",
            "web_search",
            json!({"query": "arbor hooks"}),
        )])),
        Reply::Sse(sse_text("searched")),
    ]);
    env.use_openai(&server.base_url, "sk-test");
    env.append_config(web_yaml);
    let mut args = vec!["run", "--output-format", "json"];
    args.extend_from_slice(extra_args);
    args.push("search for it");
    let out = env.cmd().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    let offered = requests[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "s1")
        .map(content_text)
        .unwrap();
    (offered, result)
}

#[test]
fn web_search_queries_the_configured_endpoint_and_returns_a_short_list() {
    let (url, seen) = search_server();

    // No search_url: not offered (the call is an unknown tool).
    let (offered, _) = search_result("web: {allow_private_addresses: true}\n", &["--yes"]);
    assert!(offered.iter().any(|t| t == "web_fetch"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "web_search"), "{offered:?}");

    // A loopback endpoint is refused unless private addresses are allowed.
    let (offered, refused) =
        search_result(&format!("web: {{search_url: \"{url}\"}}\n"), &["--yes"]);
    assert!(offered.iter().any(|t| t == "web_search"), "{offered:?}");
    assert!(refused.contains("private or local address"), "{refused}");

    let web =
        format!("web: {{search_url: \"{url}\", allow_private_addresses: true, max_results: 2}}\n");
    // Asks by default: headless without --yes it does not run.
    let (_, denied) = search_result(&web, &[]);
    assert!(denied.contains("--yes"), "{denied}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing reached the endpoint yet"
    );

    let (_, found) = search_result(&web, &["--yes"]);
    let body: Value = serde_json::from_str(&found).unwrap_or_else(|_| panic!("{found}"));
    assert_eq!(body["query"], "arbor hooks");
    assert_eq!(body["count"], 2);
    assert_eq!(
        body["results"],
        json!([
            {"title": "Arbor hooks", "url": "https://example.org/hooks", "snippet": "How hooks run."},
            {"title": "Arbor tools", "url": "https://example.org/tools", "snippet": "Tools list."}
        ])
    );
    let lines = seen.lock().unwrap().clone();
    assert_eq!(
        lines,
        ["GET /search?q=arbor%20hooks&format=json HTTP/1.1"],
        "one GET with the query encoded"
    );
}

/// One turn calling `tool` with `input` under `config_yaml` (after the provider's);
/// the result the model got and the session's `approval:required` events.
fn one_call(tool: &str, input: Value, config_yaml: &str, yes: bool) -> (String, Vec<Value>) {
    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[("c1", tool, input)])),
        Reply::Sse(sse_text("done")),
    ]);
    env.use_openai(&server.base_url, "sk-test");
    env.append_config(config_yaml);
    let mut args = vec!["run", "--output-format", "json"];
    if yes {
        args.push("--yes");
    }
    args.push("go");
    let out = env.cmd().args(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let id = v["session_id"].as_str().unwrap();
    let events = read_jsonl(&env.sessions_dir().join(id).join("events.jsonl"));
    let asked = events
        .into_iter()
        .filter(|e| e["event"] == "approval:required")
        .collect();
    let result = server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .map(content_text)
        .unwrap();
    (result, asked)
}

/// Issue 39 item 4: the approval prompt shows the URL of a `web_fetch` and the query
/// of a `web_search`; a private or loopback address is refused before anyone is
/// asked, naming the setting that allows it.
#[test]
fn web_approvals_show_url_and_query_and_a_private_address_is_refused_before_asking() {
    let url = page_server();
    // No --yes: before the fix the call was asked (and denied headless).
    let (result, asked) = one_call("web_fetch", json!({"url": url}), "", false);
    assert!(asked.is_empty(), "asked about a loopback fetch: {asked:?}");
    assert!(
        result.contains("private or local address") && result.contains("allow_private_addresses"),
        "{result}"
    );

    let (_, asked) = one_call(
        "web_fetch",
        json!({"url": url}),
        "web: {allow_private_addresses: true}\n",
        true,
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["data"]["summary"],
        format!("web_fetch {url}"),
        "{asked:?}"
    );

    let (search_url, _) = search_server();
    let (_, asked) = one_call(
        "web_search",
        json!({"query": "arbor hooks"}),
        &format!("web: {{search_url: \"{search_url}\", allow_private_addresses: true}}\n"),
        true,
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0]["data"]["summary"], "web_search \"arbor hooks\"",
        "{asked:?}"
    );
}
