//! The turn loop over a long history: every request shares the live session's
//! transcript (no message copied for the request), and appends after a call grow that
//! same transcript in place (no copy-on-write copy: the loop released its request).

use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::json;

use crate::agent::Bundle;
use crate::agent::Registry;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::engine::{Runtime, RuntimeHooks, RuntimeOptions};
use crate::paths::Paths;
use crate::provider::{ChatRequest, Provider, ProviderError, ProviderResponse, StreamEvent};
use crate::session::message::{AssistantMessage, ContentBlock, Message, ToolCall};
use crate::session::{EventBus, SessionStatus};

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
                    arguments: json!({}),
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

fn runtime(root: &std::path::Path, provider: Arc<Recorder>) -> Arc<Runtime> {
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
        mount_plan: MountPlan(json!({"instruction": "You are root."})),
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
    };
    let hooks = RuntimeHooks {
        provider_factory: Some(Arc::new(move |_entry| {
            Ok(provider.clone() as Arc<dyn Provider>)
        })),
        extra_tools: Vec::new(),
    };
    Runtime::with_hooks(options, hooks)
}

#[tokio::test]
async fn requests_share_the_live_transcript_and_appends_do_not_copy_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(Recorder::default());
    let rt = runtime(dir.path(), provider.clone());
    let id = rt.create_root(None).unwrap();
    let live = rt.live(&id).unwrap();
    for i in 0..HISTORY / 2 {
        live.append(Message::user(format!("question {i}")));
        live.append(Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::Text {
                text: format!("answer {i}"),
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
