//! The system prompt of a turn: the plan's instruction with its `@mentions`
//! expanded (`agent::mentions`), under the read rules of SPEC §12 "Trust".
//!
//! Owns: [`system_prompt`] — the project's `AGENTS.md` / `CLAUDE.md` added to every
//! session's prompt, which roots mentions resolve against, whether the
//! instruction is a project agent file's (confined to its project), the private
//! paths. Does not own: parsing or reading mentions (`agent::mentions`), the private
//! path list (`config::private`) or the turn loop (`turn`).

use std::path::{Path, PathBuf};

use super::env::TurnEnv;
use super::live::LiveSession;
use crate::agent::AgentSource;
use crate::agent::instructions;
use crate::agent::mentions::{self, MentionRoots};
use crate::config::MountPlan;
use crate::config::context::ContextConfig;
use crate::config::private::private_paths;
use crate::config::trust;

/// The plan's instruction with its `@mentions` expanded as foundation does
/// (`agent::mentions`): `@<bundle name>:path` against the active bundle's directory,
/// other paths against the session's working directory. Never a private path
/// (`config::private`); an instruction that is a project agent file's (the same text
/// as a project agent of the registry) mentions only files of its project. Mentions
/// that do not resolve stay as text (logged); refused ones are logged as warnings.
///
/// Every session's prompt ends with the project instructions of its own working
/// directory — `AGENTS.md`, `CLAUDE.md` and the like (`agent::instructions`, read
/// afresh each call, capped by config `context.project_instructions_max_bytes`,
/// confined to the project and never a private path — a skipped file is logged as a
/// warning): a root's and a sub-session's alike (Claude Code's subagents load
/// `CLAUDE.md` too).
pub(crate) fn system_prompt(env: &TurnEnv, live: &LiveSession, plan: &MountPlan) -> String {
    let mut system = expanded(env, live, plan);
    let (bundle, _) = ContextConfig::of_plan(plan);
    let max = bundle.overridden_by(ContextConfig::from_config(&env.config).0);
    let home = (env.env)("HOME").map(PathBuf::from);
    let private = private_paths(&env.paths, home.as_deref());
    if let Some(found) = instructions::load(&live.working_dir, max.instructions_max(), &private) {
        for why in &found.skipped {
            tracing::warn!(session = %live.id, "project instructions: {why}");
        }
        if !found.text.is_empty() {
            system.push_str("\n\n");
            system.push_str(&found.text);
        }
    }
    system
}

/// The plan's instruction with its mentions expanded.
fn expanded(env: &TurnEnv, live: &LiveSession, plan: &MountPlan) -> String {
    let instruction = plan.instruction();
    if !instruction.contains('@') {
        return instruction.to_string();
    }
    let home = (env.env)("HOME").map(PathBuf::from);
    let project = env
        .paths
        .project_agents_dir()
        .and_then(|d| d.parent().and_then(Path::parent).map(Path::to_path_buf))
        .or_else(|| trust::project_root(&live.working_dir))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p));
    let confined = env.registry().agents().iter().any(|def| {
        def.source == AgentSource::Project && def.instruction.trim() == instruction.trim()
    });
    let mut roots = MentionRoots {
        cwd: live.working_dir.clone(),
        private: private_paths(&env.paths, home.as_deref()),
        home,
        project,
        confined,
        ..Default::default()
    };
    if let Some(dir) = env.bundle.path.as_deref().and_then(Path::parent) {
        roots
            .namespaces
            .insert(env.bundle.name.clone(), dir.to_path_buf());
    }
    let (system, warnings) = mentions::expand(instruction, &roots);
    for warning in warnings {
        if warning.contains(": refused: ") {
            tracing::warn!(session = %live.id, "{warning}");
        } else {
            tracing::debug!(session = %live.id, "{warning}");
        }
    }
    system
}
