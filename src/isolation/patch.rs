//! A `git diff` patch split per file, for views that list a session's changes file
//! by file (the TUI's `d` on a worktree session, issue 25 item 3).
//!
//! Owns: [`split`]. Does not own: making the patch (`worktree::WorktreeRecord::diff`).

/// One file of a patch: its path (the `b/` side, or `a/` for a deletion), its text
/// from `--- ` on (the whole block for a binary file), and its `+`/`-` line counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Repository relative.
    pub path: String,
    /// From `--- ` on (the whole block when there is none, e.g. a mode change).
    pub diff: String,
    /// `+` lines.
    pub added: usize,
    /// `-` lines.
    pub removed: usize,
}

/// Splits `patch` (`git diff` output) at its `diff --git` lines.
pub fn split(patch: &str) -> Vec<FilePatch> {
    let mut out = Vec::new();
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in patch.lines() {
        if line.starts_with("diff --git ") || blocks.is_empty() {
            blocks.push(Vec::new());
        }
        if let Some(block) = blocks.last_mut() {
            block.push(line);
        }
    }
    for block in blocks {
        let header = block.first().copied().unwrap_or_default();
        let from_header = header
            .rsplit_once(" b/")
            .map(|(_, p)| p.to_string())
            .unwrap_or_default();
        let start = block.iter().position(|l| l.starts_with("--- "));
        let body = &block[start.unwrap_or(0)..];
        let side = |prefix: &str| {
            block
                .iter()
                .find_map(|l| l.strip_prefix(prefix))
                .filter(|p| *p != "/dev/null")
                .map(|p| {
                    p.trim_start_matches("b/")
                        .trim_start_matches("a/")
                        .to_string()
                })
        };
        let path = side("+++ ").or_else(|| side("--- ")).unwrap_or(from_header);
        let count = |c: char, skip: &str| {
            body.iter()
                .filter(|l| l.starts_with(c) && !l.starts_with(skip))
                .count()
        };
        out.push(FilePatch {
            path,
            diff: body.join("\n") + "\n",
            added: count('+', "+++ "),
            removed: count('-', "--- "),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_per_file_with_counts() {
        let patch = "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-VALUE = 0\n+VALUE = 'A'\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n";
        let files = split(patch);
        assert_eq!(files.len(), 2);
        assert_eq!(
            (files[0].path.as_str(), files[0].added, files[0].removed),
            ("app.py", 1, 1)
        );
        assert!(files[0].diff.starts_with("--- a/app.py\n"));
        assert_eq!(
            (files[1].path.as_str(), files[1].added, files[1].removed),
            ("new.txt", 2, 0)
        );
    }
}
