//! Reading `transcript.jsonl` with crash recovery, and repairing its tail before
//! appending (SPEC §7 "Store", §17).
//!
//! Owns: splitting the file into lines, dropping a torn last line, reporting and
//! skipping bad lines, and making sure an append never glues a new message onto a torn
//! line. Does not own: the message shape (`message`), appending (`writer`), or the
//! regular-file check and line cap (`files`).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::files::{CappedLines, MAX_LINE_BYTES, open_regular, regular_or_missing};
use super::{StoreError, io_err};
use crate::session::message::Message;

/// The transcript's file name inside a session directory.
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";

/// Parses transcript bytes: one JSON [`Message`] per `\n`-terminated line (a trailing
/// `\r` is ignored, blank lines are skipped).
///
/// Returns the messages in file order and warnings:
/// - a last line without `\n` that is not valid JSON is a torn write (crash mid-append)
///   and is dropped: `"transcript.jsonl: dropped torn last line (N bytes)"`;
/// - any other line that is not a message is skipped:
///   `"transcript.jsonl line 7: skipped: <reason>"` (1-based line numbers).
///
/// Never panics, whatever the bytes. [`read_transcript`] gives the same result for a
/// file holding these bytes without reading it whole.
pub fn parse_transcript(bytes: &[u8]) -> (Vec<Message>, Vec<String>) {
    let mut parser = LineParser::default();
    for chunk in bytes.split_inclusive(|b| *b == b'\n') {
        parser.push(chunk);
    }
    parser.finish()
}

/// Reads and parses the transcript at `path` line by line (see [`parse_transcript`]:
/// same messages, same warnings), holding one line of the file at a time; a missing
/// file is an empty transcript.
///
/// Errors: `NotRegular` when the transcript is not a regular file once symlinks are
/// followed (a FIFO or `/dev/zero` would block or never end); `LineTooLong` for a
/// line over [`MAX_LINE_BYTES`] (named, nothing past the cap held in memory); `Io`.
pub fn read_transcript(path: &Path) -> Result<(Vec<Message>, Vec<String>), StoreError> {
    let Some(file) = open_regular(path)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    parse_reader(
        BufReader::with_capacity(READ_BUFFER, file),
        path,
        MAX_LINE_BYTES,
    )
}

/// Bytes [`read_transcript`] asks of the file at a time.
const READ_BUFFER: usize = 64 * 1024;

/// Parses a transcript from `reader` (the file at `path`) one line at a time, reusing
/// one line buffer (it grows to the longest line, at most `cap + 1` bytes). Fails when
/// reading fails or a line is longer than `cap`.
fn parse_reader(
    reader: impl BufRead,
    path: &Path,
    cap: usize,
) -> Result<(Vec<Message>, Vec<String>), StoreError> {
    Ok(parse_lines(reader, path, cap)?.finish())
}

/// Feeds the lines of `reader` (the file at `path`) to a fresh [`LineParser`].
pub(super) fn parse_lines(
    reader: impl BufRead,
    path: &Path,
    cap: usize,
) -> Result<LineParser, StoreError> {
    let mut parser = LineParser::default();
    let mut lines = CappedLines::new(reader, path, cap);
    let mut chunk = Vec::new();
    while lines.next_into(&mut chunk)? {
        parser.push(&chunk);
    }
    Ok(parser)
}

/// The one judge of transcript lines, shared by [`parse_transcript`] (slices of
/// memory) and [`read_transcript`] (lines read from the file), so the two cannot drift.
#[derive(Debug, Default)]
pub(super) struct LineParser {
    pub(super) messages: Vec<Message>,
    pub(super) warnings: Vec<LineWarning>,
    /// 1-based number of the last line pushed.
    pub(super) line: usize,
}

/// A line [`LineParser`] could not take, kept structured so a part of the transcript
/// read on its own (the tail, see `tail`) can be numbered once the lines before it
/// are counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LineWarning {
    /// Line `line` (1-based within the part parsed) is not a message.
    Skipped { line: usize, reason: String },
    /// The unterminated last line (`bytes` long) is a torn write.
    Torn { bytes: usize },
}

impl LineWarning {
    /// The warning's text, with `before` lines ahead of the part it was found in.
    pub(super) fn render(&self, before: usize) -> String {
        match self {
            LineWarning::Skipped { line, reason } => format!(
                "{TRANSCRIPT_FILE} line {}: skipped: {reason}",
                before + line
            ),
            LineWarning::Torn { bytes } => {
                format!("{TRANSCRIPT_FILE}: dropped torn last line ({bytes} bytes)")
            }
        }
    }
}

impl LineParser {
    /// Takes the next line as split from the transcript: its bytes ending in `\n`, or,
    /// for an unterminated last line only, without one. Never empty.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.line += 1;
        let (raw, terminated) = match chunk.strip_suffix(b"\n") {
            Some(raw) => (raw, true),
            None => (chunk, false),
        };
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Message>(line) {
            Ok(message) => self.messages.push(message),
            Err(e) => {
                let torn =
                    !terminated && serde_json::from_slice::<serde_json::Value>(line).is_err();
                self.warnings.push(if torn {
                    LineWarning::Torn { bytes: raw.len() }
                } else {
                    LineWarning::Skipped {
                        line: self.line,
                        reason: e.to_string(),
                    }
                });
            }
        }
    }

    /// The messages in file order and the warnings.
    fn finish(mut self) -> (Vec<Message>, Vec<String>) {
        let warnings = self.warnings.iter().map(|w| w.render(0)).collect();
        (self.take_messages(), warnings)
    }

    /// The messages pushed so far, in file order, holding no more room than they fill
    /// (the reading doubled it: 100k messages sat in room for 131,072 until the
    /// session closed). Leaves none behind.
    pub(super) fn take_messages(&mut self) -> Vec<Message> {
        let mut messages = std::mem::take(&mut self.messages);
        messages.shrink_to_fit();
        messages
    }
}

/// Makes the transcript at `path` safe to append to: when it ends in an unterminated
/// line, a torn write (not valid JSON) is cut off, and a complete JSON line gets its
/// missing `\n`. Returns a warning when something was cut.
///
/// Errors: `NotRegular` for a transcript that is not a regular file; `Io`.
pub(crate) fn repair_tail(path: &Path) -> Result<Option<String>, StoreError> {
    let ctx = || format!("repairing {}", path.display());
    if !regular_or_missing(path)? {
        return Ok(None);
    }
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(ctx(), e)),
    };
    let len = file.metadata().map_err(|e| io_err(ctx(), e))?.len();
    let start = tail_start(&mut file, len).map_err(|e| io_err(ctx(), e))?;
    if start == len {
        return Ok(None);
    }
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.read_to_end(&mut tail))
        .map_err(|e| io_err(ctx(), e))?;
    if serde_json::from_slice::<serde_json::Value>(&tail).is_ok() {
        file.seek(SeekFrom::End(0))
            .and_then(|_| file.write_all(b"\n"))
            .map_err(|e| io_err(ctx(), e))?;
        return Ok(None);
    }
    file.set_len(start).map_err(|e| io_err(ctx(), e))?;
    let warning = format!(
        "{TRANSCRIPT_FILE}: cut torn last line ({} bytes) before appending",
        len - start
    );
    tracing::warn!("{}: {warning}", path.display());
    Ok(Some(warning))
}

/// The offset just after the last `\n` in the first `len` bytes of `file` (0 if none),
/// scanning backwards in chunks so a large transcript is not read whole.
fn tail_start(file: &mut File, len: u64) -> std::io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = Vec::new();
    while end > 0 {
        let begin = end.saturating_sub(CHUNK);
        buf.resize((end - begin) as usize, 0);
        file.seek(SeekFrom::Start(begin))?;
        file.read_exact(&mut buf)?;
        if let Some(pos) = buf.iter().rposition(|b| *b == b'\n') {
            return Ok(begin + pos as u64 + 1);
        }
        end = begin;
    }
    Ok(0)
}

#[cfg(test)]
pub(super) mod tests {
    use proptest::prelude::*;

    use super::*;

    const USER: &str = r#"{"role":"user","content":"hi"}"#;
    const TOOL: &str = r#"{"role":"tool","name":"bash","tool_call_id":"c1","content":"ok"}"#;

    #[test]
    fn torn_last_line_is_dropped_with_warning() {
        let text = format!("{USER}\n{TOOL}\n{{\"role\":\"assi");
        let (messages, warnings) = parse_transcript(text.as_bytes());
        assert_eq!(messages.len(), 2);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("dropped torn last line"),
            "{warnings:?}"
        );
    }

    #[test]
    fn bad_middle_line_is_reported_with_its_line_number() {
        let text = format!("{USER}\n\nnot json\n{TOOL}\r\n{{\"role\":\"robot\"}}\n{USER}");
        let (messages, warnings) = parse_transcript(text.as_bytes());
        assert_eq!(messages.len(), 3, "unterminated valid last line is kept");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("transcript.jsonl line 3: skipped"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with("transcript.jsonl line 5: skipped"),
            "{warnings:?}"
        );
    }

    #[test]
    fn repair_cuts_torn_tail_and_terminates_a_complete_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSCRIPT_FILE);
        std::fs::write(&path, format!("{USER}\n{{\"role\":\"us")).unwrap();
        assert!(repair_tail(&path).unwrap().is_some());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{USER}\n"));
        std::fs::write(&path, format!("{USER}\n{TOOL}")).unwrap();
        assert_eq!(repair_tail(&path).unwrap(), None);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{USER}\n{TOOL}\n")
        );
        // A single huge torn line spanning several scan chunks.
        std::fs::write(&path, "x".repeat(200_000)).unwrap();
        assert!(repair_tail(&path).unwrap().is_some());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }

    fn valid_line() -> impl Strategy<Value = String> {
        ("[a-zA-Z0-9 \"\\\\\u{e9}\u{1f600}]{0,20}", 0..3u8).prop_map(|(text, kind)| {
            let message = match kind {
                0 => serde_json::json!({"role": "user", "content": text}),
                1 => serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}]}),
                _ => serde_json::json!({"role": "tool", "name": "t", "tool_call_id": text, "content": text}),
            };
            message.to_string()
        })
    }

    /// One line of a generated transcript: a message, a blank or whitespace line,
    /// JSON that is not a message, a torn message, or arbitrary bytes (invalid UTF-8
    /// included), with no `\n` inside.
    fn any_line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            3 => valid_line().prop_map(String::into_bytes),
            1 => "[ \t\r]{0,3}".prop_map(String::into_bytes),
            1 => Just(br#"{"role":"robot"}"#.to_vec()),
            1 => (valid_line(), 0..30usize).prop_map(|(l, cut)| {
                l.as_bytes()[..cut.min(l.len())].to_vec()
            }),
            1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..30),
        ]
    }

    /// Transcript bytes from generated lines, each ended by `\n` or `\r\n` except
    /// perhaps the last.
    fn any_transcript() -> impl Strategy<Value = Vec<u8>> {
        transcript_of(any_line(), 16)
    }

    /// Transcript bytes of up to `max` lines drawn from `line`, each ended by `\n` or
    /// `\r\n` except perhaps the last (shared with the tail reader's tests).
    pub(in crate::session::store) fn transcript_of(
        line: impl Strategy<Value = Vec<u8>>,
        max: usize,
    ) -> impl Strategy<Value = Vec<u8>> {
        (
            proptest::collection::vec((line, any::<bool>()), 0..max),
            any::<bool>(),
        )
            .prop_map(|(lines, terminated)| {
                let mut bytes = Vec::new();
                let count = lines.len();
                for (i, (line, crlf)) in lines.into_iter().enumerate() {
                    bytes.extend_from_slice(&line);
                    if i + 1 < count || terminated {
                        bytes.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                    }
                }
                bytes
            })
    }

    #[test]
    fn missing_file_is_an_empty_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let (messages, warnings) = read_transcript(&dir.path().join(TRANSCRIPT_FILE)).unwrap();
        assert!(messages.is_empty() && warnings.is_empty());
    }

    #[test]
    fn reading_a_file_matches_parsing_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSCRIPT_FILE);
        // A line far longer than the read buffer, a bad line and a torn tail.
        let long = serde_json::json!({"role": "user", "content": "y".repeat(3 * READ_BUFFER)});
        let text = format!("{USER}\n{long}\r\n\nnot json\n{TOOL}\n{{\"role\":\"us");
        std::fs::write(&path, &text).unwrap();
        let read = read_transcript(&path).unwrap();
        assert_eq!(read, parse_transcript(text.as_bytes()));
        assert_eq!(read.0.len(), 3);
        assert_eq!(read.0.capacity(), 3, "no room kept beyond the messages");
        assert_eq!(read.0[1].text().len(), 3 * READ_BUFFER);
        assert_eq!(
            read.1,
            [
                "transcript.jsonl line 4: skipped: expected ident at line 1 column 2",
                "transcript.jsonl: dropped torn last line (11 bytes)",
            ]
        );
    }

    #[test]
    fn a_line_over_the_cap_stops_the_read_and_is_named() {
        let text = format!("{USER}\n{}\n{TOOL}\n", "x".repeat(100));
        let path = Path::new("s/transcript.jsonl");
        let err = parse_reader(text.as_bytes(), path, 50).unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::LineTooLong {
                    line: 2,
                    cap: 50,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "s/transcript.jsonl line 2 is longer than 50 bytes, the cap for one line; not read"
        );
        assert_eq!(parse_reader(text.as_bytes(), path, 100).unwrap().0.len(), 2);
    }

    proptest! {
        #[test]
        fn loader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let (messages, warnings) = parse_transcript(&bytes);
            let lines = bytes.split(|b| *b == b'\n').count();
            prop_assert!(messages.len() + warnings.len() <= lines);
        }

        #[test]
        fn every_complete_valid_line_is_returned(
            segments in proptest::collection::vec(
                prop_oneof![
                    valid_line().prop_map(|l| (true, l.into_bytes())),
                    proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40)
                        .prop_map(|b| (false, b)),
                ],
                0..20,
            ),
            tail in proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40),
        ) {
            let mut bytes = Vec::new();
            let mut expected = Vec::new();
            for (_, line) in &segments {
                bytes.extend_from_slice(line);
                bytes.push(b'\n');
                if let Ok(m) = serde_json::from_slice::<Message>(line) {
                    expected.push(m);
                }
            }
            bytes.extend_from_slice(&tail);
            let (messages, _) = parse_transcript(&bytes);
            prop_assert!(messages.len() >= expected.len());
            prop_assert_eq!(&messages[..expected.len()], &expected[..]);
            prop_assert!(segments.iter().filter(|(valid, _)| *valid).count() <= expected.len());
        }

        #[test]
        fn streaming_and_in_memory_parsing_agree(
            bytes in any_transcript(),
            capacity in 1..24usize,
        ) {
            let in_memory = parse_transcript(&bytes);
            let streamed = parse_reader(
                BufReader::with_capacity(capacity, &bytes[..]),
                Path::new(TRANSCRIPT_FILE),
                MAX_LINE_BYTES,
            )
            .unwrap();
            prop_assert_eq!(&streamed, &in_memory);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(TRANSCRIPT_FILE);
            std::fs::write(&path, &bytes).unwrap();
            prop_assert_eq!(&read_transcript(&path).unwrap(), &in_memory);
        }
    }
}
