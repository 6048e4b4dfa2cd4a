//! Server-sent events (SSE) decoding for streamed model responses.
//!
//! Owns: turning a byte stream (`reqwest::Response::bytes_stream()`) into
//! [`SseEvent`]s, following the WHATWG `text/event-stream` rules where they matter for
//! model APIs: LF, CRLF and lone-CR line endings; `:` comment lines (OpenRouter's
//! `: OPENROUTER PROCESSING`); `event:` names; multi-line `data:` joined with `\n`;
//! `id:` and `retry:` ignored; a leading BOM dropped. Lines with any other field name
//! (garbage, a server's own field such as llama-box's `error:`) are ignored as the
//! standard says, but counted ([`SseDecoder::ignored_lines`]) so a caller can say
//! that something in the stream was not understood. Chunk boundaries may fall anywhere, including inside a UTF-8
//! sequence or between the `\r` and `\n` of a CRLF: lines are buffered as bytes and
//! decoded (lossily) only when complete. Unlike a browser, a final event that is not
//! followed by a blank line is still delivered at end of stream, because servers
//! that omit it (or `[DONE]`) still meant it.
//!
//! Does not own: what the `data` means (`openai`, `anthropic`), HTTP, or reading the
//! body (`transport::drive` feeds the decoder chunk by chunk).
//!
//! The `sse-stream` crate was not used: it discards an unterminated final event and
//! ends the stream on invalid UTF-8, and both cases occur in captured responses.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the block had one (`message_start`, `error`, …).
    pub event: Option<String>,
    /// The `data:` lines of the block joined with `\n` (empty when none).
    pub data: String,
}

/// Incremental SSE decoder: feed bytes with [`SseDecoder::push`], flush with
/// [`SseDecoder::finish`]. Never panics; any bytes are accepted.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    /// Whether the first line was processed (a BOM may only start the first one).
    first_line_done: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    /// Lines with a field SSE does not define.
    ignored: u64,
    /// The first of them (lossy UTF-8, at most `MAX_SAMPLE` bytes).
    first_ignored: Option<String>,
}

/// The longest sample of an ignored line kept, in bytes.
const MAX_SAMPLE: usize = 200;

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk; complete events are appended to `out` in stream order.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(pos) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..pos]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            if chunk[pos] == b'\r' {
                match chunk.get(pos + 1) {
                    Some(b'\n') => chunk = &chunk[pos + 2..],
                    Some(_) => chunk = &chunk[pos + 1..],
                    None => {
                        self.after_cr = true;
                        chunk = &[];
                    }
                }
            } else {
                chunk = &chunk[pos + 1..];
            }
        }
        self.line.extend_from_slice(chunk);
    }

    /// How many lines so far had a field SSE does not define (not `data`, `event`,
    /// `id`, `retry`, nor a `:` comment): garbage, or a server's own field. They were
    /// skipped; the count does not depend on how the bytes were chunked.
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Bytes held for the event not yet complete: its unterminated line and the
    /// `data` gathered so far. A caller bounds memory with it (`transport::drive`).
    pub fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// The first ignored line (lossy UTF-8, cut to 200 bytes), if any.
    pub fn first_ignored(&self) -> Option<&str> {
        self.first_ignored.as_deref()
    }

    /// Ends the stream: an unterminated last line is processed and a pending event
    /// (one with data but no closing blank line) is returned.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out);
        }
        self.dispatch(&mut out);
        self.after_cr = false;
        out.pop()
    }

    fn process_line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) {
        if !self.first_line_done {
            self.first_line_done = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" | b"retry" => {}
            _ => {
                self.ignored += 1;
                if self.first_ignored.is_none() {
                    let sample = &line[..line.len().min(MAX_SAMPLE)];
                    self.first_ignored = Some(String::from_utf8_lossy(sample).into_owned());
                }
            }
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data || event.is_some() {
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
        self.data.clear();
        self.has_data = false;
    }
}

/// Decodes a whole byte slice at once (tests, replay).
pub fn decode_all(bytes: &[u8]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    decoder.push(bytes, &mut out);
    out.extend(decoder.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    #[test]
    fn fields_comments_and_multiline_data() {
        let input = b": OPENROUTER PROCESSING\n\nevent: message_start\ndata: {\"a\":1}\n\n\
data: line one\ndata:line two\nid: 7\nretry: 10\nerror: {\"x\":1}\n\n";
        assert_eq!(
            decode_all(input),
            vec![
                ev(Some("message_start"), "{\"a\":1}"),
                ev(None, "line one\nline two"),
            ]
        );
        let (_, ignored, first) = chunked(input, &[]);
        assert_eq!((ignored, first.as_deref()), (1, Some("error: {\"x\":1}")));
    }

    #[test]
    fn pending_bytes_are_the_unfinished_event() {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        d.push(b"data: abc\ndata: de", &mut out);
        assert_eq!(d.pending_bytes(), "abc".len() + "data: de".len());
        d.push(b"\n\n", &mut out);
        assert_eq!((d.pending_bytes(), out.len()), (0, 1));
    }

    #[test]
    fn lines_that_are_not_sse_are_counted_not_dispatched() {
        let input = b"data: a\n\nnot sse at all\n\n{\"choices\":[]}\ndata: b\n\n: comment\nid: 1\n";
        let (events, ignored, first) = chunked(input, &[]);
        assert_eq!(events, vec![ev(None, "a"), ev(None, "b")]);
        assert_eq!((ignored, first.as_deref()), (2, Some("not sse at all")));
        let long = [b"x".repeat(500), b"\n".to_vec()].concat();
        let (_, ignored, first) = chunked(&long, &[7, 300]);
        assert_eq!((ignored, first.map(|f| f.len())), (1, Some(200)));
    }

    #[test]
    fn crlf_lone_cr_and_bom() {
        let input = b"\xEF\xBB\xBFdata: a\r\n\r\ndata: b\r\rdata: c\n\n";
        assert_eq!(
            decode_all(input),
            vec![ev(None, "a"), ev(None, "b"), ev(None, "c")]
        );
    }

    #[test]
    fn unterminated_final_event_is_delivered() {
        assert_eq!(
            decode_all(b"data: x\n\ndata: last"),
            vec![ev(None, "x"), ev(None, "last")]
        );
        assert_eq!(decode_all(b"data: last\n"), vec![ev(None, "last")]);
        assert!(decode_all(b"").is_empty());
        assert!(decode_all(b": only a comment").is_empty());
    }

    #[test]
    fn split_inside_crlf_and_utf8() {
        let input = "data: h\u{e9}llo \u{1F44B}\r\n\r\ndata: two\r\n\r\n".as_bytes();
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for b in input {
            d.push(std::slice::from_ref(b), &mut out);
        }
        out.extend(d.finish());
        assert_eq!(out, vec![ev(None, "h\u{e9}llo \u{1F44B}"), ev(None, "two")]);
    }

    /// The events, ignored-line count and first ignored line of `bytes` fed in chunks
    /// cut at `cuts` (modulo the length).
    fn chunked(bytes: &[u8], cuts: &[usize]) -> (Vec<SseEvent>, u64, Option<String>) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        let mut start = 0;
        for p in points {
            d.push(&bytes[start..p], &mut out);
            start = p;
        }
        d.push(&bytes[start..], &mut out);
        out.extend(d.finish());
        (
            out,
            d.ignored_lines(),
            d.first_ignored().map(str::to_string),
        )
    }

    const SAMPLE: &str = ": comment\r\n\r\nevent: message_start\r\ndata: {\"t\":\"\u{1F44B} \u{e9}\"}\r\n\r\n\
data: a\ndata: b\n\nerror: nope\n\ndata: [DONE]\n\ndata: tail";

    proptest! {
        #[test]
        fn any_chunking_decodes_the_same(cuts in proptest::collection::vec(0usize..400, 0..40)) {
            let bytes = SAMPLE.as_bytes();
            let whole = chunked(bytes, &[]);
            prop_assert_eq!(&whole.0, &decode_all(bytes));
            prop_assert_eq!(whole.1, 1);
            prop_assert_eq!(chunked(bytes, &cuts), whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_chunking_is_irrelevant(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), Just(0xE2u8), any::<u8>()],
                0..300,
            ),
            cuts in proptest::collection::vec(0usize..300, 0..30),
        ) {
            let whole = chunked(&bytes, &[]);
            prop_assert_eq!(&whole.0, &decode_all(&bytes));
            prop_assert_eq!(chunked(&bytes, &cuts), whole);
        }
    }
}
