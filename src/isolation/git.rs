//! Running the `git` CLI for isolation: a fixed identity and the hermetic environment
//! of [`super::hermetic`] (no system or global config, no `GIT_*` of the caller's, and
//! nothing a repository configures — fsmonitor, hooks, filters, textconv, merge
//! drivers, signing — ever runs).
//!
//! Owns: [`Git`] (a repository as seen from one directory, optionally with a private
//! index or a separate git dir) and its plumbing helpers — snapshots of a working
//! tree as a tree object ([`Git::snapshot`]), commit objects, refs, restoring paths
//! from a tree ([`Git::restore`]). Does not own: what the snapshots mean (worktrees,
//! checkpoints, merges: the sibling modules).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};

use super::{IsolationError, hermetic};

/// arbor's commit identity (issue 25: works in a repository with no user configured).
const NAME: &str = "arbor";
const EMAIL: &str = "arbor@localhost";

/// `git` run in `dir`, optionally with `--git-dir`/`--work-tree` (a private
/// repository kept with a session, or a worktree whose git directory arbor recorded:
/// its `.git` file is then not followed) and a private index file.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    git_dir: Option<PathBuf>,
    /// `GIT_COMMON_DIR` for a worktree's recorded git directory (its `commondir`
    /// file is then not followed either).
    common_dir: Option<PathBuf>,
    index: Option<PathBuf>,
    /// The drivers the repository's config names ([`hermetic::drivers`]), read once
    /// per `Git` (and its clones) at its first command.
    drivers: Arc<OnceLock<Vec<(String, String)>>>,
}

/// One entry of a tree: mode (`100644`, `100755`, `120000`) and object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `100644`, `100755`, `120000` (symlink).
    pub mode: String,
    /// The blob's id (hex).
    pub oid: String,
}

#[cfg(test)]
thread_local! {
    /// `git` processes [`Git::output`] started on this thread (a test hook).
    pub(crate) static SPAWNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Git {
    /// `git -C dir …`.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            git_dir: None,
            common_dir: None,
            index: None,
            drivers: Arc::default(),
        }
    }

    /// `git --git-dir=git_dir --work-tree=dir …` (a private repository of snapshots).
    pub fn private(git_dir: &Path, dir: &Path) -> Self {
        Self {
            git_dir: Some(git_dir.to_path_buf()),
            ..Self::at(dir)
        }
    }

    /// `git --git-dir=git_dir --work-tree=dir …` with `GIT_COMMON_DIR=common_dir`: a
    /// linked worktree addressed by the git directory arbor recorded for it, so
    /// neither the worktree's `.git` file nor its `commondir` file (both writable by
    /// the session working there) decides which repository arbor's git touches.
    pub fn linked(git_dir: &Path, common_dir: &Path, dir: &Path) -> Self {
        Self {
            git_dir: Some(git_dir.to_path_buf()),
            common_dir: Some(common_dir.to_path_buf()),
            ..Self::at(dir)
        }
    }

    /// The directory commands run in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same repository with `index` as its index file (`GIT_INDEX_FILE`): a
    /// private index, so the real one is untouched.
    pub fn with_index(&self, index: &Path) -> Self {
        Self {
            index: Some(index.to_path_buf()),
            ..self.clone()
        }
    }

    /// `--git-dir`/`--work-tree` when this `Git` names its repository.
    fn location(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        if let Some(git_dir) = &self.git_dir {
            out.push("--git-dir".into());
            out.push(git_dir.into());
            out.push("--work-tree".into());
            out.push(self.dir.clone().into());
        }
        out
    }

    fn command(&self, args: &[&str]) -> Command {
        let location = self.location();
        let no_drivers = Vec::new();
        let drivers = if args
            .first()
            .is_some_and(|a| hermetic::NO_DRIVERS.contains(a))
        {
            &no_drivers
        } else {
            self.drivers
                .get_or_init(|| hermetic::drivers(&self.dir, &location, self.common_dir.as_deref()))
        };
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir).args(&location);
        cmd.args(args.first());
        if args.first() == Some(&"diff") {
            // `diff.external` and a driver's `command` or `textconv` cannot be
            // switched off by config (an empty one is run, and fails): by flag.
            cmd.args(["--no-ext-diff", "--no-textconv"]);
        }
        cmd.args(args.iter().skip(1));
        hermetic::apply(&mut cmd, drivers);
        cmd.env("GIT_AUTHOR_NAME", NAME)
            .env("GIT_AUTHOR_EMAIL", EMAIL)
            .env("GIT_COMMITTER_NAME", NAME)
            .env("GIT_COMMITTER_EMAIL", EMAIL)
            .stdin(Stdio::null());
        if let Some(common) = &self.common_dir {
            cmd.env("GIT_COMMON_DIR", common);
        }
        if let Some(index) = &self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        cmd
    }

    /// Runs `git args`; its output whatever the exit status. `git worktree …` runs
    /// one at a time in this process: two `worktree add`s at once on one repository
    /// race in git itself (one fails reading the other's half-written
    /// `.git/worktrees/<name>/commondir`; seen 3 times in 40 parallel pairs with git
    /// 2.47), and parallel children and worker slots add worktrees at once.
    pub fn output(&self, args: &[&str]) -> Result<Output, IsolationError> {
        static WORKTREES: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = (args.first() == Some(&"worktree")).then(|| {
            WORKTREES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        #[cfg(test)]
        SPAWNS.with(|n| n.set(n.get() + 1));
        self.command(args)
            .output()
            .map_err(|source| IsolationError::Spawn { source })
    }

    /// Runs `git args`; stdout (trailing newline trimmed) on success, else
    /// [`IsolationError::Git`] with its stderr.
    pub fn run(&self, args: &[&str]) -> Result<String, IsolationError> {
        let out = self.output(args)?;
        if !out.status.success() {
            return Err(self.failed(args, &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .trim_end_matches('\n')
            .to_string())
    }

    /// The error of a `git args` run that ended with `out`.
    pub fn failed(&self, args: &[&str], out: &Output) -> IsolationError {
        IsolationError::Git {
            args: args.join(" "),
            dir: self.dir.clone(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
    }

    /// The commit `rev` names, or `None` (an unborn `HEAD`, a missing branch).
    pub fn commit_of(&self, rev: &str) -> Result<Option<String>, IsolationError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self.output(&["rev-parse", "--verify", "--quiet", &spec])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }

    /// The tree of every file in the working tree now — tracked and untracked, minus
    /// ignored ones, uncommitted changes included. In a repository it is written
    /// through a temporary index (a copy of the real one, so unchanged files are not
    /// re-read), leaving the real index, `HEAD` and the working tree untouched; a
    /// private repository ([`Git::private`]) keeps its own index between snapshots
    /// for the same reason.
    pub fn snapshot(&self) -> Result<String, IsolationError> {
        if self.git_dir.is_some() {
            self.run(&["add", "--all", "--", ":/"])?;
            return self.run(&["write-tree"]);
        }
        let temp = tempfile::tempdir().map_err(|source| IsolationError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let index = temp.path().join("index");
        let real = self.run(&["rev-parse", "--path-format=absolute", "--git-path", "index"])?;
        if Path::new(&real).exists() {
            copy_index(Path::new(&real), &index)?;
        }
        let git = self.with_index(&index);
        git.run(&["add", "--all", "--", ":/"])?;
        git.run(&["write-tree"])
    }

    /// A commit object of `tree` with `parents` (not on any branch).
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, IsolationError> {
        let mut args = vec!["commit-tree", tree, "-m", message];
        for p in parents {
            args.push("-p");
            args.push(p);
        }
        self.run(&args)
    }

    /// The paths that differ between two tree-ish objects (`a` → `b`), repository
    /// relative.
    pub fn changed(&self, a: &str, b: &str) -> Result<Vec<String>, IsolationError> {
        let out = self.run(&["diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b])?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Every file of `tree`: path → entry.
    pub fn entries(&self, tree: &str) -> Result<BTreeMap<String, Entry>, IsolationError> {
        let out = self.run(&["ls-tree", "-r", "-z", "--full-tree", tree])?;
        let mut map = BTreeMap::new();
        for record in out.split('\0').filter(|r| !r.is_empty()) {
            let Some((head, path)) = record.split_once('\t') else {
                continue;
            };
            let mut parts = head.split_whitespace();
            if let (Some(mode), Some(_kind), Some(oid)) = (parts.next(), parts.next(), parts.next())
            {
                map.insert(
                    path.to_string(),
                    Entry {
                        mode: mode.to_string(),
                        oid: oid.to_string(),
                    },
                );
            }
        }
        Ok(map)
    }

    /// Makes each of `paths` (relative to `root`) what it is in `tree`: written from
    /// its blob (mode and symlinks kept) or, when `tree` lacks it, removed (with the
    /// directories it leaves empty).
    ///
    /// Every path is checked first and nothing is written when one fails
    /// ([`IsolationError::UnsafePath`], issue 34): a tree object can be forged (a ref
    /// a session rewrote, a worker's patch) to name `../x`, `.git/hooks/pre-commit`,
    /// or a path through a symlink that leads out; only plain relative paths outside
    /// any `.git`, whose existing parents inside `root` are real directories, are
    /// restored.
    pub fn restore(&self, tree: &str, root: &Path, paths: &[String]) -> Result<(), IsolationError> {
        let entries = self.entries(tree)?;
        for path in paths {
            check_restorable(root, path)?;
        }
        for path in paths {
            let target = root.join(path);
            let io = |source| IsolationError::Io {
                path: target.clone(),
                source,
            };
            match entries.get(path) {
                Some(entry) => {
                    let out = self.output(&["cat-file", "blob", &entry.oid])?;
                    if !out.status.success() {
                        return Err(self.failed(&["cat-file", "blob", &entry.oid], &out));
                    }
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent).map_err(io)?;
                    }
                    if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
                        std::fs::remove_file(&target).map_err(io)?;
                    }
                    write_entry(&target, &entry.mode, &out.stdout).map_err(io)?;
                }
                None => {
                    match std::fs::remove_file(&target) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io(e)),
                    }
                    let mut dir = target.parent();
                    while let Some(d) = dir.filter(|d| *d != root) {
                        if std::fs::remove_dir(d).is_err() {
                            break;
                        }
                        dir = d.parent();
                    }
                }
            }
        }
        Ok(())
    }
}

/// `Ok` when `path` (relative to `root`) is one a restore may write: non-empty,
/// relative, only normal components, none named `.git` (any case), and no existing
/// parent below `root` a symlink or a non-directory.
pub fn check_restorable(root: &Path, path: &str) -> Result<(), IsolationError> {
    use std::path::Component;
    let unsafe_path = |why: &str| IsolationError::UnsafePath {
        path: path.to_string(),
        why: why.to_string(),
    };
    let rel = Path::new(path);
    if path.is_empty() || path.contains('\0') {
        return Err(unsafe_path("empty or holds a NUL"));
    }
    let mut parent = root.to_path_buf();
    let components: Vec<Component> = rel.components().collect();
    for (i, component) in components.iter().enumerate() {
        let Component::Normal(name) = component else {
            return Err(unsafe_path("not a plain relative path (`..`, `/` or `.`)"));
        };
        if name.to_string_lossy().eq_ignore_ascii_case(".git") {
            return Err(unsafe_path("inside a .git directory"));
        }
        if i + 1 == components.len() {
            break;
        }
        parent.push(name);
        match std::fs::symlink_metadata(&parent) {
            Ok(m) if m.is_symlink() => return Err(unsafe_path("a parent is a symlink")),
            Ok(m) if !m.is_dir() => return Err(unsafe_path("a parent is not a directory")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(unix)]
fn write_entry(target: &Path, mode: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if mode == "120000" {
        let _ = std::fs::remove_file(target);
        let link = String::from_utf8_lossy(bytes).to_string();
        return std::os::unix::fs::symlink(link, target);
    }
    std::fs::write(target, bytes)?;
    let exec = if mode == "100755" { 0o755 } else { 0o644 };
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(exec))
}

#[cfg(not(unix))]
fn write_entry(target: &Path, _mode: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(target, bytes)
}

/// Copies the index `real` to `copy` keeping its modification time: git trusts an
/// entry's cached stat only when the file is older than the index ("racy git",
/// git's `Documentation/technical/racy-git.txt`), so a copy stamped now would hide
/// a same-size edit made in the index's second.
fn copy_index(real: &Path, copy: &Path) -> Result<(), IsolationError> {
    let io = |source| IsolationError::Io {
        path: real.to_path_buf(),
        source,
    };
    std::fs::copy(real, copy).map_err(io)?;
    let modified = std::fs::metadata(real)
        .and_then(|m| m.modified())
        .map_err(io)?;
    std::fs::File::options()
        .write(true)
        .open(copy)
        .and_then(|f| f.set_modified(modified))
        .map_err(io)
}
