//! The turn loop over a long history: every request shares the live session's
//! transcript (no message copied for the request), and appends after a call grow that
//! same transcript in place (no copy-on-write copy: the loop released its request).
//! And durability: every message is on disk as it is appended, while the session's
//! files are fsynced once per turn, however many messages it has. And bounds: one
//! message's tool calls run at most 16 at once.

use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::json;

use crate::agent::Bundle;
use crate::agent::Registry;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::engine::testing::{ScriptedProvider, Step, last_user_text};
use crate::engine::{ApprovalMode, Runtime, RuntimeHooks, RuntimeOptions};
use crate::paths::Paths;
use crate::provider::{ChatRequest, Provider, ProviderError, ProviderResponse, StreamEvent};
use crate::session::message::{AssistantMessage, ContentBlock, Message, ToolCall};
use crate::session::{EventBus, SessionStatus};
use crate::tool::{Tool, ToolContext, ToolOutput, ToolSpec};

const HISTORY: usize = 2_000;

/// Answers the first call of a turn with a tool call and the call after its result
/// with text; records the address and length of each request's transcript. Keeps no
/// request (as the real clients, which drop it once the body is encoded).
#[derive(Debug, Default)]
struct Recorder {
    seen: Mutex<Vec<(usize, usize)>>,
}

impl Provider for Recorder {
    fn id(&self) -> &str {
        "recorder"
    }

    fn module(&self) -> &str {
        "provider-recorder"
    }

    fn default_model(&self) -> &str {
        "recorder-model"
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let messages = &request.messages;
        self.seen
            .lock()
            .unwrap()
            .push((Arc::as_ptr(messages) as usize, messages.len()));
        let response = if matches!(messages.last(), Some(Message::Tool(_))) {
            ProviderResponse {
                content: vec![ContentBlock::Text {
                    text: "done".into(),
                }],
                ..Default::default()
            }
        } else {
            ProviderResponse {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    tool: "no_such_tool".into(),
                    arguments: json!({}).into(),
                }],
                ..Default::default()
            }
        };
        stream::iter([Ok(StreamEvent::Completed(response))]).boxed()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        async { Ok(vec!["recorder-model".to_string()]) }.boxed()
    }
}

fn runtime(
    root: &std::path::Path,
    provider: Arc<dyn Provider>,
    extra_tools: Vec<Arc<dyn Tool>>,
) -> Arc<Runtime> {
    for sub in ["home", "amp", "work"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let dir = root.to_path_buf();
    let env: crate::engine::providers::Env = Arc::new(move |k: &str| match k {
        "HOME" => Some(dir.join("home").display().to_string()),
        "AMPLIFIER_HOME" => Some(dir.join("amp").display().to_string()),
        "ARBOR_CONFIG" => Some(dir.join("config.yaml").display().to_string()),
        _ => None,
    });
    let paths = Paths::from_env_map(&*env, root.join("work"));
    let bundle = Bundle {
        name: "test-bundle".into(),
        version: None,
        description: None,
        path: None,
        mount_plan: MountPlan::from_value(json!({"instruction": "You are root."})),
        agent_files: Vec::new(),
        warnings: Vec::new(),
    };
    let registry = Arc::new(Registry::load_with_vars(&paths, &bundle, &[]));
    let (_tx, registry) = tokio::sync::watch::channel(registry);
    let options = RuntimeOptions {
        paths,
        config: ArborConfig {
            providers: vec![ModuleEntry {
                module: "provider-openai".into(),
                config: json!({"base_url": "http://127.0.0.1:9/v1"}),
                ..Default::default()
            }],
            ..Default::default()
        },
        bundle,
        registry,
        env,
        bus: EventBus::new(),
        // Test tools are not known to the approval policy (they would ask).
        approval_mode: ApprovalMode::Headless { yes: true },
    };
    let hooks = RuntimeHooks {
        provider_factory: Some(Arc::new(move |_entry| Ok(provider.clone()))),
        extra_tools,
    };
    Runtime::with_hooks(options, hooks)
}

#[tokio::test]
async fn requests_share_the_live_transcript_and_appends_do_not_copy_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(Recorder::default());
    let rt = runtime(dir.path(), provider.clone(), Vec::new());
    let id = rt.create_root(None).unwrap();
    let live = rt.live(&id).unwrap();
    for i in 0..HISTORY / 2 {
        live.append(Message::user(format!("question {i}")));
        live.append(Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::Text {
                text: format!("answer {i}").into(),
            }],
            ..Default::default()
        }));
    }

    let out = rt.run_turn(&id, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    assert_eq!(out.response, "done");

    let transcript = live.transcript_snapshot();
    // + the prompt, the tool call, its result and the answer.
    assert_eq!(transcript.len(), HISTORY + 4);
    let here = Arc::as_ptr(&transcript) as usize;
    let seen = provider.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [(here, HISTORY + 1), (here, HISTORY + 3)],
        "a request copied the transcript, or an append copied it because a request \
         was still alive"
    );
}

/// A provider calling `probe` until the turn has `rounds` tool results (a prompt of
/// `short`: none), then answering.
fn looper(rounds: usize) -> Arc<dyn Provider> {
    Arc::new(ScriptedProvider::new(move |request| {
        let results = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User(_)))
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        if last_user_text(request) == "short" || results >= rounds {
            vec![Step::text("done")]
        } else {
            vec![Step::call(format!("c{}", results + 1), "probe", json!({}))]
        }
    }))
}

/// Records how many lines the calling session's `transcript.jsonl` has on disk when
/// it runs.
struct Probe {
    /// The sessions directory, known once the runtime is built.
    sessions: Arc<std::sync::OnceLock<std::path::PathBuf>>,
    seen: Arc<Mutex<Vec<usize>>>,
}

impl Tool for Probe {
    fn module(&self) -> &str {
        "tool-probe"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "probe".into(),
            description: "counts transcript lines on disk".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    fn call(&self, _input: serde_json::Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let sessions = self.sessions.get().unwrap();
        let path = sessions
            .join(ctx.session_id.as_str())
            .join("transcript.jsonl");
        let lines = std::fs::read_to_string(path).unwrap().lines().count();
        self.seen.lock().unwrap().push(lines);
        async { ToolOutput::ok("probed") }.boxed()
    }
}

#[tokio::test]
async fn each_message_is_on_disk_at_once_and_a_turn_syncs_once() {
    const ROUNDS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sessions = Arc::new(std::sync::OnceLock::new());
    let probe = Probe {
        sessions: sessions.clone(),
        seen: seen.clone(),
    };
    let rt = runtime(dir.path(), looper(ROUNDS), vec![Arc::new(probe)]);
    sessions.set(rt.paths().sessions_dir()).unwrap();
    let long = rt.create_root(None).unwrap();
    let live = rt.live(&long).unwrap();
    assert_eq!(live.fsyncs(), 0, "creating a session syncs nothing yet");

    let out = rt.run_turn(&long, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    // The prompt, 20 × (call, result), the answer.
    assert_eq!(live.transcript_snapshot().len(), 2 + 2 * ROUNDS);
    // Call k ran with the prompt, k - 1 rounds and its own call on disk.
    let expected: Vec<usize> = (1..=ROUNDS).map(|k| 2 * k).collect();
    assert_eq!(*seen.lock().unwrap(), expected, "appended but not flushed");
    let long_turn = live.fsyncs();

    let short = rt.create_root(None).unwrap();
    let out = rt.run_turn(&short, "short".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let short_turn = rt.live(&short).unwrap().fsyncs();
    assert_eq!(
        long_turn, short_turn,
        "a turn of 42 messages synced more than one of 2"
    );
    // One sync: transcript, events, metadata.json, its backup, the directory.
    assert!((1..=5).contains(&long_turn), "{long_turn} fsyncs");
}

/// A turn writes its start (start time and `running`) in one metadata write: every
/// write creates a file, and a sub-session's first request waits for these. Seen from
/// the first request: the backup (the version before the last write) has no start
/// time yet.
#[tokio::test]
async fn a_turn_starts_with_one_metadata_write() {
    let dir = tempfile::tempdir().unwrap();
    let sessions: Arc<std::sync::OnceLock<std::path::PathBuf>> = Arc::default();
    let seen: Arc<Mutex<Vec<(serde_json::Value, serde_json::Value)>>> = Arc::default();
    let (at, into) = (sessions.clone(), seen.clone());
    let provider = Arc::new(ScriptedProvider::new(move |_request| {
        let root = at.get().unwrap();
        let session = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .unwrap();
        let read = |name: &str| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(session.join(name)).unwrap()).unwrap()
        };
        into.lock()
            .unwrap()
            .push((read("metadata.json"), read("metadata.json.backup")));
        vec![Step::text("done")]
    }));
    let rt = runtime(dir.path(), provider, Vec::new());
    sessions.set(rt.paths().sessions_dir()).unwrap();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    let seen = seen.lock().unwrap();
    let (now, before) = &seen[0];
    assert_eq!(now["status"], "running");
    assert!(now["turn_started"].is_string(), "{now}");
    assert!(before["turn_started"].is_null(), "{before}");
    assert_ne!(before["status"], "running", "{before}");
}

/// A tool that holds each call for 50 ms and records how many calls run at once.
#[derive(Default)]
struct Gauge {
    running: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    done: Arc<std::sync::atomic::AtomicUsize>,
}

impl Tool for Gauge {
    fn module(&self) -> &str {
        "tool-gauge"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "gauge".into(),
            description: "counts calls running at once".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    fn call(&self, _input: serde_json::Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        use std::sync::atomic::Ordering::SeqCst;
        let (running, most, done) = (self.running.clone(), self.most.clone(), self.done.clone());
        async move {
            let now = running.fetch_add(1, SeqCst) + 1;
            most.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            running.fetch_sub(1, SeqCst);
            done.fetch_add(1, SeqCst);
            ToolOutput::ok("measured")
        }
        .boxed()
    }
}

/// Issue 22 "Resources": 40 tool calls in one message run at most
/// `MAX_CONCURRENT_CALLS` (16) at once; the rest queue and all 40 finish, their
/// results in call order. (Before: all 40 at once.)
#[tokio::test]
async fn one_messages_calls_run_at_most_sixteen_at_once() {
    use std::sync::atomic::Ordering::SeqCst;
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let gauge = Gauge::default();
    let (most, done) = (gauge.most.clone(), gauge.done.clone());
    let provider = Arc::new(ScriptedProvider::new(|request| {
        if matches!(request.messages.last(), Some(Message::Tool(_))) {
            vec![Step::text("done")]
        } else {
            (0..CALLS)
                .map(|i| Step::call(format!("g{i}"), "gauge", json!({})))
                .collect()
        }
    }));
    let rt = runtime(dir.path(), provider, vec![Arc::new(gauge)]);
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    assert_eq!(done.load(SeqCst), CALLS);
    let most = most.load(SeqCst);
    assert_eq!(
        most,
        crate::engine::calls::MAX_CONCURRENT_CALLS,
        "{most} calls ran at once"
    );
    let results: Vec<String> = rt
        .live(&id)
        .unwrap()
        .transcript_snapshot()
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t.tool_call_id.to_string()),
            _ => None,
        })
        .collect();
    let expected: Vec<String> = (0..CALLS).map(|i| format!("g{i}")).collect();
    assert_eq!(results, expected);
}
