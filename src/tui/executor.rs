//! Executes the `App`'s engine commands against the real `Runtime` and store, each in
//! its own task, reporting back as `AppEvent`s.
//!
//! Owns: the mapping command → runtime/store calls, opening a session (tail-first,
//! from the engine's own transcript when it is live here, else from the store, the
//! whole parse then handed to the engine: one parsed copy per process; a stored one is
//! then followed for what another process appends, `follow`), ending every
//! turn when the TUI quits (`Executor::shutdown` → `Runtime::shutdown`), and that
//! every command is answered: a panic in a store call comes back as a
//! `CommandFailed`/error result (a panic in a turn is already a failed turn or an
//! error of `Runtime::run_turn`). Does not own: the runtime itself, or the cells
//! (`state::thread_earlier`).

use crate::session::ids::SessionId;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;

use super::app_event::{AppEvent, EngineCommand};
use super::follow::{FollowSpec, TranscriptFollow};
use super::runloop::Executor;
use crate::engine::{EngineError, RootOptions, Runtime, TurnOutcome, panics};
use crate::session::store::{ParsedTranscript, TailLoad};
use crate::session::{LoadedSession, Message, Metadata, SessionStore};
use crate::tool::filesystem::changes::session_diffs;
use crate::tui::state::thread_earlier::EarlierCells;

/// Runs commands on `runtime`; reads transcripts and listings from `store`; follows
/// the open stored session's transcript (`follow`).
pub struct RuntimeExecutor {
    pub runtime: Arc<Runtime>,
    pub store: SessionStore,
    follow: Arc<TranscriptFollow>,
}

impl RuntimeExecutor {
    /// An executor over `runtime` and `store`, following no transcript yet.
    pub fn new(runtime: Arc<Runtime>, store: SessionStore) -> Self {
        Self {
            runtime,
            store,
            follow: Arc::default(),
        }
    }
}

fn send(tx: &UnboundedSender<AppEvent>, ev: AppEvent) {
    if tx.send(ev).is_err() {
        tracing::debug!("tui gone; dropping a command result");
    }
}

/// Runs `work` (a store or runtime call on a blocking thread); a panic in it becomes
/// the error `internal error: <what> panicked: …` (and a log line), so the app always
/// hears back.
fn guarded<T>(what: &str, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    panics::catch_blocking(what, work)
        .unwrap_or_else(|message| Err(format!("internal error: {what} panicked: {message}")))
}

/// Messages read first when a thread opens: the newest screenful with a wide margin
/// (a 45-row pane shows at most 45 of them).
const TAIL_MESSAGES: usize = 256;

/// Opens a session tail-first (SPEC §16): sends its newest messages
/// (`TranscriptTailLoaded`, or `TranscriptLoaded` when they are all of it), then the
/// earlier part as cells (`EarlierLoaded`). Runs on a blocking thread.
///
/// One parsed copy per process (issue #16 item 3): a session live in this process is
/// laid out from the engine's own transcript (`Runtime::transcript_snapshot`), the
/// file is not read; a stored one is read from the file, and its whole parsed
/// transcript (the earlier part's messages and the tail's, clones sharing every text
/// with the cells) is handed to the engine (`Runtime::park_transcript`) before the
/// last part is sent, so a turn over it parses nothing again.
fn load_tail_first(
    runtime: &Arc<Runtime>,
    store: &SessionStore,
    follow: &TranscriptFollow,
    requested: String,
    results: &UnboundedSender<AppEvent>,
) {
    let opened = guarded("loading a session", || {
        let id = store.resolve(&requested).map_err(|e| e.to_string())?;
        match runtime.transcript_snapshot(&id) {
            Some(live) => {
                let (metadata, warnings) = store.load_metadata(&id).map_err(|e| e.to_string())?;
                Ok(Opened::Live(id, live, Box::new(metadata), warnings))
            }
            None => store
                .load_tail_covering(&id, TAIL_MESSAGES)
                .map(|load| Opened::Stored(id, Box::new(load)))
                .map_err(|e| e.to_string()),
        }
    });
    match opened {
        Ok(Opened::Stored(id, load)) => {
            // What another process appends from here on is shown as it comes.
            let spec = store.session_dir(&id).ok().map(|dir| FollowSpec {
                session_id: id.clone(),
                parent_id: load.session.metadata.parent_id.clone(),
                dir,
                from: load.covers,
                is_live: {
                    let runtime = Arc::clone(runtime);
                    Arc::new(move |id: &str| runtime.transcript_snapshot(id).is_some())
                },
                store: Some(store.clone()),
            });
            open_stored(runtime, requested, id, *load, results);
            match spec {
                Some(spec) => follow.follow(spec, results.clone()),
                None => follow.stop(),
            }
        }
        Ok(Opened::Live(id, live, metadata, warnings)) => {
            follow.stop();
            open_live(requested, id, &live, *metadata, warnings, results)
        }
        Err(e) => send(
            results,
            AppEvent::TranscriptLoaded {
                requested,
                result: Err(e),
            },
        ),
    }
}

/// A session being opened: live in this process (its transcript shared with the
/// engine, the stored metadata and its warnings), or stored (read tail-first).
enum Opened {
    Live(SessionId, Arc<Vec<Message>>, Box<Metadata>, Vec<String>),
    Stored(SessionId, Box<TailLoad>),
}

/// [`load_tail_first`] of a stored session.
fn open_stored(
    runtime: &Runtime,
    requested: String,
    id: SessionId,
    load: TailLoad,
    results: &UnboundedSender<AppEvent>,
) {
    let TailLoad {
        session,
        earlier,
        covers,
        transcript_warnings,
    } = load;
    let Some(part) = earlier else {
        let parsed = ParsedTranscript {
            messages: session.transcript.clone(),
            warnings: transcript_warnings,
            covers,
        };
        runtime.park_transcript(&id, parsed);
        return send_newest(results, requested, session, None);
    };
    let end = part.end();
    let tail = session.transcript.clone();
    send_newest(results, requested, session, Some(end));
    let result = guarded("loading earlier messages", || {
        let read = part.read().map_err(|e| e.to_string())?;
        let cells = EarlierCells::of(end, &read.messages, read.warnings.clone());
        let mut messages = read.messages;
        // The read list is already trimmed: exactly the room for the tail.
        messages.reserve_exact(tail.len());
        messages.extend(tail);
        let parsed = ParsedTranscript {
            messages,
            warnings: read.warnings,
            covers,
        };
        runtime.park_transcript(&id, parsed);
        Ok(Box::new(cells))
    });
    send(
        results,
        AppEvent::EarlierLoaded {
            session_id: id,
            end,
            result,
        },
    );
}

/// [`load_tail_first`] of a session live in this process: its newest messages, then
/// the cells of the rest, all from the engine's transcript `live` (the earlier part's
/// "end" is then its message count). The snapshot is dropped once laid out (while it
/// lives, the session's next append copies the message list).
fn open_live(
    requested: String,
    id: SessionId,
    live: &[Message],
    metadata: Metadata,
    warnings: Vec<String>,
    results: &UnboundedSender<AppEvent>,
) {
    let split = live.len().saturating_sub(TAIL_MESSAGES);
    let session = LoadedSession {
        metadata,
        transcript: live[split..].to_vec(),
        warnings,
    };
    if split == 0 {
        return send_newest(results, requested, session, None);
    }
    let end = split as u64;
    send_newest(results, requested, session, Some(end));
    let result = guarded("laying out earlier messages", || {
        Ok(Box::new(EarlierCells::of(end, &live[..split], Vec::new())))
    });
    send(
        results,
        AppEvent::EarlierLoaded {
            session_id: id,
            end,
            result,
        },
    );
}

/// Sends an opened session's newest messages: `TranscriptLoaded` when they are all of
/// it (`earlier` is `None`), else `TranscriptTailLoaded` with the end of the earlier
/// part still to come.
fn send_newest(
    results: &UnboundedSender<AppEvent>,
    requested: String,
    session: LoadedSession,
    earlier: Option<u64>,
) {
    let event = match earlier {
        None => AppEvent::TranscriptLoaded {
            requested,
            result: Ok(Box::new(session)),
        },
        Some(end) => AppEvent::TranscriptTailLoaded {
            requested,
            session: Box::new(session),
            earlier: end,
        },
    };
    send(results, event);
}

/// The app event for a turn's result: `TurnFinished`, or `CommandFailed` for
/// `session_id`.
fn turn_result(session_id: SessionId, result: Result<TurnOutcome, EngineError>) -> AppEvent {
    match result {
        Ok(outcome) => AppEvent::TurnFinished(outcome),
        Err(e) => AppEvent::CommandFailed {
            session_id: Some(session_id),
            message: e.to_string(),
        },
    }
}

/// Reports a steer or queue: the turn it started (`TurnFinished`), nothing when the
/// running turn took it, or `NotSent` with `text` so the person gets it back.
fn offered(
    tx: &UnboundedSender<AppEvent>,
    session_id: SessionId,
    text: String,
    result: Result<Option<TurnOutcome>, EngineError>,
) {
    match result {
        Ok(Some(outcome)) => send(tx, AppEvent::TurnFinished(outcome)),
        Ok(None) => {}
        Err(e) => send(
            tx,
            AppEvent::NotSent {
                session_id,
                text: Some(text),
                message: e.to_string(),
            },
        ),
    }
}

/// How long quitting waits for cancelled turns to save what they streamed
/// (`Runtime::shutdown`); below the signal handler's grace (`tui::SHUTDOWN_GRACE`).
pub const QUIT_GRACE: Duration = Duration::from_secs(2);

impl Executor for RuntimeExecutor {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.runtime.shutdown(QUIT_GRACE).await;
        })
    }

    fn execute(&self, command: EngineCommand, results: UnboundedSender<AppEvent>) {
        match command {
            EngineCommand::Submit {
                session_id,
                agent,
                prompt,
            } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let id = match session_id {
                        Some(id) => id,
                        None => {
                            let rt = runtime.clone();
                            // Creating may block (store writes, a loopback probe) and
                            // may await routing: a blocking thread drives it.
                            let handle = tokio::runtime::Handle::current();
                            let created = tokio::task::spawn_blocking(move || {
                                guarded("creating a session", || {
                                    let options = RootOptions { agent, model: None };
                                    handle
                                        .block_on(rt.create_root_with(options))
                                        .map_err(|e| e.to_string())
                                })
                            })
                            .await
                            .unwrap_or_else(|e| Err(format!("session creation failed: {e}")));
                            match created {
                                Ok(id) => {
                                    send(
                                        &results,
                                        AppEvent::SessionCreated {
                                            session_id: id.clone(),
                                        },
                                    );
                                    id
                                }
                                Err(message) => {
                                    send(
                                        &results,
                                        AppEvent::CommandFailed {
                                            session_id: None,
                                            message,
                                        },
                                    );
                                    return;
                                }
                            }
                        }
                    };
                    match runtime.run_turn(&id, prompt).await {
                        Ok(outcome) => send(&results, AppEvent::TurnFinished(outcome)),
                        Err(e) => send(
                            &results,
                            AppEvent::CommandFailed {
                                session_id: Some(id),
                                message: e.to_string(),
                            },
                        ),
                    }
                });
            }
            EngineCommand::Continue { session_id } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let result = runtime.continue_turn(&session_id).await;
                    send(&results, turn_result(session_id, result));
                });
            }
            EngineCommand::ContinueInterrupted { session_id } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    match runtime.continue_interrupted(&session_id).await {
                        Ok(turns) => {
                            for result in turns {
                                let id = match &result {
                                    Ok(outcome) => outcome.session_id.clone(),
                                    Err(_) => session_id.clone(),
                                };
                                send(&results, turn_result(id, result));
                            }
                        }
                        Err(e) => send(
                            &results,
                            AppEvent::CommandFailed {
                                session_id: Some(session_id),
                                message: e.to_string(),
                            },
                        ),
                    }
                });
            }
            EngineCommand::Steer { session_id, text } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let result = runtime.steer(&session_id, text.clone()).await;
                    offered(&results, session_id, text, result);
                });
            }
            EngineCommand::Queue {
                session_id,
                text,
                position,
            } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let result = runtime.queue(&session_id, text.clone(), position).await;
                    offered(&results, session_id, text, result);
                });
            }
            EngineCommand::Unqueue { session_id, id } => {
                if let Err(e) = self.runtime.unqueue(&session_id, id) {
                    send(
                        &results,
                        AppEvent::NotSent {
                            session_id,
                            text: None,
                            message: e.to_string(),
                        },
                    );
                }
            }
            EngineCommand::Cancel { session_id } => self.runtime.cancel(&session_id),
            EngineCommand::LoadTranscript { session_id } => {
                let store = self.store.clone();
                let runtime = self.runtime.clone();
                let follow = self.follow.clone();
                tokio::task::spawn_blocking(move || {
                    load_tail_first(
                        &runtime,
                        &store,
                        &follow,
                        String::from(session_id),
                        &results,
                    )
                });
            }
            EngineCommand::LoadDiff {
                session_id,
                subtree,
            } => {
                let store = self.store.clone();
                tokio::task::spawn_blocking(move || {
                    let result = guarded("reading a session's changes", || {
                        session_diffs(&store, &session_id, subtree).map_err(|e| e.to_string())
                    });
                    send(
                        &results,
                        AppEvent::DiffLoaded {
                            session_id,
                            subtree,
                            result,
                        },
                    );
                });
            }
            EngineCommand::ResolveProviderLabel => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    match runtime.resolve_provider_label().await {
                        Ok(label) => send(&results, AppEvent::ProviderLabelResolved { label }),
                        Err(e) => tracing::debug!("no provider label: {e}"),
                    }
                });
            }
            EngineCommand::ResolveApproval {
                session_id,
                tool_call_id,
                decision,
            } => {
                if let Err(e) = self
                    .runtime
                    .resolve_approval(&session_id, &tool_call_id, decision)
                {
                    send(
                        &results,
                        AppEvent::CommandFailed {
                            session_id: Some(session_id),
                            message: e.to_string(),
                        },
                    );
                }
            }
            EngineCommand::SetModel { session_id, model } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let switched = match &session_id {
                        Some(id) => runtime.set_model(id, &model).await,
                        None => {
                            runtime.set_root_model(Some(model));
                            runtime.provider_label()
                        }
                    };
                    let warning = match &switched {
                        Ok(label) => runtime.unlisted_model(label).await,
                        Err(_) => None,
                    };
                    let result = switched.map_err(|e| e.to_string());
                    send(
                        &results,
                        AppEvent::ModelSwitched {
                            session_id,
                            result,
                            warning,
                        },
                    );
                });
            }
            EngineCommand::Compact { session_id, focus } => {
                let runtime = self.runtime.clone();
                tokio::spawn(async move {
                    let event = match runtime.compact(&session_id, &focus).await {
                        Ok(done) => AppEvent::Compacted {
                            note: crate::tui::state::context::compacted_note(&done),
                        },
                        Err(e) => AppEvent::CommandFailed {
                            session_id: Some(session_id),
                            message: e.to_string(),
                        },
                    };
                    send(&results, event);
                });
            }
            EngineCommand::ListMcpServers => {
                send(
                    &results,
                    AppEvent::McpServersListed(self.runtime.mcp_status()),
                );
            }
            EngineCommand::RenameSession { session_id, title } => {
                let runtime = self.runtime.clone();
                tokio::task::spawn_blocking(move || {
                    let result = guarded("renaming a session", || {
                        runtime
                            .rename(&session_id, &title)
                            .map_err(|e| e.to_string())
                    });
                    send(&results, AppEvent::SessionRenamed { session_id, result });
                });
            }
            EngineCommand::ExportSession { session_id } => {
                let store = self.store.clone();
                let dir = self.runtime.paths().cwd.clone();
                tokio::task::spawn_blocking(move || {
                    let result = guarded("exporting a session", || {
                        let text = crate::session::export::export_markdown(&store, &session_id)
                            .map_err(|e| e.to_string())?;
                        write_export(&dir, &session_id, &text)
                    });
                    send(&results, AppEvent::Exported { session_id, result });
                });
            }
            EngineCommand::ListProjectFiles { root } => {
                tokio::task::spawn_blocking(move || {
                    let files = panics::catch_blocking("listing project files", || {
                        super::state::mentions::list_files(&root)
                    })
                    .unwrap_or_default();
                    send(
                        &results,
                        AppEvent::ProjectFiles {
                            root,
                            files: Arc::new(files),
                        },
                    );
                });
            }
            EngineCommand::ListSessions => {
                let store = self.store.clone();
                tokio::task::spawn_blocking(move || {
                    let result = guarded("listing sessions", || {
                        store.list().map_err(|e| e.to_string())
                    });
                    send(&results, AppEvent::SessionsListed(result));
                });
            }
        }
    }
}

/// Writes `text` to a new `arbor-export-<first 8 of id>.md` in `dir` (`-2`, `-3`…
/// when the name is taken; an existing file is never replaced), whole or not at all:
/// a temp file in `dir` is persisted under the name only once written and synced.
fn write_export(dir: &Path, session_id: &str, text: &str) -> Result<PathBuf, String> {
    let short: String = session_id.chars().filter(|c| *c != '-').take(8).collect();
    let mut tmp = tempfile::Builder::new()
        .prefix(".arbor-export-")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write the export: {e}"))?;
    for n in 1..1000 {
        let name = if n == 1 {
            format!("arbor-export-{short}.md")
        } else {
            format!("arbor-export-{short}-{n}.md")
        };
        let path = dir.join(name);
        match tmp.persist_noclobber(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => return Err(format!("cannot write {}: {}", path.display(), e.error)),
        }
    }
    Err(format!(
        "{}: every arbor-export-{short}*.md name is taken",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_never_replace_a_file_and_leave_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = "5f0e1c2a-1111-4222-8333-444455556666";
        let first = write_export(dir.path(), id, "one").unwrap();
        let second = write_export(dir.path(), id, "two").unwrap();
        assert_eq!(first.file_name().unwrap(), "arbor-export-5f0e1c2a.md");
        assert_eq!(second.file_name().unwrap(), "arbor-export-5f0e1c2a-2.md");
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(&second).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let missing = dir.path().join("nope");
        assert!(
            write_export(&missing, id, "x")
                .unwrap_err()
                .contains("cannot write in")
        );
    }
}
