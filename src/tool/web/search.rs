//! `web_search`, the second tool of Amplifier's `tool-web`: one GET of the search
//! endpoint the person configured (`web: {search_url}`), its JSON results returned as a
//! short list.
//!
//! Owns: `{query}` → `{query, results: [{title, url, snippet}], count}` (Amplifier's
//! output shape); the endpoint's URL with `{query}` replaced by the percent-encoded
//! query; reading the answer's results from `results` (SearxNG `format=json`:
//! `{title, url, content}`), `web.results` (Brave: `description`), `items` (Google
//! Programmable Search: `link`, `snippet`) or a top-level array — a result's URL from
//! `url`, `link` or `href`, its snippet from `content`, `snippet`, `description` or
//! `body`, cut to [`SNIPPET_CHARS`]; at most `web.max_results` results
//! ([`DEFAULT_RESULTS`], capped at [`MAX_RESULTS`]). Does not own: the address check
//! and the connection (`get_checked` in `tool::web`: a private or loopback endpoint
//! needs `web: {allow_private_addresses: true}` like `web_fetch`), or approvals
//! (`web_search` asks by default, `config::modules`).

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{FETCH_TIMEOUT, FetchError, WebConfig, get_checked};
use crate::tool::{Tool, ToolContext, ToolOutput, ToolSpec};

/// The search tool's name.
pub const SEARCH_TOOL: &str = "web_search";
/// Results returned when config gives no `max_results`: 5 (Amplifier's default).
pub const DEFAULT_RESULTS: usize = 5;
/// Results returned at most, whatever the config says.
pub const MAX_RESULTS: usize = 20;
/// Characters of a result's snippet kept.
pub const SNIPPET_CHARS: usize = 300;
/// Bytes of the endpoint's answer read at most: 2 MiB.
pub const MAX_ANSWER: usize = 2 << 20;

/// Why a search failed; its text is the result the model reads.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("web_search needs a non-empty 'query' string")]
    NoQuery,
    #[error("config web.search_url must contain `{{query}}` (it is '{0}')")]
    NoPlaceholder(String),
    #[error("config web.search_url: {0}")]
    Fetch(#[from] FetchError),
    #[error("the search endpoint answered HTTP {0}")]
    Status(u16),
    #[error("the search endpoint's answer is not JSON: {0}")]
    NotJson(String),
    #[error(
        "the search endpoint's answer has no results list (expected `results`, \
         `web.results`, `items` or a top-level array)"
    )]
    Shape,
}

/// The `web_search` tool; exists only when config sets `web.search_url`.
#[derive(Debug, Clone)]
pub struct WebSearch {
    config: WebConfig,
    template: String,
}

impl WebSearch {
    /// The tool under `config`; `None` when `config.search_url` is not set.
    pub fn new(config: &WebConfig) -> Option<Self> {
        Some(Self {
            template: config.search_url.clone()?,
            config: config.clone(),
        })
    }

    fn limit(&self) -> usize {
        self.config
            .max_results
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS)
    }
}

impl Tool for WebSearch {
    fn module(&self) -> &str {
        super::MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_TOOL.into(),
            description: format!(
                "Search the web. Returns up to {} results, each a title, URL and short \
                 snippet; read a page with web_fetch.",
                self.limit()
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Search query to execute"}
                },
                "required": ["query"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let this = self.clone();
        Box::pin(async move {
            let work = this.search(&input);
            let result = tokio::select! {
                r = tokio::time::timeout(FETCH_TIMEOUT, work) => {
                    r.unwrap_or(Err(SearchError::Fetch(FetchError::Timeout)))
                }
                () = ctx.cancel.cancelled() => {
                    return ToolOutput::error("cancelled: the turn was cancelled during the search");
                }
            };
            match result {
                Ok(body) => ToolOutput::ok(body.to_string()),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

impl WebSearch {
    async fn search(&self, input: &Value) -> Result<Value, SearchError> {
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or(SearchError::NoQuery)?;
        let url = search_url(&self.template, query)?;
        let response = get_checked(&url, &self.config).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(SearchError::Status(status.as_u16()));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| FetchError::Request(e.to_string()))?;
            let room = MAX_ANSWER - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() >= room {
                break;
            }
        }
        let answer: Value =
            serde_json::from_slice(&body).map_err(|e| SearchError::NotJson(e.to_string()))?;
        let results = results(&answer, self.limit())?;
        Ok(json!({"query": query, "count": results.len(), "results": results}))
    }
}

/// `template` with `{query}` replaced by `query`, percent-encoded (RFC 3986: all but
/// unreserved characters), as a URL.
pub fn search_url(template: &str, query: &str) -> Result<reqwest::Url, SearchError> {
    if !template.contains("{query}") {
        return Err(SearchError::NoPlaceholder(template.to_string()));
    }
    let mut encoded = String::new();
    for byte in query.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    let url = template.replace("{query}", &encoded);
    reqwest::Url::parse(&url)
        .map_err(|e| SearchError::Fetch(FetchError::BadUrl(url.clone(), e.to_string())))
}

/// The first `limit` results of `answer` as `{title, url, snippet}` (see the module
/// docs for the accepted shapes); results without a URL are skipped.
pub fn results(answer: &Value, limit: usize) -> Result<Vec<Value>, SearchError> {
    let list = answer
        .get("results")
        .or_else(|| answer.get("web").and_then(|w| w.get("results")))
        .or_else(|| answer.get("items"))
        .or(Some(answer))
        .and_then(Value::as_array)
        .ok_or(SearchError::Shape)?;
    let text = |item: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| item.get(*k).and_then(Value::as_str))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    Ok(list
        .iter()
        .filter_map(|item| {
            let url = text(item, &["url", "link", "href"]);
            (!url.is_empty()).then(|| {
                let snippet: String = text(item, &["content", "snippet", "description", "body"])
                    .chars()
                    .take(SNIPPET_CHARS)
                    .collect();
                json!({"title": text(item, &["title"]), "url": url, "snippet": snippet})
            })
        })
        .take(limit)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_percent_encoded_into_the_template() {
        let url = search_url(
            "https://s.example/search?q={query}&format=json",
            "rust & tokio/ü",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://s.example/search?q=rust%20%26%20tokio%2F%C3%BC&format=json"
        );
        assert!(matches!(
            search_url("https://s.example/search", "x"),
            Err(SearchError::NoPlaceholder(_))
        ));
    }

    #[test]
    fn searxng_brave_google_and_bare_arrays_are_read() {
        let searx = json!({"results": [{"title": "A", "url": "https://a", "content": "about a"}, {"title": "no url"}]});
        assert_eq!(
            results(&searx, 5).unwrap(),
            [json!({"title": "A", "url": "https://a", "snippet": "about a"})]
        );
        let brave =
            json!({"web": {"results": [{"title": "B", "url": "https://b", "description": "d"}]}});
        assert_eq!(results(&brave, 5).unwrap()[0]["snippet"], "d");
        let google = json!({"items": [{"title": "G", "link": "https://g", "snippet": "s"}]});
        assert_eq!(results(&google, 5).unwrap()[0]["url"], "https://g");
        let bare = json!([{"url": "https://1"}, {"url": "https://2"}, {"url": "https://3"}]);
        assert_eq!(results(&bare, 2).unwrap().len(), 2);
        assert!(matches!(
            results(&json!({"answer": 1}), 5),
            Err(SearchError::Shape)
        ));
        let long = json!([{"url": "https://l", "content": "x".repeat(1000)}]);
        assert_eq!(
            results(&long, 1).unwrap()[0]["snippet"]
                .as_str()
                .unwrap()
                .len(),
            SNIPPET_CHARS
        );
    }

    #[test]
    fn mounted_only_with_a_search_url() {
        assert!(WebSearch::new(&WebConfig::default()).is_none());
        let config = WebConfig {
            search_url: Some("http://127.0.0.1:1/?q={query}".into()),
            max_results: Some(100),
            ..WebConfig::default()
        };
        assert_eq!(WebSearch::new(&config).unwrap().limit(), MAX_RESULTS);
    }
}
