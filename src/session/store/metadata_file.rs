//! `metadata.json` on disk: atomic replacement with a kept backup, and reading with
//! fallback to that backup (SPEC §7 "Store").
//!
//! Owns: the file names, the temp-file + rename dance, making it durable ([`sync`],
//! which the session writer calls at the end of a turn, not per write), and which file
//! a load trusts. Does not own: the metadata shape (`metadata`) or redaction (`redact`,
//! applied by the writer before calling here).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::files::{MAX_METADATA_BYTES, open_regular, read_capped};
use super::{StoreError, io_err};
use crate::session::metadata::Metadata;

/// The metadata file's name inside a session directory.
pub const METADATA_FILE: &str = "metadata.json";
/// The previous version of `metadata.json`, kept by every write.
pub const METADATA_BACKUP: &str = "metadata.json.backup";
/// The temp file a write goes through (same directory, so the rename is atomic).
pub const METADATA_TEMP: &str = "metadata.json.tmp";

/// Reads the metadata in `dir`: `metadata.json`, else `metadata.json.backup`, else
/// `metadata.json.tmp` (a write that a kill interrupted before its rename: fsynced
/// before the rename, so whole when it parses), the last two with a warning naming
/// why the ones before were not used. None usable → `StoreError::Corrupted` for `id`
/// with every reason.
pub(crate) fn read(dir: &Path, id: &str) -> Result<(Metadata, Vec<String>), StoreError> {
    let mut reasons = Vec::new();
    for name in [METADATA_FILE, METADATA_BACKUP, METADATA_TEMP] {
        match read_one(&dir.join(name)) {
            Ok(metadata) if reasons.is_empty() => return Ok((metadata, Vec::new())),
            Ok(metadata) => {
                let warning = format!("{}; used {name}", reasons.join("; "));
                tracing::warn!("session '{id}': {warning}");
                return Ok((metadata, vec![warning]));
            }
            Err(reason) => reasons.push(format!("{name} {reason}")),
        }
    }
    Err(StoreError::Corrupted {
        id: id.to_string(),
        detail: reasons.join("; "),
    })
}

/// Why one metadata file was not used (the file's name goes before it).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// No such regular file.
    #[error("missing")]
    Missing,
    /// It cannot be read, or is too large.
    #[error("unreadable: {0}")]
    Read(#[from] StoreError),
    /// It is not valid metadata JSON.
    #[error("unreadable: {0}")]
    Json(#[from] serde_json::Error),
}

/// One file read and parsed, or why not (`missing`, `unreadable: …`). Only a
/// regular file of at most [`MAX_METADATA_BYTES`] is read (`files::read_capped`).
fn read_one(path: &Path) -> Result<Metadata, Unusable> {
    let bytes = read_capped(path, MAX_METADATA_BYTES)?.ok_or(Unusable::Missing)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Replaces `dir/metadata.json` with `metadata` so that a crash of the process at any
/// point leaves either the old or the new file whole:
/// 1. write `metadata.json.tmp`;
/// 2. when the current `metadata.json` parses, make it `metadata.json.backup`: a
///    hard link to it renamed over the backup (no copy, no new file; where links are
///    not supported, a copy through its own temp file). A corrupt main never
///    overwrites a good backup;
/// 3. rename the temp file over `metadata.json`.
///
/// Nothing is fsynced here: [`sync`] makes the result durable (the session writer
/// calls it at the end of a turn, SPEC §7), so a power loss before it may lose this
/// write. The temp file is removed on failure.
pub(crate) fn write(dir: &Path, metadata: &Metadata) -> Result<(), StoreError> {
    let mut text = serde_json::to_vec_pretty(metadata)
        .map_err(|e| io_err("serializing metadata".to_string(), std::io::Error::other(e)))?;
    text.push(b'\n');
    let main = dir.join(METADATA_FILE);
    let temp = dir.join(METADATA_TEMP);
    let result = write_file(&temp, &text)
        .and_then(|()| backup_current(dir, &main))
        .and_then(|()| rename(&temp, &main));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Writes `metadata` over `dir/metadata.json` in place: no temp file, no backup, no
/// rename — for a volatile store (`volatile`: a worker's scratch copy, thrown away
/// after its job and never read after a crash), where every new file costs an inode
/// created and one deleted (on an ext4 without journal, each creation scans past the
/// inodes deleted in the last 60–300 s: the allocation, not the write, was most of a
/// trivial remote job's time). A crash mid-write leaves the file torn; the copy is
/// not used again.
pub(crate) fn write_in_place(dir: &Path, metadata: &Metadata) -> Result<(), StoreError> {
    let mut text = serde_json::to_vec_pretty(metadata)
        .map_err(|e| io_err("serializing metadata".to_string(), std::io::Error::other(e)))?;
    text.push(b'\n');
    let main = dir.join(METADATA_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&main)
        .and_then(|mut f| {
            f.write_all(&text)?;
            f.set_len(text.len() as u64)
        })
        .map_err(|e| io_err(format!("writing {}", main.display()), e))
}

/// Makes the [`write`]s in `dir` durable: fsyncs `metadata.json`,
/// `metadata.json.backup` (those present) and the directory (best effort, see
/// [`sync_dir`]). Returns how many fsyncs it made. Errors: a file that cannot be
/// opened or synced, or that is not a regular file (`files::open_regular`).
pub(crate) fn sync(dir: &Path) -> Result<u32, StoreError> {
    let mut fsyncs = 0;
    for name in [METADATA_FILE, METADATA_BACKUP] {
        let path = dir.join(name);
        if let Some(file) = open_regular(&path)? {
            file.sync_all()
                .map_err(|e| io_err(format!("syncing {}", path.display()), e))?;
            fsyncs += 1;
        }
    }
    sync_dir(dir);
    Ok(fsyncs + 1)
}

fn backup_current(dir: &Path, main: &Path) -> Result<(), StoreError> {
    let current = match read_capped(main, MAX_METADATA_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(()),
        Err(e @ (StoreError::NotRegular { .. } | StoreError::TooLarge { .. })) => {
            tracing::warn!("{e}; keeping the existing backup");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if serde_json::from_slice::<Metadata>(&current).is_err() {
        tracing::warn!("{} unreadable; keeping the existing backup", main.display());
        return Ok(());
    }
    let backup_temp: PathBuf = dir.join(format!("{METADATA_BACKUP}.tmp"));
    // A link is the current file itself under a second name: the rename of the new
    // temp file over `metadata.json` that follows leaves it as the backup alone.
    // Creating a file costs far more than linking one (a new inode: ~0.5 ms on a busy
    // ext4), and a metadata write happens at every status change.
    let _ = std::fs::remove_file(&backup_temp);
    let made = match std::fs::hard_link(main, &backup_temp) {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::debug!("cannot link {}: {e}; copying it", main.display());
            write_file(&backup_temp, &current)
        }
    };
    let result = made.and_then(|()| rename(&backup_temp, &dir.join(METADATA_BACKUP)));
    if result.is_err() {
        let _ = std::fs::remove_file(&backup_temp);
    }
    result
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    File::create(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| io_err(format!("writing {}", path.display()), e))
}

fn rename(from: &Path, to: &Path) -> Result<(), StoreError> {
    std::fs::rename(from, to).map_err(|e| {
        io_err(
            format!("renaming {} to {}", from.display(), to.display()),
            e,
        )
    })
}

/// Best effort: persists the rename itself. Directories cannot be opened for sync on
/// every platform, so failures are ignored.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(turns: u32) -> Metadata {
        Metadata {
            session_id: "s".into(),
            turn_count: turns,
            ..Default::default()
        }
    }

    #[test]
    fn second_write_keeps_backup_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &meta(1)).unwrap();
        assert!(!dir.path().join(METADATA_BACKUP).exists());
        write(dir.path(), &meta(2)).unwrap();
        assert!(!dir.path().join(METADATA_TEMP).exists());
        let (m, w) = read(dir.path(), "s").unwrap();
        assert_eq!((m.turn_count, w.len()), (2, 0));
        let backup: Metadata =
            serde_json::from_slice(&std::fs::read(dir.path().join(METADATA_BACKUP)).unwrap())
                .unwrap();
        assert_eq!(backup.turn_count, 1);
    }

    /// The backup is the previous `metadata.json` itself (linked, not copied: no new
    /// file per write), and a file of its own once the write is done.
    #[cfg(unix)]
    #[test]
    fn the_backup_is_the_previous_file_linked_not_a_copy() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let inode = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().ino();
        let links = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().nlink();
        write(dir.path(), &meta(1)).unwrap();
        let first = inode(METADATA_FILE);
        write(dir.path(), &meta(2)).unwrap();
        assert_eq!(
            inode(METADATA_BACKUP),
            first,
            "the old file became the backup"
        );
        assert_ne!(inode(METADATA_FILE), first);
        assert_eq!((links(METADATA_FILE), links(METADATA_BACKUP)), (1, 1));
        assert!(!dir.path().join(format!("{METADATA_BACKUP}.tmp")).exists());
        let second = inode(METADATA_FILE);
        write(dir.path(), &meta(3)).unwrap();
        assert_eq!(inode(METADATA_BACKUP), second);
        let (m, _) = read(dir.path(), "s").unwrap();
        assert_eq!(m.turn_count, 3);
    }

    #[test]
    fn corrupt_main_never_replaces_a_good_backup() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &meta(1)).unwrap();
        write(dir.path(), &meta(2)).unwrap();
        std::fs::write(
            dir.path().join(METADATA_FILE),
            b"{\"session_id\": \"s\", \"tur",
        )
        .unwrap();
        let (m, w) = read(dir.path(), "s").unwrap();
        assert_eq!(m.turn_count, 1);
        assert!(w[0].contains("used metadata.json.backup"), "{w:?}");
        write(dir.path(), &meta(3)).unwrap();
        let backup: Metadata =
            serde_json::from_slice(&std::fs::read(dir.path().join(METADATA_BACKUP)).unwrap())
                .unwrap();
        assert_eq!(backup.turn_count, 1);
    }

    #[test]
    fn the_temp_of_an_interrupted_first_write_is_used() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &meta(1)).unwrap();
        std::fs::rename(
            dir.path().join(METADATA_FILE),
            dir.path().join(METADATA_TEMP),
        )
        .unwrap();
        let (m, w) = read(dir.path(), "s").unwrap();
        assert_eq!(m.turn_count, 1);
        assert_eq!(
            w,
            ["metadata.json missing; metadata.json.backup missing; used metadata.json.tmp"]
        );
        std::fs::write(
            dir.path().join(METADATA_TEMP),
            b"{\"session_id\": \"s\", \"tu",
        )
        .unwrap();
        assert!(matches!(
            read(dir.path(), "s"),
            Err(StoreError::Corrupted { .. })
        ));
    }

    #[test]
    fn nothing_usable_is_corrupted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(METADATA_FILE), b"garbage").unwrap();
        match read(dir.path(), "s") {
            Err(StoreError::Corrupted { id, detail }) => {
                assert_eq!(id, "s");
                assert!(detail.contains("metadata.json unreadable"), "{detail}");
                assert!(detail.contains("metadata.json.backup missing"), "{detail}");
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
    }
}
