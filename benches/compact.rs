//! Compaction's own cost (issue 26): for a 100k-message session (the generated coding
//! session of `common/generate.rs`: user → assistant with a tool call → ~1.5 KB tool
//! result → answer), what deciding and building the compacted request view take, and
//! what a summary pass costs in time (with an instant scripted model) and in extra
//! tokens sent to the model.
//!
//! Divan times the pure steps: `measure` (how full the view is; every model call),
//! `plan_cut` (where to cut, one pass of suffix sums; a never-compacted session) and
//! `plan_cut_steady` (the same for a session compacted as it grew: only the part
//! still in the view is estimated), and `view_build` (the compacted view under a
//! record; every model call once compacted). After divan's table a report prints, for a
//! 128,000-token limit (GPT-4o) at the default threshold, the two cases a session
//! meets: `cold` — a 100k-message session never compacted (an Amplifier session
//! resumed in arbor) summarised in one go — and `steady` — a session compacted as it
//! grew, whose next compaction summarises only what came since the last one. For
//! each: wall time of the whole compaction (plan + summary calls + view), summary
//! calls, extra input and output tokens (≈ chars / 4 of what the summariser was
//! sent and answered), and the view's tokens before → after.
//! Run: `cargo bench --bench compact`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use std::sync::Arc;
use std::time::Instant;

use arbor::engine::compact::summary::Summariser;
use arbor::engine::compact::{Plan, Record, Settings, estimate, plan, view};
use arbor::engine::testing::{ScriptedProvider, Step};
use arbor::provider::Provider;
use arbor::session::Message;
use divan::Bencher;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const MESSAGES: usize = 100_000;

/// GPT-4o's window, arbor's default threshold.
fn settings() -> Settings {
    Settings {
        max_tokens: 128_000,
        compact_threshold: 0.8,
        auto_compact: true,
    }
}

fn transcript(n: usize) -> Vec<Message> {
    (0..n).map(generate::message).collect()
}

fn main() {
    divan::main();
    report();
}

#[divan::bench(args = [MESSAGES], sample_count = 10)]
fn measure(bencher: Bencher, n: usize) {
    let t = transcript(n);
    let record = steady_record(&t);
    bencher.bench(|| {
        plan::measure(
            &t,
            &record,
            500,
            arbor::config::modules::CacheAccounting::IncludedInInput,
        )
    });
}

#[divan::bench(args = [MESSAGES], sample_count = 10)]
fn plan_cut(bencher: Bencher, n: usize) {
    let t = transcript(n);
    let s = settings();
    bencher.bench(|| plan::plan(&t, &Record::default(), &s, 500, u64::MAX / 2, false).unwrap());
}

/// The same decision for a session that compacted as it grew (its record covers all
/// but the newest part): only the part still in the view is estimated.
#[divan::bench(args = [MESSAGES], sample_count = 10)]
fn plan_cut_steady(bencher: Bencher, n: usize) {
    let t = transcript(n);
    let record = steady_record(&t[..n - 800]);
    let s = settings();
    bencher.bench(|| plan::plan(&t, &record, &s, 500, u64::MAX / 2, false).unwrap());
}

#[divan::bench(args = [MESSAGES], sample_count = 10)]
fn view_build(bencher: Bencher, n: usize) {
    let t = transcript(n);
    let record = steady_record(&t);
    bencher.bench(|| view::build(&t, &record));
}

/// A record as a session that compacted while it grew has it: summary written, the
/// view holding the newest ~60% of the limit.
fn steady_record(t: &[Message]) -> Record {
    let s = settings();
    let keep = s.threshold_tokens() * 3 / 4;
    let mut tokens = 0;
    let mut covers = t.len();
    while covers > 0 && tokens + estimate::message(&t[covers - 1]) <= keep {
        covers -= 1;
        tokens += estimate::message(&t[covers]);
    }
    while covers < t.len() && !matches!(t[covers], Message::User(_)) {
        covers += 1;
    }
    Record {
        summary: Some(generate::words(1, 900)),
        covers,
        stubbed_before: view::stub_boundary(t),
        at_message: t.len(),
    }
}

/// One compaction as the engine runs it (plan, summary calls, view), timed, with its
/// token counts.
struct Measured {
    secs: f64,
    calls: usize,
    extra_input: u64,
    extra_output: u64,
    before: u64,
    after: u64,
    covered: usize,
}

fn compact_once(t: &[Message], old: &Record) -> Measured {
    let s = settings();
    let provider = ScriptedProvider::new(|_| vec![Step::text(generate::words(7, 900))]);
    let dynp: Arc<dyn Provider> = Arc::new(provider.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = Value::Null;
    let before = 500 + estimate::messages(&view::build(t, old));
    let started = Instant::now();
    let step = plan::plan(t, old, &s, 500, before, false).unwrap();
    let (from, mut record) = match step {
        Plan::Summarise { from, record } => (from, record),
        // Stubbing old tool results was enough: no model call.
        Plan::Stub(_, after) => {
            return Measured {
                secs: started.elapsed().as_secs_f64(),
                calls: 0,
                extra_input: 0,
                extra_output: 0,
                before,
                after,
                covered: 0,
            };
        }
        Plan::Keep => panic!("below the threshold: nothing to measure"),
    };
    let summariser = Summariser {
        provider: &dynp,
        config: &config,
        model: String::new(),
        max_tokens: s.max_tokens,
        allowance: plan::summary_allowance(&s),
    };
    let summary = rt
        .block_on(summariser.summarise(
            old.summary.as_deref(),
            &t[from..record.covers],
            None,
            &CancellationToken::new(),
        ))
        .unwrap();
    record.summary = Some(summary.text);
    let after = 500 + estimate::messages(&view::build(t, &record));
    let secs = started.elapsed().as_secs_f64();
    let requests = provider.requests();
    let extra_input = requests
        .iter()
        .map(|r| estimate::of_chars(r.system.len()) + estimate::messages(&r.messages))
        .sum();
    let extra_output = requests.len() as u64 * estimate::of_chars(generate::words(7, 900).len());
    Measured {
        secs,
        calls: requests.len(),
        extra_input,
        extra_output,
        before,
        after,
        covered: record.covers - from,
    }
}

fn report() {
    let t = transcript(MESSAGES);
    let all = estimate::messages(&t);
    println!(
        "\ncompaction of a {MESSAGES}-message session ({all} tokens estimated), limit 128000, threshold 0.8:"
    );
    println!(
        "{:<7} {:>9} {:>6} {:>12} {:>12} {:>10} {:>22}",
        "case", "time", "calls", "extra in", "extra out", "summarised", "view tokens"
    );
    // Steady: the record of the compaction before, then the session grew until its
    // view crossed the threshold again.
    let s = settings();
    let mut grown = 100;
    let steady = loop {
        let old = steady_record(&t[..t.len() - grown]);
        let tokens = 500 + estimate::messages(&view::build(&t, &old));
        if tokens > s.threshold_tokens() {
            break old;
        }
        grown += 100;
    };
    for (case, old) in [("cold", Record::default()), ("steady", steady)] {
        let m = compact_once(&t, &old);
        println!(
            "{case:<7} {:>7.1}ms {:>6} {:>12} {:>12} {:>10} {:>22}",
            m.secs * 1000.0,
            m.calls,
            m.extra_input,
            m.extra_output,
            m.covered,
            format!("{} → {}", m.before, m.after)
        );
    }
}
