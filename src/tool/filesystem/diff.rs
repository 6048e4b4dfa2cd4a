//! Pure text work behind `write_file` and `edit_file`: applying an exact-match edit,
//! counting the lines a change adds and removes, and rendering a change as a unified
//! diff (the approval prompt's preview).
//!
//! Owns: the edit rules (exact match; zero matches, or several without `replace_all`,
//! are errors that give the count) and line diffs through the `similar` crate. Does
//! not own: paths, reading or writing files (`filesystem::write`). Nothing here touches
//! the disk.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

/// A line diff gives up refining after this long and reports a coarser (still
/// correct) diff: a pathological pair of large files cannot stall a tool call.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);
/// Lines of context around each hunk of a unified diff.
const CONTEXT_LINES: usize = 3;

/// The result of [`apply_edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The whole file after the edit.
    pub content: String,
    /// How many occurrences were replaced (1 unless `replace_all`).
    pub replacements: usize,
}

/// Why an edit cannot be applied; [`EditError::message`] is the text the model sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("old_string is empty")]
    EmptyOld,
    #[error("old_string and new_string are identical")]
    Unchanged,
    #[error("old_string not found (0 matches)")]
    NotFound,
    #[error("old_string matches {0} times")]
    Ambiguous(usize),
}

impl EditError {
    /// The error text for an edit of `path`, saying what to do instead.
    pub fn message(&self, path: &str) -> String {
        match self {
            EditError::EmptyOld => {
                "old_string is empty: give the exact text to replace (write_file writes a whole file)"
                    .to_string()
            }
            EditError::Unchanged => {
                "old_string and new_string are identical: the edit would change nothing"
                    .to_string()
            }
            EditError::NotFound => format!(
                "old_string not found in '{path}' (0 matches). It must match the file exactly, \
                 including whitespace and indentation (without read_file's line-number prefix); \
                 read the file again and copy the text"
            ),
            EditError::Ambiguous(n) => format!(
                "old_string matches {n} times in '{path}'. Give more surrounding context so it \
                 matches exactly once, or set replace_all to true to replace all {n}"
            ),
        }
    }
}

/// `content` with `old` replaced by `new`: exactly one occurrence, or every one with
/// `replace_all`. Occurrences are counted without overlap, left to right.
///
/// A file with CRLF line ends also matches an `old` written with bare `\n` (models
/// see lines, not line ends); `new` then gets CRLF too, so the file keeps its style.
///
/// Errors: `old` empty, `old == new`, no occurrence, several without `replace_all`.
pub fn apply_edit(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Edited, EditError> {
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    if old == new {
        return Err(EditError::Unchanged);
    }
    let mut count = content.matches(old).count();
    let (mut old, mut new) = (old.to_string(), new.to_string());
    if count == 0 && content.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        let crlf_old = old.replace('\n', "\r\n");
        let crlf_count = content.matches(crlf_old.as_str()).count();
        if crlf_count > 0 {
            count = crlf_count;
            old = crlf_old;
            new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        }
    }
    match count {
        0 => Err(EditError::NotFound),
        1 => Ok(Edited {
            content: content.replacen(old.as_str(), &new, 1),
            replacements: 1,
        }),
        n if replace_all => Ok(Edited {
            content: content.replace(old.as_str(), &new),
            replacements: n,
        }),
        n => Err(EditError::Ambiguous(n)),
    }
}

/// Lines added and removed going from `old` to `new` (a line diff; a changed line
/// counts once each way).
pub fn line_counts(old: &str, new: &str) -> (u64, u64) {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// A unified diff (`--- a/path`, `+++ b/path`, hunks with 3 lines of context) from
/// `old` to `new`; `old: None` is a new file (`--- /dev/null`). Empty when the two are
/// equal. For the approval prompt: it shows what a write or edit would do.
pub fn unified_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let before = old.unwrap_or("");
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, new);
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    diff.unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&from, &format!("b/{path}"))
        .to_string()
}

/// The hunks of a unified diff from `old` to `new` (3 lines of context), without the
/// `---`/`+++` header; empty when the two are equal. For a change shown under a header
/// of its own (a session's diff, `filesystem::changes`).
pub fn hunks(old: &str, new: &str) -> String {
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .to_string()
}

/// Every line of `old` and `new` as a line diff (` ` kept, `-` removed, `+` added),
/// each ending in a newline: an edit shown without its place in the file.
pub fn snippet_lines(old: &str, new: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        out.push(match change.tag() {
            ChangeTag::Insert => '+',
            ChangeTag::Delete => '-',
            ChangeTag::Equal => ' ',
        });
        out.push_str(change.value().trim_end_matches(['\n', '\r']));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_replaces_one_exact_match() {
        let out = apply_edit("a = 1\nb = 2\n", "b = 2", "b = 3", false).unwrap();
        assert_eq!(out.content, "a = 1\nb = 3\n");
        assert_eq!(out.replacements, 1);
    }

    #[test]
    fn edit_errors_say_how_many_matched() {
        let text = "x\nx\nx\n";
        assert_eq!(
            apply_edit(text, "x", "y", false),
            Err(EditError::Ambiguous(3))
        );
        assert_eq!(apply_edit(text, "z", "y", false), Err(EditError::NotFound));
        assert_eq!(apply_edit(text, "", "y", false), Err(EditError::EmptyOld));
        assert_eq!(apply_edit(text, "x", "x", true), Err(EditError::Unchanged));
        let all = apply_edit(text, "x", "y", true).unwrap();
        assert_eq!((all.content.as_str(), all.replacements), ("y\ny\ny\n", 3));
        let msg = EditError::Ambiguous(3).message("src/a.rs");
        assert!(msg.contains("matches 3 times in 'src/a.rs'"), "{msg}");
        assert!(msg.contains("replace_all"), "{msg}");
        let msg = EditError::NotFound.message("a.rs");
        assert!(msg.contains("not found in 'a.rs' (0 matches)"), "{msg}");
    }

    #[test]
    fn edit_is_exact_about_whitespace() {
        assert_eq!(
            apply_edit("    let x = 1;\n", "let x  = 1;", "let x = 2;", false),
            Err(EditError::NotFound)
        );
    }

    #[test]
    fn crlf_files_match_lf_old_strings_and_keep_crlf() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let out = apply_edit(text, "one\ntwo", "uno\ndos", false).unwrap();
        assert_eq!(out.content, "uno\r\ndos\r\nthree\r\n");
    }

    #[test]
    fn line_counts_count_changed_lines_both_ways() {
        assert_eq!(line_counts("a\nb\nc\n", "a\nB\nc\nd\n"), (2, 1));
        assert_eq!(line_counts("", "1\n2\n"), (2, 0));
        assert_eq!(line_counts("same\n", "same\n"), (0, 0));
    }

    #[test]
    fn unified_diff_of_an_edit_and_a_new_file() {
        let diff = unified_diff("src/a.txt", Some("a\nb\nc\n"), "a\nB\nc\n");
        assert_eq!(
            diff,
            "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        let created = unified_diff("n.txt", None, "hi\n");
        assert_eq!(created, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n");
        assert_eq!(unified_diff("x", Some("same\n"), "same\n"), "");
        assert_eq!(hunks("a\nb\n", "a\nB\n"), "@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
        assert_eq!(snippet_lines("x\ny", "x\nz"), " x\n-y\n+z\n");
    }
}
