//! Quick looks for local model servers on loopback: a local Ollama (for the "no
//! provider configured" message) and, with nothing configured, every known local
//! server ([`discover_local`]).
//!
//! Owns: one blocking loopback probe of `GET /v1/models` at an address bounded by
//! [`PROBE_BUDGET`] ([`probe_at`]); the Ollama address from `OLLAMA_HOST` (default
//! `127.0.0.1:11434`); the known local servers — Ollama (11434), LM Studio (1234) and
//! llama.cpp's `llama-server` (8080) — probed at once ([`local_candidates`],
//! [`discover_local`]). Does not own: building a provider from what it finds
//! (`routing::setup::local_providers`).
//!
//! Where to look: `ARBOR_LOCAL_SERVERS` (`kind=host:port,…` with kinds `ollama`,
//! `lmstudio`, `llamacpp`; empty: look nowhere) replaces the defaults; without it
//! Ollama's address follows `OLLAMA_HOST`. Tests point it at stub servers.
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

/// `OLLAMA_HOST` names no IP address and port (its value, as set): arbor probes
/// addresses only, never resolving a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("OLLAMA_HOST={0} is not an IP address")]
pub struct NotAnAddress(pub String);

/// The address `OLLAMA_HOST` names (`host`, `host:port`, `http://host:port/…`;
/// `0.0.0.0` means loopback), or the default `127.0.0.1:11434`; [`NotAnAddress`] for
/// a host name or a bad port.
pub fn ollama_addr(env: &dyn Fn(&str) -> Option<String>) -> Result<SocketAddr, NotAnAddress> {
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
            let port = port.parse::<u16>().map_err(|_| NotAnAddress(raw.clone()))?;
            (name, port)
        }
        _ => (host, OLLAMA_PORT),
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let ip = match name {
        "" | "localhost" | "0.0.0.0" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        other => other.parse().map_err(|_| NotAnAddress(raw.clone()))?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// Probes for a local Ollama (see the module docs). Takes at most [`PROBE_BUDGET`].
pub fn probe_ollama(env: &dyn Fn(&str) -> Option<String>) -> OllamaProbe {
    match ollama_addr(env) {
        Ok(addr) => probe_at(addr),
        Err(NotAnAddress(host)) => OllamaProbe::NotProbed { host },
    }
}

/// A kind of local model server arbor knows by its default port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalKind {
    /// Ollama, `127.0.0.1:11434` (or `OLLAMA_HOST`).
    Ollama,
    /// LM Studio's server, `127.0.0.1:1234`.
    LmStudio,
    /// llama.cpp's `llama-server`, `127.0.0.1:8080`.
    LlamaCpp,
}

impl LocalKind {
    /// Every kind, in the order a single choice prefers them.
    pub const ALL: [LocalKind; 3] = [LocalKind::Ollama, LocalKind::LmStudio, LocalKind::LlamaCpp];

    /// The name people know it by (`LM Studio`).
    pub fn title(self) -> &'static str {
        match self {
            LocalKind::Ollama => "Ollama",
            LocalKind::LmStudio => "LM Studio",
            LocalKind::LlamaCpp => "llama.cpp",
        }
    }

    /// Its key in `ARBOR_LOCAL_SERVERS` and its provider id (`lmstudio`).
    pub fn key(self) -> &'static str {
        match self {
            LocalKind::Ollama => "ollama",
            LocalKind::LmStudio => "lmstudio",
            LocalKind::LlamaCpp => "llamacpp",
        }
    }

    /// Its default loopback port.
    pub fn default_port(self) -> u16 {
        match self {
            LocalKind::Ollama => OLLAMA_PORT,
            LocalKind::LmStudio => 1234,
            LocalKind::LlamaCpp => 8080,
        }
    }
}

/// A local server that answered: its kind, address and listed models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    pub kind: LocalKind,
    pub addr: SocketAddr,
    pub models: Vec<String>,
}

/// Where to look for local servers (see the module docs). Entries of
/// `ARBOR_LOCAL_SERVERS` that do not read as `kind=ip:port` (`localhost` allowed) are
/// skipped with a log line.
pub fn local_candidates(env: &dyn Fn(&str) -> Option<String>) -> Vec<(LocalKind, SocketAddr)> {
    let loopback = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let Some(list) = env("ARBOR_LOCAL_SERVERS") else {
        return LocalKind::ALL
            .iter()
            .filter_map(|&kind| match kind {
                LocalKind::Ollama => ollama_addr(env).ok().map(|a| (kind, a)),
                _ => Some((kind, loopback(kind.default_port()))),
            })
            .collect();
    };
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .filter_map(|item| {
            let parsed = item.split_once('=').and_then(|(key, addr)| {
                let kind = LocalKind::ALL.into_iter().find(|k| k.key() == key.trim())?;
                let addr = addr.trim().replace("localhost", "127.0.0.1");
                Some((kind, addr.parse().ok()?))
            });
            if parsed.is_none() {
                tracing::warn!("ARBOR_LOCAL_SERVERS: cannot read '{item}' (kind=ip:port)");
            }
            parsed
        })
        .collect()
}

/// Probes every candidate at once ([`probe_at`] each, so at most [`PROBE_BUDGET`] in
/// all) and returns those that answered, in candidate order.
pub fn discover_local(candidates: &[(LocalKind, SocketAddr)]) -> Vec<LocalServer> {
    std::thread::scope(|scope| {
        let probes: Vec<_> = candidates
            .iter()
            .map(|&(kind, addr)| scope.spawn(move || (kind, probe_at(addr))))
            .collect();
        probes
            .into_iter()
            .filter_map(|p| p.join().ok())
            .filter_map(|(kind, probe)| match probe {
                OllamaProbe::Found { addr, models } => Some(LocalServer { kind, addr, models }),
                _ => None,
            })
            .collect()
    })
}

/// Whether something answers `GET /v1/models` at `addr` (and which model ids it
/// lists); at most [`PROBE_BUDGET`].
pub fn probe_at(addr: SocketAddr) -> OllamaProbe {
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

    /// A stub that answers one `GET /v1/models` with `model`; its address.
    fn stub(model: &'static str) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let body = format!(r#"{{"object":"list","data":[{{"id":"{model}"}}]}}"#);
            let _ = write!(s, "HTTP/1.0 200 OK\r\n\r\n{body}");
        });
        (addr, server)
    }

    fn closed_port() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn local_servers_are_probed_where_the_environment_says() {
        let (lm, a) = stub("qwen2.5-7b");
        let (llama, b) = stub("gguf-model");
        let list = format!(
            "ollama={},lmstudio={lm},llamacpp={llama},bogus",
            closed_port()
        );
        let env = move |k: &str| (k == "ARBOR_LOCAL_SERVERS").then(|| list.clone());
        let candidates = local_candidates(&env);
        assert_eq!(candidates.len(), 3, "{candidates:?}");
        let found = discover_local(&candidates);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(
            found,
            [
                LocalServer {
                    kind: LocalKind::LmStudio,
                    addr: lm,
                    models: vec!["qwen2.5-7b".into()]
                },
                LocalServer {
                    kind: LocalKind::LlamaCpp,
                    addr: llama,
                    models: vec!["gguf-model".into()]
                },
            ]
        );
        // Empty: look nowhere. Unset: the three default ports (Ollama's from OLLAMA_HOST).
        assert!(
            local_candidates(&|k: &str| (k == "ARBOR_LOCAL_SERVERS").then(String::new)).is_empty()
        );
        let defaults = local_candidates(&env_with(Some("127.0.0.1:9999")));
        let shown: Vec<String> = defaults
            .iter()
            .map(|(k, a)| format!("{}={a}", k.key()))
            .collect();
        assert_eq!(
            shown,
            [
                "ollama=127.0.0.1:9999",
                "lmstudio=127.0.0.1:1234",
                "llamacpp=127.0.0.1:8080"
            ]
        );
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
