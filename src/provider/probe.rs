//! A quick look for a local Ollama, for the "no provider configured" message.
//!
//! Owns: one blocking loopback probe of `GET /v1/models` at `OLLAMA_HOST` (default
//! `127.0.0.1:11434`), bounded by [`PROBE_BUDGET`] in total. Does not own: building a
//! provider from what it finds (the user adds `provider-ollama`; see `routing::setup`).
//!
//! Blocking on purpose: it runs once, only when nothing is configured, and a refused
//! loopback connection returns at once. Host names other than `localhost` are not
//! resolved (no DNS lookups from here).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Ollama's default port.
pub const OLLAMA_PORT: u16 = 11434;
/// The most time the probe may take.
pub const PROBE_BUDGET: Duration = Duration::from_millis(300);

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OllamaProbe {
    /// Something answered `GET /v1/models` at `addr`; `models` are the ids it listed
    /// (empty when the answer was not a model list).
    Found {
        addr: SocketAddr,
        models: Vec<String>,
    },
    /// Nothing accepted a connection at `addr` within the budget.
    NotRunning { addr: SocketAddr },
    /// `OLLAMA_HOST` is not an address the probe will try (named host, bad port).
    NotProbed { host: String },
}

impl std::fmt::Display for OllamaProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OllamaProbe::Found { addr, models } if models.is_empty() => {
                write!(f, "a server answers at {addr}, but listed no models")
            }
            OllamaProbe::Found { addr, models } => {
                write!(
                    f,
                    "a server answers at {addr} with models: {}",
                    models.join(", ")
                )
            }
            OllamaProbe::NotRunning { addr } => write!(f, "nothing is listening at {addr}"),
            OllamaProbe::NotProbed { host } => {
                write!(f, "not probed (OLLAMA_HOST={host} is not an IP address)")
            }
        }
    }
}

/// The address `OLLAMA_HOST` names (`host`, `host:port`, `http://host:port/…`;
/// `0.0.0.0` means loopback), or the default `127.0.0.1:11434`.
pub fn ollama_addr(env: &dyn Fn(&str) -> Option<String>) -> Result<SocketAddr, String> {
    let Some(raw) = env("OLLAMA_HOST").filter(|h| !h.trim().is_empty()) else {
        return Ok(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            OLLAMA_PORT,
        ));
    };
    let host = raw.trim();
    let host = host.split_once("://").map_or(host, |(_, rest)| rest);
    let host = host.split('/').next().unwrap_or(host);
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(':') || name.starts_with('[') => {
            (name, port.parse::<u16>().map_err(|_| raw.to_string())?)
        }
        _ => (host, OLLAMA_PORT),
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let ip = match name {
        "" | "localhost" | "0.0.0.0" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        other => other.parse().map_err(|_| raw.to_string())?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// Probes for a local Ollama (see the module docs). Takes at most [`PROBE_BUDGET`].
pub fn probe_ollama(env: &dyn Fn(&str) -> Option<String>) -> OllamaProbe {
    let addr = match ollama_addr(env) {
        Ok(addr) => addr,
        Err(host) => return OllamaProbe::NotProbed { host },
    };
    let start = Instant::now();
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, PROBE_BUDGET / 2) else {
        return OllamaProbe::NotRunning { addr };
    };
    let remaining = PROBE_BUDGET
        .saturating_sub(start.elapsed())
        .max(Duration::from_millis(10));
    let _ = stream.set_read_timeout(Some(remaining));
    let _ = stream.set_write_timeout(Some(remaining));
    let request =
        format!("GET /v1/models HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n");
    let mut response = Vec::new();
    if stream.write_all(request.as_bytes()).is_ok() {
        let mut buf = [0u8; 4096];
        while start.elapsed() < PROBE_BUDGET && response.len() < 1 << 20 {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&buf[..n]),
            }
        }
    }
    OllamaProbe::Found {
        addr,
        models: model_ids(&response),
    }
}

fn model_ids(response: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(response);
    let Some((_, body)) = text.split_once("\r\n\r\n") else {
        return Vec::new();
    };
    let Ok(json) = serde_json::from_str::<Value>(body.trim()) else {
        return Vec::new();
    };
    json.get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(host: Option<&str>) -> impl Fn(&str) -> Option<String> {
        let host = host.map(str::to_string);
        move |k: &str| (k == "OLLAMA_HOST").then(|| host.clone()).flatten()
    }

    #[test]
    fn ollama_host_forms() {
        let addr = |h: Option<&str>| ollama_addr(&env_with(h));
        assert_eq!(addr(None).unwrap().to_string(), "127.0.0.1:11434");
        assert_eq!(
            addr(Some("0.0.0.0")).unwrap().to_string(),
            "127.0.0.1:11434"
        );
        assert_eq!(
            addr(Some("127.0.0.1:9999")).unwrap().to_string(),
            "127.0.0.1:9999"
        );
        assert_eq!(
            addr(Some("http://localhost:8000/")).unwrap().to_string(),
            "127.0.0.1:8000"
        );
        assert_eq!(addr(Some("[::1]:7")).unwrap().to_string(), "[::1]:7");
        assert!(addr(Some("ollama.internal:11434")).is_err());
    }

    #[test]
    fn probe_reads_models_from_a_loopback_server_and_reports_a_closed_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let body = r#"{"object":"list","data":[{"id":"qwen3:latest"},{"id":"llama3.2"}]}"#;
            let _ = write!(
                s,
                "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{body}"
            );
        });
        let host = format!("127.0.0.1:{port}");
        let found = probe_ollama(&env_with(Some(&host)));
        server.join().unwrap();
        assert_eq!(
            found,
            OllamaProbe::Found {
                addr: host.parse().unwrap(),
                models: vec!["qwen3:latest".into(), "llama3.2".into()]
            }
        );
        // A port nobody listens on any more.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let probe = probe_ollama(&env_with(Some(&closed.to_string())));
        assert_eq!(probe, OllamaProbe::NotRunning { addr: closed });
        assert!(probe.to_string().contains("nothing is listening"));
    }
}
