//! The approval prompts waiting for the person (SPEC §12, §13 "modal prompts"): one per
//! `approval:required` of any session of this process, oldest first; the front one is
//! shown and takes the keyboard.
//!
//! Bus events it hears (from the TUI's dispatcher, `state::dispatch`):
//! `approval:required` (queued once per session and tool call), `approval:granted` /
//! `approval:denied` (that prompt goes: the engine decided, e.g. the subtree was
//! cancelled), and a turn's end (`orchestrator:complete`, `session:end`,
//! `cancel:completed`: every prompt of that session goes, since no call of a finished
//! turn still waits).
//!
//! Keys (from the keymap's `approval.*` actions): allow once, allow always (the tool,
//! or a simple `bash` command's prefix, in this tree), allow always and save the rule
//! to the user's config (`A`), deny with an optional one-line
//! reason (typed after the deny key; Enter sends, Esc goes back to the prompt), deny
//! at once (Esc), scroll a long command or diff, fold or unfold a diff to its changed
//! files (`d`; a merge review — `merge: review` — starts folded and reads `y` merge,
//! `n` leave it on its branch). For [`ANSWER_GRACE_MS`] after a
//! prompt comes to the front its answer keys are ignored, so keys typed for the
//! composer just before it appeared answer nothing. `approval.thread` docks the front
//! prompt below the panes so the asking session's thread can be read (the `App` opens
//! it); docked, the answer keys still answer and the same key (or Esc) brings it
//! back, with the grace again.
//!
//! Owns: the queue, the reason being typed, the scroll of the front prompt, and what
//! "always" means for a call ([`PendingApproval::always`]). Does not own: sending the
//! answer (the `App`, as `EngineCommand::ResolveApproval`), or drawing
//! (`views::approval`).

use crate::session::ids::SessionId;
use std::collections::{HashMap, VecDeque};

use crossterm::event::{KeyCode, KeyEvent};
use jiff::Timestamp;

use crate::config::approvals::pattern::suggest_prefix;
use crate::config::modules::describe;
use crate::session::protocol::{AllowScope, ApprovalDecision, ApprovalRequiredEvent};
use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::key::KeyBinding;
use crate::tui::keymap::Action;

/// How long answer keys are ignored after a prompt comes to the front (ms).
pub const ANSWER_GRACE_MS: i64 = 400;

/// The note for "always" on a call that has none.
const NO_ALWAYS: &str = "no \"always\" for this command (it chains, pipes, redirects, expands, \
     or runs a shell, env or an interpreter): allow it once or deny";

/// The note for "always" on a merge review.
const NO_ALWAYS_MERGE: &str =
    "each finished child's merge is answered on its own: y merges it, n leaves it on its branch";

/// Longest deny reason kept, in characters (it goes back to the model).
pub const MAX_REASON_CHARS: usize = 500;

/// One tool call waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    /// The asking session.
    pub session_id: SessionId,
    /// What it asks (tool, agent, summary, command or diff).
    pub request: ApprovalRequiredEvent,
}

impl PendingApproval {
    /// Whether this is a finished child's merge review (`merge: review`), not a tool
    /// call: its answers read "merge" / "leave it on its branch".
    pub fn is_merge(&self) -> bool {
        self.request.tool_name == crate::engine::review::TOOL
    }

    /// Whether this asks to run a command once more with network (Codex's
    /// escalation): only yes (once) or no apply.
    pub fn is_escalation(&self) -> bool {
        self.request.escalation.is_some()
    }

    /// The files a diff of this request changes (`+++ b/<path>`, or `--- a/<path>`
    /// for a deleted file), in the diff's order.
    pub fn changed_files(&self) -> Vec<String> {
        let Some(diff) = &self.request.diff else {
            return Vec::new();
        };
        let mut files: Vec<String> = Vec::new();
        let mut old = None;
        for line in diff.lines() {
            if let Some(path) = line.strip_prefix("--- a/") {
                old = Some(path.to_string());
            } else if let Some(path) = line.strip_prefix("+++ ") {
                let path = match path.strip_prefix("b/") {
                    Some(new) => Some(new.to_string()),
                    None => old.take(),
                };
                files.extend(path.filter(|p| !files.contains(p)));
            }
        }
        files
    }

    /// What "always" allows for this call, with exactly the rule it applies as a
    /// policy key: a call of a tool that takes command patterns (its descriptor in
    /// the tool table has a command field: `bash`) of one plain simple command that runs no wrapper
    /// allows its prefix (the program, plus a subcommand word such as `test` in `cargo
    /// test --lib`: `bash(cargo test*)`, word bounded —
    /// `config::approvals::pattern::suggest_prefix`); any other tool allows the tool
    /// (`write_file`). `None` for any other `bash` command (chains, pipes, redirects,
    /// substitutions, comments, wrappers such as `sh -c`, `env`, `python3` …, or
    /// empty): such a command can only be allowed once (issue 22).
    pub fn always(&self) -> Option<(AllowScope, String)> {
        if self.is_merge() || self.is_escalation() {
            return None;
        }
        let tool = &self.request.tool_name;
        if describe(tool).command_field.is_none() {
            return Some((AllowScope::AlwaysTool, tool.clone()));
        }
        let command = self.request.command.as_deref().unwrap_or_default();
        let prefix = suggest_prefix(command)?;
        let rule = format!("{tool}({prefix}*)");
        Some((AllowScope::AlwaysPrefix(prefix), rule))
    }
}

/// The prompts waiting, oldest first, and the state of the front one.
#[derive(Debug, Clone, Default)]
pub struct ApprovalQueue {
    pending: VecDeque<PendingApproval>,
    /// The deny reason being typed for the front prompt (`Some` after the deny key).
    reason: Option<String>,
    /// First body row of the front prompt shown.
    scroll: u16,
    /// When the front prompt came to the front.
    front_since: Option<Timestamp>,
    /// The front prompt is docked below the panes while the person reads the asking
    /// session's thread (`approval.thread`); a new front prompt undocks.
    docked: bool,
    /// The person toggled the front prompt's diff (`approval.diff`): a merge review
    /// then shows its diff, any other prompt its changed files only.
    diff_toggled: bool,
}

impl ApprovalQueue {
    /// `approval:required` of `session` at `now`: queued once per session and tool
    /// call. Returns whether the queue changed.
    pub fn on_required(
        &mut self,
        session: &SessionId,
        request: &ApprovalRequiredEvent,
        now: Timestamp,
    ) -> bool {
        if self.position(session, &request.tool_call_id).is_some() {
            return false;
        }
        let front = self.front_key();
        self.pending.push_back(PendingApproval {
            session_id: session.clone(),
            request: request.clone(),
        });
        self.front_moved(front, now);
        true
    }

    /// `approval:granted` / `approval:denied` of `session`'s call `tool_call_id` at
    /// `now`: the engine decided (e.g. the subtree was cancelled), so its prompt goes.
    /// Returns whether the queue changed.
    pub fn on_answered(&mut self, session: &str, tool_call_id: &str, now: Timestamp) -> bool {
        let (before, front) = (self.pending.len(), self.front_key());
        self.remove(session, tool_call_id);
        self.front_moved(front, now);
        self.pending.len() != before
    }

    /// `session`'s turn ended (`orchestrator:complete`, `session:end`,
    /// `cancel:completed`) at `now`: every prompt of it goes, since no call of a
    /// finished turn still waits. Returns whether the queue changed.
    pub fn on_turn_ended(&mut self, session: &str, now: Timestamp) -> bool {
        let (before, front) = (self.pending.len(), self.front_key());
        self.pending.retain(|p| p.session_id != session);
        self.front_moved(front, now);
        self.pending.len() != before
    }

    /// The prompt shown (the oldest waiting).
    pub fn front(&self) -> Option<&PendingApproval> {
        self.pending.front()
    }

    /// How many prompts wait (the shown one included).
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no prompt waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The deny reason being typed, when the person pressed the deny key.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether the front prompt is docked (the panes take the keys but its answers).
    pub fn docked(&self) -> bool {
        self.docked && !self.pending.is_empty()
    }

    /// Docks the front prompt (`true`) or shows it over everything again.
    pub fn set_docked(&mut self, docked: bool) {
        self.docked = docked && !self.pending.is_empty();
    }

    /// Shows a docked prompt over everything again at `now`, with the grace of a
    /// prompt that just came to the front: an Esc pressed twice to leave the thread
    /// brings the prompt back and does not also deny (issue 23 item 2).
    pub fn undock(&mut self, now: Timestamp) {
        if self.docked() {
            self.front_since = Some(now);
        }
        self.docked = false;
    }

    /// Why the front prompt has no "always".
    fn no_always(&self) -> String {
        match self.front() {
            Some(front) if front.is_merge() => NO_ALWAYS_MERGE.into(),
            _ => NO_ALWAYS.into(),
        }
    }

    /// Whether the front prompt shows its diff folded to the changed files: a merge
    /// review does until `approval.diff`, any other prompt after it.
    pub fn diff_folded(&self) -> bool {
        self.front().is_some_and(PendingApproval::is_merge) != self.diff_toggled
    }

    /// First body row of the front prompt to show.
    pub fn scroll(&self) -> u16 {
        self.scroll
    }

    /// Sessions with waiting prompts, with how many each.
    pub fn waiting_sessions(&self) -> HashMap<SessionId, usize> {
        let mut out = HashMap::new();
        for p in &self.pending {
            *out.entry(p.session_id.clone()).or_insert(0) += 1;
        }
        out
    }

    /// Handles a key for the front prompt at `now`; `action` is the key's `approval.*`
    /// action, if bound. Every key is used (the prompt is modal). Answering removes the
    /// prompt and emits [`UiAction::ResolveApproval`]; "always" on a call that has no
    /// always emits a note instead.
    pub fn handle_key(
        &mut self,
        key: &KeyEvent,
        action: Option<Action>,
        now: Timestamp,
    ) -> KeyOutcome {
        if self.pending.is_empty() {
            return KeyOutcome::Ignored;
        }
        if self.reason.is_some() {
            return self.type_reason(key, now);
        }
        let answering = matches!(
            action,
            Some(
                Action::ApprovalAllow
                    | Action::ApprovalAlways
                    | Action::ApprovalAlwaysSave
                    | Action::ApprovalDeny
                    | Action::ApprovalDenyNow
            )
        );
        if answering && self.in_grace(now) {
            return KeyOutcome::Consumed;
        }
        match action {
            Some(Action::ApprovalAllow) => self.answer(
                ApprovalDecision::Allow {
                    scope: AllowScope::Once,
                },
                now,
            ),
            Some(Action::ApprovalAlways) => match self.front().and_then(PendingApproval::always) {
                Some((scope, _)) => self.answer(ApprovalDecision::Allow { scope }, now),
                None => KeyOutcome::Emit(UiAction::Note(self.no_always())),
            },
            Some(Action::ApprovalAlwaysSave) => self.always_and_save(now),
            Some(Action::ApprovalDeny) => {
                self.reason = Some(String::new());
                KeyOutcome::Consumed
            }
            Some(Action::ApprovalDenyNow) => {
                self.answer(ApprovalDecision::Deny { reason: None }, now)
            }
            Some(Action::ApprovalDiff) => {
                self.diff_toggled = !self.diff_toggled;
                self.scroll = 0;
                KeyOutcome::Consumed
            }
            Some(Action::ApprovalUp) => {
                self.scroll = self.scroll.saturating_sub(1);
                KeyOutcome::Consumed
            }
            Some(Action::ApprovalDown) => {
                self.scroll = self.scroll.saturating_add(1);
                KeyOutcome::Consumed
            }
            _ => KeyOutcome::Consumed,
        }
    }

    /// A key while the deny reason is typed: Enter denies with it (none when blank),
    /// Esc stops typing it, Backspace and text edit it (within
    /// [`MAX_REASON_CHARS`]).
    fn type_reason(&mut self, key: &KeyEvent, now: Timestamp) -> KeyOutcome {
        let Some(reason) = &mut self.reason else {
            return KeyOutcome::Consumed;
        };
        match key.code {
            KeyCode::Enter => {
                let text = reason.trim().to_string();
                let reason = Some(text).filter(|t| !t.is_empty());
                return self.answer(ApprovalDecision::Deny { reason }, now);
            }
            KeyCode::Esc => self.reason = None,
            KeyCode::Backspace => {
                reason.pop();
            }
            KeyCode::Char(c)
                if KeyBinding::from_event(key).is_some_and(|b| b.is_text())
                    && reason.chars().count() < MAX_REASON_CHARS =>
            {
                reason.push(c);
            }
            _ => {}
        }
        KeyOutcome::Consumed
    }

    /// Allows the front call always, as "always" does, and asks for its rule to be
    /// saved as `allow` in the user's config (a note when the call has no always).
    fn always_and_save(&mut self, now: Timestamp) -> KeyOutcome {
        let Some((scope, rule)) = self.front().and_then(PendingApproval::always) else {
            return KeyOutcome::Emit(UiAction::Note(self.no_always()));
        };
        match self.answer(ApprovalDecision::Allow { scope }, now) {
            KeyOutcome::Emit(UiAction::ResolveApproval {
                session_id,
                tool_call_id,
                decision,
            }) => KeyOutcome::Emit(UiAction::ResolveAndSave {
                session_id,
                tool_call_id,
                decision,
                rule,
            }),
            other => other,
        }
    }

    /// Takes pasted text into the deny reason being typed (its first line, within
    /// [`MAX_REASON_CHARS`]); returns `false` when no reason is being typed.
    pub fn paste(&mut self, text: &str) -> bool {
        let Some(reason) = &mut self.reason else {
            return false;
        };
        let room = MAX_REASON_CHARS.saturating_sub(reason.chars().count());
        let line = text.lines().next().unwrap_or_default();
        reason.extend(line.chars().filter(|c| !c.is_control()).take(room));
        true
    }

    /// Keeps the scroll within a body of `rows` rows shown `visible` at a time (the
    /// view reports it after laying out).
    pub fn clamp_scroll(&mut self, rows: usize, visible: usize) {
        let max = u16::try_from(rows.saturating_sub(visible)).unwrap_or(u16::MAX);
        self.scroll = self.scroll.min(max);
    }

    fn answer(&mut self, decision: ApprovalDecision, now: Timestamp) -> KeyOutcome {
        let front = self.front_key();
        let Some(answered) = self.pending.pop_front() else {
            return KeyOutcome::Consumed;
        };
        self.front_moved(front, now);
        KeyOutcome::Emit(UiAction::ResolveApproval {
            session_id: answered.session_id,
            tool_call_id: answered.request.tool_call_id,
            decision,
        })
    }

    fn in_grace(&self, now: Timestamp) -> bool {
        self.front_since
            .is_some_and(|t| now.as_millisecond() - t.as_millisecond() < ANSWER_GRACE_MS)
    }

    fn position(&self, session: &str, call: &str) -> Option<usize> {
        self.pending
            .iter()
            .position(|p| p.session_id == session && p.request.tool_call_id == call)
    }

    fn remove(&mut self, session: &str, call: &str) {
        if let Some(i) = self.position(session, call) {
            self.pending.remove(i);
        }
    }

    fn front_key(&self) -> Option<(String, String)> {
        self.front()
            .map(|p| (p.session_id.to_string(), p.request.tool_call_id.to_string()))
    }

    /// A new front prompt starts unscrolled, with no reason typed, and its grace.
    fn front_moved(&mut self, before: Option<(String, String)>, now: Timestamp) {
        if self.front_key() != before {
            self.reason = None;
            self.scroll = 0;
            self.docked = false;
            self.diff_toggled = false;
            self.front_since = self.front().map(|_| now);
        }
    }
}

#[cfg(test)]
mod tests;
