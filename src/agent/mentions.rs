//! `@mention` expansion as foundation does it (amplifier-foundation d0d96f7
//! `mentions/`: `parser.parse_mentions`, `loader.expand_mentions_in_instruction`,
//! `resolver.BaseMentionResolver`, `deduplicator.ContentDeduplicator`), so an agent's
//! system prompt is the one Amplifier sends.
//!
//! Mentions (`@path`, `@ns:path`, `@~/path`) are found outside code (fenced blocks
//! and inline code removed first); e-mail addresses are not mentions. Each resolves —
//! `@ns:path` against the directory of bundle `ns`, `@~/…` against the home
//! directory, anything else against the working directory, trying `path` then
//! `path.md` — and is read (a directory becomes a listing), files mentioned in files
//! too, three levels deep. Equal contents are kept once (every path credited). The
//! loaded files are prepended to the instruction as `<context_file paths="@m →
//! /abs/path">…</context_file>` blocks; the mentions stay in the text. A mention
//! that does not resolve stays as text and is reported.
//!
//! What may be read (SPEC §12 "Trust", issue 22) — checked on the canonical path, so
//! a symlink cannot lead out: never a private path (`config::private`: `/proc`,
//! `/dev`, `/sys`, arbor's config, Amplifier's key files, `~/.ssh`, …); an `@ns:path`
//! only inside bundle `ns`'s directory; and when the instruction is *confined* (it
//! came from a project agent file, [`MentionRoots::confined`]) or the mention was
//! found in a file inside the project, a path only inside the project
//! ([`MentionRoots::project`]) — no `@~/…`, no absolute path, no `../` escape. A
//! refused mention stays as text and is reported with the reason.
//!
//! Owns: [`parse_mentions`], [`expand`]. Does not own: deciding which namespaces
//! exist, the project or the private paths (the caller's [`MentionRoots`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where mentions resolve: bundle namespace → bundle directory, the working
/// directory, and the home directory for `@~/…`; and what they may read.
#[derive(Debug, Clone, Default)]
pub struct MentionRoots {
    pub namespaces: HashMap<String, PathBuf>,
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// The project root (canonical): confined mentions, and mentions found in files
    /// under it, resolve only inside it. `None`: no project is known.
    pub project: Option<PathBuf>,
    /// Whether the instruction's own mentions are confined to [`Self::project`] (it
    /// came from a project agent file). With no project known, confined mentions
    /// read nothing but namespaces.
    pub confined: bool,
    /// Paths never read, nor anything under them (`config::private::private_paths`).
    pub private: Vec<PathBuf>,
}

/// Why a mention was not read.
enum Miss {
    NotFound,
    Refused(String),
}

/// Bytes of one mentioned file read at most (the rest is cut, with a note).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// How deep mentions inside mentioned files are followed (foundation's `max_depth`).
const MAX_DEPTH: usize = 3;

fn is_mention_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_:./~-".contains(c)
}

/// `text` without fenced code blocks (a line starting with ``` up to the next such
/// line) and inline code (single backticks not next to another backtick).
fn without_code(text: &str) -> String {
    let mut kept = Vec::new();
    let mut in_fence = false;
    for line in text.split('\n') {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            kept.push(line);
        }
    }
    let joined = kept.join("\n");
    let chars: Vec<char> = joined.chars().collect();
    let mut out = String::with_capacity(joined.len());
    let mut i = 0;
    while i < chars.len() {
        let lone = |at: usize| {
            chars[at] == '`' && (at == 0 || chars[at - 1] != '`') && chars.get(at + 1) != Some(&'`')
        };
        if lone(i)
            && let Some(len) = chars[i + 1..].iter().position(|c| *c == '`')
            && len > 0
            && lone(i + 1 + len)
        {
            i += len + 2;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Whether `rest` (the text after an `@`) starts like an e-mail address
/// (`local@domain.tld`), which foundation's pattern refuses as a mention.
fn email_follows(rest: &str) -> bool {
    let local = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "._%+-".contains(c)))
        .unwrap_or(rest.len());
    if local == 0 || !rest[local..].starts_with('@') {
        return false;
    }
    let domain = &rest[local + 1..];
    let end = domain
        .find(|c: char| !(c.is_ascii_alphanumeric() || ".-".contains(c)))
        .unwrap_or(domain.len());
    let domain = &domain[..end];
    domain.char_indices().any(|(i, c)| {
        c == '.'
            && i > 0
            && domain[i + 1..]
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .count()
                >= 2
    })
}

/// The unique mentions of `text` (with `@`), in order of appearance, outside code.
pub fn parse_mentions(text: &str) -> Vec<String> {
    let text = without_code(text);
    let mut out: Vec<String> = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('@') {
        let after = &rest[at + 1..];
        let len = after
            .find(|c: char| !is_mention_char(c))
            .unwrap_or(after.len());
        if len > 0 && !email_follows(after) {
            let mention = format!("@{}", &after[..len]);
            if !out.contains(&mention) {
                out.push(mention);
            }
        }
        rest = &after[len..];
    }
    out
}

/// Foundation's `BaseMentionResolver.resolve`, then the checks of the module docs
/// on the canonical path; `confined`: plain paths must stay inside the project.
fn resolve(mention: &str, roots: &MentionRoots, confined: bool) -> Result<PathBuf, Miss> {
    let body = mention.strip_prefix('@').ok_or(Miss::NotFound)?;
    if let Some((ns, name)) = body.split_once(':') {
        let base = roots.namespaces.get(ns).ok_or(Miss::NotFound)?;
        let path = base.join(name.trim_start_matches('/'));
        if !path.exists() {
            return Err(Miss::NotFound);
        }
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.clone());
        return allowed(path, roots, Some(&base), "bundle");
    }
    let (path, with_md) = match body.strip_prefix("~/") {
        Some(rel) => {
            if confined {
                return Err(Miss::Refused(
                    "a project agent file may not mention the home directory".into(),
                ));
            }
            let home = roots.home.as_ref().ok_or(Miss::NotFound)?;
            (home.join(rel), home.join(format!("{rel}.md")))
        }
        None => (roots.cwd.join(body), roots.cwd.join(format!("{body}.md"))),
    };
    let found = if path.exists() {
        path
    } else if with_md.exists() {
        with_md
    } else {
        return Err(Miss::NotFound);
    };
    if !confined {
        return allowed(found, roots, None, "");
    }
    match &roots.project {
        Some(project) => allowed(found, roots, Some(project), "project"),
        None => Err(Miss::Refused(
            "a project agent file may mention only files of its project".into(),
        )),
    }
}

/// `path` canonicalized, unless it is private or (with `within`) outside `within`.
fn allowed(
    path: PathBuf,
    roots: &MentionRoots,
    within: Option<&Path>,
    what: &str,
) -> Result<PathBuf, Miss> {
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    if crate::config::private::is_private(&path, &roots.private) {
        return Err(Miss::Refused(format!(
            "{} is private (system, config or key files)",
            path.display()
        )));
    }
    if let Some(within) = within
        && !path.starts_with(within)
    {
        return Err(Miss::Refused(format!(
            "{} is outside the {what} ({})",
            path.display(),
            within.display()
        )));
    }
    Ok(path)
}

/// foundation's `format_directory_listing`.
fn listing(dir: &Path) -> String {
    let mut entries: Vec<(bool, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    (
                        e.path().is_dir(),
                        e.file_name().to_string_lossy().into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by_key(|(is_dir, name)| (!is_dir, name.to_lowercase()));
    let lines: Vec<String> = entries
        .iter()
        .map(|(is_dir, name)| format!("  {} {name}", if *is_dir { "DIR " } else { "FILE" }))
        .collect();
    let body = if lines.is_empty() {
        "  (empty directory)".to_string()
    } else {
        lines.join("\n")
    };
    format!("Directory: {}\n\n{body}", dir.display())
}

/// Unique contents in first-seen order, each with every path it was found at.
#[derive(Default)]
struct Files {
    files: Vec<(String, Vec<PathBuf>)>,
}

impl Files {
    /// Adds `content` found at `path`; false when the content was already there.
    fn add(&mut self, path: PathBuf, content: String) -> bool {
        if let Some((_, paths)) = self.files.iter_mut().find(|(c, _)| *c == content) {
            if !paths.contains(&path) {
                paths.push(path);
            }
            return false;
        }
        self.files.push((content, vec![path]));
        true
    }
}

fn load(
    mention: &str,
    roots: &MentionRoots,
    files: &mut Files,
    (depth, confined): (usize, bool),
    warnings: &mut Vec<String>,
) -> Result<PathBuf, Miss> {
    let path = resolve(mention, roots, confined)?;
    if path.is_dir() {
        files.add(path.clone(), listing(&path));
        return Ok(path);
    }
    // Already checked (private, confined); read non-blocking, regular files only and
    // capped (`config::project_file`, issue 34): a FIFO or device is refused, not
    // waited on.
    let within = crate::config::project_file::Confinement {
        root: None,
        private: roots.private.clone(),
    };
    let content = match crate::config::project_file::read(&path, &within, MAX_FILE_BYTES) {
        Ok(read) if read.cut => {
            let mut text = read.text();
            text.push_str(&format!("\n[cut at {MAX_FILE_BYTES} bytes]"));
            text
        }
        Ok(read) => read.text(),
        Err(e) if e.is_not_found() => return Err(Miss::NotFound),
        Err(e) => return Err(Miss::Refused(e.to_string())),
    };
    if files.add(path.clone(), content.clone()) && depth < MAX_DEPTH {
        // A file of the project (a cloned repository's) mentions only inside it.
        let nested_confined =
            confined || roots.project.as_ref().is_some_and(|p| path.starts_with(p));
        for nested in parse_mentions(&content) {
            if let Err(Miss::Refused(why)) = load(
                &nested,
                roots,
                files,
                (depth + 1, nested_confined),
                warnings,
            ) {
                warnings.push(format!("{nested} (in {}): refused: {why}", path.display()));
            }
        }
    }
    Ok(path)
}

/// `instruction` with the files its mentions name prepended as context blocks (see
/// the module docs), and one warning per mention that did not resolve or was
/// refused (with the reason). Unchanged when it has no mention that resolves.
pub fn expand(instruction: &str, roots: &MentionRoots) -> (String, Vec<String>) {
    let mut files = Files::default();
    let mut by_mention: Vec<(String, PathBuf)> = Vec::new();
    let mut warnings = Vec::new();
    for mention in parse_mentions(instruction) {
        match load(
            &mention,
            roots,
            &mut files,
            (0, roots.confined),
            &mut warnings,
        ) {
            Ok(path) => by_mention.push((mention, path)),
            Err(Miss::NotFound) => warnings.push(format!("{mention}: not found; left as text")),
            Err(Miss::Refused(why)) => {
                warnings.push(format!("{mention}: refused: {why}; left as text"));
            }
        }
    }
    if files.files.is_empty() {
        return (instruction.to_string(), warnings);
    }
    let blocks: Vec<String> = files
        .files
        .iter()
        .map(|(content, paths)| {
            let shown: Vec<String> = paths
                .iter()
                .flat_map(|p| {
                    let named: Vec<String> = by_mention
                        .iter()
                        .filter(|(_, q)| q == p)
                        .map(|(m, _)| format!("{m} → {}", p.display()))
                        .collect();
                    if named.is_empty() {
                        vec![p.display().to_string()]
                    } else {
                        named
                    }
                })
                .collect();
            format!(
                "<context_file paths=\"{}\">\n{content}\n</context_file>",
                shown.join(", ")
            )
        })
        .collect();
    (
        format!("{}\n\n{instruction}", blocks.join("\n\n")),
        warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_outside_code_and_not_emails() {
        let text = "Read @foundation:context/A.md and @./notes, mail bob@example.com.\n```\n@in/fence\n```\nNot `@inline` but @docs/x.md twice @docs/x.md";
        assert_eq!(
            parse_mentions(text),
            [
                "@foundation:context/A.md",
                "@./notes",
                "@example.com.",
                "@docs/x.md"
            ]
        );
        // `@` followed by an address is not a mention; the address's own `@` is.
        assert_eq!(parse_mentions("cc @alice@example.com"), ["@example.com"]);
    }

    #[test]
    fn expansion_prepends_deduplicated_files_and_follows_nested_mentions() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let bundle = root.join("b");
        std::fs::create_dir_all(bundle.join("context")).unwrap();
        std::fs::write(bundle.join("context/a.md"), "A body, see @b:context/n.md").unwrap();
        std::fs::write(bundle.join("context/n.md"), "Nested.").unwrap();
        std::fs::write(bundle.join("context/copy.md"), "Nested.").unwrap();
        let roots = MentionRoots {
            namespaces: HashMap::from([("b".to_string(), bundle.clone())]),
            cwd: root.clone(),
            home: None,
            ..Default::default()
        };
        let (out, warnings) = expand(
            "Use @b:context/a.md and @b:context/copy.md, not @missing/file.",
            &roots,
        );
        let a = bundle.join("context/a.md");
        let n = bundle.join("context/n.md");
        let copy = bundle.join("context/copy.md");
        assert_eq!(
            out,
            format!(
                "<context_file paths=\"@b:context/a.md → {}\">\nA body, see @b:context/n.md\n</context_file>\n\n<context_file paths=\"{}, @b:context/copy.md → {}\">\nNested.\n</context_file>\n\nUse @b:context/a.md and @b:context/copy.md, not @missing/file.",
                a.display(),
                n.display(),
                copy.display()
            )
        );
        assert_eq!(warnings, ["@missing/file.: not found; left as text"]);
        let (same, _) = expand("No mentions here.", &roots);
        assert_eq!(same, "No mentions here.");
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("pipe.md"))
            .status()
            .unwrap();
        assert!(made.success());
        let roots = MentionRoots {
            cwd: root.clone(),
            project: Some(root.clone()),
            ..Default::default()
        };
        let (text, warnings) = expand("Read @pipe.md", &roots);
        assert_eq!(text, "Read @pipe.md");
        assert!(
            warnings.iter().any(|w| w.contains("not a regular file")),
            "{warnings:?}"
        );
    }

    #[test]
    fn private_paths_escapes_and_outside_mentions_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let project = root.join("project");
        let bundle = root.join("bundle");
        let home = root.join("home");
        for d in [&project, &bundle, &home.join(".ssh")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(root.join("outside.md"), "OUTSIDE").unwrap();
        std::fs::write(home.join(".ssh/id"), "SSH-KEY").unwrap();
        std::fs::write(home.join("notes.md"), "HOME-NOTES").unwrap();
        std::fs::write(project.join("in.md"), "IN, see @../outside.md").unwrap();
        std::fs::write(bundle.join("ctx.md"), "BUNDLE").unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", project.join("env.md")).unwrap();
        let mut roots = MentionRoots {
            namespaces: HashMap::from([("b".to_string(), bundle.clone())]),
            cwd: project.clone(),
            home: Some(home.clone()),
            project: Some(project.clone()),
            confined: false,
            private: vec![PathBuf::from("/proc"), home.join(".ssh")],
        };
        // Any tier: private paths (directly or through a symlink) and namespace
        // escapes are refused; the project file's own `../` mention too.
        let (out, warnings) = expand(
            "@/proc/self/environ @~/.ssh/id @env.md @b:../outside.md @b:ctx.md @in.md @~/notes.md",
            &roots,
        );
        for kept in ["BUNDLE", "IN, see", "HOME-NOTES"] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
        for gone in ["SSH-KEY", "OUTSIDE", "PATH="] {
            assert!(!out.contains(gone), "{gone}: {out}");
        }
        for mention in [
            "@/proc/self/environ: refused",
            "@~/.ssh/id: refused",
            "@env.md: refused",
            "@b:../outside.md: refused",
            "@../outside.md (in ",
        ] {
            assert!(
                warnings.iter().any(|w| w.starts_with(mention)),
                "{mention}: {warnings:?}"
            );
        }
        // A project agent file: nothing outside the project, no home, no absolute.
        roots.confined = true;
        let outside = root.join("outside.md").display().to_string();
        let (out, warnings) = expand(
            &format!("@../outside.md @{outside} @~/notes.md @in.md"),
            &roots,
        );
        assert!(out.contains("IN, see"), "{out}");
        assert!(
            !out.contains("OUTSIDE") && !out.contains("HOME-NOTES"),
            "{out}"
        );
        assert_eq!(
            warnings.iter().filter(|w| w.contains("refused")).count(),
            4,
            "{warnings:?}"
        );
    }
}
