//! Server-sent events (SSE) decoding for streamed model responses.
//!
//! Owns: turning a byte stream (`reqwest::Response::bytes_stream()`) into
//! [`SseEvent`]s, following the WHATWG `text/event-stream` rules where they matter for
//! model APIs: LF, CRLF and lone-CR line endings; `:` comment lines (OpenRouter's
//! `: OPENROUTER PROCESSING`); `event:` names; multi-line `data:` joined with `\n`;
//! `id:`, `retry:` and non-standard field names (llama-box's `error:`) ignored; a
//! leading BOM dropped. Chunk boundaries may fall anywhere, including inside a UTF-8
//! sequence or between the `\r` and `\n` of a CRLF: lines are buffered as bytes and
//! decoded (lossily) only when complete. Unlike a browser, a final event that is not
//! followed by a blank line is still delivered at end of stream, because servers
//! that omit it (or `[DONE]`) still meant it.
//!
//! Does not own: what the `data` means (`openai`, `anthropic`), or HTTP.
//!
//! The `sse-stream` crate was not used: it discards an unterminated final event and
//! ends the stream on invalid UTF-8, and both cases occur in captured responses.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt};

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
}

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
            _ => {}
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

/// Adapts a byte stream (`reqwest::Response::bytes_stream()`) into a stream of
/// events. A transport error is passed through as `Err` and ends the stream; events
/// decoded before it are yielded first.
pub fn sse_events<S, E>(bytes: S) -> impl Stream<Item = Result<SseEvent, E>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    E: Send,
{
    struct State<S> {
        bytes: S,
        decoder: SseDecoder,
        ready: VecDeque<SseEvent>,
        ended: bool,
    }
    let state = State {
        bytes,
        decoder: SseDecoder::new(),
        ready: VecDeque::new(),
        ended: false,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.ready.pop_front() {
                return Some((Ok(ev), st));
            }
            if st.ended {
                return None;
            }
            match st.bytes.next().await {
                Some(Ok(chunk)) => {
                    let mut out = Vec::new();
                    st.decoder.push(&chunk, &mut out);
                    st.ready.extend(out);
                }
                Some(Err(e)) => {
                    st.ended = true;
                    return Some((Err(e), st));
                }
                None => {
                    st.ended = true;
                    st.ready.extend(st.decoder.finish());
                }
            }
        }
    })
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

    #[test]
    fn stream_adapter_passes_events_then_error() {
        let chunks: Vec<Result<Bytes, &str>> = vec![
            Ok(Bytes::from_static(b"data: a\n\nda")),
            Ok(Bytes::from_static(b"ta: b\n\n")),
            Err("cut"),
        ];
        let got: Vec<_> =
            futures::executor::block_on(sse_events(stream::iter(chunks)).collect::<Vec<_>>());
        assert_eq!(got, vec![Ok(ev(None, "a")), Ok(ev(None, "b")), Err("cut")]);
    }

    fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
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
        out
    }

    const SAMPLE: &str = ": comment\r\n\r\nevent: message_start\r\ndata: {\"t\":\"\u{1F44B} \u{e9}\"}\r\n\r\n\
data: a\ndata: b\n\nerror: nope\n\ndata: [DONE]\n\ndata: tail";

    proptest! {
        #[test]
        fn any_chunking_decodes_the_same(cuts in proptest::collection::vec(0usize..400, 0..40)) {
            let bytes = SAMPLE.as_bytes();
            prop_assert_eq!(chunked(bytes, &cuts), decode_all(bytes));
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_chunking_is_irrelevant(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), Just(0xE2u8), any::<u8>()],
                0..300,
            ),
            cuts in proptest::collection::vec(0usize..300, 0..30),
        ) {
            prop_assert_eq!(chunked(&bytes, &cuts), decode_all(&bytes));
        }
    }
}
