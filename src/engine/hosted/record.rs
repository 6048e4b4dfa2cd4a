//! What a hosted agent's `session/update` stream (ACP v1, schema 1.20,
//! `SessionUpdate`) leaves in its node: the same transcript and events as one of
//! arbor's own turns.
//!
//! Owns: [`Recorder`] — message and thought chunks streamed as `content_block:delta`
//! and gathered into assistant messages (`text` and `thinking` blocks, author the
//! node's agent); a `tool_call` closing the assistant message with a `tool_call`
//! block (name: the ACP `name`, else its `kind`; input: title, kind, locations, raw
//! input) and publishing `tool:pre`; its `tool_call_update` with status `completed` /
//! `failed` appending the tool result (text content, diffs, raw output) and publishing
//! `tool:post` / `tool:error` (its diffs recorded in the node's `files_changed`, the
//! first as the call's effect); a `plan` recorded as a `todo` call whose effect sets the
//! node's todos; `usage_update`'s cumulative cost added to the node's usage as it
//! grows, and the prompt's token usage when the agent reports it. Calls still open when
//! the turn ends get a result saying so. Does not own: reading the wire (`drive`),
//! serving the agent's requests (`serve`).

use std::collections::HashMap;

use agent_client_protocol_schema::v1::{
    ContentBlock as AcpBlock, Plan, PlanEntryStatus, SessionUpdate, ToolCall as AcpToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use serde_json::{Value, json};

use crate::engine::live::LiveSession;
use crate::session::message::{AssistantMessage, ContentBlock, Message, ToolCall, now_rfc3339};
use crate::session::metadata::{FileChange, record_file_change};
use crate::session::protocol::{
    ContentBlockDeltaEvent, DeltaKind, TodoItem, TodoStatus, ToolEffect, ToolErrorEvent,
    ToolPostEvent, ToolPreEvent, ToolResponse,
};
use crate::session::{EngineEvent, Usage};
use crate::tool::confine::truncate_chars;
use crate::tool::filesystem::diff::{hunks, line_counts, unified_diff};

/// Bytes of a result text published in `tool:post` (the transcript keeps all).
const EVENT_RESULT_MAX: usize = 16 * 1024;

/// One hosted turn's record of the agent's updates.
pub(crate) struct Recorder<'a> {
    live: &'a LiveSession,
    /// Blocks of the assistant message being streamed.
    blocks: Vec<ContentBlock>,
    /// The agent's tool calls without a result yet: id → (name, call).
    open: HashMap<String, ToolCall>,
    /// Order the open calls started in (results for the unfinished ones at the end).
    order: Vec<String>,
    /// The last answer text (the turn's response).
    pub last_text: String,
    /// Tokens the agent reported for the turn.
    pub usage: Usage,
    /// USD the agent's cumulative cost grew by during the turn (`None`: none reported).
    pub cost: Option<f64>,
    /// The cumulative cost last reported (ACP `usage_update.cost.amount`).
    seen_cost: Option<f64>,
    plans: u32,
}

impl<'a> Recorder<'a> {
    /// A recorder for `live`'s turn; `seen_cost` is the agent's cumulative cost
    /// reported before this turn (kept across turns by the caller).
    pub fn new(live: &'a LiveSession, seen_cost: Option<f64>) -> Self {
        Self {
            live,
            blocks: Vec::new(),
            open: HashMap::new(),
            order: Vec::new(),
            last_text: String::new(),
            usage: Usage::default(),
            cost: None,
            seen_cost,
            plans: 0,
        }
    }

    /// The cumulative cost last reported, for the next turn's recorder.
    pub fn seen_cost(&self) -> Option<f64> {
        self.seen_cost
    }

    /// Applies one `session/update`.
    pub fn apply(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                self.chunk(chunk.content, DeltaKind::Text);
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                self.chunk(chunk.content, DeltaKind::Thinking);
            }
            SessionUpdate::ToolCall(call) => self.tool_call(call),
            SessionUpdate::ToolCallUpdate(update) => self.tool_update(update),
            SessionUpdate::Plan(plan) => self.plan(plan),
            SessionUpdate::UsageUpdate(usage) => {
                if let Some(cost) = usage.cost.filter(|c| c.currency == "USD") {
                    let grew = cost.amount - self.seen_cost.unwrap_or(0.0);
                    self.seen_cost = Some(cost.amount);
                    if grew > 0.0 {
                        self.cost = Some(self.cost.unwrap_or(0.0) + grew);
                        self.live.update_metadata(|m| {
                            m.usage.cost = Some(m.usage.cost.unwrap_or(0.0) + grew);
                        });
                    }
                }
            }
            // The person's own message echoed, commands, modes, titles: nothing of
            // the node's transcript.
            _ => {}
        }
    }

    /// Adds the prompt's token usage (ACP `PromptResponse.usage`, read from the raw
    /// result since schema 1.20 keeps it unstable) to the turn and the node.
    pub fn add_prompt_usage(&mut self, result: &Value) {
        let Some(usage) = result.get("usage") else {
            return;
        };
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        let turn = Usage {
            input_tokens: n("inputTokens"),
            output_tokens: n("outputTokens"),
            cache_read_tokens: n("cachedReadTokens"),
            cache_creation_tokens: n("cachedWriteTokens"),
        };
        self.usage.add(&turn);
        self.live.update_metadata(|m| m.usage.add(&turn));
    }

    fn chunk(&mut self, content: AcpBlock, kind: DeltaKind) {
        let AcpBlock::Text(text) = content else {
            return;
        };
        let delta = text.text;
        if delta.is_empty() {
            return;
        }
        self.live
            .emit(EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent {
                delta: delta.clone(),
                kind,
            }));
        match (kind, self.blocks.last_mut()) {
            (DeltaKind::Text, Some(ContentBlock::Text { text })) => {
                *text = format!("{text}{delta}").into();
            }
            (DeltaKind::Thinking, Some(ContentBlock::Thinking { thinking, .. })) => {
                *thinking = format!("{thinking}{delta}").into();
            }
            (DeltaKind::Text, _) => self.blocks.push(ContentBlock::Text { text: delta.into() }),
            (DeltaKind::Thinking, _) => self.blocks.push(ContentBlock::Thinking {
                thinking: delta.into(),
                signature: None,
            }),
        }
    }

    fn tool_call(&mut self, call: AcpToolCall) {
        let id = call.tool_call_id.0.to_string();
        if self.open.contains_key(&id) {
            return;
        }
        let name = call.name.clone().unwrap_or_else(|| kind_name(call.kind));
        let input = json!({
            "title": call.title,
            "kind": kind_name(call.kind),
            "locations": call.locations.iter().map(|l| l.path.display().to_string()).collect::<Vec<_>>(),
            "raw_input": call.raw_input,
        });
        self.open_call(id.clone(), name, input);
        // An agent may announce a call already finished.
        if matches!(
            call.status,
            ToolCallStatus::Completed | ToolCallStatus::Failed
        ) {
            let failed = call.status == ToolCallStatus::Failed;
            let text = result_text(&call.content, call.raw_output.as_ref());
            let change = self.file_changes(&call.content);
            self.close_call(&id, text, failed, change);
        }
    }

    /// Appends the assistant message so far with a `tool_call` block for the new call
    /// and publishes `tool:pre`.
    fn open_call(&mut self, id: String, name: String, input: Value) -> ToolCall {
        let call = ToolCall {
            id: id.clone(),
            tool: name.clone(),
            arguments: input.clone().into(),
        };
        let mut blocks = std::mem::take(&mut self.blocks);
        blocks.push(ContentBlock::ToolCall {
            id: id.clone(),
            name: name.clone(),
            input: input.clone().into(),
        });
        self.append_assistant(blocks, vec![call.clone()]);
        self.live.emit(EngineEvent::ToolPre(ToolPreEvent {
            tool_name: name,
            tool_call_id: id.clone().into(),
            tool_input: input,
            task: None,
        }));
        self.open.insert(id.clone(), call.clone());
        self.order.push(id);
        call
    }

    fn tool_update(&mut self, update: ToolCallUpdate) {
        let id = update.tool_call_id.0.to_string();
        let fields = update.fields;
        if !self.open.contains_key(&id) {
            // An update of a call never announced (or already closed): announce it.
            if fields.status.is_none() || self.order.contains(&id) {
                return;
            }
            let kind = fields.kind.unwrap_or_default();
            let name = fields.name.clone().unwrap_or_else(|| kind_name(kind));
            let input = json!({
                "title": fields.title.clone().unwrap_or_default(),
                "kind": kind_name(kind),
                "raw_input": fields.raw_input.clone(),
            });
            self.open_call(id.clone(), name, input);
        }
        if let Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) = fields.status {
            let content = fields.content.unwrap_or_default();
            let text = result_text(&content, fields.raw_output.as_ref());
            let change = self.file_changes(&content);
            self.close_call(&id, text, status == ToolCallStatus::Failed, change);
        }
    }

    /// Appends the result of open call `id` and publishes `tool:post` / `tool:error`.
    fn close_call(&mut self, id: &str, text: String, failed: bool, effect: Option<ToolEffect>) {
        let Some(call) = self.open.remove(id) else {
            return;
        };
        self.close_with(&call, text, failed, effect);
    }

    /// Records the files a finished call's diffs changed in the node's
    /// `files_changed` (as arbor's own writes are); the first is the call's effect.
    fn file_changes(&self, content: &[ToolCallContent]) -> Option<ToolEffect> {
        let mut first = None;
        for item in content {
            let ToolCallContent::Diff(d) = item else {
                continue;
            };
            let old = d.old_text.as_deref().unwrap_or("");
            let (lines_added, lines_removed) = line_counts(old, &d.new_text);
            let path = d
                .path
                .strip_prefix(&self.live.working_dir)
                .unwrap_or(&d.path)
                .display()
                .to_string();
            let change = FileChange {
                path,
                tool: "acp".into(),
                lines_added,
                lines_removed,
                created: d.old_text.is_none(),
                changes: 1,
                hunks: d.old_text.as_ref().map(|old| hunks(old, &d.new_text)),
            };
            self.live
                .update_metadata(|m| record_file_change(&mut m.arbor.files_changed, &change));
            first.get_or_insert(ToolEffect::FileChange(change));
        }
        first
    }

    fn close_with(&self, call: &ToolCall, text: String, failed: bool, effect: Option<ToolEffect>) {
        let mut message = Message::tool_result(call, text.clone(), failed);
        if let Message::Tool(t) = &mut message {
            t.metadata = Some(json!({"author": self.live.agent_name}).into());
        }
        self.live.append(message);
        let cut = truncate_chars(&text, EVENT_RESULT_MAX).to_string();
        let truncated = cut.len() < text.len();
        let (tool_name, tool_call_id) = (call.tool.clone(), call.id.clone().into());
        self.live.emit(if failed {
            EngineEvent::ToolError(ToolErrorEvent {
                tool_name,
                tool_call_id,
                tool_response: Some(ToolResponse::failed(&cut)),
                error: cut,
                truncated,
                task: None,
            })
        } else {
            EngineEvent::ToolPost(ToolPostEvent {
                tool_name,
                tool_call_id,
                tool_response: Some(ToolResponse::ok(&cut)),
                result: cut,
                truncated,
                effect,
                task: None,
            })
        });
    }

    /// A plan becomes the node's todos, recorded as a `todo` call as arbor's own
    /// `todo` tool records it (its effect sets metadata `todos`).
    fn plan(&mut self, plan: Plan) {
        let todos: Vec<TodoItem> = plan
            .entries
            .iter()
            .map(|e| TodoItem {
                content: e.content.clone(),
                active_form: e.content.clone(),
                status: match e.status {
                    PlanEntryStatus::InProgress => TodoStatus::InProgress,
                    PlanEntryStatus::Completed => TodoStatus::Completed,
                    _ => TodoStatus::Pending,
                },
            })
            .collect();
        self.plans += 1;
        let id = format!("acp_plan_{}", self.plans);
        let input = json!({"action": "create", "todos": todos});
        let call = self.open_call(id.clone(), crate::tool::todo::TOOL_NAME.into(), input);
        self.open.remove(&id);
        let list = todos.clone();
        self.live.update_metadata(|m| m.arbor.todos = Some(list));
        let text = json!({"status": "created", "count": todos.len(), "todos": todos}).to_string();
        self.close_with(&call, text, false, Some(ToolEffect::Todo(todos)));
    }

    fn append_assistant(&mut self, blocks: Vec<ContentBlock>, calls: Vec<ToolCall>) {
        if blocks.is_empty() && calls.is_empty() {
            return;
        }
        let text: String = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.to_string()),
                _ => None,
            })
            .collect();
        if !text.is_empty() {
            self.last_text = text;
        }
        self.live.append(Message::Assistant(AssistantMessage {
            content: blocks,
            tool_calls: calls,
            timestamp: Some(now_rfc3339()),
            metadata: Some(json!({"author": self.live.agent_name, "acp": true}).into()),
        }));
    }

    /// Ends the turn's record: open calls get a result saying they did not finish,
    /// and the streamed answer is appended (with the turn's usage). Returns the turn's
    /// answer (its last text).
    pub fn finish(&mut self, why_open: &str) -> String {
        for id in std::mem::take(&mut self.order) {
            if let Some(call) = self.open.remove(&id) {
                self.close_with(&call, why_open.to_string(), true, None);
            }
        }
        let blocks = std::mem::take(&mut self.blocks);
        if !blocks.is_empty() {
            self.append_assistant(blocks, Vec::new());
        }
        self.last_text.clone()
    }
}

/// The transcript name of an ACP tool kind (`read`, `edit`, `execute`, …).
fn kind_name(kind: ToolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".into())
}

/// A tool call's result as text: its text content, its diffs as unified diffs, a
/// terminal by id, else its raw output as JSON.
fn result_text(content: &[ToolCallContent], raw_output: Option<&Value>) -> String {
    let mut parts = Vec::new();
    for item in content {
        match item {
            ToolCallContent::Content(c) => {
                if let AcpBlock::Text(t) = &c.content {
                    parts.push(t.text.clone());
                }
            }
            ToolCallContent::Diff(d) => {
                let path = d.path.display().to_string();
                parts.push(unified_diff(&path, d.old_text.as_deref(), &d.new_text));
            }
            ToolCallContent::Terminal(t) => {
                parts.push(format!("[terminal {}]", t.terminal_id.0));
            }
            _ => {}
        }
    }
    if parts.is_empty()
        && let Some(raw) = raw_output.filter(|v| !v.is_null())
    {
        parts.push(match raw {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    parts.join("\n")
}
