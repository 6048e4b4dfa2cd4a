//! `@file` mentions in the composer (issue 15 item 2): the project's file list for
//! completion, the completion rows for an `@partial`, and attaching mentioned files to
//! a sent message as Amplifier attaches @mentions (`agent::mentions`, foundation's
//! loader): each file's content once, as a `<context_file paths="@m → /abs/path">`
//! block before the text (an image: its marker inside a `<context_image paths=…>`
//! label, never an empty `<context_file>`); the `@path` stays visible in the text.
//!
//! Only regular files inside the project (the working directory, symlinks resolved)
//! that are not private (`config::private`: `/proc`, key and config files, `~/.ssh`,
//! …) are attached; a file over [`MAX_FILE_BYTES`] is cut there with a note saying so,
//! and attachments stop at [`MAX_TOTAL_BYTES`]; a binary file (a NUL byte, or not
//! UTF-8) is named but not attached. A mention that names no such file stays text.
//!
//! Owns: listing, matching and attaching, and collapsing attachments for the chat
//! (`collapse_attachments`). Does not own: when the list is made (off
//! the UI thread: `EngineCommand::ListProjectFiles`) or the keys (`app::palette`).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::palette::PopupItem;

/// Completion rows at most.
pub const MAX_ROWS: usize = 50;
/// Bytes of one file attached at most.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Bytes attached to one message at most (over all files).
pub const MAX_TOTAL_BYTES: usize = 256 * 1024;

/// The project's files for completion: the engine's listing (the TUI asks for it off
/// the UI thread with `EngineCommand::ListProjectFiles`; tests call it directly).
pub use crate::engine::handle::files::project_files as list_files;

fn is_mention_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./~-".contains(c)
}

/// The `@partial` being typed at the end of `before_cursor` (the text before the
/// cursor): the partial without `@` when the last word starts with `@`.
pub fn partial_at_end(before_cursor: &str) -> Option<&str> {
    let start = before_cursor.rfind(char::is_whitespace).map_or(0, |i| {
        i + before_cursor[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before_cursor[start..];
    let partial = word.strip_prefix('@')?;
    partial.chars().all(is_mention_char).then_some(partial)
}

/// Completion rows for `partial` (case-insensitive): paths starting with it, then
/// file names starting with it, then paths containing it; at most [`MAX_ROWS`].
pub fn rows(files: &[String], partial: &str) -> Vec<PopupItem> {
    let q = partial.to_lowercase();
    let mut ranked: Vec<(u8, &String)> = files
        .iter()
        .filter_map(|f| {
            let lower = f.to_lowercase();
            let name = lower.rsplit('/').next().unwrap_or(&lower);
            let rank = if lower.starts_with(&q) {
                0
            } else if name.starts_with(&q) {
                1
            } else if lower.contains(&q) {
                2
            } else {
                return None;
            };
            Some((rank, f))
        })
        .collect();
    ranked.sort_by_key(|(rank, f)| (*rank, f.len()));
    ranked
        .into_iter()
        .take(MAX_ROWS)
        .map(|(_, f)| PopupItem {
            label: format!("@{f}"),
            detail: String::new(),
            value: f.clone(),
        })
        .collect()
}

/// A message with its mentioned files attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// What the model gets: the `<context_file>` blocks, a blank line, the text.
    pub prompt: String,
    /// The mentions attached (as written, `@` included).
    pub files: Vec<String>,
    /// What was cut or left out, for a note.
    pub notes: Vec<String>,
}

/// The tag of an attached text file's block.
const FILE_TAG: &str = "context_file";
/// The tag of an attached image's block: the label around its marker.
const IMAGE_TAG: &str = "context_image";

/// Attaches the files `text` mentions (see the module doc) relative to `root`;
/// never one of `private` or under it (`config::private`, checked on the resolved
/// path), which is named in a note instead.
pub fn attach(text: &str, root: &Path, private: &[PathBuf]) -> Attached {
    let mut blocks = Vec::new();
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut total = 0usize;
    let Ok(root) = root.canonicalize() else {
        return Attached {
            prompt: text.to_string(),
            files,
            notes,
        };
    };
    for mention in crate::agent::mentions::parse_mentions(text) {
        let Some(path) = mentioned_file(&root, &mention, &mut seen) else {
            continue;
        };
        if crate::config::private::is_private(&path, private) {
            notes.push(format!("{mention}: private, not attached"));
            continue;
        }
        let header = format!("{mention} → {}", path.display());
        // An image is its own labelled part, never an (empty) `<context_file>`.
        let block = match image_body(&mention, &path, &mut notes) {
            Some(marker) => format!("<{IMAGE_TAG} paths=\"{header}\">{marker}</{IMAGE_TAG}>"),
            None => match file_body(&mention, &path, &mut total, &mut notes) {
                Some(body) => format!("<{FILE_TAG} paths=\"{header}\">\n{body}\n</{FILE_TAG}>"),
                None => continue,
            },
        };
        files.push(mention.clone());
        blocks.push(block);
    }
    let prompt = if blocks.is_empty() {
        text.to_string()
    } else {
        format!("{}\n\n{text}", blocks.join("\n\n"))
    };
    Attached {
        prompt,
        files,
        notes,
    }
}

/// The file `mention` names under `root` (resolved), when it is a regular file there
/// not attached yet (`seen`); `None` for a URL-like or `~` mention too.
fn mentioned_file(root: &Path, mention: &str, seen: &mut HashSet<PathBuf>) -> Option<PathBuf> {
    let rel = mention.trim_start_matches('@');
    if rel.contains(':') || rel.starts_with('~') {
        return None;
    }
    let path = root.join(rel).canonicalize().ok()?;
    (path.starts_with(root) && path.is_file() && seen.insert(path.clone())).then_some(path)
}

/// An image's marker, which goes to the model as an image part (issue 29); `None`
/// when `path` is not an image (or does not read as one: then it is attached as any
/// other file). A scaled image gets a note.
fn image_body(mention: &str, path: &Path, notes: &mut Vec<String>) -> Option<String> {
    let media_type = crate::session::image::media_type_of(path)?;
    match crate::session::image::encode_file(path, media_type) {
        Ok((marker, scaled)) => {
            if let Some(scaled) = scaled {
                notes.push(format!("{mention}: image scaled to {scaled}"));
            }
            Some(marker)
        }
        Err(e) => {
            tracing::debug!("{mention}: not attached as an image: {e}");
            None
        }
    }
}

/// What a file's block holds: its text, cut to the room `total` leaves under
/// [`MAX_TOTAL_BYTES`] (said in the block and a note), or a line saying a binary file
/// was not attached; `None` (with a note) when it cannot be read or no room is left.
fn file_body(
    mention: &str,
    path: &Path,
    total: &mut usize,
    notes: &mut Vec<String>,
) -> Option<String> {
    match read_capped(path) {
        Err(e) => {
            notes.push(format!("{mention}: not attached ({e})"));
            None
        }
        Ok(Content::Binary) => {
            notes.push(format!("{mention}: binary, not attached"));
            Some(format!("(binary file, {} — not attached)", path.display()))
        }
        Ok(Content::Text { text, size }) => {
            let room = MAX_TOTAL_BYTES.saturating_sub(*total);
            if room == 0 {
                notes.push(format!(
                    "{mention}: not attached (over the attachment limit)"
                ));
                return None;
            }
            let (kept, cut) = cut_at(&text, room);
            *total += kept.len();
            if cut || size > text.len() {
                notes.push(format!("{mention}: first {} bytes of {size}", kept.len()));
                Some(format!(
                    "{kept}\n[arbor: attached the first {} bytes of {size}]",
                    kept.len()
                ))
            } else {
                Some(kept.strip_suffix('\n').unwrap_or(kept).to_string())
            }
        }
    }
}

enum Content {
    Text { text: String, size: usize },
    Binary,
}

fn read_capped(path: &Path) -> std::io::Result<Content> {
    let file = std::fs::File::open(path)?;
    let size = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    let cap = u64::try_from(MAX_FILE_BYTES).unwrap_or(u64::MAX);
    file.take(cap).read_to_end(&mut bytes)?;
    if bytes.contains(&0) {
        return Ok(Content::Binary);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        // Cut inside a character at the cap: keep the valid prefix.
        Err(e) if size > MAX_FILE_BYTES && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(_) => return Ok(Content::Binary),
    };
    Ok(Content::Text { text, size })
}

/// `s` cut to at most `max` bytes at a character boundary; whether it was cut.
fn cut_at(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

/// A paste that is only paths of files inside the project (as a terminal pastes a
/// dragged file: absolute or relative, `'quoted'`, `"quoted"`, `\ `-escaped or
/// `file://`), as the `@` mentions that attach them (`@src/lib.rs @shot.png`, a
/// trailing space). `None` when any part is not such a file (the paste stays text),
/// or a path has whitespace (a mention cannot hold it).
pub fn pasted_paths(text: &str, root: &Path) -> Option<String> {
    let root = root.canonicalize().ok()?;
    let mut mentions = Vec::new();
    for token in shell_words(text.trim())? {
        let token = token.strip_prefix("file://").unwrap_or(&token).to_string();
        if token.chars().any(char::is_whitespace) {
            return None;
        }
        let path = Path::new(&token);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        };
        let full = full.canonicalize().ok()?;
        if !full.is_file() {
            return None;
        }
        let rel = full.strip_prefix(&root).ok()?;
        mentions.push(format!("@{}", rel.to_str()?));
    }
    (!mentions.is_empty()).then(|| format!("{} ", mentions.join(" ")))
}

/// `text` split as a shell splits words (quotes and `\` escapes); `None` for an
/// unclosed quote or an empty text.
fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        q if q == c => break,
                        '\\' if c == '"' => word.push(chars.next()?),
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// A user message as the chat shows it: leading `<context_file paths="@a → /abs/a">…
/// </context_file>` blocks (attached `@file` mentions) collapse to one line,
/// `📎 attached notes.txt, src/lib.rs`, then the person's text. `None` for text
/// without attachments (shown as is).
pub fn collapse_attachments(text: &str) -> Option<String> {
    let mut rest = text;
    let mut names: Vec<String> = Vec::new();
    loop {
        let trimmed = rest.trim_start();
        let Some((after, tag)) = [FILE_TAG, IMAGE_TAG].into_iter().find_map(|tag| {
            let after = trimmed.strip_prefix(&format!("<{tag} paths=\""))?;
            Some((after, tag))
        }) else {
            break;
        };
        let Some((paths, _)) = after.split_once('"') else {
            break;
        };
        let end_tag = format!("</{tag}>");
        let Some(end) = after.find(&end_tag) else {
            break;
        };
        for p in paths.split(", ") {
            let shown = p.split(" → ").next().unwrap_or(p).trim();
            names.push(shown.trim_start_matches('@').to_string());
        }
        rest = &after[end + end_tag.len()..];
    }
    if names.is_empty() {
        return None;
    }
    Some(format!(
        "📎 attached {}\n{}",
        names.join(", "),
        rest.trim_start()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_of_project_files_becomes_mentions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "x").unwrap();
        std::fs::write(root.join("my shot.png"), "x").unwrap();
        std::fs::write(root.join("notes.txt"), "x").unwrap();
        let abs = root.canonicalize().unwrap().join("src/lib.rs");
        let abs = abs.display();
        assert_eq!(
            pasted_paths(&format!("'{abs}' notes.txt\n"), root).as_deref(),
            Some("@src/lib.rs @notes.txt ")
        );
        assert_eq!(
            pasted_paths(&format!("file://{abs}"), root).as_deref(),
            Some("@src/lib.rs ")
        );
        // Not every word a file, a file outside, a name with a space: text.
        assert_eq!(pasted_paths("look at src/lib.rs", root), None);
        assert_eq!(pasted_paths("/etc/hostname", root), None);
        assert_eq!(pasted_paths("my\\ shot.png", root), None);
        assert_eq!(pasted_paths("'unclosed", root), None);
    }

    #[test]
    fn lists_respect_gitignore_and_complete_by_prefix_then_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("notes.txt"), "n").unwrap();
        std::fs::write(root.join("src/notes.rs"), "n").unwrap();
        std::fs::write(root.join("target/notes.bin"), "n").unwrap();
        let files = list_files(root);
        assert_eq!(files, ["notes.txt", "src/notes.rs"]);
        let values: Vec<String> = rows(&files, "not").into_iter().map(|r| r.value).collect();
        assert_eq!(values, ["notes.txt", "src/notes.rs"]);
        assert_eq!(rows(&files, "src/").len(), 1);
        assert_eq!(partial_at_end("see @src/no"), Some("src/no"));
        assert_eq!(partial_at_end("see @"), Some(""));
        assert_eq!(partial_at_end("me@x.com"), None);
        assert_eq!(partial_at_end("@a b"), None);
    }

    #[test]
    fn attaches_project_files_once_caps_big_ones_and_names_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.md"), "alpha").unwrap();
        std::fs::write(root.join("big.txt"), "x".repeat(MAX_FILE_BYTES + 10)).unwrap();
        std::fs::write(root.join("img.png"), [0x89, b'P', 0, 1]).unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        let out = attach(
            "read @a.md and @a.md, @big.txt, @img.png, @../outside.txt, @missing.md",
            &root,
            &[],
        );
        assert_eq!(out.files, ["@a.md", "@big.txt", "@img.png"]);
        assert!(
            out.prompt.starts_with("<context_file paths=\"@a.md → "),
            "{}",
            out.prompt
        );
        assert_eq!(out.prompt.matches("alpha").count(), 1);
        assert!(
            out.prompt.ends_with(
                "read @a.md and @a.md, @big.txt, @img.png, @../outside.txt, @missing.md"
            )
        );
        assert!(!out.prompt.contains("secret"));
        assert!(out.prompt.contains(&format!(
            "[arbor: attached the first {MAX_FILE_BYTES} bytes of {}]",
            MAX_FILE_BYTES + 10
        )));
        assert!(out.prompt.contains("(binary file"));
        assert_eq!(out.notes.len(), 2, "{:?}", out.notes);
        assert_eq!(attach("no mentions", &root, &[]).prompt, "no mentions");
    }

    #[test]
    fn private_files_inside_the_project_are_not_attached() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/id"), "SSH-KEY").unwrap();
        std::fs::write(root.join("ok.md"), "fine").unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", root.join("env.txt")).unwrap();
        let private = [root.join(".ssh"), PathBuf::from("/proc")];
        let out = attach("@.ssh/id @env.txt @ok.md", &root, &private);
        assert_eq!(out.files, ["@ok.md"]);
        assert!(!out.prompt.contains("SSH-KEY"), "{}", out.prompt);
        assert_eq!(out.notes, ["@.ssh/id: private, not attached"]);
    }
}
