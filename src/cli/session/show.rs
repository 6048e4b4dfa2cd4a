//! `arbor session show ID [--json] [--transcript]`: the engine's `ShowSession` query,
//! printed as lines (`session   ID`, `title …`, … `changed …`, then the transcript) or
//! as the JSON object of `list` ([`summary_json`](super::list::summary_json)) with
//! `files_changed`, `bundle`, `worktree`, `ran_on`, `forked_from_turn`, `context`,
//! `note` and, with `--transcript`, `transcript`. The session's load warnings go to
//! stderr first.
//!
//! Owns: those texts. Does not own: reading the session, its children or its
//! rebuild note (`engine::handle::sessions`), the worktree's words (`isolation`).

use color_eyre::Result;
use serde_json::{Value, json};

use super::{fail, isolation, list, resolve};
use crate::cli::call::unexpected;
use crate::cli::out;
use crate::engine::{Engine, QueryReply};
use crate::outln;
use crate::session::{EngineQuery, Message, Metadata};

/// Runs `session show`. Exit 0, or 1 when there is no such session or it cannot be
/// read.
pub async fn run(engine: &Engine, id: &str, json: bool, transcript: bool) -> Result<i32> {
    let shown = match resolve(engine, id).await {
        Ok(session_id) => match engine.ask(EngineQuery::ShowSession { session_id }).await {
            QueryReply::ShowSession(result) => result,
            other => Err(unexpected(other)),
        },
        Err(e) => Err(e),
    };
    let shown = match shown {
        Ok(shown) => shown,
        Err(e) => return fail(&e),
    };
    let loaded = &shown.session;
    let mut v = list::summary_json(&loaded.metadata, &shown.children);
    add_details(&mut v, &loaded.metadata)?;
    if let Some(note) = &shown.rebuild_note {
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

/// What `show` adds to `list`'s object from the metadata `m`: `files_changed`,
/// `bundle`, `worktree`, `ran_on`, `forked_from_turn`, `context`.
fn add_details(v: &mut Value, m: &Metadata) -> serde_json::Result<()> {
    v["files_changed"] = serde_json::to_value(&m.arbor.files_changed)?;
    v["bundle"] = json!(m.bundle);
    if let Some(worktree) = isolation::show_json(m) {
        v["worktree"] = worktree;
    }
    // Where a remote sub-session ran (issue 27): `{worker, host, pid}`.
    if let Some(ran_on) = m.arbor.ran_on.as_ref() {
        v["ran_on"] = serde_json::to_value(ran_on)?;
    }
    if let Some(turn) = m.forked_from_turn() {
        v["forked_from_turn"] = json!(turn);
    }
    // `{tokens, max_tokens}` of the latest request view, null before any call.
    v["context"] = json!(m.arbor.context);
    Ok(())
}

fn print_show(m: &Metadata, v: &Value, transcript: Option<&Vec<Message>>) -> std::io::Result<()> {
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
    print_changed(m)?;
    if let Some(messages) = transcript {
        outln!()?;
        for msg in messages {
            outln!("[{}] {}", msg.role(), msg.text())?;
        }
    }
    Ok(())
}

/// The `changed` lines of `session show`: one per file the session's tools wrote.
fn print_changed(m: &Metadata) -> std::io::Result<()> {
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
    Ok(())
}
