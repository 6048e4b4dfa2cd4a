//! Transcript messages → cells of a [`Thread`]: user and system messages, assistant
//! text (Markdown), thinking and tool-call blocks (tool and task cards, also from
//! OpenAI-style `tool_calls`), and tool results matched to their cards by
//! `tool_call_id` (the task tool's JSON output names the sub-session).
//!
//! Owns: that conversion. Does not own: bus events (`thread_events`).

use serde_json::Value;

use super::cells::{Arguments, CellKind, Handoff, TaskCard, ToolCard, ToolStatus};
use super::thread::Thread;
use crate::agent::select::{TRANSFER_KEY, author_of};
use crate::session::Message;
use crate::session::message::ContentBlock;

impl Thread {
    /// Appends the cells of one transcript message (buffered while loading).
    pub fn push_message(&mut self, message: &Message) {
        if self.loading {
            self.buffered.push(message.clone());
            return;
        }
        match message {
            Message::User(m) => {
                if let Some(i) = self.echo.take()
                    && matches!(self.cells.get(i).map(|c| &c.kind), Some(CellKind::User(t)) if t.trim() == m.content.trim())
                {
                    return;
                }
                self.push(CellKind::User(m.content.as_str().into()));
            }
            Message::System(m) => {
                self.push(CellKind::Notice(m.content.as_str().into()));
            }
            Message::Assistant(a) => {
                if let Some(author) = author_of(a.metadata.as_ref()) {
                    self.active_agent = Some(author.to_string());
                }
                let after = self.take_stream_range();
                let mut text = String::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        other => {
                            self.flush_text(&mut text);
                            match other {
                                ContentBlock::Thinking { thinking, .. } => {
                                    self.push(CellKind::Thinking(thinking.as_str().into()));
                                }
                                ContentBlock::RedactedThinking { .. } => {
                                    self.push(CellKind::Thinking("[redacted]".into()));
                                }
                                ContentBlock::ToolCall { id, name, input } => {
                                    self.card(id, name, input)
                                }
                                _ => {}
                            }
                        }
                    }
                }
                self.flush_text(&mut text);
                for call in &a.tool_calls {
                    self.card(&call.id, &call.tool, &call.arguments);
                }
                if !after.is_empty() {
                    self.cells.extend(after);
                    self.reindex();
                }
            }
            Message::Tool(t) => {
                let status = result_status(&t.content, t.is_error);
                let idx = match self.calls.get(&t.tool_call_id) {
                    Some(i) => *i,
                    None => {
                        self.card(&t.tool_call_id, &t.name, &Value::Null);
                        self.cells.len() - 1
                    }
                };
                self.set_result(idx, status, &t.content, None);
                let meta = t.metadata.as_ref();
                if let Some(to) = meta
                    .and_then(|m| m.get(TRANSFER_KEY))
                    .and_then(Value::as_str)
                {
                    let from = author_of(meta).unwrap_or("?").to_string();
                    self.push(CellKind::Handoff(Box::new(Handoff {
                        from,
                        to: to.to_string(),
                    })));
                    self.active_agent = Some(to.to_string());
                }
            }
        }
    }

    fn flush_text(&mut self, text: &mut String) {
        if !text.trim().is_empty() {
            self.push(CellKind::Assistant(std::mem::take(text).into()));
        }
        text.clear();
    }

    /// Adds a tool or task card for call `id` unless an unfinished one exists (the
    /// assistant message and `tool:pre` both announce a call). A finished card with
    /// the same id is an earlier call: some servers reuse ids (`call_1`) every
    /// response, so the new call gets its own card and the id now maps to it.
    pub(super) fn card(&mut self, id: &str, tool: &str, args: &Value) {
        let open = |s: &ToolStatus| matches!(s, ToolStatus::Pending | ToolStatus::Running);
        let existing = self.calls.get(id).and_then(|i| self.cells.get(*i));
        if !id.is_empty()
            && existing.is_some_and(|c| match &c.kind {
                CellKind::Tool(t) => open(&t.status),
                CellKind::Task(t) => open(&t.status),
                _ => false,
            })
        {
            return;
        }
        let kind = if tool == "task" || tool == "delegate" {
            let child = args
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            CellKind::Task(Box::new(TaskCard {
                call_id: id.to_string(),
                agent: str_field(args, "agent").unwrap_or_else(|| "?".into()),
                instruction: str_field(args, "instruction").unwrap_or_default(),
                child,
                status: ToolStatus::Pending,
                child_status: None,
                response: None,
            }))
        } else {
            CellKind::Tool(Box::new(ToolCard {
                call_id: id.to_string(),
                tool: tool.to_string(),
                arguments: Arguments::new(args),
                status: ToolStatus::Pending,
                result: None,
            }))
        };
        let i = self.push(kind);
        self.calls.insert(id.to_string(), i);
        if let CellKind::Task(card) = &self.cells[i].kind
            && let Some(c) = &card.child
        {
            self.children.insert(c.clone(), i);
        }
    }

    /// Sets a card's status and result; for task cards parses the task tool's JSON
    /// output (`{response, session_id, agent, status}`).
    pub(super) fn set_result(
        &mut self,
        idx: usize,
        status: ToolStatus,
        content: &str,
        child: Option<&str>,
    ) {
        let Some(cell) = self.cells.get_mut(idx) else {
            return;
        };
        let mut new_child = child.map(str::to_string);
        match &mut cell.kind {
            CellKind::Tool(card) => {
                card.status = status;
                card.result = Some(content.into());
            }
            CellKind::Task(card) => {
                card.status = status;
                match serde_json::from_str::<Value>(content) {
                    Ok(v) if v.is_object() => {
                        if let Some(s) = str_field(&v, "session_id") {
                            new_child = Some(s);
                        }
                        if let Some(a) = str_field(&v, "agent") {
                            card.agent = a;
                        }
                        card.status = match v.get("status").and_then(Value::as_str) {
                            Some("failed") => ToolStatus::Failed,
                            Some("cancelled") => ToolStatus::Cancelled,
                            Some("completed") => ToolStatus::Done,
                            _ => status,
                        };
                        card.response =
                            str_field(&v, "response").or_else(|| Some(content.to_string()));
                    }
                    _ => card.response = Some(content.to_string()),
                }
                if let Some(c) = &new_child {
                    card.child = Some(c.clone());
                }
            }
            _ => return,
        }
        cell.invalidate();
        if let Some(c) = new_child {
            self.children.insert(c, idx);
        }
    }
}

/// A string field of a JSON object.
pub(super) fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A tool result's status: error flag, or a short "cancelled" result from repair.
pub(super) fn result_status(content: &str, is_error: bool) -> ToolStatus {
    let lower = content.trim().to_ascii_lowercase();
    if lower.len() < 120 && lower.contains("cancelled") {
        ToolStatus::Cancelled
    } else if is_error {
        ToolStatus::Failed
    } else {
        ToolStatus::Done
    }
}
