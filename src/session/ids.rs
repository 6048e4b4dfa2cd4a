//! Session ids (SPEC §7 "Ids").
//!
//! Owns: minting root ids (UUID v4) and sub-session ids
//! (`{parent_span}-{child_span}_{agent}`), reading the spans back out of an id, agent
//! name sanitising for ids, and the one validation every store path goes through.
//! Does not own: where a session lives on disk (`store`), project slugs (`paths`).
//!
//! Differs from Amplifier on purpose: a sub-session of a root session gets the first 16
//! hex digits of the root's UUID as its parent span (Amplifier writes zeros), so the
//! lineage stays visible in the id. Sub-session parents behave exactly as in Amplifier.

use rand::Rng;

/// The parent span used when the parent is neither a sub-session nor a UUID
/// (Amplifier's "no parent info" value).
pub const ZERO_SPAN: &str = "0000000000000000";

/// A new root session id: a UUID v4 in the hyphenated lowercase form
/// (`9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b`).
pub fn new_root_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A new sub-session id `{parent_span}-{child_span}_{agent}` with a random 16-hex
/// `child_span`. See [`child_id_with_span`] for the rules.
pub fn new_child_id(parent_id: &str, agent_name: &str) -> String {
    let span: u64 = rand::rng().random();
    child_id_with_span(parent_id, agent_name, &format!("{span:016x}"))
}

/// The sub-session id `{parent_span}-{child_span}_{agent}` with a caller-chosen
/// `child_span` (deterministic tests; production code uses [`new_child_id`]).
///
/// `parent_span` is [`parent_span_of`]`(parent_id)`; `agent` is
/// [`sanitize_agent_name`]`(agent_name)`. `child_span` is used as given (callers pass 16
/// lowercase hex digits).
pub fn child_id_with_span(parent_id: &str, agent_name: &str, child_span: &str) -> String {
    format!(
        "{}-{}_{}",
        parent_span_of(parent_id),
        child_span,
        sanitize_agent_name(agent_name)
    )
}

/// The agent part of a sub-session id: lower-cased (Unicode-aware, as Python's
/// `str.lower`), each run of characters outside `[a-z0-9]` replaced by one `-`, `-`
/// trimmed from both ends; an empty result becomes `agent`.
/// `"foundation:Zen Architect!"` → `"foundation-zen-architect"`.
pub fn sanitize_agent_name(agent_name: &str) -> String {
    let mut out = String::with_capacity(agent_name.len());
    let mut in_run = false;
    for c in agent_name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "agent".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The span a child of `parent_id` carries as its parent span (16 lowercase hex):
/// - the parent's own child span when `parent_id` is a sub-session id
///   (see [`child_span_of`]);
/// - else, when `parent_id` is a UUID, the first 16 hex digits of it without dashes;
/// - else [`ZERO_SPAN`].
pub fn parent_span_of(parent_id: &str) -> String {
    if let Some(span) = child_span_of(parent_id) {
        return span.to_string();
    }
    match uuid::Uuid::try_parse(parent_id) {
        Ok(uuid) => uuid.simple().to_string()[..16].to_string(),
        Err(_) => ZERO_SPAN.to_string(),
    }
}

/// The child span of a sub-session id: `Some(b)` when `id` starts with
/// `{a}-{b}_` where `a` and `b` are each 16 lowercase hex digits (Amplifier's pattern
/// `^([0-9a-f]{16})-([0-9a-f]{16})_`, anchored at the start only); else `None`.
pub fn child_span_of(id: &str) -> Option<&str> {
    let bytes = id.as_bytes();
    let is_hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if bytes.len() < 34 || bytes[16] != b'-' || bytes[33] != b'_' {
        return None;
    }
    if is_hex(&bytes[..16]) && is_hex(&bytes[17..33]) {
        id.get(17..33)
    } else {
        None
    }
}

/// The short form of a session id the front ends show and every command accepts
/// (`SessionStore::resolve`): a sub-session's own child span cut to 8 characters
/// (`…-1eb7af22aaaaaaaa_explorer` → `1eb7af22`), else the id's first 8 characters
/// (a root's UUID prefix).
pub fn short_id(id: &str) -> String {
    let own = child_span_of(id).unwrap_or(id);
    own.chars().take(8).collect()
}

/// Whether `id` has the sub-session shape (see [`child_span_of`]).
pub fn is_sub_session(id: &str) -> bool {
    child_span_of(id).is_some()
}

/// `Ok` when `id` may name a session directory: not blank (empty or whitespace only),
/// and free of `/`, `\`, `..`, NUL and a leading `.`. Else `Err` with the reason, e.g.
/// `"contains '/'"`. Every store method calls this before building a path.
pub fn validate(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err("session id cannot be empty".to_string());
    }
    if id.contains('/') {
        return Err("contains '/'".to_string());
    }
    if id.contains('\\') {
        return Err("contains '\\'".to_string());
    }
    if id.contains("..") {
        return Err("contains '..'".to_string());
    }
    if id.contains('\0') {
        return Err("contains NUL".to_string());
    }
    if id.starts_with('.') {
        return Err("starts with '.'".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b";

    fn is_hex16(s: &str) -> bool {
        s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    #[test]
    fn root_ids_are_uuid_v4() {
        let id = new_root_id();
        let uuid = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(uuid.get_version_num(), 4);
        assert_eq!(id, uuid.hyphenated().to_string());
        assert_ne!(new_root_id(), id);
    }

    #[test]
    fn child_of_root_carries_root_uuid_digits() {
        let id = new_child_id(ROOT, "Zen Architect");
        assert!(id.starts_with("9b1c7e2e0a4b4f7e-"), "{id}");
        assert!(id.ends_with("_zen-architect"), "{id}");
        assert!(is_hex16(&id[17..33]), "{id}");
        assert_eq!(child_span_of(&id), Some(&id[17..33]));
    }

    #[test]
    fn lineage_chains_through_child_spans() {
        let child = child_id_with_span(ROOT, "planner", "00000000000000aa");
        assert_eq!(child, "9b1c7e2e0a4b4f7e-00000000000000aa_planner");
        let grandchild = child_id_with_span(&child, "coder", "00000000000000bb");
        assert_eq!(grandchild, "00000000000000aa-00000000000000bb_coder");
        assert_eq!(parent_span_of(&grandchild), "00000000000000bb");
        assert!(is_sub_session(&grandchild));
        assert!(!is_sub_session(ROOT));
    }

    #[test]
    fn short_ids_are_a_childs_own_span_or_the_ids_start() {
        assert_eq!(
            short_id("0123456789abcdef-fedcba9876543210_explorer"),
            "fedcba98"
        );
        assert_eq!(short_id(ROOT), "9b1c7e2e");
        assert_eq!(short_id("héllo-wörld"), "héllo-wö");
        assert_eq!(short_id("ab"), "ab");
    }

    #[test]
    fn random_child_spans_differ() {
        let spans: std::collections::HashSet<String> = (0..200)
            .map(|_| new_child_id(ROOT, "x")[17..33].to_string())
            .collect();
        assert_eq!(spans.len(), 200);
    }

    #[test]
    fn uppercase_uuid_parent_is_lowercased() {
        let upper = ROOT.to_uppercase();
        assert_eq!(parent_span_of(&upper), "9b1c7e2e0a4b4f7e");
        assert_eq!(parent_span_of("not-a-uuid"), ZERO_SPAN);
        assert_eq!(parent_span_of(""), ZERO_SPAN);
    }

    #[test]
    fn sanitizing_agent_names() {
        assert_eq!(
            sanitize_agent_name("foundation:zen_architect"),
            "foundation-zen-architect"
        );
        assert_eq!(sanitize_agent_name("  "), "agent");
        assert_eq!(sanitize_agent_name("--A--b--"), "a-b");
        assert_eq!(sanitize_agent_name("../../etc"), "etc");
        assert_eq!(sanitize_agent_name("İstanbul"), "i-stanbul");
    }

    #[test]
    fn child_ids_are_always_valid_ids() {
        for name in ["", "..", "/", "a\\b", ".hidden", "\0"] {
            let id = new_child_id("../../etc", name);
            assert_eq!(validate(&id), Ok(()), "{id}");
        }
    }

    #[test]
    fn validation_refuses_path_tricks() {
        for bad in [
            "", " ", "\t", "../etc", "a/b", "a\\b", "..", ".", ".hidden", "a\0b", "x..y",
        ] {
            assert!(validate(bad).is_err(), "{bad:?} accepted");
        }
        for good in [
            ROOT,
            "0000000000000000-0123456789abcdef_explorer",
            "a:b",
            " padded ",
        ] {
            assert_eq!(validate(good), Ok(()), "{good:?} refused");
        }
        assert_eq!(validate("a/b"), Err("contains '/'".to_string()));
    }
}
