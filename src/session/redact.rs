//! Secret redaction (SPEC §17: API keys never reach transcripts, metadata, events or
//! logs).
//!
//! Owns: deciding which JSON keys hold secrets and replacing their values, and replacing
//! known secret values inside free text. Does not own: finding the credentials in the
//! environment (`routing::setup`) or deciding what gets written (`store`).
//!
//! Key names are compared case-insensitively with `-` and `_` ignored, so `api_key`,
//! `apiKey`, `API-KEY` and `x-api-key` are one family. A bare `key`, `model` or
//! `max_tokens` is never a secret; token *counts* (`input_tokens`, `*_tokens`) are kept.

use serde_json::Value;

/// What every redacted value becomes.
pub const REDACTED: &str = "[REDACTED]";

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
}
