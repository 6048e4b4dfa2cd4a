//! The programs that run *other* code: shells, `env`/`nohup`-style prefixes, `eval`,
//! interpreters, `find -exec` (issue 22). One table, [`WRAPPERS`].
//!
//! Owns: which program is a wrapper and what kind ([`Wrapper`]). Does not own: what the
//! approval rules do with them (`command` reads through them for `deny`/`ask`
//! patterns; `policy` never lets an `allow` pattern or an "always" grant cover them).
//!
//! Why: an `allow` pattern or an "always" answer for `env`, `sh -c`, `xargs` or
//! `python3` would allow *everything* run through them, and a `deny` pattern for `rm`
//! must still see the `rm` in `nohup rm x`, `sh -c 'rm x'` or `find . -exec rm {} +`.

/// How a wrapper runs other code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapper {
    /// A shell: `-c STRING` runs STRING as a script (read recursively); without `-c`
    /// it runs a file or its standard input, which no rule can read.
    Shell,
    /// Runs the rest of its words as a command, after options it takes
    /// (`env A=1 rm x`, `nohup rm x`, `timeout 5 rm x`, `xargs rm`): every suffix of
    /// its arguments is read as a command.
    Prefix,
    /// Joins its arguments into a script and runs it (`eval`, `trap`): read recursively.
    Eval,
    /// Runs code in a language no rule reads, or a file (`python3`, `node`, `source`,
    /// `alias`): opaque.
    Interpreter,
    /// `find`: the words after `-exec`/`-execdir`/`-ok`/`-okdir` up to `;` or `+` are a
    /// command. Only a wrapper when one of those actions is present.
    Find,
}

/// Every wrapper program by name (the basename of the command word), one table.
pub const WRAPPERS: &[(&str, Wrapper)] = &[
    ("sh", Wrapper::Shell),
    ("bash", Wrapper::Shell),
    ("dash", Wrapper::Shell),
    ("zsh", Wrapper::Shell),
    ("ksh", Wrapper::Shell),
    ("mksh", Wrapper::Shell),
    ("ash", Wrapper::Shell),
    ("fish", Wrapper::Shell),
    ("csh", Wrapper::Shell),
    ("tcsh", Wrapper::Shell),
    ("env", Wrapper::Prefix),
    ("exec", Wrapper::Prefix),
    ("command", Wrapper::Prefix),
    ("builtin", Wrapper::Prefix),
    ("nohup", Wrapper::Prefix),
    ("timeout", Wrapper::Prefix),
    ("nice", Wrapper::Prefix),
    ("ionice", Wrapper::Prefix),
    ("time", Wrapper::Prefix),
    ("sudo", Wrapper::Prefix),
    ("doas", Wrapper::Prefix),
    ("su", Wrapper::Prefix),
    ("xargs", Wrapper::Prefix),
    ("parallel", Wrapper::Prefix),
    ("stdbuf", Wrapper::Prefix),
    ("setsid", Wrapper::Prefix),
    ("chroot", Wrapper::Prefix),
    ("unshare", Wrapper::Prefix),
    ("nsenter", Wrapper::Prefix),
    ("taskset", Wrapper::Prefix),
    ("chrt", Wrapper::Prefix),
    ("flock", Wrapper::Prefix),
    ("strace", Wrapper::Prefix),
    ("ltrace", Wrapper::Prefix),
    ("busybox", Wrapper::Prefix),
    ("script", Wrapper::Prefix),
    ("ssh", Wrapper::Prefix),
    ("watch", Wrapper::Eval),
    ("eval", Wrapper::Eval),
    ("trap", Wrapper::Eval),
    ("source", Wrapper::Interpreter),
    (".", Wrapper::Interpreter),
    ("alias", Wrapper::Interpreter),
    ("python", Wrapper::Interpreter),
    ("node", Wrapper::Interpreter),
    ("nodejs", Wrapper::Interpreter),
    ("deno", Wrapper::Interpreter),
    ("bun", Wrapper::Interpreter),
    ("perl", Wrapper::Interpreter),
    ("ruby", Wrapper::Interpreter),
    ("irb", Wrapper::Interpreter),
    ("php", Wrapper::Interpreter),
    ("lua", Wrapper::Interpreter),
    ("luajit", Wrapper::Interpreter),
    ("tclsh", Wrapper::Interpreter),
    ("wish", Wrapper::Interpreter),
    ("awk", Wrapper::Interpreter),
    ("gawk", Wrapper::Interpreter),
    ("mawk", Wrapper::Interpreter),
    ("nawk", Wrapper::Interpreter),
    ("expect", Wrapper::Interpreter),
    ("osascript", Wrapper::Interpreter),
    ("find", Wrapper::Find),
];

/// Name prefixes that are interpreters with any version suffix (`python3`,
/// `python3.12`, `perl5.36`, `ruby3.2`, `php8`, `lua5.4`, `node18`).
const VERSIONED: &[&str] = &["python", "perl", "ruby", "php", "lua", "node", "pypy"];

/// The wrapper kind of `program` (a command word; its basename is looked up), if any.
/// `find` is returned as [`Wrapper::Find`] whatever its arguments (see
/// [`find_payloads`]).
pub fn wrapper_of(program: &str) -> Option<Wrapper> {
    let name = basename(program);
    if let Some((_, kind)) = WRAPPERS.iter().find(|(n, _)| *n == name) {
        return Some(*kind);
    }
    VERSIONED
        .iter()
        .any(|stem| {
            name.strip_prefix(stem).is_some_and(|rest| {
                !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '.')
            })
        })
        .then_some(Wrapper::Interpreter)
}

/// Whether the simple command `words` runs other code through a wrapper (and so no
/// `allow` pattern or grant may cover it): its program is in [`WRAPPERS`], except
/// `find` without an `-exec`-style action.
pub fn runs_other_code(words: &[String]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    match wrapper_of(program) {
        None => false,
        Some(Wrapper::Find) => !find_payloads(words).is_empty(),
        Some(_) => true,
    }
}

/// The last path component of a command word (`/bin/rm` → `rm`).
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The commands a `find` runs: the words after each `-exec`, `-execdir`, `-ok` or
/// `-okdir` up to `;` or `+` (or the end).
pub fn find_payloads(words: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && !matches!(words[end].as_str(), ";" | "+") {
                end += 1;
            }
            out.push(words[start..end].to_vec());
            i = end;
        }
        i += 1;
    }
    out
}

/// The script arguments of a shell's `-c`: every word after the first option word
/// holding `c` (`-c`, `-lc`, `-ec`) that is not itself an option. `None` when there
/// is no `-c` (the shell runs a file or its standard input).
pub fn shell_payload_indices(words: &[String]) -> Option<Vec<usize>> {
    let flag = words.iter().skip(1).position(|w| {
        w.starts_with('-') && !w.starts_with("--") && w.chars().skip(1).any(|c| c == 'c')
    })? + 1;
    Some(
        (flag + 1..words.len())
            .filter(|&i| !words[i].starts_with('-'))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn wrappers_are_found_by_basename_and_version() {
        assert_eq!(wrapper_of("/usr/bin/env"), Some(Wrapper::Prefix));
        assert_eq!(wrapper_of("python3.12"), Some(Wrapper::Interpreter));
        assert_eq!(wrapper_of("python3"), Some(Wrapper::Interpreter));
        assert_eq!(wrapper_of("perl"), Some(Wrapper::Interpreter));
        assert_eq!(wrapper_of("bash"), Some(Wrapper::Shell));
        assert_eq!(wrapper_of("pythonic"), None);
        assert_eq!(wrapper_of("cargo"), None);
        assert!(runs_other_code(&words("find . -exec rm {} ;")));
        assert!(!runs_other_code(&words("find . -name x")));
        assert!(!runs_other_code(&words("ls -la")));
    }

    #[test]
    fn payloads_of_find_and_sh() {
        assert_eq!(
            find_payloads(&words("find . -exec rm {} ; -execdir ls +")),
            [words("rm {}"), words("ls")]
        );
        assert_eq!(
            shell_payload_indices(&words("bash -lc x y")),
            Some(vec![2, 3])
        );
        assert_eq!(shell_payload_indices(&words("sh script.sh")), None);
    }
}
