//! The retry advice in a provider's HTTP error headers.
//!
//! Owns: how long the server asks the client to wait (`retry-after-ms`, `retry-after`
//! as seconds or an HTTP date, and as a fallback the rate-limit window's end in
//! `x-ratelimit-reset`, which OpenRouter sends as epoch milliseconds and no
//! `retry-after`), and whether it says to retry at all (`x-should-retry`, Anthropic and
//! OpenAI). The clock is a parameter so the arithmetic is testable. Does not own:
//! deciding to retry or waiting (`engine::stream`).

use std::time::Duration;

use jiff::Timestamp;
use reqwest::header::HeaderMap;

/// A `x-ratelimit-reset` further from now than this, either way, is taken as nonsense
/// (a wrong unit, a daily quota, a stale capture, a wrong clock) and ignored.
pub const MAX_RESET_WAIT: Duration = Duration::from_secs(3600);

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// `secs` as a [`Duration`]: `None` when negative, NaN or infinite; [`Duration::MAX`]
/// when finite but too long to represent.
fn wait_from_secs(secs: f64) -> Option<Duration> {
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// [`retry_after_at`] with the real clock.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, Timestamp::now())
}

/// How long the server asks the client to wait, as of `now`: `retry-after-ms`
/// (milliseconds, used when > 0), else `retry-after` as seconds or as an HTTP date
/// (time from `now`; a past date gives zero), else [`ratelimit_reset_wait`]. `None`
/// when no header is usable (absent, negative, NaN, infinite, unreadable); a wait
/// too long to represent is [`Duration::MAX`]. Never panics.
pub fn retry_after_at(headers: &HeaderMap, now: Timestamp) -> Option<Duration> {
    if let Some(wait) = header(headers, "retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| *ms > 0.0)
        .and_then(|ms| wait_from_secs(ms / 1000.0))
    {
        return Some(wait);
    }
    retry_after_header(headers, now).or_else(|| ratelimit_reset_wait(headers, now))
}

fn retry_after_header(headers: &HeaderMap, now: Timestamp) -> Option<Duration> {
    let value = header(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return wait_from_secs(secs);
    }
    let when = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    Some(Duration::try_from(when.duration_since(now)).unwrap_or(Duration::ZERO))
}

/// The time from `now` until the rate-limit window of `x-ratelimit-reset` ends.
///
/// The value is read as epoch milliseconds when ≥ 10¹² (OpenRouter:
/// `1754667660000`), epoch seconds when ≥ 10⁹, seconds from now when smaller, or an
/// RFC 3339 timestamp. A reset already past gives zero; one more than
/// [`MAX_RESET_WAIT`] away from `now` (ahead or behind), or an unreadable value,
/// gives `None`, so the caller backs off as if there were no header.
pub fn ratelimit_reset_wait(headers: &HeaderMap, now: Timestamp) -> Option<Duration> {
    let value = header(headers, "x-ratelimit-reset")?;
    let now_ms = now.as_millisecond() as f64;
    let reset_ms = match value.parse::<f64>() {
        Ok(n) if !n.is_finite() || n < 0.0 => return None,
        Ok(n) if n >= 1e12 => n,
        Ok(n) if n >= 1e9 => n * 1000.0,
        Ok(n) => now_ms + n * 1000.0,
        Err(_) => value.parse::<Timestamp>().ok()?.as_millisecond() as f64,
    };
    let ahead_ms = reset_ms - now_ms;
    if ahead_ms.abs() > MAX_RESET_WAIT.as_secs_f64() * 1000.0 {
        return None;
    }
    wait_from_secs(ahead_ms.max(0.0) / 1000.0)
}

/// `x-should-retry`: `Some(true)` / `Some(false)` for `true` / `false` (any case),
/// `None` when absent or anything else.
pub fn should_retry(headers: &HeaderMap) -> Option<bool> {
    let value = header(headers, "x-should-retry")?;
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(ms).unwrap()
    }

    #[test]
    fn retry_after_prefers_positive_ms_then_seconds_then_date() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("1"));
        h.insert("retry-after-ms", HeaderValue::from_static("0"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(1)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let now: Timestamp = "2015-10-21T07:26:00Z".parse().unwrap();
        assert_eq!(retry_after_at(&h, now), Some(Duration::from_secs(120)));
        let future = Timestamp::now() + jiff::SignedDuration::from_secs(120);
        let date = jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&future)
            .unwrap();
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let got = retry_after(&h).unwrap();
        assert!(
            got > Duration::from_secs(100) && got <= Duration::from_secs(120),
            "{got:?}"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn ratelimit_reset_is_the_fallback_in_every_unit() {
        let reset = 1_754_667_660_000;
        let h = headers(&[("x-ratelimit-reset", "1754667660000")]);
        assert_eq!(
            retry_after_at(&h, at(reset - 26_000)),
            Some(Duration::from_secs(26))
        );
        assert_eq!(
            ratelimit_reset_wait(&h, at(reset - 1_500)),
            Some(Duration::from_millis(1500))
        );
        // Already past: zero, not negative.
        assert_eq!(
            ratelimit_reset_wait(&h, at(reset + 5_000)),
            Some(Duration::ZERO)
        );
        // Absurdly far either way: ignored.
        assert_eq!(ratelimit_reset_wait(&h, at(reset - 3_600_001)), None);
        assert_eq!(ratelimit_reset_wait(&h, at(reset + 3_600_001)), None);
        assert_eq!(
            ratelimit_reset_wait(&h, at(reset + 3_600_000)),
            Some(Duration::ZERO)
        );
        assert_eq!(
            ratelimit_reset_wait(&h, at(reset - 3_600_000)),
            Some(MAX_RESET_WAIT)
        );
        let secs = headers(&[("x-ratelimit-reset", "1754667660")]);
        assert_eq!(
            ratelimit_reset_wait(&secs, at(reset - 10_000)),
            Some(Duration::from_secs(10))
        );
        let delta = headers(&[("x-ratelimit-reset", "7")]);
        assert_eq!(
            ratelimit_reset_wait(&delta, at(reset)),
            Some(Duration::from_secs(7))
        );
        let rfc = headers(&[("x-ratelimit-reset", "2025-08-08T15:41:00Z")]);
        assert_eq!(
            ratelimit_reset_wait(&rfc, at(reset - 2_000)),
            Some(Duration::from_secs(2))
        );
        for junk in ["soon", "-5", "NaN", "inf"] {
            let h = headers(&[("x-ratelimit-reset", junk)]);
            assert_eq!(ratelimit_reset_wait(&h, at(reset)), None, "{junk}");
        }
    }

    #[test]
    fn explicit_retry_after_wins_over_the_reset() {
        let reset = 1_754_667_660_000;
        let now = at(reset - 30_000);
        let h = headers(&[("x-ratelimit-reset", "1754667660000"), ("retry-after", "3")]);
        assert_eq!(retry_after_at(&h, now), Some(Duration::from_secs(3)));
        let h = headers(&[
            ("x-ratelimit-reset", "1754667660000"),
            ("retry-after-ms", "250"),
        ]);
        assert_eq!(retry_after_at(&h, now), Some(Duration::from_millis(250)));
        // An unusable retry-after falls through to the reset.
        let h = headers(&[
            ("x-ratelimit-reset", "1754667660000"),
            ("retry-after", "soon"),
        ]);
        assert_eq!(retry_after_at(&h, now), Some(Duration::from_secs(30)));
    }

    #[test]
    fn huge_waits_saturate_and_junk_falls_back_to_the_reset() {
        let now = at(1_754_667_660_000 - 30_000);
        for (name, value) in [
            ("retry-after", "1e30"),
            ("retry-after", "1e300"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1e30"),
        ] {
            let h = headers(&[(name, value)]);
            assert_eq!(
                retry_after_at(&h, now),
                Some(Duration::MAX),
                "{name}: {value}"
            );
        }
        // Garbage in either header: the rate-limit reset (else nothing) decides.
        for (name, junk) in [
            ("retry-after", "-1"),
            ("retry-after", "-0.5"),
            ("retry-after", "NaN"),
            ("retry-after", "inf"),
            ("retry-after", "-inf"),
            ("retry-after", "1e309"),
            ("retry-after", "soon"),
            ("retry-after-ms", "-250"),
            ("retry-after-ms", "NaN"),
            ("retry-after-ms", "infinity"),
        ] {
            assert_eq!(
                retry_after_at(&headers(&[(name, junk)]), now),
                None,
                "{junk}"
            );
            let with_reset = headers(&[(name, junk), ("x-ratelimit-reset", "1754667660000")]);
            assert_eq!(
                retry_after_at(&with_reset, now),
                Some(Duration::from_secs(30)),
                "{name}: {junk}"
            );
        }
        assert_eq!(
            retry_after_at(&headers(&[("retry-after", "-0")]), now),
            Some(Duration::ZERO)
        );
        for junk in ["1e30", "-1e30", "1e-30"] {
            let h = headers(&[("x-ratelimit-reset", junk)]);
            let got = ratelimit_reset_wait(&h, now);
            assert!(got.is_none_or(|w| w <= MAX_RESET_WAIT), "{junk}: {got:?}");
        }
    }

    proptest! {
        /// Whatever a server sends in the retry headers, reading them never panics,
        /// and a wait from a reset header stays within its bound.
        #[test]
        fn no_header_value_panics(
            value in prop_oneof![
                "\\PC{0,40}",
                "[-+]?[0-9]{0,40}(\\.[0-9]{0,20})?([eE][-+]?[0-9]{1,4})?",
                proptest::num::f64::ANY.prop_map(|f| f.to_string()),
            ],
            now_ms in proptest::num::i64::ANY,
        ) {
            let now = Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH);
            let value = HeaderValue::from_str(&value);
            prop_assume!(value.is_ok());
            let value = value.unwrap();
            for name in ["retry-after", "retry-after-ms", "x-ratelimit-reset", "x-should-retry"] {
                let mut h = HeaderMap::new();
                h.insert(name, value.clone());
                let _ = retry_after_at(&h, now);
                let _ = should_retry(&h);
                if let Some(wait) = ratelimit_reset_wait(&h, now) {
                    prop_assert!(wait <= MAX_RESET_WAIT);
                }
            }
        }
    }

    #[test]
    fn should_retry_reads_true_and_false_only() {
        assert_eq!(should_retry(&HeaderMap::new()), None);
        assert_eq!(
            should_retry(&headers(&[("x-should-retry", "false")])),
            Some(false)
        );
        assert_eq!(
            should_retry(&headers(&[("x-should-retry", " True ")])),
            Some(true)
        );
        assert_eq!(should_retry(&headers(&[("x-should-retry", "maybe")])), None);
    }
}
