//! Natural version order of model ids, and picking the newest model a glob matches.
//!
//! Owns: [`compare_versions`] (which of two model ids is newer), [`newest_first`] and
//! [`resolve_glob`]. Never plain string order: a model id without its trailing snapshot
//! date (`-YYYYMMDD` or `-YYYY-MM-DD`) is split into alternating text and digit runs,
//! and digit runs compare as numbers (`claude-opus-4-10` > `claude-opus-4-7`,
//! `gpt-5.10` > `gpt-5.9`). Among ids equal apart from the date, the undated alias wins
//! (`gpt-5.4` > `gpt-5.4-2026-03-05`), then the newer date; exact ties keep list order
//! (the first listed wins). Text runs compare by code point, so case matters here even
//! though glob matching ignores it.
//!
//! Does not own: glob syntax (`glob`). Deliberate difference from Amplifier: between two
//! dated snapshots of the same model Amplifier's routing hook keeps list order, arbor
//! picks the newer date.

use std::cmp::Ordering;

use super::glob::glob_matches;

#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Text(&'a str),
    /// Digits without leading zeros (`""` for zero), compared by length then text.
    Num(&'a str),
}

impl Ord for Part<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Part::Text(a), Part::Text(b)) => a.cmp(b),
            (Part::Num(a), Part::Num(b)) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
            (Part::Num(_), Part::Text(_)) => Ordering::Less,
            (Part::Text(_), Part::Num(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Part<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `(id without its date suffix, the date's digits)`.
fn split_date(id: &str) -> (&str, Option<String>) {
    let b = id.as_bytes();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let n = b.len();
    if n >= 9 && b[n - 9] == b'-' && digits(&b[n - 8..]) {
        return (&id[..n - 9], Some(id[n - 8..].to_string()));
    }
    if n >= 11
        && b[n - 11] == b'-'
        && b[n - 3] == b'-'
        && b[n - 6] == b'-'
        && digits(&b[n - 10..n - 6])
        && digits(&b[n - 5..n - 3])
        && digits(&b[n - 2..])
    {
        let date = format!(
            "{}{}{}",
            &id[n - 10..n - 6],
            &id[n - 5..n - 3],
            &id[n - 2..]
        );
        return (&id[..n - 11], Some(date));
    }
    (id, None)
}

/// Alternating text / number runs, starting with text (possibly empty) and ending with
/// text (possibly empty), as Python's `re.split(r"(\d+)", s)` gives them.
fn parts(s: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut digits = false;
    for (i, c) in s.char_indices() {
        let d = c.is_ascii_digit();
        if d != digits {
            out.push(run(&s[start..i], digits));
            start = i;
            digits = d;
        }
    }
    out.push(run(&s[start..], digits));
    if digits {
        out.push(Part::Text(""));
    }
    out
}

fn run(s: &str, digits: bool) -> Part<'_> {
    if digits {
        Part::Num(s.trim_start_matches('0'))
    } else {
        Part::Text(s)
    }
}

/// `Greater` when model id `a` is newer than `b` by natural version order (see the
/// module docs); `Equal` for exact ties.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (base_a, date_a) = split_date(a);
    let (base_b, date_b) = split_date(b);
    parts(base_a)
        .cmp(&parts(base_b))
        .then_with(|| match (&date_a, &date_b) {
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => x.cmp(y),
            (None, None) => Ordering::Equal,
        })
        .then_with(|| b.len().cmp(&a.len()))
}

/// `models` sorted newest first (stable: exact ties keep their listed order).
pub fn newest_first<S: AsRef<str> + Clone>(models: &[S]) -> Vec<S> {
    let mut sorted = models.to_vec();
    sorted.sort_by(|a, b| compare_versions(b.as_ref(), a.as_ref()));
    sorted
}

/// The models matching `pattern` (case-insensitive glob), newest first.
pub fn matching_models(pattern: &str, models: &[String]) -> Vec<String> {
    let matched: Vec<String> = models
        .iter()
        .filter(|m| glob_matches(pattern, m))
        .cloned()
        .collect();
    newest_first(&matched)
}

/// The newest model in `models` matching `pattern`, in its listed case; `None` when
/// nothing matches.
pub fn resolve_glob(pattern: &str, models: &[String]) -> Option<String> {
    matching_models(pattern, models).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(pattern: &str, models: &[&str]) -> Option<String> {
        let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
        resolve_glob(pattern, &models)
    }

    #[test]
    fn multi_digit_versions_beat_string_order() {
        assert_eq!(
            compare_versions("claude-opus-4-10", "claude-opus-4-7"),
            Ordering::Greater
        );
        assert_eq!(
            pick(
                "claude-opus-*",
                &["claude-opus-4-7", "claude-opus-4-10", "claude-opus-4-6"]
            ),
            Some("claude-opus-4-10".into())
        );
        assert_eq!(
            pick(
                "gpt-5*",
                &["gpt-5", "gpt-5-mini", "gpt-5.1", "gpt-5.10", "gpt-5.9"]
            ),
            Some("gpt-5.10".into())
        );
    }

    #[test]
    fn alias_beats_dated_snapshot_and_newer_date_beats_older() {
        assert_eq!(
            pick("gpt-5.*", &["gpt-5.4-2026-03-05", "gpt-5.4"]),
            Some("gpt-5.4".into())
        );
        assert_eq!(
            pick(
                "claude-opus-*",
                &[
                    "claude-opus-4-20250514",
                    "claude-opus-4-7",
                    "claude-opus-4-5-20251101"
                ]
            ),
            Some("claude-opus-4-7".into())
        );
        assert_eq!(
            pick(
                "claude-3-haiku-*",
                &[
                    "claude-3-haiku-20240101",
                    "claude-3-haiku-20240307",
                    "claude-3-haiku-20240201"
                ]
            ),
            Some("claude-3-haiku-20240307".into())
        );
        assert_eq!(
            pick("model-*", &["model-20250101", "model-2"]),
            Some("model-2".into())
        );
        assert_eq!(
            pick(
                "gpt-?.?-mini*",
                &["gpt-5.4-mini-2026-03-17", "gpt-5.4-mini", "gpt-5-mini"]
            ),
            Some("gpt-5.4-mini".into())
        );
    }

    #[test]
    fn class_scoped_globs_and_case() {
        assert_eq!(
            pick(
                "gemini-*-pro-preview",
                &[
                    "gemini-3-pro-preview",
                    "gemini-3.1-pro-preview",
                    "gemini-3.1-pro-preview-customtools"
                ]
            ),
            Some("gemini-3.1-pro-preview".into())
        );
        assert_eq!(
            pick("model-?", &["model-B", "model-a", "model-ab"]),
            Some("model-a".into())
        );
        assert_eq!(pick("claude-*", &["gpt-4o"]), None);
        assert_eq!(pick("x*", &[]), None);
    }

    proptest::proptest! {
        #[test]
        fn ordering_is_total_and_never_panics(a in "\\PC{0,16}", b in "[a-z0-9.-]{0,14}(-20[0-9]{6})?") {
            let ab = compare_versions(&a, &b);
            proptest::prop_assert_eq!(ab, compare_versions(&b, &a).reverse());
            proptest::prop_assert_eq!(compare_versions(&a, &a), Ordering::Equal);
        }
    }

    #[test]
    fn ties_keep_list_order_and_numbers_ignore_leading_zeros() {
        assert_eq!(
            newest_first(&["m-07", "m-7"]),
            ["m-7", "m-07"],
            "shorter first on a tie"
        );
        assert_eq!(newest_first(&["same", "same"]), ["same", "same"]);
        assert_eq!(compare_versions("a-10", "a-9"), Ordering::Greater);
        assert_eq!(compare_versions("a-2-b", "a-2"), Ordering::Greater);
        assert_eq!(
            compare_versions("x-2025-01-02", "x-20250101"),
            Ordering::Greater
        );
    }
}
