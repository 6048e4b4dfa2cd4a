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
//! Which tree each checkpoint is, is kept with the session, not in the repository
//! (issue 34): `<session dir>/checkpoints.json` (`{"3": "<tree id>", "end": …}`),
//! written atomically beside the private repository's place. The refs are still
//! written (they keep the trees from `git gc`), but a session's `bash` can rewrite
//! refs, so a rewind reads only the record; a session stored before the record
//! existed falls back to its refs. The tree a record names cannot be forged (object
//! ids are content hashes), and whatever a tree names is checked again before it is
//! written (`Git::restore`).
//!
//! Owns: [`Checkpoints`] (where a session's checkpoints live) and rewinding. Does not
//! own: when checkpoints are taken (`engine::checkpoints`).

use std::collections::BTreeMap;
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
    /// `<session dir>/checkpoints.json`: label → tree id, the checkpoints' record.
    record: PathBuf,
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
        let record = private.parent().unwrap_or(private).join("checkpoints.json");
        match Repo::discover(dir) {
            Ok(repo) => Ok(Self {
                git: repo.git(),
                session: session.to_string(),
                top: repo.top,
                record,
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
                    record,
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
        let label = turn.to_string();
        if let Some(existing) = self.resolve(&label)? {
            return Ok(existing);
        }
        let tree = self.git.snapshot()?;
        self.set(&label, &tree)?;
        Ok(tree)
    }

    /// Records the state after the session's latest turn (`…/end`).
    pub fn after_turn(&self) -> Result<String, IsolationError> {
        let tree = self.git.snapshot()?;
        self.set("end", &tree)?;
        Ok(tree)
    }

    /// Records checkpoint `label` as `tree`: in the session's record, and under its
    /// ref (so `git gc` keeps the tree).
    fn set(&self, label: &str, tree: &str) -> Result<(), IsolationError> {
        let mut record = match self.read_record()? {
            Some(record) => record,
            None => self.legacy_refs()?,
        };
        record.insert(label.to_string(), tree.to_string());
        self.write_record(&record)?;
        self.git.run(&["update-ref", &self.name(label), tree])?;
        Ok(())
    }

    /// The checkpoints a session stored before issue 34 has under its refs (label →
    /// tree), taken into its first record so its earlier turns stay rewindable.
    fn legacy_refs(&self) -> Result<BTreeMap<String, String>, IsolationError> {
        let prefix = format!("refs/arbor/{}/", self.session);
        let out = self
            .git
            .run(&["for-each-ref", "--format=%(refname) %(objectname)", &prefix])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(name, oid)| {
                Some((name.strip_prefix(&prefix)?.to_string(), oid.to_string()))
            })
            .collect())
    }

    /// The record (`None` when the session has none yet: stored before issue 34).
    fn read_record(&self) -> Result<Option<BTreeMap<String, String>>, IsolationError> {
        let io = |source| IsolationError::Io {
            path: self.record.clone(),
            source,
        };
        match std::fs::read(&self.record) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }

    /// Writes the record whole (a temp file renamed over it).
    fn write_record(&self, record: &BTreeMap<String, String>) -> Result<(), IsolationError> {
        let io = |source| IsolationError::Io {
            path: self.record.clone(),
            source,
        };
        let dir = self.record.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let bytes = serde_json::to_vec_pretty(record).unwrap_or_default();
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        std::io::Write::write_all(&mut temp, &bytes).map_err(io)?;
        temp.persist(&self.record).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// The tree of checkpoint `label`: from the record (checked to be a tree of the
    /// repository), or from the ref for a session stored before the record existed.
    fn resolve(&self, label: &str) -> Result<Option<String>, IsolationError> {
        if let Some(record) = self.read_record()? {
            let Some(tree) = record.get(label) else {
                return Ok(None);
            };
            let kind = self.git.output(&["cat-file", "-t", tree])?;
            if !kind.status.success() || String::from_utf8_lossy(&kind.stdout).trim() != "tree" {
                return Err(IsolationError::MissingCheckpoint {
                    label: label.to_string(),
                });
            }
            return Ok(Some(tree.clone()));
        }
        let spec = format!("{}^{{tree}}", self.name(label));
        let out = self
            .git
            .output(&["rev-parse", "--verify", "--quiet", &spec])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }

    /// The turns with a checkpoint, ascending.
    pub fn turns(&self) -> Result<Vec<u64>, IsolationError> {
        if let Some(record) = self.read_record()? {
            let mut turns: Vec<u64> = record.keys().filter_map(|t| t.parse().ok()).collect();
            turns.sort_unstable();
            return Ok(turns);
        }
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
        let target = self.resolve(&target_turn.to_string())?.unwrap_or_default();
        let now = self.git.snapshot()?;
        let end = self.resolve("end")?.unwrap_or_else(|| now.clone());
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
        self.set("end", &target)?;
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
