//! The engine handle (issue 24 item 1): `engine::Engine` takes `EngineCommand`s and
//! answers each with typed `EngineReply`s — the new root's id then the turn's outcome
//! for a `Submit` without a session, the opened session for `LoadTranscript`, typed
//! errors (`EngineError`) for what cannot be done — and a command's sink closes once
//! it is answered in full. Scripted provider, temp dirs (see `support/fixture.rs`).

use crate::support::fixture;

use arbor::engine::testing::{Drive, Step};
use arbor::engine::{Engine, EngineError, EngineReply, ModelChoiceError, Replies};
use arbor::session::protocol::{ApprovalDecision, EngineEvent};
use arbor::session::{EngineCommand, SessionStatus, StoreError};
use fixture::*;
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

fn scripted() -> Fixture {
    Fixture::new(plan(json!({})), &[], |_| vec![Step::text("an answer")])
}

/// Sends `command` to `engine`; its replies arrive on the returned channel.
fn send(engine: &Engine, command: EngineCommand) -> UnboundedReceiver<EngineReply> {
    let (tx, rx) = unbounded_channel();
    engine.execute(command, Replies::channel(tx));
    rx
}

/// The next reply (within the guard time); `None` when the command is fully answered.
async fn next(replies: &mut UnboundedReceiver<EngineReply>) -> Option<EngineReply> {
    tokio::time::timeout(GUARD, replies.recv()).await.unwrap()
}

#[tokio::test]
async fn a_submit_without_a_session_creates_one_runs_its_turn_then_closes() {
    let fx = scripted();
    let engine = fx.engine();
    let mut events = engine.subscribe();
    let mut replies = send(
        &engine,
        EngineCommand::Submit {
            session_id: None,
            agent: None,
            prompt: "hi".into(),
            cleared: false,
        },
    );
    let Some(EngineReply::SessionCreated { session_id }) = next(&mut replies).await else {
        panic!("first reply is not SessionCreated");
    };
    let Some(EngineReply::TurnFinished(outcome)) = next(&mut replies).await else {
        panic!("second reply is not TurnFinished");
    };
    assert_eq!(outcome.session_id, session_id);
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.response, "an answer");
    assert!(
        next(&mut replies).await.is_none(),
        "the sink closes after the turn"
    );
    // The bus carried the new root's start first, as a front end sees it.
    let seen = drain(&mut events);
    assert!(
        matches!(seen[0].msg, EngineEvent::SessionStart(_)),
        "{seen:?}"
    );
    assert_eq!(seen[0].session_id, session_id);

    // Opening it (live here) answers with the whole short transcript.
    let mut replies = send(
        &engine,
        EngineCommand::LoadTranscript {
            session_id: session_id.clone(),
        },
    );
    let Some(EngineReply::Opened {
        requested,
        session,
        earlier,
    }) = next(&mut replies).await
    else {
        panic!("LoadTranscript is not answered with Opened");
    };
    assert_eq!(requested, session_id.to_string());
    assert_eq!(earlier, None);
    assert_eq!(session.metadata.session_id, session_id);
    let texts: Vec<String> = session.transcript.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["hi", "an answer"]);
}

#[tokio::test]
async fn what_cannot_be_done_is_answered_with_a_typed_error() {
    let fx = scripted();
    let engine = fx.engine();
    let id = engine.create_root(None).unwrap();

    let mut replies = send(
        &engine,
        EngineCommand::LoadTranscript {
            session_id: "0badc0de-0000-4000-8000-000000000000".parse().unwrap(),
        },
    );
    match next(&mut replies).await {
        Some(EngineReply::OpenFailed {
            error: EngineError::Store(StoreError::NotFound(_)),
            ..
        }) => {}
        other => panic!("not a NotFound: {other:?}"),
    }

    let mut replies = send(
        &engine,
        EngineCommand::ResolveApproval {
            session_id: id.clone(),
            tool_call_id: "call_1".into(),
            decision: ApprovalDecision::Deny { reason: None },
        },
    );
    match next(&mut replies).await {
        Some(EngineReply::Failed {
            session_id: Some(failed),
            error: EngineError::NoPendingApproval { .. },
        }) => assert_eq!(failed, id),
        other => panic!("not a NoPendingApproval: {other:?}"),
    }
    assert!(next(&mut replies).await.is_none());

    let mut replies = send(
        &engine,
        EngineCommand::Unqueue {
            session_id: id.clone(),
            id: 7,
        },
    );
    match next(&mut replies).await {
        Some(EngineReply::NotSent {
            session_id,
            text,
            error: EngineError::NotWaiting { id: 7, .. },
        }) => {
            assert_eq!(session_id, id);
            assert_eq!(text, None);
        }
        other => panic!("not NotSent with NotWaiting: {other:?}"),
    }

    let mut replies = send(
        &engine,
        EngineCommand::SetModel {
            session_id: Some(id.clone()),
            model: "  ".into(),
        },
    );
    match next(&mut replies).await {
        Some(EngineReply::ModelSwitched {
            result: Err(EngineError::Model(ModelChoiceError::Empty)),
            warning: None,
            ..
        }) => {}
        other => panic!("not an empty model choice: {other:?}"),
    }
}
