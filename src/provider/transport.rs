//! HTTP plumbing shared by the OpenAI and Anthropic clients.
//!
//! Owns: the HTTP client settings and [`HttpPool`] (one client — one connection pool,
//! one read of the system certificates — per endpoint and settings, shared by every
//! provider built through the pool), transport failures → `Network`, sending a request
//! (non-2xx → `http_error`), `/models` lists, and the driver that turns an HTTP
//! response into the provider's `StreamEvent` stream through a per-API
//! `body::Assembler` (`body` reads the body). Does not own: request bodies or the meaning of stream events
//! (`openai_stream`, `anthropic_stream`), error bodies and headers (`http_error`), or
//! retrying (a later layer).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use super::body::{Assembler, BodyReader, MAX_EVENT_BYTES, TimeLimit, within};
use super::http_error::error_from_response;
use super::{ProviderError, ProviderErrorKind, StreamEvent};

/// The settings an [`HttpClient`] is built with; part of the key [`HttpPool`] shares
/// clients by (a setting that becomes configurable per provider entry goes here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ClientOptions {
    /// How long connecting (TCP + TLS) may take.
    pub connect_timeout: Duration,
    /// How long a response (a stream included) may stay silent.
    pub read_timeout: Duration,
}

impl Default for ClientOptions {
    /// 15 s to connect, 300 s of silence; no overall timeout (streams are long).
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(300),
        }
    }
}

/// The HTTP client both providers use: no overall timeout (streams are long), a
/// connect timeout, and an idle-read timeout so a stalled stream fails. A client that
/// cannot be created (no TLS backend) is kept as its error and reported per call.
/// Cloning shares the client (its connection pool).
#[derive(Debug, Clone)]
pub(crate) struct HttpClient(Result<reqwest::Client, ClientError>);

/// Why the HTTP client could not be built (reqwest's error chain, one line); kept and
/// reported by every call.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ClientError(String);

impl HttpClient {
    fn with_options(options: ClientOptions) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .build()
            .map_err(|e| ClientError(error_chain(&e)));
        Self(client)
    }

    fn client(&self, provider: &str) -> Result<&reqwest::Client, ProviderError> {
        self.0.as_ref().map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::NotConfigured,
                provider,
                format!("cannot create the HTTP client: {e}"),
            )
        })
    }

    /// `GET url`.
    pub(crate) fn get(
        &self,
        provider: &str,
        url: String,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(self.client(provider)?.get(url))
    }

    /// `POST url`.
    pub(crate) fn post(
        &self,
        provider: &str,
        url: String,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(self.client(provider)?.post(url))
    }
}

/// HTTP clients shared by endpoint: every provider built through one pool for the
/// same endpoint (its normalized base URL) and [`ClientOptions`] gets the same client,
/// so all sessions of a process share its connections (kept alive, HTTP/2
/// multiplexed) and the system certificates are read once per endpoint, not once per
/// session. Keys (API keys) are per-request headers, never part of the client, so
/// providers with different keys share a client too. One pool per runtime (the engine
/// owns it): no process-global state.
#[derive(Debug, Default)]
pub struct HttpPool {
    clients: Mutex<HashMap<(String, ClientOptions), HttpClient>>,
    handed_out: std::sync::atomic::AtomicUsize,
}

/// What an [`HttpPool`] did so far (a test hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Clients built: one per endpoint (and options) used.
    pub clients_built: usize,
    /// Clients handed to providers: one per provider built through the pool.
    pub clients_handed_out: usize,
}

impl HttpPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The client for `endpoint` (a base URL; a trailing `/` and surrounding blanks
    /// are ignored) with the default options, built on first use.
    pub(crate) fn client(&self, endpoint: &str) -> HttpClient {
        let key = (
            endpoint.trim().trim_end_matches('/').to_string(),
            ClientOptions::default(),
        );
        self.handed_out
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clients
            .entry(key)
            .or_insert_with_key(|(_, options)| HttpClient::with_options(*options))
            .clone()
    }

    /// How many clients the pool built and handed out (N sub-sessions on one endpoint:
    /// one built, N handed out).
    pub fn stats(&self) -> PoolStats {
        let clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        PoolStats {
            clients_built: clients.len(),
            clients_handed_out: self.handed_out.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// A transport failure (connect refused/reset, timeout, body cut) as a `Network` error.
pub(crate) fn network_error(provider: &str, context: &str, err: &reqwest::Error) -> ProviderError {
    let kind = if err.is_timeout() {
        "timed out"
    } else {
        "failed"
    };
    ProviderError::new(
        ProviderErrorKind::Network,
        provider,
        format!("{context} {kind}: {}", error_chain(err)),
    )
}

/// `err` and its sources joined with `: ` (reqwest's own message is terse).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// Drives one streamed call: awaits `send` (which yields a 2xx response or the
/// error), decodes the body as SSE and feeds `assembler`, yielding its deltas, then
/// `Completed`, or an error after the deltas already yielded. Dropping the stream
/// drops the response and closes the connection.
///
/// The body is read by a [`BodyReader`]: malformed pieces are skipped and counted
/// into the response's `malformed`; a response of nothing but malformed pieces, or
/// with one SSE event passing [`MAX_EVENT_BYTES`], fails (`Stream`). With `max_time`
/// (`ChatRequest::max_time`), a response not ended that long after the first poll
/// (when the request goes out) fails (`Stream`, naming the limit) after the deltas
/// that came.
pub(crate) fn drive<A: Assembler>(
    provider: String,
    send: BoxFuture<'static, Result<reqwest::Response, ProviderError>>,
    assembler: A,
    max_time: Option<Duration>,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    enum State<A> {
        Connect(
            BoxFuture<'static, Result<reqwest::Response, ProviderError>>,
            A,
        ),
        Read(Box<BodyReader<A>>),
        Ended,
    }
    let step = move |state: State<A>| {
        let provider = provider.clone();
        async move {
            match state {
                State::Ended => None,
                State::Connect(send, assembler) => {
                    let limit = max_time.map(|t| TimeLimit::starting_now(&provider, t));
                    match within(limit.as_ref(), send).await {
                        Err(e) | Ok(Err(e)) => Some((vec![Err(e)], State::Ended)),
                        Ok(Ok(response)) => {
                            let reading = provider.clone();
                            let body = response
                                .bytes_stream()
                                .map(move |chunk| {
                                    chunk.map_err(|e| {
                                        network_error(&reading, "reading the response stream", &e)
                                    })
                                })
                                .boxed();
                            let reader =
                                BodyReader::new(provider, body, assembler, MAX_EVENT_BYTES, limit);
                            Some((Vec::new(), State::Read(Box::new(reader))))
                        }
                    }
                }
                State::Read(mut reader) => {
                    let (batch, more) = reader.step().await;
                    Some((
                        batch,
                        if more {
                            State::Read(reader)
                        } else {
                            State::Ended
                        },
                    ))
                }
            }
        }
    };
    stream::unfold(State::Connect(send, assembler), step)
        .flat_map(stream::iter)
        .boxed()
}

/// Sends `request` and returns the response when it is 2xx, else the API's error.
pub(crate) async fn send_checked(
    provider: &str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ProviderError> {
    let response = request
        .send()
        .await
        .map_err(|e| network_error(provider, "sending the request", &e))?;
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(error_from_response(provider, response).await)
    }
}

/// Sends `request` with `body` (JSON bytes) as its body and `Content-Type:
/// application/json` unless a configured header set one — what
/// `RequestBuilder::json` does, without serializing a value here. Results as
/// [`send_checked`].
pub(crate) async fn send_json(
    provider: &str,
    request: reqwest::RequestBuilder,
    body: Vec<u8>,
) -> Result<reqwest::Response, ProviderError> {
    let (client, request) = request.build_split();
    let mut request = request.map_err(|e| network_error(provider, "sending the request", &e))?;
    request
        .headers_mut()
        .entry(CONTENT_TYPE)
        .or_insert_with(|| HeaderValue::from_static("application/json"));
    *request.body_mut() = Some(body.into());
    send_checked(
        provider,
        reqwest::RequestBuilder::from_parts(client, request),
    )
    .await
}

/// A request body that could not be encoded as JSON (`InvalidRequest`).
pub(crate) fn body_error(provider: &str, err: &serde_json::Error) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::InvalidRequest,
        provider,
        format!("cannot encode the request body: {err}"),
    )
}

/// `GET url` and the `data[].id` list of a `/models` response.
pub(crate) async fn fetch_model_ids(
    provider: &str,
    request: reqwest::RequestBuilder,
) -> Result<Vec<String>, ProviderError> {
    let response = send_checked(provider, request).await?;
    let json: Value = response
        .json()
        .await
        .map_err(|e| network_error(provider, "reading the model list", &e))?;
    let items = json
        .get("data")
        .or_else(|| json.get("models"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_builds_one_client_per_endpoint() {
        let pool = HttpPool::new();
        for url in [
            "http://127.0.0.1:8080/v1",
            " http://127.0.0.1:8080/v1/",
            "http://127.0.0.1:8080/v1",
        ] {
            assert!(pool.client(url).0.is_ok());
        }
        assert_eq!(
            pool.stats(),
            PoolStats {
                clients_built: 1,
                clients_handed_out: 3
            }
        );
        let _ = pool.client("https://api.anthropic.com/v1");
        assert_eq!(pool.stats().clients_built, 2);
    }
}
