//! What a front end asks to read, through the engine handle (issue 36 item 4):
//! `Engine::ask` answers each `EngineQuery` with the `QueryReply` of its name — an id
//! resolved (a miss said in full, with the project searched), the listing with its
//! unreadable directories and, across projects, each session's project, one session
//! with its children, what it changed, its export as text — and `ForkSessionAs`
//! forks with a title (never an id). No store is opened by the test's "front end". Scripted
//! provider, temp dirs (see `support/fixture.rs`).

use crate::support::fixture;

use arbor::engine::handle::diff::SessionChanges;
use arbor::engine::handle::undo::UndoDone;
use arbor::engine::testing::{Drive, Step};
use arbor::engine::{Engine, EngineError, EngineReply, QueryReply, Replies};
use arbor::session::protocol::ExportFormat;
use arbor::session::{EngineCommand, EngineQuery, SessionId};
use fixture::*;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

/// A project with one root that ran one turn, a directory that cannot be read, and
/// the engine over it.
async fn project() -> (Fixture, Engine, SessionId, &'static str) {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("an answer")]);
    let engine = fx.engine();
    let root = engine.create_root(None).unwrap();
    engine.run_turn(&root, "hi".into()).await.unwrap();
    let broken = "11111111-1111-4111-8111-111111111111";
    std::fs::create_dir_all(fx.session_dir(broken)).unwrap();
    std::fs::write(fx.session_dir(broken).join("metadata.json"), "garbage").unwrap();
    (fx, engine, root, broken)
}

async fn resolve(engine: &Engine, id: &str) -> Result<SessionId, EngineError> {
    let query = EngineQuery::ResolveSession { id: id.into() };
    match engine.ask(query).await {
        QueryReply::ResolveSession(result) => result,
        other => panic!("not ResolveSession: {other:?}"),
    }
}

#[tokio::test]
async fn an_id_resolves_by_prefix_and_a_miss_names_the_project_searched() {
    let (fx, engine, root, _) = project().await;
    assert_eq!(resolve(&engine, &root.as_str()[..8]).await.unwrap(), root);
    let missing = "99999999-0000-4000-8000-000000000000";
    let error = resolve(&engine, missing).await.unwrap_err();
    assert!(
        matches!(&error, EngineError::SessionNotFound { id, .. } if id == missing),
        "{error:?}"
    );
    let text = error.to_string();
    let project = format!(
        "Root session '{missing}' not found. Looked among the sessions of project {} ({});",
        fx.paths.cwd.display(),
        fx.paths.sessions_dir().display()
    );
    assert!(text.starts_with(&project), "{text}");
    assert!(
        text.ends_with("for every project's sessions: arbor session list --all-projects"),
        "{text}"
    );
    let sub = "0123456789abcdef-fedcba9876543210_x";
    assert!(
        resolve(&engine, sub)
            .await
            .unwrap_err()
            .to_string()
            .starts_with(&format!(
                "Sub-session '{sub}' not found. It may have expired"
            )),
    );
}

#[tokio::test]
async fn the_listing_keeps_unreadable_directories_and_names_projects_across_them() {
    let (_fx, engine, root, broken) = project().await;
    let QueryReply::ListSessions(Ok(here)) = engine
        .ask(EngineQuery::ListSessions {
            all_projects: false,
        })
        .await
    else {
        panic!("this project's listing failed");
    };
    let ids: Vec<&str> = here
        .sessions
        .iter()
        .map(|m| m.session_id.as_str())
        .collect();
    assert_eq!(ids, [root.as_str()]);
    assert_eq!(here.projects, None);
    assert_eq!(here.unreadable.len(), 1);
    assert_eq!(here.unreadable[0].session_id.as_str(), broken);
    assert!(
        here.unreadable[0]
            .reason
            .contains("metadata.json unreadable"),
        "{:?}",
        here.unreadable
    );

    let QueryReply::ListSessions(Ok(all)) = engine
        .ask(EngineQuery::ListSessions { all_projects: true })
        .await
    else {
        panic!("every project's listing failed");
    };
    assert_eq!(all.sessions.len(), 1);
    let working_dir = all.sessions[0].working_dir.clone().unwrap();
    assert_eq!(all.projects, Some(vec![working_dir]));
    assert_eq!(all.unreadable.len(), 1);
}

#[tokio::test]
async fn a_session_is_shown_changed_and_exported_as_text() {
    let (_fx, engine, root, _) = project().await;
    let QueryReply::ShowSession(Ok(shown)) = engine
        .ask(EngineQuery::ShowSession {
            session_id: root.clone(),
        })
        .await
    else {
        panic!("show failed");
    };
    assert_eq!(shown.session.metadata.session_id, root);
    let texts: Vec<String> = shown.session.transcript.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["hi", "an answer"]);
    assert!(shown.children.is_empty());
    // An arbor root stores its config: nothing to rebuild.
    assert_eq!(shown.rebuild_note, None);

    let QueryReply::LoadChanges(Ok(changes)) = engine
        .ask(EngineQuery::LoadChanges {
            session_id: root.clone(),
            subtree: false,
        })
        .await
    else {
        panic!("changes failed");
    };
    match changes {
        SessionChanges::Rebuilt { diffs, below } => {
            assert!(diffs.iter().all(|d| d.files.is_empty()), "{diffs:?}");
            assert!(below.is_empty());
        }
        other => panic!("no worktree, yet {other:?}"),
    }

    for (format, start) in [
        (ExportFormat::Markdown, "# Session export: `"),
        (ExportFormat::Json, "{"),
    ] {
        let QueryReply::ExportSession(Ok(text)) = engine
            .ask(EngineQuery::ExportSession {
                session_id: root.clone(),
                format,
            })
            .await
        else {
            panic!("export as {format:?} failed");
        };
        assert!(text.starts_with(start), "{text}");
        assert!(text.contains("an answer"), "{text}");
    }
}

#[tokio::test]
async fn fork_session_as_titles_the_fork_with_a_new_id() {
    let (_fx, engine, root, _) = project().await;
    let (tx, mut rx) = unbounded_channel();
    engine.execute(
        EngineCommand::ForkSessionAs {
            session_id: root.clone(),
            at_turn: None,
            title: "my fork".into(),
        },
        Replies::channel(tx),
    );
    let reply = tokio::time::timeout(GUARD, rx.recv()).await.unwrap();
    let Some(EngineReply::Undone {
        result: Ok(UndoDone::Forked { forked, rewound }),
        ..
    }) = reply
    else {
        panic!("not forked: {reply:?}");
    };
    assert_ne!(forked.session_id.as_str(), "my fork");
    assert_eq!(forked.parent_id, root);
    assert_eq!(rewound, None);
    let QueryReply::ShowSession(Ok(shown)) = engine
        .ask(EngineQuery::ShowSession {
            session_id: forked.session_id.clone(),
        })
        .await
    else {
        panic!("show failed");
    };
    assert_eq!(shown.session.metadata.name.as_deref(), Some("my fork"));
}
