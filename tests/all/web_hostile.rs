//! Issue 34 "a web page aborts arbor" and "`web_fetch` goes through `HTTP_PROXY`",
//! through the real binary and a scripted loopback provider (config `web:
//! {allow_private_addresses: true}`, `--yes`): hostile pages served on loopback —
//! deep nesting of several kinds, formatting elements the HTML algorithm reopens, a
//! flat page of a million alike elements — convert and the run completes; SIGTERM
//! during the conversion of a million nested `<div>` ends arbor within seconds; and
//! with `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` naming a loopback "proxy", the fetch
//! still connects to the page's own (checked) address and the proxy sees nothing.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// Reads one request head from `stream` (up to the blank line); its first line.
fn request_line(stream: &mut std::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Serves `body` as `text/html` on `ip` (a loopback address); returns the page's URL
/// and the number of responses written in full.
fn html_server(ip: &str, body: String) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(format!("{ip}:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let body = body.clone();
            let count = count.clone();
            std::thread::spawn(move || {
                request_line(&mut stream);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if stream.write_all(head.as_bytes()).is_ok()
                    && stream.write_all(body.as_bytes()).is_ok()
                {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    (format!("http://{addr}/page"), served)
}

/// A config for `base_url` (the scripted provider) allowing loopback fetches.
fn web_env(base_url: &str) -> TestEnv {
    let env = TestEnv::new();
    env.use_openai(base_url, "sk-web-hostile-test");
    env.append_config("web: {allow_private_addresses: true}\n");
    env
}

/// A provider replying with one `web_fetch` of `url`, then text.
fn fetch_server(url: &str) -> ScriptedServer {
    ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[("f1", "web_fetch", json!({"url": url}))])),
        Reply::Sse(sse_text("read it")),
    ])
}

/// Starts `arbor run --yes --output-format json` fetching `url` (stdout piped).
fn start_run(env: &TestEnv, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--yes", "--output-format", "json", "read the page"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Waits up to `limit` for `child`; kills it past that. Its exit status (`None`:
/// killed), stdout and stderr.
fn wait_for(mut child: Child, limit: Duration) -> (Option<std::process::ExitStatus>, String) {
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    (status, format!("{out}\n--- stderr:\n{err}"))
}

/// The `web_fetch` result the provider got back, if the run got that far.
fn tool_result(server: &ScriptedServer) -> Option<String> {
    let requests = server.requests();
    let messages = requests.get(1)?["messages"].as_array()?.clone();
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "f1")
        .map(content_text)
}

/// `n` times `open`, the text `inner`, `n` times `close`, in a body.
fn nest(n: usize, open: &str, inner: &str, close: &str) -> String {
    format!(
        "<!doctype html><html><body><h1>Top</h1>{}{inner}{}<p>after</p></body></html>",
        open.repeat(n),
        close.repeat(n)
    )
}

#[test]
fn hostile_pages_convert_and_the_run_completes() {
    let mut reopened = String::from("<!doctype html><html><body><h1>Top</h1>");
    for i in 0..100_000 {
        reopened.push_str(&format!("<div><b id={i}></div>x"));
    }
    reopened.push_str("<p>after</p></body></html>");
    let pages: Vec<(&str, String)> = vec![
        ("5,000 nested div", nest(5_000, "<div>", "deep", "</div>")),
        (
            "100,000 nested span",
            nest(100_000, "<span>", "deep", "</span>"),
        ),
        (
            "30,000 nested tables",
            nest(30_000, "<table><tr><td>", "deep", "</td></tr></table>"),
        ),
        ("200,000 unclosed li", nest(200_000, "<ul><li>", "deep", "")),
        ("100,000 reopened formatting elements", reopened),
        (
            "500,000 alike inline siblings",
            nest(500_000, "<b>x</b>", "", ""),
        ),
    ];
    let mut failed = Vec::new();
    for (name, page) in &pages {
        let (url, _) = html_server("127.0.0.1", page.clone());
        let server = fetch_server(&url);
        let env = web_env(&server.base_url);
        let start = Instant::now();
        let (status, output) = wait_for(start_run(&env, &[]), Duration::from_secs(45));
        let took = start.elapsed();
        let result = tool_result(&server).unwrap_or_default();
        let ok = status.is_some_and(|s| s.success())
            && serde_json::from_str::<Value>(&result).is_ok_and(|body| {
                let content = body["content"].as_str().unwrap_or("");
                content.starts_with("# Top") && !content.contains('<')
            });
        eprintln!("{name}: {status:?} in {took:?}");
        if !ok {
            let cut: String = output.chars().take(600).collect();
            let res: String = result.chars().take(300).collect();
            failed.push(format!("{name}: {status:?} after {took:?}: {res}\n{cut}"));
        }
    }
    eprintln!(
        "hostile pages that killed, hung or failed the run: {} of {}",
        failed.len(),
        pages.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn sigterm_during_a_huge_conversion_ends_arbor_promptly() {
    // A million `<div>` left open (5,000,000 bytes: under the 5 MiB read, so the
    // server's write completes when arbor has it all).
    let (url, served) = html_server("127.0.0.1", nest(1_000_000, "<div>", "deep", ""));
    let server = fetch_server(&url);
    let env = web_env(&server.base_url);
    let child = start_run(&env, &[]);
    let start = Instant::now();
    while served.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the page was never fetched"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The page is in arbor's hands: converting.
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    let (status, output) = wait_for(child, Duration::from_secs(20));
    let took = signalled.elapsed();
    eprintln!("SIGTERM during the conversion: ended {status:?} {took:?} later");
    assert!(status.is_some(), "arbor still ran 20 s after SIGTERM");
    assert!(took < Duration::from_secs(5), "{took:?}: {output}");
    let line = output.lines().next().unwrap_or("");
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {output}"));
    assert_eq!(v["status"], "cancelled", "{output}");
}

#[test]
fn web_fetch_connects_to_the_checked_address_not_a_proxy() {
    // The "proxy": answers every request with a page of its own and records it.
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_addr = proxy.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in proxy.incoming() {
            let Ok(mut stream) = stream else { continue };
            let line = request_line(&mut stream);
            log.lock().unwrap().push(line);
            let body = "<html><body><h1>Proxied</h1></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    // The page on another loopback address, so that NO_PROXY can exempt the
    // provider's (127.0.0.1) and not the page's.
    let (url, served) = html_server(
        "127.0.0.2",
        "<html><body><h1>Direct</h1></body></html>".into(),
    );
    let server = fetch_server(&url);
    let env = web_env(&server.base_url);
    let proxy_url = format!("http://{proxy_addr}");
    let vars: Vec<(&str, &str)> = [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .into_iter()
    .map(|k| (k, proxy_url.as_str()))
    .chain([("NO_PROXY", "127.0.0.1"), ("no_proxy", "127.0.0.1")])
    .collect();
    let (status, output) = wait_for(start_run(&env, &vars), Duration::from_secs(45));
    assert!(status.is_some_and(|s| s.success()), "{output}");
    let result = tool_result(&server).unwrap_or_default();
    let proxied = seen.lock().unwrap().clone();
    eprintln!(
        "requests the proxy got: {} ({proxied:?}); the page server: {}",
        proxied.len(),
        served.load(Ordering::SeqCst)
    );
    assert!(proxied.is_empty(), "{proxied:?}");
    assert!(result.contains("# Direct"), "{result}");
    assert_eq!(served.load(Ordering::SeqCst), 1);
}
