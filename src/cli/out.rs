//! What the headless commands print, in one place.
//!
//! Owns: writing to stdout ([`outln!`](crate::outln), [`out!`](crate::out)) so that a
//! reader that went away (`arbor session list | head -1` closes the pipe) ends the
//! command quietly instead of in a panic; the `arbor: …` lines on stderr with
//! credentials scrubbed ([`error`], [`warning`]); and what a closed stdout means for
//! the exit code ([`is_broken_pipe`], [`EXIT_BROKEN_PIPE`]). Does not own: the TUI (it
//! owns the terminal) or what each command prints.
//!
//! A write to a closed stdout fails with `io::ErrorKind::BrokenPipe`; commands pass it
//! up with `?` and `main` ends the process with [`EXIT_BROKEN_PIPE`] and no message.
//! (Rust ignores `SIGPIPE`, so without this `println!` panics with exit code 101.)

use std::fmt;
use std::io::{self, Write};

/// The exit code after stdout was closed by its reader: 128 + `SIGPIPE` (13), what a
/// shell reports for a process that `SIGPIPE` ended.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Writes `args` to stdout and flushes. Errors: the write failed; a reader that closed
/// the pipe gives `io::ErrorKind::BrokenPipe` (see [`is_broken_pipe`]).
pub fn write_stdout(args: fmt::Arguments<'_>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.flush()
}

/// `print!` for the headless commands: an `io::Result<()>` to pass on with `?`.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` for the headless commands: an `io::Result<()>` to pass on with `?`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::out::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Whether `error` (or any error in its chain) is a write to a closed pipe.
pub fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Prints `arbor: <text>` on stderr, registered secrets and credential echoes scrubbed
/// (`session::redact::scrub`). A stderr that cannot be written is ignored: there is no
/// one left to tell.
pub fn error(text: impl fmt::Display) {
    stderr_line("arbor: ", &text.to_string());
}

/// Prints `arbor: warning: <text>` on stderr, scrubbed as [`error`].
pub fn warning(text: impl fmt::Display) {
    stderr_line("arbor: warning: ", &text.to_string());
}

/// Prints `text` as it is (a multi-line explanation) on stderr, scrubbed as [`error`].
pub fn plain_error(text: impl fmt::Display) {
    stderr_line("", &text.to_string());
}

/// `n` and `noun`, plural unless `n` is 1: `plural(1, "agent")` is `1 agent`,
/// `plural(2, "agent")` is `2 agents` (nouns ending in `s`, `x`, `ch` or `sh` add `es`;
/// a consonant then `y` becomes `ies`). For every count the CLI prints.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    let consonant_y = noun.ends_with('y')
        && !noun.ends_with("ay")
        && !noun.ends_with("ey")
        && !noun.ends_with("oy");
    if consonant_y {
        return format!("{n} {}ies", &noun[..noun.len() - 1]);
    }
    let es = ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end));
    format!("{n} {noun}{}", if es { "es" } else { "s" })
}

fn stderr_line(prefix: &str, text: &str) {
    let text = crate::session::redact::scrub(text);
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{prefix}{text}").and_then(|()| err.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_plural_unless_one() {
        assert_eq!(plural(1, "agent"), "1 agent");
        assert_eq!(plural(0, "agent"), "0 agents");
        assert_eq!(plural(2, "match"), "2 matches");
        assert_eq!(plural(3, "entry"), "3 entries");
        assert_eq!(plural(2, "key"), "2 keys");
    }

    #[test]
    fn a_broken_pipe_is_found_anywhere_in_the_chain() {
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&pipe));
        let wrapped = color_eyre::Report::new(pipe).wrap_err("printing the list");
        assert!(is_broken_pipe(wrapped.as_ref()));
        let other = io::Error::from(io::ErrorKind::StorageFull);
        assert!(!is_broken_pipe(&other));
    }
}
