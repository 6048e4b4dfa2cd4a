//! What crosses NATS between a root and its workers (issue 27): the stream, subject,
//! consumer and bucket names, and every message, as serde JSON.
//!
//! Owns: the names ([`JOBS_STREAM`], [`job_subject`], [`out_subject`], …), the escaping
//! of a session id into one subject token / key-value key ([`token`]), the job
//! ([`Job`]), the worker's messages ([`WorkerMsg`]), the root's control messages
//! ([`Control`]), the resume answer ([`SyncReply`]), the lease and presence records
//! ([`Lease`], [`WorkerInfo`]) and where a session ran ([`RanOn`]). Does not own: talking
//! to the server (`nats`), the lease protocol (`lease`), large bodies (`payload`).
//!
//! Every message is one JSON object in the NATS message body; a [`WorkerMsg`] also
//! carries the headers [`EPOCH_HEADER`] and [`WORKER_HEADER`], which the root's fence
//! reads before the body.

use serde::{Deserialize, Serialize};

use super::payload::Payload;
use crate::config::MountPlan;
use crate::session::protocol::{AllowScope, ApprovalDecision, Event, ToolPreEvent};
use crate::session::{Message, Metadata, SessionId, SessionStatus};

/// The version of [`Job`] this build writes and reads; a job of another version is
/// refused by the worker with [`WorkerMsg::Failed`].
pub const JOB_VERSION: u32 = 1;

/// The work-queue stream of jobs (retention `WorkQueue`, file storage, subjects
/// `arbor.jobs.>`): a job is removed once a worker acks it.
pub const JOBS_STREAM: &str = "ARBOR_JOBS";
/// The stream of worker → root messages (retention `Limits`, file storage, a day and
/// at most 1 GiB with the oldest dropped first, subjects `arbor.out.>`).
pub const OUT_STREAM: &str = "ARBOR_OUT";
/// The key-value bucket of session leases (key: [`token`] of the session id).
pub const LEASES_BUCKET: &str = "arbor_leases";
/// The key-value bucket of live workers (key: the worker id; entries expire after
/// [`PRESENCE_TTL_SECS`] without a refresh).
pub const WORKERS_BUCKET: &str = "arbor_workers";
/// The object store of payloads too large for one message (see `payload`).
pub const PAYLOADS_BUCKET: &str = "arbor_payloads";
/// How long a worker's presence entry lives without a refresh, in seconds; workers
/// refresh it every [`PRESENCE_REFRESH_SECS`].
pub const PRESENCE_TTL_SECS: u64 = 30;
/// How often a worker refreshes its presence entry, in seconds.
pub const PRESENCE_REFRESH_SECS: u64 = 5;
/// The header of a [`WorkerMsg`] naming the lease epoch it was sent under (decimal).
pub const EPOCH_HEADER: &str = "Arbor-Epoch";
/// The header of a [`WorkerMsg`] naming the worker that sent it (`w-…`).
pub const WORKER_HEADER: &str = "Arbor-Worker";
/// The pool of a worker or `remote:` config that names none.
pub const DEFAULT_POOL: &str = "default";

/// A session id, pool or worker id that is not one token: empty, or it contains
/// characters [`token`] cannot carry unescaped is fine — only an empty one is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' cannot name a NATS subject token: it is empty")]
pub struct BadToken(pub String);

/// `raw` as one NATS subject token and key-value key: ASCII letters, digits, `-` and
/// `_` kept, every other byte written `=XX` (uppercase hex; `=` itself escaped too, so
/// the mapping is one-to-one). Amplifier's child ids (`<16 hex>-<16 hex>_<agent>`) and
/// UUIDs pass through unchanged; an agent name with `:` or `.` is escaped.
///
/// Errors: [`BadToken`] when `raw` is empty.
pub fn token(raw: &str) -> Result<String, BadToken> {
    if raw.is_empty() {
        return Err(BadToken(raw.to_string()));
    }
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("={b:02X}"));
        }
    }
    Ok(out)
}

/// The subject jobs of `pool` are published on: `arbor.jobs.<pool>`.
///
/// Errors: [`BadToken`] for an empty pool.
pub fn job_subject(pool: &str) -> Result<String, BadToken> {
    Ok(format!("arbor.jobs.{}", token(pool)?))
}

/// The durable pull consumer of `pool` on [`JOBS_STREAM`]: `arbor-pool-<pool>`.
///
/// Errors: [`BadToken`] for an empty pool.
pub fn consumer_name(pool: &str) -> Result<String, BadToken> {
    Ok(format!("arbor-pool-{}", token(pool)?))
}

/// Worker → root messages of one session: `arbor.out.<session>` (JetStream,
/// [`OUT_STREAM`]).
///
/// Errors: [`BadToken`] for an empty id.
pub fn out_subject(session: &str) -> Result<String, BadToken> {
    Ok(format!("arbor.out.{}", token(session)?))
}

/// Root → worker [`Control`] messages of one session: `arbor.ctl.<session>` (core
/// NATS: heard only by a worker running it now).
///
/// Errors: [`BadToken`] for an empty id.
pub fn ctl_subject(session: &str) -> Result<String, BadToken> {
    Ok(format!("arbor.ctl.{}", token(session)?))
}

/// Where a redelivered job asks the root for the session as stored now
/// (request/reply, core NATS; the answer is a [`SyncReply`]): `arbor.sync.<session>`.
///
/// Errors: [`BadToken`] for an empty id.
pub fn sync_subject(session: &str) -> Result<String, BadToken> {
    Ok(format!("arbor.sync.{}", token(session)?))
}

/// Where a worker asks, before it starts a job, whether the job's root still waits for
/// it (request/reply, core NATS; the answer is an [`AliveReply`]): `arbor.alive.<session>`.
/// No responder means the root that published it is gone (issue 38 item 4).
///
/// Errors: [`BadToken`] for an empty id.
pub fn alive_subject(session: &str) -> Result<String, BadToken> {
    Ok(format!("arbor.alive.{}", token(session)?))
}

/// The root's answer on [`alive_subject`]: the run of the session it follows now (a
/// job of another run is stale: that run's root died and the session was continued).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliveReply {
    pub run: u64,
}

/// Where a sub-session ran (metadata `ran_on`, whose shape `session::metadata` owns),
/// also the lease holder and the presence entry.
pub use crate::session::metadata::RanOn;

/// This machine's host name, as [`RanOn::host`] spells it: the first non-empty of
/// `/proc/sys/kernel/hostname`, `/etc/hostname` and `$HOSTNAME` (trimmed), else
/// `unknown`. The TUI compares it with a session's `ran_on.host` (a worker on this
/// machine is named by its id instead).
pub fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .chain(std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .find(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// One run of one sub-session, published by the root on [`job_subject`] of its pool
/// with the NATS message id `<session>-<run>` (JetStream drops a duplicate publish).
/// The sub-session already exists in the root's store: creation, limits and budgets
/// stay at the root. It carries no secret: `plan` and `metadata.config` are redacted,
/// and the worker builds providers from its own config and keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// [`JOB_VERSION`] of the writer.
    pub version: u32,
    /// The sub-session to run.
    pub session_id: SessionId,
    /// The root's run counter for this session (1 for its first task call, 2 for a
    /// resume, …): `Done`/`Failed` name it back.
    pub run: u64,
    /// The sub-session's metadata as the root stored it (its `config` redacted).
    pub metadata: Metadata,
    /// Its merged mount plan, redacted.
    pub plan: MountPlan,
    /// Its transcript before this run.
    pub transcript: Payload<Vec<Message>>,
    /// The user message of this run (the parent's context already folded in).
    pub instruction: String,
    /// The run continues the session instead of sending `instruction` (a person's
    /// continue, `arbor session continue`): the worker repairs orphaned tool calls and
    /// runs the model call that never got an answer, or sends `instruction`
    /// (`Continue.`) only when the model had answered the last message — as a local
    /// continue does. Absent in older jobs: `false`.
    #[serde(default)]
    pub continues: bool,
    /// The root config's `approvals:` rules (the policy stays at the root).
    pub approvals: serde_json::Value,
    /// The repository the sub-session works in, when there is one.
    pub files: Option<JobFiles>,
    /// When the root published the job: Unix time in milliseconds (dispatch latency).
    pub dispatched_at_ms: u64,
    /// The root counts the job's own sub-sessions in its tree (issue 38 item 7): the
    /// worker asks it with [`WorkerMsg::Reserve`] before creating one and waits for
    /// [`Control::Reserved`]. Absent in older jobs (`false`: the worker's limits).
    #[serde(default)]
    pub limits_at_root: bool,
    /// The root takes [`WorkerMsg::Events`]: the worker packs the events of a few
    /// milliseconds into one message (issue 38 item 8). Absent in older jobs
    /// (`false`: one [`WorkerMsg::Event`] each).
    #[serde(default)]
    pub packed_events: bool,
    /// The root takes [`WorkerMsg::Many`]: a first delivery's `Started`, the events
    /// and the run's end (`Done`, `Failed`) ride in the packs (a short run is one
    /// message). Absent in older jobs (`false`: each is a message of its own).
    #[serde(default)]
    pub packed_many: bool,
    /// The session's own sub-sessions as the root stores them (issue 38 item 7), for
    /// a run of a session that has delegated before: the worker puts them in its
    /// scratch store, so that a `task` call resuming one by id (or a continue of the
    /// session) finds it there; what a resumed one does goes back as for a new one
    /// ([`WorkerMsg::SubSession`] first). Absent for a first run and in older jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtree: Option<Payload<Vec<CarriedSession>>>,
}

/// The `tool:pre` events of a session's delegation calls as the root's
/// `events.jsonl` holds them (`SessionStore::task_calls`), `tool_input` emptied
/// (`null`): the call id, the tool and the sub-session it started or resumed. A worker
/// writes them into the session's `events.jsonl` in its scratch store, so that the
/// crash repair before a turn (`engine::recovered`) answers an unanswered call with
/// its sub-session's answer, or its id and how to continue it, as it would at the
/// root, instead of "cancelled: no result was recorded".
pub type TaskCalls = Vec<ToolPreEvent>;

/// One stored sub-session a [`Job`] carries to the worker ([`Job::subtree`]): its
/// metadata (its `config` as stored: redacted) and transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedSession {
    /// Its `metadata.json` as the root stores it.
    pub metadata: Metadata,
    /// Its transcript as the root stores it.
    pub transcript: Vec<Message>,
    /// Its delegation calls ([`TaskCalls`]); absent when it has none and from older
    /// roots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_calls: TaskCalls,
}

/// The repository side of a [`Job`] (issue 25's worktrees, across machines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFiles {
    /// The commit the sub-session starts from (full hex id).
    pub base_commit: String,
    /// The base name of the root's repository directory (named in errors).
    pub repo_name: String,
    /// The sub-session's working directory relative to its worktree root (`""`: the
    /// root), `/`-separated.
    pub relative_dir: String,
    /// Whether the sub-session may write: `false` needs only the commit checked out
    /// and returns no [`Changes`].
    pub writes: bool,
}

/// A writing sub-session's work, returned with [`WorkerMsg::Done`]: `git diff
/// --binary <base_commit>` of its worktree with new files included, to be applied by
/// the root in the sub-session's own worktree there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// The commit the patch applies to.
    pub base_commit: String,
    /// The patch (empty when nothing changed).
    pub patch: String,
}

/// What a worker sends about the session it runs, on [`out_subject`], in order, with
/// the [`EPOCH_HEADER`] of its lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerMsg {
    /// The worker took the job and holds the session's lease at `epoch`; `attempt` is
    /// JetStream's delivery count of the job (1 the first time).
    Started {
        ran_on: RanOn,
        epoch: u64,
        attempt: u32,
    },
    /// One event the session published on the worker's bus (including
    /// `message:appended`, which carries each transcript message, and the live-only
    /// `content_block:delta`).
    Event { event: Box<Event> },
    /// Events the session published one after another, in order: what
    /// [`WorkerMsg::Event`] carries, packed into one message (one signature, one
    /// stored message) for jobs with [`Job::packed_events`].
    Events { events: Vec<Event> },
    /// Messages of the run sent one after another, in order, as one message (one
    /// signature, one stored message, one metadata write at the root), for jobs with
    /// [`Job::packed_many`]: a first delivery's `Started`, an [`WorkerMsg::Events`]
    /// pack, the run's end; never a `Many` inside. Wire form
    /// `{"kind":"many","msgs":[{"kind":"started",…},{"kind":"events",…},{"kind":"done",…}]}`.
    Many { msgs: Vec<WorkerMsg> },
    /// The run ended: the answer, the status it ended in, the worker's metadata after
    /// it (the root keeps its own ids and paths), and a writing session's changes.
    Done {
        run: u64,
        status: SessionStatus,
        response: String,
        turn_count: u64,
        error: Option<String>,
        metadata: Box<Metadata>,
        changes: Option<Payload<Changes>>,
    },
    /// The worker could not run the job at all (a missing commit, no provider, a job of
    /// another version): it would fail the same way again, so the job is acked.
    Failed { run: u64, error: String },
    /// The job's session (or one of its own sub-sessions, `parent`) is about to create
    /// sub-session `child` of agent `agent`: the root counts it in its tree and answers
    /// [`Control::Reserved`] (issue 38 item 7). Only for jobs with `limits_at_root`.
    Reserve {
        parent: SessionId,
        child: SessionId,
        agent: String,
    },
    /// One of the job's own sub-sessions (a grandchild of the root's session, or
    /// deeper) as the worker's store holds it: sent when it is created (before its
    /// first event), when a turn of it ends and before `Done`. The root keeps it in
    /// its store, with its own working directory and `ran_on`; its events come as
    /// [`WorkerMsg::Event`]s carrying its id.
    SubSession { metadata: Box<Metadata> },
}

/// What the root tells the worker running a session, on [`ctl_subject`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Control {
    /// A person's answer to the session's `approval:required` for `tool_call_id`.
    Approval {
        tool_call_id: String,
        decision: WireDecision,
    },
    /// Steer the running turn (`EngineCommand::Steer`).
    Steer { text: String },
    /// Queue a message after the running turn (`EngineCommand::Queue`).
    Queue { text: String },
    /// Cancel the running turn (its process groups are killed).
    Cancel,
    /// Take the waiting message `id` back unsent (`EngineCommand::Unqueue`): `id` is
    /// the worker's own, from the `prompt:queued` event it streamed. Wire form
    /// `{"kind":"unqueue","id":3}`.
    Unqueue { id: u64 },
    /// The root's answer to [`WorkerMsg::Reserve`] of `child`: counted (`refused`
    /// absent) or refused, with the text the task call's error result gives.
    Reserved {
        child: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// `control` for one of the job's own sub-sessions, `session_id` (a person at the
    /// root answering its approval, steering it, cancelling it). Wire form
    /// `{"kind":"of","session_id":"…","control":{"kind":"cancel"}}`.
    Of {
        session_id: String,
        control: Box<Control>,
    },
}

/// [`ApprovalDecision`] on the wire: `{"allow":"once"}`, `{"allow":"always_tool"}`,
/// `{"allow":{"always_prefix":"cargo "}}`, `{"deny":"reason"|null}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireDecision {
    Allow(WireScope),
    Deny(Option<String>),
}

/// [`AllowScope`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireScope {
    Once,
    AlwaysTool,
    AlwaysPrefix(String),
}

impl From<&ApprovalDecision> for WireDecision {
    fn from(d: &ApprovalDecision) -> Self {
        match d {
            ApprovalDecision::Allow { scope } => WireDecision::Allow(match scope {
                AllowScope::Once => WireScope::Once,
                AllowScope::AlwaysTool => WireScope::AlwaysTool,
                AllowScope::AlwaysPrefix(p) => WireScope::AlwaysPrefix(p.clone()),
            }),
            ApprovalDecision::Deny { reason } => WireDecision::Deny(reason.clone()),
        }
    }
}

impl From<WireDecision> for ApprovalDecision {
    fn from(d: WireDecision) -> Self {
        match d {
            WireDecision::Allow(scope) => ApprovalDecision::Allow {
                scope: match scope {
                    WireScope::Once => AllowScope::Once,
                    WireScope::AlwaysTool => AllowScope::AlwaysTool,
                    WireScope::AlwaysPrefix(p) => AllowScope::AlwaysPrefix(p),
                },
            },
            WireDecision::Deny(reason) => ApprovalDecision::Deny { reason },
        }
    }
}

/// The root's answer on [`sync_subject`]: the session as its store holds it now, which
/// a redelivered job resumes from (crash repair, never re-running an answered call).
/// `error` is set instead when the root does not run that session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncReply {
    /// The session's metadata as the root stores it now.
    pub metadata: Option<Box<Metadata>>,
    /// Its transcript as the root stores it now.
    pub transcript: Option<Payload<Vec<Message>>>,
    /// Its own sub-sessions as the root stores them now ([`Job::subtree`]'s shape):
    /// those the job carried, with what the lost worker's run did to them, and those
    /// that run created. The redelivered run starts from these, not from the job's
    /// copies. Absent from older roots, and when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtree: Option<Payload<Vec<CarriedSession>>>,
    /// The session's delegation calls as the root stores them now ([`TaskCalls`]):
    /// the lost worker's calls included, so the redelivered run's repair links each
    /// to its sub-session. Absent when it has none and from older roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_calls: Option<Payload<TaskCalls>>,
    /// Why the root sends no session (set instead of the others).
    pub error: Option<String>,
}

/// A session's lease in [`LEASES_BUCKET`]: who runs it and under which epoch. The
/// epoch grows by one at each takeover; the root applies only messages of the current
/// one (see `lease`), signed with `key` (see `seal`, `pin`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub epoch: u64,
    pub ran_on: RanOn,
    /// The job's stream sequence number.
    pub job_seq: u64,
    /// When this holder took it: Unix ms.
    pub acquired_ms: u64,
    /// The holder's public key for this run (`seal::Signer::public_key`: base64 of an
    /// Ed25519 key); every message it sends is signed with it. Empty in a lease of an
    /// arbor before issue 34, whose messages the root refuses.
    #[serde(default)]
    pub key: String,
    /// The holder's ack wait in milliseconds: it renews the lease every third of it,
    /// and the root counts the lease expired when it saw no renewal for two thirds of
    /// it (`pin`). 0 in an older lease.
    #[serde(default)]
    pub ack_wait_ms: u64,
}

/// A live worker in [`WORKERS_BUCKET`] (what `arbor doctor` lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    pub ran_on: RanOn,
    pub pool: String,
    /// Jobs it runs at once.
    pub slots: u32,
    /// Jobs it runs now.
    pub busy: u32,
    /// Unix ms when the process started.
    pub started_ms: u64,
    /// arbor's version (`CARGO_PKG_VERSION`).
    pub version: String,
}

/// Now as Unix time in milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_ids_and_escape_the_rest_one_to_one() {
        let child = "0123456789abcdef-fedcba9876543210_explorer";
        assert_eq!(token(child).unwrap(), child);
        assert_eq!(token("a:b.c").unwrap(), "a=3Ab=2Ec");
        assert_ne!(token("a=3A").unwrap(), token("a:").unwrap());
        assert_eq!(token("a=3A").unwrap(), "a=3D3A");
        assert!(token("").is_err());
        assert_eq!(
            out_subject("x y").unwrap(),
            "arbor.out.x=20y",
            "a space never splits a subject"
        );
        assert_eq!(consumer_name("gpu").unwrap(), "arbor-pool-gpu");
    }

    #[test]
    fn decisions_round_trip_through_the_wire_form() {
        for d in [
            ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
            ApprovalDecision::Allow {
                scope: AllowScope::AlwaysPrefix("cargo ".into()),
            },
            ApprovalDecision::Deny {
                reason: Some("no".into()),
            },
        ] {
            let json = serde_json::to_string(&Control::Approval {
                tool_call_id: "c1".into(),
                decision: WireDecision::from(&d),
            })
            .unwrap();
            let Control::Approval { decision, .. } = serde_json::from_str(&json).unwrap() else {
                panic!("{json}");
            };
            assert_eq!(ApprovalDecision::from(decision), d);
        }
    }

    #[test]
    fn unqueue_has_its_wire_form() {
        let json = serde_json::to_string(&Control::Unqueue { id: 3 }).unwrap();
        assert_eq!(json, r#"{"kind":"unqueue","id":3}"#);
        assert_eq!(
            serde_json::from_str::<Control>(&json).unwrap(),
            Control::Unqueue { id: 3 }
        );
    }

    #[test]
    fn ran_on_is_stored_in_and_read_from_metadata() {
        let mut m = Metadata::default();
        assert_eq!(m.arbor.ran_on, None);
        let r = RanOn {
            worker: "w-0000abcd".into(),
            host: "h".into(),
            pid: 7,
        };
        m.arbor.ran_on = Some(r.clone());
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(stored["ran_on"]["pid"], 7);
        let back: Metadata = serde_json::from_value(stored).unwrap();
        assert_eq!(back.arbor.ran_on, Some(r));
    }
}
