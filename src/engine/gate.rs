//! The approval gate (SPEC §12): whether one tool call may run, asked before it runs.
//!
//! Owns: the approval policy of a session ([`session_policy`]: config `approvals:`
//! with full authority, the bundle plan's and the session agent's `approvals:` at
//! their tier's authority) combined with the "always" grants of its tree; acting on
//! the decision — `allow` runs the call, `deny` refuses it with a result naming the
//! rule, `ask` publishes `approval:required`, runs the `Notification` hooks
//! (`notify_hooks`; in the TUI while it waits) and, in the TUI, sets the session
//! `waiting` and waits for the person's answer or the session's cancellation, while
//! headless runs deny it (or grant it with `--yes`); recording an "always" answer as a
//! grant for the tree, after which every other call of the tree still waiting is
//! decided again and runs (`remembered`) when the new grant covers it (issue 22);
//! publishing `approval:granted` / `approval:denied`; and the
//! result texts the model reads for a call that did not run. Does not own: the rules
//! and their precedence (`config::approvals`), the tier of an agent file
//! (`agent::approvals`), the registry of waiting calls (`approvals`), running the call
//! (`calls`), or asking the person (`tui`).
//!
//! A call that did not run gets an error result whose first line says why: "denied by
//! policy: …" (with the deciding key), "denied: … re-run with --yes …" (headless),
//! "denied by the person: …", or "cancelled: …" (the session was cancelled while the
//! call waited).

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approvals::{ApprovalMode, set_awaiting};
use super::env::TurnEnv;
use super::live::LiveSession;
use crate::agent::AgentSource;
use crate::agent::approvals::overlay_rules;
use crate::config::approvals::{
    ApprovalPolicy, Authority, DecidedBy, Decision, Grant, RuleSource, Verdict, default_decision,
};
use crate::config::modules::describe;
use crate::session::message::ToolCall;
use crate::session::protocol::{
    ApprovalDecision, ApprovalDeniedEvent, ApprovalGrantedEvent, ApprovalRequiredEvent,
    DecisionKind,
};
use crate::session::{EngineEvent, SessionStatus};
use crate::tool::confine::truncate_chars;
use crate::tool::{Tool, ToolOutput};

/// A summary longer than this many bytes is cut (the command itself is sent whole).
const SUMMARY_MAX: usize = 200;

/// What the gate lets happen to one call.
pub(crate) enum Pass {
    /// Run the call.
    Run,
    /// Do not run it; this is its result.
    Refused(ToolOutput),
}

/// The gate of one session's turn: its policy, built once per turn.
pub(crate) struct Gate<'a> {
    env: &'a TurnEnv,
    live: &'a LiveSession,
    policy: ApprovalPolicy,
    /// The hooks (and MCP servers) in force for this turn, read when it started.
    powers: Arc<super::project_powers::Powers>,
}

impl<'a> Gate<'a> {
    /// The gate for `live`'s calls with the policy of its config, bundle and agent,
    /// and the hooks of the project as it stands now (read again for every turn, so
    /// a change of trust applies to the next one: `project_powers`).
    pub fn new(env: &'a TurnEnv, live: &'a LiveSession) -> Self {
        Self {
            env,
            live,
            policy: session_policy(env, live),
            powers: env.refresh_powers(),
        }
    }

    /// The person's hook commands (`hooks`), which `calls` runs around each call.
    pub fn hooks(&self) -> &crate::hooks::HookRunner {
        &self.powers.hooks
    }

    /// The calling session's transcript file, for a hook's `transcript_path`.
    pub fn transcript_path(&self) -> std::path::PathBuf {
        crate::hooks::transcript_path(&self.env.paths, &self.live.id)
    }

    /// The calling session's directory in the store (`ToolContext::session_dir`).
    pub fn session_dir(&self) -> std::path::PathBuf {
        self.env.paths.sessions_dir().join(self.live.id.as_str())
    }

    /// Decides `call` of `tool` and, when it asks, gets the answer (a person's, or the
    /// headless mode's). Never fails: every way a call does not run is a
    /// [`Pass::Refused`] result for the model.
    pub async fn check(
        &self,
        tool: &Arc<dyn Tool>,
        call: &ToolCall,
        token: &CancellationToken,
    ) -> Pass {
        let grants = self.env.grants.of(&self.live.root_id);
        let verdict = self
            .policy
            .decide(&call.tool, tool.module(), &call.arguments, &grants);
        match verdict.decision {
            Decision::Allow => {
                self.note_allowed(call, &verdict);
                Pass::Run
            }
            Decision::Deny => {
                let reason = verdict.decided_by.to_string();
                self.denied(call, DecisionKind::Policy, Some(reason.clone()));
                Pass::Refused(ToolOutput::error(format!(
                    "denied by policy: {} is denied by {reason}; this call did not run and \
                     will not be allowed, so do not retry it",
                    call.tool
                )))
            }
            Decision::Ask => {
                // Nobody is asked about a call that would be refused anyway.
                if let Some(reason) = tool.refuse_before_asking(&call.arguments).await {
                    self.denied(call, DecisionKind::Policy, Some(reason.clone()));
                    return Pass::Refused(ToolOutput::error(reason));
                }
                self.ask(tool, call, token).await
            }
        }
    }

    /// Whether a person answers this session's approvals (not a headless run).
    pub fn interactive(&self) -> bool {
        matches!(self.env.approval_mode, ApprovalMode::Interactive)
    }

    /// Asks the person whether `call` (a `bash` command the sandbox cut off from the
    /// network) may run once more with network (`escalate`): its own prompt, yes
    /// (once) or no. Headless, nobody is asked and it stays refused.
    pub async fn escalate(
        &self,
        tool: &Arc<dyn Tool>,
        call: &ToolCall,
        token: &CancellationToken,
    ) -> Pass {
        if !self.interactive() {
            return Pass::Refused(ToolOutput::error("no network"));
        }
        let mut required = self.required_event(tool, call).await;
        required.summary = format!("run again with network: {}", required.summary);
        required.sandbox = Some("this run only: network allowed, the rest sandboxed".into());
        required.escalation = Some("the sandbox blocked the network for this command".into());
        self.wait(tool, call, required, token).await
    }

    /// An allowed call that would ask by default says what allowed it
    /// (`approval:granted`): a rule (`policy`) or an "always" answer (`remembered`).
    fn note_allowed(&self, call: &ToolCall, verdict: &Verdict) {
        if default_decision(&call.tool) == Decision::Allow {
            return;
        }
        let (decision, rule, reason) = match &verdict.decided_by {
            DecidedBy::Grant(grant) => (DecisionKind::Remembered, Some(grant.key()), None),
            other => (DecisionKind::Policy, None, Some(other.to_string())),
        };
        self.granted(call, decision, rule, reason);
    }

    async fn ask(&self, tool: &Arc<dyn Tool>, call: &ToolCall, token: &CancellationToken) -> Pass {
        let required = self.required_event(tool, call).await;
        let transcript = self.transcript_path();
        let notify = || {
            Box::pin(super::notify_hooks::notification(
                self.live,
                self.hooks(),
                &transcript,
                &call.tool,
            ))
        };
        match self.env.approval_mode {
            ApprovalMode::Headless { yes: true } => {
                self.live.emit(EngineEvent::ApprovalRequired(required));
                notify().await;
                self.granted(call, DecisionKind::Headless, None, Some("--yes".into()));
                Pass::Run
            }
            ApprovalMode::Headless { yes: false } => {
                self.live.emit(EngineEvent::ApprovalRequired(required));
                notify().await;
                self.denied(
                    call,
                    DecisionKind::Headless,
                    Some("headless run without --yes".into()),
                );
                Pass::Refused(ToolOutput::error(headless_denial(&call.tool)))
            }
            ApprovalMode::Interactive => self.wait(tool, call, required, token).await,
        }
    }

    /// Registers the call, marks the session `waiting`, publishes
    /// `approval:required` and waits for the answer or the session's cancellation,
    /// running the `Notification` hooks meanwhile (the call goes on once they ended too;
    /// a cancellation stops them).
    async fn wait(
        &self,
        tool: &Arc<dyn Tool>,
        call: &ToolCall,
        required: ApprovalRequiredEvent,
        token: &CancellationToken,
    ) -> Pass {
        // Lazy: first polled below, after `approval:required` is out.
        let transcript = self.transcript_path();
        let mut notify = Box::pin(super::notify_hooks::notification(
            self.live,
            self.hooks(),
            &transcript,
            &call.tool,
        ));
        let mut notified = false;
        let mut covered = None;
        let answer = {
            let mut receiver = self.env.approvals.register(&self.live.id, &call.id);
            let mut grants_changed = self.env.grants.watch();
            let _waiting = Waiting::start(self.env, self.live, &call.id);
            self.live.emit(EngineEvent::ApprovalRequired(required));
            loop {
                tokio::select! {
                    biased;
                    () = token.cancelled() => break None,
                    answer = &mut receiver => break answer.ok(),
                    Ok(()) = grants_changed.changed() => {
                        // An "always" answer to another prompt of this tree may cover
                        // this call now (issue 22): run it without asking.
                        if let Some(pass) = self.covered_while_waiting(tool, call) {
                            covered = Some(pass);
                            break None;
                        }
                    }
                    () = &mut notify, if !notified => notified = true,
                }
            }
        };
        if !notified && !token.is_cancelled() {
            notify.await;
        }
        if let Some(pass) = covered {
            return pass;
        }
        self.answered(call, answer, token)
    }

    /// What the person's `answer` does to `call`: an allow runs it (an "always" adds
    /// its grant to the tree), a deny refuses it with the person's reason; no answer
    /// refuses it as cancelled (`token`) or withdrawn. Each is published.
    fn answered(
        &self,
        call: &ToolCall,
        answer: Option<ApprovalDecision>,
        token: &CancellationToken,
    ) -> Pass {
        match answer {
            Some(ApprovalDecision::Allow { scope }) => {
                match Grant::from_scope(&call.tool, &scope) {
                    None => self.granted(call, DecisionKind::Once, None, None),
                    Some(grant) => {
                        let rule = grant.key();
                        self.env.grants.add(&self.live.root_id, grant);
                        self.granted(call, DecisionKind::Always, Some(rule), None);
                    }
                }
                Pass::Run
            }
            Some(ApprovalDecision::Deny { reason }) => {
                let reason = reason
                    .map(|r| r.trim().to_string())
                    .filter(|r| !r.is_empty());
                self.denied(call, DecisionKind::Once, reason.clone());
                Pass::Refused(ToolOutput::error(match reason {
                    Some(r) => format!("denied by the person: {r}"),
                    None => {
                        "denied by the person (no reason given); this call did not run".to_string()
                    }
                }))
            }
            None if token.is_cancelled() => {
                self.denied(
                    call,
                    DecisionKind::Cancelled,
                    Some("the session was cancelled while the call waited for approval".into()),
                );
                Pass::Refused(ToolOutput::error(CANCELLED_WHILE_WAITING))
            }
            None => {
                self.denied(
                    call,
                    DecisionKind::Cancelled,
                    Some("the approval request was withdrawn".into()),
                );
                Pass::Refused(ToolOutput::error(
                    "not run: the approval request was withdrawn before anyone answered",
                ))
            }
        }
    }

    /// When the tree's grants now allow `call` (it waits for an answer): withdraws
    /// its prompt and says so (`approval:granted`, `remembered`, with the rule).
    fn covered_while_waiting(&self, tool: &Arc<dyn Tool>, call: &ToolCall) -> Option<Pass> {
        let grants = self.env.grants.of(&self.live.root_id);
        let verdict = self
            .policy
            .decide(&call.tool, tool.module(), &call.arguments, &grants);
        let DecidedBy::Grant(grant) = &verdict.decided_by else {
            return None;
        };
        if verdict.decision != Decision::Allow {
            return None;
        }
        self.env.approvals.withdraw(&self.live.id, &call.id);
        self.granted(call, DecisionKind::Remembered, Some(grant.key()), None);
        Some(Pass::Run)
    }

    /// `approval:required` for `call`: summary, the command of a `bash` call, the diff
    /// of a write or edit (the tool's preview; a call that would fail says why in the
    /// summary instead).
    async fn required_event(&self, tool: &Arc<dyn Tool>, call: &ToolCall) -> ApprovalRequiredEvent {
        let command = call
            .arguments
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_string);
        let preview = {
            let (tool, input, dir) = (
                tool.clone(),
                call.arguments.clone(),
                self.live.working_dir.clone(),
            );
            // Reads the current file (the sandbox note may probe the kernel): off the
            // async workers.
            tokio::task::spawn_blocking(move || {
                let preview = tool
                    .preview(&input, &dir)
                    .map(|r| r.map_err(|e| e.to_string()));
                (preview, tool.sandbox_note(&dir))
            })
            .await
            .unwrap_or_else(|e| (Some(Err(format!("no preview: {e}"))), None))
        };
        let (preview, sandbox) = preview;
        let sandbox = sandbox.map(|note| match worktree_branch(self.live) {
            Some(branch) => format!("{note}; runs in worktree {branch}"),
            None => note,
        });
        let mut summary = describe(&call.tool).summarize(&call.tool, &call.arguments);
        let diff = match preview {
            Some(Ok(diff)) => Some(diff),
            Some(Err(why)) => {
                summary = format!("{summary} (as it stands it would fail: {why})");
                None
            }
            None => None,
        };
        ApprovalRequiredEvent {
            tool_call_id: call.id.clone().into(),
            tool_name: call.tool.clone(),
            agent: self.live.agent_name.clone(),
            summary: truncate_chars(&summary, SUMMARY_MAX).to_string(),
            command,
            diff,
            sandbox,
            escalation: None,
        }
    }

    fn granted(
        &self,
        call: &ToolCall,
        decision: DecisionKind,
        rule: Option<String>,
        reason: Option<String>,
    ) {
        self.live
            .emit(EngineEvent::ApprovalGranted(ApprovalGrantedEvent {
                tool_call_id: call.id.clone().into(),
                tool_name: call.tool.clone(),
                agent: self.live.agent_name.clone(),
                decision,
                rule,
                reason,
            }));
    }

    fn denied(&self, call: &ToolCall, decision: DecisionKind, reason: Option<String>) {
        self.live
            .emit(EngineEvent::ApprovalDenied(ApprovalDeniedEvent {
                tool_call_id: call.id.clone().into(),
                tool_name: call.tool.clone(),
                agent: self.live.agent_name.clone(),
                decision,
                reason,
            }));
    }
}

/// The result of a call whose session was cancelled while it waited for approval.
pub const CANCELLED_WHILE_WAITING: &str =
    "cancelled: the session was cancelled while this call waited for approval; it did not run";

/// The result of an `ask` call in a headless run without `--yes`: its first line says
/// it was denied and how to allow it.
pub fn headless_denial(tool: &str) -> String {
    format!(
        "denied: {tool} needs approval and this headless run cannot ask; re-run with --yes to \
         allow it, or set approvals: {{{tool}: allow}} in config.\nThe call did not run."
    )
}

/// A call waiting for its answer: listed in the session's metadata with the status
/// `waiting` while it lives; on drop (answered, cancelled, or the turn dropped) its
/// registry entry is withdrawn and the status goes back to `running` once no call of
/// the session waits.
struct Waiting<'a> {
    env: &'a TurnEnv,
    live: &'a LiveSession,
    call_id: &'a str,
}

impl<'a> Waiting<'a> {
    fn start(env: &'a TurnEnv, live: &'a LiveSession, call_id: &'a str) -> Self {
        live.update_metadata(|m| {
            set_awaiting(m, call_id, true);
            m.status = SessionStatus::Waiting;
        });
        live.emit(EngineEvent::status(SessionStatus::Waiting));
        Self { env, live, call_id }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.env.approvals.withdraw(&self.live.id, self.call_id);
        let mut resumed = false;
        self.live.update_metadata(|m| {
            let left = set_awaiting(m, self.call_id, false);
            if left == 0 && m.status == SessionStatus::Waiting {
                m.status = SessionStatus::Running;
                resumed = true;
            }
        });
        if resumed {
            self.live.emit(EngineEvent::status(SessionStatus::Running));
        }
    }
}

/// The approval policy of `live`'s calls: config `approvals:` (full authority), then
/// the `approvals:` of the bundle's plan (tighten-only), then those of the session's
/// agent overlay at its tier's authority (metadata `agent_source`; an unknown tier is
/// tighten-only).
pub(crate) fn session_policy(env: &TurnEnv, live: &LiveSession) -> ApprovalPolicy {
    let mut policy = ApprovalPolicy::new(&env.config.approvals);
    if let Some(approvals) = live.plan.approvals.as_ref() {
        match approvals.get() {
            Ok(rules) => {
                policy = policy.with_layer(
                    RuleSource::Agent {
                        name: env.bundle.name.clone(),
                        tier: AgentSource::Bundle.as_str().to_string(),
                    },
                    Authority::TightenOnly,
                    rules,
                );
            }
            Err(issues) => tracing::warn!(
                session = %live.id,
                "the bundle's approvals are ignored: {}",
                issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
            ),
        }
    }
    let rules = overlay_rules(&live.agent_overlay);
    if rules.is_empty() {
        return policy;
    }
    let source = live.metadata().arbor.agent_source;
    let authority = source.map_or(Authority::TightenOnly, AgentSource::approval_authority);
    let tier = source.map_or("unknown", AgentSource::as_str);
    policy.with_layer(
        RuleSource::Agent {
            name: live.agent_name.clone(),
            tier: tier.to_string(),
        },
        authority,
        &rules,
    )
}

/// The branch of `live`'s active worktree (`arbor/9f6d2526`), for the approval
/// prompt's line on where a command runs (issue 35: `./` alone did not say that `./`
/// is a worktree, not the person's checkout).
fn worktree_branch(live: &LiveSession) -> Option<String> {
    live.metadata().active_worktree().map(|r| r.branch.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::AllowScope;
    use serde_json::json;

    /// The prompt's summary is the tool table's: the command's first line for
    /// `bash`, `VERB PATH` for a file tool, `MCP <server> · <tool> <arguments>`, else
    /// the name (`config::modules::descriptor` has the rest).
    #[test]
    fn summaries_name_the_command_or_the_file() {
        let summary = |tool: &str, input: &Value| describe(tool).summarize(tool, input);
        let bash = json!({"command": "cargo test\n  && rm -rf target"});
        assert_eq!(summary("bash", &bash), "cargo test …");
        let write = json!({"file_path": "src/a.rs", "content": "x"});
        assert_eq!(summary("write_file", &write), "write src/a.rs");
        assert_eq!(summary("edit_file", &write), "edit src/a.rs");
        assert_eq!(summary("mcp__x__y", &json!({})), "MCP x · y");
        assert_eq!(summary("grep", &json!({})), "grep");
    }

    #[test]
    fn the_headless_denial_says_denied_and_how_to_allow_on_its_first_line() {
        let text = headless_denial("bash");
        let first = text.lines().next().unwrap();
        assert!(first.contains("denied"), "{first}");
        assert!(first.contains("--yes"), "{first}");
        assert!(first.contains("approvals: {bash: allow}"), "{first}");
    }

    #[test]
    fn an_always_answer_makes_a_grant_with_a_policy_key() {
        let grant = Grant::from_scope("bash", &AllowScope::AlwaysPrefix("cargo test".into()));
        assert_eq!(grant.unwrap().key(), "bash(cargo test*)");
        assert!(Grant::from_scope("bash", &AllowScope::Once).is_none());
    }
}
