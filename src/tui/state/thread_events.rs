//! Applying bus events of the open session to its thread: streaming deltas, appended
//! messages, tool-call progress, provider errors, cancellation.
//!
//! Event `data` fields read (Amplifier names first, arbor aliases second):
//! `content_block:delta` `{delta|text, kind|block_type}` (`text` default, `thinking`);
//! `message:appended` `{message}`; `tool:pre` `{tool_call_id, tool_name,
//! tool_input|arguments|input, sub_session_id?}`; `tool:post` `{tool_call_id,
//! result|tool_response|output, sub_session_id?}`; `tool:error` `{tool_call_id,
//! error|message}`; `provider:error` (see `error_card`: a retry notice or an error card).
//!
//! Owns: that mapping. Does not own: tree updates (`tree`).

use serde_json::Value;

use super::cells::{CellKind, ToolStatus};
use super::error_card::ProviderFailure;
use super::thread::Thread;
use super::transcript::{result_status, str_field};
use crate::session::events::names;
use crate::session::{Event, Message};
use crate::tui::theme::Theme;

impl Thread {
    /// Applies one bus event whose `session_id` is this thread's session.
    pub fn apply_event(&mut self, event: &Event, theme: &Theme) {
        let data = &event.data;
        match event.event.as_str() {
            names::CONTENT_BLOCK_DELTA => {
                let delta = str_field(data, "delta").or_else(|| str_field(data, "text"));
                let kind = str_field(data, "kind").or_else(|| str_field(data, "block_type"));
                let Some(delta) = delta else {
                    return;
                };
                match kind.as_deref() {
                    None | Some("text") => {
                        if let Some(s) = self.stream_mut() {
                            s.push_text(&delta, theme);
                        }
                    }
                    Some("thinking") => {
                        if let Some(s) = self.stream_mut() {
                            s.push_thinking(&delta);
                        }
                    }
                    _ => {}
                }
            }
            names::MESSAGE_APPENDED => {
                if let Some(m) = data
                    .get("message")
                    .and_then(|m| serde_json::from_value::<Message>(m.clone()).ok())
                {
                    self.append_live(&m);
                }
            }
            names::TOOL_PRE => {
                let id = str_field(data, "tool_call_id").unwrap_or_default();
                let name = str_field(data, "tool_name").unwrap_or_default();
                let args = ["tool_input", "arguments", "input"]
                    .iter()
                    .find_map(|k| data.get(*k))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.card(&id, &name, &args);
                if let Some(&i) = self.calls.get(&id) {
                    self.set_running(i, str_field(data, "sub_session_id"));
                }
            }
            names::TASK_AGENT_SPAWNED | names::TASK_AGENT_RESUMED => {
                let id = str_field(data, "tool_call_id").unwrap_or_default();
                if let Some(&i) = self.calls.get(&id) {
                    self.set_running(i, str_field(data, "sub_session_id"));
                }
            }
            names::TOOL_POST | names::TOOL_ERROR => {
                let id = str_field(data, "tool_call_id").unwrap_or_default();
                let Some(&i) = self.calls.get(&id) else {
                    return;
                };
                let is_error = event.event == names::TOOL_ERROR;
                let content = ["result", "tool_response", "output", "error", "message"]
                    .iter()
                    .find_map(|k| data.get(*k))
                    .map(value_text)
                    .unwrap_or_default();
                let status = result_status(&content, is_error);
                let child = str_field(data, "sub_session_id");
                self.set_result(i, status, &content, child.as_deref());
            }
            names::PROVIDER_ERROR => self.push_failure(ProviderFailure::from_data(data)),
            names::CANCEL_COMPLETED => {
                self.push_notice("turn cancelled");
                self.turn_in_flight = false;
            }
            names::ORCHESTRATOR_COMPLETE => {
                self.finalize_stream();
                self.turn_in_flight = false;
            }
            _ => {}
        }
    }

    fn set_running(&mut self, idx: usize, child: Option<String>) {
        let Some(cell) = self.cells.get_mut(idx) else {
            return;
        };
        match &mut cell.kind {
            CellKind::Tool(card) if card.status == ToolStatus::Pending => {
                card.status = ToolStatus::Running
            }
            CellKind::Task(card) => {
                if card.status == ToolStatus::Pending {
                    card.status = ToolStatus::Running;
                }
                if let Some(c) = &child {
                    card.child = Some(c.clone());
                }
            }
            _ => return,
        }
        cell.invalidate();
        if let Some(c) = child {
            self.children.insert(c, idx);
        }
    }
}

/// A JSON value as display text (strings unquoted).
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::cells::TaskCard;
    use serde_json::json;

    fn ev(name: &str, data: Value) -> Event {
        Event::new(name, "root", None, data)
    }

    #[test]
    fn task_card_learns_its_child_and_result() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        t.session_id = Some("root".into());
        let assistant = json!({"role": "assistant", "content": [
            {"type": "text", "text": "Delegating."},
            {"type": "tool_call", "id": "c1", "name": "task", "input": {"agent": "explorer", "instruction": "Look around"}}
        ]});
        t.apply_event(
            &ev(
                names::CONTENT_BLOCK_DELTA,
                json!({"delta": "Deleg", "kind": "text"}),
            ),
            &theme,
        );
        assert!(t.streaming().is_some());
        t.apply_event(
            &ev(names::MESSAGE_APPENDED, json!({"message": assistant})),
            &theme,
        );
        assert!(t.streaming().is_none(), "final message replaces the stream");
        assert_eq!(t.cells.len(), 2);
        t.apply_event(&ev(names::TOOL_PRE, json!({"tool_call_id": "c1", "tool_name": "task", "sub_session_id": "abc-def_explorer"})), &theme);
        assert!(t.has_child("abc-def_explorer"));
        t.apply_event(&ev(names::TOOL_POST, json!({"tool_call_id": "c1", "result": "{\"response\":\"found it\",\"session_id\":\"abc-def_explorer\",\"status\":\"completed\"}"})), &theme);
        let CellKind::Task(TaskCard {
            status, response, ..
        }) = &t.cells[1].kind
        else {
            panic!("not a task card")
        };
        assert_eq!(*status, ToolStatus::Done);
        assert_eq!(response.as_deref(), Some("found it"));
        t.selected = Some(1);
        assert_eq!(
            t.activate(false),
            Some(crate::tui::app_event::UiAction::OpenThread(
                "abc-def_explorer".into()
            ))
        );
    }

    #[test]
    fn a_call_id_reused_by_a_later_response_gets_its_own_card() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        t.session_id = Some("root".into());
        let call = json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "call_1", "name": "task", "input": {"agent": "explorer", "instruction": "Look"}}
        ]});
        for (n, child) in ["r-1_explorer", "r-2_explorer"].iter().enumerate() {
            t.apply_event(
                &ev(names::MESSAGE_APPENDED, json!({"message": call})),
                &theme,
            );
            let pre =
                json!({"tool_call_id": "call_1", "tool_name": "task", "sub_session_id": child});
            t.apply_event(&ev(names::TOOL_PRE, pre), &theme);
            let cards = t
                .cells
                .iter()
                .filter(|c| matches!(c.kind, CellKind::Task(_)));
            assert_eq!(cards.count(), n + 1, "tool:pre does not add a card");
            let post = json!({"tool_call_id": "call_1", "result": "ok"});
            t.apply_event(&ev(names::TOOL_POST, post), &theme);
        }
        let children: Vec<_> = t
            .cells
            .iter()
            .filter_map(|c| match &c.kind {
                CellKind::Task(card) => Some((card.child.clone(), card.status)),
                _ => None,
            })
            .collect();
        assert_eq!(
            children,
            [
                (Some("r-1_explorer".to_string()), ToolStatus::Done),
                (Some("r-2_explorer".to_string()), ToolStatus::Done)
            ]
        );
    }

    #[test]
    fn provider_error_keeps_partial_text_and_shows_the_error() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        t.apply_event(
            &ev(names::CONTENT_BLOCK_DELTA, json!({"delta": "partial"})),
            &theme,
        );
        t.apply_event(
            &ev(names::PROVIDER_ERROR, json!({"error": "openai: 500 boom"})),
            &theme,
        );
        assert!(matches!(&t.cells[0].kind, CellKind::Assistant(s) if s == "partial"));
        assert!(matches!(&t.cells[1].kind, CellKind::Failure(f) if f.error == "openai: 500 boom"));
        // The engine then saves the partial message: it replaces the provisional cell
        // in place, before the error.
        let partial = json!({"role": "assistant", "content": "partial text"});
        t.apply_event(
            &ev(names::MESSAGE_APPENDED, json!({"message": partial})),
            &theme,
        );
        t.push_error("openai: 500 boom");
        assert_eq!(t.cells.len(), 2);
        assert!(matches!(&t.cells[0].kind, CellKind::Assistant(s) if s == "partial text"));
        assert!(matches!(&t.cells[1].kind, CellKind::Failure(_)));
    }
}
