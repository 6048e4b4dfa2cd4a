//! Handing a parsed transcript from a viewer to a loader, so one process parses a
//! stored transcript once (issue #16 item 3, "one copy of a transcript").
//!
//! A viewer opens a session tail-first ([`SessionStore::load_tail_covering`]), reads
//! the earlier part, and ends up holding the whole transcript as `load` would give it:
//! the same messages and the same warnings. Wrapped as a [`ParsedTranscript`] with the
//! transcript length it covers, those messages can replace the next
//! [`SessionStore::load_reusing`]'s parse of `transcript.jsonl`, as long as the file's
//! length is still that length (the file is append-only: equal length means no line
//! was added, cut or repaired since). Owns: that length check. Does not own: where a
//! parsed transcript waits meanwhile (the engine's runtime) or reading the parts
//! (`tail`, `transcript`).

use super::files::open_regular;
use super::tail::{self, EarlierPart};
use super::transcript::{TRANSCRIPT_FILE, read_transcript};
use super::{LoadedSession, SessionStore, StoreError, io_err};
use crate::session::message::Message;

/// A whole transcript parsed by someone else, and the bytes of `transcript.jsonl` it
/// covers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedTranscript {
    /// Every message of the transcript, in file order (as `load` gives them).
    pub messages: Vec<Message>,
    /// The transcript's warnings only (not the metadata's), as `load` words them.
    pub warnings: Vec<String>,
    /// Length in bytes of `transcript.jsonl` when it was read (0 when missing).
    pub covers: u64,
}

/// A tail-first open ([`SessionStore::load_tail_covering`]): what
/// [`SessionStore::load_tail`] gives, plus what a viewer needs to build a
/// [`ParsedTranscript`] once it has read the earlier part.
#[derive(Debug, Clone, PartialEq)]
pub struct TailLoad {
    /// The metadata and the tail's messages; warnings as `load_tail` gives them.
    pub session: LoadedSession,
    /// The part before the tail, `None` when the tail is the whole transcript.
    pub earlier: Option<EarlierPart>,
    /// Length in bytes of `transcript.jsonl` the tail was read to: the earlier part
    /// and the tail together cover exactly `[0, covers)`.
    pub covers: u64,
    /// The transcript's own warnings when `earlier` is `None` (they are also in
    /// `session.warnings`, after the metadata's); empty otherwise, since then
    /// `EarlierRead::warnings` holds the whole transcript's.
    pub transcript_warnings: Vec<String>,
}

impl SessionStore {
    /// [`SessionStore::load_tail`], also telling the transcript length read and the
    /// transcript's warnings apart from the metadata's (see [`TailLoad`]). Errors: as
    /// `load_tail`.
    pub fn load_tail_covering(
        &self,
        id: &str,
        min_messages: usize,
    ) -> Result<TailLoad, StoreError> {
        let dir = self.existing_dir(id)?;
        let (metadata, mut warnings) = self.metadata_in(&dir, id)?;
        let (tail, earlier) = tail::read_tail(&dir.join(TRANSCRIPT_FILE), min_messages)?;
        let transcript_warnings = if earlier.is_none() {
            tail.warnings(0)
        } else {
            Vec::new()
        };
        warnings.extend(transcript_warnings.iter().cloned());
        Ok(TailLoad {
            session: LoadedSession {
                metadata,
                transcript: tail.messages,
                warnings,
            },
            earlier,
            covers: tail.end,
            transcript_warnings,
        })
    }

    /// [`SessionStore::load`], taking the transcript from `parsed` instead of parsing
    /// `transcript.jsonl` when the file's length is still `parsed.covers`; otherwise
    /// (or when `parsed` is `None`) the file is parsed as `load` parses it. The
    /// metadata is always read from disk. Returns the session and whether `parsed` was
    /// used. Errors: as `load`.
    pub fn load_reusing(
        &self,
        id: &str,
        parsed: Option<ParsedTranscript>,
    ) -> Result<(LoadedSession, bool), StoreError> {
        let dir = self.existing_dir(id)?;
        let (metadata, mut warnings) = self.metadata_in(&dir, id)?;
        let path = dir.join(TRANSCRIPT_FILE);
        let parsed = match parsed {
            Some(p) if p.covers == transcript_len(&path)? => Some(p),
            _ => None,
        };
        let reused = parsed.is_some();
        let (transcript, transcript_warnings) = match parsed {
            Some(p) => (p.messages, p.warnings),
            None => read_transcript(&path)?,
        };
        warnings.extend(transcript_warnings);
        let session = LoadedSession {
            metadata,
            transcript,
            warnings,
        };
        Ok((session, reused))
    }
}

/// The length of the transcript at `path`, 0 when missing. Errors: `NotRegular`, `Io`.
fn transcript_len(path: &std::path::Path) -> Result<u64, StoreError> {
    let Some(file) = open_regular(path)? else {
        return Ok(0);
    };
    let meta = file
        .metadata()
        .map_err(|e| io_err(format!("reading {}", path.display()), e))?;
    Ok(meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Metadata;

    /// A stored session `s` whose transcript is `lines` (each followed by `\n`).
    fn stored(lines: &[String]) -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let meta = Metadata {
            session_id: "s".into(),
            config: Some(serde_json::json!({})),
            ..Default::default()
        };
        drop(store.create(&meta).unwrap());
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(transcript_path(&store), text).unwrap();
        (dir, store)
    }

    fn transcript_path(store: &SessionStore) -> std::path::PathBuf {
        store.session_dir("s").unwrap().join(TRANSCRIPT_FILE)
    }

    /// 400 user messages of ~1 KB (more than the tail's first window) with a bad line
    /// at 3, so a tail-first open has an earlier part and a warning in it.
    fn long_transcript() -> Vec<String> {
        (0..400)
            .map(|i| match i {
                3 => "not json".to_string(),
                _ => serde_json::json!({"role": "user", "content": format!("m{i:03} {}", "x".repeat(1000))})
                    .to_string(),
            })
            .collect()
    }

    /// What a viewer hands over after a tail-first open and the earlier part's read.
    fn viewer_parse(store: &SessionStore) -> ParsedTranscript {
        let open = store.load_tail_covering("s", 5).unwrap();
        let earlier = open
            .earlier
            .expect("the tail is not the whole transcript")
            .read()
            .unwrap();
        let mut messages = earlier.messages;
        messages.extend(open.session.transcript);
        ParsedTranscript {
            messages,
            warnings: earlier.warnings,
            covers: open.covers,
        }
    }

    #[test]
    fn a_viewers_parse_is_what_load_gives_and_is_used_while_the_length_holds() {
        let (_dir, store) = stored(&long_transcript());
        let loaded = store.load("s").unwrap();
        let parsed = viewer_parse(&store);
        assert_eq!(
            parsed.covers,
            std::fs::metadata(transcript_path(&store)).unwrap().len()
        );
        assert_eq!(parsed.messages, loaded.transcript);
        assert_eq!(parsed.warnings, loaded.warnings);
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);

        // The file changed behind the viewer without changing length: only a fresh
        // parse would see "M000", so the parked messages were used.
        let path = transcript_path(&store);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("m000", "M000", 1)).unwrap();
        let (reused, used) = store.load_reusing("s", Some(parsed.clone())).unwrap();
        assert!(used);
        assert_eq!(reused.transcript, loaded.transcript);
        assert_eq!(reused.warnings, loaded.warnings);
        assert_eq!(reused.metadata, loaded.metadata);
    }

    #[test]
    fn a_length_change_parses_the_file_again() {
        let (_dir, store) = stored(&long_transcript());
        let parsed = viewer_parse(&store);
        let path = transcript_path(&store);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("m000", "m0000", 1)).unwrap();
        let (reloaded, used) = store.load_reusing("s", Some(parsed)).unwrap();
        assert!(!used);
        assert!(reloaded.transcript[0].text().starts_with("m0000 "));
        assert_eq!(reloaded, store.load("s").unwrap());
    }

    #[test]
    fn a_short_transcript_read_whole_by_the_tail_keeps_its_warnings_apart() {
        let lines = [
            r#"{"role":"user","content":"hi"}"#.to_string(),
            "{}".to_string(),
        ];
        let (_dir, store) = stored(&lines);
        let open = store.load_tail_covering("s", 5).unwrap();
        assert!(open.earlier.is_none());
        let loaded = store.load("s").unwrap();
        assert_eq!(open.transcript_warnings, loaded.warnings);
        assert_eq!(open.transcript_warnings.len(), 1);
        let parsed = ParsedTranscript {
            messages: open.session.transcript,
            warnings: open.transcript_warnings,
            covers: open.covers,
        };
        assert_eq!(
            store.load_reusing("s", Some(parsed)).unwrap(),
            (loaded, true)
        );
    }
}
