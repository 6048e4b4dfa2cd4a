//! `tool-web` (Amplifier's module of that name): `web_fetch`, one HTTP(S) GET whose
//! page comes back as readable Markdown, and `web_search` ([`search`]) when config
//! `web: {search_url}` names a search endpoint.
//!
//! Owns: the `web_fetch` tool — `{url, offset?, limit?}` → `{url, status,
//! content_type, content, truncated, total_bytes, offset}`: HTML turned into Markdown
//! ([`convert`]: htmd, bounded in depth, size and time, on a thread of its own and
//! cancelled with the call; scripts, styles, navigation, headers, footers, forms and
//! embeds dropped),
//! other text as it came, binary content refused; at most [`MAX_DOWNLOAD`] bytes read
//! and [`FETCH_TIMEOUT`] for the whole fetch; `limit` characters returned (default
//! [`DEFAULT_LIMIT`]) from `offset`. Redirects are followed by hand (at most
//! [`MAX_REDIRECTS`]) so every hop is checked: a host that resolves to a private,
//! loopback, link-local or otherwise non-public address is refused unless config
//! `web: {allow_private_addresses: true}` ([`WebConfig`]), and the connection goes to
//! the address that was checked (no second DNS answer, and no proxy from
//! `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`). The same check runs before a call is asked
//! about ([`Tool::refuse_before_asking`]), so nobody is asked to approve a fetch that
//! would be refused. Does not own: whether a call
//! may run (approvals: `web_fetch` and `web_search` ask by default, `config::modules`).

pub mod convert;
mod limit;
pub mod search;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput, ToolSpec};
use crate::config::ArborConfig;

/// The module id.
pub const MODULE: &str = "tool-web";
/// The fetch tool's name.
pub const FETCH_TOOL: &str = "web_fetch";
/// Bytes of a response body read at most (the rest is not downloaded): 5 MiB.
pub const MAX_DOWNLOAD: usize = 5 << 20;
/// How long one fetch (every redirect included) may take: 30 s.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of content returned when the call gives no `limit`: 200,000 (as
/// Amplifier's `tool-web`).
pub const DEFAULT_LIMIT: usize = 200_000;
/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// Config `web:` of the user's `config.yaml` (never an agent's: the choice to reach
/// private addresses, and which search endpoint to query, is the person's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebConfig {
    /// Fetch hosts that resolve to private, loopback or link-local addresses.
    pub allow_private_addresses: bool,
    /// `search_url`: the http(s) URL `web_search` GETs, `{query}` replaced by the
    /// percent-encoded query (`https://searx.example/search?q={query}&format=json`).
    /// `None`: `web_search` is not mounted.
    pub search_url: Option<String>,
    /// `max_results`: results `web_search` returns at most (default
    /// [`search::DEFAULT_RESULTS`], at most [`search::MAX_RESULTS`]).
    pub max_results: Option<usize>,
}

impl WebConfig {
    /// `web:` of `config` (absent or malformed keys: the defaults).
    pub fn from_config(config: &ArborConfig) -> Self {
        let web = config.extra.get("web");
        Self {
            allow_private_addresses: web
                .and_then(|w| w.get("allow_private_addresses"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            search_url: web
                .and_then(|w| w.get("search_url"))
                .and_then(Value::as_str)
                .map(str::to_string),
            max_results: web
                .and_then(|w| w.get("max_results"))
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok()),
        }
    }
}

/// Why a fetch failed; its text is the result the model reads.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("web_fetch needs a 'url' string")]
    NoUrl,
    #[error("'{0}' is not a valid URL: {1}")]
    BadUrl(String, String),
    #[error("only http and https URLs can be fetched, not '{0}'")]
    Scheme(String),
    #[error("cannot resolve '{0}': {1}")]
    Resolve(String, String),
    #[error(
        "'{host}' resolves to {addr}, a private or local address; refused (set config \
         `web: {{allow_private_addresses: true}}` to allow it)"
    )]
    Private { host: String, addr: IpAddr },
    #[error("the request failed: {0}")]
    Request(String),
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("timed out after {} s", FETCH_TIMEOUT.as_secs())]
    Timeout,
    #[error(
        "the response is binary ({0}), which cannot be returned as text; this call did not \
         download it"
    )]
    Binary(String),
    #[error("cannot convert the page: {0}")]
    Convert(String),
}

/// The module's tools under `config`: `web_fetch`, and `web_search` when
/// `config.search_url` is set.
pub fn tools(config: &WebConfig) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WebFetch {
        config: config.clone(),
    })];
    if let Some(search) = search::WebSearch::new(config) {
        tools.push(Arc::new(search));
    }
    tools
}

/// The `web_fetch` tool.
#[derive(Debug, Clone, Default)]
pub struct WebFetch {
    config: WebConfig,
}

impl Tool for WebFetch {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: FETCH_TOOL.into(),
            description: format!(
                "Fetch content from a web URL (http or https, GET). HTML pages come back as \
                 readable Markdown (scripts, styles and navigation dropped); other text as \
                 is; binary content is refused. At most {DEFAULT_LIMIT} characters by \
                 default: the result says `truncated` and `total_bytes`; page further with \
                 `offset` / `limit` (characters)."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The http(s) URL to fetch"},
                    "offset": {"type": "integer", "minimum": 0, "description": "First character of the content to return (default 0)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Characters to return at most (default 200000)"}
                },
                "required": ["url"]
            }),
        }
    }

    fn refuse_before_asking(&self, input: &Value) -> BoxFuture<'static, Option<String>> {
        let (input, config) = (input.clone(), self.config.clone());
        Box::pin(async move { refusal(&input, &config).await })
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let config = self.config.clone();
        Box::pin(async move {
            let fetch = fetch(&input, &config);
            let result = tokio::select! {
                r = tokio::time::timeout(FETCH_TIMEOUT, fetch) => r.unwrap_or(Err(FetchError::Timeout)),
                () = ctx.cancel.cancelled() => {
                    return ToolOutput::error("cancelled: the turn was cancelled during the fetch");
                }
            };
            match result {
                Ok(body) => ToolOutput::ok(body.to_string()),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

async fn fetch(input: &Value, config: &WebConfig) -> Result<Value, FetchError> {
    let url = input
        .get("url")
        .and_then(Value::as_str)
        .ok_or(FetchError::NoUrl)?;
    let offset = input.get("offset").and_then(Value::as_u64).unwrap_or(0);
    let limit = input
        .get("limit")
        .and_then(Value::as_u64)
        .filter(|l| *l > 0)
        .unwrap_or(DEFAULT_LIMIT as u64);
    let mut current =
        reqwest::Url::parse(url).map_err(|e| FetchError::BadUrl(url.to_string(), e.to_string()))?;
    for _ in 0..=MAX_REDIRECTS {
        let response = get_checked(&current, config).await?;
        if response.status().is_redirection()
            && let Some(location) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
        {
            current = current
                .join(location)
                .map_err(|e| FetchError::BadUrl(location.to_string(), e.to_string()))?;
            continue;
        }
        return read(response, &current, offset, limit).await;
    }
    Err(FetchError::TooManyRedirects)
}

/// How long [`WebFetch`]'s check before asking waits for a host name to resolve; a
/// slower one is asked about and checked again when the call runs.
const PRECHECK_RESOLVE: Duration = Duration::from_secs(3);

/// Why a `web_fetch` of `input` would be refused whatever the person answered — not an
/// http(s) URL, or a host that resolves to a private, loopback or link-local address
/// while config `web: {allow_private_addresses}` is off — checked before anyone is
/// asked (issue 39 item 4). `None` when it may run, or when the host does not resolve
/// within [`PRECHECK_RESOLVE`] (the call reports that itself).
async fn refusal(input: &Value, config: &WebConfig) -> Option<String> {
    let url = input.get("url").and_then(Value::as_str)?;
    let url = match reqwest::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Some(FetchError::BadUrl(url.to_string(), e.to_string()).to_string()),
    };
    match tokio::time::timeout(PRECHECK_RESOLVE, checked_addresses(&url, config)).await {
        Ok(Err(
            e @ (FetchError::Scheme(_) | FetchError::Private { .. } | FetchError::BadUrl(..)),
        )) => Some(e.to_string()),
        _ => None,
    }
}

/// The host of `url` (as written, and bare of IPv6 brackets) and every address it
/// resolves to, each checked: only http(s), and no private or local address unless
/// `config` allows them.
async fn checked_addresses(
    url: &reqwest::Url,
    config: &WebConfig,
) -> Result<(String, Vec<SocketAddr>), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme(url.scheme().to_string()));
    }
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::BadUrl(url.to_string(), "no host".into()))?
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((bare.as_str(), port))
        .await
        .map_err(|e| FetchError::Resolve(host.clone(), e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(FetchError::Resolve(host, "no addresses".into()));
    }
    if !config.allow_private_addresses
        && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
    {
        return Err(FetchError::Private {
            host,
            addr: bad.ip(),
        });
    }
    Ok((bare, addrs))
}

/// GETs `url` after checking every address its host resolves to, connecting to the
/// first checked address; redirects are returned, not followed.
pub(super) async fn get_checked(
    url: &reqwest::Url,
    config: &WebConfig,
) -> Result<reqwest::Response, FetchError> {
    let (bare, addrs) = checked_addresses(url, config).await?;
    let first = *addrs
        .first()
        .ok_or_else(|| FetchError::Resolve(bare.clone(), "no addresses".into()))?;
    // No proxy: `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` would send the request to
    // another address than the one checked (issue 34).
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .resolve(&bare, first)
        .user_agent(concat!("arbor/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        .build()
        .map_err(|e| FetchError::Request(e.to_string()))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| FetchError::Request(e.to_string()))
}

/// Whether `ip` is a public unicast address (not loopback, private, link-local,
/// unspecified, multicast, broadcast, documentation, CGNAT or unique-local).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80)
        }
    }
}

async fn read(
    response: reqwest::Response,
    url: &reqwest::Url,
    offset: u64,
    limit: u64,
) -> Result<Value, FetchError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let kind = content_type.to_ascii_lowercase();
    let textual = kind.is_empty()
        || kind.starts_with("text/")
        || kind.contains("json")
        || kind.contains("xml")
        || kind.contains("javascript");
    if !textual {
        return Err(FetchError::Binary(content_type));
    }
    let mut body = Vec::new();
    let mut cut = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| FetchError::Request(e.to_string()))?;
        let room = MAX_DOWNLOAD - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let total_bytes = body.len();
    let text = String::from_utf8_lossy(&body).into_owned();
    let html = kind.contains("html") || (kind.is_empty() && looks_like_html(&text));
    let content = if html {
        convert::spawn(text)
            .await
            .map_err(|e| FetchError::Convert(e.to_string()))?
    } else {
        text
    };
    let chars = content.chars().count() as u64;
    let start = usize::try_from(offset.min(chars)).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    let page: String = content.chars().skip(start).take(take).collect();
    let truncated = cut || (start as u64).saturating_add(page.chars().count() as u64) < chars;
    Ok(json!({
        "url": url.as_str(),
        "status": status,
        "content_type": content_type,
        "content": page,
        "truncated": truncated,
        "total_bytes": total_bytes,
        "offset": start,
    }))
}

fn looks_like_html(text: &str) -> bool {
    let head: String = text
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

/// `html` as Markdown: scripts, styles, navigation, headers, footers, forms and
/// embedded content dropped; bounded as [`convert::convert`] is, on the calling
/// thread (which needs a stack of [`convert::STACK_SIZE`]; `web_fetch` uses
/// [`convert::spawn`]).
pub fn to_markdown(html: &str) -> Result<String, FetchError> {
    convert::convert(html, &convert::Budget::new()).map_err(|e| FetchError::Convert(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_navigation() {
        let md = to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><nav><a href='/'>Home</a></nav>\
             <h1>Hello</h1><p>Some <b>bold</b> text.</p><script>alert(1)</script></body></html>",
        )
        .unwrap();
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(
            !md.contains("alert") && !md.contains("Home") && !md.contains("p{}"),
            "{md}"
        );
    }

    #[test]
    fn only_public_addresses_pass() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "0.0.0.0",
            "100.64.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn loopback_is_refused_by_default_and_other_schemes_always() {
        let err = fetch(
            &json!({"url": "http://127.0.0.1:9/x"}),
            &WebConfig::default(),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("allow_private_addresses"), "{err}");
        let err = fetch(
            &json!({"url": "file:///etc/passwd"}),
            &WebConfig {
                allow_private_addresses: true,
                ..WebConfig::default()
            },
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("only http and https"), "{err}");
    }
}
