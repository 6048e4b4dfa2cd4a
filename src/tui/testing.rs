//! Test support shared by the TUI's unit tests, scenario tests and benches: a rendered
//! buffer as plain text, synthetic protocol events to feed the `App` and its state
//! with no engine running, and handing one to a state alone through the TUI's
//! dispatcher. Not part of arbor's interface.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

use crate::session::metadata::{FileChange, SessionUsage};
use crate::session::protocol::{
    ApprovalDeniedEvent, ApprovalGrantedEvent, ApprovalRequiredEvent, DecisionKind,
    ProviderResponseEvent, SessionForkEvent, SessionStartEvent, ToolEffect, ToolPostEvent,
};
use crate::session::{EngineEvent, Event};
use crate::tui::state::dispatch::{Listeners, OpenThread, dispatch};
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::theme::Theme;

/// Hands `event` to `tree` alone, through the TUI's dispatcher (as the `App` does).
pub fn to_tree(tree: &mut SessionTree, event: &Event) {
    dispatch(event, Listeners::tree(tree));
}

/// Hands `event` to `thread` as the open thread, through the TUI's dispatcher (a
/// scratch tree takes the tree's part).
pub fn to_thread(thread: &mut Thread, event: &Event, theme: &Theme) {
    let mut tree = SessionTree::default();
    let listeners = Listeners {
        thread: Some(OpenThread { thread, theme }),
        ..Listeners::tree(&mut tree)
    };
    dispatch(event, listeners);
}

/// `msg` from session `id` (child of `parent`) at `timestamp` (RFC 3339).
pub fn event(msg: EngineEvent, id: &str, parent: Option<&str>, timestamp: &str) -> Event {
    Event {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        timestamp: timestamp.into(),
        msg,
    }
}

/// `session:start` of a root running `agent` (model, bundle and directory unknown).
pub fn start(agent: &str) -> EngineEvent {
    EngineEvent::SessionStart(SessionStartEvent {
        agent: agent.into(),
        ..Default::default()
    })
}

/// `session:fork` of a sub-session of `parent` running `agent` (model unknown).
pub fn fork(parent: &str, agent: &str) -> EngineEvent {
    EngineEvent::SessionFork(SessionForkEvent {
        parent: parent.into(),
        agent: agent.into(),
        ..Default::default()
    })
}

/// `provider:response` with this usage (`cost` in USD) and no model.
pub fn tokens(input_tokens: u64, output_tokens: u64, cost: Option<f64>) -> EngineEvent {
    EngineEvent::ProviderResponse(ProviderResponseEvent {
        usage: SessionUsage {
            input_tokens,
            output_tokens,
            cost,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// `provider:response` from `provider` naming `model`, with no usage.
pub fn response(provider: &str, model: &str) -> EngineEvent {
    EngineEvent::ProviderResponse(ProviderResponseEvent {
        provider: provider.into(),
        model: model.into(),
        ..Default::default()
    })
}

/// `approval:required` of `agent`'s `bash` call `call` running `command`.
pub fn approval_bash(call: &str, agent: &str, command: &str) -> EngineEvent {
    EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: call.into(),
        tool_name: "bash".into(),
        agent: agent.into(),
        summary: command.lines().next().unwrap_or_default().into(),
        command: Some(command.into()),
        diff: None,
        sandbox: None,
        escalation: None,
    })
}

/// `approval:required` of `agent`'s `edit_file` call `call` on `path` with `diff` (a
/// unified diff).
pub fn approval_edit(call: &str, agent: &str, path: &str, diff: &str) -> EngineEvent {
    EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: call.into(),
        tool_name: "edit_file".into(),
        agent: agent.into(),
        summary: format!("edit {path}"),
        command: None,
        diff: Some(diff.into()),
        sandbox: None,
        escalation: None,
    })
}

/// `approval:granted` of call `call` (`bash`, by `agent`), decided by `decision`.
pub fn approval_granted(call: &str, agent: &str, decision: DecisionKind) -> EngineEvent {
    EngineEvent::ApprovalGranted(ApprovalGrantedEvent {
        tool_call_id: call.into(),
        tool_name: "bash".into(),
        agent: agent.into(),
        decision,
        rule: None,
        reason: None,
    })
}

/// `approval:denied` of call `call` (`bash`, by `agent`), decided by `decision`.
pub fn approval_denied(call: &str, agent: &str, decision: DecisionKind) -> EngineEvent {
    EngineEvent::ApprovalDenied(ApprovalDeniedEvent {
        tool_call_id: call.into(),
        tool_name: "bash".into(),
        agent: agent.into(),
        decision,
        reason: None,
    })
}

/// A unified diff of `src/lib.rs` replacing one line, with context.
pub const SAMPLE_DIFF: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,4 +1,4 @@\n pub mod agent;\n-pub mod config;\n+pub mod settings;\n pub mod engine;\n pub mod tui;\n";

/// `tool:post` of a `write_file` call that changed `path` by `+added -removed` lines.
pub fn file_written(path: &str, added: u64, removed: u64) -> EngineEvent {
    EngineEvent::ToolPost(ToolPostEvent {
        tool_name: "write_file".into(),
        tool_call_id: format!("write-{path}").into(),
        result: format!("wrote {path}"),
        effect: Some(ToolEffect::FileChange(FileChange {
            path: path.into(),
            tool: "write_file".into(),
            lines_added: added,
            lines_removed: removed,
            created: false,
            changes: 1,
            hunks: None,
        })),
        ..Default::default()
    })
}

/// `buf` as text: one line per row, right-trimmed, each wide symbol once (the cells it
/// covers are skipped).
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        let mut skip = 0;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            skip = sym.width().saturating_sub(1);
            row.push_str(sym);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}
