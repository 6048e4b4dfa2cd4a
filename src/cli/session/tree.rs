//! `arbor session tree [ID]`: the session tree (all roots of this project, or the
//! subtree of ID) from the engine's `ListSessions`, each session with its agent, title,
//! id, status, turns, its tokens and cost, its subtree's, its budget, and where a
//! fork or a worktree child stands (`isolation::tree_mark`). A root that names a
//! parent it is not shown under says why (`session::tree`).
//!
//! Owns: the tree's text. Does not own: the tree (`session::tree`), the listing
//! (`engine`).

use color_eyre::Result;

use super::{fail, isolation, resolve};
use crate::cli::call::{reply, unexpected};
use crate::cli::context::Context;
use crate::cli::out::plural;
use crate::config::budget::BudgetState;
use crate::engine::{Engine, EngineError, EngineReply};
use crate::outln;
use crate::session::tree::{SessionNode, build_tree};
use crate::session::{EngineCommand, Metadata};

/// Runs `session tree [ID]`. Exit 0, or 1 when ID names no session.
pub async fn run(engine: &Engine, ctx: &Context, id: Option<&str>) -> Result<i32> {
    let roots = build_tree(sessions(engine).await?);
    let roots: Vec<&SessionNode> = match id {
        None => roots.iter().collect(),
        Some(prefix) => match resolve(engine, prefix).await {
            Ok(id) => roots.iter().filter_map(|r| find(r, &id)).collect(),
            Err(e) => return fail(&e),
        },
    };
    if roots.is_empty() {
        outln!("no sessions in {}", ctx.paths.sessions_dir().display())?;
    }
    for root in roots {
        print_node(root, "", true, true)?;
    }
    Ok(0)
}

/// This project's stored sessions, newest first (the engine's `ListSessions`).
pub async fn sessions(engine: &Engine) -> std::result::Result<Vec<Metadata>, EngineError> {
    match reply(engine, EngineCommand::ListSessions).await? {
        EngineReply::SessionsListed(result) => result,
        other => Err(unexpected(other)),
    }
}

/// The node of `id` in the tree under `node`.
pub fn find<'a>(node: &'a SessionNode, id: &str) -> Option<&'a SessionNode> {
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
