//! Programs that delete files without being `rm` (issue 34: `find … -delete` evaded a
//! `bash(rm *)` deny).
//!
//! Owns: the rule that a command which deletes files by other means is *also* read as
//! an `rm` command for restricting (`deny`/`ask`) patterns — [`as_rm`]. The intent of
//! `bash(rm*): deny` is "no file deletion through bash", so:
//! - `find … -delete` is read as `rm` followed by `find`'s own arguments
//!   (`find . -name x -delete` → `rm . -name x -delete`);
//! - `unlink F` and `rmdir D` as `rm F` / `rm D`;
//! - `shred` with `-u`/`--remove` (alone or in a cluster such as `-zu`) as `rm` with
//!   its arguments.
//!
//! `xargs rm`, `find -exec rm` and `busybox rm` are already `rm` through the wrapper
//! table ([`super::wrappers`]); a deleter run through a wrapper (`nohup unlink x`,
//! `busybox unlink x`, `find . -exec unlink {} ;`) is read the same way, since every
//! command found — wrapper payloads included — goes through [`as_rm`]. The reading only
//! adds a command: it can make a restricting pattern match, never make an `allow`
//! pattern cover anything. Does not own: other ways to lose data that are not deletion
//! (`mv`, `truncate`, `> file`, `git clean`), which a rule on `rm` does not claim.

use super::wrappers::basename;

/// The `rm` reading of the simple command `words`, when it deletes files (see the
/// module doc): `rm` followed by its arguments; `None` otherwise.
pub fn as_rm(words: &[String]) -> Option<Vec<String>> {
    let program = basename(words.first()?);
    let args = &words[1..];
    let deletes = match program {
        "find" => args.iter().any(|w| w == "-delete"),
        "unlink" | "rmdir" => true,
        "shred" => args.iter().any(|w| {
            w == "--remove"
                || w.starts_with("--remove=")
                || (w.starts_with('-') && !w.starts_with("--") && w.contains('u'))
        }),
        _ => false,
    };
    deletes.then(|| {
        std::iter::once("rm".to_string())
            .chain(args.iter().cloned())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn deleting_commands_read_as_rm() {
        assert_eq!(
            as_rm(&words("find . -name x -delete")),
            Some(words("rm . -name x -delete"))
        );
        assert_eq!(as_rm(&words("/usr/bin/unlink f")), Some(words("rm f")));
        assert_eq!(as_rm(&words("rmdir d")), Some(words("rm d")));
        assert_eq!(as_rm(&words("shred -zu f")), Some(words("rm -zu f")));
        assert_eq!(
            as_rm(&words("shred --remove=wipe f")),
            Some(words("rm --remove=wipe f"))
        );
        assert_eq!(as_rm(&words("shred -z f")), None);
        assert_eq!(as_rm(&words("find . -name x")), None);
        assert_eq!(as_rm(&words("ls -delete")), None);
    }
}
