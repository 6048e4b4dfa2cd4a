//! Transcript messages → cells of a [`Thread`]: user and system messages, assistant
//! text (Markdown), thinking and tool-call blocks (tool and task cards, also from
//! OpenAI-style `tool_calls`), and tool results matched to their cards by
//! `tool_call_id` (the task tool's JSON output names the sub-session).
//!
//! A cell's text is the message's own [`Text`] (user and system content, thinking, an
//! assistant reply's text when it is one block, a tool result on its card): cloned,
//! never copied, so a transcript's cells share every text with its messages.
//!
//! Owns: that conversion. Does not own: bus events (`thread_events`).

use super::cells::{Arguments, CellKind, Handoff, TaskCard, ToolCard, ToolStatus};
use super::thread::Thread;
use crate::agent::select::{TRANSFER_KEY, author_of};
use crate::config::modules::describe;
use crate::session::Message;
use crate::session::SessionStatus;
use crate::session::message::{
    AssistantMessage, ContentBlock, Meta, Text, ToolArgs, ToolMessage, UserMessage,
};
use crate::session::protocol::{TaskInput, TaskResult, ToolEffect};

impl Thread {
    /// Appends the cells of one transcript message (buffered while loading).
    pub fn push_message(&mut self, message: &Message) {
        if self.loading {
            self.buffered.push(message.clone());
            return;
        }
        self.compactions_before(message);
        match message {
            Message::User(m) => self.push_user(m),
            Message::System(m) => {
                self.push(CellKind::Notice(m.content.clone()));
            }
            Message::Assistant(a) => self.push_assistant(a),
            Message::Tool(t) => self.push_tool_result(t),
        }
    }

    /// A user message's cell (attachments collapsed), unless it is the echo of what
    /// the person just sent, already shown.
    fn push_user(&mut self, m: &UserMessage) {
        // The message's text is shared with the cell unless attachments
        // collapse.
        let shown = match super::mentions::collapse_attachments(&m.content) {
            Some(collapsed) => Text::from(collapsed),
            None => m.content.clone(),
        };
        if let Some(i) = self.echo.take()
            && matches!(self.cells.get(i).map(|c| &c.kind), Some(CellKind::User(t)) if t.trim() == shown.trim())
        {
            return;
        }
        self.push(CellKind::User(shown));
    }

    /// An assistant message's cells, in order: text runs (Markdown), thinking, tool
    /// and task cards (also from OpenAI-style `tool_calls`), a note when a cancel cut
    /// it short; what streamed after it stays after it. Its author becomes the active
    /// agent.
    fn push_assistant(&mut self, a: &AssistantMessage) {
        if let Some(author) = author_of(a.metadata.as_ref()) {
            self.active_agent = Some(author.to_string());
        }
        let after = self.take_stream_range();
        let mut text = TextRun::default();
        for block in &a.content {
            match block {
                ContentBlock::Text { text: t } => text.push(t),
                other => {
                    self.flush_text(&mut text);
                    match other {
                        ContentBlock::Thinking { thinking, .. } => {
                            self.push(CellKind::Thinking(thinking.clone()));
                        }
                        ContentBlock::RedactedThinking { .. } => {
                            self.push(CellKind::Thinking("[redacted]".into()));
                        }
                        ContentBlock::ToolCall { id, name, input } => self.card(id, name, input),
                        _ => {}
                    }
                }
            }
        }
        self.flush_text(&mut text);
        // A reply cut short by a cancel says so (an error has its own card).
        let meta = a.metadata.as_ref();
        if meta.is_some_and(Meta::is_partial) && meta.and_then(|m| m.get_str("error")).is_none() {
            self.push(CellKind::Notice(PARTIAL_NOTE.into()));
        }
        for call in &a.tool_calls {
            self.card(&call.id, &call.tool, &call.arguments);
        }
        if !after.is_empty() {
            self.cells.extend(after);
            self.reindex();
        }
    }

    /// A tool result on its call's card (a card made for it when none announced the
    /// call); a `transfer_to_agent` result adds the handoff and changes the active
    /// agent.
    fn push_tool_result(&mut self, t: &ToolMessage) {
        let status = result_status(&t.content, t.is_error);
        let idx = match self.calls.get(t.tool_call_id.as_str()) {
            Some(i) => *i,
            None => {
                self.card(&t.tool_call_id, &t.name, &ToolArgs::default());
                self.cells.len() - 1
            }
        };
        let result = match crate::tool::stored_effect(&t.name, &t.content) {
            Some(ToolEffect::Task(result)) => Some(result),
            _ => None,
        };
        self.set_result(idx, status, t.content.clone(), None, result.as_ref());
        let meta = t.metadata.as_ref();
        if let Some(to) = meta.and_then(|m| m.get_str(TRANSFER_KEY)) {
            let from = author_of(meta).unwrap_or_else(|| "?".to_string());
            self.push(CellKind::Handoff(Box::new(Handoff {
                from,
                to: to.to_string(),
            })));
            self.active_agent = Some(to.to_string());
        }
    }

    fn flush_text(&mut self, run: &mut TextRun) {
        if let Some(text) = run.take()
            && !text.trim().is_empty()
        {
            self.push(CellKind::Assistant(text));
        }
    }

    /// Adds a tool or task card for call `id` unless an unfinished one exists (the
    /// assistant message and `tool:pre` both announce a call). A finished card with
    /// the same id is an earlier call: some servers reuse ids (`call_1`) every
    /// response, so the new call gets its own card and the id now maps to it.
    pub(super) fn card(&mut self, id: &str, tool: &str, args: &ToolArgs) {
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
        let kind = if describe(tool).delegates() {
            let task = TaskInput::of(args);
            CellKind::Task(Box::new(TaskCard {
                call_id: id.to_string(),
                agent: task.agent.unwrap_or_else(|| "?".into()),
                instruction: task.instruction.unwrap_or_default(),
                child: task.session_id.map(|s| s.to_string()),
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

    /// Sets a card's status and result (`content`, shared); a task card takes its
    /// sub-session, agent, status and response from the delegation's typed `result`
    /// (a paused one keeps `content`, whose first lines say how to continue).
    pub(super) fn set_result(
        &mut self,
        idx: usize,
        status: ToolStatus,
        content: Text,
        child: Option<&str>,
        result: Option<&TaskResult>,
    ) {
        let Some(cell) = self.cells.get_mut(idx) else {
            return;
        };
        let mut new_child = child.map(str::to_string);
        match &mut cell.kind {
            CellKind::Tool(card) => {
                card.status = status;
                card.result = Some(content);
            }
            CellKind::Task(card) => {
                card.status = status;
                match result {
                    Some(result) => {
                        new_child = Some(result.session_id.to_string());
                        card.agent.clone_from(&result.agent);
                        card.status = match result.status {
                            SessionStatus::Failed => ToolStatus::Failed,
                            SessionStatus::Cancelled => ToolStatus::Cancelled,
                            SessionStatus::Completed => ToolStatus::Done,
                            _ => status,
                        };
                        card.response = Some(if result.status == SessionStatus::Paused {
                            content
                        } else {
                            Text::from(result.response.clone())
                        });
                    }
                    None => card.response = Some(content),
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

/// The consecutive text blocks of an assistant message, one cell's text: the one
/// block's own [`Text`] (shared) or, for several, their concatenation.
#[derive(Default)]
struct TextRun {
    first: Option<Text>,
    joined: Option<String>,
}

impl TextRun {
    fn push(&mut self, text: &Text) {
        match (&self.first, &mut self.joined) {
            (None, _) => self.first = Some(text.clone()),
            (Some(first), None) => self.joined = Some(format!("{first}{text}")),
            (Some(_), Some(joined)) => joined.push_str(text),
        }
    }

    /// The run's text, leaving the run empty; `None` when it had no block.
    fn take(&mut self) -> Option<Text> {
        let first = self.first.take()?;
        Some(self.joined.take().map_or(first, Text::from))
    }
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

/// The notice under a reply the turn's cancel cut short.
pub const PARTIAL_NOTE: &str = "⋯ partial reply: the turn was cancelled before it finished";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn msg(v: Value) -> Message {
        serde_json::from_value(v).unwrap()
    }

    /// The address of a text's bytes: equal for two holders of one allocation.
    fn at(s: &str) -> *const u8 {
        s.as_ptr()
    }

    #[test]
    fn cells_share_their_messages_texts() {
        let messages = [
            Message::user("a question"),
            msg(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "let me see"},
                {"type": "text", "text": "one block of reply"},
                {"type": "tool_call", "id": "c1", "name": "bash", "input": {"command": "ls"}},
            ]})),
            msg(
                json!({"role": "tool", "name": "bash", "tool_call_id": "c1", "content": "a.rs\nb.rs"}),
            ),
            msg(json!({"role": "system", "content": "context note"})),
            msg(json!({"role": "assistant", "content": [
                {"type": "text", "text": "two "}, {"type": "text", "text": "blocks"},
            ]})),
        ];
        let mut t = Thread::default();
        for m in &messages {
            t.push_message(m);
        }
        let kinds: Vec<&CellKind> = t.cells.iter().map(|c| &c.kind).collect();
        let [
            CellKind::User(user),
            CellKind::Thinking(thinking),
            CellKind::Assistant(reply),
            CellKind::Tool(card),
            CellKind::Notice(note),
            CellKind::Assistant(joined),
        ] = kinds.as_slice()
        else {
            panic!("{kinds:?}")
        };
        let Message::User(u) = &messages[0] else {
            unreachable!()
        };
        assert!(std::ptr::eq(at(user), at(&u.content)));
        let Message::Assistant(a) = &messages[1] else {
            unreachable!()
        };
        let (ContentBlock::Thinking { thinking: th, .. }, ContentBlock::Text { text: tx }) =
            (&a.content[0], &a.content[1])
        else {
            unreachable!()
        };
        assert!(std::ptr::eq(at(thinking), at(th)));
        assert!(std::ptr::eq(at(reply), at(tx)));
        let ContentBlock::ToolCall { input, .. } = &a.content[2] else {
            unreachable!()
        };
        assert!(ToolArgs::shares(card.arguments.args(), input));
        let Message::Tool(result) = &messages[2] else {
            unreachable!()
        };
        let shown = card.result.as_ref().unwrap();
        assert!(std::ptr::eq(at(shown), at(&result.content)));
        let Message::System(s) = &messages[3] else {
            unreachable!()
        };
        assert!(std::ptr::eq(at(note), at(&s.content)));
        // Several text blocks make one text of their own.
        assert_eq!(&**joined, "two blocks");
    }

    #[test]
    fn a_task_result_that_is_not_json_is_its_shared_response() {
        let mut t = Thread::default();
        t.push_message(&msg(json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "t1", "name": "task", "input": {"agent": "x", "instruction": "go"}},
        ]})));
        let result = msg(
            json!({"role": "tool", "name": "task", "tool_call_id": "t1", "content": "plain words"}),
        );
        t.push_message(&result);
        let (CellKind::Task(card), Message::Tool(r)) = (&t.cells[0].kind, &result) else {
            panic!("{:?}", t.cells)
        };
        let response = card.response.as_ref().unwrap();
        assert!(std::ptr::eq(at(response), at(&r.content)));
    }

    /// A stored delegation result (no effect kept) is read by the tool module: a
    /// `delegate` call's card, in foundation's shape, learns its child, agent, status
    /// and response like a `task` card.
    #[test]
    fn a_stored_delegate_result_fills_its_task_card() {
        let mut t = Thread::default();
        t.push_message(&msg(json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "d1", "name": "delegate", "input": {"agent": "x", "instruction": "go"}},
        ]})));
        let content = r#"{"response":"done","session_id":"s_x","agent":"foundation:explorer","turn_count":2,"status":"success","metadata":{}}"#;
        t.push_message(&msg(
            json!({"role": "tool", "name": "delegate", "tool_call_id": "d1", "content": content}),
        ));
        let CellKind::Task(card) = &t.cells[0].kind else {
            panic!("{:?}", t.cells)
        };
        assert_eq!(card.response.as_deref(), Some("done"));
        assert_eq!(card.agent, "foundation:explorer");
        assert_eq!(card.child.as_deref(), Some("s_x"));
        assert_eq!(card.status, ToolStatus::Done);
    }
}
