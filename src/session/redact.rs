//! Secret redaction (SPEC §17: API keys never reach transcripts, metadata, events or
//! logs).
//!
//! Owns: deciding which JSON keys hold secrets and replacing their values, replacing
//! known secret values inside free text, and the process's register of secret values
//! with [`scrub`], which every error text passes through before it is shown, published,
//! stored or logged, and [`ScrubStream`] for text printed in pieces. Does not own: finding the credentials in the environment
//! (`routing::setup`) or deciding what gets written (`store`).
//!
//! The register is process-wide on purpose: a key must be scrubbed from every sink of
//! the process (the log writer and panic hook exist before any config is read, and a
//! `Display` impl takes no parameters), and it only ever grows. Provider clients
//! register the keys they attach; the runtime registers the config's and environment's
//! keys.
//!
//! Key names are compared case-insensitively with `-` and `_` ignored, so `api_key`,
//! `apiKey`, `API-KEY` and `x-api-key` are one family. A bare `key`, `model` or
//! `max_tokens` is never a secret; token *counts* (`input_tokens`, `*_tokens`) are kept.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use regex::Regex;
use serde_json::Value;

/// What every redacted value becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Literal secrets shorter than this are not registered or replaced in free text:
/// replacing them would mangle ordinary words.
pub const MIN_SECRET_LEN: usize = 8;

/// Exact key names (lower-case, `-`/`_` removed) whose values are secrets.
const SECRET_KEYS: &[&str] = &[
    "apikey",
    "xapikey",
    "xgoogapikey",
    "apitoken",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "authtoken",
    "bearertoken",
    "sessiontoken",
    "secret",
    "clientsecret",
    "password",
    "passwd",
    "authorization",
    "proxyauthorization",
    "secretkey",
    "privatekey",
    "accesskey",
    "secretaccesskey",
    "credentials",
    "cookie",
    "setcookie",
];

/// Suffixes (same normal form) that mark a secret: `openai_api_key`, `github_token`,
/// `webhook_secret`, `db_password`. `*_tokens` (counts) do not end in `token`.
const SECRET_SUFFIXES: &[&str] = &["apikey", "token", "secret", "password", "authorization"];

/// Names ending in `token` that are model vocabulary or limits, not credentials.
const NOT_SECRET: &[&str] = &[
    "maxtoken",
    "eostoken",
    "bostoken",
    "padtoken",
    "unktoken",
    "septoken",
    "clstoken",
    "masktoken",
    "stoptoken",
];

/// Whether a JSON object key names a secret (see the module doc for the rules).
pub fn is_secret_key(key: &str) -> bool {
    let norm: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    if NOT_SECRET.contains(&norm.as_str()) {
        return false;
    }
    SECRET_KEYS.contains(&norm.as_str()) || SECRET_SUFFIXES.iter().any(|s| norm.ends_with(s))
}

/// A copy of `value` with the values of secret-looking keys (`api_key`, `*_token`,
/// `secret`, `password`, `authorization`, `x-api-key`, …; see [`is_secret_key`])
/// replaced by `"[REDACTED]"`, at any depth.
///
/// Kept as they are: `null`, booleans and empty strings (nothing to hide), and values that are
/// exactly an environment reference like `"${ANTHROPIC_API_KEY}"` (no secret, and a
/// resumed session can resolve them again). Header lists in the
/// `[{"name": "Authorization", "value": "…"}]` shape have their `value` redacted.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let named_secret = ["name", "key"].iter().any(|k| {
                map.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(is_secret_key)
            });
            let out = map
                .iter()
                .map(|(k, v)| {
                    let secret = is_secret_key(k) || (named_secret && k == "value");
                    let v = if secret && !is_harmless(v) {
                        Value::String(REDACTED.to_string())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect();
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

fn is_harmless(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(_) => true,
        Value::String(s) => s.is_empty() || is_env_reference(s),
        _ => false,
    }
}

/// `${NAME}` with `NAME` made of ASCII letters, digits and `_`.
fn is_env_reference(s: &str) -> bool {
    s.strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// `text` with every occurrence of each non-empty literal in `secrets` replaced by
/// `"[REDACTED]"` (longer secrets first, so a secret containing another is replaced
/// whole). For events, log lines and tool output that may echo a credential.
pub fn redact_str(text: &str, secrets: &[&str]) -> String {
    let mut sorted: Vec<&str> = secrets.iter().copied().filter(|s| !s.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_string();
    for secret in sorted {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    out
}

/// A copy of `value` with [`redact_str`] applied to every string (keys untouched).
pub fn redact_strings(value: &Value, secrets: &[&str]) -> Value {
    match value {
        Value::String(s) => Value::String(redact_str(s, secrets)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_strings(v, secrets)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_strings(v, secrets)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The process's secret values (see the module doc), longest first.
static REGISTERED: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Credential echoes in error text: a secret-named header or field followed by `:` or
/// `=` (optionally quoted, optionally `Bearer`/`Basic`/`Token`), and a bare
/// `Bearer <token>`; values of at least 8 characters (shorter words are prose).
/// Group `keep` is kept, the value replaced.
static ECHO: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?P<keep>\b(?:proxy-authorization|authorization|x-api-key|x-goog-api-key|api[-_]key|access[-_]token)["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?|\bbearer\s+)[^\s"',;\[\]{}()<>]{8,}"#,
    )
    .ok()
});

/// Adds credential values (API keys, secret header values) to the process's register;
/// from now on [`scrub`] replaces them. Values are trimmed; empty ones, `[REDACTED]`,
/// `${VAR}` references and values shorter than [`MIN_SECRET_LEN`] are ignored.
pub fn register_secrets<S: AsRef<str>>(values: impl IntoIterator<Item = S>) {
    let fresh: Vec<String> = values
        .into_iter()
        .map(|v| v.as_ref().trim().to_string())
        .filter(|v| v.len() >= MIN_SECRET_LEN && v != REDACTED && !is_env_reference(v))
        .collect();
    if fresh.is_empty() {
        return;
    }
    let mut known = REGISTERED.write().unwrap_or_else(|p| p.into_inner());
    for value in fresh {
        if !known.contains(&value) {
            known.push(value);
        }
    }
    known.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with every registered secret (see [`register_secrets`]) replaced by
/// `[REDACTED]`; borrowed when none occurs. For tool output (SPEC §12: values of
/// configured keys are scrubbed from tool output before it is stored): only the
/// literal key values go, not [`scrub`]'s header patterns, so a source file that
/// mentions `api_key = "…"` reads (and can be edited) as it is.
pub fn scrub_secrets(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    let known = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    for secret in known.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

/// Scrubs registered secrets from text printed in pieces (a model's streamed answer),
/// where a key may be split across two pieces: [`ScrubStream::push`] returns what is
/// safe to print now — every whole secret replaced by `[REDACTED]`, and the end that
/// could be the start of a secret held back — and [`ScrubStream::finish`] the rest.
#[derive(Debug, Default)]
pub struct ScrubStream {
    held: String,
}

impl ScrubStream {
    /// Adds `piece`; returns the text that can be printed now (possibly empty).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let clean = scrub_secrets(&self.held).into_owned();
        let keep = secret_prefix_len(&clean);
        let ready = clean[..clean.len() - keep].to_string();
        self.held = clean[clean.len() - keep..].to_string();
        ready
    }

    /// What is still held back, scrubbed (the stream ended: a partial key is no key).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        scrub_secrets(&rest).into_owned()
    }
}

/// The length of the longest end of `text` (on a character boundary) that is the
/// start, but not the whole, of a registered secret.
fn secret_prefix_len(text: &str) -> usize {
    let known = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    let mut best = 0;
    for secret in known.iter() {
        let longest = secret.len().saturating_sub(1).min(text.len());
        for n in (best + 1..=longest).rev() {
            let start = text.len() - n;
            if text.is_char_boundary(start)
                && secret.as_bytes().starts_with(&text.as_bytes()[start..])
            {
                best = n;
                break;
            }
        }
    }
    best
}

/// `text` with every registered secret (see [`register_secrets`]) and every credential
/// echo (`Authorization: Bearer …`, `x-api-key: …`, `"api_key": "…"`, a bare
/// `Bearer …`) replaced by `[REDACTED]`. Borrowed when nothing was found.
///
/// For error text on its way to stdout, stderr, the TUI, events, the store or the log
/// (an API may quote the key or the header it came in). Not for model output, which
/// may quote such headers legitimately: the session writer removes literal secrets
/// from everything it writes.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = scrub_secrets(text);
    if let Some(echo) = ECHO.as_ref()
        && echo.is_match(&out)
    {
        out = Cow::Owned(
            echo.replace_all(&out, format!("${{keep}}{REDACTED}").as_str())
                .into_owned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nested_provider_config_and_headers_are_redacted() {
        let plan = json!({
            "session": {"orchestrator": "loop-basic"},
            "providers": [{
                "module": "provider-anthropic",
                "config": {
                    "api_key": "sk-ant-123",
                    "model": "claude-sonnet",
                    "max_tokens": 8192,
                    "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k", "Accept": "json"},
                    "extra_headers": [{"name": "authorization", "value": "Bearer z"}],
                }
            }],
            "tools": [{"module": "tool-x", "config": {"github_token": "ghp_1", "apiKey": "a"}}],
        });
        let out = redact(&plan);
        let cfg = &out["providers"][0]["config"];
        assert_eq!(cfg["api_key"], REDACTED);
        assert_eq!(cfg["model"], "claude-sonnet");
        assert_eq!(cfg["max_tokens"], 8192);
        assert_eq!(cfg["headers"]["Authorization"], REDACTED);
        assert_eq!(cfg["headers"]["X-Api-Key"], REDACTED);
        assert_eq!(cfg["headers"]["Accept"], "json");
        assert_eq!(cfg["extra_headers"][0]["value"], REDACTED);
        assert_eq!(cfg["extra_headers"][0]["name"], "authorization");
        assert_eq!(out["tools"][0]["config"]["github_token"], REDACTED);
        assert_eq!(out["tools"][0]["config"]["apiKey"], REDACTED);
        assert_eq!(out["session"], plan["session"]);
        assert!(!out.to_string().contains("sk-ant-123"));
    }

    #[test]
    fn counts_limits_and_plain_keys_survive() {
        for key in [
            "max_tokens",
            "input_tokens",
            "cache_read_tokens",
            "model",
            "key",
            "keywords",
            "tokenizer",
            "eos_token",
            "monkey",
            "sort_key",
        ] {
            assert!(!is_secret_key(key), "{key} treated as secret");
        }
        for key in [
            "api_key",
            "APIKEY",
            "api-key",
            "x-api-key",
            "token",
            "access_token",
            "client_secret",
            "password",
            "Authorization",
            "secret",
            "refresh-token",
            "openai_api_key",
        ] {
            assert!(is_secret_key(key), "{key} not treated as secret");
        }
    }

    #[test]
    fn env_references_null_and_non_secret_values_are_kept() {
        let out =
            redact(&json!({"api_key": "${OPENAI_API_KEY}", "token": null, "secret": {"a": 1}}));
        assert_eq!(out["api_key"], "${OPENAI_API_KEY}");
        assert_eq!(out["token"], Value::Null);
        assert_eq!(out["secret"], REDACTED);
    }

    #[test]
    fn literal_secrets_are_replaced_in_text() {
        let text = "key=sk-abc123 and again sk-abc123; part sk-abc";
        assert_eq!(
            redact_str(text, &["sk-abc", "sk-abc123", ""]),
            "key=[REDACTED] and again [REDACTED]; part [REDACTED]"
        );
        let v = redact_strings(&json!({"out": ["sk-abc123"]}), &["sk-abc123"]);
        assert_eq!(v, json!({"out": ["[REDACTED]"]}));
    }

    #[test]
    fn a_secret_split_across_streamed_pieces_is_scrubbed() {
        let key = "sk-stream-split-0123456789";
        register_secrets([key]);
        let mut stream = ScrubStream::default();
        let mut shown = String::new();
        for piece in [
            "the key is sk-str",
            "eam-split-01",
            "23456789 and sk-",
            "st",
            "op",
        ] {
            shown += &stream.push(piece);
        }
        shown += &stream.finish();
        assert_eq!(shown, "the key is [REDACTED] and sk-stop");
        // Text that cannot start a key is printed at once.
        assert_eq!(stream.push("plain words "), "plain words ");
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn registered_secrets_and_credential_echoes_are_scrubbed() {
        let key = "sk-scrub-test-0123456789";
        let text = format!("Incorrect API key provided: {key}.");
        assert_eq!(scrub(&text), text, "not registered yet");
        register_secrets([format!(" {key} "), "short".into(), REDACTED.into()]);
        assert_eq!(scrub(&text), "Incorrect API key provided: [REDACTED].");
        assert_eq!(scrub("short stays"), "short stays");
        for (echo, want) in [
            (
                "got Authorization: Bearer abc.DEF-123_x; retry",
                "got Authorization: Bearer [REDACTED]; retry",
            ),
            ("x-api-key=opaque9876 sent", "x-api-key=[REDACTED] sent"),
            (
                r#"{"api_key": "abcd-efgh"}"#,
                r#"{"api_key": "[REDACTED]"}"#,
            ),
            ("header 'bearer zz99yy88'", "header 'bearer [REDACTED]'"),
            (
                "PROXY-AUTHORIZATION: Basic dXNlcjpw",
                "PROXY-AUTHORIZATION: Basic [REDACTED]",
            ),
        ] {
            assert_eq!(scrub(echo), want);
        }
        for plain in [
            "Authorization header is missing",
            "the api_key: [REDACTED] was redacted",
            "missing bearer token",
            "Incorrect API key provided",
        ] {
            assert_eq!(scrub(plain), plain);
        }
    }
}
