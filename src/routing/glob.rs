//! Model-name globs, with Python `fnmatch` semantics as Amplifier uses them.
//!
//! Owns: deciding whether a model name is a pattern ([`is_glob_pattern`]) and matching a
//! pattern against one model id ([`glob_matches`]): `*` (any run, including `/` and
//! `.`), `?` (one character), `[seq]`, `[a-z]` ranges and `[!seq]` negation; a `[` with
//! no closing `]` is a literal `[`. Matching is case-insensitive (both sides are
//! lower-cased); callers keep the model's original case. Does not own: choosing among
//! several matches (`version`).

/// Whether `model` is a glob: it contains any of `*`, `?` or `[`
/// (`claude-haiku-*`, `gpt-4?`, `gpt-[45]`). Exact names never need a model listing.
pub fn is_glob_pattern(model: &str) -> bool {
    model.contains(['*', '?', '['])
}

/// Whether `name` matches the fnmatch-style `pattern`, case-insensitively.
///
/// `glob_matches("claude-opus-*", "Claude-Opus-4-10")` is true; `*` also matches `/`
/// and `.`; `gpt-5.[!0-3]` matches `gpt-5.9` but not `gpt-5.1` or `gpt-5.10`.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
    let name: Vec<char> = name.to_lowercase().chars().collect();
    matches(&pattern, &name)
}

/// Greedy match with single-point backtracking to the last `*` (every other token
/// consumes exactly one character, so this is exact and linear-ish).
fn matches(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if let Some(&token) = p.get(pi) {
            match token {
                '*' => {
                    star = Some((pi + 1, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => match class(p, pi, n[ni]) {
                    Some((next, true)) => {
                        pi = next;
                        ni += 1;
                        continue;
                    }
                    Some((_, false)) => {}
                    None if n[ni] == '[' => {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                    None => {}
                },
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((after_star, from)) => {
                pi = after_star;
                ni = from + 1;
                star = Some((after_star, from + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The character class starting at `p[start] == '['`, tested against `c`: `Some((index
/// after the closing ']', matched))`, or `None` when the class is not closed (then the
/// `[` is a literal). As in fnmatch, a `]` right after `[` or `[!` is a member.
fn class(p: &[char], start: usize, c: char) -> Option<(usize, bool)> {
    let mut j = start + 1;
    let negate = p.get(j) == Some(&'!');
    if negate {
        j += 1;
    }
    let first = j;
    if p.get(j) == Some(&']') {
        j += 1;
    }
    while j < p.len() && p[j] != ']' {
        j += 1;
    }
    if j >= p.len() {
        return None;
    }
    let items = &p[first..j];
    let mut hit = false;
    let mut k = 0;
    while k < items.len() {
        if k + 2 < items.len() && items[k + 1] == '-' {
            hit |= items[k] <= c && c <= items[k + 2];
            k += 3;
        } else {
            hit |= items[k] == c;
            k += 1;
        }
    }
    Some((j + 1, hit != negate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_recognised() {
        for hint in [
            "claude-3-haiku-20240307",
            "gpt-4o-mini",
            "claude-sonnet-4-20250514",
        ] {
            assert!(!is_glob_pattern(hint), "{hint}");
        }
        for hint in ["claude-haiku-*", "*-haiku-*", "gpt-4?", "gpt-[45]"] {
            assert!(is_glob_pattern(hint), "{hint}");
        }
    }

    #[test]
    fn star_question_and_case() {
        assert!(glob_matches("claude-opus-*", "claude-opus-4-10"));
        assert!(glob_matches("qwen3.6-*", "Qwen3.6-35B-A3B-UD-Q4_K_XL"));
        assert!(glob_matches("Qwen3.6-*", "qwen3.6-35b"));
        assert!(glob_matches("*", "org/model.gguf"), "* crosses / and .");
        assert!(glob_matches("a*b*c", "aXXbYYbZc"));
        assert!(!glob_matches("a*b*c", "aXXbYYbZ"));
        assert!(glob_matches("gpt-?.?-mini*", "gpt-5.4-mini-2026-03-17"));
        assert!(!glob_matches("gpt-?.?-mini*", "gpt-5-mini"));
        assert!(!glob_matches("claude-*", "gpt-4o"));
        assert!(glob_matches("", ""));
        assert!(!glob_matches("", "x"));
    }

    /// The obvious recursive matcher, to check the backtracking one against.
    fn reference(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| reference(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && reference(&p[1..], &n[1..]),
            Some('[') => match (n.first(), n.first().and_then(|&c| class(p, 0, c))) {
                (Some(_), Some((next, hit))) => hit && reference(&p[next..], &n[1..]),
                (Some('['), None) => reference(&p[1..], &n[1..]),
                _ => false,
            },
            Some(c) => n.first() == Some(c) && reference(&p[1..], &n[1..]),
        }
    }

    proptest::proptest! {
        #[test]
        fn backtracking_agrees_with_the_reference(p in "[ab*?!\\[\\]-]{0,8}", n in "[ab\\[\\]-]{0,8}") {
            let (pc, nc): (Vec<char>, Vec<char>) = (p.chars().collect(), n.chars().collect());
            proptest::prop_assert_eq!(glob_matches(&p, &n), reference(&pc, &nc), "{} vs {}", p, n);
        }
    }

    #[test]
    fn character_classes() {
        assert!(glob_matches("gpt-[0-9].[0-9]", "gpt-5.4"));
        assert!(!glob_matches("gpt-[0-9].[0-9]", "gpt-5.4-pro"));
        assert!(!glob_matches("gpt-[0-9].[0-9]", "gpt-5.10"));
        assert!(glob_matches("gpt-5.[!0-3]", "gpt-5.9"));
        assert!(!glob_matches("gpt-5.[!0-3]", "gpt-5.1"));
        assert!(!glob_matches("gpt-5.[!0-3]", "gpt-5.10"));
        assert!(
            glob_matches("model-[A-Z]", "model-b"),
            "ranges are case-insensitive"
        );
        assert!(glob_matches("x[]]y", "x]y"), "] first is a member");
        assert!(glob_matches("x[-a]y", "x-y"), "- at the edge is literal");
        assert!(glob_matches("x[a-]y", "x-y"));
        assert!(glob_matches("x[y", "x[y"), "unclosed [ is literal");
        assert!(!glob_matches("x[y", "xay"));
    }
}
