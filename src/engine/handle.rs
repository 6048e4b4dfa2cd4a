//! [`Engine`]: the one handle every front end drives the engine through (STYLE.md
//! "One engine handle for every front end"; codex-rs's session handle: `Op`s in,
//! events out). The TUI, `arbor run`, every `arbor session` subcommand, `arbor agent`,
//! the ACP server and a worker's jobs send it [`EngineCommand`]s; each is answered
//! with typed [`EngineReply`]s on the [`Replies`] sink it came with, and every
//! session's progress is published as typed events on the bus ([`Engine::subscribe`]).
//! What a front end only reads it asks as an `EngineQuery` ([`Engine::ask`], `query`).
//! Nothing outside the engine sees the `Runtime` behind it: front ends and tests build
//! their engine from its options ([`Engine::builder`], [`Engine::headless`],
//! [`Engine::interactive`]).
//!
//! Owns: building the handle ([`EngineBuilder`]), executing each command against the
//! `Runtime` (one task per command, so a
//! slow one never holds up the next), opening a session tail-first with one parsed
//! copy of its transcript per process ([`Engine::open`], `open`), following the stored
//! session opened last for what another process appends (`follow`), the files it
//! writes or lists for a front end (`files`), merging, discarding, rewinding and
//! forking a session for every front end (`undo`), what a session changed (`diff`),
//! reading stored sessions for a front end (`sessions`), and that every command is
//! answered: a panic in a store call comes back as [`EngineError::Panicked`] (a panic
//! in a turn is already a failed turn or an error of `Runtime::run_turn`). A command's
//! sink is dropped once the command is answered in full (after the last turn of a
//! `ContinueInterrupted`; for `LoadTranscript`, when the next session is opened).
//!
//! Does not own: the runtime itself (sessions, turns, spawning), the store's reading,
//! or turning replies into a front end's own events (`tui::executor`, `cli::run`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use super::outcome::EngineError;
use super::panics;
use super::runtime::{Runtime, RuntimeHooks, RuntimeOptions};
use crate::session::Event;

pub mod diff;
mod execute;
pub mod files;
pub mod follow;
pub mod open;
pub mod query;
pub mod reply;
pub mod sessions;
pub mod stream;
pub mod undo;

use follow::TranscriptFollow;
pub use query::{AgentPlan, QueryReply};
pub use reply::{EarlierMessages, EngineReply, Replies};
pub use stream::{CommandId, EngineClient, EngineOutput, EngineStream};

/// The engine as a front end sees it: commands in, typed replies and events out.
/// Cheap to clone (every clone drives the same runtime and follows one transcript).
#[derive(Clone)]
pub struct Engine {
    runtime: Arc<Runtime>,
    follow: Arc<TranscriptFollow>,
    /// Whether `SetModel` looks up (lists) whether the provider knows the model, for
    /// the reply's `warning`: a person reads it; a headless command prints none.
    warn_unlisted: bool,
}

/// Runs `work` (a store or runtime call, on a blocking thread); a panic in it becomes
/// [`EngineError::Panicked`] (`internal error: <what> panicked: …`, also logged), so
/// the front end always hears back.
pub(crate) fn guarded<T>(
    what: &str,
    work: impl FnOnce() -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    panics::catch_blocking(what, work).unwrap_or_else(|message| {
        Err(EngineError::Panicked {
            what: what.to_string(),
            message,
        })
    })
}

/// How an [`Engine`] is built ([`Engine::builder`]): from its [`RuntimeOptions`],
/// with [`RuntimeHooks`] (injected providers, extra tools) when a test or an embedder
/// brings them, for a person watching (the default) or for nobody
/// ([`EngineBuilder::headless`]).
pub struct EngineBuilder {
    options: RuntimeOptions,
    hooks: RuntimeHooks,
    warn_unlisted: bool,
    tree_room: Option<Arc<dyn super::TreeRoom>>,
    /// The first turn starts as soon as the engine is built ([`EngineBuilder::starts_now`]).
    starts_now: bool,
    /// The HTTP clients to share with other runtimes of the process (`None`: its own).
    http: Option<Arc<crate::provider::HttpPool>>,
}

impl EngineBuilder {
    /// Providers from `hooks.provider_factory` instead of `routing::setup`, and
    /// `hooks.extra_tools` mounted in every session.
    pub fn hooks(mut self, hooks: RuntimeHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Providers' HTTP clients from `pool`, shared with every other runtime built
    /// with it (a worker's engine per job: the system certificates read and the
    /// provider's connections made once per process, not once per job), instead of a
    /// pool of the runtime's own.
    pub fn http_pool(mut self, pool: Arc<crate::provider::HttpPool>) -> Self {
        self.http = Some(pool);
        self
    }

    /// For a front end with no person watching a status bar (`arbor run`, `arbor
    /// session …`, `arbor agent`, the ACP server, a worker's job): `SetModel`'s reply
    /// has no `warning` (nobody reads it; looking it up would list the provider's
    /// models, up to 5 s, before the turn starts).
    pub fn headless(mut self) -> Self {
        self.warn_unlisted = false;
        self
    }

    /// Sub-sessions counted against the tree limits by `room` instead of this
    /// process's config (a worker's job asks its root; issue 38 item 7).
    pub fn tree_room(mut self, room: Option<Arc<dyn super::TreeRoom>>) -> Self {
        self.tree_room = room;
        self
    }

    /// For an engine whose first turn starts as soon as it is built (a worker's job):
    /// the project's hooks and MCP servers read at the build serve that turn instead of
    /// being read again at its start (each read walks from the working directory to
    /// the file system's root). Not for an engine that waits for a person first (the
    /// TUI, the ACP server): a project trusted meanwhile would count only from its
    /// second turn.
    pub fn starts_now(mut self) -> Self {
        self.starts_now = true;
        self
    }

    /// The handle over a new runtime, following no transcript yet.
    pub fn build(self) -> Engine {
        let http = self.http.unwrap_or_default();
        let runtime = Runtime::with_parts(self.options, self.hooks, http, self.tree_room);
        if self.starts_now {
            runtime.powers_read_just_now();
        }
        let mut engine = Engine::over(runtime);
        engine.warn_unlisted = self.warn_unlisted;
        engine
    }
}

impl Engine {
    /// A builder of the handle over a new runtime built from `options`: for a person
    /// (a model switch's reply warns when the provider does not list the model) unless
    /// made [`EngineBuilder::headless`], with no hooks unless given.
    pub fn builder(options: RuntimeOptions) -> EngineBuilder {
        EngineBuilder {
            options,
            hooks: RuntimeHooks::default(),
            warn_unlisted: true,
            tree_room: None,
            starts_now: false,
            http: None,
        }
    }

    /// `Engine::builder(options).headless().build()`: the handle `arbor run`, `arbor
    /// session …`, `arbor agent`, the ACP server and a worker's jobs drive.
    pub fn headless(options: RuntimeOptions) -> Self {
        Self::builder(options).headless().build()
    }

    /// `Engine::builder(options).build()`: the handle the TUI drives.
    pub fn interactive(options: RuntimeOptions) -> Self {
        Self::builder(options).build()
    }

    /// The handle over `runtime` (warning about unlisted models), following no
    /// transcript yet: the engine's own tests build their runtime themselves.
    pub(crate) fn over(runtime: Arc<Runtime>) -> Self {
        Self {
            runtime,
            follow: Arc::default(),
            warn_unlisted: true,
        }
    }

    /// The runtime behind this handle, for the engine's own code (`testing`).
    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// `provider/model` of what a new root session of this engine uses (the status
    /// bar's label before the first turn).
    ///
    /// Errors: no usable provider (`NoProvider`, saying what was looked for).
    pub fn provider_label(&self) -> Result<String, EngineError> {
        self.runtime.provider_label()
    }

    /// This handle, with `model` (`--model`: `MODEL`, `PROVIDER/MODEL` or a glob) the
    /// model of every new root session that brings none (`None`: the agent's
    /// routing). Checked when a root is created: a bad choice fails its `Submit`,
    /// naming the choice.
    pub fn with_root_model(self, model: Option<String>) -> Self {
        self.runtime.set_root_model(model);
        self
    }

    /// Every event every session of this process publishes from now on, in order
    /// (`session::protocol`'s typed [`Event`]s; subscribe before sending a command to
    /// see all of its events).
    pub fn subscribe(&self) -> UnboundedReceiver<Arc<Event>> {
        self.runtime.bus().subscribe()
    }

    /// Opens `requested` (a session id or unambiguous prefix) tail-first on a blocking
    /// thread and follows it when it is stored (see `open::open`): what
    /// `EngineCommand::LoadTranscript` does. Replies `Compactions` (when it has any),
    /// `Opened`, then maybe `Earlier`,
    /// or `OpenFailed`; later `Followed` / `StoredSessionChanged` / `SessionsListed`
    /// for what another process writes, until another session is opened.
    pub fn open(&self, requested: impl Into<String>, replies: Replies) {
        let runtime = self.runtime.clone();
        let follow = self.follow.clone();
        let requested = requested.into();
        tokio::task::spawn_blocking(move || open::open(&runtime, &follow, requested, &replies));
    }

    /// Ends this process's work before it exits: cancels every running turn and
    /// waits at most `grace` for them to save what they streamed, then stops the MCP
    /// servers (`Runtime::shutdown`). Returns how many turns were still running.
    pub async fn shutdown(&self, grace: Duration) -> usize {
        self.follow.stop();
        self.runtime.shutdown(grace).await
    }

    /// Stops following the stored session opened last (its `LoadTranscript` is then
    /// answered in full): for a front end that opened it only to read it once.
    pub fn stop_following(&self) {
        self.follow.stop();
    }

    /// Ends what outlives the commands of a headless front end once they are all
    /// answered: stops following and stops the MCP servers the turns started. Running
    /// turns are left alone (see [`Engine::shutdown`] to end them).
    pub async fn close(&self) {
        self.follow.stop();
        self.runtime.mcp().shutdown().await;
    }
}
