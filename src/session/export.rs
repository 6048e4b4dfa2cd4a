//! Exporting a session with all its sub-sessions as one document (SPEC §14
//! `arbor session export ID --format md|json`).
//!
//! Owns: the Markdown and JSON export shapes. Does not own: reading sessions (`store`),
//! the tree (`tree`), or writing the file (`cli`). Exports contain what the store
//! holds, so stored secrets are already redacted.

use serde_json::{Value, json};

use super::message::{ContentBlock, Message};
use super::store::{LoadedSession, SessionStore, StoreError};
use super::tree::{SessionNode, build_tree, find};

/// The JSON export's `format` marker.
pub const JSON_FORMAT: &str = "arbor.session-export";

/// The session `id` and its descendants, each loaded fresh, pre-order (parent before
/// children, siblings oldest first), with each one's depth below `id` (0 for `id`).
fn load_subtree(store: &SessionStore, id: &str) -> Result<Vec<(usize, LoadedSession)>, StoreError> {
    let top = store.load(id)?;
    let tree = build_tree(store.list()?);
    let Some(node) = find(&tree, id) else {
        return Ok(vec![(0, top)]);
    };
    let mut out = vec![(0, top)];
    let mut stack: Vec<(usize, &SessionNode)> =
        node.children.iter().rev().map(|c| (1, c)).collect();
    while let Some((depth, node)) = stack.pop() {
        out.push((depth, store.load(node.id())?));
        stack.extend(node.children.iter().rev().map(|c| (depth + 1, c)));
    }
    Ok(out)
}

/// The subtree of `id` as one JSON document (pretty-printed):
/// `{"format":"arbor.session-export","version":1,"root":id,"session":S}` where
/// `S = {"metadata":{…},"transcript":[message…],"warnings":[…],"children":[S…]}`.
/// Errors: those of [`SessionStore::load`] for `id` or any descendant.
pub fn export_json(store: &SessionStore, id: &str) -> Result<String, StoreError> {
    let sessions = load_subtree(store, id)?;
    // Build bottom-up: a node's children are the following entries one level deeper.
    let mut pending: Vec<(usize, Value)> = Vec::new();
    for (depth, loaded) in sessions.into_iter().rev() {
        let mut children = Vec::new();
        while pending.last().is_some_and(|(d, _)| *d == depth + 1) {
            if let Some((_, child)) = pending.pop() {
                children.push(child);
            }
        }
        let value = json!({
            "metadata": loaded.metadata,
            "transcript": loaded.transcript,
            "warnings": loaded.warnings,
            "children": children,
        });
        pending.push((depth, value));
    }
    let session = pending.pop().map(|(_, v)| v).unwrap_or(Value::Null);
    let doc = json!({"format": JSON_FORMAT, "version": 1, "root": id, "session": session});
    serde_json::to_string_pretty(&doc).map_err(|e| StoreError::Io {
        context: format!("serializing export of '{id}'"),
        source: e.into(),
    })
}

/// The subtree of `id` as one Markdown document: a title, then per session (parent
/// before children) a `## Session` heading with its depth, a metadata list, any load
/// warnings, and the transcript (user/assistant text, thinking as quotes, tool calls
/// and results in fenced blocks). Errors: those of [`SessionStore::load`].
pub fn export_markdown(store: &SessionStore, id: &str) -> Result<String, StoreError> {
    let sessions = load_subtree(store, id)?;
    let mut out = format!(
        "# Session export: `{id}`\n\n{} session{}\n",
        sessions.len(),
        if sessions.len() == 1 { "" } else { "s" }
    );
    for (depth, loaded) in &sessions {
        render_session(&mut out, *depth, loaded);
    }
    Ok(out)
}

fn render_session(out: &mut String, depth: usize, loaded: &LoadedSession) {
    let m = &loaded.metadata;
    let agent = m.agent_name.as_deref().unwrap_or("-");
    out.push_str(&format!("\n## Session `{}` ({agent})\n\n", m.session_id));
    let mut field = |name: &str, value: &str| out.push_str(&format!("- {name}: {value}\n"));
    field("depth below export root", &depth.to_string());
    field("parent", m.parent_id.as_deref().unwrap_or("-"));
    field("agent", agent);
    field("model", m.model.as_deref().unwrap_or("-"));
    field("status", m.status.as_str());
    field("turns", &m.turn_count.to_string());
    field("created", &m.created);
    field("updated", &m.last_updated);
    if let Some(name) = &m.name {
        field("name", name);
    }
    for warning in &loaded.warnings {
        field("warning", warning);
    }
    for message in &loaded.transcript {
        render_message(out, message);
    }
}

fn render_message(out: &mut String, message: &Message) {
    match message {
        // An attached image as `📎 image (type, size)`, not its base64.
        Message::User(u) => out.push_str(&format!(
            "\n### User\n\n{}\n",
            super::image::shown(&u.content)
        )),
        Message::System(s) => out.push_str(&format!("\n### System\n\n{}\n", s.content)),
        Message::Assistant(a) => {
            match a.author() {
                Some(author) => out.push_str(&format!("\n### Assistant ({author})\n")),
                None => out.push_str("\n### Assistant\n"),
            }
            for block in &a.content {
                match block {
                    ContentBlock::Text { text } => out.push_str(&format!("\n{text}\n")),
                    ContentBlock::Thinking { thinking, .. } => {
                        out.push('\n');
                        for line in thinking.lines() {
                            out.push_str(&format!("> {line}\n"));
                        }
                    }
                    ContentBlock::RedactedThinking { .. } => {
                        out.push_str("\n> (redacted thinking)\n")
                    }
                    ContentBlock::ToolCall { id, name, input } => {
                        let args = serde_json::to_string_pretty(input).unwrap_or_default();
                        out.push_str(&format!("\nTool call `{name}` (`{id}`):\n\n"));
                        fenced(out, "json", &args);
                    }
                    ContentBlock::Unknown => {}
                }
            }
        }
        Message::Tool(t) => {
            let error = if t.is_error { " — error" } else { "" };
            out.push_str(&format!(
                "\n### Tool result `{}` (`{}`){error}\n\n",
                t.name, t.tool_call_id
            ));
            if super::image::has_images(&t.content) {
                fenced(out, "", &super::image::shown(&t.content));
            } else {
                fenced(out, "", &t.content);
            }
        }
    }
}

/// A fenced code block whose fence is longer than any backtick run in `body`.
fn fenced(out: &mut String, lang: &str, body: &str) {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    out.push_str(&format!("{fence}{lang}\n{body}\n{fence}\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attached_image_is_named_not_dumped() {
        let data = "A".repeat(4096);
        let text = format!("look: {}", super::super::image::marker("image/png", &data));
        let mut out = String::new();
        render_message(&mut out, &Message::user(text));
        assert!(out.contains("look: 📎 image (image/png, 3 KB)"), "{out}");
        assert!(!out.contains("AAAA"), "{out}");
    }

    #[test]
    fn fence_outgrows_backticks_in_content() {
        let mut out = String::new();
        fenced(&mut out, "", "a ```` b");
        assert!(out.starts_with("`````\n"), "{out}");
        let mut out = String::new();
        fenced(&mut out, "json", "{}");
        assert_eq!(out, "```json\n{}\n```\n");
    }
}
