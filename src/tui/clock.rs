//! The TUI's clock: wall time for elapsed times, spinners, the Ctrl+C window and
//! expiring notes. Injected so tests use a fixed, manually advanced time.
//!
//! Owns: "what time is it" for the UI. Does not own: scheduling frames (`frame`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use jiff::Timestamp;

/// A source of the current time. `Clock::system()` reads the real clock;
/// `Clock::manual(t)` starts at `t` and only moves with [`Clock::advance`]. Clones of a
/// manual clock share the same time.
#[derive(Debug, Clone)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The real wall clock.
    pub fn system() -> Self {
        Self { manual: None }
    }

    /// A clock fixed at `start` (millisecond precision) until advanced.
    pub fn manual(start: Timestamp) -> Self {
        Self {
            manual: Some(Arc::new(AtomicI64::new(start.as_millisecond()))),
        }
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        match &self.manual {
            None => Timestamp::now(),
            Some(ms) => Timestamp::from_millisecond(ms.load(Ordering::SeqCst))
                .unwrap_or(Timestamp::UNIX_EPOCH),
        }
    }

    /// Moves a manual clock forward by `by`; no effect on the system clock.
    pub fn advance(&self, by: Duration) {
        if let Some(ms) = &self.manual {
            let delta = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
            ms.fetch_add(delta, Ordering::SeqCst);
        }
    }
}

/// Milliseconds from `from` to `to` (0 when `to` is earlier).
pub fn millis_between(from: Timestamp, to: Timestamp) -> u64 {
    u64::try_from(to.as_millisecond() - from.as_millisecond()).unwrap_or(0)
}

/// A compact duration: `12s`, `1m02s`, `3h04m`.
pub fn format_elapsed(ms: u64) -> String {
    let s = ms / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// A compact token count: `950`, `12.3k`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A compact USD cost: `$0`, `$0.0042`, `$0.37`, `$12.50`, `$1234`.
pub fn format_cost(usd: f64) -> String {
    if !usd.is_finite() || usd <= 0.0 {
        "$0".to_string()
    } else if usd < 0.01 {
        format!("${usd:.4}")
    } else if usd < 1000.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.0}")
    }
}

/// Parses an RFC 3339 timestamp as written in events and metadata.
pub fn parse_ts(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_advances_and_formats() {
        let c = Clock::manual(Timestamp::from_second(1_000).unwrap());
        let t0 = c.now();
        c.advance(Duration::from_millis(62_500));
        assert_eq!(format_elapsed(millis_between(t0, c.now())), "1m02s");
        assert_eq!(format_elapsed(3_840_000), "1h04m");
        assert_eq!(format_tokens(12_345), "12.3k");
        assert_eq!(format_tokens(999), "999");
        assert_eq!(format_cost(0.0), "$0");
        assert_eq!(format_cost(0.00042), "$0.0004");
        assert_eq!(format_cost(0.375), "$0.38");
        assert_eq!(format_cost(1234.4), "$1234");
        assert_eq!(millis_between(c.now(), t0), 0);
    }
}
