//! The `retry:` section of `config.yaml`: how long a model call may wait before
//! retrying.
//!
//! ```yaml
//! retry:
//!   max_wait: 60      # seconds; a server asking to wait longer fails the call at once
//! ```
//!
//! Owns: reading and checking the section, its default, and how a wait is written for
//! people ([`describe_wait`], in errors and the TUI's retry notices). Does not own: the
//! retry loop itself or the backoff schedule (`engine::stream`), reading the server's
//! `retry-after` (`provider::http_error`).

use std::time::Duration;

use serde_json::Value;

use super::ArborConfig;

/// The config key of the section.
pub const RETRY_KEY: &str = "retry";
/// [`RetryPolicy::max_wait`] when the config sets none: 60 s.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(60);

/// How long a model call may wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The longest wait before a retry (`retry.max_wait`, seconds in the file). A
    /// server asking (`retry-after`, `retry-after-ms`, `x-ratelimit-reset`) for a
    /// longer one is not waited for: the call fails at once with an error naming the
    /// wait. arbor's own backoff never waits longer either.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_wait: DEFAULT_MAX_WAIT,
        }
    }
}

impl RetryPolicy {
    /// The policy of `config.extra["retry"]` plus one warning per value it could not
    /// use (which then keeps its default): `retry` not a mapping, `max_wait` not a
    /// finite number of seconds ≥ 0 (or too large to represent).
    pub fn from_config(config: &ArborConfig) -> (Self, Vec<String>) {
        let mut policy = Self::default();
        let mut warnings = Vec::new();
        let section = match config.extra.get(RETRY_KEY) {
            None | Some(Value::Null) => return (policy, warnings),
            Some(Value::Object(map)) => map,
            Some(_) => {
                warnings.push(format!(
                    "`{RETRY_KEY}` must be a mapping like {{max_wait: 60}}; ignored"
                ));
                return (policy, warnings);
            }
        };
        if let Some(value) = section.get("max_wait").filter(|v| !v.is_null()) {
            match value
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
            {
                Some(wait) => policy.max_wait = wait,
                None => warnings.push(format!(
                    "{RETRY_KEY}.max_wait: {value} is not a number of seconds ≥ 0; using {} s",
                    DEFAULT_MAX_WAIT.as_secs()
                )),
            }
        }
        (policy, warnings)
    }
}

/// A wait for people: `250ms`, `1.5s`, `45s`, `2m05s`, `3h07m`, `12d04h`; a wait too
/// long to represent (the server sent something like `1e30`) is `over 584 billion
/// years`.
pub fn describe_wait(wait: Duration) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    if wait == Duration::MAX {
        return "over 584 billion years".into();
    }
    let secs = wait.as_secs();
    match secs {
        0 => format!("{}ms", wait.subsec_millis()),
        1..10 if wait.subsec_millis() != 0 => format!("{:.1}s", wait.as_secs_f64()),
        1..MINUTE => format!("{secs}s"),
        MINUTE..HOUR => format!("{}m{:02}s", secs / MINUTE, secs % MINUTE),
        HOUR..DAY => format!("{}h{:02}m", secs / HOUR, (secs % HOUR) / MINUTE),
        _ => format!("{}d{:02}h", secs / DAY, (secs % DAY) / HOUR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(retry: Value) -> (RetryPolicy, Vec<String>) {
        let mut config = ArborConfig::default();
        config.extra.insert(RETRY_KEY.into(), retry);
        RetryPolicy::from_config(&config)
    }

    #[test]
    fn max_wait_defaults_to_a_minute_and_reads_seconds() {
        assert_eq!(
            RetryPolicy::from_config(&ArborConfig::default()),
            (RetryPolicy::default(), vec![])
        );
        assert_eq!(RetryPolicy::default().max_wait, Duration::from_secs(60));
        assert_eq!(
            policy(json!({"max_wait": 90})).0.max_wait,
            Duration::from_secs(90)
        );
        assert_eq!(
            policy(json!({"max_wait": 0.5})).0.max_wait,
            Duration::from_millis(500)
        );
        assert_eq!(policy(json!({"max_wait": 0})).0.max_wait, Duration::ZERO);
        assert_eq!(policy(json!({})), (RetryPolicy::default(), vec![]));
    }

    #[test]
    fn waits_read_compactly_at_every_scale() {
        let ms = Duration::from_millis;
        assert_eq!(describe_wait(ms(250)), "250ms");
        assert_eq!(describe_wait(ms(1_500)), "1.5s");
        assert_eq!(describe_wait(ms(2_000)), "2s");
        assert_eq!(describe_wait(ms(45_900)), "45s");
        assert_eq!(describe_wait(ms(65_000)), "1m05s");
        assert_eq!(describe_wait(ms(3 * 3_600_000 + 7 * 60_000)), "3h07m");
        assert_eq!(describe_wait(ms(u64::MAX)), "213503982334d14h");
        assert_eq!(describe_wait(Duration::MAX), "over 584 billion years");
    }

    #[test]
    fn unusable_values_warn_and_keep_the_default() {
        for bad in [json!(-1), json!("soon"), json!(1e300), json!([60])] {
            let (p, warnings) = policy(json!({ "max_wait": bad }));
            assert_eq!(p, RetryPolicy::default(), "{bad}");
            assert!(warnings[0].contains("retry.max_wait"), "{warnings:?}");
        }
        let (p, warnings) = policy(json!(60));
        assert_eq!(p, RetryPolicy::default());
        assert!(warnings[0].contains("must be a mapping"), "{warnings:?}");
    }
}
