//! `arbor session list|show|tree|resume|continue|diff|export|rename`, and
//! `merge|discard|rewind` (`isolation`), `fork` (`fork`) and `cleanup` (`cli::worktrees`)
//! of issue 25.
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
//! first model call) and, with `--transcript`, `transcript` (the messages). Every ID argument takes what
//! `SessionStore::resolve` accepts: a full id, an unambiguous prefix, a root's
//! 8-character UUID prefix, a sub-session's 8-character span (`#` optional).
//!
//! `resume` and `continue` drive the engine through its handle (`engine::Engine`:
//! `SetModel`, `Submit`, `Continue`, `ContinueInterrupted`; `cli::run` prints).

use std::collections::BTreeMap;

use clap::{Subcommand, ValueEnum};
use color_eyre::Result;
use serde_json::{Value, json};

use super::OutputFormat;
use super::context::{Context, ContextOptions};
use super::out::{self, plural};
use super::run::{TurnResult, drive_command, first_turn, set_model};
use crate::agent::bundle::locate;
use crate::config::budget::BudgetState;
use crate::engine::{Engine, EngineError, TurnOutcome};
use crate::outln;
use crate::session::SessionStatus;
use crate::session::store::{Unreadable, list_all_projects};
use crate::session::{EngineCommand, Metadata, SessionId};

mod fork;
mod isolation;
mod table;
use crate::session::tree::{SessionNode, build_tree, children_first_waves};

/// `arbor session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List sessions of this project (full ids, parent, agent, status, turns, updated).
    List {
        /// Sessions of every project under $AMPLIFIER_HOME/projects.
        #[arg(long)]
        all_projects: bool,
        #[arg(long)]
        json: bool,
    },
    /// Show one session.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
        /// Include the transcript.
        #[arg(long)]
        transcript: bool,
    },
    /// Print the session tree (all roots of this project, or the subtree of ID), each
    /// session with its tokens and cost, its subtree's, and its budget.
    Tree { id: Option<String> },
    /// Continue any session (sub-sessions included) with a new instruction, headless.
    Resume {
        id: String,
        instruction: String,
        /// Model for the session's next turns: `MODEL` on its provider, or
        /// `PROVIDER/MODEL`; a glob (`claude-sonnet-*`) picks the newest listed match.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
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
        id: String,
        /// Continue every interrupted session of the tree under ID, children first.
        #[arg(long)]
        tree: bool,
        #[arg(long, value_enum, default_value_t)]
        output_format: OutputFormat,
        /// Allow the tool calls that would ask for approval (writes, bash). Calls the
        /// approval policy denies stay denied.
        #[arg(long)]
        yes: bool,
    },
    /// Give a session a title (shown in the tree and `session list`).
    Rename {
        id: String,
        /// The title: its first line, at most 60 characters.
        title: String,
    },
    /// Print what a session's write_file / edit_file calls changed, as a unified diff
    /// rebuilt from its transcript.
    Diff {
        id: String,
        /// Include every sub-session's changes (each after a `# session ID (agent)` line).
        #[arg(long)]
        subtree: bool,
    },
    /// Apply a sub-session's worktree changes to its parent's working tree (three-way;
    /// a conflict refuses the whole merge and names the files), then remove its
    /// worktree and branch.
    Merge {
        id: String,
        /// On a conflict, write git-style conflict markers into the files instead of
        /// refusing (resolve them by hand).
        #[arg(long)]
        markers: bool,
    },
    /// Remove a sub-session's worktree and branch, dropping its changes.
    Discard { id: String },
    /// Restore the files the session changed after turn N (write_file and bash
    /// changes) from its checkpoints; files changed since by someone else are refused
    /// unless --force.
    Rewind {
        id: String,
        #[arg(long, value_name = "N")]
        to_turn: u64,
        /// Restore files changed since by someone else too.
        #[arg(long)]
        force: bool,
    },
    /// Fork a session at a turn (Amplifier's layout: a new session beside it with
    /// `parent_id` and `forked_from_turn`), resumable at once.
    Fork {
        id: String,
        /// The turn to fork at (1-based; default: the latest).
        #[arg(long, value_name = "N")]
        at_turn: Option<u64>,
        /// The new session's id and title (default: a new UUID).
        #[arg(long)]
        name: Option<String>,
        /// Print `{session_id, parent_id, forked_from_turn}`.
        #[arg(long)]
        json: bool,
    },
    /// List the sub-session worktrees a crash left with no session; --yes removes them
    /// (worktree, branch).
    Cleanup {
        #[arg(long)]
        yes: bool,
    },
    /// Export a session and its whole subtree as one file on stdout.
    Export {
        id: String,
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
/// session resume …`; `resume --model` wins) switches a resumed session's model before
/// its turn (`Runtime::set_model`); other subcommands ignore it.
pub async fn run(
    cmd: SessionCommand,
    model: Option<String>,
    options: ContextOptions,
) -> Result<i32> {
    let ctx = Context::load(&options)?;
    let store = ctx.store();
    match cmd {
        SessionCommand::List { all_projects, json } => {
            let (list, projects, unreadable) = if all_projects {
                let all = list_all_projects(&ctx.paths.projects_dir())?;
                let projects = all
                    .sessions
                    .iter()
                    .map(|(dir, m)| table::project_of(dir, m))
                    .collect::<Vec<_>>();
                let list = all.sessions.into_iter().map(|(_, m)| m).collect();
                (list, Some(projects), all.unreadable)
            } else {
                let listing = store.listing()?;
                (listing.sessions, None, listing.unreadable)
            };
            let children = children_index(&list);
            if json {
                let all: Vec<Value> = list
                    .iter()
                    .map(|m| summary_json(m, &children))
                    .chain(unreadable.iter().map(unreadable_json))
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&all)?)?;
            } else {
                table::print(&list, projects.as_deref(), &unreadable)?;
            }
            Ok(0)
        }
        SessionCommand::Show {
            id,
            json,
            transcript,
        } => {
            let id = match resolve(&ctx, &store, &id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            let loaded = match store.load(&id) {
                Ok(l) => l,
                Err(e) => return fail(&e),
            };
            let all = store.list()?;
            let children = children_index(&all);
            let mut v = summary_json(&loaded.metadata, &children);
            v["files_changed"] = serde_json::to_value(&loaded.metadata.arbor.files_changed)?;
            v["bundle"] = json!(loaded.metadata.bundle);
            if let Some(worktree) = isolation::show_json(&loaded.metadata) {
                v["worktree"] = worktree;
            }
            // Where a remote sub-session ran (issue 27): `{worker, host, pid}`.
            if let Some(ran_on) = loaded.metadata.arbor.ran_on.as_ref() {
                v["ran_on"] = serde_json::to_value(ran_on)?;
            }
            if let Some(turn) = loaded.metadata.forked_from_turn() {
                v["forked_from_turn"] = json!(turn);
            }
            // `{tokens, max_tokens}` of the latest request view, null before any call.
            v["context"] = json!(loaded.metadata.arbor.context);
            if let Some(note) = rebuild_note(&ctx, &loaded.metadata) {
                v["note"] = json!(note);
            }
            if transcript {
                v["transcript"] = serde_json::to_value(&loaded.transcript)?;
            }
            for w in &loaded.warnings {
                out::warning(w);
            }
            if json {
                outln!("{}", serde_json::to_string_pretty(&v)?)?;
            } else {
                print_show(
                    &loaded.metadata,
                    &v,
                    transcript.then_some(&loaded.transcript),
                )?;
            }
            Ok(0)
        }
        SessionCommand::Tree { id } => {
            let list = store.list()?;
            let roots = build_tree(list);
            let roots: Vec<&SessionNode> = match id {
                None => roots.iter().collect(),
                Some(prefix) => {
                    let id = match resolve(&ctx, &store, &prefix) {
                        Ok(id) => id,
                        Err(e) => return fail(&e),
                    };
                    roots.iter().filter_map(|r| find(r, &id)).collect()
                }
            };
            if roots.is_empty() {
                outln!("no sessions in {}", store.root().display())?;
            }
            for root in roots {
                print_node(root, "", true, true)?;
            }
            Ok(0)
        }
        SessionCommand::Resume {
            id,
            instruction,
            model: own_model,
            output_format,
            yes,
        } => {
            let model = own_model.or(model);
            let id = match resolve(&ctx, &store, &id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            let (runtime, _tx) = ctx.runtime(yes);
            let engine = Engine::headless(runtime);
            if let Some(model) = model
                && let Err(e) = set_model(&engine, Some(id.clone()), model).await
            {
                return fail(&e);
            }
            let submit = EngineCommand::Submit {
                session_id: Some(id.clone()),
                agent: None,
                prompt: instruction,
            };
            drive_command(&engine, &id, submit, output_format, first_turn).await
        }
        SessionCommand::Continue {
            id,
            tree,
            output_format,
            yes,
        } => {
            let id = match store.resolve(&id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            let (runtime, _tx) = ctx.runtime(yes);
            let engine = Engine::headless(runtime);
            if let Some(model) = model
                && let Err(e) = set_model(&engine, Some(id.clone()), model).await
            {
                return fail(&e);
            }
            if !tree {
                // As `r`: only a stopped session continues.
                let status = match store.load_metadata(&id) {
                    Ok((metadata, _)) => metadata.status,
                    Err(e) => return fail(&e),
                };
                if !matches!(
                    status,
                    SessionStatus::Interrupted
                        | SessionStatus::Failed
                        | SessionStatus::Cancelled
                        | SessionStatus::Paused
                ) {
                    return fail(&format!(
                        "session {id} is {}: continue resumes a stopped session (interrupted, failed, cancelled, paused); send it a message with: arbor session resume {id} \"…\"",
                        status.as_str()
                    ));
                }
                let command = EngineCommand::Continue {
                    session_id: id.clone(),
                };
                return drive_command(&engine, &id, command, output_format, first_turn).await;
            }
            let roots = build_tree(store.list()?);
            let waiting = roots.iter().find_map(|r| find(r, &id)).map_or(0, |node| {
                children_first_waves(node, |m| m.status == SessionStatus::Interrupted)
                    .concat()
                    .len()
            });
            if waiting == 0 {
                out::error(format!(
                    "nothing to continue: no session of the tree under {id} is interrupted"
                ));
                return Ok(0);
            }
            let command = EngineCommand::ContinueInterrupted {
                session_id: id.clone(),
            };
            drive_command(&engine, &id, command, output_format, continue_tree).await
        }
        SessionCommand::Diff { id, subtree } => {
            let id = match resolve(&ctx, &store, &id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            if !subtree
                && let Ok((metadata, _)) = store.load_metadata(&id)
                && let Some(diff) = isolation::diff(&metadata)
            {
                return match diff {
                    Ok(patch) => {
                        crate::out!("{patch}")?;
                        Ok(0)
                    }
                    Err(e) => fail(&e),
                };
            }
            match crate::tool::filesystem::changes::session_diffs(&store, &id, subtree) {
                Ok(diffs) => {
                    crate::out!("{}", crate::tool::filesystem::changes::render(&diffs))?;
                    if !subtree && diffs.iter().all(|d| d.files.is_empty()) {
                        note_subtree_changes(&store, &id);
                    }
                    Ok(0)
                }
                Err(e) => fail(&e),
            }
        }
        SessionCommand::Merge { id, markers } => match resolve(&ctx, &store, &id) {
            Ok(id) => isolation::merge(&store, &id, markers),
            Err(e) => fail(&e),
        },
        SessionCommand::Discard { id } => match resolve(&ctx, &store, &id) {
            Ok(id) => isolation::discard(&store, &id),
            Err(e) => fail(&e),
        },
        SessionCommand::Rewind { id, to_turn, force } => match resolve(&ctx, &store, &id) {
            Ok(id) => isolation::rewind(&store, &id, to_turn, force),
            Err(e) => fail(&e),
        },
        SessionCommand::Fork {
            id,
            at_turn,
            name,
            json,
        } => match resolve(&ctx, &store, &id) {
            Ok(id) => fork::run(&store, &id, at_turn, name.as_deref(), json),
            Err(e) => fail(&e),
        },
        SessionCommand::Cleanup { yes } => {
            super::worktrees::cleanup(&ctx.paths.worktrees_dir(), yes)
        }
        SessionCommand::Rename { id, title } => {
            let id = match resolve(&ctx, &store, &id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            let (runtime, _tx) = ctx.runtime(false);
            match runtime.rename(&id, &title) {
                Ok(name) => {
                    outln!("{id}: {name}")?;
                    Ok(0)
                }
                Err(e) => fail(&e),
            }
        }
        SessionCommand::Export { id, format } => {
            let id = match resolve(&ctx, &store, &id) {
                Ok(id) => id,
                Err(e) => return fail(&e),
            };
            // Both exports are whole documents already (the JSON one pretty-printed,
            // messages as objects): print them as they are.
            let out = match format {
                ExportFormat::Md => crate::session::export::export_markdown(&store, &id),
                ExportFormat::Json => crate::session::export::export_json(&store, &id),
            };
            match out {
                Ok(text) => {
                    outln!("{text}")?;
                    Ok(0)
                }
                Err(e) => fail(&e),
            }
        }
    }
}

/// For `session diff` without `--subtree` of a session that changed no file: says on
/// stderr when its sub-sessions did (how many sessions and files), and how to see them.
fn note_subtree_changes(store: &crate::session::SessionStore, id: &str) {
    let Ok(all) = crate::tool::filesystem::changes::session_diffs(store, id, true) else {
        return;
    };
    let below: Vec<_> = all.iter().skip(1).filter(|d| !d.files.is_empty()).collect();
    if below.is_empty() {
        return;
    }
    let files: usize = below.iter().map(|d| d.files.len()).sum();
    out::error(format!(
        "session {id} changed no file itself; its sub-sessions changed {} in {} \
         (arbor session diff {id} --subtree)",
        plural(files, "file"),
        plural(below.len(), "session"),
    ));
}

/// [`crate::session::SessionStore::resolve`], with a missing id said in full (issue 23
/// item 10): the SPEC §7 sentence for a sub-session id, else that no session of this
/// project has that id or prefix; either way which project was searched and how to
/// look in the others.
fn resolve(
    ctx: &Context,
    store: &crate::session::SessionStore,
    id: &str,
) -> std::result::Result<SessionId, ResolveError> {
    match store.resolve(id) {
        Ok(id) => Ok(id),
        Err(crate::session::StoreError::NotFound(missing)) => {
            Err(ResolveError::NotFound(not_found(ctx, &missing)))
        }
        Err(e) => Err(e.into()),
    }
}

/// Why `session <cmd> <id>` names no session.
#[derive(Debug, thiserror::Error)]
enum ResolveError {
    /// No session has that id or prefix: the full message of [`not_found`].
    #[error("{0}")]
    NotFound(String),
    /// The store refused the id (invalid, ambiguous prefix, unreadable).
    #[error(transparent)]
    Store(#[from] crate::session::StoreError),
}

/// The message for a session id (or prefix) no session of this project has.
fn not_found(ctx: &Context, id: &str) -> String {
    use crate::session::ids::IdShape;
    let first = match IdShape::of(id) {
        IdShape::Sub { .. } => crate::session::StoreError::NotFound(id.to_string()).to_string(),
        IdShape::Root { .. } => format!("Root session '{id}' not found."),
        IdShape::Other => format!("No session id or short id starts with '{id}'."),
    };
    format!(
        "{first} Looked among the sessions of project {} ({}); for every project's \
         sessions: arbor session list --all-projects",
        ctx.paths.cwd.display(),
        ctx.store().root().display()
    )
}

/// `session continue --tree`: the outcome of `ContinueInterrupted` of `id`'s tree
/// (every interrupted session continued, children first), from the `turns` it
/// answered: `Ok` with `id`'s outcome (else
/// the last one) when every continued session completed; otherwise `Err` naming each
/// one that did not (its id, agent, status and error), one a line.
fn continue_tree(
    id: &str,
    turns: Vec<TurnResult>,
) -> std::result::Result<TurnOutcome, EngineError> {
    let total = turns.len();
    let mut top = None;
    let mut problems = Vec::new();
    for turn in turns {
        match turn {
            Ok(outcome) => {
                if outcome.status != SessionStatus::Completed {
                    let error = outcome
                        .error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    problems.push(format!(
                        "{} ({}) ended {}{error}",
                        outcome.session_id,
                        outcome.agent,
                        outcome.status.as_str()
                    ));
                }
                if top.is_none() || outcome.session_id == id {
                    top = Some(outcome);
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    if !problems.is_empty() {
        return Err(EngineError::Other(format!(
            "{} of {} did not complete:\n  {}",
            problems.len(),
            plural(total, "continued session"),
            problems.join("\n  ")
        )));
    }
    top.ok_or_else(|| {
        EngineError::Other(format!(
            "nothing to continue: no session of the tree under {id} is interrupted"
        ))
    })
}

fn fail(e: &dyn std::fmt::Display) -> Result<i32> {
    out::error(e);
    Ok(1)
}

fn children_index(list: &[Metadata]) -> BTreeMap<SessionId, Vec<SessionId>> {
    let mut index: BTreeMap<SessionId, Vec<(String, SessionId)>> = BTreeMap::new();
    for m in list {
        if let Some(parent) = &m.parent_id {
            index
                .entry(parent.clone())
                .or_default()
                .push((m.created.clone(), m.session_id.clone()));
        }
    }
    index
        .into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, v.into_iter().map(|(_, id)| id).collect())
        })
        .collect()
}

/// For a root stored without `config` (as Amplifier writes roots): how a resume will
/// rebuild it — from its bundle, or from the active bundle standing in (why).
fn rebuild_note(ctx: &Context, m: &Metadata) -> Option<String> {
    if m.config.is_some() || m.parent_id.is_some() {
        return None;
    }
    let (_, note) = locate::bundle_for(&ctx.bundle, &ctx.paths, m.bundle.as_deref());
    let bundle = m.bundle.as_deref().unwrap_or("-");
    Some(
        note.unwrap_or_else(|| {
            format!("no stored config: resume rebuilds it from bundle {bundle}")
        }),
    )
}

/// The `session list --json` / `session show --json` object. `active_agent` is the
/// agent of its `sub_agents` tree that handles the next message (SPEC §11), else
/// `agent_name`.
pub fn summary_json(m: &Metadata, children: &BTreeMap<SessionId, Vec<SessionId>>) -> Value {
    json!({
        "session_id": m.session_id,
        "name": m.name,
        "parent_id": m.parent_id,
        "agent_name": m.agent_name,
        "active_agent": m.arbor.active_agent.as_deref().or(m.agent_name.as_deref()),
        "status": m.status,
        "depth": m.depth,
        "turn_count": m.turn_count,
        "created": m.created,
        "last_updated": m.last_updated,
        "children": children.get(&m.session_id).cloned().unwrap_or_default(),
        "work": crate::isolation::Standing::of(m).map(|s| s.to_string()),
    })
}

/// A `session list --json` entry for a directory that cannot be read:
/// `{"session_id", "status": "unreadable", "error"}`.
fn unreadable_json(u: &Unreadable) -> Value {
    json!({
        "session_id": u.session_id,
        "status": "unreadable",
        "error": u.reason,
    })
}

fn print_show(
    m: &Metadata,
    v: &Value,
    transcript: Option<&Vec<crate::session::Message>>,
) -> std::io::Result<()> {
    outln!("session   {}", m.session_id)?;
    outln!("title     {}", m.name.as_deref().unwrap_or("-"))?;
    outln!("parent    {}", m.parent_id.as_deref().unwrap_or("-"))?;
    outln!("agent     {}", m.agent_name.as_deref().unwrap_or("-"))?;
    if let Some(active) = m
        .arbor
        .active_agent
        .as_ref()
        .filter(|a| Some(*a) != m.agent_name.as_ref())
    {
        outln!("active    {active} (answers the next message)")?;
    }
    outln!("status    {}", m.status.as_str())?;
    outln!("depth     {}", m.depth)?;
    outln!("turns     {}", m.turn_count)?;
    outln!("model     {}", m.model.as_deref().unwrap_or("-"))?;
    if let Some(r) = &m.arbor.ran_on {
        outln!("ran on    {} (worker {}, pid {})", r.host, r.worker, r.pid)?;
    }
    if let Some(line) = isolation::show_line(m) {
        outln!("worktree  {line}")?;
    }
    outln!("bundle    {}", m.bundle.as_deref().unwrap_or("-"))?;
    if let Some(note) = v["note"].as_str() {
        outln!("note      {note}")?;
    }
    outln!("created   {}", m.created)?;
    outln!("updated   {}", m.last_updated)?;
    outln!(
        "tokens    {} in / {} out",
        m.usage.input_tokens,
        m.usage.output_tokens
    )?;
    if let Some(c) = &m.arbor.context {
        outln!("context   {} of {} tokens", c.tokens, c.max_tokens)?;
    }
    if let Some(children) = v["children"].as_array() {
        for c in children {
            outln!("child     {}", c.as_str().unwrap_or_default())?;
        }
    }
    for f in &m.arbor.files_changed {
        // A model chose the name: no control character reaches the terminal.
        let path: String = f
            .path
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        outln!(
            "changed   {path} (+{} -{}, {})",
            f.lines_added,
            f.lines_removed,
            f.tool
        )?;
    }
    if let Some(messages) = transcript {
        outln!()?;
        for msg in messages {
            outln!("[{}] {}", msg.role(), msg.text())?;
        }
    }
    Ok(())
}

fn find<'a>(node: &'a SessionNode, id: &str) -> Option<&'a SessionNode> {
    if node.metadata.session_id == id {
        return Some(node);
    }
    node.children.iter().find_map(|c| find(c, id))
}

/// Tokens (input + output) and cost (USD, where the config's price table priced the
/// calls) of `node` alone and of its whole subtree.
fn subtree_spend(node: &SessionNode) -> (u64, Option<f64>) {
    let u = &node.metadata.usage;
    let mut total = (u.input_tokens + u.output_tokens, u.cost);
    for child in &node.children {
        let (tokens, cost) = subtree_spend(child);
        total.0 += tokens;
        total.1 = match (total.1, cost) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
    total
}

/// ` · 1234 tok $0.0042 · subtree 5678 tok $0.01 · budget 15/10 tokens`: what
/// `session tree` adds to a row (each part only when there is something to say).
fn spend_text(node: &SessionNode) -> String {
    let m = &node.metadata;
    let usd = |c: f64| format!("${c:.4}");
    let own = (m.usage.input_tokens + m.usage.output_tokens, m.usage.cost);
    let part = |(tokens, cost): (u64, Option<f64>)| {
        let mut text = format!("{tokens} tok");
        if let Some(c) = cost {
            text.push(' ');
            text.push_str(&usd(c));
        }
        text
    };
    let mut out = String::new();
    if own.0 > 0 || own.1.is_some() {
        out.push_str(&format!(" · {}", part(own)));
    }
    if !node.children.is_empty() {
        let total = subtree_spend(node);
        if total != own {
            out.push_str(&format!(" · subtree {}", part(total)));
        }
    }
    if let Some(budget) = BudgetState::of(m) {
        out.push_str(&format!(" · budget {}", budget.progress(m)));
    }
    out
}

fn print_node(node: &SessionNode, prefix: &str, last: bool, root: bool) -> std::io::Result<()> {
    let m = &node.metadata;
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    // A root that names a parent it is not shown under says why (see session::tree).
    let note = match (node.detached, m.parent_id.as_deref()) {
        (Some(d), Some(parent)) => format!("  ({}: {parent})", d.note()),
        _ => String::new(),
    };
    let title = m
        .name
        .as_deref()
        .map(|t| format!(" \"{t}\""))
        .unwrap_or_default();
    outln!(
        "{prefix}{branch}{}{title} {} [{}] {}{}{note}{}",
        m.agent_name.as_deref().unwrap_or("-"),
        m.session_id,
        m.status.as_str(),
        plural(m.turn_count as usize, "turn"),
        spend_text(node),
        isolation::tree_mark(m)
    )?;
    let child_prefix = if root {
        prefix.to_string()
    } else if last {
        format!("{prefix}   ")
    } else {
        format!("{prefix}│  ")
    };
    let n = node.children.len();
    for (i, c) in node.children.iter().enumerate() {
        print_node(c, &child_prefix, i + 1 == n, false)?;
    }
    Ok(())
}
