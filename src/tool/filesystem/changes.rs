//! What a session changed, as a unified diff per file (SPEC §12 "its diff can be
//! viewed"), rebuilt from its transcript: the `write_file` and `edit_file` calls whose
//! results say they succeeded, in the order their results were recorded. Nothing is
//! read from the working directory (it may have moved on since).
//!
//! A file the session created is shown as one diff from nothing to its last content.
//! A file that existed before has no recorded earlier content, so each change is its
//! own patch (`--- a/<path>`/`+++ b/<path>` and its hunks, at the line numbers of the
//! file as that change found it: `git apply` and `patch` apply them in turn). A
//! change's hunks come from the session's `events.jsonl` (`tool:post`
//! `file_changed.hunks`, recorded when the call was made), else from replaying it on
//! content the session wrote itself. Only a session recorded before arbor kept hunks
//! (or whose `events.jsonl` is gone) has changes without a place: an edit is then
//! shown as its lines (`@@ edit_file … (line numbers unknown) @@`) and a `write_file`
//! as the new content whole — a readable record, not a patch.
//!
//! Owns: the replay and [`SessionDiff`]. Does not own: the edit rules or hunk text
//! (`diff`), reading sessions (`session::SessionStore`), colouring (`tui`).

use crate::session::ids::SessionId;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use std::io::{BufRead, BufReader};

use super::diff::{apply_edit, hunks, snippet_lines, unified_diff};
use crate::session::store::EVENTS_FILE;
use crate::session::{Message, SessionStore, StoreError};

/// One file's changes by one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The path the tools reported (relative to the working directory when inside it).
    pub path: String,
    /// `--- …`/`+++ b/<path>` then the hunks (see the module doc).
    pub diff: String,
    /// `+` lines of the hunks.
    pub added: usize,
    /// `-` lines of the hunks.
    pub removed: usize,
}

/// The changes of one session, files by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDiff {
    pub session_id: SessionId,
    /// The session's agent (metadata `agent_name`), when known.
    pub agent: Option<String>,
    pub files: Vec<FileDiff>,
}

/// The files `transcript`'s successful `write_file` / `edit_file` calls changed, by
/// path, each with its diff, with no recorded hunks (see [`replay_with`]).
pub fn replay(transcript: &[Message]) -> Vec<FileDiff> {
    replay_with(transcript, &HashMap::new())
}

/// [`replay`] using `recorded`: tool call id → the hunks its `tool:post` recorded
/// ([`recorded_hunks`]), which place a change the transcript alone cannot.
pub fn replay_with(transcript: &[Message], recorded: &HashMap<String, String>) -> Vec<FileDiff> {
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    let mut files: BTreeMap<String, FileState> = BTreeMap::new();
    for message in transcript {
        match message {
            Message::Assistant(a) => {
                for call in &a.tool_calls {
                    calls.insert(&call.id, (&call.tool, &call.arguments));
                }
                for block in &a.content {
                    if let crate::session::message::ContentBlock::ToolCall { id, name, input } =
                        block
                    {
                        calls.entry(id).or_insert((name, input));
                    }
                }
            }
            Message::Tool(result) if !result.is_error => {
                let Some(&(tool, input)) = calls.get(result.tool_call_id.as_str()) else {
                    continue;
                };
                let Ok(Value::Object(out)) = serde_json::from_str::<Value>(&result.content) else {
                    continue;
                };
                let Some(path) = out.get("file_path").and_then(Value::as_str) else {
                    continue;
                };
                let state = files.entry(path.to_string()).or_default();
                let hunks = recorded
                    .get(result.tool_call_id.as_str())
                    .map(String::as_str);
                match tool {
                    "write_file" => {
                        let created = out.get("created").and_then(Value::as_bool) == Some(true);
                        if let Some(content) = input.get("content").and_then(Value::as_str) {
                            state.write(content, created, hunks);
                        }
                    }
                    "edit_file" => {
                        let text = |k: &str| input.get(k).and_then(Value::as_str);
                        let replace_all = match input.get("replace_all") {
                            Some(Value::Bool(b)) => *b,
                            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
                            _ => false,
                        };
                        let count = out
                            .get("replacements_made")
                            .and_then(Value::as_u64)
                            .unwrap_or(1);
                        if let (Some(old), Some(new)) = (text("old_string"), text("new_string")) {
                            state.edit(old, new, replace_all, count, hunks);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    files
        .into_iter()
        .filter(|(_, s)| !s.steps.is_empty())
        .map(|(path, state)| state.render(path))
        .collect()
}

/// The diffs of session `id` (a full id), and with `subtree` of every descendant too
/// (the session first, then the others by creation), leaving out sessions that changed
/// nothing — the session itself is always there, maybe with no files.
///
/// Errors: the store's, for `id` (a descendant that cannot be read is left out).
pub fn session_diffs(
    store: &SessionStore,
    id: &str,
    subtree: bool,
) -> Result<Vec<SessionDiff>, StoreError> {
    let loaded = store.load(id)?;
    let mut out = vec![SessionDiff {
        session_id: loaded.metadata.session_id.clone(),
        agent: loaded.metadata.agent_name.clone(),
        files: replay_with(&loaded.transcript, &recorded_hunks(store, id)),
    }];
    if !subtree {
        return Ok(out);
    }
    let mut all = store.list()?;
    all.sort_by(|a, b| a.created.cmp(&b.created));
    let mut inside: HashSet<SessionId> = HashSet::from([loaded.metadata.session_id.clone()]);
    // Parents are created before their children: one pass in creation order finds
    // every descendant; a second catches clocks that disagree.
    for _ in 0..2 {
        for m in &all {
            let below = m.parent_id.as_ref().is_some_and(|p| inside.contains(p));
            if below && inside.insert(m.session_id.clone()) {
                let Ok(child) = store.load(&m.session_id) else {
                    continue;
                };
                let files = replay_with(&child.transcript, &recorded_hunks(store, &m.session_id));
                if !files.is_empty() {
                    out.push(SessionDiff {
                        session_id: m.session_id.clone(),
                        agent: m.agent_name.clone(),
                        files,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The hunks session `id`'s `tool:post` events recorded (`file_changed.hunks`), by
/// tool call id; empty when its `events.jsonl` is missing or unreadable (lines that
/// are not JSON are skipped).
pub fn recorded_hunks(store: &SessionStore, id: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(dir) = store.session_dir(id) else {
        return out;
    };
    let Ok(file) = std::fs::File::open(dir.join(EVENTS_FILE)) else {
        return out;
    };
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else {
            break;
        };
        // Most lines are other events: skip them before parsing.
        if !line.contains("\"hunks\"") {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let data = &event["data"];
        if event["event"] == "tool:post"
            && let (Some(call), Some(hunks)) = (
                data["tool_call_id"].as_str(),
                data["file_changed"]["hunks"].as_str(),
            )
        {
            out.insert(call.to_string(), hunks.to_string());
        }
    }
    out
}

/// `diffs` as one text: each file's diff; with several sessions, each session's files
/// after a `# session <id> (<agent>)` line (patch tools skip such lines).
pub fn render(diffs: &[SessionDiff]) -> String {
    let mut out = String::new();
    for d in diffs {
        if diffs.len() > 1 {
            let agent = d.agent.as_deref().unwrap_or("session");
            out.push_str(&format!("# session {} ({agent})\n", d.session_id));
        }
        for f in &d.files {
            out.push_str(&f.diff);
        }
    }
    out
}

/// One file while replaying.
#[derive(Debug, Default)]
struct FileState {
    /// The first change created the file.
    created: bool,
    /// Every change applied to known content (so the net diff is right).
    clean: bool,
    /// The content after the last change, when known.
    current: Option<String>,
    /// Each change's hunks, in order.
    steps: Vec<Step>,
}

/// One change of a file.
#[derive(Debug)]
struct Step {
    /// Its hunks (no `---`/`+++` header).
    hunks: String,
    /// The hunks carry line numbers (so the change applies as a patch).
    placed: bool,
}

impl FileState {
    fn write(&mut self, content: &str, created: bool, recorded: Option<&str>) {
        if self.steps.is_empty() && created {
            self.created = true;
            self.clean = true;
            self.current = Some(String::new());
        }
        let step = match (&self.current, recorded) {
            (Some(before), _) => Step::placed(hunks(before, content)),
            (None, Some(recorded)) => Step::placed(recorded.to_string()),
            (None, None) => {
                let mut text = String::from(
                    "@@ write_file replaced the whole file (its earlier content is not in the transcript) @@\n",
                );
                for line in content.lines() {
                    text.push('+');
                    text.push_str(line);
                    text.push('\n');
                }
                Step {
                    hunks: text,
                    placed: false,
                }
            }
        };
        self.steps.push(step);
        self.current = Some(content.to_string());
    }

    fn edit(
        &mut self,
        old: &str,
        new: &str,
        replace_all: bool,
        count: u64,
        recorded: Option<&str>,
    ) {
        if let Some(before) = &self.current
            && let Ok(edited) = apply_edit(before, old, new, replace_all)
        {
            self.steps
                .push(Step::placed(hunks(before, &edited.content)));
            self.current = Some(edited.content);
            return;
        }
        // Content not known (or changed outside the tools): the hunks recorded when
        // the edit was made, else the edit without a place.
        self.clean = false;
        self.current = None;
        if let Some(recorded) = recorded {
            self.steps.push(Step::placed(recorded.to_string()));
            return;
        }
        let times = if count > 1 {
            format!(", {count} replacements")
        } else {
            String::new()
        };
        self.steps.push(Step {
            hunks: format!(
                "@@ edit_file{times} (line numbers unknown) @@\n{}",
                snippet_lines(old, new)
            ),
            placed: false,
        });
    }

    fn render(self, path: String) -> FileDiff {
        if self.created && self.clean {
            return match &self.current {
                Some(last) if !last.is_empty() => {
                    let diff = unified_diff(&path, None, last);
                    let hunks = hunks("", last);
                    counted(path, diff, &[hunks.as_str()])
                }
                _ => counted(
                    path.clone(),
                    format!("--- /dev/null\n+++ b/{path}\n@@ empty file @@\n"),
                    &[],
                ),
            };
        }
        let bodies: Vec<&str> = self.steps.iter().map(|s| s.hunks.as_str()).collect();
        let header = |first: bool| {
            let from = if first && self.created {
                "/dev/null".to_string()
            } else {
                format!("a/{path}")
            };
            format!("--- {from}\n+++ b/{path}\n")
        };
        let diff = if self.steps.iter().all(|s| s.placed) {
            // Each change its own patch, applied in turn.
            bodies
                .iter()
                .enumerate()
                .map(|(i, hunks)| header(i == 0) + hunks)
                .collect()
        } else {
            header(true) + &bodies.concat()
        };
        counted(path, diff, &bodies)
    }
}

impl Step {
    fn placed(hunks: String) -> Self {
        Self {
            hunks,
            placed: true,
        }
    }
}

/// The [`FileDiff`] of `path` with `diff`, counting `+`/`-` lines in `bodies` (the
/// hunks without their `---`/`+++` headers, so a content line `++x` is not taken for
/// a header).
fn counted(path: String, diff: String, bodies: &[&str]) -> FileDiff {
    let mut added = 0;
    let mut removed = 0;
    for line in bodies.iter().flat_map(|b| b.lines()) {
        if line.starts_with('+') {
            added += 1;
        } else if line.starts_with('-') {
            removed += 1;
        }
    }
    FileDiff {
        path,
        diff,
        added,
        removed,
    }
}

#[cfg(test)]
mod tests;
