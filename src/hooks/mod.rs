//! Hooks (issue 29): shell commands the person configures to run at points of a
//! session, with Claude Code's contract so existing hook scripts work.
//!
//! Owns: the configured hooks of a process ([`HookRunner::for_process`], `listing`:
//! the user's `config.yaml` `hooks:`, then a trusted project's settings files — an
//! untrusted project's hooks never run, and are listed as skipped with why), and running the ones an event matches
//! ([`HookRunner::run`]): each gets the event as JSON on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`,
//! `tool_response`, …); exit 0 passes, exit 2 blocks with stderr as the reason, other
//! codes are reported and pass; JSON stdout `{decision: "block", reason}`,
//! `{continue: false, stopReason}`, `hookSpecificOutput.permissionDecision: "deny"`
//! and `additionalContext` are honoured, read from the last MiB of stdout whatever
//! came before; a timeout (default 60 s) kills it. Every hook runs in a session of
//! its own with no controlling terminal (issue 34). The user's hooks run as the user,
//! with the user's environment; a project's run in the kernel sandbox like `bash`,
//! without arbor's secret variables.
//! For `SessionStart`, `SubagentStart` and `Notification` the engine passes the
//! event's `source`, agent name or `notification_type` where a tool name would go, so
//! `matcher` is read against them (Claude Code's rule).
//! Does not own: when events happen and what a block does to them (`engine`), the
//! `hook:ran` payload (`session::protocol`), or trust (`config::trust`).
//!
//! Layer: above `config`, `sandbox` and `session`; `engine` uses it.

pub mod config;
pub mod listing;
mod run;

pub use config::{HookCommand, HookConfigError, HookEvent, HookSource, Hooks};
pub use listing::{ListedHook, ProcessHooks};
pub use run::{HookRunner, HookVerdict, transcript_path};
