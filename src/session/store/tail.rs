//! Reading `transcript.jsonl` from its end (SPEC §16 "tail-first open"): the newest
//! messages first, the earlier part afterwards, so a front end draws a long session
//! at once and loads the rest in the background.
//!
//! Works on any valid transcript (Amplifier's too): it reads backwards from the end
//! of the file to a line start, with no index of its own. The tail and the earlier
//! part, read one after the other, give exactly what [`super::transcript::read_transcript`]
//! gives: the same messages in the same order and the same warnings with the same
//! line numbers (the tail's are numbered once the earlier part's lines are counted).
//!
//! Owns: finding the tail's start and reading the two parts. Does not own: judging a
//! line (`transcript::LineParser`) or the line cap (`files`).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::files::{MAX_LINE_BYTES, open_regular};
use super::transcript::{LineParser, LineWarning, parse_lines};
use super::{StoreError, io_err};
use crate::session::message::Message;

/// Bytes read from the end at first; the window grows fourfold until it holds the
/// messages asked for.
const FIRST_WINDOW: u64 = 256 * 1024;

/// The window stops growing past this: a tail that still has too few messages is
/// taken as it is (the earlier part holds the rest).
const MAX_WINDOW: u64 = 16 << 20;

/// The newest messages of a transcript, and where the rest ends.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptTail {
    /// The messages of the lines from [`TranscriptTail::start`] to the end, in order.
    pub messages: Vec<Message>,
    /// Byte offset of the tail's first line (0, or just after a `\n`): the earlier
    /// part is the bytes before it, read with [`EarlierPart::read`].
    pub start: u64,
    /// Length of the file when the tail was read: the tail's lines end there (the
    /// transcript read covers `[0, end)`).
    pub end: u64,
    /// The tail's warnings, numbered from its first line.
    warnings: Vec<LineWarning>,
}

impl TranscriptTail {
    /// The tail's warnings as [`super::transcript::parse_transcript`] words them, with
    /// `earlier_lines` lines before the tail (0 when the tail is the whole file).
    pub fn warnings(&self, earlier_lines: usize) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| w.render(earlier_lines))
            .collect()
    }
}

/// The part of a transcript before its tail, not read yet: lines `[0, end)` of the
/// file at `path`, plus the tail's warnings to number once those lines are counted.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlierPart {
    path: PathBuf,
    end: u64,
    tail_warnings: Vec<LineWarning>,
}

/// The earlier part, read: its messages, and the warnings of the whole transcript
/// (the earlier part's, then the tail's, numbered as a whole-file read numbers them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EarlierRead {
    pub messages: Vec<Message>,
    pub warnings: Vec<String>,
}

impl EarlierPart {
    /// Byte offset where the earlier part ends (the tail's start).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Reads the earlier part line by line (as `read_transcript` does, holding one
    /// line at a time). Errors: `NotRegular`, `LineTooLong` (line numbers are the
    /// file's), `Io`. A transcript gone meanwhile reads as empty.
    pub fn read(&self) -> Result<EarlierRead, StoreError> {
        let Some(file) = open_regular(&self.path)? else {
            return Ok(EarlierRead::default());
        };
        let reader = BufReader::with_capacity(64 * 1024, file.take(self.end));
        let mut parser = parse_lines(reader, &self.path, MAX_LINE_BYTES)?;
        let lines = parser.line;
        let mut warnings: Vec<String> = parser.warnings.iter().map(|w| w.render(0)).collect();
        warnings.extend(self.tail_warnings.iter().map(|w| w.render(lines)));
        Ok(EarlierRead {
            messages: parser.take_messages(),
            warnings,
        })
    }
}

/// Reads the transcript at `path` from its end until the tail holds at least
/// `min_messages` messages (or the window reached 16 MiB, or the file's start).
/// Returns the tail and, unless it is the whole file, the [`EarlierPart`] to read
/// next. A missing file is an empty tail.
///
/// Errors: `NotRegular` for a transcript that is not a regular file; `Io`. A line
/// over the cap is never in the tail (the window ends before it), so the earlier
/// part's read names it with its line number.
pub fn read_tail(
    path: &Path,
    min_messages: usize,
) -> Result<(TranscriptTail, Option<EarlierPart>), StoreError> {
    read_tail_from(path, min_messages, FIRST_WINDOW, MAX_WINDOW)
}

/// [`read_tail`] with the first and the largest window given (tests use small ones
/// to split small transcripts).
pub(crate) fn read_tail_from(
    path: &Path,
    min_messages: usize,
    first_window: u64,
    max_window: u64,
) -> Result<(TranscriptTail, Option<EarlierPart>), StoreError> {
    let ctx = || format!("reading {}", path.display());
    let Some(mut file) = open_regular(path)? else {
        let empty = TranscriptTail {
            messages: Vec::new(),
            start: 0,
            end: 0,
            warnings: Vec::new(),
        };
        return Ok((empty, None));
    };
    let len = file.metadata().map_err(|e| io_err(ctx(), e))?.len();
    let mut window = first_window.max(1);
    let mut buf = Vec::new();
    loop {
        // One byte before the window tells whether the window starts a line.
        let begin = len.saturating_sub(window).saturating_sub(1);
        read_range(&mut file, begin, len, &mut buf).map_err(|e| io_err(ctx(), e))?;
        let from = if begin == 0 {
            Some(0)
        } else {
            buf.iter().position(|b| *b == b'\n').map(|p| p + 1)
        };
        let last_try = begin == 0 || window >= max_window;
        if let Some(from) = from {
            let parser = parse_slice(&buf[from..]);
            if parser.messages.len() >= min_messages || last_try {
                let start = begin + from as u64;
                return Ok(split(path, parser, start, len));
            }
        } else if last_try {
            // One line longer than the window: everything is the earlier part.
            return Ok(split(path, LineParser::default(), len, len));
        }
        window = window.saturating_mul(4).min(max_window.max(first_window));
    }
}

fn split(
    path: &Path,
    mut parser: LineParser,
    start: u64,
    end: u64,
) -> (TranscriptTail, Option<EarlierPart>) {
    let earlier = (start > 0).then(|| EarlierPart {
        path: path.to_path_buf(),
        end: start,
        tail_warnings: parser.warnings.clone(),
    });
    let tail = TranscriptTail {
        messages: parser.take_messages(),
        start,
        end,
        warnings: parser.warnings,
    };
    (tail, earlier)
}

/// Parses `bytes` (whole lines, the last perhaps unterminated) as transcript lines.
fn parse_slice(bytes: &[u8]) -> LineParser {
    let mut parser = LineParser::default();
    for chunk in bytes.split_inclusive(|b| *b == b'\n') {
        parser.push(chunk);
    }
    parser
}

fn read_range(file: &mut File, begin: u64, end: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    file.seek(SeekFrom::Start(begin))?;
    file.take(end - begin).read_to_end(buf)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::transcript::{TRANSCRIPT_FILE, read_transcript};
    use super::*;

    /// One generated line: user text, assistant text with a tool call, the tool's
    /// result (its call perhaps in the other part), a blank line, JSON that is not a
    /// message, a torn message, or arbitrary bytes.
    fn any_line() -> impl Strategy<Value = Vec<u8>> {
        let msg = ("[a-z \"\u{e9}]{0,12}", 0..3u8, 0..4u8).prop_map(|(text, kind, id)| {
            let id = format!("c{id}");
            match kind {
                0 => serde_json::json!({"role": "user", "content": text}),
                1 => serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                    "tool_calls": [{"id": id, "tool": "bash", "arguments": {"command": text}}]}),
                _ => serde_json::json!({"role": "tool", "name": "bash", "tool_call_id": id, "content": text}),
            }
            .to_string()
            .into_bytes()
        });
        prop_oneof![
            6 => msg.clone(),
            1 => "[ \t\r]{0,3}".prop_map(String::into_bytes),
            1 => Just(br#"{"role":"robot"}"#.to_vec()),
            1 => (msg, 0..30usize).prop_map(|(l, cut)| l[..cut.min(l.len())].to_vec()),
            1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..20),
        ]
    }

    fn any_transcript() -> impl Strategy<Value = Vec<u8>> {
        super::super::transcript::tests::transcript_of(any_line(), 40)
    }

    /// Tail, then the earlier part: messages and warnings as one read gives them.
    fn tail_then_earlier(path: &Path, min: usize, window: u64) -> (Vec<Message>, Vec<String>) {
        let (tail, earlier) = read_tail_from(path, min, window, window * 16).unwrap();
        match earlier {
            None => {
                assert_eq!(tail.start, 0);
                let warnings = tail.warnings(0);
                (tail.messages, warnings)
            }
            Some(part) => {
                assert_eq!(part.end(), tail.start);
                let read = part.read().unwrap();
                let mut messages = read.messages;
                messages.extend(tail.messages);
                (messages, read.warnings)
            }
        }
    }

    #[test]
    fn tail_holds_the_newest_messages_and_the_rest_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSCRIPT_FILE);
        let lines: Vec<String> = (0..1000)
            .map(|i| {
                serde_json::json!({"role": "user", "content": format!("message {i}")}).to_string()
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\nnot json\n").unwrap();
        let (tail, earlier) = read_tail_from(&path, 10, 64, 1 << 20).unwrap();
        assert!(tail.messages.len() >= 10 && tail.messages.len() < 1000);
        assert_eq!(tail.messages.last().unwrap().text(), "message 999");
        let n = tail.messages.len();
        assert_eq!(
            tail.warnings(0),
            [format!(
                "transcript.jsonl line {}: skipped: expected ident at line 1 column 2",
                n + 1
            )]
        );
        let read = earlier.unwrap().read().unwrap();
        assert_eq!(read.messages.len() + tail.messages.len(), 1000);
        assert_eq!(read.messages[0].text(), "message 0");
        // Handed to the TUI and kept for the session: no room beyond the messages.
        assert_eq!(read.messages.capacity(), read.messages.len());
        assert_eq!(tail.messages.capacity(), tail.messages.len());
        assert_eq!(
            read.warnings,
            ["transcript.jsonl line 1001: skipped: expected ident at line 1 column 2"]
        );
        assert_eq!(
            tail_then_earlier(&path, 10, 64),
            read_transcript(&path).unwrap()
        );
    }

    #[test]
    fn missing_file_and_one_long_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSCRIPT_FILE);
        let (tail, earlier) = read_tail(&path, 5).unwrap();
        assert!(tail.messages.is_empty() && earlier.is_none());
        // A last line longer than the largest window: all of it is the earlier part.
        let long = serde_json::json!({"role": "user", "content": "y".repeat(300)}).to_string();
        std::fs::write(&path, format!("{long}\n{long}")).unwrap();
        let (tail, earlier) = read_tail_from(&path, 5, 100, 100).unwrap();
        assert!(tail.messages.is_empty());
        assert_eq!(earlier.as_ref().map(EarlierPart::end), Some(tail.start));
        assert_eq!(tail.start, std::fs::metadata(&path).unwrap().len());
        assert_eq!(earlier.unwrap().read().unwrap().messages.len(), 2);
    }

    proptest! {
        #[test]
        fn tail_then_earlier_equals_one_read(
            bytes in any_transcript(),
            min in 0..12usize,
            window in 1..200u64,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(TRANSCRIPT_FILE);
            std::fs::write(&path, &bytes).unwrap();
            prop_assert_eq!(tail_then_earlier(&path, min, window), read_transcript(&path).unwrap());
        }
    }
}
