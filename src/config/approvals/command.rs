//! Reading a `bash` command string for approval rules, with a real shell grammar
//! (tree-sitter-bash, as codex-rs does) that fails closed (issue 22).
//!
//! Owns: [`Script`], the two readings rules need —
//! - **plain** ([`Script::plain`]): the simple commands, as unquoted words, when the
//!   whole script is nothing but simple commands joined by `&&`, `||`, `;`, newlines
//!   or `|`, every word a plain word, a single-quoted string or a double-quoted string
//!   with nothing expanded inside, and no redirection but `2>&1`, `>&2`,
//!   `>/dev/null` and `2>/dev/null` (descriptor copies between stdout and stderr open
//!   nothing; the others open only `/dev/null`). Anything
//!   else — a comment, a line continuation, a here-doc, any other redirection, `$…`,
//!   backticks, globs, braces, `FOO=1 cmd`, subshells, functions, `&`, `|&`, a parse
//!   error — has no plain reading, so no `allow` pattern or grant can cover it;
//! - **everything it runs** ([`Script::restricted_by`]): every simple command anywhere
//!   in it (in substitutions, subshells, functions, conditions, loops), read through
//!   wrappers ([`super::wrappers`]: `sh -c '…'` and `eval` payloads parsed again,
//!   every suffix of `env`/`nohup`/`xargs`… arguments, `find -exec`), for `deny` and
//!   `ask` patterns; a command that deletes files by other means (`find -delete`,
//!   `unlink`, `rmdir`, `shred -u`) is also read as `rm` ([`super::deleters`]).
//!
//! Fail closed: a command whose program cannot be named (`$x`, `$(…)`, a glob) is
//! matched by *every* restricting pattern; a script the parser cannot fully read (a
//! parse error, a line continuation, a shell reading stdin or a file, an interpreter,
//! nesting past [`MAX_DEPTH`]) is matched by a pattern whose first literal word
//! appears anywhere in its text as a word (quotes and backslashes removed: `r''m`,
//! `x=rm`, `system("rm x")` count; `format` does not count for `rm`).
//!
//! Does not own: which rule wins (`policy`), the wrapper table (`wrappers`).

use tree_sitter::{Node, Parser, Tree};

use super::deleters::as_rm;
use super::wrappers::{
    Wrapper, basename, find_payloads, runs_other_code, shell_payload_indices, wrapper_of,
};

/// How deep `sh -c`/`eval` payloads and wrapper prefixes are read; deeper is opaque.
pub const MAX_DEPTH: usize = 4;

/// How many argument words after a `Prefix` wrapper are tried as the start of its
/// command; a longer one is opaque.
const MAX_PREFIX_WORDS: usize = 12;

/// How many commands are recorded (wrapper suffixes included); past that the script
/// is opaque.
const MAX_FOUND: usize = 20_000;

/// A `bash` command string read for approval rules. Never fails: what cannot be read
/// makes the script opaque (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The plain reading: the simple commands as unquoted words, in order.
    plain: Option<Vec<Vec<String>>>,
    /// Every simple command found, as words (unquoted where static, raw text where
    /// not), wrapper payloads included.
    found: Vec<Vec<String>>,
    /// Some command's program cannot be named statically.
    unknown_program: bool,
    /// Some part cannot be read (see the module doc).
    opaque: bool,
    /// The text with line continuations, quotes and backslashes removed, for the
    /// opaque fallback.
    flat: String,
}

/// One word of a command: its text (unquoted when static) and whether it is static.
struct Word {
    text: String,
    /// No expansion or substitution: the text is exactly what the program receives.
    fixed: bool,
    /// An unquoted glob or brace character: the shell may turn it into other words.
    glob: bool,
}

impl Script {
    /// Reads `command` (see the module doc).
    pub fn parse(command: &str) -> Self {
        let flat: String = remove_continuations(command)
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        let mut script = Self {
            flat,
            ..Self::default()
        };
        let continued = command.contains("\\\n") || command.contains("\\\r\n");
        if continued {
            // tree-sitter takes `\⏎` for blank space between words; sh removes it, so
            // `r\⏎m` is `rm`. Read the joined text for restricting patterns only.
            script.opaque = true;
            script.read(&remove_continuations(command), 0);
            return script;
        }
        if let Some(tree) = parse_tree(command) {
            let root = tree.root_node();
            if !root.has_error() {
                script.plain = plain_commands(root, command);
            }
        }
        script.read(command, 0);
        script
    }

    /// The simple commands as unquoted words, when the script has a plain reading.
    pub fn plain(&self) -> Option<&[Vec<String>]> {
        self.plain.as_deref()
    }

    /// The plain commands when an `allow` pattern or grant may cover the script: it
    /// has a plain reading, at least one command, and no command runs other code
    /// ([`super::wrappers::WRAPPERS`]).
    pub fn coverable(&self) -> Option<&[Vec<String>]> {
        let plain = self.plain()?;
        (!plain.is_empty() && !plain.iter().any(|c| runs_other_code(c))).then_some(plain)
    }

    /// Whether a restricting (`deny`/`ask`) pattern applies: `matches` accepts the
    /// text of some command found (words joined by one space, also with the program's
    /// directory dropped); or some program cannot be named; or the script is opaque
    /// and `literal` (the pattern's first literal word, see [`literal_word`]) is empty
    /// or appears as a word in its flattened text.
    pub fn restricted_by(&self, matches: &dyn Fn(&str) -> bool, literal: &str) -> bool {
        if self.unknown_program {
            return true;
        }
        if self.opaque && (literal.is_empty() || contains_word(&self.flat, literal)) {
            return true;
        }
        self.found.iter().any(|words| {
            let joined = words.join(" ");
            if matches(&joined) {
                return true;
            }
            let Some(program) = words.first() else {
                return false;
            };
            let short = basename(program);
            short != program && {
                let mut w = words.clone();
                w[0] = short.to_string();
                matches(&w.join(" "))
            }
        })
    }

    /// Whether some part of the script could not be read (a parse error, a shell
    /// reading a file or stdin, an interpreter …) or names no program statically.
    pub fn is_opaque(&self) -> bool {
        self.opaque || self.unknown_program
    }

    /// Reads `text` (at nesting `depth`) into `found`/`unknown_program`/`opaque`.
    fn read(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.opaque = true;
            return;
        }
        let Some(tree) = parse_tree(text) else {
            self.opaque = true;
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.opaque = true;
        }
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if node.kind() == "command" {
                let words = command_words(node, text);
                self.command(words, depth);
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }

    /// Records one simple command and reads through it when it is a wrapper.
    fn command(&mut self, words: Vec<Word>, depth: usize) {
        let Some(name) = words.first() else {
            return;
        };
        if self.found.len() >= MAX_FOUND {
            self.opaque = true;
            return;
        }
        if !name.fixed || name.glob {
            self.unknown_program = true;
        }
        let texts: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
        self.wrapped(&texts, &words, depth);
        self.record(texts);
    }

    /// Reads what the wrapper command `texts` runs (`words` says which are static).
    fn wrapped(&mut self, texts: &[String], words: &[Word], depth: usize) {
        let Some(kind) = texts.first().and_then(|p| wrapper_of(p)) else {
            return;
        };
        if depth >= MAX_DEPTH {
            self.opaque = true;
            return;
        }
        let fixed = |i: usize| words.get(i).is_none_or(|w| w.fixed);
        match kind {
            Wrapper::Shell => match shell_payload_indices(texts) {
                Some(indices) => {
                    for i in indices {
                        if fixed(i) {
                            self.read(&texts[i], depth + 1);
                        } else {
                            self.unknown_program = true;
                        }
                    }
                }
                None => self.opaque = true,
            },
            Wrapper::Eval => {
                if (1..texts.len()).all(fixed) {
                    self.read(&texts[1..].join(" "), depth + 1);
                } else {
                    self.unknown_program = true;
                }
            }
            Wrapper::Interpreter => self.opaque = true,
            Wrapper::Find => {
                for payload in find_payloads(texts) {
                    self.suffix(payload, depth);
                }
            }
            Wrapper::Prefix => {
                if texts.len() > MAX_PREFIX_WORDS + 1 {
                    self.opaque = true;
                }
                for start in 1..texts.len().min(MAX_PREFIX_WORDS + 1) {
                    self.suffix(texts[start..].to_vec(), depth);
                }
            }
        }
    }

    /// Records the command `texts`, and its `rm` reading when it deletes files by
    /// other means ([`super::deleters::as_rm`]: `find -delete`, `unlink` …).
    fn record(&mut self, texts: Vec<String>) {
        if let Some(rm) = as_rm(&texts) {
            self.found.push(rm);
        }
        self.found.push(texts);
    }

    /// A command run by a wrapper: recorded, and read through when it wraps again.
    fn suffix(&mut self, texts: Vec<String>, depth: usize) {
        if texts.is_empty() {
            return;
        }
        if self.found.len() >= MAX_FOUND {
            self.opaque = true;
            return;
        }
        let words: Vec<Word> = texts
            .iter()
            .map(|t| Word {
                text: t.clone(),
                fixed: true,
                glob: false,
            })
            .collect();
        self.wrapped(&texts, &words, depth + 1);
        self.record(texts);
    }
}

/// The first literal word of a command pattern: its text up to the first blank or
/// glob character (`rm*` → `rm`, `git push*` → `git`, `*` → ``).
pub fn literal_word(pattern: &str) -> &str {
    let end = pattern
        .find(|c: char| c.is_whitespace() || matches!(c, '*' | '?' | '[' | '{' | '\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

/// Whether `word` occurs in `text` with no letter, digit or `_` right before or after
/// it (`rm` in `x=rm;` or `(rm x)`, not in `format`).
fn contains_word(text: &str, word: &str) -> bool {
    let wordy = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !wordy(text[..at].chars().next_back()) && !wordy(text[at + word.len()..].chars().next())
    })
}

/// `text` with every backslash-newline removed (what sh does before reading words).
fn remove_continuations(text: &str) -> String {
    text.replace("\\\r\n", "").replace("\\\n", "")
}

/// Parses `text` as bash; `None` only if the grammar cannot be loaded or parsing is
/// cancelled (neither happens in practice; callers fail closed).
fn parse_tree(text: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    parser.parse(text, None)
}

fn node_text<'a>(node: Node<'_>, src: &'a str) -> &'a str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// The words of a `command` node: its name and arguments (assignments and redirects
/// skipped), each resolved statically when it can be.
fn command_words(node: Node<'_>, src: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "command_name" => {
                if let Some(inner) = child.named_child(0) {
                    words.insert(0, word(inner, src));
                }
            }
            "variable_assignment" | "file_redirect" | "herestring_redirect" | "comment" => {}
            _ => words.push(word(child, src)),
        }
    }
    words
}

/// One word, resolved statically when it can be (see [`Word`]).
fn word(node: Node<'_>, src: &str) -> Word {
    let raw = node_text(node, src);
    let unresolved = || Word {
        text: raw.to_string(),
        fixed: false,
        glob: false,
    };
    match node.kind() {
        "word" | "number" => Word {
            text: unescape(raw),
            fixed: true,
            glob: has_unescaped(raw, &['*', '?', '[', '{']),
        },
        "raw_string" => Word {
            text: strip(raw, '\'').to_string(),
            fixed: true,
            glob: false,
        },
        "string" => {
            let mut cursor = node.walk();
            let literal = node
                .named_children(&mut cursor)
                .all(|c| c.kind() == "string_content");
            if literal && !raw.contains(['$', '`']) {
                Word {
                    text: unescape_double(strip(raw, '"')),
                    fixed: true,
                    glob: false,
                }
            } else {
                unresolved()
            }
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let parts: Vec<Word> = node
                .children(&mut cursor)
                .map(|part| word(part, src))
                .collect();
            Word {
                text: parts.iter().map(|p| p.text.as_str()).collect(),
                fixed: parts.iter().all(|p| p.fixed),
                glob: parts.iter().any(|p| p.glob),
            }
        }
        _ => unresolved(),
    }
}

/// `text` without one `quote` at each end (as it is when they are there).
fn strip(text: &str, quote: char) -> &str {
    text.strip_prefix(quote)
        .and_then(|t| t.strip_suffix(quote))
        .unwrap_or(text)
}

/// An unquoted word as sh reads it: `\x` is `x`.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Double-quoted text as sh reads it: `\` escapes only `$`, `` ` ``, `"`, `\`.
fn unescape_double(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '"' | '\\')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether `raw` holds one of `chars` not escaped by a backslash.
fn has_unescaped(raw: &str, chars: &[char]) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if chars.contains(&c) {
            return true;
        }
    }
    false
}

/// The redirections a plain script may have: they open no file but `/dev/null`
/// (`2>&1` only duplicates a descriptor). Compared with blanks removed.
const HARMLESS_REDIRECTS: &[&str] = &[
    "2>&1",
    ">&2",
    "1>&2",
    ">/dev/null",
    "1>/dev/null",
    "2>/dev/null",
];

/// Separators a plain script may use between simple commands.
const PLAIN_SEPARATORS: &[&str] = &[";", "&&", "||", "|", "\n"];

/// The plain reading of a parsed script (see the module doc), or `None`.
fn plain_commands(root: Node<'_>, src: &str) -> Option<Vec<Vec<String>>> {
    let mut commands: Vec<(usize, Vec<String>)> = Vec::new();
    // Byte ranges of everything accepted; whatever lies between must be blanks.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "program" | "list" | "pipeline" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.is_named() {
                        stack.push(child);
                    } else if PLAIN_SEPARATORS.contains(&child.kind()) {
                        spans.push((child.start_byte(), child.end_byte()));
                    } else {
                        return None;
                    }
                }
            }
            "redirected_statement" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "command" => stack.push(child),
                        "file_redirect" if harmless(child, src) => {
                            spans.push((child.start_byte(), child.end_byte()));
                        }
                        _ => return None,
                    }
                }
            }
            "command" => {
                let words = plain_command(node, src, &mut spans)?;
                commands.push((node.start_byte(), words));
            }
            _ => return None,
        }
    }
    spans.sort_unstable();
    let mut at = 0;
    for (start, end) in spans {
        if start < at || !blank(src.get(at..start)?) {
            return None;
        }
        at = end;
    }
    if !blank(src.get(at..)?) {
        return None;
    }
    commands.sort_by_key(|(start, _)| *start);
    Some(commands.into_iter().map(|(_, words)| words).collect())
}

/// Only spaces, tabs and newlines (what both sh and tree-sitter take as blanks).
fn blank(gap: &str) -> bool {
    gap.chars().all(|c| matches!(c, ' ' | '\t' | '\n'))
}

fn harmless(redirect: Node<'_>, src: &str) -> bool {
    let compact: String = node_text(redirect, src)
        .chars()
        .filter(|c| *c != ' ' && *c != '\t')
        .collect();
    HARMLESS_REDIRECTS.contains(&compact.as_str())
}

/// The words of a plain simple command, or `None`.
fn plain_command(
    node: Node<'_>,
    src: &str,
    spans: &mut Vec<(usize, usize)>,
) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let target = match child.kind() {
            "command_name" => {
                if child.named_child_count() != 1 || child.child_count() != 1 {
                    return None;
                }
                child.named_child(0)?
            }
            "file_redirect" if harmless(child, src) => {
                spans.push((child.start_byte(), child.end_byte()));
                continue;
            }
            _ => child,
        };
        words.push(plain_word(target, src)?);
        spans.push((target.start_byte(), target.end_byte()));
    }
    (!words.is_empty()).then_some(words)
}

/// A character sh takes literally in an unquoted word.
fn plain_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
}

/// A plain word's text as the program receives it, or `None` (see the module doc).
fn plain_word(node: Node<'_>, src: &str) -> Option<String> {
    let raw = node_text(node, src);
    match node.kind() {
        "word" | "number" => {
            (!raw.is_empty() && raw.chars().all(plain_char)).then(|| raw.to_string())
        }
        "raw_string" => {
            let inner = raw.strip_prefix('\'')?.strip_suffix('\'')?;
            Some(inner.to_string())
        }
        "string" => {
            let mut cursor = node.walk();
            if !node
                .named_children(&mut cursor)
                .all(|c| c.kind() == "string_content")
            {
                return None;
            }
            let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
            (!inner.contains(['$', '`', '\\', '!'])).then(|| inner.to_string())
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let mut out = String::new();
            let mut end = node.start_byte();
            for part in node.children(&mut cursor) {
                // Parts must touch: a gap would be an invisible extra (`\⏎`, `\ `).
                if part.start_byte() != end {
                    return None;
                }
                end = part.end_byte();
                out.push_str(&plain_word(part, src)?);
            }
            (end == node.end_byte()).then_some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
