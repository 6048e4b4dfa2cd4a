//! The person's `Notification` hooks (issue 29): run when a tool call needs the
//! person's approval.
//!
//! Owns: their input (Claude Code's: `session_id`, `transcript_path`, `cwd`, `message`
//! naming the tool, `notification_type: "permission_prompt"`, which the matcher is
//! read against; and arbor's `tool_name`) and publishing one `hook:ran` per hook.
//! Reported only: a hook cannot answer the approval. Does not own: when it runs
//! (`gate`), or running hooks (`hooks`).

use std::path::Path;

use serde_json::{Map, Value};

use super::live::LiveSession;
use crate::hooks::{HookEvent, HookRunner};
use crate::session::EngineEvent;

/// The input every hook of session `live` gets (Claude Code's common fields):
/// `session_id`, `transcript_path` (`transcript`), `cwd`.
pub(crate) fn common_input(live: &LiveSession, transcript: &Path) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("session_id".into(), live.id.to_string().into());
    input.insert(
        "transcript_path".into(),
        transcript.to_string_lossy().into_owned().into(),
    );
    input.insert(
        "cwd".into(),
        live.working_dir.to_string_lossy().into_owned().into(),
    );
    input
}

/// Runs the `Notification` hooks of `hooks` for a call of `tool` in `live` that needs
/// approval; `transcript` is the session's `transcript.jsonl`.
pub(crate) async fn notification(
    live: &LiveSession,
    hooks: &HookRunner,
    transcript: &Path,
    tool: &str,
) {
    if !hooks.has(HookEvent::Notification) {
        return;
    }
    let mut input = common_input(live, transcript);
    input.insert(
        "message".into(),
        format!("arbor needs your permission to use {tool}").into(),
    );
    input.insert("notification_type".into(), "permission_prompt".into());
    input.insert("tool_name".into(), tool.into());
    let verdict = hooks
        .run(
            HookEvent::Notification,
            Some("permission_prompt"),
            input,
            &live.working_dir,
        )
        .await;
    for mut record in verdict.runs {
        record.tool_name = Some(tool.to_string());
        live.emit(EngineEvent::HookRan(record));
    }
}
