//! SSE decode throughput (SPEC §16): `provider::sse::SseDecoder` over a generated 8 MB
//! OpenAI Chat Completions stream (real-sized `chat.completion.chunk` events carrying
//! one- or two-word deltas), fed in network-sized chunks; and the same events also
//! parsed as JSON, as the OpenAI client does with each one.
//! Run: `cargo bench --bench sse`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use arbor::provider::sse::{SseDecoder, SseEvent};
use divan::Bencher;
use divan::counter::BytesCount;

const STREAM_BYTES: usize = 8 << 20;

fn main() {
    divan::main();
}

fn decode(body: &[u8], chunk: usize, mut each: impl FnMut(&SseEvent)) -> usize {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::with_capacity(64);
    let mut events = 0;
    for piece in body.chunks(chunk) {
        decoder.push(piece, &mut out);
        events += out.len();
        out.iter().for_each(&mut each);
        out.clear();
    }
    events + usize::from(decoder.finish().is_some())
}

/// Decoding only, with the body arriving in `chunk`-byte reads.
#[divan::bench(args = [1_400, 16_384], sample_count = 20)]
fn sse_decode(bencher: Bencher, chunk: usize) {
    let body = generate::openai_stream(STREAM_BYTES);
    let expected = decode(&body, body.len(), |_| {});
    assert!(expected > 10_000);
    bencher
        .counter(BytesCount::new(body.len()))
        .bench(|| assert_eq!(decode(&body, chunk, |_| {}), expected));
}

/// Decoding plus `serde_json` parsing of every event's data (16 KiB reads).
#[divan::bench(sample_count = 20)]
fn sse_decode_and_parse_json(bencher: Bencher) {
    let body = generate::openai_stream(STREAM_BYTES);
    bencher.counter(BytesCount::new(body.len())).bench(|| {
        let mut parsed = 0usize;
        decode(&body, 16_384, |ev| {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&ev.data) {
                parsed += usize::from(v.is_object());
            }
        });
        parsed
    });
}
