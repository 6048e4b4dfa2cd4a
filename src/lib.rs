//! arbor: a terminal workbench for trees of AI-agent sessions.
//!
//! # Layers
//!
//! Each top-level module uses only the ones listed below it, and no two import each
//! other (CI runs `python3 ../shared/tools/layers.py cycles`, see `.ci/run`). From the
//! top:
//!
//! - `cli`, `tui`: front ends — clap subcommands (`cli` starts `tui`) and the terminal
//!   UI; they send the engine commands and consume its typed events
//!   (`session::protocol`: `EngineCommand` in, `EngineEvent` out on the `EventBus`).
//!   `acp` beside them: the Agent Client Protocol front end (`arbor acp`, started by
//!   `cli`), driving the engine through the same handle. `worker` beside them too:
//!   `arbor worker` (issue 27), running remote sub-sessions' jobs taken from NATS
//!   through the same handle, one engine per job.
//! - `engine`: runtime, turn loop, spawn, cancellation, transcript repair, and the
//!   root side of remote sub-sessions (`engine::remote`: a job out, what its worker
//!   streams back into the store behind the lease fence). Never imports `cli` or `tui`.
//! - `hooks`: the person's hook commands (issue 29, Claude Code's contract): their
//!   config and running them; uses `config`, `sandbox`, `session` and `paths`.
//! - `tool`: the `Tool` trait, mounting tools from a mount plan, the built-in tools.
//! - `routing`: model roles, provider preferences, routing matrices, model prices, and
//!   building providers from config + environment (`routing::setup`).
//! - `provider`: wire clients only — the `Provider` trait, SSE, the Anthropic and
//!   OpenAI-compatible clients, retries, HTTP errors.
//! - `agent`: agent files, bundles, the registry, validation, hot reload.
//! - `acp_client`: arbor as the ACP client of an external agent hosted as a node
//!   (issue 37 item 3): its process, JSON-RPC over its stdio, the handshake; uses
//!   `config` only (the node side is `engine::hosted`).
//! - `remote`: the NATS JetStream transport of remote sub-sessions (issue 27): the
//!   wire messages, connecting and creating streams and buckets, the compare-and-set
//!   lease, large payloads; uses `config` and `session` only.
//! - `isolation`: git worktrees of writing sub-sessions, merging and discarding them,
//!   checkpoints and rewind (issue 25), through the `git` CLI; uses `paths` only.
//! - `sandbox`: the kernel sandbox of `bash` and stdio MCP servers (Landlock, a
//!   seccomp filter, namespaces hiding key files) and its `arbor __sandbox` helper;
//!   uses `config` and `paths` only.
//! - `config`: `config.yaml`, the mount plan, overlay merge, YAML reading.
//! - `session`: ids, messages, token usage, metadata, the store, the protocol (events,
//!   commands, the event bus).
//! - `paths`: where things live.
//!
//! `agent` sits above `config`: agent files and bundles are read into mount plans, and
//! merge works on plain JSON overlays, so `config` needs nothing from `agent`. When a
//! lower module needs something from a higher one, the type moves down (`Usage` and the
//! records events carry — `ProviderErrorKind`, `ResolvedModel` — live in `session`, the
//! tables of built-in tool and provider modules in `config::modules`) or the dependency is passed in
//! as a trait the higher layer implements (the task tool's `Host`, implemented by the
//! engine).

pub mod acp;
pub mod acp_client;
pub mod agent;
pub mod cli;
pub mod config;
pub mod engine;
pub mod hooks;
pub mod isolation;
pub mod paths;
pub mod provider;
pub mod remote;
pub mod routing;
pub mod sandbox;
pub mod session;
pub mod tool;
pub mod tui;
pub mod worker;
