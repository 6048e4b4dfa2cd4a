//! arbor's own `git` runs nothing a repository, a session or a job configured (issue
//! 34 item 1).
//!
//! arbor runs `git` outside the sandbox (checkpoints before and after every turn, a
//! worktree child's end-of-turn commit, merge, rewind, a worker's saves), so anything
//! git would *execute* on the repository's say-so runs as the user, with the network
//! and every key file. A sandboxed command can write `.git/config`, a repository can
//! arrive with one, and `include.path` can pull in any file. So every `git` arbor runs
//! gets ([`apply`]):
//!
//! - an environment cleared of every `GIT_*` variable the caller had (`GIT_DIR`,
//!   `GIT_CONFIG_*`, `GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`, …), then
//!   `GIT_CONFIG_NOSYSTEM=1` and `GIT_CONFIG_GLOBAL=/dev/null` (the system and the
//!   user's global config are not read: arbor's plumbing needs none of it), no pager,
//!   no terminal prompt;
//! - command-line config (`GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` /
//!   `GIT_CONFIG_VALUE_n`, which git ranks above every config file, and which needs no
//!   quoting of odd subsection names) that switches off each way a config file makes
//!   git run a program: [`FIXED`] (`core.fsmonitor`, hooks, signing, auto-gc) and, for every driver the repository's config names ([`drivers`],
//!   read with `git config --list`, which runs nothing), an empty `clean`, `smudge`,
//!   `process`, `textconv`, `command` and `driver` and `required = false`. git skips a
//!   filter whose commands are empty, so the content passes through as stored
//!   (checked in `tests`: a `filter=evil` attribute with `required = true` then adds
//!   the file as it is). An empty merge driver is not skipped but fails to start, so
//!   a file whose attributes name a configured merge driver merges as a conflict
//!   (fail closed: arbor merges never run it). `diff.external` and a diff driver's
//!   `command`/`textconv` cannot be switched off by config (an empty one fails the
//!   same way), so `git::Git` gives every `git diff` `--no-ext-diff --no-textconv`.
//!
//! Git's list of config keys that name a program, as used by the commands arbor runs
//! (`add`, `write-tree`, `commit`, `commit-tree`, `merge-tree`, `diff`, `apply`,
//! `worktree`, `update-ref`, `cat-file`, `ls-tree`, `rev-parse`): `core.fsmonitor`
//! (git-config(1)), hooks (githooks(5), incl. `reference-transaction` and
//! `post-checkout`), `filter.<driver>.{clean,smudge,process}` and
//! `diff.<driver>.{textconv,command}` / `diff.external` and `merge.<driver>.driver`
//! (gitattributes(5)), `gpg.program` (signing, off), `gc.auto` (`git gc --auto` after a
//! commit). Network keys (`core.sshCommand`, `credential.*`, `url.*`) matter only to
//! fetch and push, which arbor never runs.
//!
//! Owns: that environment. Does not own: which repository or work tree a command
//! runs against (`git::Git`), or keeping a sandboxed command from changing the
//! repository (`sandbox`).

use std::path::Path;
use std::process::{Command, Stdio};

/// Config every arbor `git` runs with: nothing configured may run a program.
pub const FIXED: [(&str, &str); 8] = [
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("core.autocrlf", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.untrackedCache", "false"),
];

/// The git commands arbor runs that never read the work tree or convert content, so
/// no filter, textconv or merge driver can run and the repository's drivers need not
/// be listed first (one `git` process fewer): refs and objects only. Not
/// `write-tree`: it re-hashes racily clean index entries from the work tree, through
/// the clean filter (`git_containment` caught it).
pub const NO_DRIVERS: [&str; 8] = [
    "rev-parse",
    "update-ref",
    "cat-file",
    "ls-tree",
    "commit-tree",
    "for-each-ref",
    "symbolic-ref",
    "diff-tree",
];

/// The per-driver keys that name a program, and what each is set to.
const DRIVER_KEYS: [(&str, &str, &str); 7] = [
    ("filter", "clean", ""),
    ("filter", "smudge", ""),
    ("filter", "process", ""),
    ("filter", "required", "false"),
    ("diff", "textconv", ""),
    ("diff", "command", ""),
    ("merge", "driver", ""),
];

/// Clears `cmd`'s inherited `GIT_*` environment and gives it the hermetic one (see
/// the module doc): no system or global config, [`FIXED`], and the overrides of
/// every driver `drivers` names (as `(section, name)`, e.g. `("filter", "lfs")`).
pub fn apply(cmd: &mut Command, drivers: &[(String, String)]) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0");
    let mut pairs: Vec<(String, String)> = FIXED
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (section, name) in drivers {
        for (s, key, value) in DRIVER_KEYS {
            if s == section {
                pairs.push((format!("{section}.{name}.{key}"), value.to_string()));
            }
        }
    }
    cmd.env("GIT_CONFIG_COUNT", pairs.len().to_string());
    for (i, (key, value)) in pairs.into_iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
}

/// The `filter`, `diff` and `merge` drivers the repository's config (with what it
/// includes; not the system's or the user's global config) defines, as `(section,
/// name)`: `git config --null --name-only --list`, run hermetically from `dir` with
/// `extra` (`--git-dir`/`--work-tree` arguments) and `common` as `GIT_COMMON_DIR`.
/// `git config` reads files and runs nothing. A listing that fails (not a repository
/// yet) gives none.
pub fn drivers(
    dir: &Path,
    extra: &[std::ffi::OsString],
    common: Option<&Path>,
) -> Vec<(String, String)> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(extra);
    cmd.args(["config", "--null", "--name-only", "--list"]);
    apply(&mut cmd, &[]);
    if let Some(common) = common {
        cmd.env("GIT_COMMON_DIR", common);
    }
    cmd.stdin(Stdio::null()).stderr(Stdio::null());
    let Ok(out) = cmd.output() else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found: Vec<(String, String)> = text
        .split('\0')
        .filter_map(driver_of)
        .map(|(s, n)| (s.to_string(), n.to_string()))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// `("filter", "lfs")` for a key `filter.lfs.clean` (sections are case-insensitive
/// and listed lowercase; the subsection keeps its case and may hold dots).
fn driver_of(key: &str) -> Option<(&str, &str)> {
    let key = key.trim_end_matches('\n');
    let (section, rest) = key.split_once('.')?;
    let (name, _var) = rest.rsplit_once('.')?;
    ["filter", "diff", "merge"]
        .into_iter()
        .find(|s| s.eq_ignore_ascii_case(section))
        .map(|s| (s, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names_keep_case_and_dots() {
        assert_eq!(driver_of("filter.lfs.clean"), Some(("filter", "lfs")));
        assert_eq!(
            driver_of("Diff.My.Tool.textconv"),
            Some(("diff", "My.Tool"))
        );
        assert_eq!(driver_of("merge.x.driver"), Some(("merge", "x")));
        assert_eq!(driver_of("core.fsmonitor"), None);
        assert_eq!(driver_of("diff.external"), None);
    }

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
    }

    /// A repository whose config runs a marker-writing program through every key the
    /// module names: arbor's hermetic `git add` and `status` run none of them, and a
    /// `required` filter's file is added as it is.
    #[test]
    fn configured_programs_do_not_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "--quiet"]);
        let marker = dir.join("PWNED");
        let run = format!("sh -c 'touch {}'", marker.display());
        for (key, value) in [
            ("core.fsmonitor", run.clone()),
            ("filter.evil.clean", run.clone()),
            ("filter.evil.smudge", run.clone()),
            ("filter.evil.process", run.clone()),
            ("filter.evil.required", "true".into()),
            ("diff.evil.textconv", run.clone()),
            ("merge.evil.driver", run.clone()),
        ] {
            git(dir, &["config", key, &value]);
        }
        std::fs::write(dir.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
        std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
        let drivers = drivers(dir, &[], None);
        assert!(drivers.contains(&("filter".into(), "evil".into())));
        for args in [
            &["add", "--all"][..],
            &["status", "--short"],
            &["diff", "HEAD"],
        ] {
            let mut cmd = Command::new("git");
            cmd.arg("-C").arg(dir).args(args);
            apply(&mut cmd, &drivers);
            let _ = cmd.output().unwrap();
        }
        assert!(!marker.exists(), "a configured program ran");
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(["show", ":a.txt"]);
        apply(&mut cmd, &drivers);
        assert_eq!(cmd.output().unwrap().stdout, b"hello\n");
    }
}
