//! Secret redaction. CONTRACT: pub fn redact(value: &serde_json::Value) -> serde_json::Value

/// A copy of `value` with secret-looking keys (`api_key`, `*_token`, `secret`,
/// `password`, `authorization`, …) replaced by `"[REDACTED]"`.
pub fn redact(value: &serde_json::Value) -> serde_json::Value {
    let _ = value;
    todo!("session helper")
}
