//! Splitting YAML frontmatter from a Markdown body (SPEC §3), and parsing that YAML.
//!
//! Owns: finding the `---` delimiters at the very top of an agent or bundle file,
//! tolerating a UTF-8 BOM (repeated BOMs too) and CRLF line ends, and reporting where the
//! YAML and the body start so parse errors can point at the file's own line numbers;
//! parsing the block to JSON as Amplifier does ([`parse_yaml`], tolerating PyYAML's
//! unindented quoted continuation lines). Lives in `config` (issue 34 item 6) so the
//! trust check (`config::trust`) reads an agent file's frontmatter with the very
//! parser the registry (`agent::file`) uses. Re-exported as `agent::frontmatter`.
//! Does not own: what the keys mean (`agent::file`, `agent::bundle`).
//!
//! Rules (line based): the first line must be `---` (trailing whitespace allowed); the
//! block ends at the next line that is `---` (trailing whitespace allowed). Everything
//! after that line is the body. Amplifier's regex differs on two corner cases that no
//! real file uses: an empty `---`/`---` block is frontmatter here (an empty mapping),
//! and text on the closing delimiter line (`---Body`) does not close the block.

use std::borrow::Cow;

use serde_json::Value;

/// The UTF-8 byte-order mark, as a char.
const BOM: char = '\u{feff}';

/// A file split into its YAML frontmatter and its Markdown body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontmatter<'a> {
    /// The YAML between the delimiters; CRLF line ends are normalized to LF.
    pub yaml: Cow<'a, str>,
    /// 1-based file line of the first YAML line (the line after the opening `---`).
    pub yaml_line: usize,
    /// Everything after the closing `---` line, untouched (not trimmed).
    pub body: &'a str,
    /// 1-based file line where the body starts.
    pub body_line: usize,
}

/// Why a file has no usable frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error("no YAML frontmatter (the file must start with a '---' line)")]
    Missing,
    /// The opening `---` (at `line`, 1-based) has no closing `---` line.
    #[error("frontmatter opened at line {line} is never closed with a '---' line")]
    Unclosed { line: usize },
}

impl FrontmatterError {
    /// 1-based line the error points at (the opening delimiter; 1 when missing).
    pub fn line(&self) -> usize {
        match self {
            Self::Missing => 1,
            Self::Unclosed { line } => *line,
        }
    }
}

/// Whether `line` (without its `\n`) is a `---` delimiter.
fn is_delimiter(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Splits `text` into frontmatter and body. Never panics, on any input.
///
/// Errors: [`FrontmatterError::Missing`] when the first line (after any BOMs) is not
/// `---`; [`FrontmatterError::Unclosed`] when no closing `---` line follows.
pub fn split(text: &str) -> Result<Frontmatter<'_>, FrontmatterError> {
    let text = text.trim_start_matches(BOM);
    let first_end = match text.find('\n') {
        Some(i) => i,
        None => {
            // A one-line file can only be an unclosed opening delimiter.
            return if is_delimiter(text) {
                Err(FrontmatterError::Unclosed { line: 1 })
            } else {
                Err(FrontmatterError::Missing)
            };
        }
    };
    if !is_delimiter(&text[..first_end]) {
        return Err(FrontmatterError::Missing);
    }
    let yaml_start = first_end + 1;
    let mut line_no = 1;
    let mut pos = yaml_start;
    while pos <= text.len() {
        line_no += 1;
        let rest = &text[pos..];
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], pos + i + 1),
            None => (rest, text.len() + 1),
        };
        if is_delimiter(line) {
            let raw_yaml = &text[yaml_start..pos];
            let yaml = if raw_yaml.contains('\r') {
                Cow::Owned(raw_yaml.replace("\r\n", "\n"))
            } else {
                Cow::Borrowed(raw_yaml)
            };
            let body = text.get(next..).unwrap_or_default();
            return Ok(Frontmatter {
                yaml,
                yaml_line: 2,
                body,
                body_line: line_no + 1,
            });
        }
        if rest.is_empty() {
            break;
        }
        pos = next;
    }
    Err(FrontmatterError::Unclosed { line: 1 })
}

/// Parses frontmatter YAML into JSON. Errors carry the FILE's 1-based line and column
/// (`yaml_line` is the file line of the first YAML line) and a one-line reason.
pub fn parse_yaml(yaml: &str, yaml_line: usize) -> Result<Value, (usize, usize, String)> {
    if yaml.trim().is_empty() {
        return Ok(Value::Null);
    }
    let first = match super::yaml::from_str::<Value>(yaml) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    // PyYAML (Amplifier) accepts quoted scalars whose continuation lines are not
    // indented (real agent files rely on it); retry with them indented, which does not
    // change the value (leading blanks of continuation lines fold away).
    if let Some(v) =
        reindent_quoted_scalars(yaml).and_then(|fixed| super::yaml::from_str::<Value>(&fixed).ok())
    {
        return Ok(v);
    }
    let (line, column) = first
        .location()
        .map(|l| (l.line() as usize, l.column() as usize))
        .unwrap_or((0, 0));
    let file_line = if line == 0 {
        yaml_line
    } else {
        yaml_line + line - 1
    };
    Err((file_line, column.max(1), yaml_message(&first)))
}

/// `yaml` with the continuation lines of multi-line quoted scalars (`key: "…` or
/// `- "…` not closed on their line) indented past their key; `None` when there are
/// none. Line numbers are unchanged.
fn reindent_quoted_scalars(yaml: &str) -> Option<String> {
    let mut out = String::with_capacity(yaml.len() + 64);
    let mut open: Option<(char, usize)> = None; // (quote, key indent)
    let mut changed = false;
    for line in yaml.split_inclusive('\n') {
        if let Some((quote, indent)) = open {
            let text = line.trim_start_matches([' ', '\t']);
            if line.len() - text.len() <= indent && !text.trim().is_empty() {
                out.push_str(&" ".repeat(indent + 2));
                out.push_str(text);
                changed = true;
            } else {
                out.push_str(line);
            }
            if closing_quote(text, quote).is_some() {
                open = None;
            }
            continue;
        }
        out.push_str(line);
        let text = line.trim_start_matches(' ');
        let mut indent = line.len() - text.len();
        if text.starts_with("- ") {
            indent += 2;
        }
        if let Some((quote, after)) = quoted_value_start(line.trim_end())
            && closing_quote(after, quote).is_none()
        {
            open = Some((quote, indent));
        }
    }
    changed.then_some(out)
}

/// For `key: "text…`, `- 'text…` or `- key: "…`: the quote and the text after it.
fn quoted_value_start(line: &str) -> Option<(char, &str)> {
    let mut rest = line.trim_start();
    if let Some(item) = rest.strip_prefix("- ") {
        rest = item.trim_start();
    }
    if !rest.starts_with(['"', '\'']) {
        let colon = rest.find(": ")?;
        let key = &rest[..colon];
        if key.is_empty() || key.contains(['"', '\'', '#', '{', '[']) {
            return None;
        }
        rest = rest[colon + 1..].trim_start();
    }
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    Some((quote, &rest[1..]))
}

/// The byte index of the quote that closes a scalar opened with `quote` in `text`.
fn closing_quote(text: &str, quote: char) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if quote == '"' && c == '\\' {
            chars.next();
        } else if c == quote {
            if quote == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                continue;
            }
            return Some(i);
        }
    }
    None
}

/// The error's own message on one line, without saphyr's `at line X, column Y` (the
/// caller reports the file's position instead).
pub fn yaml_message(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::MessageFormatter;
    let text = serde_saphyr::UserMessageFormatter
        .format_message(e.without_snippet())
        .into_owned();
    let one_line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if one_line.is_empty() {
        "invalid YAML".to_string()
    } else {
        format!("invalid YAML: {one_line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_yaml_and_body_with_line_numbers() {
        let fm = split("---\nname: a\nx: 1\n---\n\nBody\n").unwrap();
        assert_eq!(fm.yaml, "name: a\nx: 1\n");
        assert_eq!(fm.yaml_line, 2);
        assert_eq!(fm.body, "\nBody\n");
        assert_eq!(fm.body_line, 5);
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let fm = split("\u{feff}\u{feff}---\r\nmeta:\r\n  name: w\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(fm.yaml, "meta:\n  name: w\n");
        assert_eq!(fm.body.trim(), "Body");
        assert!(!fm.body.starts_with(BOM));
    }

    #[test]
    fn trailing_spaces_on_delimiters_are_allowed() {
        let fm = split("--- \nname: a\n---  \nB\n").unwrap();
        assert_eq!(fm.yaml, "name: a\n");
        assert_eq!(fm.body, "B\n");
    }

    #[test]
    fn later_delimiters_stay_in_the_body() {
        let fm = split("---\nname: a\n---\nB\n---\nC\n").unwrap();
        assert_eq!(fm.body, "B\n---\nC\n");
    }

    #[test]
    fn closing_delimiter_at_end_of_file_without_newline() {
        let fm = split("---\nname: a\n---").unwrap();
        assert_eq!(fm.yaml, "name: a\n");
        assert_eq!(fm.body, "");
    }

    #[test]
    fn empty_block_is_an_empty_frontmatter() {
        let fm = split("---\n---\nBody\n").unwrap();
        assert_eq!(fm.yaml, "");
        assert_eq!(fm.body, "Body\n");
    }

    #[test]
    fn no_frontmatter_is_an_error() {
        assert_eq!(split("# Heading\n"), Err(FrontmatterError::Missing));
        assert_eq!(split(""), Err(FrontmatterError::Missing));
        assert_eq!(
            split("\n---\nname: a\n---\n"),
            Err(FrontmatterError::Missing)
        );
        assert!(
            split("# x")
                .unwrap_err()
                .to_string()
                .contains("no YAML frontmatter")
        );
    }

    #[test]
    fn missing_closing_delimiter_reports_the_opening_line() {
        let err = split("---\nname: a\nbody without end\n").unwrap_err();
        assert_eq!(err, FrontmatterError::Unclosed { line: 1 });
        assert!(err.to_string().contains("line 1"));
        assert_eq!(split("---"), Err(FrontmatterError::Unclosed { line: 1 }));
        assert_eq!(split("---\n"), Err(FrontmatterError::Unclosed { line: 1 }));
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(s in any::<String>()) {
            let _ = split(&s);
        }

        #[test]
        fn never_panics_on_delimiter_heavy_text(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("---".to_string()),
                    Just("\n".to_string()),
                    Just("\r\n".to_string()),
                    Just("\u{feff}".to_string()),
                    Just(" ".to_string()),
                    "[a-zé:\\- ]{0,6}",
                ],
                0..24,
            )
        ) {
            let s: String = parts.concat();
            if let Ok(fm) = split(&s) {
                prop_assert!(s.ends_with(fm.body));
                prop_assert!(fm.body_line >= 3);
            }
        }
    }
}
