//! Checkpoints and rewind (issue 25 item 4).
//!
//! Before each turn that may write, the files a session can touch are recorded as a
//! tree object: in a git repository under the private ref
//! `refs/arbor/<session>/<turn>` (never a branch the user sees; `<turn>` counts user
//! messages as Amplifier's turns do, so "before turn 3" is `…/3`), and after each
//! turn under `refs/arbor/<session>/end`. Outside git the same refs live in a private
//! bare repository kept with the session (`<session dir>/checkpoints.git`, its work
//! tree the session's directory), so `bash`-made changes are covered as well.
//!
//! Rewinding to turn N restores, to their state before turn N + 1, the files that
//! changed between then and the session's last turn (`end`) — its own writes, its
//! `bash` commands and its sub-sessions working in the same directory. Files that
//! changed again since `end` (someone else's edits) are refused, named, unless forced.
//!
//! Owns: [`Checkpoints`] (where a session's checkpoints live) and rewinding. Does not
//! own: when checkpoints are taken (`engine::checkpoints`).

use std::path::{Path, PathBuf};

use super::git::Git;
use super::{IsolationError, Repo};

/// Most files a directory outside git may hold to get private checkpoints (a home
/// directory would be copied on every turn otherwise).
pub const PRIVATE_LIMIT: usize = 20_000;

/// Where one session's checkpoints live: the repository of its working directory, or
/// its private one.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    git: Git,
    session: String,
    /// The directory paths are relative to (the work tree's top level).
    top: PathBuf,
}

/// What a rewind restored (repository-relative paths) and whether any was forced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    /// Every file restored (or removed), repository relative.
    pub files: Vec<String>,
    /// Those of `files` someone else had changed since (restored under `force`).
    pub forced: Vec<String>,
}

impl Checkpoints {
    /// The checkpoints of session `session` working in `dir`; `private` is the
    /// repository used when `dir` is outside git (created on first use).
    pub fn open(dir: &Path, session: &str, private: &Path) -> Result<Self, IsolationError> {
        match Repo::discover(dir) {
            Ok(repo) => Ok(Self {
                git: repo.git(),
                session: session.to_string(),
                top: repo.top,
            }),
            Err(IsolationError::NotARepo { .. }) => {
                if !private.join("HEAD").exists() {
                    count_files(dir)?;
                    std::fs::create_dir_all(private).map_err(|source| IsolationError::Io {
                        path: private.to_path_buf(),
                        source,
                    })?;
                    Git::at(private).run(&["init", "--quiet", "--bare"])?;
                }
                let top = std::fs::canonicalize(dir).unwrap_or(dir.to_path_buf());
                Ok(Self {
                    git: Git::private(private, &top),
                    session: session.to_string(),
                    top,
                })
            }
            Err(e) => Err(e),
        }
    }

    fn name(&self, label: &str) -> String {
        format!("refs/arbor/{}/{label}", self.session)
    }

    /// Records the state before turn `turn` (kept if that turn already has one: a
    /// continued turn keeps its first checkpoint). Returns the tree id.
    pub fn before_turn(&self, turn: u64) -> Result<String, IsolationError> {
        let name = self.name(&turn.to_string());
        if let Some(existing) = self.resolve(&name)? {
            return Ok(existing);
        }
        let tree = self.git.snapshot()?;
        self.git.run(&["update-ref", &name, &tree])?;
        Ok(tree)
    }

    /// Records the state after the session's latest turn (`…/end`).
    pub fn after_turn(&self) -> Result<String, IsolationError> {
        let tree = self.git.snapshot()?;
        self.git.run(&["update-ref", &self.name("end"), &tree])?;
        Ok(tree)
    }

    fn resolve(&self, name: &str) -> Result<Option<String>, IsolationError> {
        let out = self
            .git
            .output(&["rev-parse", "--verify", "--quiet", name])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }

    /// The turns with a checkpoint, ascending.
    pub fn turns(&self) -> Result<Vec<u64>, IsolationError> {
        let prefix = format!("refs/arbor/{}/", self.session);
        let out = self
            .git
            .run(&["for-each-ref", "--format=%(refname)", &prefix])?;
        let mut turns: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .filter_map(|t| t.parse().ok())
            .collect();
        turns.sort_unstable();
        Ok(turns)
    }

    /// Restores the files changed after turn `to_turn` (of `max` turns) to their
    /// state before turn `to_turn + 1`. Refuses (`ChangedSince`, nothing written)
    /// files changed since the session's last turn unless `force`;
    /// `TurnOutOfRange` outside `0..=max`. Nothing recorded after `to_turn`: nothing
    /// to restore.
    pub fn rewind(&self, to_turn: u64, max: u64, force: bool) -> Result<Rewound, IsolationError> {
        if to_turn > max {
            return Err(IsolationError::TurnOutOfRange { turn: to_turn, max });
        }
        let Some(target_turn) = self.turns()?.into_iter().find(|t| *t > to_turn) else {
            return Ok(Rewound {
                files: Vec::new(),
                forced: Vec::new(),
            });
        };
        let target = self
            .resolve(&self.name(&target_turn.to_string()))?
            .unwrap_or_default();
        let now = self.git.snapshot()?;
        let end = self
            .resolve(&self.name("end"))?
            .unwrap_or_else(|| now.clone());
        let files = self.git.changed(&target, &end)?;
        let since = self.git.changed(&end, &now)?;
        let clashing: Vec<String> = files
            .iter()
            .filter(|f| since.contains(f))
            .cloned()
            .collect();
        if !clashing.is_empty() && !force {
            return Err(IsolationError::ChangedSince { files: clashing });
        }
        self.git.restore(&target, &self.top, &files)?;
        self.git.run(&["update-ref", &self.name("end"), &target])?;
        Ok(Rewound {
            files,
            forced: clashing,
        })
    }
}

/// `Ok` when `dir` holds at most [`PRIVATE_LIMIT`] files (ignore files honoured).
fn count_files(dir: &Path) -> Result<(), IsolationError> {
    let mut n = 0usize;
    for entry in ignore::WalkBuilder::new(dir)
        .hidden(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            n += 1;
            if n > PRIVATE_LIMIT {
                return Err(IsolationError::TooLarge {
                    dir: dir.to_path_buf(),
                    limit: PRIVATE_LIMIT,
                });
            }
        }
    }
    Ok(())
}
