//! Module `tool-filesystem`, writing part: `write_file` and `edit_file`.
//!
//! Owns: the two write tools (Amplifier's names, inputs and result keys), their module
//! config (`allowed_write_paths`, default `["."]`), atomic replacement of a file (a
//! temp file in the same directory, renamed over it; permissions kept), creating
//! missing parent directories inside the allowed roots — every one of these opened
//! beneath a handle on the write root, so a directory swapped for a symlink between
//! the check and the write fails instead of escaping — the [`FileChange`] each
//! successful call reports, and previews (the diff a call would make, without writing).
//! Does not own: path confinement (`confine::resolve_for_write`), the edit and diff
//! rules (`diff`), recording changes in metadata (`engine`) or approvals.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::diff::{self, apply_edit};
use super::{MODULE, READ_FILE_MAX, blocking, required};
use crate::session::metadata::FileChange;
use crate::session::protocol::ToolEffect;
use crate::tool::confine::{self, ALLOWED_WRITE_PATHS, WriteTarget};
use crate::tool::error::ToolError;
use crate::tool::{Tool, ToolContext, ToolOutput, ToolSpec};

/// Files larger than this get line counts from their line totals instead of a diff.
const DIFF_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Fresh temp-file names tried before a write gives up.
const TEMP_ATTEMPTS: usize = 8;

/// Where the write tools may write: the `allowed_write_paths` entries of the module
/// config, or why that config is unusable (then every write is refused with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteConfig {
    allowed: Result<Vec<String>, WriteConfigError>,
}

/// Why a `tool-filesystem` config's `allowed_write_paths` is unusable (every write is
/// then refused with this text). Each variant holds the offending value as JSON text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteConfigError {
    /// A list item is not a string.
    #[error(
        "the tool-filesystem config is invalid: allowed_write_paths must list directory \
         paths as strings, got {0}; nothing can be written"
    )]
    NotAString(String),
    /// The value is neither a string nor a list.
    #[error(
        "the tool-filesystem config is invalid: allowed_write_paths must be a list of \
         directory paths, got {0}; nothing can be written"
    )]
    NotAList(String),
}

impl Default for WriteConfig {
    fn default() -> Self {
        Self {
            allowed: Ok(vec![".".to_string()]),
        }
    }
}

impl WriteConfig {
    /// Reads `allowed_write_paths` from a `tool-filesystem` config: absent or null →
    /// `["."]` (the session's working directory); a string → that one entry; a list of
    /// strings → those (an empty list allows no write). Anything else is kept as an
    /// error that every write reports, so a typo never widens what may be written.
    pub fn from_config(config: &Value) -> Self {
        let allowed = match config.get(ALLOWED_WRITE_PATHS) {
            None | Some(Value::Null) => return Self::default(),
            Some(Value::String(one)) => Ok(vec![one.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or(v))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|bad| WriteConfigError::NotAString(bad.to_string())),
            Some(other) => Err(WriteConfigError::NotAList(other.to_string())),
        };
        Self { allowed }
    }

    /// The write roots (`allowed_write_paths` entries as written), or why the config
    /// is unusable. The bash tool's sandbox confines writes to the same roots.
    pub fn roots(&self) -> Result<&[String], &WriteConfigError> {
        self.allowed.as_ref().map(Vec::as_slice)
    }

    /// The file `requested` resolves to, if a write there is allowed (see
    /// `confine::resolve_for_write`; `~/` is `$HOME`).
    fn target(&self, working_dir: &Path, requested: &str) -> Result<WriteTarget, ToolError> {
        let allowed = self
            .allowed
            .as_ref()
            .map_err(|e| ToolError::Denied(e.to_string()))?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        confine::resolve_for_write(working_dir, allowed, requested, home.as_deref())
    }
}

/// `write_file {file_path, content}`: creates or replaces a file with `content`
/// (parent directories created). Result: `{"file_path", "bytes", "created",
/// "lines_added", "lines_removed"}` (Amplifier's `file_path`/`bytes` plus the change).
#[derive(Debug, Clone, Default)]
pub struct WriteFile {
    config: WriteConfig,
}

/// `edit_file {file_path, old_string, new_string, replace_all?}`: replaces an exact
/// occurrence of `old_string` (exactly one, or every one with `replace_all`). Result:
/// `{"file_path", "replacements_made", "bytes_written", "lines_added",
/// "lines_removed"}`.
#[derive(Debug, Clone, Default)]
pub struct EditFile {
    config: WriteConfig,
}

impl WriteFile {
    pub fn new(config: WriteConfig) -> Self {
        Self { config }
    }
}

impl EditFile {
    pub fn new(config: WriteConfig) -> Self {
        Self { config }
    }
}

impl Tool for WriteFile {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Write a file: creates it (and missing parent directories) or \
                          replaces its whole content. Read an existing file first; prefer \
                          edit_file for changes to part of a file. Only paths inside the \
                          allowed write directories (by default the working directory) \
                          can be written."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The file to write, relative to the working directory or absolute."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["file_path", "content"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let config = self.config.clone();
        Box::pin(blocking(move || {
            execute(plan_write(&input, &ctx.working_dir, &config))
        }))
    }

    fn preview(&self, input: &Value, working_dir: &Path) -> Option<Result<String, ToolError>> {
        Some(plan_write(input, working_dir, &self.config).map(|p| p.diff()))
    }
}

impl Tool for EditFile {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace exact text in a file. old_string must match the file \
                          exactly (whitespace and indentation included, without read_file's \
                          line-number prefix) and exactly once, unless replace_all is true. \
                          Read the file first."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The file to edit, relative to the working directory or absolute."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to replace it with (must differ from old_string)."},
                    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false)."}
                },
                "required": ["file_path", "old_string", "new_string"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let config = self.config.clone();
        Box::pin(blocking(move || {
            execute(plan_edit(&input, &ctx.working_dir, &config))
        }))
    }

    fn preview(&self, input: &Value, working_dir: &Path) -> Option<Result<String, ToolError>> {
        Some(plan_edit(input, working_dir, &self.config).map(|p| p.diff()))
    }
}

/// A write worked out but not done: where, the content before (`None`: a new file)
/// and after, and the result fields of the tool.
struct Planned {
    /// The write root the file is inside, and the file below it (see [`commit`]).
    root: PathBuf,
    relative: PathBuf,
    /// The path as shown to the model and recorded (relative to the working directory
    /// when inside it).
    shown: String,
    before: Option<String>,
    after: String,
    tool: &'static str,
    replacements: usize,
}

impl Planned {
    fn diff(&self) -> String {
        diff::unified_diff(&self.shown, self.before.as_deref(), &self.after)
    }

    fn change(&self) -> FileChange {
        let before = self.before.as_deref().unwrap_or("");
        let large = before.len() > DIFF_MAX_BYTES || self.after.len() > DIFF_MAX_BYTES;
        let (lines_added, lines_removed) = if large {
            (
                self.after.lines().count() as u64,
                before.lines().count() as u64,
            )
        } else {
            diff::line_counts(before, &self.after)
        };
        // The change with its place in the file, for `session diff` (a created file's
        // content is already the call's input).
        let hunks = self
            .before
            .as_deref()
            .filter(|_| !large)
            .map(|before| diff::hunks(before, &self.after));
        FileChange {
            path: self.shown.clone(),
            tool: self.tool.to_string(),
            lines_added,
            lines_removed,
            created: self.before.is_none(),
            changes: 1,
            hunks,
        }
    }
}

/// Writes a planned change and builds the tool's result: Amplifier's keys for the tool
/// (`write_file`: `bytes`, `created`; `edit_file`: `replacements_made`,
/// `bytes_written`) plus the line counts.
fn execute(planned: Result<Planned, ToolError>) -> Result<ToolOutput, ToolError> {
    let planned = planned?;
    commit(&planned)?;
    let change = planned.change();
    let mut content = json!({
        "file_path": planned.shown,
        "lines_added": change.lines_added,
        "lines_removed": change.lines_removed,
    });
    let bytes = planned.after.len();
    let extra = if planned.tool == "edit_file" {
        json!({"replacements_made": planned.replacements, "bytes_written": bytes})
    } else {
        json!({"bytes": bytes, "created": change.created})
    };
    if let (Value::Object(map), Value::Object(extra)) = (&mut content, extra) {
        map.extend(extra);
    }
    Ok(ToolOutput::ok(content.to_string()).with_effect(ToolEffect::FileChange(change)))
}

fn plan_write(
    input: &Value,
    working_dir: &Path,
    config: &WriteConfig,
) -> Result<Planned, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "write_file expects an object like {\"file_path\": \"notes.md\", \"content\": \"…\"}"
                .into(),
        ));
    }
    let requested = required(input, "file_path", "write_file needs 'file_path'")?;
    let content = required(input, "content", "write_file needs 'content'")?;
    let target = config.target(working_dir, requested)?;
    let before = if target.exists {
        Some(read_text(&target.path, requested, true)?)
    } else {
        None
    };
    Ok(Planned {
        shown: shown(working_dir, &target.path),
        root: target.root,
        relative: target.relative,
        before,
        after: content.to_string(),
        tool: "write_file",
        replacements: 0,
    })
}

fn plan_edit(
    input: &Value,
    working_dir: &Path,
    config: &WriteConfig,
) -> Result<Planned, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "edit_file expects an object like {\"file_path\": \"src/a.rs\", \
                    \"old_string\": \"…\", \"new_string\": \"…\"}"
                .into(),
        ));
    }
    let requested = required(input, "file_path", "edit_file needs 'file_path'")?;
    let old = required(input, "old_string", "edit_file needs 'old_string'")?;
    let new = required(input, "new_string", "edit_file needs 'new_string'")?;
    let replace_all = opt_bool(input, "replace_all")?.unwrap_or(false);
    let target = config.target(working_dir, requested)?;
    if !target.exists {
        return Err(ToolError::Unsuitable(format!(
            "file not found: '{requested}' (edit_file changes existing files; write_file creates one)"
        )));
    }
    let before = read_text(&target.path, requested, false)?;
    let shown = shown(working_dir, &target.path);
    let edited = apply_edit(&before, old, new, replace_all)
        .map_err(|e| ToolError::Failed(e.message(&shown)))?;
    Ok(Planned {
        shown,
        root: target.root,
        relative: target.relative,
        before: Some(before),
        after: edited.content,
        tool: "edit_file",
        replacements: edited.replacements,
    })
}

/// The current text of `path`. `lossy`: a binary or non-UTF-8 file is read lossily
/// (only line counts use it) instead of refused.
fn read_text(path: &Path, requested: &str, lossy: bool) -> Result<String, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| ToolError::io("read", requested, e))?;
    if !meta.is_file() {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' is not a regular file"
        )));
    }
    if meta.len() > READ_FILE_MAX {
        if lossy {
            return Ok(String::new());
        }
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' is too large to edit ({} bytes; the limit is {READ_FILE_MAX})",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| ToolError::io("read", requested, e))?;
    if lossy {
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    if confine::looks_binary(&bytes) {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' looks like a binary file; edit_file edits text only"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::Unsuitable(format!(
            "'{requested}' is not UTF-8 text; edit_file edits UTF-8 text only"
        ))
    })
}

/// `path` relative to the working directory (canonical) when inside it, else absolute.
fn shown(working_dir: &Path, path: &Path) -> String {
    match confine::root(working_dir) {
        Ok(root) => confine::display(&root, path),
        Err(_) => path.display().to_string(),
    }
}

/// Writes `planned.after` to the planned file atomically: missing parent directories
/// first, then a temp file in the same directory (mode 0666 less the umask, or the
/// replaced file's permissions), synced, renamed over the target.
///
/// Every step is relative to a handle on the write root opened once here
/// (`cap_std::fs::Dir`, which resolves each path beneath it — `openat2` with
/// `RESOLVE_BENEATH` on Linux): a directory swapped for a symlink after
/// `confine::resolve_for_write` checked the path makes the write fail instead of
/// landing outside the root. The file's directory is opened once too, so the temp
/// file and the rename happen in the same directory.
fn commit(planned: &Planned) -> Result<(), ToolError> {
    let shown = &planned.shown;
    let failed = |e: std::io::Error| ToolError::io("write", shown.as_str(), e);
    let root = Dir::open_ambient_dir(&planned.root, ambient_authority()).map_err(|e| {
        ToolError::Failed(format!(
            "cannot write '{shown}': the write root {} cannot be opened: {e}",
            planned.root.display()
        ))
    })?;
    let name = planned.relative.file_name().ok_or_else(|| {
        ToolError::Unsuitable(format!("cannot write '{shown}': it has no file name"))
    })?;
    let dir = match planned
        .relative
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        Some(parent) => {
            root.create_dir_all(parent)
                .map_err(|e| ToolError::io("create the directories of", shown.as_str(), e))?;
            root.open_dir(parent)
                .map_err(|e| ToolError::io("create the directories of", shown.as_str(), e))?
        }
        None => root,
    };
    let (temp_name, mut file) = create_temp(&dir, name).map_err(failed)?;
    let written = (|| {
        if planned.before.is_some()
            && let Ok(meta) = dir.metadata(name)
        {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(planned.after.as_bytes())?;
        file.sync_all()?;
        drop(file);
        dir.rename(&temp_name, &dir, name)
    })();
    if let Err(e) = written {
        let _ = dir.remove_file(&temp_name);
        return Err(failed(e));
    }
    Ok(())
}

/// Creates `.<name>.<random>.arbor-tmp` in `dir` (never an existing name: a few
/// fresh names are tried), mode 0666 less the umask.
fn create_temp(dir: &Dir, name: &OsStr) -> std::io::Result<(OsString, cap_std::fs::File)> {
    let mut options = cap_std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.mode(0o666);
    }
    let mut last = None;
    for _ in 0..TEMP_ATTEMPTS {
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".{:08x}.arbor-tmp", rand::random::<u32>()));
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temp file name was free")))
}

/// A boolean argument (`true`/`false`, or those words as strings); `None` when absent.
fn opt_bool(input: &Value, key: &str) -> Result<Option<bool>, ToolError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(ToolError::Input(format!(
            "'{key}' must be true or false, got {other}"
        ))),
    }
}

#[cfg(test)]
mod tests;
