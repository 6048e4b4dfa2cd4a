//! Deciding a compaction (issue 26 item 2): how full a request is and what to do
//! about it.
//!
//! Owns: [`measure`] (the provider's usage of the latest call plus an estimate of
//! what came after, or an estimate of the whole view) and [`plan`]: stub old tool
//! results first; if still above the target, cut at the oldest turn start that lets
//! the rest fit with a summary, keeping the newest turns verbatim; a newest turn too
//! large for the limit on its own is [`CompactError::TurnTooLarge`]; [`sizes`] of a
//! view before and after, to tell whether a compaction saved anything. Pure: no I/O,
//! no model call (`summary` writes the summary, `engine::request_view` runs it).

use crate::config::modules::CacheAccounting;
use crate::session::message::Message;

use super::CompactError;
use super::estimate;
use super::limit::Settings;
use super::view::{self, Record};

/// The most tokens a summary may take: an eighth of the limit, at most 2,000.
pub fn summary_allowance(settings: &Settings) -> u64 {
    (settings.max_tokens / 8).clamp(64, 2_000)
}

/// Tokens of the request view of `transcript` under `record`, with `fixed` tokens of
/// system prompt and tools: the provider's measured usage of the latest call made
/// after the record, plus estimates of the messages after that call; else the
/// estimate of the whole view.
pub fn measure(
    transcript: &[Message],
    record: &Record,
    fixed: u64,
    accounting: CacheAccounting,
) -> u64 {
    let measured = if record.is_empty() {
        estimate::measured(transcript, 0, accounting)
    } else {
        estimate::measured(transcript, record.at_message, accounting)
    };
    match measured {
        Some((at, tokens)) => {
            tokens
                + transcript[at + 1..]
                    .iter()
                    .enumerate()
                    .map(|(k, m)| estimate::message(&view::view_message(m, at + 1 + k, record)))
                    .sum::<u64>()
        }
        None => fixed + estimate::messages(&view::build(transcript, record)),
    }
}

/// The estimated tokens of the messages of `transcript`'s request view under the
/// record `old` and under `new`: `(before, after)`. Both are estimates (`measure`
/// mixes in the provider's own count, which a compaction not yet sent has not got):
/// a `/compact` whose `after` is not below `before` saves nothing and is not kept
/// (`engine::request_view`).
pub fn sizes(transcript: &[Message], old: &Record, new: &Record) -> (u64, u64) {
    (
        estimate::messages(&view::build(transcript, old)),
        estimate::messages(&view::build(transcript, new)),
    )
}

/// Whether a forced compaction could shrink the view of `transcript` under `record`:
/// a turn before the newest not yet summarised, or a tool result not yet stubbed.
pub fn compactable(transcript: &[Message], record: &Record) -> bool {
    let covers = record.covers.min(transcript.len());
    !view::turn_starts(transcript, covers + 1).is_empty()
        || view::stub_boundary(transcript) > record.stubbed_before
}

/// What to do before a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Send the view as it is.
    Keep,
    /// Stub more tool results (level 1): the new record, its estimated tokens.
    Stub(Record, u64),
    /// Summarise `transcript[from..cut]` (with the record's summary before it) and cut
    /// there (level 2); `record` already has `covers = cut` and the new stubs.
    Summarise {
        /// The transcript index the old summary ended at.
        from: usize,
        /// The new record, its summary still to be written.
        record: Record,
    },
}

/// The plan for `transcript` under `record`, `tokens` its measured size. `force`
/// (`/compact`, or a request the provider refused as too long): summarise everything
/// before the newest turn, whatever the size.
///
/// Errors: [`CompactError::TurnTooLarge`] when the newest turn alone (stubbed, with a
/// summary) exceeds `max_tokens`.
pub fn plan(
    transcript: &[Message],
    record: &Record,
    settings: &Settings,
    fixed: u64,
    tokens: u64,
    force: bool,
) -> Result<Plan, CompactError> {
    if !force && (tokens <= settings.threshold_tokens() || !settings.auto_compact) {
        return Ok(Plan::Keep);
    }
    let target = settings.target_tokens();
    let at_message = transcript.len();
    let stubbed = Record {
        stubbed_before: record.stubbed_before.max(view::stub_boundary(transcript)),
        at_message,
        ..record.clone()
    };
    let covers = record.covers.min(transcript.len());
    // Estimates of the messages still in the view (from `covers`) under the new
    // stubs, as suffix sums: `suffix[i - covers]` is the tokens of `transcript[i..]`.
    let per: Vec<u64> = transcript[covers..]
        .iter()
        .enumerate()
        .map(|(k, m)| estimate::message(&view::view_message(m, covers + k, &stubbed)))
        .collect();
    let mut suffix = vec![0u64; per.len() + 1];
    for i in (0..per.len()).rev() {
        suffix[i] = suffix[i + 1] + per[i];
    }
    let from = |i: usize| suffix[i - covers];
    let old_summary = record.summary.as_ref().map_or(0, |s| {
        estimate::messages(&view::summary_messages(s, covers))
    });
    let stub_only = fixed + old_summary + from(covers);
    if !force && stub_only <= target && stubbed.stubbed_before != record.stubbed_before {
        return Ok(Plan::Stub(stubbed, stub_only));
    }
    let allowance = summary_allowance(settings);
    let starts = view::turn_starts(transcript, covers + 1);
    let Some(&newest) = starts.last() else {
        // One turn only: nothing before it to summarise.
        return only_newest(stub_only, settings, stubbed, record);
    };
    // Forced (`/compact`, or the provider counted more than the estimate): all but
    // the newest turn. Else the oldest cut that fits the target.
    let fits = |c: &usize| fixed + allowance + from(*c) <= target;
    let cut = match force {
        true => newest,
        false => starts.iter().copied().find(fits).unwrap_or(newest),
    };
    let after = fixed + allowance + from(cut);
    if after > settings.max_tokens {
        return Err(CompactError::TurnTooLarge {
            tokens: after,
            max_tokens: settings.max_tokens,
        });
    }
    Ok(Plan::Summarise {
        from: covers,
        record: Record {
            covers: cut,
            ..stubbed
        },
    })
}

/// The plan when nothing precedes the newest turn: stubbing is all there is.
fn only_newest(
    tokens: u64,
    settings: &Settings,
    stubbed: Record,
    record: &Record,
) -> Result<Plan, CompactError> {
    if tokens > settings.max_tokens {
        return Err(CompactError::TurnTooLarge {
            tokens,
            max_tokens: settings.max_tokens,
        });
    }
    Ok(if stubbed.stubbed_before == record.stubbed_before {
        Plan::Keep
    } else {
        Plan::Stub(stubbed, tokens)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max: u64) -> Settings {
        Settings {
            max_tokens: max,
            compact_threshold: 0.8,
            auto_compact: true,
        }
    }

    /// `turns` turns of a user message and an answer, each `chars` long.
    fn chat(turns: usize, chars: usize) -> Vec<Message> {
        let mut t = Vec::new();
        for i in 0..turns {
            t.push(Message::user(format!("{i}{}", "q".repeat(chars))));
            t.push(Message::Assistant(
                crate::session::message::AssistantMessage {
                    content: vec![crate::session::message::ContentBlock::Text {
                        text: "a".repeat(chars).into(),
                    }],
                    ..Default::default()
                },
            ));
        }
        t
    }

    #[test]
    fn below_threshold_keeps_and_above_cuts_at_a_turn_keeping_the_newest() {
        let s = settings(4000);
        let t = chat(8, 1600); // ~400 tokens a message, ~6,400 in all
        let tokens = estimate::messages(&t);
        assert_eq!(
            plan(&t, &Record::default(), &s, 0, 100, false).unwrap(),
            Plan::Keep
        );
        let Plan::Summarise { from, record } =
            plan(&t, &Record::default(), &s, 0, tokens, false).unwrap()
        else {
            panic!("expected a summary");
        };
        assert_eq!(from, 0);
        assert!(matches!(t[record.covers], Message::User(_)));
        // What is kept fits the target with the summary's allowance.
        let kept = estimate::messages(&t[record.covers..]);
        assert!(kept + summary_allowance(&s) <= s.target_tokens(), "{kept}");
        assert!(record.covers >= 2 && record.covers < t.len());
    }

    #[test]
    fn auto_compact_off_keeps_and_a_huge_newest_turn_is_an_error() {
        let mut s = settings(4000);
        let t = chat(2, 20_000);
        s.auto_compact = false;
        assert_eq!(
            plan(&t, &Record::default(), &s, 0, 99_999, false).unwrap(),
            Plan::Keep
        );
        s.auto_compact = true;
        let err = plan(&t, &Record::default(), &s, 0, 99_999, false).unwrap_err();
        assert!(matches!(err, CompactError::TurnTooLarge { .. }), "{err}");
    }

    #[test]
    fn a_summary_longer_than_the_turns_it_covers_saves_nothing() {
        let s = settings(100_000);
        let t = chat(4, 400);
        let Plan::Summarise { mut record, .. } =
            plan(&t, &Record::default(), &s, 0, 10, true).unwrap()
        else {
            panic!("expected a summary");
        };
        record.summary = Some("short summary".into());
        let (before, after) = sizes(&t, &Record::default(), &record);
        assert!(after < before, "{after} >= {before}");
        record.summary = Some("long summary ".repeat(1000));
        let (before, after) = sizes(&t, &Record::default(), &record);
        assert!(after >= before, "{after} < {before}");
    }

    #[test]
    fn forced_summarises_all_but_the_newest_turn_even_when_small() {
        let s = settings(100_000);
        let t = chat(4, 40);
        let Plan::Summarise { record, .. } = plan(&t, &Record::default(), &s, 0, 10, true).unwrap()
        else {
            panic!("expected a summary");
        };
        assert_eq!(record.covers, 6, "the newest turn starts at 6");
    }
}
