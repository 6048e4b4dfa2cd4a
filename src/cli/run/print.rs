//! What `arbor run` / `session resume` remember between bus events while printing
//! (issue 23 item 9): where one assistant message's text ends, so the next one's starts
//! after a blank line instead of glued to it, and what each call waiting for approval
//! does, so a denied call is named on stderr with how to allow it.
//!
//! Owns: [`Printer`]. Does not own: which events reach it or the output formats
//! (`run`), the denial itself (`engine::gate`).

use std::collections::HashMap;

use crate::cli::out;
use crate::out;
use crate::session::protocol::{ApprovalDeniedEvent, DecisionKind};
use crate::session::{EngineEvent, Message};

/// The printing state of one headless turn.
#[derive(Debug, Default)]
pub struct Printer {
    /// The current assistant message has printed text.
    text_in_message: bool,
    /// A finished message printed text: the next text starts after a blank line.
    separate: bool,
    /// The last text printed ended a line.
    at_line_start: bool,
    /// `approval:required` summaries (`write notes.md`, the command), by call id.
    asked: HashMap<String, String>,
}

impl Printer {
    /// Prints a text delta of the session's answer on stdout, a blank line first when
    /// an earlier assistant message of the turn printed text.
    ///
    /// Errors: stdout cannot be written.
    pub fn text(&mut self, delta: &str) -> std::io::Result<()> {
        if delta.is_empty() {
            return Ok(());
        }
        if self.separate {
            out!("{}", if self.at_line_start { "\n" } else { "\n\n" })?;
            self.separate = false;
        }
        out!("{delta}")?;
        self.text_in_message = true;
        self.at_line_start = delta.ends_with('\n');
        Ok(())
    }

    /// Notes a message appended to the session: an assistant message ends its text.
    pub fn appended(&mut self, message: &Message) {
        if matches!(message, Message::Assistant(_)) && self.text_in_message {
            self.text_in_message = false;
            self.separate = true;
        }
    }

    /// Follows the approval events of the whole tree: on a denial by the missing
    /// `--yes` or by the approval policy, says on stderr what was denied, who asked,
    /// and what would allow it.
    pub fn approval(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::ApprovalRequired(required) => {
                self.asked
                    .insert(required.tool_call_id.to_string(), required.summary.clone());
            }
            EngineEvent::ApprovalDenied(denied) => {
                let summary = self.asked.remove(denied.tool_call_id.as_str());
                if let Some(note) = denial_note(denied, summary.as_deref()) {
                    out::error(note);
                }
            }
            EngineEvent::ApprovalGranted(granted) => {
                self.asked.remove(granted.tool_call_id.as_str());
            }
            _ => {}
        }
    }
}

/// The stderr line for a denied call, or `None` for denials a person made or a
/// cancellation (nothing to allow).
pub fn denial_note(denied: &ApprovalDeniedEvent, summary: Option<&str>) -> Option<String> {
    let tool = &denied.tool_name;
    let what = match summary.filter(|s| !s.is_empty() && *s != tool) {
        Some(summary) => format!("{tool} `{summary}`"),
        None => tool.clone(),
    };
    let agent = &denied.agent;
    match denied.decision {
        DecisionKind::Headless => Some(format!(
            "denied {what} (asked by {agent}): it needs approval and a headless run cannot \
             ask; --yes allows it, or an approvals rule in the config \
             (approvals: {{{tool}: allow}})"
        )),
        DecisionKind::Policy => Some(format!(
            "denied {what} (asked by {agent}) by the approval policy{}; --yes does not \
             change that, an approvals rule in the config does",
            denied
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(decision: DecisionKind) -> ApprovalDeniedEvent {
        ApprovalDeniedEvent {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            agent: "coder".into(),
            decision,
            reason: Some("deny: bash".into()),
        }
    }

    #[test]
    fn denials_say_what_and_how_to_allow_it() {
        let note = denial_note(&denied(DecisionKind::Headless), Some("rm -rf x")).unwrap();
        assert!(
            note.starts_with("denied bash `rm -rf x` (asked by coder)"),
            "{note}"
        );
        assert!(note.contains("--yes allows it"), "{note}");
        assert!(note.contains("approvals: {bash: allow}"), "{note}");
        let note = denial_note(&denied(DecisionKind::Policy), None).unwrap();
        assert!(
            note.contains("by the approval policy (deny: bash)"),
            "{note}"
        );
        assert_eq!(denial_note(&denied(DecisionKind::Once), None), None);
        assert_eq!(denial_note(&denied(DecisionKind::Cancelled), None), None);
    }
}
