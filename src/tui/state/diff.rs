//! The diff overlay's state (SPEC §12 "its diff can be viewed"): which session's
//! changes are shown, with or without its sub-sessions', the loaded diff as lines,
//! and the scroll position.
//!
//! Owns: turning [`SessionDiff`]s into classified lines and scrolling them. Does not
//! own: rebuilding the diff from the transcript (`tool::filesystem::changes`, run by
//! the executor) or drawing (`views::diff`).

use crate::session::ids::SessionId;
use crate::tool::filesystem::changes::SessionDiff;
use crate::tui::error::UiError;

/// What a line of the overlay is (its colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLineKind {
    /// `# session <id> (<agent>)` (the subtree view).
    Session,
    /// `--- a/…` / `+++ b/…`.
    File,
    /// `@@ … @@`.
    Hunk,
    Added,
    Removed,
    Context,
    /// A message instead of a diff (loading, nothing changed, an error).
    Note,
}

/// One line of the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffLineKind,
    pub text: String,
}

/// The open diff overlay.
#[derive(Debug, Clone)]
pub struct DiffState {
    /// The session shown (a full id).
    pub session_id: SessionId,
    /// The session's title or agent, for the title bar.
    pub label: String,
    /// Whether sub-sessions' changes are included.
    pub subtree: bool,
    /// `None` while loading.
    pub loaded: Option<Result<Vec<SessionDiff>, UiError>>,
    /// The lines shown (a note while loading or on error).
    pub lines: Vec<DiffLine>,
    /// First line shown.
    pub scroll: usize,
    /// Lines visible at the last layout (paging, clamping).
    pub page: usize,
}

impl DiffState {
    /// A diff of `session_id` being loaded.
    pub fn loading(session_id: &str, label: &str, subtree: bool) -> Self {
        Self {
            session_id: session_id.into(),
            label: label.to_string(),
            subtree,
            loaded: None,
            lines: vec![note("reading the transcript…")],
            scroll: 0,
            page: 1,
        }
    }

    /// Takes the loaded diffs (or the error) of `session_id` with `subtree`; ignored
    /// when the overlay now shows something else.
    pub fn load(
        &mut self,
        session_id: &str,
        subtree: bool,
        result: Result<Vec<SessionDiff>, UiError>,
    ) {
        if session_id != self.session_id || subtree != self.subtree {
            return;
        }
        self.lines = match &result {
            Err(e) => vec![note(&format!("cannot read the session: {e}"))],
            Ok(diffs) => lines_of(diffs, subtree),
        };
        self.loaded = Some(result);
        self.scroll = 0;
    }

    /// Files and `+`/`-` line totals over every session shown (0s while loading).
    pub fn totals(&self) -> (usize, usize, usize) {
        let Some(Ok(diffs)) = &self.loaded else {
            return (0, 0, 0);
        };
        diffs
            .iter()
            .flat_map(|d| &d.files)
            .fold((0, 0, 0), |(f, a, r), file| {
                (f + 1, a + file.added, r + file.removed)
            })
    }

    /// Scrolls by `delta` lines, within the text.
    pub fn scroll_by(&mut self, delta: isize) {
        self.scroll = self
            .scroll
            .saturating_add_signed(delta)
            .min(self.max_scroll());
    }

    /// Scrolls to the top (`false`) or the bottom (`true`).
    pub fn scroll_to(&mut self, bottom: bool) {
        self.scroll = if bottom { self.max_scroll() } else { 0 };
    }

    /// Records how many lines fit (the layout step) and keeps the scroll in range.
    pub fn set_page(&mut self, page: usize) {
        self.page = page.max(1);
        self.scroll = self.scroll.min(self.max_scroll());
    }

    fn max_scroll(&self) -> usize {
        self.lines.len().saturating_sub(self.page)
    }
}

fn note(text: &str) -> DiffLine {
    DiffLine {
        kind: DiffLineKind::Note,
        text: text.to_string(),
    }
}

/// The lines of `diffs`: a heading per session when `subtree`, then each file's diff
/// classified line by line.
fn lines_of(diffs: &[SessionDiff], subtree: bool) -> Vec<DiffLine> {
    let mut out = Vec::new();
    for d in diffs {
        if subtree {
            if !out.is_empty() {
                out.push(DiffLine {
                    kind: DiffLineKind::Context,
                    text: String::new(),
                });
            }
            let agent = d.agent.as_deref().unwrap_or("session");
            out.push(DiffLine {
                kind: DiffLineKind::Session,
                text: format!(
                    "# {agent} #{}",
                    crate::session::ids::short_id(&d.session_id)
                ),
            });
        }
        for file in &d.files {
            if out
                .last()
                .is_some_and(|l: &DiffLine| l.kind != DiffLineKind::Session)
            {
                out.push(DiffLine {
                    kind: DiffLineKind::Context,
                    text: String::new(),
                });
            }
            for (i, line) in file.diff.lines().enumerate() {
                let kind = match line.as_bytes().first() {
                    _ if i < 2 => DiffLineKind::File,
                    Some(b'@') => DiffLineKind::Hunk,
                    Some(b'+') => DiffLineKind::Added,
                    Some(b'-') => DiffLineKind::Removed,
                    _ => DiffLineKind::Context,
                };
                out.push(DiffLine {
                    kind,
                    text: line.to_string(),
                });
            }
        }
    }
    if diffs.iter().all(|d| d.files.is_empty()) {
        let what = if subtree {
            "no file changes in this session or its sub-sessions"
        } else {
            "no file changes in this session (s includes its sub-sessions)"
        };
        out.push(note(what));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::filesystem::changes::FileDiff;

    fn diffs() -> Vec<SessionDiff> {
        vec![SessionDiff {
            session_id: "5f0e1c2a-1111-4222-8333-444455556666".into(),
            agent: Some("arbor".into()),
            files: vec![FileDiff {
                path: "a.txt".into(),
                diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n".into(),
                added: 1,
                removed: 1,
            }],
        }]
    }

    #[test]
    fn lines_are_classified_and_scrolling_stays_in_range() {
        let mut s = DiffState::loading("s", "arbor", false);
        assert_eq!(s.lines[0].kind, DiffLineKind::Note);
        // A result for another request is ignored.
        s.load("s", true, Ok(diffs()));
        assert!(s.loaded.is_none());
        s.load("s", false, Ok(diffs()));
        let kinds: Vec<DiffLineKind> = s.lines.iter().map(|l| l.kind).collect();
        use DiffLineKind::*;
        assert_eq!(kinds, [File, File, Hunk, Context, Removed, Added]);
        assert_eq!(s.totals(), (1, 1, 1));
        s.set_page(4);
        s.scroll_by(10);
        assert_eq!(s.scroll, 2);
        s.scroll_to(false);
        assert_eq!(s.scroll, 0);
    }

    #[test]
    fn the_subtree_view_heads_each_session_and_says_when_nothing_changed() {
        let mut s = DiffState::loading("s", "arbor", true);
        s.load("s", true, Ok(diffs()));
        assert_eq!(s.lines[0].text, "# arbor #5f0e1c2a");
        let mut empty = DiffState::loading("s", "arbor", false);
        let mut none = diffs();
        none[0].files.clear();
        empty.load("s", false, Ok(none));
        assert!(empty.lines[0].text.starts_with("no file changes"));
        let mut failed = DiffState::loading("s", "arbor", false);
        failed.load(
            "s",
            false,
            Err(crate::engine::EngineError::Other("gone".into()).into()),
        );
        assert_eq!(failed.lines[0].text, "cannot read the session: gone");
    }
}
