//! Module `tool-search`: `glob` and `grep` over the working directory.
//!
//! Owns: walking the working directory the way ripgrep does (respecting `.gitignore`,
//! `.ignore` and hidden files; symlinks are not followed) and matching file names or
//! contents. Does not own: path confinement (`confine`) or reading single files
//! (`filesystem`).
//!
//! Glob semantics follow ripgrep's `--glob`: a pattern without `/` matches a file's
//! name at any depth (`*.rs`); a pattern with `/` matches the path relative to the
//! search directory (`src/**/*.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Value, json};

use super::confine;
use super::error::ToolError;
use super::filesystem::{blocking, opt_str, required};
use super::{Tool, ToolContext, ToolOutput, ToolSpec};

/// The module name in a mount plan's `tools[]`.
pub const MODULE: &str = crate::config::modules::SEARCH.name;
/// Paths returned by one `glob` call.
pub const GLOB_CAP: usize = 500;
/// Matching lines returned by one `grep` call.
pub const GREP_CAP: usize = 500;
/// A matching line is cut to this many bytes.
const GREP_LINE_MAX: usize = 300;
/// Files larger than this are not searched by `grep`, in bytes.
const GREP_FILE_MAX: u64 = 8 * 1024 * 1024;

/// The tools of this module: `glob`, `grep`.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Glob), Arc::new(Grep)]
}

/// `glob {pattern, path?}`: files (not directories) matching `pattern` under `path`
/// (default: the working directory), one relative path a line, sorted, at most 500.
#[derive(Debug, Clone, Copy)]
pub struct Glob;

/// `grep {pattern, path?, glob?}`: lines matching the regex `pattern` in text files
/// under `path` (a directory or one file), optionally only files matching `glob`;
/// one `file:line: text` a line, at most 500.
#[derive(Debug, Clone, Copy)]
pub struct Grep;

impl Tool for Glob {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description: "Find files by name pattern in the working directory (respects \
                          .gitignore). `*.rs` matches at any depth; `src/**/*.rs` matches \
                          paths."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.md` or `*.toml`."},
                    "path": {"type": "string", "description": "Directory to search (default: the working directory)."}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(blocking(move || glob(&input, &ctx.working_dir)))
    }
}

impl Tool for Grep {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "Search file contents with a regular expression in the working \
                          directory (respects .gitignore). Output: `file:line: text`."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                    "path": {"type": "string", "description": "Directory or file to search (default: the working directory)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs`."}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(blocking(move || grep(&input, &ctx.working_dir)))
    }
}

/// A compiled glob with ripgrep's name-or-path rule.
struct NameGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl NameGlob {
    fn new(pattern: &str) -> Result<Self, ToolError> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::Input(format!("invalid glob '{pattern}': {e}")))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    fn is_match(&self, relative: &str) -> bool {
        if self.by_name {
            let name = relative.rsplit('/').next().unwrap_or(relative);
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// The search base (`path` argument, confined) and the canonical root.
fn base(input: &Value, working_dir: &Path) -> Result<(PathBuf, PathBuf), ToolError> {
    let root = confine::root(working_dir)?;
    let requested = opt_str(input, "path")?.unwrap_or("");
    let base = confine::resolve(&root, requested)?;
    Ok((root, base))
}

/// Regular files under `base` in path order, gitignore-aware, symlinks skipped.
fn walk(base: &Path) -> impl Iterator<Item = PathBuf> {
    ignore::WalkBuilder::new(base)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
}

fn glob(input: &Value, working_dir: &Path) -> Result<String, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "glob expects an object like {\"pattern\": \"**/*.rs\"}".into(),
        ));
    }
    let pattern = required(input, "pattern", "glob needs 'pattern'")?;
    let matcher = NameGlob::new(pattern)?;
    let (root, base) = base(input, working_dir)?;
    if !base.is_dir() {
        return Err(ToolError::Input("'path' must be a directory".into()));
    }
    let mut found = Vec::new();
    let mut total = 0usize;
    for path in walk(&base) {
        let relative = confine::display(&base, &path);
        if matcher.is_match(&relative) {
            total += 1;
            if found.len() < GLOB_CAP {
                found.push(confine::display(&root, &path));
            }
        }
    }
    if found.is_empty() {
        return Ok(format!("No files match '{pattern}'."));
    }
    let mut out = found.join("\n");
    if total > found.len() {
        out.push_str(&format!(
            "\n[{} more files not shown; narrow the pattern]",
            total - found.len()
        ));
    }
    Ok(out)
}

fn grep(input: &Value, working_dir: &Path) -> Result<String, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "grep expects an object like {\"pattern\": \"fn main\"}".into(),
        ));
    }
    let pattern = required(input, "pattern", "grep needs 'pattern'")?;
    let regex =
        regex::Regex::new(pattern).map_err(|e| ToolError::Input(format!("invalid regex: {e}")))?;
    let filter = opt_str(input, "glob")?.map(NameGlob::new).transpose()?;
    let (root, base) = base(input, working_dir)?;
    let single = base.is_file();
    let files: Box<dyn Iterator<Item = PathBuf>> = if single {
        Box::new(std::iter::once(base.clone()))
    } else {
        Box::new(walk(&base))
    };
    let mut out = String::new();
    let mut matches = 0usize;
    for path in files {
        if !single
            && let Some(filter) = &filter
            && !filter.is_match(&confine::display(&base, &path))
        {
            continue;
        }
        if std::fs::metadata(&path)
            .map(|m| m.len() > GREP_FILE_MAX)
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if confine::looks_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let shown = confine::display(&root, &path);
        for (index, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            matches += 1;
            if matches > GREP_CAP {
                continue;
            }
            let line = line.trim_end();
            let cut = confine::truncate_chars(line, GREP_LINE_MAX);
            let ellipsis = if cut.len() < line.len() { "…" } else { "" };
            out.push_str(&format!("{shown}:{}: {cut}{ellipsis}\n", index + 1));
        }
    }
    if matches == 0 {
        return Ok(format!("No matches for /{pattern}/."));
    }
    if matches > GREP_CAP {
        out.push_str(&format!(
            "[{} more matches not shown; narrow the pattern or path]\n",
            matches - GREP_CAP
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::in_dir(dir)
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("src/deep")).unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(p.join("src/main.rs"), "fn main() {\n    run();\n}\n").unwrap();
        std::fs::write(p.join("src/deep/lib.rs"), "pub fn run() {}\n").unwrap();
        std::fs::write(p.join("target/gen.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("debug.log"), "fn main\n").unwrap();
        std::fs::write(p.join("README.md"), "# run\n").unwrap();
        dir
    }

    #[tokio::test]
    async fn glob_respects_gitignore_and_name_rule() {
        let dir = tree();
        let out = Glob.call(json!({"pattern": "*.rs"}), ctx(dir.path())).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "src/deep/lib.rs\nsrc/main.rs");
        let out = Glob
            .call(json!({"pattern": "src/*.rs"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "src/main.rs");
        let out = Glob
            .call(
                json!({"pattern": "*.rs", "path": "src/deep"}),
                ctx(dir.path()),
            )
            .await;
        assert_eq!(out.content, "src/deep/lib.rs");
        let out = Glob
            .call(json!({"pattern": "*.log"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "No files match '*.log'.");
        let out = Glob.call(json!({"pattern": "["}), ctx(dir.path())).await;
        assert!(out.is_error && out.content.contains("invalid glob"));
        let out = Glob
            .call(json!({"pattern": "*", "path": "../"}), ctx(dir.path()))
            .await;
        assert!(out.is_error && out.content.contains("outside"));
    }

    #[tokio::test]
    async fn grep_formats_file_line_text() {
        let dir = tree();
        let out = Grep
            .call(json!({"pattern": "fn (main|run)"}), ctx(dir.path()))
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "src/deep/lib.rs:1: pub fn run() {}\nsrc/main.rs:1: fn main() {\n"
        );
        let out = Grep
            .call(json!({"pattern": "run", "glob": "*.md"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "README.md:1: # run\n");
        let out = Grep
            .call(
                json!({"pattern": "run", "path": "src/main.rs"}),
                ctx(dir.path()),
            )
            .await;
        assert_eq!(out.content, "src/main.rs:2:     run();\n");
        let out = Grep.call(json!({"pattern": "zzz"}), ctx(dir.path())).await;
        assert_eq!(out.content, "No matches for /zzz/.");
        let out = Grep.call(json!({"pattern": "("}), ctx(dir.path())).await;
        assert!(out.is_error && out.content.contains("invalid regex"));
        let out = Grep.call(json!({"path": "src"}), ctx(dir.path())).await;
        assert!(out.is_error && out.content.contains("needs 'pattern'"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn walks_do_not_follow_symlinks_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.rs"), "fn secret() {}\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("s.rs"))
            .unwrap();
        let out = Grep
            .call(json!({"pattern": "secret"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "No matches for /secret/.");
        let out = Glob
            .call(json!({"pattern": "**/*.rs"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "No files match '**/*.rs'.");
    }
}
