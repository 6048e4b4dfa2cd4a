//! Reading a `bash` command string for approval patterns and grants.
//!
//! Owns: splitting a command into its simple commands (`a && b`, `a || b`, `a | b`,
//! `a; b`, `a & b`, one per line), quote-aware, and telling whether the command is
//! *opaque*: it runs something a pattern cannot see (`$(…)`, backticks, `<(…)`/`>(…)`)
//! or writes a file through a redirection (`> file`, `>> file`; `2>&1` and `>/dev/null`
//! are fine). Also the command prefix an "always allow" prompt offers. Does not own:
//! which patterns match (`policy`) — this is a best-effort reading of `sh` syntax whose
//! only job is to keep an `allow` pattern from matching more than it says.

/// A command string as approval rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandShape {
    /// The simple commands, trimmed, empty ones dropped, in order.
    pub segments: Vec<String>,
    /// Runs a substitution or writes through a redirection: no `allow` pattern and no
    /// command-prefix grant applies to it.
    pub opaque: bool,
}

impl CommandShape {
    /// Reads `command`. Never fails: unbalanced quotes run to the end of the string.
    pub fn parse(command: &str) -> Self {
        let mut scan = Scan::default();
        let chars: Vec<char> = command.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            i = scan.step(&chars, i);
        }
        scan.split();
        Self {
            segments: scan.segments,
            opaque: scan.opaque,
        }
    }
}

#[derive(Default)]
struct Scan {
    segments: Vec<String>,
    current: String,
    opaque: bool,
}

impl Scan {
    fn split(&mut self) {
        let segment = self.current.trim();
        if !segment.is_empty() {
            self.segments.push(segment.to_string());
        }
        self.current.clear();
    }

    /// Consumes the token at `i`; returns the index after it.
    fn step(&mut self, chars: &[char], i: usize) -> usize {
        let at = |k: usize| chars.get(k).copied();
        let c = chars[i];
        match c {
            '\\' => {
                self.current.push(c);
                if let Some(next) = at(i + 1) {
                    self.current.push(next);
                }
                i + 2
            }
            '\'' => self.quoted(chars, i, '\''),
            '"' => self.quoted(chars, i, '"'),
            '`' => {
                self.opaque = true;
                self.current.push(c);
                i + 1
            }
            '$' if at(i + 1) == Some('(') => {
                self.opaque = true;
                self.current.push(c);
                i + 1
            }
            '<' | '>' if at(i + 1) == Some('(') => {
                self.opaque = true;
                self.current.push(c);
                i + 1
            }
            ';' | '\n' => {
                self.split();
                i + 1
            }
            '&' if at(i + 1) == Some('&') => {
                self.split();
                i + 2
            }
            '&' if at(i + 1) == Some('>') => {
                self.current.push(c);
                self.redirect(chars, i + 1)
            }
            '&' => {
                self.split();
                i + 1
            }
            '|' if matches!(at(i + 1), Some('|' | '&')) => {
                self.split();
                i + 2
            }
            '|' => {
                self.split();
                i + 1
            }
            '>' => self.redirect(chars, i),
            _ => {
                self.current.push(c);
                i + 1
            }
        }
    }

    /// A quoted string from `i` (the opening quote) to its closing quote, kept verbatim.
    /// Inside double quotes a substitution still runs, so it makes the command opaque.
    fn quoted(&mut self, chars: &[char], i: usize, quote: char) -> usize {
        self.current.push(quote);
        let mut k = i + 1;
        while k < chars.len() {
            let c = chars[k];
            self.current.push(c);
            if quote == '"' {
                if c == '\\' {
                    if let Some(next) = chars.get(k + 1) {
                        self.current.push(*next);
                    }
                    k += 2;
                    continue;
                }
                if c == '`' || (c == '$' && chars.get(k + 1) == Some(&'(')) {
                    self.opaque = true;
                }
            }
            k += 1;
            if c == quote {
                break;
            }
        }
        k
    }

    /// An output redirection at `i` (`>`, `>>`, `>|`, `>&N`): kept in the segment; a
    /// target other than a descriptor or `/dev/null` makes the command opaque.
    fn redirect(&mut self, chars: &[char], i: usize) -> usize {
        self.current.push('>');
        let mut k = i + 1;
        if let Some(c @ ('>' | '|')) = chars.get(k).copied() {
            self.current.push(c);
            k += 1;
        }
        if chars.get(k) == Some(&'&') {
            // `>&2`, `2>&1`, `>&-`: a descriptor, not a file.
            self.current.push('&');
            k += 1;
            while let Some(c) = chars.get(k).filter(|c| c.is_ascii_digit() || **c == '-') {
                self.current.push(*c);
                k += 1;
            }
            return k;
        }
        while let Some(c) = chars.get(k).filter(|c| **c == ' ' || **c == '\t') {
            self.current.push(*c);
            k += 1;
        }
        let start = k;
        while let Some(c) = chars
            .get(k)
            .filter(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|' | '<' | '>'))
        {
            self.current.push(*c);
            k += 1;
        }
        let target: String = chars[start..k].iter().collect();
        if target != "/dev/null" {
            self.opaque = true;
        }
        k
    }
}

/// The prefix an "always allow" answer offers for `command`: the first simple
/// command's program, plus its first argument when that reads as a subcommand
/// (`cargo test --lib` → `cargo test`, `ls -la` → `ls`, `git status` → `git status`).
/// `None` for an opaque or empty command: nothing could be granted safely.
pub fn suggest_prefix(command: &str) -> Option<String> {
    let shape = CommandShape::parse(command);
    if shape.opaque {
        return None;
    }
    let first = shape.segments.first()?;
    let mut words = first.split_whitespace();
    let program = words.next()?;
    let subcommand = words.next().filter(|w| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
    });
    Some(match subcommand {
        Some(sub) => format!("{program} {sub}"),
        None => program.to_string(),
    })
}

/// Whether a command-prefix grant for `prefix` covers `command`: the command is not
/// opaque and every one of its simple commands is `prefix` or starts with `prefix`
/// followed by a space (`cargo test` covers `cargo test --lib`, not `cargo testify`
/// and not `cargo test && rm -rf x`).
pub fn prefix_covers(prefix: &str, command: &str) -> bool {
    let prefix = prefix.trim();
    if prefix.is_empty() {
        return false;
    }
    let shape = CommandShape::parse(command);
    !shape.opaque
        && !shape.segments.is_empty()
        && shape.segments.iter().all(|s| {
            s == prefix
                || s.strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with([' ', '\t']))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(c: &str) -> Vec<String> {
        CommandShape::parse(c).segments
    }

    #[test]
    fn splits_chains_pipes_and_lines() {
        assert_eq!(segments("cargo test"), ["cargo test"]);
        assert_eq!(
            segments("a && b || c | d; e & f\ng |& h"),
            ["a", "b", "c", "d", "e", "f", "g", "h"]
        );
        assert_eq!(segments("  ;; "), Vec::<String>::new());
    }

    #[test]
    fn quotes_and_escapes_do_not_split() {
        assert_eq!(
            segments("echo 'a; b' \"c && d\""),
            ["echo 'a; b' \"c && d\""]
        );
        assert_eq!(segments("echo a\\;b"), ["echo a\\;b"]);
        assert_eq!(segments("echo 'unclosed; x"), ["echo 'unclosed; x"]);
        assert!(!CommandShape::parse("echo '$(not run)'").opaque);
    }

    #[test]
    fn substitutions_and_file_redirections_are_opaque() {
        for c in [
            "echo $(rm -rf x)",
            "echo `id`",
            "echo \"$(id)\"",
            "diff <(ls a) <(ls b)",
            "echo x > ~/.bashrc",
            "echo x >> log",
            "echo x>file",
            "cargo test &> out.txt",
            "echo x >| f",
        ] {
            assert!(CommandShape::parse(c).opaque, "{c}");
        }
        for c in [
            "cargo test 2>&1",
            "cargo test >/dev/null",
            "cargo test > /dev/null 2>&1",
            "echo x >&2",
            "cat < input.txt",
            "echo $HOME",
        ] {
            assert!(!CommandShape::parse(c).opaque, "{c}");
        }
        assert_eq!(
            segments("cargo test 2>&1 | tail"),
            ["cargo test 2>&1", "tail"]
        );
    }

    #[test]
    fn prefixes_offered_and_covered() {
        assert_eq!(
            suggest_prefix("cargo test --lib x").as_deref(),
            Some("cargo test")
        );
        assert_eq!(suggest_prefix("ls -la").as_deref(), Some("ls"));
        assert_eq!(
            suggest_prefix("git status && git diff").as_deref(),
            Some("git status")
        );
        assert_eq!(suggest_prefix("./run.sh /tmp").as_deref(), Some("./run.sh"));
        assert_eq!(suggest_prefix("echo $(id)"), None);
        assert_eq!(suggest_prefix("  "), None);

        assert!(prefix_covers("cargo test", "cargo test"));
        assert!(prefix_covers("cargo test", "cargo test --lib 2>&1"));
        assert!(prefix_covers("cargo test", "cargo test a && cargo test b"));
        assert!(!prefix_covers("cargo test", "cargo testify"));
        assert!(!prefix_covers("cargo test", "cargo test && rm -rf x"));
        assert!(!prefix_covers("cargo test", "cargo test $(rm -rf x)"));
        assert!(!prefix_covers("cargo test", "cargo test > ~/.profile"));
        assert!(!prefix_covers("", "anything"));
        assert!(!prefix_covers("ls", ""));
    }
}
