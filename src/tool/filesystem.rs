//! Module `tool-filesystem`: `read_file`, `list_directory`, `write_file`, `edit_file`.
//!
//! Owns: the module's tool list and config, reading text files with line numbers and
//! listing directories, confined to the session's working directory (`confine`). The
//! write tools live in `write` (confined to `allowed_write_paths`), their pure text
//! work in `diff`. Does not own: searching (`search`) or approvals.
//!
//! Config (the module entry's `config`):
//! - `allowed_write_paths`: directories `write_file` / `edit_file` may write under
//!   (Amplifier's key; default `["."]`, the session's working directory).
//! - `read_only: true` (arbor's key, ignored by Amplifier): mount only `read_file` and
//!   `list_directory`, so an agent that must not change files is not even offered the
//!   write tools. The built-in read-only agents (explorer, reviewer, …) set it.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::confine;
use super::error::ToolError;
use super::{Tool, ToolContext, ToolOutput, ToolSpec};

pub mod changes;
pub mod diff;
pub mod write;

pub use write::{EditFile, WriteConfig, WriteFile};

/// The module name in a mount plan's `tools[]`.
pub const MODULE: &str = crate::config::modules::FILESYSTEM.name;
/// The config key that mounts the read tools only.
pub const READ_ONLY: &str = "read_only";
/// Output cap of one `read_file` call, in bytes.
pub const READ_OUTPUT_CAP: usize = 256 * 1024;
/// Files larger than this are refused outright (read or edited), in bytes.
const READ_FILE_MAX: u64 = 64 * 1024 * 1024;
/// Lines returned when the call gives no `limit`.
const DEFAULT_LINE_LIMIT: usize = 2000;
/// Entries shown by `list_directory`.
const LIST_CAP: usize = 1000;

/// The tools of this module for its entry `config` (see the module doc): `read_file`,
/// `list_directory`, and unless `read_only` is true, `write_file` and `edit_file`.
pub fn tools(config: &Value) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ReadFile), Arc::new(ListDirectory)];
    if config.get(READ_ONLY).and_then(Value::as_bool) != Some(true) {
        let write = WriteConfig::from_config(config);
        tools.push(Arc::new(WriteFile::new(write.clone())));
        tools.push(Arc::new(EditFile::new(write)));
    }
    tools
}

/// `read_file {file_path, offset?, limit?}` (`path` is accepted too): the file's lines numbered from 1 (`cat -n`
/// style, `{n:>6}\t{line}`), starting at line `offset` (1-based), at most `limit` lines
/// (default 2000), output capped at 256 KB. Binary files and directories are refused.
#[derive(Debug, Clone, Copy)]
pub struct ReadFile;

/// `list_directory {path?}`: the entries of a directory (default: the working
/// directory), sorted, directories suffixed with `/`, symlinks with `@`.
#[derive(Debug, Clone, Copy)]
pub struct ListDirectory;

impl Tool for ReadFile {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file in the working directory. Returns numbered lines \
                          (`     1\\tline`). Use offset/limit to page through long files."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "File path, relative to the working directory."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines (default 2000)."}
                },
                "required": ["file_path"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(blocking(move || read_file(&input, &ctx.working_dir)))
    }
}

impl Tool for ListDirectory {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_directory".into(),
            description: "List the entries of a directory in the working directory \
                          (directories end with `/`)."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory, relative to the working directory (default: the working directory)."}
                }
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(blocking(move || list_directory(&input, &ctx.working_dir)))
    }
}

/// Runs blocking file work off the async workers: `Ok` is the result (a text is a
/// successful output), `Err` the failure whose text the model gets.
pub(crate) async fn blocking<T: Into<ToolOutput> + Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> ToolOutput {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(output)) => output.into(),
        Ok(Err(e)) => ToolOutput::error(e.to_string()),
        Err(e) => ToolOutput::error(format!("the tool failed: {e}")),
    }
}

/// A string argument, `None` when absent; an error when present but not a string.
pub(crate) fn opt_str<'a>(input: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolError::Input(format!(
            "'{key}' must be a string, got {other}"
        ))),
    }
}

/// A string argument the call must give: [`ToolError::Input`] with `missing`
/// (`write_file needs 'content'`) when absent.
pub(crate) fn required<'a>(
    input: &'a Value,
    key: &str,
    missing: &str,
) -> Result<&'a str, ToolError> {
    opt_str(input, key)?.ok_or_else(|| ToolError::Input(missing.to_string()))
}

fn opt_count(input: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        {
            Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(ToolError::Input(format!(
                "'{key}' must be a positive integer, got {v}"
            ))),
        },
    }
}

fn read_file(input: &Value, working_dir: &Path) -> Result<String, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "read_file expects an object like {\"file_path\": \"src/main.rs\"}".into(),
        ));
    }
    let requested = match opt_str(input, "file_path")? {
        Some(path) => path,
        None => opt_str(input, "path")?
            .ok_or_else(|| ToolError::Input("read_file needs 'file_path'".into()))?,
    };
    let offset = opt_count(input, "offset")?.unwrap_or(1);
    let limit = opt_count(input, "limit")?.unwrap_or(DEFAULT_LINE_LIMIT);
    let root = confine::root(working_dir)?;
    let path = confine::resolve(&root, requested)?;
    let meta = std::fs::metadata(&path).map_err(|e| ToolError::io("read", requested, e))?;
    if meta.is_dir() {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' is a directory; use list_directory"
        )));
    }
    if meta.len() > READ_FILE_MAX {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' is too large to read ({} bytes; the limit is {READ_FILE_MAX})",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| ToolError::io("read", requested, e))?;
    if confine::looks_binary(&bytes) {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' looks like a binary file; read_file reads text only"
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    if text.is_empty() {
        return Ok("(empty file)".into());
    }
    let total = text.lines().count();
    if offset > total {
        return Err(ToolError::Input(format!(
            "offset {offset} is past the end of '{requested}' ({total} lines)"
        )));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for (index, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let numbered = format!("{:>6}\t{line}\n", index + 1);
        if out.len() + numbered.len() > READ_OUTPUT_CAP {
            out.push_str(&format!(
                "[output truncated at {} KB; continue with offset={}]\n",
                READ_OUTPUT_CAP / 1024,
                index + 1
            ));
            return Ok(out);
        }
        out.push_str(&numbered);
        last = index + 1;
    }
    if last < total {
        out.push_str(&format!(
            "[{} more lines; continue with offset={}]\n",
            total - last,
            last + 1
        ));
    }
    Ok(out)
}

fn list_directory(input: &Value, working_dir: &Path) -> Result<String, ToolError> {
    let requested = match input {
        Value::Null => None,
        Value::Object(_) => opt_str(input, "path")?,
        _ => {
            return Err(ToolError::Input(
                "list_directory expects an object like {\"path\": \"src\"}".into(),
            ));
        }
    };
    let root = confine::root(working_dir)?;
    let dir = confine::resolve(&root, requested.unwrap_or(""))?;
    if !dir.is_dir() {
        return Err(ToolError::Unsuitable(format!(
            "'{}' is not a directory; use read_file",
            requested.unwrap_or(".")
        )));
    }
    let entries =
        std::fs::read_dir(&dir).map_err(|e| ToolError::io("list", requested.unwrap_or("."), e))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            match entry.file_type() {
                Ok(t) if t.is_symlink() => format!("{name}@"),
                Ok(t) if t.is_dir() => format!("{name}/"),
                _ => name,
            }
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok("(empty directory)".into());
    }
    let total = names.len();
    let mut out = names
        .into_iter()
        .take(LIST_CAP)
        .collect::<Vec<_>>()
        .join("\n");
    if total > LIST_CAP {
        out.push_str(&format!("\n[{} more entries not shown]", total - LIST_CAP));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::in_dir(dir)
    }

    #[tokio::test]
    async fn read_file_numbers_lines_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let out = ReadFile
            .call(json!({"path": "a.txt"}), ctx(dir.path()))
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
        let out = ReadFile
            .call(
                json!({"path": "a.txt", "offset": 2, "limit": 1}),
                ctx(dir.path()),
            )
            .await;
        assert_eq!(
            out.content,
            "     2\ttwo\n[1 more lines; continue with offset=3]\n"
        );
        let out = ReadFile
            .call(json!({"path": "a.txt", "offset": 9}), ctx(dir.path()))
            .await;
        assert!(out.is_error && out.content.contains("past the end"));
    }

    #[tokio::test]
    async fn read_file_refuses_binary_dirs_escapes_and_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.bin"), [0u8, 1, 2]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let c = || ctx(dir.path());
        let out = ReadFile.call(json!({"path": "b.bin"}), c()).await;
        assert!(out.is_error && out.content.contains("binary"));
        let out = ReadFile.call(json!({"path": "d"}), c()).await;
        assert!(out.is_error && out.content.contains("directory"));
        let out = ReadFile
            .call(json!({"path": "../../etc/passwd"}), c())
            .await;
        assert!(out.is_error && out.content.contains("outside the working directory"));
        let out = ReadFile.call(json!({}), c()).await;
        assert!(out.is_error && out.content.contains("needs 'file_path'"));
        let out = ReadFile.call(json!({"path": "x", "limit": -1}), c()).await;
        assert!(out.is_error && out.content.contains("positive integer"));
        let out = ReadFile.call(json!("a.txt"), c()).await;
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn read_file_caps_output() {
        let dir = tempfile::tempdir().unwrap();
        let line = "x".repeat(1000);
        let text = std::iter::repeat_n(line.as_str(), 400)
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.path().join("big.txt"), text).unwrap();
        let out = ReadFile
            .call(json!({"path": "big.txt"}), ctx(dir.path()))
            .await;
        assert!(!out.is_error);
        assert!(out.content.len() <= READ_OUTPUT_CAP + 100);
        assert!(
            out.content
                .contains("[output truncated at 256 KB; continue with offset=")
        );
    }

    #[tokio::test]
    async fn list_directory_sorts_and_marks_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "").unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/inner"), "").unwrap();
        let out = ListDirectory.call(json!({}), ctx(dir.path())).await;
        assert_eq!(out.content, "a/\nb.txt");
        let out = ListDirectory
            .call(json!({"path": "a"}), ctx(dir.path()))
            .await;
        assert_eq!(out.content, "inner");
        let out = ListDirectory
            .call(json!({"path": ".."}), ctx(dir.path()))
            .await;
        assert!(out.is_error && out.content.contains("outside"));
        let out = ListDirectory
            .call(json!({"path": "b.txt"}), ctx(dir.path()))
            .await;
        assert!(out.is_error && out.content.contains("not a directory"));
    }
}
