//! `merge: review` (issue 35 item 3): a finished worktree child asks the person
//! whether its work comes home, as an approval — `approval:required` on the child's
//! session with tool name [`TOOL`], the summary `merge #1a2b3c4d (3 files) into
//! /repo?` and the branch's diff — answered like any approval (the TUI's `y`/`n`,
//! an editor's `session/request_permission` over ACP, both through
//! `EngineCommand::ResolveApproval`). Headless `arbor run --yes` merges; without
//! `--yes` nobody is asked and the work is left unmerged.
//!
//! Owns: asking and reading the answer. Does not own: the merge itself and the task
//! result's words (`homecoming`), the approval registry (`approvals`), showing the
//! prompt (`tui`, `acp`).

use tokio_util::sync::CancellationToken;

use super::approvals::ApprovalMode;
use super::env::TurnEnv;
use super::isolate::blocking;
use super::live::LiveSession;
use crate::isolation::WorktreeRecord;
use crate::session::EngineEvent;
use crate::session::ids::ToolCallId;
use crate::session::protocol::{
    ApprovalDecision, ApprovalDeniedEvent, ApprovalGrantedEvent, ApprovalRequiredEvent,
    DecisionKind,
};

/// The tool name of a merge review's `approval:required`.
pub const TOOL: &str = "merge";

/// What the person (or the headless mode) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Merge it now (the same steps as `merge: auto`).
    Merge,
    /// Leave it on its branch; why, for the task result.
    Leave(String),
}

/// The id of the review question of the child whose short id is `short`.
pub fn call_id(short: &str) -> ToolCallId {
    ToolCallId::from(format!("merge-{short}"))
}

/// `merge #1a2b3c4d (3 files) into /repo?`.
fn summary(short: &str, files: usize, record: &WorktreeRecord) -> String {
    format!(
        "merge #{short} ({files} file{}) into {}?",
        if files == 1 { "" } else { "s" },
        record.parent_dir().display()
    )
}

/// Asks whether `child`'s worktree `record` is merged, by `env`'s approval mode; a
/// cancellation of `token` (the task call's) while waiting leaves it.
pub(crate) async fn ask(
    env: &TurnEnv,
    child: &LiveSession,
    record: &WorktreeRecord,
    token: &CancellationToken,
) -> Answer {
    match env.approval_mode {
        ApprovalMode::Headless { yes: true } => return Answer::Merge,
        ApprovalMode::Headless { yes: false } => {
            return Answer::Leave(
                "merge: review, and nobody was asked (headless run without --yes)".into(),
            );
        }
        ApprovalMode::Interactive => {}
    }
    let short = child.id.short();
    let shown = record.clone();
    let (files, diff) = blocking(move || (shown.changed_files(), shown.diff())).await;
    let files = files.map(|f| f.len()).unwrap_or_default();
    let diff = diff.unwrap_or_else(|e| format!("(the diff could not be read: {e})"));
    let id = call_id(&short);
    let receiver = env.approvals.register(&child.id, &id);
    child.emit(EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
        tool_call_id: id.clone(),
        tool_name: TOOL.into(),
        agent: child.agent_name.clone(),
        summary: summary(&short, files, record),
        command: None,
        diff: Some(diff),
        sandbox: None,
        escalation: None,
    }));
    let answer = tokio::select! {
        biased;
        () = token.cancelled() => None,
        answer = receiver => answer.ok(),
    };
    env.approvals.withdraw(&child.id, &id);
    let denied = |decision, reason: Option<String>| {
        child.emit(EngineEvent::ApprovalDenied(ApprovalDeniedEvent {
            tool_call_id: id.clone(),
            tool_name: TOOL.into(),
            agent: child.agent_name.clone(),
            decision,
            reason,
        }));
    };
    match answer {
        Some(ApprovalDecision::Allow { .. }) => {
            child.emit(EngineEvent::ApprovalGranted(ApprovalGrantedEvent {
                tool_call_id: id.clone(),
                tool_name: TOOL.into(),
                agent: child.agent_name.clone(),
                decision: DecisionKind::Once,
                rule: None,
                reason: None,
            }));
            Answer::Merge
        }
        Some(ApprovalDecision::Deny { reason }) => {
            let reason = reason
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty());
            denied(DecisionKind::Once, reason.clone());
            Answer::Leave(match reason {
                Some(r) => format!("merge: review, and the person said no: {r}"),
                None => "merge: review, and the person said no".into(),
            })
        }
        None => {
            denied(
                DecisionKind::Cancelled,
                Some("cancelled while the merge question waited".into()),
            );
            Answer::Leave("merge: review, cancelled before the person answered".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::worktree::State;
    use std::path::PathBuf;

    #[test]
    fn the_question_names_the_child_its_files_and_the_target() {
        let record = WorktreeRecord {
            path: PathBuf::from("/wt/abcd1234"),
            branch: "arbor/abcd1234".into(),
            base: "0".repeat(40),
            repo: PathBuf::from("/repo"),
            subdir: String::new(),
            state: State::Active,
            git_dir: None,
            common_dir: None,
            changed: None,
        };
        assert_eq!(
            summary("abcd1234", 3, &record),
            "merge #abcd1234 (3 files) into /repo?"
        );
        assert_eq!(
            summary("abcd1234", 1, &record),
            "merge #abcd1234 (1 file) into /repo?"
        );
    }
}
