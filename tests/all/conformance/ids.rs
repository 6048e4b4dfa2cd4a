//! `amplifier-ids.yaml` onto `arbor::session::ids`, `arbor::paths` and the store
//! (SPEC §2, §7).
//!
//! Mapping (Python → arbor):
//! - `generate_sub_session_id(agent_name, parent_session_id, parent_trace_id)` →
//!   [`SessionId::child_with_span`] with the first 16 digits of `uuid_hex`, else
//!   [`SessionId::child`] (`repeat: n` → a list of n ids). A missing parent is `""`,
//!   which arbor gives the all-zero span. arbor has no trace ids: `parent_trace_id` is
//!   not passed.
//! - `get_project_slug` → [`project_slug`]; `is_top_level_session` → not
//!   [`ids::is_sub_session`].
//! - `SessionStore.validate_session_id` → [`SessionStore::session_dir`] (`"accepted"` or
//!   its error); `SessionStore.exists` → [`SessionStore::exists`];
//!   `SessionStore.find_session` → [`SessionStore::resolve`], each over a temp sessions
//!   directory holding `existing_dirs`.
//!
//! Not mapped (listed as not applicable): the legacy task-tool id format.

use std::path::Path;

use arbor::paths::project_slug;
use arbor::session::SessionStore;
use arbor::session::ids::{self, SessionId};
use serde_json::{Value, json};

use super::eval::{self, CallResult};

/// Runs one case; `None` when its function has no arbor mapping.
pub fn run(case: &Value) -> Option<Result<(), String>> {
    let call: fn(&Value) -> CallResult = match case.get("function").and_then(Value::as_str)? {
        "foundation.tracing.generate_sub_session_id" => sub_session_id,
        "app_cli.get_project_slug" => |i| Ok(json!(project_slug(Path::new(s(i, "resolved_cwd"))))),
        "app_cli.is_top_level_session" => |i| Ok(json!(!ids::is_sub_session(s(i, "session_id")))),
        "app_cli.SessionStore.validate_session_id" => |i| {
            with_store(i, |store| {
                store
                    .session_dir(s(i, "session_id"))
                    .map(|_| json!("accepted"))
                    .map_err(|e| e.to_string())
            })
        },
        "app_cli.SessionStore.exists" => {
            |i| with_store(i, |store| Ok(json!(store.exists(s(i, "session_id")))))
        }
        "app_cli.SessionStore.find_session" => |i| {
            with_store(i, |store| {
                store
                    .resolve(s(i, "partial_id"))
                    .map(|id| Value::String(id.into_string()))
                    .map_err(|e| e.to_string())
            })
        },
        _ => return None,
    };
    Some(eval::run_case(case, &[], &mut |input| call(input)))
}

fn s<'a>(input: &'a Value, key: &str) -> &'a str {
    input.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn sub_session_id(input: &Value) -> CallResult {
    // Amplifier passes any string here (even ""), so it is taken unchecked.
    let parent = SessionId::new_unchecked(s(input, "parent_session_id"));
    let agent = s(input, "agent_name");
    if let Some(hex) = input.get("uuid_hex").and_then(Value::as_str) {
        let span = hex.get(..16).ok_or("uuid_hex shorter than 16")?;
        return Ok(json!(SessionId::child_with_span(&parent, agent, span)));
    }
    match input.get("repeat").and_then(Value::as_u64) {
        Some(n) => Ok(json!(
            (0..n)
                .map(|_| SessionId::child(&parent, agent))
                .collect::<Vec<_>>()
        )),
        None => Ok(json!(SessionId::child(&parent, agent))),
    }
}

/// Runs `f` on a store over a fresh temp sessions directory holding `existing_dirs`.
fn with_store(input: &Value, f: impl FnOnce(&SessionStore) -> CallResult) -> CallResult {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    for name in eval::list(input.get("existing_dirs")).filter_map(Value::as_str) {
        std::fs::create_dir_all(dir.path().join(name)).map_err(|e| format!("{name}: {e}"))?;
    }
    f(&SessionStore::new(dir.path()))
}
