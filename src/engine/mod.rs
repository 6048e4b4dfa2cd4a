//! The engine: sessions running turns, delegation, cancellation (SPEC §8–9).
//!
//! Owns: the [`Engine`] handle every front end (the TUI, `arbor run`, every `arbor
//! session` subcommand, `arbor agent`, the ACP server, a worker's jobs) drives with
//! `EngineCommand`s and `EngineQuery`s and typed replies (`handle`: also tail-first
//! opening and following a stored transcript, and reading stored sessions for a front
//! end; built with [`Engine::builder`] from public [`RuntimeOptions`]), and the
//! `Runtime` behind it, private to the engine (the task tool reaches it through
//! `spawn`'s `Sessions`; front ends and tests only through the handle, tests with
//! `testing::Drive`) — session
//! creation, fork/spawn of sub-sessions, resume from disk, the turn loop with concurrent
//! tool calls, steering a running turn and queueing turns after it, cancellation that
//! cascades to children, transcript repair, the approval gate of every tool call (`gate`), the registry of calls waiting for a person's
//! answer (`approvals`), the delegation limits that bound a tree (`limits`), and the
//! root side of sub-sessions run by `arbor worker`s through NATS (`remote`, issue 27).
//! Does not own:
//! rendering (`tui`), argument parsing (`cli`), wire protocols (`provider`).
//!
//! Files form layers, each using only those below it (`tests/all/inner_layers.rs` fails
//! on a cycle): `testing` (the tests' `Drive`) over `handle` (the front ends' door), then `runtime`; `spawn` (reaches the live map through the
//! `Sessions` trait `runtime` implements) and `model_choice` (a person's model choice
//! and a root's routing, above `spawn`); `remote` (a remote child's run, below `spawn`
//! and `runtime`, above `turn`); `turn` (with `calls`, `stream`, `repair`, `prompt`, and `request_view`, which
//! fits each request to the context limit with `compact`);
//! `hosted` (the turns of a node whose agent is an external ACP agent, issue 37
//! item 3, below `turn`, above `calls` and `gate`);
//! `gate` (the approval gate every tool call passes); `root_plan`, `providers`; then
//! `env` (the shared `TurnEnv`), `project_powers` (the project's hooks and MCP servers,
//! read again every turn), `approvals`, `limits`, `slots` (per-endpoint
//! `max_concurrent`), `outcome`, `live`, then `inbox` (steers and queued messages of a
//! live session).

pub mod approvals;
mod calls;
mod checkpoints;
pub mod compact;
pub mod context;
mod env;
mod escalate;
mod gate;
pub mod handle;
pub mod homecoming;
mod hosted;
mod inbox;
mod isolate;
mod limits;
mod live;
mod model_choice;
mod notify_hooks;
mod outcome;
pub mod panics;
mod project_powers;
mod prompt;
pub mod providers;
mod recovered;
mod remote;
pub mod repair;
mod request_view;
pub mod review;
mod root_plan;
mod runtime;
mod slots;
mod spawn;
mod stored_plan;
mod stream;
#[doc(hidden)]
pub mod testing;
mod tool_hooks;
mod transfer;
pub mod turn;

pub use approvals::ApprovalMode;
pub use handle::{
    AgentPlan, CommandId, EarlierMessages, Engine, EngineBuilder, EngineClient, EngineOutput,
    EngineReply, EngineStream, QueryReply, Replies,
};
pub use limits::{LimitReached, TreeRoom};
pub use model_choice::ProviderModels;
pub use outcome::{EngineError, ExportError, ModelChoiceError, TurnError, TurnOutcome};
pub use providers::ProviderFactory;
pub(crate) use runtime::Runtime;
pub use runtime::{LABEL_TIMEOUT, RootOptions, RuntimeHooks, RuntimeOptions};
