//! What bus events of the open session do to its thread, one typed handler each (the
//! TUI's dispatcher, `state::dispatch`, calls them): streaming deltas, appended
//! messages (`Thread::append_live`), tool-call progress, provider errors
//! ([`Thread::push_failure`]), notices (`Thread::push_notice`), cancellation, the
//! turn's end.
//!
//! Events it hears: `session:start` (the header's agent), `session:status` (a turn no
//! longer in flight), `content_block:delta` (text or thinking into the stream),
//! `tool:pre` (the call's card, running; a task call's sub-session),
//! `task:agent_spawned` / `task:agent_resumed` (the task card's sub-session),
//! `tool:post` / `tool:error` (the card's result; a delegation's typed result and a
//! checklist's notice from `tool:post`'s effect), `cancel:completed` and
//! `orchestrator:complete` (the turn ended; a failed turn's `error` as an error
//! cell), `agent:transfer` (the header's active agent; the hand-off mark comes with
//! the transfer's tool result).
//!
//! Owns: that mapping, and placing a provider failure ([`Thread::push_failure`]: a
//! retry notice replaced by the next retry or the final card). Does not own: tree
//! updates (`tree`) or how a failure card looks (`error_card`).

use super::cells::{CellKind, ToolStatus};
use super::error_card::ProviderFailure;
use super::thread::Thread;
use super::transcript::result_status;
use crate::session::protocol::{
    AgentTransferEvent, DeltaKind, OrchestratorCompleteEvent, SessionStartEvent, TaskCallFields,
    TaskResult, ToolEffect, ToolErrorEvent, ToolPostEvent, ToolPreEvent,
};
use crate::session::{SessionId, SessionStatus};
use crate::tui::theme::Theme;

impl Thread {
    /// `session:start` of this thread's session: the header names its agent.
    pub fn on_start(&mut self, start: &SessionStartEvent) {
        if !start.agent.is_empty() {
            self.agent = Some(start.agent.clone());
        }
    }

    /// `session:status` of this thread's session: a turn no longer in progress is
    /// not in flight.
    pub fn on_status(&mut self, status: SessionStatus) {
        if !status.turn_in_progress() {
            self.turn_in_flight = false;
        }
    }

    /// `content_block:delta`: text or thinking into the stream.
    pub fn on_delta(&mut self, kind: DeltaKind, delta: &str, theme: &Theme) {
        let Some(stream) = self.stream_mut() else {
            return;
        };
        match kind {
            DeltaKind::Text => {
                stream.push_text(delta, theme);
            }
            DeltaKind::Thinking => stream.push_thinking(delta),
        }
    }

    /// `tool:pre`: the call's card, running (a task call's card learns its
    /// sub-session).
    pub fn on_tool_pre(&mut self, pre: &ToolPreEvent) {
        self.card(
            &pre.tool_call_id,
            &pre.tool_name,
            &pre.tool_input.clone().into(),
        );
        if let Some(&i) = self.calls.get(pre.tool_call_id.as_str()) {
            self.set_running(i, sub_session(&pre.task));
        }
    }

    /// `task:agent_spawned` / `task:agent_resumed`: the task card of call
    /// `tool_call_id` runs sub-session `sub_session_id` of `agent` (a resuming call
    /// names only the session: its card learns the agent here, not at the result).
    pub fn on_sub_session(&mut self, tool_call_id: &str, sub_session_id: &SessionId, agent: &str) {
        if let Some(&i) = self.calls.get(tool_call_id) {
            if let Some(CellKind::Task(card)) = self.cells.get_mut(i).map(|c| &mut c.kind)
                && card.agent == "?"
                && !agent.is_empty()
            {
                card.agent = agent.to_string();
            }
            self.set_running(i, Some(sub_session_id.to_string()));
        }
    }

    /// `tool:post`: the card's result (a delegation's typed result from the post's
    /// effect), and a checklist the call set as a notice.
    pub fn on_tool_post(&mut self, post: &ToolPostEvent) {
        let result = match &post.effect {
            Some(ToolEffect::Task(result)) => Some(result),
            _ => None,
        };
        self.tool_result(&post.tool_call_id, &post.result, false, &post.task, result);
        if let Some(ToolEffect::Todo(list)) = &post.effect {
            self.push(CellKind::Checklist(list.clone().into_boxed_slice()));
        }
    }

    /// `tool:error`: the card's error result.
    pub fn on_tool_error(&mut self, error: &ToolErrorEvent) {
        self.tool_result(&error.tool_call_id, &error.error, true, &error.task, None);
    }

    /// `cancel:completed`: the turn ended cancelled.
    pub fn on_cancelled(&mut self) {
        self.push_notice("turn cancelled");
        self.turn_in_flight = false;
    }

    /// `agent:transfer`: the header's active agent (the hand-off mark comes with the
    /// transfer's tool result).
    pub fn on_transfer(&mut self, transfer: &AgentTransferEvent) {
        self.active_agent = Some(transfer.to.clone());
    }

    /// `orchestrator:complete`: the turn ended; a failed turn's error as an error cell
    /// (shown once: a provider failure card or the turn's outcome with the same text
    /// is not repeated).
    pub fn on_complete(&mut self, done: &OrchestratorCompleteEvent) {
        self.finalize_stream();
        self.turn_in_flight = false;
        if done.status == SessionStatus::Failed
            && let Some(error) = &done.error
        {
            self.push_error(error);
        }
    }

    /// A `tool:post` / `tool:error` for call `id`: its card gets the result (and a
    /// delegation's card the typed `result` of its effect).
    fn tool_result(
        &mut self,
        id: &str,
        content: &str,
        is_error: bool,
        task: &Option<TaskCallFields>,
        result: Option<&TaskResult>,
    ) {
        let Some(&i) = self.calls.get(id) else {
            return;
        };
        let status = result_status(content, is_error);
        // The tool message's `message:appended` follows and puts its shared text here.
        self.set_result(
            i,
            status,
            content.into(),
            sub_session(task).as_deref(),
            result,
        );
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

impl Thread {
    /// Shows a `provider:error`: replaces a pending-retry cell or a plain error cell
    /// with the same text when it is the last cell, else appends.
    pub fn push_failure(&mut self, failure: ProviderFailure) {
        self.finalize_stream();
        let replace = self.cells.last().is_some_and(|c| match &c.kind {
            CellKind::Failure(f) => f.is_retry() && f.provider == failure.provider,
            CellKind::Error(m) => !failure.is_retry() && **m == *failure.error,
            _ => false,
        });
        if replace && let Some(cell) = self.cells.last_mut() {
            cell.kind = CellKind::Failure(Box::new(failure));
            cell.invalidate();
            return;
        }
        self.push(CellKind::Failure(Box::new(failure)));
    }
}

/// The sub-session a task call's event names.
fn sub_session(task: &Option<TaskCallFields>) -> Option<String> {
    task.as_ref().map(|t| t.sub_session_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::{
        ProviderErrorEvent, ProviderErrorKind, ProviderWarningEvent, ToolPostEvent, ToolPreEvent,
    };
    use crate::session::{EngineEvent, Event};
    use crate::tui::testing::to_thread;
    use serde_json::{Value, json};

    /// Hands `event` to `t` as the TUI's dispatcher does for the open thread (`t`
    /// becomes the thread of the event's session when it has none).
    fn apply(t: &mut Thread, event: &Event, theme: &Theme) {
        t.session_id.get_or_insert_with(|| event.session_id.clone());
        to_thread(t, event, theme);
    }

    fn ev(msg: EngineEvent) -> Event {
        Event::new("root", None, msg)
    }

    /// A root thread of session `root`.
    fn root_thread() -> Thread {
        let mut t = Thread::new_root(None);
        t.session_id = Some("root".into());
        t
    }

    fn appended(message: &Value) -> Event {
        ev(EngineEvent::appended(
            serde_json::from_value(message.clone()).unwrap(),
        ))
    }

    fn text(delta: &str) -> Event {
        ev(EngineEvent::delta(DeltaKind::Text, delta))
    }

    fn task_pre(id: &str, child: &str) -> Event {
        ev(EngineEvent::ToolPre(ToolPreEvent {
            tool_call_id: id.into(),
            tool_name: "task".into(),
            task: Some(TaskCallFields {
                sub_session_id: child.into(),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    fn post(id: &str, result: &str) -> Event {
        ev(EngineEvent::ToolPost(ToolPostEvent {
            tool_call_id: id.into(),
            result: result.into(),
            ..Default::default()
        }))
    }

    #[test]
    fn a_resuming_task_card_names_its_agent_once_the_session_is_resumed() {
        let theme = Theme::builtin_dark(true);
        let mut t = root_thread();
        let resume = json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "c2", "name": "task", "input": {"session_id": "abc-def_scout", "instruction": "Look again"}}
        ]});
        apply(&mut t, &appended(&resume), &theme);
        let agent = |t: &Thread| match &t.cells[0].kind {
            CellKind::Task(card) => card.agent.clone(),
            other => panic!("not a task card: {other:?}"),
        };
        assert_eq!(agent(&t), "?");
        apply(
            &mut t,
            &ev(EngineEvent::TaskAgentResumed(
                crate::session::protocol::TaskAgentResumedEvent {
                    agent: "scout".into(),
                    sub_session_id: "abc-def_scout".into(),
                    tool_call_id: "c2".into(),
                    depth: 2,
                    resolved_model: None,
                },
            )),
            &theme,
        );
        assert_eq!(agent(&t), "scout");
        assert!(t.has_child("abc-def_scout"));
    }

    #[test]
    fn task_card_learns_its_child_and_result() {
        let theme = Theme::builtin_dark(true);
        let mut t = root_thread();
        let assistant = json!({"role": "assistant", "content": [
            {"type": "text", "text": "Delegating."},
            {"type": "tool_call", "id": "c1", "name": "task", "input": {"agent": "explorer", "instruction": "Look around"}}
        ]});
        apply(&mut t, &text("Deleg"), &theme);
        assert!(t.streaming().is_some());
        apply(&mut t, &appended(&assistant), &theme);
        assert!(t.streaming().is_none(), "final message replaces the stream");
        assert_eq!(t.cells.len(), 2);
        apply(&mut t, &task_pre("c1", "abc-def_explorer"), &theme);
        assert!(t.has_child("abc-def_explorer"));
        // The card reads the typed result of the post's effect, not its text.
        let result = TaskResult {
            response: "found it".into(),
            session_id: "abc-def_explorer".into(),
            agent: "explorer".into(),
            status: SessionStatus::Completed,
            turn_count: 1,
            error: None,
            budget: None,
            isolation: None,
        };
        apply(
            &mut t,
            &ev(EngineEvent::ToolPost(ToolPostEvent {
                tool_call_id: "c1".into(),
                tool_name: "task".into(),
                result: "(the task tool's text)".into(),
                effect: Some(ToolEffect::Task(result)),
                ..Default::default()
            })),
            &theme,
        );
        let CellKind::Task(card) = &t.cells[1].kind else {
            panic!("not a task card")
        };
        assert_eq!(card.status, ToolStatus::Done);
        assert_eq!(card.response.as_deref(), Some("found it"));
        t.selected = Some(1);
        assert_eq!(
            t.activate(false),
            Some(crate::tui::action::UiAction::OpenThread(
                "abc-def_explorer".into()
            ))
        );
    }

    #[test]
    fn a_call_id_reused_by_a_later_response_gets_its_own_card() {
        let theme = Theme::builtin_dark(true);
        let mut t = root_thread();
        let call = json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "call_1", "name": "task", "input": {"agent": "explorer", "instruction": "Look"}}
        ]});
        for (n, child) in ["r-1_explorer", "r-2_explorer"].iter().enumerate() {
            apply(&mut t, &appended(&call), &theme);
            apply(&mut t, &task_pre("call_1", child), &theme);
            let cards = t
                .cells
                .iter()
                .filter(|c| matches!(c.kind, CellKind::Task(_)));
            assert_eq!(cards.count(), n + 1, "tool:pre does not add a card");
            apply(&mut t, &post("call_1", "ok"), &theme);
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
        apply(&mut t, &text("partial"), &theme);
        let error = ProviderErrorEvent {
            provider: "openai".into(),
            module: "provider-openai".into(),
            model: "gpt-4o".into(),
            kind: ProviderErrorKind::Server,
            status: Some(500),
            message: "boom".into(),
            error: "openai: 500 boom".into(),
            retryable: true,
            retrying: false,
            attempt: 4,
            max_attempts: 4,
            wait_ms: None,
            retry_after_ms: None,
        };
        apply(&mut t, &ev(EngineEvent::ProviderError(error)), &theme);
        assert!(matches!(&t.cells[0].kind, CellKind::Assistant(s) if &**s == "partial"));
        assert!(matches!(&t.cells[1].kind, CellKind::Failure(f) if f.error == "openai: 500 boom"));
        // The engine then saves the partial message: it replaces the provisional cell
        // in place, before the error.
        let partial = json!({"role": "assistant", "content": "partial text"});
        apply(&mut t, &appended(&partial), &theme);
        t.push_error("openai: 500 boom");
        assert_eq!(t.cells.len(), 2);
        assert!(matches!(&t.cells[0].kind, CellKind::Assistant(s) if &**s == "partial text"));
        assert!(matches!(&t.cells[1].kind, CellKind::Failure(_)));
    }

    #[test]
    fn a_root_rebuilt_from_its_bundle_shows_a_notice() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let rebuilt = crate::session::protocol::SessionRebuiltEvent {
            bundle: Some("bundle:foundation".into()),
            note: Some("bundle 'bundle:foundation' is not on this machine; rebuilt from arbor's active bundle 'arbor' (no stored config)".into()),
        };
        apply(&mut t, &ev(EngineEvent::SessionRebuilt(rebuilt)), &theme);
        assert!(
            matches!(&t.cells[0].kind, CellKind::Notice(n)
                if n.starts_with("bundle 'bundle:foundation' is not on this machine")),
            "{:?}",
            t.cells
        );
    }

    #[test]
    fn a_resume_that_moved_the_endpoint_shows_a_notice() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let changed = crate::session::protocol::ProviderEndpointChangedEvent {
            provider: "openai".into(),
            from: "http://127.0.0.1:1/v1".into(),
            to: "http://127.0.0.1:2/v1".into(),
        };
        apply(
            &mut t,
            &ev(EngineEvent::ProviderEndpointChanged(changed)),
            &theme,
        );
        assert!(
            matches!(&t.cells[0].kind, CellKind::Notice(n)
                if &**n == "endpoint changed: openai http://127.0.0.1:1/v1 → http://127.0.0.1:2/v1"),
            "{:?}",
            t.cells[0].kind
        );
    }

    #[test]
    fn a_response_that_skipped_malformed_events_shows_a_warning_after_its_text() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        apply(&mut t, &text("answer"), &theme);
        let warning = ProviderWarningEvent {
            provider: "openai".into(),
            model: "gpt-4o".into(),
            message: "2 malformed stream events skipped".into(),
            malformed_events: 2,
            first_malformed: "garbage".into(),
        };
        apply(&mut t, &ev(EngineEvent::ProviderWarning(warning)), &theme);
        apply(
            &mut t,
            &appended(&json!({"role": "assistant", "content": "answer"})),
            &theme,
        );
        let kinds: Vec<&CellKind> = t.cells.iter().map(|c| &c.kind).collect();
        assert!(
            matches!(
                kinds[..],
                [CellKind::Assistant(a), CellKind::Notice(n)]
                    if &**a == "answer" && &**n == "2 malformed stream events skipped (openai)"
            ),
            "{kinds:?}"
        );
    }

    /// A checklist a call set (its `tool:post` effect) is a notice; the call's input
    /// and result text are not read, and a post without the effect adds none.
    #[test]
    fn a_checklist_set_by_a_call_is_a_checklist_cell() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let list = serde_json::from_value(json!([
            {"content": "Read", "activeForm": "Reading", "status": "completed"},
            {"content": "Fix", "activeForm": "Fixing", "status": "in_progress"},
        ]))
        .unwrap();
        let post = |effect| {
            ev(EngineEvent::ToolPost(ToolPostEvent {
                tool_name: "todo".into(),
                tool_call_id: "t1".into(),
                result: "{}".into(),
                effect,
                ..Default::default()
            }))
        };
        apply(&mut t, &post(None), &theme);
        assert!(t.cells.is_empty());
        apply(&mut t, &post(Some(ToolEffect::Todo(list))), &theme);
        assert!(
            matches!(
                &t.cells[..],
                [c] if matches!(&c.kind, CellKind::Checklist(items) if items.len() == 2)
            ),
            "{:?}",
            t.cells.iter().map(|c| &c.kind).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_mcp_server_that_failed_is_a_notice_naming_it() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let failed = crate::session::protocol::McpServerFailedEvent {
            server: "ghost".into(),
            error: "cannot start '/x'".into(),
        };
        apply(&mut t, &ev(EngineEvent::McpServerFailed(failed)), &theme);
        assert!(
            matches!(
                &t.cells[..],
                [c] if matches!(&c.kind, CellKind::Notice(n)
                    if &**n == "MCP server 'ghost' is not available: cannot start '/x'")
            ),
            "{:?}",
            t.cells.iter().map(|c| &c.kind).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_session_notice_is_a_notice_cell() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let notice = crate::session::protocol::SessionNoticeEvent {
            message: "no live worker in pool gpu".into(),
        };
        apply(&mut t, &ev(EngineEvent::SessionNotice(notice)), &theme);
        assert!(
            matches!(
                &t.cells[..],
                [c] if matches!(&c.kind, CellKind::Notice(n) if &**n == "no live worker in pool gpu")
            ),
            "{:?}",
            t.cells.iter().map(|c| &c.kind).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_compaction_is_a_cell_whose_expansion_shows_the_summary() {
        let theme = Theme::builtin_dark(true);
        let mut t = Thread::new_root(None);
        let compaction = crate::session::protocol::ContextCompactionEvent {
            before_tokens: 3400,
            after_tokens: 1500,
            messages_removed: 10,
            summary: Some("The person wants the parser fixed.".into()),
            ..Default::default()
        };
        // While the summary is written the thread says so; the compaction cell then
        // takes that note's place.
        apply(
            &mut t,
            &ev(EngineEvent::ContextCompacting(
                crate::session::protocol::ContextCompactingEvent {
                    trigger: "auto".into(),
                    messages: 10,
                },
            )),
            &theme,
        );
        assert!(
            matches!(&t.cells[..], [c] if matches!(&c.kind, CellKind::Notice(n)
                if &**n == "compacting the context: summarising 10 messages…")),
            "{:?}",
            t.cells.iter().map(|c| &c.kind).collect::<Vec<_>>()
        );
        apply(
            &mut t,
            &ev(EngineEvent::ContextCompaction(compaction)),
            &theme,
        );
        let [cell] = &mut t.cells[..] else {
            panic!("one cell expected");
        };
        assert!(cell.is_interactive());
        let text = |cell: &mut super::super::cells::Cell| {
            let mut stats = super::super::rows::LayoutStats::default();
            cell.invalidate();
            cell.ensure_layout(80, &theme, &mut stats);
            (0..cell.height())
                .filter_map(|i| cell.row(i).map(crate::tui::wrap::plain))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let collapsed = text(cell);
        assert!(
            collapsed.contains("context compacted: 3400 → 1500 tokens (10 messages summarised)"),
            "{collapsed}"
        );
        assert!(!collapsed.contains("parser"), "{collapsed}");
        cell.expanded = true;
        assert!(text(cell).contains("The person wants the parser fixed."));
    }
}
