//! Opening session files without hanging or flooding memory (issue 8 item 5).
//!
//! Owns: refusing a session file that is not a regular file once symlinks are followed
//! (a FIFO blocks an open or a read forever, `/dev/zero` never ends), and reading with
//! caps: one line of a JSONL file ([`MAX_LINE_BYTES`]), a whole metadata file
//! ([`MAX_METADATA_BYTES`]). Does not own: what the bytes mean (`transcript`,
//! `metadata_file`, `rebuild`).

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::{StoreError, io_err};

/// The longest line a session JSONL file may have (bytes, without the `\n`): far above
/// any message arbor writes, low enough that a damaged file cannot exhaust memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The largest `metadata.json` (or backup, or temp) read, in bytes.
pub const MAX_METADATA_BYTES: usize = 16 << 20;

/// `cap` bytes as text: whole MiB as `"64 MiB"`, whole KiB as `"64 KiB"`, else
/// `"N bytes"`.
pub fn bytes_text(cap: usize) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else if cap >= 1 << 10 && cap.is_multiple_of(1 << 10) {
        format!("{} KiB", cap >> 10)
    } else {
        format!("{cap} bytes")
    }
}

/// What a non-regular file is, for messages.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Whether `path` exists as a regular file (symlinks followed): `Ok(false)` when it
/// is missing (a dangling symlink included). Errors: `NotRegular` for anything else
/// (checked without opening it, since opening a FIFO blocks), `Io` when it cannot be
/// examined.
pub(crate) fn regular_or_missing(path: &Path) -> Result<bool, StoreError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) => Err(StoreError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(format!("examining {}", path.display()), e)),
    }
}

/// Opens `path` for reading when it is a regular file; `None` when it is missing.
/// Errors as [`regular_or_missing`], and `Io` when it cannot be opened. The opened
/// file is checked again, so a file swapped after the first check is refused too.
pub(crate) fn open_regular(path: &Path) -> Result<Option<File>, StoreError> {
    Ok(open_regular_sized(path)?.map(|(file, _)| file))
}

/// [`open_regular`] with the opened file's size in bytes (from the same check).
fn open_regular_sized(path: &Path) -> Result<Option<(File, u64)>, StoreError> {
    if !regular_or_missing(path)? {
        return Ok(None);
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format!("reading {}", path.display()), e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| io_err(format!("reading {}", path.display()), e))?;
    if !meta.is_file() {
        return Err(StoreError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    Ok(Some((file, meta.len())))
}

/// The whole of a small regular file (at most `cap` bytes); `None` when missing.
/// Errors as [`open_regular`], and `TooLarge` past `cap`.
///
/// The buffer is sized from the open file's length (up to `cap + 1`), so a file that
/// did not grow meanwhile is read in one `read` and one that sees its end.
pub(crate) fn read_capped(path: &Path, cap: usize) -> Result<Option<Vec<u8>>, StoreError> {
    let Some((file, len)) = open_regular_sized(path)? else {
        return Ok(None);
    };
    let room = usize::try_from(len).map_or(cap, |n| n.min(cap)) + 1;
    let mut bytes = Vec::with_capacity(room);
    file.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(format!("reading {}", path.display()), e))?;
    if bytes.len() > cap {
        return Err(StoreError::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(Some(bytes))
}

/// Reads `\n`-terminated lines of at most `cap` bytes (without the `\n`) into one
/// reused buffer, counting them (1-based).
pub(crate) struct CappedLines<R> {
    reader: R,
    path: PathBuf,
    cap: usize,
    line: usize,
}

impl<R: BufRead> CappedLines<R> {
    /// Lines of `reader`, which reads the file at `path` (named in errors).
    pub(crate) fn new(reader: R, path: &Path, cap: usize) -> Self {
        Self {
            reader,
            path: path.to_path_buf(),
            cap,
            line: 0,
        }
    }

    /// The next line into `buf` (cleared first; ends with `\n` unless it is the last
    /// line and unterminated); `false` at the end of the file. Errors: `LineTooLong`
    /// naming the line and the cap, after reading at most `cap + 1` bytes of it;
    /// `Io` when reading fails.
    pub(crate) fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<bool, StoreError> {
        buf.clear();
        let limit = self.cap as u64 + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', buf)
            .map_err(|e| io_err(format!("reading {}", self.path.display()), e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if buf.len() > self.cap && buf.last() != Some(&b'\n') {
            return Err(StoreError::LineTooLong {
                path: self.path.clone(),
                line: self.line,
                cap: self.cap,
            });
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;

    #[test]
    fn lines_up_to_the_cap_are_read_and_a_longer_one_is_named() {
        let path = Path::new("t.jsonl");
        let text = b"12345\n123456\n1234567\nnever reached\n";
        let mut lines = CappedLines::new(BufReader::with_capacity(2, &text[..]), path, 6);
        let mut buf = Vec::new();
        assert!(lines.next_into(&mut buf).unwrap());
        assert_eq!(buf, b"12345\n");
        assert!(lines.next_into(&mut buf).unwrap());
        assert_eq!(buf, b"123456\n", "exactly the cap is fine");
        let err = lines.next_into(&mut buf).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.jsonl line 3 is longer than 6 bytes, the cap for one line; not read"
        );
        assert_eq!(buf.len(), 7, "no more than cap + 1 bytes were held");
        let mut last = CappedLines::new(&b"abc"[..], path, 6);
        assert!(last.next_into(&mut buf).unwrap());
        assert_eq!(buf, b"abc");
        assert!(!last.next_into(&mut buf).unwrap());
    }

    #[test]
    fn caps_read_as_text() {
        assert_eq!(bytes_text(MAX_LINE_BYTES), "64 MiB");
        assert_eq!(bytes_text(100), "100 bytes");
        assert_eq!(bytes_text(64 << 10), "64 KiB");
        assert_eq!(bytes_text((64 << 10) + 1), "65537 bytes");
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_directories_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = open_regular(&zero).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: a device, not a regular file; refusing to read it",
                zero.display()
            )
        );
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(
            read_capped(&fifo, 10),
            Err(StoreError::NotRegular { kind: "a FIFO", .. })
        ));
        assert!(matches!(
            regular_or_missing(dir.path()),
            Err(StoreError::NotRegular {
                kind: "a directory",
                ..
            })
        ));
        assert!(!regular_or_missing(&dir.path().join("missing")).unwrap());
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap();
        assert!(matches!(
            read_capped(&big, 10),
            Err(StoreError::TooLarge { cap: 10, .. })
        ));
        assert_eq!(read_capped(&big, 11).unwrap().unwrap().len(), 11);
    }
}
