//! `arbor session list|show|tree|resume|continue|diff|export|rename`, and
//! `merge|discard|rewind` (`isolation`), `fork` (`fork`) and `cleanup` (`cli::worktrees`)
//! of issue 25. One function per subcommand, each in the file that owns its words:
//! `list`, `show`, `tree`, `turns` (`resume`, `continue`), `diff`, `isolation`, `fork`.
//!
//! Every subcommand but `cleanup` goes through one headless engine handle
//! (`engine::Engine`, made by [`Context::quiet_engine`]), never the store: what it
//! reads it asks as `EngineQuery`s (`ResolveSession`, `ListSessions`, `ShowSession`,
//! `LoadMetadata`, `LoadChanges`, `ExportSession`), what it changes it sends as
//! `EngineCommand`s (`RenameSession`, `MergeSession`, `DiscardSession`,
//! `RewindSession`, `ForkSession(As)`, `ListSessions`, and `SetModel`, `Submit`,
//! `Continue`, `ContinueInterrupted` for a turn; `cli::run` prints those).
//!
//! A worktree session's `session diff` is `git diff` of its branch against its base.
//!
//! `session diff ID [--subtree]` prints the session's changes as a unified diff rebuilt
//! from its transcript (`tool::filesystem::changes`); nothing when it changed nothing.
//!
//! `session list --json` / `session show ID --json` print
//! `{session_id, name, parent_id, agent_name, status, depth, turn_count, created,
//! last_updated, children: [ids]}` (an array for `list`; `name` is the title, `null`
//! when none); `show` adds `files_changed` (`[{path, tool, lines_added,
//! lines_removed, created, changes}]`, the files the session's tools wrote or edited),
//! `context` (`{tokens, max_tokens}` of its latest request view, `null` before its
//! first model call) and, with `--transcript`, `transcript` (the messages). Every ID
//! argument takes what `SessionStore::resolve` accepts: a full id, an unambiguous
//! prefix, a root's 8-character UUID prefix, a sub-session's 8-character span (`#`
//! optional).

use clap::{Subcommand, ValueEnum};
use color_eyre::Result;

use super::OutputFormat;
use super::call::{reply, unexpected};
use super::context::{Context, ContextOptions};
use super::out;
use crate::engine::{Engine, EngineError, EngineReply, QueryReply};
use crate::outln;
use crate::session::protocol::ExportFormat as DocumentFormat;
use crate::session::{EngineCommand, EngineQuery, SessionId};

mod diff;
mod fork;
mod isolation;
mod list;
mod show;
mod table;
mod tree;
mod turns;

/// `arbor session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List sessions of this project (full ids, parent, agent, status, turns, updated).
    List {
        /// Sessions of every project under $AMPLIFIER_HOME/projects.
        #[arg(long)]
        all_projects: bool,
        /// Print the sessions' metadata as JSON, one array.
        #[arg(long)]
        json: bool,
    },
    /// Show one session.
    Show {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// Print the metadata (and transcript) as JSON.
        #[arg(long)]
        json: bool,
        /// Include the transcript.
        #[arg(long)]
        transcript: bool,
    },
    /// Print the session tree (all roots of this project, or the subtree of ID), each
    /// session with its tokens and cost, its subtree's, and its budget.
    Tree {
        /// The session whose subtree to print (default: every root of this project).
        id: Option<String>,
    },
    /// Continue any session (sub-sessions included) with a new instruction, headless.
    Resume {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// The message to send it.
        instruction: String,
        /// Model for the session's next turns: `MODEL` on its provider, or
        /// `PROVIDER/MODEL`; a glob (`claude-sonnet-*`) picks the newest listed match.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// `text` (the answer on stdout), `json` (one result object), or `jsonl`
        /// (every event as a line).
        #[arg(long, value_enum, default_value_t)]
        output_format: OutputFormat,
        /// Allow the tool calls that would ask for approval (writes, bash). Calls the
        /// approval policy denies stay denied.
        #[arg(long)]
        yes: bool,
    },
    /// Continue a stopped session (interrupted, failed, cancelled, paused) as `r` does
    /// in the TUI (another status is refused): the model call that never got an answer runs again, or `Continue.` is sent.
    /// With --tree, every interrupted session of ID's tree, children first, as `R` does:
    /// a continued sub-session's answer becomes its parent's task result. Exits 0 when
    /// every continued session completed.
    Continue {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// Continue every interrupted session of the tree under ID, children first.
        #[arg(long)]
        tree: bool,
        /// `text` (the answer on stdout), `json` (one result object), or `jsonl`
        /// (every event as a line).
        #[arg(long, value_enum, default_value_t)]
        output_format: OutputFormat,
        /// Allow the tool calls that would ask for approval (writes, bash). Calls the
        /// approval policy denies stay denied.
        #[arg(long)]
        yes: bool,
    },
    /// Give a session a title (shown in the tree and `session list`).
    Rename {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// The title: its first line, at most 60 characters.
        title: String,
    },
    /// Print what a session's write_file / edit_file calls changed, as a unified diff
    /// rebuilt from its transcript.
    Diff {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// Include every sub-session's changes (each after a `# session ID (agent)` line).
        #[arg(long)]
        subtree: bool,
    },
    /// Apply a sub-session's worktree changes to its parent's working tree (three-way;
    /// a conflict refuses the whole merge and names the files), then remove its
    /// worktree and branch.
    Merge {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// On a conflict, write git-style conflict markers into the files instead of
        /// refusing (resolve them by hand).
        #[arg(long)]
        markers: bool,
    },
    /// Remove a sub-session's worktree and branch, dropping its changes.
    Discard {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
    },
    /// Restore the files the session changed after turn N (write_file and bash
    /// changes) from its checkpoints; files changed since by someone else are refused
    /// unless --force.
    Rewind {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// The last turn whose files stay (1-based).
        #[arg(long, value_name = "N")]
        to_turn: u64,
        /// Restore files changed since by someone else too.
        #[arg(long)]
        force: bool,
    },
    /// Fork a session at a turn (Amplifier's layout: a new session beside it with
    /// `parent_id` and `forked_from_turn`), resumable at once.
    Fork {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// The turn to fork at (1-based; default: the latest).
        #[arg(long, value_name = "N")]
        at_turn: Option<u64>,
        /// The new session's title (default: the original's, marked `(fork @N)`);
        /// its id is always a new UUID.
        #[arg(long)]
        name: Option<String>,
        /// Print `{session_id, parent_id, forked_from_turn}`.
        #[arg(long)]
        json: bool,
    },
    /// List the sub-session worktrees a crash left with no session; --yes removes them
    /// (worktree, branch).
    Cleanup {
        /// Remove them (without it, only list them).
        #[arg(long)]
        yes: bool,
    },
    /// Export a session and its whole subtree as one file on stdout.
    Export {
        /// The session: its full id or a unique prefix of it (the tree shows `#1a2b3c4d`).
        id: String,
        /// `md` (a readable transcript) or `json` (the sessions' files as one object).
        #[arg(long, value_enum, default_value_t = ExportFormat::Md)]
        format: ExportFormat,
    },
}

/// `session export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
}

/// Runs a session subcommand; returns the exit code. `model` (`arbor --model M
/// session resume …`; `resume --model` wins) switches a resumed or continued session's
/// model before its turn (`SetModel`); other subcommands ignore it.
pub async fn run(
    cmd: SessionCommand,
    model: Option<String>,
    options: ContextOptions,
) -> Result<i32> {
    let ctx = Context::load(&options)?;
    // `--yes` of the subcommands that run a turn.
    let yes = match &cmd {
        SessionCommand::Resume { yes, .. } | SessionCommand::Continue { yes, .. } => *yes,
        _ => false,
    };
    let (engine, _registry) = ctx.quiet_engine(yes);
    let engine = &engine;
    match cmd {
        SessionCommand::List { all_projects, json } => list::run(engine, all_projects, json).await,
        SessionCommand::Show {
            id,
            json,
            transcript,
        } => show::run(engine, &id, json, transcript).await,
        SessionCommand::Tree { id } => tree::run(engine, &ctx, id.as_deref()).await,
        SessionCommand::Resume {
            id,
            instruction,
            model: own_model,
            output_format,
            yes: _,
        } => {
            let resume = turns::Resume {
                instruction,
                model: own_model.or(model),
                format: output_format,
            };
            turns::resume(engine, &ctx, &id, resume).await
        }
        SessionCommand::Continue {
            id,
            tree,
            output_format,
            yes: _,
        } => turns::continue_(engine, &ctx, &id, (tree, model), output_format).await,
        SessionCommand::Diff { id, subtree } => diff::run(engine, &id, subtree).await,
        SessionCommand::Merge { id, markers } => isolation::merge(engine, &id, markers).await,
        SessionCommand::Discard { id } => isolation::discard(engine, &id).await,
        SessionCommand::Rewind { id, to_turn, force } => {
            isolation::rewind(engine, &id, to_turn, force).await
        }
        SessionCommand::Fork {
            id,
            at_turn,
            name,
            json,
        } => fork::run(engine, &id, at_turn, name, json).await,
        SessionCommand::Rename { id, title } => rename(engine, &ctx, &id, title).await,
        SessionCommand::Export { id, format } => export(engine, &id, format).await,
        // Not a session's: the worktrees no session claims.
        SessionCommand::Cleanup { yes } => {
            super::worktrees::cleanup(&ctx.paths.worktrees_dir(), yes)
        }
    }
}

/// `session rename ID TITLE`: `RenameSession`; prints `ID: TITLE` (the title stored).
async fn rename(engine: &Engine, ctx: &Context, id: &str, title: String) -> Result<i32> {
    let Some(id) = resolved(engine, id).await else {
        return Ok(1);
    };
    offer_cleanup(ctx);
    let command = EngineCommand::RenameSession {
        session_id: id.clone(),
        title,
    };
    let renamed = match reply(engine, command).await {
        Ok(EngineReply::SessionRenamed { result, .. }) => result,
        Ok(other) => Err(unexpected(other)),
        Err(e) => Err(e),
    };
    match renamed {
        Ok(name) => {
            outln!("{id}: {name}")?;
            Ok(0)
        }
        Err(e) => fail(&e),
    }
}

/// `session export ID [--format md|json]`: the engine's `ExportSession`, printed.
async fn export(engine: &Engine, id: &str, format: ExportFormat) -> Result<i32> {
    let Some(id) = resolved(engine, id).await else {
        return Ok(1);
    };
    let format = match format {
        ExportFormat::Md => DocumentFormat::Markdown,
        ExportFormat::Json => DocumentFormat::Json,
    };
    let query = EngineQuery::ExportSession {
        session_id: id,
        format,
    };
    let text = match engine.ask(query).await {
        QueryReply::ExportSession(result) => result,
        other => Err(unexpected(other)),
    };
    // Both exports are whole documents already (the JSON one pretty-printed,
    // messages as objects): print them as they are.
    match text {
        Ok(text) => {
            outln!("{text}")?;
            Ok(0)
        }
        Err(e) => fail(&e),
    }
}

/// The session `id` names (the engine's `ResolveSession`): a full id, or why none —
/// a missing one said in full (issue 23 item 10: what was looked for, in which
/// project, and how to look in the others).
async fn resolve(engine: &Engine, id: &str) -> std::result::Result<SessionId, EngineError> {
    let query = EngineQuery::ResolveSession { id: id.to_string() };
    match engine.ask(query).await {
        QueryReply::ResolveSession(result) => result,
        other => Err(unexpected(other)),
    }
}

/// [`resolve`], saying on stderr why there is no session (`None`: exit 1).
async fn resolved(engine: &Engine, id: &str) -> Option<SessionId> {
    resolve(engine, id)
        .await
        .inspect_err(|e| out::error(e))
        .ok()
}

/// Before a subcommand that runs a turn or writes a session: says on stderr when
/// worktrees are left over from a crash (`worktrees::offer_cleanup`).
fn offer_cleanup(ctx: &Context) {
    super::worktrees::offer_cleanup(&ctx.paths.worktrees_dir());
}

fn fail(e: &dyn std::fmt::Display) -> Result<i32> {
    out::error(e);
    Ok(1)
}
