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

/// [`retry_after_at`] with the real clock.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, Timestamp::now())
}

/// How long the server asks the client to wait, as of `now`: `retry-after-ms`
/// (milliseconds, used when > 0), else `retry-after` as seconds or as an HTTP date
/// (time from `now`; a past date gives zero), else [`ratelimit_reset_wait`]. `None`
/// when no header is usable.
pub fn retry_after_at(headers: &HeaderMap, now: Timestamp) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms > 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    retry_after_header(headers, now).or_else(|| ratelimit_reset_wait(headers, now))
}

fn retry_after_header(headers: &HeaderMap, now: Timestamp) -> Option<Duration> {
    let value = header(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
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
    Some(Duration::from_secs_f64(ahead_ms.max(0.0) / 1000.0))
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
