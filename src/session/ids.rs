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

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// The parent span used when the parent is neither a sub-session nor a UUID
/// (Amplifier's "no parent info" value).
pub const ZERO_SPAN: &str = "0000000000000000";

/// A session id (SPEC §7 "Ids"): a root's UUID or a sub-session's
/// `{parent_span}-{child_span}_{agent}`.
///
/// On the wire and on disk it is the bare string (`#[serde(transparent)]`), so JSON stays
/// byte-identical to Amplifier's. It derefs to `str`, borrows as `str` (a
/// `HashMap<SessionId, _>` is looked up by `&str`) and compares equal to `str`/`String`.
///
/// Construction:
/// - [`SessionId::parse`] (also `FromStr`): the checked constructor for
///   ids typed by a person or read from a path; refuses what [`validate`] refuses.
/// - [`SessionId::new_root`] and [`SessionId::child`]: the only places ids are minted.
/// - [`SessionId::new_unchecked`] (also `From<&str>`, `From<String>`, and
///   deserialisation; hence no fallible `TryFrom`): for ids that already came out of arbor — read back from
///   `metadata.json`, an event, a wire message, a directory listing the store filtered,
///   or a test's constant. These skip validation on purpose: Amplifier's own files may
///   hold ids arbor would not mint, and refusing to *read* them would lose sessions.
///   Safety does not rest on this type: every `SessionStore` method re-validates an id
///   before it builds a path (SPEC §7: "invalid ids are refused everywhere before
///   touching the disk").
///
/// `Default` is the empty id, there only so records holding an id can derive `Default`
/// (their defaults are always filled in before use); the store refuses it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct SessionId(String);

/// Why a string is not a valid session id (see [`validate`] for the rules).
/// Displays as `invalid session id "a/b": contains '/'`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id {id:?}: {reason}")]
pub struct InvalidSessionId {
    /// The refused input, verbatim.
    pub id: String,
    /// The broken rule, e.g. `contains '/'`.
    pub reason: IdError,
}

/// The rule of [`validate`] an id breaks (the text is the rule, e.g. `contains '/'`),
/// or, for a session writer, metadata of another session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Metadata given to the writer of another session (the writer's id).
    #[error("metadata is for another session (writer holds '{0}')")]
    OtherSession(String),
    /// Empty or whitespace only.
    #[error("session id cannot be empty")]
    Empty,
    /// Holds `/`.
    #[error("contains '/'")]
    Slash,
    /// Holds `\`.
    #[error("contains '\\'")]
    Backslash,
    /// Holds `..`.
    #[error("contains '..'")]
    DotDot,
    /// Holds NUL.
    #[error("contains NUL")]
    Nul,
    /// Starts with `.`.
    #[error("starts with '.'")]
    LeadingDot,
}

/// The shape of a session id, from the one parser of the id format ([`IdShape::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdShape<'a> {
    /// A sub-session id: `{parent_span}-{child_span}_{agent}`, both spans 16 lowercase
    /// hex digits (Amplifier's pattern `^([0-9a-f]{16})-([0-9a-f]{16})_`, anchored at
    /// the start only; `agent` is the rest, possibly empty).
    Sub {
        /// The parent's span (16 hex).
        parent_span: &'a str,
        /// The session's own span (16 hex).
        child_span: &'a str,
        /// Everything after the `_`.
        agent: &'a str,
    },
    /// A UUID in any form `uuid::Uuid::try_parse` accepts (a root's id); `simple` is its
    /// 32 lowercase hex digits without dashes.
    Root {
        /// The UUID's 32 lowercase hex digits.
        simple: [u8; 32],
    },
    /// Anything else (still a usable id when [`validate`] accepts it).
    Other,
}

impl<'a> IdShape<'a> {
    /// Parses `id`'s shape. This is the only code that reads the id format; every
    /// question about an id (its spans, whether it is a sub-session or a root, its short
    /// form) is answered from here.
    pub fn of(id: &'a str) -> Self {
        let bytes = id.as_bytes();
        let is_hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if bytes.len() >= 34
            && bytes[16] == b'-'
            && bytes[33] == b'_'
            && is_hex(&bytes[..16])
            && is_hex(&bytes[17..33])
            && let (Some(parent_span), Some(child_span), Some(agent)) =
                (id.get(..16), id.get(17..33), id.get(34..))
        {
            return IdShape::Sub {
                parent_span,
                child_span,
                agent,
            };
        }
        match uuid::Uuid::try_parse(id) {
            Ok(uuid) => {
                let mut simple = [0u8; 32];
                uuid.simple().encode_lower(&mut simple);
                IdShape::Root { simple }
            }
            Err(_) => IdShape::Other,
        }
    }
}

impl SessionId {
    /// The checked constructor: `Ok` when [`validate`] accepts `id` (kept verbatim),
    /// else [`InvalidSessionId`] with the reason.
    pub fn parse(id: impl Into<String>) -> Result<Self, InvalidSessionId> {
        let id = id.into();
        match validate(&id) {
            Ok(()) => Ok(SessionId(id)),
            Err(reason) => Err(InvalidSessionId { id, reason }),
        }
    }

    /// An id taken as is, without [`validate`]: for ids read back from arbor's or
    /// Amplifier's own files, events and wire messages (see the type's docs for why
    /// that is safe).
    pub fn new_unchecked(id: impl Into<String>) -> Self {
        SessionId(id.into())
    }

    /// A new root session id: a UUID v4 in the hyphenated lowercase form
    /// (`9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b`).
    pub fn new_root() -> Self {
        SessionId(uuid::Uuid::new_v4().to_string())
    }

    /// A new sub-session id of `parent` for the agent `agent_name`:
    /// `{parent_span}-{child_span}_{agent}` with a random 16-hex `child_span`. The one
    /// place a child id is minted; see [`SessionId::child_with_span`] for the rules.
    pub fn child(parent: &SessionId, agent_name: &str) -> Self {
        let span: u64 = rand::rng().random();
        Self::child_with_span(parent, agent_name, &format!("{span:016x}"))
    }

    /// The sub-session id `{parent_span}-{child_span}_{agent}` with a caller-chosen
    /// `child_span` (deterministic tests; production code uses [`SessionId::child`]).
    ///
    /// `parent_span` is [`parent_span_of`]`(parent)`; `agent` is
    /// [`sanitize_agent_name`]`(agent_name)`. `child_span` is used as given (callers pass
    /// 16 lowercase hex digits). The result always passes [`validate`].
    pub fn child_with_span(parent: &SessionId, agent_name: &str, child_span: &str) -> Self {
        SessionId(format!(
            "{}-{}_{}",
            parent_span_of(parent),
            child_span,
            sanitize_agent_name(agent_name)
        ))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The id's shape (see [`IdShape::of`]).
    pub fn shape(&self) -> IdShape<'_> {
        IdShape::of(&self.0)
    }

    /// Whether this is a sub-session id (see [`IdShape::Sub`]).
    pub fn is_sub_session(&self) -> bool {
        is_sub_session(&self.0)
    }

    /// The short form front ends show (see [`short_id`]).
    pub fn short(&self) -> String {
        short_id(&self.0)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Deref for SessionId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl FromStr for SessionId {
    type Err = InvalidSessionId;
    /// [`SessionId::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionId::parse(s)
    }
}

/// Unchecked, as [`SessionId::new_unchecked`]: for ids already stored or tested.
impl From<&str> for SessionId {
    fn from(id: &str) -> Self {
        SessionId(id.to_string())
    }
}

/// Unchecked, as [`SessionId::new_unchecked`]: for ids already stored or tested.
impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId(id)
    }
}

/// Unchecked, as [`SessionId::new_unchecked`].
impl From<&String> for SessionId {
    fn from(id: &String) -> Self {
        SessionId(id.clone())
    }
}

/// Unchecked, as [`SessionId::new_unchecked`].
impl From<&SessionId> for SessionId {
    fn from(id: &SessionId) -> Self {
        id.clone()
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl PartialEq<str> for SessionId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SessionId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for SessionId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<SessionId> for str {
    fn eq(&self, other: &SessionId) -> bool {
        self == other.0
    }
}

impl PartialEq<SessionId> for &str {
    fn eq(&self, other: &SessionId) -> bool {
        *self == other.0
    }
}

impl PartialEq<SessionId> for String {
    fn eq(&self, other: &SessionId) -> bool {
        *self == other.0
    }
}

/// A tool call's id as the provider gave it (`toolu_…`, `call_…`); arbor only requires it
/// to be non-empty. Bare string on the wire (`#[serde(transparent)]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct ToolCallId(String);

/// An empty tool call id. Displays as `tool call id cannot be empty`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool call id cannot be empty")]
pub struct EmptyToolCallId;

impl ToolCallId {
    /// `Ok` unless `id` is empty.
    pub fn parse(id: impl Into<String>) -> Result<Self, EmptyToolCallId> {
        let id = id.into();
        if id.is_empty() {
            Err(EmptyToolCallId)
        } else {
            Ok(ToolCallId(id))
        }
    }

    /// An id taken as is (read back from a transcript, event or provider reply).
    pub fn new_unchecked(id: impl Into<String>) -> Self {
        ToolCallId(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolCallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Deref for ToolCallId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ToolCallId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ToolCallId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl FromStr for ToolCallId {
    type Err = EmptyToolCallId;
    /// [`ToolCallId::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ToolCallId::parse(s)
    }
}

/// Unchecked, as [`ToolCallId::new_unchecked`].
impl From<&str> for ToolCallId {
    fn from(id: &str) -> Self {
        ToolCallId(id.to_string())
    }
}

/// Unchecked, as [`ToolCallId::new_unchecked`].
impl From<String> for ToolCallId {
    fn from(id: String) -> Self {
        ToolCallId(id)
    }
}

impl From<ToolCallId> for String {
    fn from(id: ToolCallId) -> Self {
        id.0
    }
}

/// Unchecked, as [`ToolCallId::new_unchecked`].
impl From<&String> for ToolCallId {
    fn from(id: &String) -> Self {
        ToolCallId(id.clone())
    }
}

impl PartialEq<str> for ToolCallId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ToolCallId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for ToolCallId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
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

/// The span a child of `parent_id` carries as its parent span (16 lowercase hex), by
/// [`IdShape::of`]:
/// - the parent's own child span when `parent_id` is a sub-session id;
/// - else, when `parent_id` is a UUID, the first 16 hex digits of it without dashes;
/// - else [`ZERO_SPAN`].
pub fn parent_span_of(parent_id: &str) -> String {
    match IdShape::of(parent_id) {
        IdShape::Sub { child_span, .. } => child_span.to_string(),
        IdShape::Root { simple } => String::from_utf8_lossy(&simple[..16]).into_owned(),
        IdShape::Other => ZERO_SPAN.to_string(),
    }
}

/// The child span of a sub-session id (see [`IdShape::Sub`]): `Some(span)` for a
/// sub-session id, else `None`.
pub fn child_span_of(id: &str) -> Option<&str> {
    match IdShape::of(id) {
        IdShape::Sub { child_span, .. } => Some(child_span),
        _ => None,
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

/// Whether `id` has the sub-session shape (see [`IdShape::Sub`]).
pub fn is_sub_session(id: &str) -> bool {
    matches!(IdShape::of(id), IdShape::Sub { .. })
}

/// Whether `id` is a root's id: a UUID (see [`IdShape::Root`]).
pub fn is_root_uuid(id: &str) -> bool {
    matches!(IdShape::of(id), IdShape::Root { .. })
}

/// `Ok` when `id` may name a session directory: not blank (empty or whitespace only),
/// and free of `/`, `\`, `..`, NUL and a leading `.`. Else the [`IdError`] it breaks
/// (`contains '/'`). Every store method calls this before building a path.
pub fn validate(id: &str) -> Result<(), IdError> {
    if id.trim().is_empty() {
        return Err(IdError::Empty);
    }
    if id.contains('/') {
        return Err(IdError::Slash);
    }
    if id.contains('\\') {
        return Err(IdError::Backslash);
    }
    if id.contains("..") {
        return Err(IdError::DotDot);
    }
    if id.contains('\0') {
        return Err(IdError::Nul);
    }
    if id.starts_with('.') {
        return Err(IdError::LeadingDot);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b";

    fn root() -> SessionId {
        SessionId::parse(ROOT).unwrap()
    }

    fn is_hex16(s: &str) -> bool {
        s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    #[test]
    fn root_ids_are_uuid_v4() {
        let id = SessionId::new_root();
        let uuid = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(uuid.get_version_num(), 4);
        assert_eq!(id, uuid.hyphenated().to_string());
        assert_ne!(SessionId::new_root(), id);
    }

    #[test]
    fn child_of_root_carries_root_uuid_digits() {
        let id = SessionId::child(&root(), "Zen Architect");
        assert!(id.starts_with("9b1c7e2e0a4b4f7e-"), "{id}");
        assert!(id.ends_with("_zen-architect"), "{id}");
        assert!(is_hex16(&id[17..33]), "{id}");
        assert_eq!(child_span_of(&id), Some(&id[17..33]));
    }

    #[test]
    fn lineage_chains_through_child_spans() {
        let child = SessionId::child_with_span(&root(), "planner", "00000000000000aa");
        assert_eq!(child, "9b1c7e2e0a4b4f7e-00000000000000aa_planner");
        let grandchild = SessionId::child_with_span(&child, "coder", "00000000000000bb");
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
            .map(|_| SessionId::child(&root(), "x")[17..33].to_string())
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
            let id = SessionId::child(&SessionId::new_unchecked("../../etc"), name);
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
        assert_eq!(validate("a/b"), Err(IdError::Slash));
        assert_eq!(IdError::Slash.to_string(), "contains '/'");
        assert_eq!(IdError::Backslash.to_string(), "contains '\\'");
    }

    #[test]
    fn session_ids_parse_with_a_typed_error_and_stay_bare_strings_on_the_wire() {
        let err = "a/b".parse::<SessionId>().unwrap_err();
        assert_eq!(err.reason.to_string(), "contains '/'");
        assert_eq!(err.to_string(), "invalid session id \"a/b\": contains '/'");
        assert!(SessionId::parse(String::new()).is_err());
        let id: SessionId = ROOT.parse().unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{ROOT}\""));
        let back: SessionId = serde_json::from_str(&format!("\"{ROOT}\"")).unwrap();
        assert_eq!(back, id);
        assert_eq!(id.to_string(), ROOT);
        let mut map = std::collections::HashMap::new();
        map.insert(id.clone(), 1);
        assert_eq!(map.get(ROOT), Some(&1));
    }

    #[test]
    fn one_parser_answers_every_shape_question() {
        let child = SessionId::child_with_span(&root(), "Explorer", "1eb7af22aaaaaaaa");
        assert_eq!(
            child.shape(),
            IdShape::Sub {
                parent_span: "9b1c7e2e0a4b4f7e",
                child_span: "1eb7af22aaaaaaaa",
                agent: "explorer"
            }
        );
        assert!(child.is_sub_session());
        assert_eq!(child.short(), "1eb7af22");
        assert!(matches!(root().shape(), IdShape::Root { .. }));
        assert!(is_root_uuid(ROOT) && !is_root_uuid(&child));
        assert_eq!(IdShape::of("not-a-uuid"), IdShape::Other);
    }

    #[test]
    fn tool_call_ids_must_not_be_empty() {
        assert_eq!(ToolCallId::parse(""), Err(EmptyToolCallId));
        let id: ToolCallId = "toolu_1".parse().unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"toolu_1\"");
        assert_eq!(id, "toolu_1");
    }
}
