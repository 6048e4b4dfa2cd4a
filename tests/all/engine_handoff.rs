//! One parsed copy of a transcript (issue #16 item 3): a viewer's parsed transcript
//! parked in the engine is what a resumed turn runs over (no second parse while the
//! file's length holds), and a live session's snapshot shares the engine's texts.
//! Scripted provider, temp dirs (see `engine/fixture.rs`).

use crate::support::fixture;

use arbor::engine::testing::{Drive, Step};
use arbor::session::message::{Message, Text};
use arbor::session::store::ParsedTranscript;
use arbor::session::{SessionStatus, SessionStore};
use fixture::*;
use serde_json::json;

/// A stored root session with one answered turn (`"first question"` → `"an answer"`),
/// in no process; its id.
async fn stored_session(fx: &Fixture) -> String {
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "first question".into()).await.unwrap();
    id.into_string()
}

fn scripted() -> Fixture {
    Fixture::new(plan(json!({})), &[], |_| vec![Step::text("an answer")])
}

/// What the TUI hands over after its tail-first open of `id` (whole: a short
/// transcript has no earlier part).
fn viewer_parse(fx: &Fixture, id: &str) -> ParsedTranscript {
    let open = SessionStore::new(fx.paths.sessions_dir())
        .load_tail_covering(id, 100)
        .unwrap();
    assert!(open.earlier.is_none());
    ParsedTranscript {
        messages: open.session.transcript,
        warnings: open.transcript_warnings,
        covers: open.covers,
    }
}

/// Rewrites `from` to `to` in `id`'s transcript file.
fn rewrite(fx: &Fixture, id: &str, from: &str, to: &str) {
    let path = fx.session_dir(id).join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from));
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

/// The texts of the messages the model was sent in request `n`.
fn sent(fx: &Fixture, n: usize) -> Vec<String> {
    fx.provider.requests()[n]
        .messages
        .iter()
        .map(Message::text)
        .collect()
}

#[tokio::test]
async fn a_turn_runs_over_the_parked_transcript_without_parsing_the_file_again() {
    let fx = scripted();
    let id = stored_session(&fx).await;
    let rt = fx.engine();
    rt.park_transcript(&id, viewer_parse(&fx, &id));
    assert_eq!(rt.parked_transcript(), Some(id.clone()));
    // Same length, other bytes: only a parse of the file would see "FIRST".
    rewrite(&fx, &id, "first question", "FIRST question");
    let out = rt.run_turn(&id, "second".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(sent(&fx, 1), ["first question", "an answer", "second"]);
    assert_eq!(rt.parked_transcript(), None, "taken by the resume");
}

#[tokio::test]
async fn a_transcript_that_grew_since_parking_is_parsed_again() {
    let fx = scripted();
    let id = stored_session(&fx).await;
    let rt = fx.engine();
    rt.park_transcript(&id, viewer_parse(&fx, &id));
    rewrite(&fx, &id, "first question", "first question, longer");
    rt.run_turn(&id, "second".into()).await.unwrap();
    assert_eq!(
        sent(&fx, 1),
        ["first question, longer", "an answer", "second"]
    );
}

#[tokio::test]
async fn parking_another_session_drops_the_first() {
    let fx = scripted();
    let a = stored_session(&fx).await;
    let b = stored_session(&fx).await;
    let rt = fx.engine();
    rt.park_transcript(&a, viewer_parse(&fx, &a));
    rt.park_transcript(&b, viewer_parse(&fx, &b));
    assert_eq!(rt.parked_transcript(), Some(b.clone()));
    rewrite(&fx, &a, "first question", "FIRST question");
    rt.run_turn(&a, "second".into()).await.unwrap();
    assert_eq!(sent(&fx, 2), ["FIRST question", "an answer", "second"]);
    assert_eq!(
        rt.parked_transcript(),
        Some(b),
        "another session's stays parked"
    );
}

#[tokio::test]
async fn a_live_sessions_snapshot_shares_the_engines_texts() {
    let fx = scripted();
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    assert!(rt.transcript_snapshot("nope").is_none());
    rt.run_turn(&id, "first question".into()).await.unwrap();
    let first = rt.transcript_snapshot(&id).unwrap();
    let Message::User(user) = &first[0] else {
        panic!("{first:?}")
    };
    let text: Text = user.content.clone();
    assert_eq!(text, "first question");
    // A live session ignores a parked transcript: the engine has its copy.
    rt.park_transcript(&id, ParsedTranscript::default());
    assert_eq!(rt.parked_transcript(), None);
    // A turn while the snapshot is alive copies the list, never the texts.
    rt.run_turn(&id, "second".into()).await.unwrap();
    let second = rt.transcript_snapshot(&id).unwrap();
    assert_eq!(second.len(), 4);
    let Message::User(again) = &second[0] else {
        panic!("{second:?}")
    };
    assert!(Text::ptr_eq(&again.content, &text));
    assert!(!std::sync::Arc::ptr_eq(&first, &second));
}
