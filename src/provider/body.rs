//! Reading one streamed response body: bytes → SSE events → the API's assembler →
//! deltas, then the assembled response.
//!
//! Owns: the [`Assembler`] trait each API implements, feeding the body chunk by chunk
//! through the [`SseDecoder`] and the assembler, counting what they skip as malformed ([`Malformed`]: events the
//! assembler answers [`Flow::Skipped`], lines that are not SSE), failing a response
//! that brought nothing but malformed pieces, bounding the memory one unfinished SSE
//! event may take ([`MAX_EVENT_BYTES`]), and the time limit of one response
//! ([`TimeLimit`], on the clock of the runtime polling the stream). Does not own: sending the request or the
//! stream the caller sees (`transport::drive`), what events mean (`openai_stream`,
//! `anthropic_stream`), or the limits on a whole response (`engine::stream`).

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};

use super::error::scrubbed;
use super::sse::{SseDecoder, SseEvent};
use super::{
    MALFORMED_SAMPLE_CHARS, Malformed, ProviderError, ProviderErrorKind, ProviderResponse,
    StreamEvent,
};
use crate::session::store::bytes_text;

/// What an assembler wants after one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The API said the response is complete (`[DONE]`, `message_stop`).
    Done,
    /// The event could not be read (its data is not the JSON object the API sends):
    /// it was skipped and is counted as malformed. Keep reading.
    Skipped,
}

/// Turns one API's stream events into deltas and, at the end, the whole response.
pub(crate) trait Assembler: Send + 'static {
    /// Handles one event, pushing deltas to `out`. An `Err` ends the stream after the
    /// deltas already pushed.
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError>;
    /// The stream ended (EOF or [`Flow::Done`]): the assembled response, or an error
    /// when the stream was evidently cut short.
    fn finish(&mut self) -> Result<ProviderResponse, ProviderError>;
}

/// What one step yields: deltas, then at most one `Completed` or error.
pub(crate) type Batch = Vec<Result<StreamEvent, ProviderError>>;

/// The most one SSE event (its lines so far) may hold before the stream is cut: twice
/// the largest `response.max_bytes` (32 MiB), so only a stream that would pass any
/// response limit inside one event is cut here — the engine's limits never see an
/// event that does not end.
pub(crate) const MAX_EVENT_BYTES: usize = 64 << 20;

/// The time limit of one response: its deadline and how it is named in the error.
#[derive(Debug, Clone)]
pub(crate) struct TimeLimit {
    deadline: tokio::time::Instant,
    error: ProviderError,
}

impl TimeLimit {
    /// A limit of `max_time` from now for a response from `provider`.
    pub(crate) fn starting_now(provider: &str, max_time: Duration) -> Self {
        let time = if max_time.subsec_nanos() == 0 {
            format!("{} s", max_time.as_secs())
        } else {
            format!("{} s", max_time.as_secs_f64())
        };
        Self {
            deadline: tokio::time::Instant::now() + max_time,
            error: ProviderError::new(
                ProviderErrorKind::Stream,
                provider,
                format!(
                    "the response took too long: it was still streaming after the limit of \
                     {time} (response.max_time in config.yaml) and was cut there"
                ),
            ),
        }
    }
}

/// `future`'s output, or the limit's error when `limit` passes first.
pub(crate) async fn within<F: Future>(
    limit: Option<&TimeLimit>,
    future: F,
) -> Result<F::Output, ProviderError> {
    match limit {
        Some(limit) => tokio::time::timeout_at(limit.deadline, future)
            .await
            .map_err(|_| limit.error.clone()),
        None => Ok(future.await),
    }
}

/// One response body being read.
pub(crate) struct BodyReader<A> {
    provider: String,
    body: BoxStream<'static, Result<Bytes, ProviderError>>,
    decoder: SseDecoder,
    /// Decoded events not yet given to the assembler.
    ready: VecDeque<SseEvent>,
    assembler: A,
    /// Events the assembler skipped, and the first of them.
    skipped: u64,
    first_skipped: Option<String>,
    /// Whether any delta was yielded.
    output: bool,
    /// The body ended; `ready` holds its last events.
    eof: bool,
    /// The body must be cut (an event passed `max_event`) once `ready` is drained.
    cut: Option<ProviderError>,
    max_event: usize,
    limit: Option<TimeLimit>,
}

impl<A: Assembler> BodyReader<A> {
    /// A reader of `body` (the response's `bytes_stream()`, a transport failure
    /// already a `ProviderError`) from `provider`, cutting an unfinished event at
    /// `max_event` bytes ([`MAX_EVENT_BYTES`] in use) and the response at `limit`.
    pub(crate) fn new(
        provider: String,
        body: BoxStream<'static, Result<Bytes, ProviderError>>,
        assembler: A,
        max_event: usize,
        limit: Option<TimeLimit>,
    ) -> Self {
        Self {
            provider,
            body,
            decoder: SseDecoder::new(),
            ready: VecDeque::new(),
            assembler,
            skipped: 0,
            first_skipped: None,
            output: false,
            eof: false,
            cut: None,
            max_event,
            limit,
        }
    }

    /// One step: the next decoded event through the assembler, else the next chunk of
    /// the body. Returns what to yield and whether to keep reading; the last batch
    /// ends in `Completed` or an error.
    pub(crate) async fn step(&mut self) -> (Batch, bool) {
        if let Some(event) = self.ready.pop_front() {
            return self.on_event(event);
        }
        if let Some(error) = self.cut.take() {
            return (vec![Err(error)], false);
        }
        if self.eof {
            return (vec![self.complete()], false);
        }
        let next = match within(self.limit.as_ref(), self.body.next()).await {
            Ok(next) => next,
            Err(too_long) => return (vec![Err(too_long)], false),
        };
        match next {
            Some(Ok(chunk)) => {
                let mut events = Vec::new();
                self.decoder.push(&chunk, &mut events);
                self.ready.extend(events);
                if self.decoder.pending_bytes() > self.max_event {
                    self.cut = Some(ProviderError::new(
                        ProviderErrorKind::Stream,
                        &self.provider,
                        format!(
                            "one event of the response stream passed {} without ending; \
                             the response was cut there",
                            bytes_text(self.max_event)
                        ),
                    ));
                }
                (Vec::new(), true)
            }
            Some(Err(e)) => (vec![Err(e)], false),
            None => {
                self.eof = true;
                self.ready.extend(self.decoder.finish());
                (Vec::new(), true)
            }
        }
    }

    fn on_event(&mut self, event: SseEvent) -> (Batch, bool) {
        let sample = event.data.clone();
        let mut out = Vec::new();
        let flow = self.assembler.on_event(event, &mut out);
        self.output |= !out.is_empty();
        let mut batch: Batch = out.into_iter().map(Ok).collect();
        match flow {
            Ok(Flow::Continue) => (batch, true),
            Ok(Flow::Skipped) => {
                self.skipped += 1;
                self.first_skipped.get_or_insert(sample);
                (batch, true)
            }
            Ok(Flow::Done) => {
                batch.push(self.complete());
                (batch, false)
            }
            Err(e) => {
                batch.push(Err(e));
                (batch, false)
            }
        }
    }

    /// What the stream held that was skipped: the assembler's skipped events and the
    /// decoder's ignored lines (the sample from the events when both have one).
    fn malformed(&self) -> Malformed {
        let count = self.skipped + self.decoder.ignored_lines();
        let first = self
            .first_skipped
            .as_deref()
            .or(self.decoder.first_ignored())
            .map(|s| scrubbed(&s.chars().take(MALFORMED_SAMPLE_CHARS).collect::<String>()))
            .unwrap_or_default();
        Malformed { count, first }
    }

    /// The end of the stream: the assembled response with its malformed count, or
    /// the error when the stream was cut short or nothing but malformed pieces came.
    fn complete(&mut self) -> Result<StreamEvent, ProviderError> {
        let malformed = self.malformed();
        if malformed.count > 0 && !self.output {
            return Err(ProviderError::new(
                ProviderErrorKind::Stream,
                &self.provider,
                format!(
                    "no usable event in the response stream: {} skipped (first: {:?})",
                    malformed.count_text(),
                    malformed.first
                ),
            ));
        }
        let mut response = self.assembler.finish()?;
        response.malformed = malformed;
        Ok(StreamEvent::Completed(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::openai_stream::ChatAssembler;
    use futures::stream;
    use proptest::prelude::*;

    /// Everything a reader of `body` yields, to the end.
    async fn read_all(
        body: BoxStream<'static, Result<Bytes, ProviderError>>,
        max_event: usize,
        limit: Option<TimeLimit>,
    ) -> Batch {
        let assembler = ChatAssembler::new("openai");
        let mut reader = BodyReader::new("openai".into(), body, assembler, max_event, limit);
        let mut all = Vec::new();
        loop {
            let (batch, more) = reader.step().await;
            all.extend(batch);
            if !more {
                return all;
            }
        }
    }

    /// Everything a reader over `chunks` yields, to the end.
    fn read(chunks: Vec<Vec<u8>>, max_event: usize) -> Batch {
        let body = stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c)))).boxed();
        futures::executor::block_on(read_all(body, max_event, None))
    }

    fn chunk(delta: &str) -> String {
        let c = serde_json::json!({"choices": [{"index": 0, "delta": {"content": delta}}]});
        format!("data: {c}\n\n")
    }

    const END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

    fn completed(batch: &Batch) -> &ProviderResponse {
        match batch.last() {
            Some(Ok(StreamEvent::Completed(r))) => r,
            other => panic!("not completed: {other:?}"),
        }
    }

    #[test]
    fn malformed_pieces_are_counted_with_the_first_one() {
        let body = format!(
            "{}: comment\n\nnot sse\n\ndata: {{\"cho\n\n{}data: 7\n\n{END}",
            chunk("a"),
            chunk("b")
        );
        let batch = read(vec![body.into_bytes()], MAX_EVENT_BYTES);
        let r = completed(&batch);
        assert_eq!(r.text(), "ab");
        assert_eq!(
            r.malformed,
            Malformed {
                count: 3,
                first: "{\"cho".into()
            }
        );
        let clean = read(
            vec![format!("{}{END}", chunk("a")).into_bytes()],
            MAX_EVENT_BYTES,
        );
        assert_eq!(completed(&clean).malformed, Malformed::default());
    }

    #[test]
    fn nothing_but_malformed_pieces_fails_even_with_done() {
        let batch = read(
            vec![b"data: nope\n\nnope\n\ndata: [DONE]\n\n".to_vec()],
            MAX_EVENT_BYTES,
        );
        let [Err(e)] = &batch[..] else {
            panic!("{batch:?}")
        };
        assert_eq!(e.kind, ProviderErrorKind::Stream);
        assert_eq!(
            e.message,
            "no usable event in the response stream: 2 malformed stream events skipped (first: \"nope\")"
        );
        // An empty but well-formed response is no error.
        let batch = read(vec![END.as_bytes().to_vec()], MAX_EVENT_BYTES);
        assert!(completed(&batch).content.is_empty());
    }

    #[test]
    fn an_event_that_never_ends_is_cut_after_the_events_before_it() {
        let mut chunks = vec![chunk("kept").into_bytes(), b"data: ".to_vec()];
        chunks.extend(std::iter::repeat_n(vec![b'x'; 100], 20));
        let batch = read(chunks, 1000);
        assert!(matches!(&batch[0], Ok(StreamEvent::TextDelta(t)) if t == "kept"));
        let Err(e) = &batch[1] else {
            panic!("{batch:?}")
        };
        assert_eq!(batch.len(), 2);
        assert!(
            e.message.contains("passed 1000 bytes without ending"),
            "{e}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_still_streaming_at_the_time_limit_is_cut_after_what_came() {
        // One delta every 10 s, for ever.
        let body = stream::unfold(0u32, |n| async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Some((Ok(Bytes::from(chunk(&format!("{n} ")))), n + 1))
        })
        .boxed();
        let started = tokio::time::Instant::now();
        let limit = TimeLimit::starting_now("openai", Duration::from_secs(35));
        let batch = read_all(body, MAX_EVENT_BYTES, Some(limit)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(35));
        let text: String = batch
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::TextDelta(t)) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "0 1 2 ");
        let Some(Err(e)) = batch.last() else {
            panic!("{batch:?}")
        };
        assert_eq!(e.kind, ProviderErrorKind::Stream);
        assert_eq!(
            e.to_string(),
            "openai: the response took too long: it was still streaming after the limit of \
             35 s (response.max_time in config.yaml) and was cut there"
        );
        let half = TimeLimit::starting_now("openai", Duration::from_millis(500));
        assert!(half.error.message.contains("limit of 0.5 s"));
    }

    proptest! {
        /// Any chunking of a stream with malformed pieces yields the same deltas,
        /// response and count.
        #[test]
        fn chunking_changes_nothing(cuts in proptest::collection::vec(0usize..600, 0..30)) {
            let body = format!("{}garbage\n\n{}data: {{oops\r\n\r\n{}{END}", chunk("h\u{e9}"), chunk(" there"), chunk("!"));
            let bytes = body.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in points {
                chunks.push(bytes[start..p].to_vec());
                start = p;
            }
            chunks.push(bytes[start..].to_vec());
            let whole = read(vec![bytes.to_vec()], MAX_EVENT_BYTES);
            prop_assert_eq!(completed(&whole).malformed.count, 2);
            prop_assert_eq!(read(chunks, MAX_EVENT_BYTES), whole);
        }
    }
}
