//! The `response:` section of `config.yaml`: how large and how long one model
//! response may be.
//!
//! ```yaml
//! response:
//!   max_bytes: 8388608   # bytes of text (answer, thinking, tool-call arguments); 8 MiB
//!   max_time: 600        # seconds from sending the request to the response's end
//! ```
//!
//! Owns: reading and checking the section and its defaults. Does not own: enforcing
//! the limits on a stream (`engine::stream`) or the store's own caps
//! (`session::store`).

use std::time::Duration;

use serde_json::Value;

use super::ArborConfig;

/// The config key of the section.
pub const RESPONSE_KEY: &str = "response";
/// [`ResponseLimits::max_bytes`] when the config sets none: 8 MiB.
pub const DEFAULT_MAX_BYTES: usize = 8 << 20;
/// [`ResponseLimits::max_time`] when the config sets none: 600 s.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(600);
/// The largest `max_bytes` accepted: 32 MiB, half the store's cap for one transcript
/// line (`session::store::MAX_LINE_BYTES`), so a response kept whole (its text
/// JSON-escaped) can still be read back.
pub const MAX_MAX_BYTES: usize = 32 << 20;

/// Limits on one model response (one attempt of one model call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    /// Most bytes (UTF-8) of streamed text one response may carry: answer text,
    /// thinking and tool-call arguments together (`response.max_bytes`). A response
    /// passing it is cut there: the call fails with an error naming the limit, and the
    /// answer text that came is kept.
    pub max_bytes: usize,
    /// Longest time one response may take, from sending the request to its last event
    /// (`response.max_time`, seconds in the file). A stream still going then is cut
    /// with an error naming the limit, whether or not it was idle.
    pub max_time: Duration,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            max_time: DEFAULT_MAX_TIME,
        }
    }
}

impl ResponseLimits {
    /// The limits of `config.extra["response"]` plus one warning per value that could
    /// not be used (it keeps its default): `response` not a mapping, `max_bytes` not
    /// an integer from 1 to [`MAX_MAX_BYTES`] (a larger one is lowered to it),
    /// `max_time` not a finite number of seconds above 0.
    pub fn from_config(config: &ArborConfig) -> (Self, Vec<String>) {
        let mut limits = Self::default();
        let mut warnings = Vec::new();
        let section = match config.extra.get(RESPONSE_KEY) {
            None | Some(Value::Null) => return (limits, warnings),
            Some(Value::Object(map)) => map,
            Some(_) => {
                warnings.push(format!(
                    "`{RESPONSE_KEY}` must be a mapping like {{max_bytes: 8388608, max_time: 600}}; ignored"
                ));
                return (limits, warnings);
            }
        };
        if let Some(value) = section.get("max_bytes").filter(|v| !v.is_null()) {
            match value.as_u64().filter(|n| *n >= 1) {
                Some(n) => {
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    if n > MAX_MAX_BYTES {
                        warnings.push(format!(
                            "{RESPONSE_KEY}.max_bytes: {n} is above {MAX_MAX_BYTES} (32 MiB); using {MAX_MAX_BYTES}"
                        ));
                    }
                    limits.max_bytes = n.min(MAX_MAX_BYTES);
                }
                None => warnings.push(format!(
                    "{RESPONSE_KEY}.max_bytes: {value} is not a whole number of bytes ≥ 1; using {DEFAULT_MAX_BYTES}"
                )),
            }
        }
        if let Some(value) = section.get("max_time").filter(|v| !v.is_null()) {
            match value
                .as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
            {
                Some(time) => limits.max_time = time,
                None => warnings.push(format!(
                    "{RESPONSE_KEY}.max_time: {value} is not a number of seconds > 0; using {} s",
                    DEFAULT_MAX_TIME.as_secs()
                )),
            }
        }
        (limits, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(response: Value) -> (ResponseLimits, Vec<String>) {
        let mut config = ArborConfig::default();
        config.extra.insert(RESPONSE_KEY.into(), response);
        ResponseLimits::from_config(&config)
    }

    #[test]
    fn defaults_are_8_mib_and_600_s_and_the_file_overrides_them() {
        let (default, warnings) = ResponseLimits::from_config(&ArborConfig::default());
        assert_eq!(
            (default.max_bytes, default.max_time, warnings.len()),
            (8 * 1024 * 1024, Duration::from_secs(600), 0)
        );
        let (set, warnings) = limits(json!({"max_bytes": 65536, "max_time": 0.5}));
        assert_eq!(
            (set.max_bytes, set.max_time, warnings.len()),
            (65536, Duration::from_millis(500), 0)
        );
        assert_eq!(limits(json!({})), (ResponseLimits::default(), vec![]));
    }

    #[test]
    fn unusable_values_warn_and_keep_the_default() {
        for bad in [json!(0), json!(-1), json!("8MiB"), json!(1.5)] {
            let (l, warnings) = limits(json!({ "max_bytes": bad }));
            assert_eq!(l, ResponseLimits::default(), "{bad}");
            assert!(warnings[0].contains("response.max_bytes"), "{warnings:?}");
        }
        for bad in [json!(0), json!(-1), json!("soon"), json!(1e300)] {
            let (l, warnings) = limits(json!({ "max_time": bad }));
            assert_eq!(l, ResponseLimits::default(), "{bad}");
            assert!(warnings[0].contains("response.max_time"), "{warnings:?}");
        }
        let (l, warnings) = limits(json!(600));
        assert_eq!(l, ResponseLimits::default());
        assert!(warnings[0].contains("must be a mapping"), "{warnings:?}");
    }

    #[test]
    fn max_bytes_is_lowered_to_what_the_store_can_read_back() {
        let (l, warnings) = limits(json!({"max_bytes": 1u64 << 40}));
        assert_eq!(l.max_bytes, MAX_MAX_BYTES);
        assert!(warnings[0].contains("32 MiB"), "{warnings:?}");
    }
}
