//! Command patterns (`bash(cargo test*)`) and "always" command prefixes, matched on a
//! [`Script`] (issue 22).
//!
//! Owns: what a command pattern covers — an `allow` pattern covers a script only
//! through its plain reading ([`Script::coverable`]), one simple command at a time, at
//! a word boundary (`ls*` covers `ls` and `ls -la`, never `lsblk`); a `deny`/`ask`
//! pattern restricts a script when it matches any command the script runs, as written
//! (`rm*` restricts `rmdir` too), or fails closed ([`Script::restricted_by`]) — and
//! the prefix an "always" answer offers ([`suggest_prefix`]) and covers
//! ([`prefix_covers`]). Does not own: reading the script (`command`), the wrapper
//! table (`wrappers`), which rule wins (`policy`).

use globset::GlobMatcher;

use super::command::{Script, literal_word};
use super::wrappers::runs_other_code;

/// A compiled command pattern: the glob as written, and (when it ends in a `*` right
/// after a non-blank, like `cargo test*`) the word-bounded form used to allow: the
/// stem alone or the stem, a space and anything (`cargo test`, `cargo test --lib`, not
/// `cargo testify`).
#[derive(Debug, Clone)]
pub struct CommandPattern {
    source: String,
    raw: GlobMatcher,
    bounded: Option<(GlobMatcher, GlobMatcher)>,
}

impl CommandPattern {
    /// Compiles `pattern` with `compile` (the glob rules of `approvals:` keys).
    ///
    /// Errors: the message of `compile` for the pattern or its bounded forms.
    pub fn new<E>(
        pattern: &str,
        compile: impl Fn(&str) -> Result<GlobMatcher, E>,
    ) -> Result<Self, E> {
        let raw = compile(pattern)?;
        let bounded = match pattern.strip_suffix('*') {
            Some(stem) if stem.ends_with(|c: char| !c.is_whitespace() && c != '*') => {
                Some((compile(stem)?, compile(&format!("{stem} *"))?))
            }
            _ => None,
        };
        Ok(Self {
            source: pattern.to_string(),
            raw,
            bounded,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether this pattern, as `deny` or `ask`, applies to `script` (see
    /// [`Script::restricted_by`]).
    pub fn restricts(&self, script: &Script) -> bool {
        script.restricted_by(&|text| self.raw.is_match(text), literal_word(&self.source))
    }

    /// Whether this pattern, as `allow`, covers one plain simple command `words` (at a
    /// word boundary; see the type doc).
    pub fn allows(&self, words: &[String]) -> bool {
        let text = words.join(" ");
        match &self.bounded {
            Some((stem, spaced)) => stem.is_match(&text) || spaced.is_match(&text),
            None => self.raw.is_match(&text),
        }
    }
}

/// A character a granted prefix may hold: no glob, quote or shell character, so the
/// rule `bash(PREFIX*)` reads exactly as the grant matches.
fn prefix_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '+' | '@' | '%' | '=')
}

/// The prefix an "always" answer offers for `command`: for a script of exactly one
/// plain simple command that runs no wrapper, its program, plus its first argument
/// when that reads as a subcommand (`cargo test --lib` → `cargo test`, `ls -la` →
/// `ls`, `git status` → `git status`). The rule it applies is `bash(PREFIX*)`, word
/// bounded. `None` otherwise — chains, pipes, anything without a plain reading,
/// wrappers (`sh`, `env`, `python3` …), a program with unusual characters: such a
/// command can only be allowed once.
pub fn suggest_prefix(command: &str) -> Option<String> {
    let script = Script::parse(command);
    let [words] = script.coverable()? else {
        return None;
    };
    let program = words.first()?;
    if !program.chars().all(prefix_char) {
        return None;
    }
    let subcommand = words.get(1).filter(|w| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
    });
    Some(match subcommand {
        Some(sub) => format!("{program} {sub}"),
        None => program.clone(),
    })
}

/// Whether `prefix` may be granted at all: not empty, made of [`prefix_char`]s and
/// single spaces, and its program runs no other code (never `sh`, `env`, `xargs`,
/// `python3` … — [`super::wrappers::WRAPPERS`]).
pub fn grantable(prefix: &str) -> bool {
    let words: Vec<String> = prefix.split(' ').map(str::to_string).collect();
    !prefix.is_empty()
        && words
            .iter()
            .all(|w| !w.is_empty() && w.chars().all(prefix_char))
        && !runs_other_code(&words[..1])
}

/// Whether a grant of `prefix` covers `command`: the prefix is [`grantable`], the
/// command has a plain reading that runs no wrapper, and every one of its simple
/// commands is `prefix` or `prefix` followed by a space and more (`cargo test` covers
/// `cargo test --lib` and `cargo test a && cargo test b`, not `cargo testify`, `cargo
/// test # x⏎rm -rf ~` or `cargo test && rm -rf x`).
pub fn prefix_covers(prefix: &str, command: &str) -> bool {
    if !grantable(prefix) {
        return false;
    }
    let script = Script::parse(command);
    let Some(commands) = script.coverable() else {
        return false;
    };
    commands.iter().all(|words| {
        let text = words.join(" ");
        text == prefix
            || text
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(' '))
    })
}
