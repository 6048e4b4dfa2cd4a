//! The stored sub-sessions a remote run's job carries to its worker (issue 38 item 7,
//! `Job::subtree`): every session below the child in the root's store, each with its
//! metadata and transcript, so that the worker's engine finds one a `task` call
//! resumes by id.
//!
//! Owns: finding and reading them ([`subtree_of`]; an unreadable one is left out and
//! logged: the run goes on, and resuming that one fails on the worker as "not found"),
//! each one's delegation calls ([`task_calls_of`], `wire::TaskCalls`: the worker's
//! crash repair links a call to its sub-session by them; a redelivery's sync answer
//! carries the session's own, [`now`]) and packing them for the job ([`for_job`]).
//! Does not own: the rest of the job (`dispatch`), what the worker does with them
//! (`worker::job::setup`), applying what comes back (`apply`).

use async_nats::jetstream::object_store::ObjectStore;

use crate::engine::env::TurnEnv;
use crate::engine::live::LiveSession;
use crate::remote::wire::{self, CarriedSession, TaskCalls};
use crate::remote::{Payload, RemoteError};
use crate::session::tree::{build_tree, subtree_ids};
use crate::session::{SessionId, SessionStore};

/// The job's `subtree` for run `run` of `session` — `None` when `delegated` is false
/// (a session without a transcript has no sub-sessions) or it has none; packed into
/// `payloads` when large — and the ids of the sessions it carries. The session's own
/// calls are all answered by then: the root repairs a session before its turn, remote
/// or not.
///
/// Errors: the object store refuses the payload, or the session id is no subject token.
pub(super) async fn for_job(
    env: &TurnEnv,
    payloads: &ObjectStore,
    (session, run): (&str, u64),
    delegated: bool,
) -> Result<(Option<Payload<Vec<CarriedSession>>>, Vec<SessionId>), RemoteError> {
    if !delegated {
        return Ok((None, Vec::new()));
    }
    let (store, id) = (
        SessionStore::new(env.paths.sessions_dir()),
        session.to_string(),
    );
    let carried = tokio::task::spawn_blocking(move || subtree_of(&store, &id))
        .await
        .unwrap_or_default();
    let ids = carried
        .iter()
        .map(|c| c.metadata.session_id.clone())
        .collect();
    let name = format!("{}-{run}-subtree", wire::token(session)?);
    Ok((packed(payloads, &name, carried).await?, ids))
}

/// `items` as a payload under `name` (`Payload::pack`); `None` when there are none.
///
/// Errors: the object store refuses the payload.
async fn packed<T>(
    payloads: &ObjectStore,
    name: &str,
    items: Vec<T>,
) -> Result<Option<Payload<Vec<T>>>, RemoteError>
where
    Vec<T>: serde::Serialize + serde::de::DeserializeOwned,
{
    if items.is_empty() {
        return Ok(None);
    }
    Ok(Some(Payload::pack(payloads, name, items).await?))
}

/// Session `id`'s delegation calls in `store` (`SessionStore::task_calls`), each
/// `tool_input` emptied (the instruction is in the transcript already); none when they
/// cannot be read (logged: the worker's repair then answers such a call "cancelled").
pub(super) fn task_calls_of(store: &SessionStore, id: &str) -> TaskCalls {
    match store.task_calls(id) {
        Ok(mut calls) => {
            for call in &mut calls {
                call.tool_input = serde_json::Value::Null;
            }
            calls
        }
        Err(e) => {
            tracing::warn!(session = id, "its task calls are not carried: {e}");
            Vec::new()
        }
    }
}

/// What a redelivered job's sync answer carries besides the session itself
/// (`SyncReply::subtree`, `SyncReply::task_calls`), each packed when large.
type Now = (
    Option<Payload<Vec<CarriedSession>>>,
    Option<Payload<TaskCalls>>,
);

/// The sub-sessions of `child` as the root's store holds them now, packed into
/// `payloads` under `<name>-subtree` when large, and the child's delegation calls,
/// under `<name>-calls`; each `None` when it has none.
///
/// Errors: the object store refuses a payload.
pub(super) async fn now(
    payloads: &ObjectStore,
    child: &LiveSession,
    name: &str,
) -> Result<Now, RemoteError> {
    let Some(sessions) = child.dir().parent().map(SessionStore::new) else {
        return Ok((None, None));
    };
    let id = child.id.to_string();
    let (carried, task_calls) = tokio::task::spawn_blocking(move || {
        (subtree_of(&sessions, &id), task_calls_of(&sessions, &id))
    })
    .await
    .unwrap_or_default();
    Ok((
        packed(payloads, &format!("{name}-subtree"), carried).await?,
        packed(payloads, &format!("{name}-calls"), task_calls).await?,
    ))
}

/// Every session below `child` in `store` (its sub-sessions, theirs, …), parents
/// before their children; empty when it has none or the store cannot be listed.
pub(super) fn subtree_of(store: &SessionStore, child: &str) -> Vec<CarriedSession> {
    let list = match store.list() {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!(
                session = child,
                "cannot list the store for the job's sub-sessions: {e}"
            );
            return Vec::new();
        }
    };
    // The child itself comes first: it is the job's own session.
    let below = subtree_ids(&build_tree(list), child).into_iter().skip(1);
    below
        .filter_map(|id| match store.load(&id) {
            Ok(loaded) => Some(CarriedSession {
                task_calls: task_calls_of(store, &id),
                metadata: loaded.metadata,
                transcript: loaded.transcript,
            }),
            Err(e) => {
                tracing::warn!(
                    session = child,
                    other = id,
                    "a sub-session left out of the job (the worker cannot resume it): {e}"
                );
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::{EngineEvent, Event, TaskCallFields, ToolPreEvent};
    use crate::session::{Message, Metadata};

    fn stored(store: &SessionStore, id: &str, parent: Option<&str>) {
        let metadata = Metadata {
            session_id: id.into(),
            parent_id: parent.map(Into::into),
            config: Some(serde_json::json!({})),
            ..Default::default()
        };
        let mut writer = store.create(&metadata).unwrap();
        writer
            .append_message(&Message::user(format!("I am {id}")))
            .unwrap();
    }

    #[test]
    fn the_subtree_below_the_child_comes_whole_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let root = "0123456789abcdef";
        let child = "0123456789abcdef-1111111111111111_helper";
        let grandchild = "1111111111111111-2222222222222222_scout";
        let great = "2222222222222222-3333333333333333_scout";
        let other = "0123456789abcdef-4444444444444444_helper";
        stored(&store, root, None);
        stored(&store, child, Some(root));
        stored(&store, grandchild, Some(child));
        stored(&store, great, Some(grandchild));
        stored(&store, other, Some(root));
        // The grandchild delegated to the great-grandchild: the call goes with it, its
        // input left behind (the transcript has it).
        let call = ToolPreEvent {
            tool_name: "task".into(),
            tool_call_id: "call_1".into(),
            tool_input: serde_json::json!({"agent": "scout", "instruction": "dig"}),
            task: Some(TaskCallFields {
                sub_session_id: great.into(),
                parent_session_id: grandchild.into(),
                depth: 3,
            }),
        };
        let mut writer = store.open(grandchild).unwrap();
        let event = Event::new(grandchild, Some(child), EngineEvent::ToolPre(call.clone()));
        writer.append_event(&event).unwrap();
        drop(writer);
        let carried = subtree_of(&store, child);
        let ids: Vec<&str> = carried
            .iter()
            .map(|c| c.metadata.session_id.as_str())
            .collect();
        assert_eq!(ids, [grandchild, great]);
        assert_eq!(carried[1].transcript[0].text(), format!("I am {great}"));
        let carried_call = ToolPreEvent {
            tool_input: serde_json::Value::Null,
            ..call
        };
        assert_eq!(carried[0].task_calls, [carried_call]);
        assert!(carried[1].task_calls.is_empty());
        assert!(subtree_of(&store, other).is_empty());
        assert!(subtree_of(&store, "ffffffffffffffff").is_empty());
    }
}
