//! [`EngineCommand`]: what a front end asks of the engine. Every front end — the TUI,
//! `arbor run`, `arbor session resume` / `continue`, and the next ones (an ACP server,
//! a remote worker) — sends commands to the one engine handle (`engine::Engine`) and
//! gets typed replies (`engine::EngineReply`) for each, plus the bus's
//! [`EngineEvent`](super::EngineEvent)s; none runs a turn, opens a session or reads
//! the store around it (what `arbor session list/show/diff/export` read they ask as
//! [`EngineQuery`](super::EngineQuery)s). The TUI's `tui::executor` turns the replies
//! into its `AppEvent`s; headless `arbor run` prints the events and the final outcome.

use super::approvals::ApprovalDecision;
use crate::session::ids::SessionId;
use crate::session::ids::ToolCallId;

/// What a front end asks the engine (or the store) to do. Each is executed in a
/// background task (`engine::Engine::execute`); its result comes back to the sender
/// as `engine::EngineReply`s (the TUI: converted to `AppEvent`s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineCommand {
    /// Run one turn. `session_id: None` creates a new root session first (with `agent`,
    /// else the bundle's root agent) and reports the new id; `Some(id)` continues a
    /// live session or resumes a stored one (root or sub-session). Ends with the turn's
    /// outcome, or the error that kept it from running.
    Submit {
        session_id: Option<SessionId>,
        agent: Option<String>,
        prompt: String,
        /// The person cleared the thread before this message (`/clear`): a new
        /// root's `SessionStart` hooks get `source` `clear` instead of `startup`.
        cleared: bool,
    },
    /// Create (and store) a new root session with `agent` (else the bundle's root
    /// agent) and the engine's model of new roots, running nothing: `arbor acp`'s
    /// `session/new`, whose id must name a stored session at once. Answered with
    /// `SessionCreated`, or `Failed` (no provider, an unknown agent, the store).
    CreateSession { agent: Option<String> },
    /// Continue the stopped session `session_id` (interrupted, failed, cancelled,
    /// paused; SPEC §13 `r`): orphaned tool calls get their synthetic results, then
    /// the model call that never got an answer runs again, or `Continue.` is sent as a
    /// user message when the model had answered (`Runtime::continue_turn`). Ends like
    /// [`EngineCommand::Submit`] with an id.
    Continue { session_id: SessionId },
    /// Continue every `interrupted` session of the tree under `session_id` (itself
    /// included), children before their parents (`Runtime::continue_interrupted`):
    /// after a crash, one command resumes the whole tree. Each continued turn ends
    /// like [`EngineCommand::Continue`]; a tree that cannot be read fails the command.
    ContinueInterrupted { session_id: SessionId },
    /// Steer `session_id` (root or sub-session, SPEC §13): `text` is appended verbatim
    /// as a user message before its running turn's next model call (after pending
    /// tool results); when the turn ends first, or none runs, it starts the next turn
    /// at once (`Runtime::steer`). The engine publishes `prompt:queued` (mode `steer`)
    /// then `prompt:sent`. Ends like [`EngineCommand::Submit`] with an id when it
    /// started a turn; nothing more when the running turn took it.
    Steer { session_id: SessionId, text: String },
    /// Queue `text` as a turn of its own of `session_id`, sent verbatim after the
    /// running turn (and the messages queued before it) ended completed; at `position`
    /// among the queued messages (0 = next; `None` or past the end = last). Starts it
    /// at once when no turn runs (`Runtime::queue`). Publishes `prompt:queued` (mode
    /// `queue`), later `prompt:sent` or `prompt:unqueued`.
    Queue {
        session_id: SessionId,
        text: String,
        position: Option<usize>,
    },
    /// Take the waiting message `id` (`prompt:queued` `id`) of `session_id` back
    /// unsent (`Runtime::unqueue`): the engine publishes `prompt:unqueued` (reason
    /// `removed`) with its text. Fails when it was already sent or is unknown.
    Unqueue { session_id: SessionId, id: u64 },
    /// Cancel the running turn of `session_id` and of all its descendants (the engine
    /// publishes `cancel:requested`, then `cancel:completed` per stopped turn).
    Cancel { session_id: SessionId },
    /// Read a session (id or unambiguous prefix) from the store; answered with the
    /// loaded session or the store error.
    LoadTranscript { session_id: SessionId },
    /// List stored sessions of this project; answered with their metadata, newest
    /// first, or the store error.
    ListSessions,
    /// Work out the status-bar label of a new root session, asking a local server for
    /// its model when none is configured (`Runtime::resolve_provider_label`, bounded
    /// to a few seconds); answered with `provider/model` (nothing when no provider is
    /// usable: the front end already says so). The TUI sends it once at start when its
    /// label has no model.
    ResolveProviderLabel,
    /// Answer the `approval:required` of tool call `tool_call_id` in session
    /// `session_id`: allow it (once, or always for its tool / command prefix in this
    /// tree) or deny it (with an optional reason for the model). The engine then
    /// publishes `approval:granted` or `approval:denied`. Answering a call that no
    /// longer waits (already answered, cancelled) fails with "no pending approval …".
    ResolveApproval {
        session_id: SessionId,
        tool_call_id: ToolCallId,
        decision: ApprovalDecision,
    },
    /// Switch a model (`MODEL` or `PROVIDER/MODEL`; a glob picks the newest listed
    /// match): `Some(session_id)` switches that session for its next turns, recorded
    /// in its metadata (`Runtime::set_model`); `None` sets the model of new root
    /// sessions (`Runtime::set_root_model`). Answered with the `provider/model` now in
    /// use, or the error (a bad choice, a provider that cannot be built). The `/model`
    /// slash command sends it too.
    SetModel {
        session_id: Option<SessionId>,
        model: String,
    },
    /// Rebuild what session `session_id` (a full id) changed, from its transcript
    /// (`tool::filesystem::changes`), with `subtree` its descendants' changes too;
    /// answered with the diffs or the store error.
    LoadDiff {
        session_id: SessionId,
        subtree: bool,
    },
    /// List the MCP servers of this process (configured, or started by an agent's
    /// `tool-mcp`), each with its state and tools; answered with the list.
    ListMcpServers,
    /// List every hook of this process (the user's and the project's), active or
    /// skipped with why, as the project stands now; answered with the list.
    ListHooks,
    /// Rename session `session_id` (a full id) to `title` (`/rename`), the path
    /// `arbor session rename` takes (`Runtime::rename`: metadata `name`, logged as
    /// `session:renamed`); answered with the title stored or the error.
    RenameSession {
        session_id: SessionId,
        title: String,
    },
    /// Export session `session_id` (a full id) and its sub-sessions as Markdown
    /// (`session::export::export_markdown`, as `arbor session export --format md`) to
    /// a new file `arbor-export-<short id>.md` (`-2`, `-3`… when taken) in the working
    /// directory (`/export`), written whole or not at all; answered with the file's
    /// path or the error.
    ExportSession { session_id: SessionId },
    /// List the files under `root` for `@file` completion (`.gitignore` respected,
    /// capped; `engine::handle::files::project_files`), off the UI thread; answered with
    /// the relative paths.
    ListProjectFiles { root: std::path::PathBuf },
    /// Compact `session_id`'s context now (`/compact [focus]`, issue 26), or before
    /// its next model call when a turn runs (`Runtime::compact`); `focus` (may be
    /// empty) tells the summary what to keep. The engine publishes
    /// `context:compaction`; answered with a note, or the error.
    Compact {
        session_id: SessionId,
        focus: String,
    },
    /// Merge sub-session `session_id`'s worktree branch into its parent's working
    /// tree, three-way, then remove the worktree and branch (`arbor session merge`;
    /// `engine::handle::undo::merge`). A conflict refuses the whole merge, naming the
    /// files; a root, a session without a worktree or one already merged is refused.
    /// Answered with `Undone`. With `markers` a conflict is written into the files as
    /// git-style conflict markers instead (`arbor session merge --markers`).
    MergeSession {
        session_id: SessionId,
        markers: bool,
    },
    /// Remove sub-session `session_id`'s worktree and branch, changes and all
    /// (`arbor session discard`; `undo::discard`). Answered with `Undone`.
    DiscardSession { session_id: SessionId },
    /// Restore the files `session_id` changed after turn `to_turn` (1-based; 0: all)
    /// from its checkpoints (`arbor session rewind`; `undo::rewind`); files changed
    /// since by someone else are refused, named, unless `force`. Answered with
    /// `Undone`.
    RewindSession {
        session_id: SessionId,
        to_turn: u64,
        force: bool,
    },
    /// Fork `session_id` at turn `at_turn` (1-based; `None`: the latest) as a new
    /// session beside it in Amplifier's layout (`arbor session fork`;
    /// `undo::fork`); with `rewind`, the original's files changed after that turn
    /// are restored first (not forced; a refusal forks nothing) — the TUI's "rewind
    /// here". Answered with `Undone`.
    ForkSession {
        session_id: SessionId,
        at_turn: Option<u64>,
        rewind: bool,
    },
    /// Fork `session_id` at turn `at_turn` as [`EngineCommand::ForkSession`] does
    /// (no rewind), the new session (a new UUID) titled `title` (`arbor session fork
    /// --name`). Answered with `Undone`.
    ForkSessionAs {
        session_id: SessionId,
        at_turn: Option<u64>,
        title: String,
    },
}
