//! The composer's prompt history (issue 15 item 3): what the person sent, per project,
//! kept across restarts in `Paths::history_file` (`history/<project slug>.jsonl` in
//! arbor's state directory).
//!
//! File shape: one JSON object per line, `{"prompt": TEXT, "at": RFC 3339}` (JSON so
//! multi-line prompts stay one line), oldest first; `at` (when it was sent, shown as
//! its age or date in the Ctrl+R list) is absent from lines older versions wrote, and
//! such lines still load (without a date). Appended with one `write` per prompt to a
//! file opened for appending, so a crash loses at most the prompt being written; a
//! line that does not parse (a torn last line, a hand edit) is skipped when read.
//! Capped: once it holds more than twice [`CAP`] lines it is rewritten with the
//! newest [`CAP`] through a temp file renamed over it (never half-written). What is
//! kept is what the person typed, with registered secret values (configured API keys)
//! scrubbed (`session::redact::scrub_secrets`); never attachments or model output.
//!
//! Owns: reading, appending, compacting and searching the prompts. Does not own: the
//! keys that walk or search them (`app::history`).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Prompts kept (the newest).
pub const CAP: usize = 1_000;

/// Prompts longer than this (bytes) are not kept: a pasted file is no prompt to recall.
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;

#[derive(Serialize, Deserialize)]
struct Line {
    prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<Timestamp>,
}

/// The prompts of one project, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Where it is kept (`None`: in memory only, e.g. tests of other features).
    path: Option<PathBuf>,
    entries: Vec<String>,
    /// When each entry was sent (`None`: a line without `at`), parallel to `entries`.
    times: Vec<Option<Timestamp>>,
    /// Lines in the file (entries plus skipped ones), to know when to compact.
    lines: usize,
}

impl History {
    /// Reads the history at `path` (missing: empty). Unreadable lines are skipped; an
    /// unreadable file is an empty history that is still appended to.
    pub fn load(path: PathBuf) -> Self {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut lines = 0;
        let mut entries = Vec::new();
        let mut times = Vec::new();
        for line in text.lines() {
            lines += 1;
            if let Ok(l) = serde_json::from_str::<Line>(line) {
                entries.push(l.prompt);
                times.push(l.at);
            }
        }
        let skip = entries.len().saturating_sub(CAP);
        entries.drain(..skip);
        times.drain(..skip);
        Self {
            path: Some(path),
            entries,
            times,
            lines,
        }
    }

    /// The prompts, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a prompt sent now (the system clock); see [`History::push_at`].
    ///
    /// Errors: as [`History::push_at`].
    pub fn push(&mut self, prompt: &str) -> Result<(), HistoryError> {
        self.push_at(prompt, Timestamp::now())
    }

    /// Records a prompt sent at `at`: blank ones, over-long ones and a repeat of the
    /// newest are not kept.
    ///
    /// Errors: [`HistoryError`] when the state directory cannot be written (shown as a
    /// note); the prompt is still kept for this run.
    pub fn push_at(&mut self, prompt: &str, at: Timestamp) -> Result<(), HistoryError> {
        if prompt.trim().is_empty()
            || prompt.len() > MAX_PROMPT_BYTES
            || self.entries.last().map(String::as_str) == Some(prompt)
        {
            return Ok(());
        }
        let prompt = crate::session::redact::scrub_secrets(prompt).into_owned();
        self.entries.push(prompt.clone());
        self.times.push(Some(at));
        if self.entries.len() > CAP {
            self.entries.remove(0);
            self.times.remove(0);
        }
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        self.lines += 1;
        if self.lines > 2 * CAP {
            self.lines = self.entries.len();
            return rewrite(&path, &self.entries, &self.times);
        }
        append(&path, &prompt, Some(at))
    }

    /// Prompts containing `query` (case-insensitive), newest first, each once.
    pub fn search(&self, query: &str) -> Vec<&str> {
        self.search_dated(query)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    /// As [`History::search`], each prompt with when it was last sent (`None`: its
    /// newest line has no time, written by an older arbor).
    pub fn search_dated(&self, query: &str) -> Vec<(&str, Option<Timestamp>)> {
        let q = query.to_lowercase();
        let mut seen = std::collections::HashSet::new();
        self.entries
            .iter()
            .zip(&self.times)
            .rev()
            .filter(|(e, _)| q.is_empty() || e.to_lowercase().contains(&q))
            .filter(|(e, _)| seen.insert(e.as_str()))
            .map(|(e, at)| (e.as_str(), *at))
            .collect()
    }
}

/// Why a prompt was not written to the history file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file or its directory (`path`) cannot be written.
    #[error("history not kept: {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The line cannot be encoded as JSON.
    #[error("history not kept: {0}")]
    Encode(#[from] serde_json::Error),
}

fn line_of(prompt: &str, at: Option<Timestamp>) -> Result<String, HistoryError> {
    let line = serde_json::to_string(&Line {
        prompt: prompt.to_string(),
        at,
    })?;
    Ok(line + "\n")
}

fn write_error(path: &Path) -> impl Fn(std::io::Error) -> HistoryError + Copy + '_ {
    move |source| HistoryError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn create_dir(path: &Path) -> Result<(), HistoryError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(write_error(dir)),
        None => Ok(()),
    }
}

fn append(path: &Path, prompt: &str, at: Option<Timestamp>) -> Result<(), HistoryError> {
    create_dir(path)?;
    let line = line_of(prompt, at)?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(write_error(path))?;
    file.write_all(line.as_bytes()).map_err(write_error(path))
}

fn rewrite(
    path: &Path,
    entries: &[String],
    times: &[Option<Timestamp>],
) -> Result<(), HistoryError> {
    create_dir(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = write_error(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    for (i, e) in entries.iter().enumerate() {
        let at = times.get(i).copied().flatten();
        tmp.write_all(line_of(e, at)?.as_bytes()).map_err(fail)?;
    }
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_survive_a_reload_and_torn_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h").join("p.jsonl");
        let mut h = History::load(path.clone());
        h.push("first").unwrap();
        h.push("two\nlines").unwrap();
        h.push("two\nlines").unwrap();
        h.push("   ").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"prompt\": \"torn")
            .unwrap();
        let h = History::load(path);
        assert_eq!(h.entries(), ["first", "two\nlines"]);
        assert_eq!(h.search("LINE"), ["two\nlines"]);
        assert_eq!(h.search(""), ["two\nlines", "first"]);
    }

    #[test]
    fn lines_keep_their_time_and_old_lines_without_one_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, "{\"prompt\":\"old one\"}\n").unwrap();
        let mut h = History::load(path.clone());
        let at: Timestamp = "2025-03-01T12:00:00Z".parse().unwrap();
        h.push_at("new one", at).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().last().unwrap(),
            r#"{"prompt":"new one","at":"2025-03-01T12:00:00Z"}"#
        );
        let h = History::load(path);
        assert_eq!(
            h.search_dated(""),
            [("new one", Some(at)), ("old one", None)]
        );
    }

    #[test]
    fn the_file_is_compacted_to_the_newest_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let mut h = History::load(path.clone());
        for i in 0..=2 * CAP {
            h.push(&format!("p{i}")).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), CAP);
        let h = History::load(path);
        assert_eq!(h.entries().len(), CAP);
        assert_eq!(h.entries().last().unwrap(), &format!("p{}", 2 * CAP));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
