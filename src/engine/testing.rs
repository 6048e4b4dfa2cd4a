//! What the tests of the engine and its consumers (TUI scenarios, headless runs) use:
//! a scripted provider — no network, deterministic — and [`Drive`], a test's hands on
//! the [`Engine`](super::Engine) handle.
//!
//! Owns: [`ScriptedProvider`], which answers each [`ChatRequest`] with the [`Step`]s a
//! script closure returns for it, records every request, and plugs into
//! [`Engine::builder`](super::Engine::builder) via [`ScriptedProvider::factory`] (as
//! [`RuntimeHooks::provider_factory`](super::RuntimeHooks::provider_factory)); the
//! [`Drive`] trait (`drive`). Does not own: real wire clients (`provider`). No front
//! end uses this module.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use super::providers::ProviderFactory;
pub use drive::Drive;

mod drive;
use crate::provider::{ChatRequest, Provider, ProviderError, ProviderResponse, StreamEvent};
use crate::session::Usage;
use crate::session::message::{ContentBlock, Message, ToolCall};

/// One scripted piece of a streamed reply.
#[derive(Debug, Clone)]
pub enum Step {
    /// A text delta.
    Text(String),
    /// A thinking delta.
    Thinking(String),
    /// A tool call (announced with `ToolCallStarted`, its arguments streamed as one
    /// `ToolCallDelta`, listed in the response).
    Call {
        id: String,
        name: String,
        arguments: Value,
    },
    /// Ends the stream with this error (after the earlier steps' deltas).
    Fail(ProviderError),
    /// The stream stays open forever (until dropped): for cancellation tests.
    Hang,
    /// The stream panics with this message when polled to this step (after the
    /// earlier steps' deltas): for tests that a panic fails the turn, not the process.
    Panic(String),
    /// The stream waits at this barrier before its next step (proves concurrency:
    /// two streams waiting on a barrier of 2 finish only if they run at once).
    Barrier(Arc<tokio::sync::Barrier>),
}

impl Step {
    /// `Step::Text(text)`.
    pub fn text(text: impl Into<String>) -> Self {
        Step::Text(text.into())
    }

    /// `Step::Call` with the given id, tool name and JSON arguments.
    pub fn call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Step::Call {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

enum Action {
    Emit(Result<StreamEvent, ProviderError>),
    Barrier(Arc<tokio::sync::Barrier>),
    Hang,
    Panic(String),
}

type Script = dyn Fn(&ChatRequest) -> Vec<Step> + Send + Sync;

/// A provider whose replies come from a script: `script(request)` gives the steps of
/// the reply to `request`. Every reply that does not fail or hang completes with usage
/// 10 input / 5 output tokens. Cheap to clone (shared script and request log).
#[derive(Clone)]
pub struct ScriptedProvider {
    id: String,
    model: String,
    script: Arc<Script>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("id", &self.id)
            .field("model", &self.model)
            .finish()
    }
}

impl ScriptedProvider {
    /// A provider `scripted/scripted-model` answering with `script`.
    pub fn new(script: impl Fn(&ChatRequest) -> Vec<Step> + Send + Sync + 'static) -> Self {
        Self {
            id: "scripted".into(),
            model: "scripted-model".into(),
            script: Arc::new(script),
            requests: Arc::default(),
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// A factory returning this provider for every mount-plan entry.
    pub fn factory(&self) -> ProviderFactory {
        let me = self.clone();
        Arc::new(move |_entry| Ok(Arc::new(me.clone()) as Arc<dyn Provider>))
    }
}

/// The text of the last user message of `request` (empty if none).
pub fn last_user_text(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User(u) => Some(u.content.to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether the last message of `request` is a tool result (the model is being asked
/// to continue after its tool calls).
pub fn after_tool_results(request: &ChatRequest) -> bool {
    matches!(request.messages.last(), Some(Message::Tool(_)))
}

impl Provider for ScriptedProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn module(&self) -> &str {
        "provider-scripted"
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let steps = (self.script)(&request);
        if let Ok(mut log) = self.requests.lock() {
            log.push(request);
        }
        let mut actions = VecDeque::new();
        let mut response = ProviderResponse {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Default::default()
            },
            model: Some(self.model.clone()),
            ..Default::default()
        };
        let mut text = String::new();
        let mut ends = false;
        for step in steps {
            match step {
                Step::Text(t) => {
                    text.push_str(&t);
                    actions.push_back(Action::Emit(Ok(StreamEvent::TextDelta(t))));
                }
                Step::Thinking(t) => {
                    actions.push_back(Action::Emit(Ok(StreamEvent::ThinkingDelta(t))))
                }
                Step::Call {
                    id,
                    name,
                    arguments,
                } => {
                    actions.push_back(Action::Emit(Ok(StreamEvent::ToolCallStarted {
                        id: id.clone(),
                        name: name.clone(),
                    })));
                    actions.push_back(Action::Emit(Ok(StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments: arguments.to_string(),
                    })));
                    response.tool_calls.push(ToolCall {
                        id,
                        tool: name,
                        arguments: arguments.into(),
                    });
                }
                Step::Fail(error) => {
                    actions.push_back(Action::Emit(Err(error)));
                    ends = true;
                    break;
                }
                Step::Hang => {
                    actions.push_back(Action::Hang);
                    ends = true;
                    break;
                }
                Step::Panic(message) => {
                    actions.push_back(Action::Panic(message));
                    ends = true;
                    break;
                }
                Step::Barrier(barrier) => actions.push_back(Action::Barrier(barrier)),
            }
        }
        if !ends {
            if !text.is_empty() {
                response
                    .content
                    .push(ContentBlock::Text { text: text.into() });
            }
            for call in &response.tool_calls {
                response.content.push(ContentBlock::ToolCall {
                    id: call.id.clone(),
                    name: call.tool.clone(),
                    input: call.arguments.clone(),
                });
            }
            let stop = if response.tool_calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            response.stop_reason = Some(stop.into());
            actions.push_back(Action::Emit(Ok(StreamEvent::Completed(response))));
        }
        Box::pin(futures::stream::unfold(actions, |mut actions| async move {
            loop {
                match actions.pop_front()? {
                    Action::Emit(item) => return Some((item, actions)),
                    Action::Barrier(barrier) => {
                        barrier.wait().await;
                    }
                    Action::Hang => futures::future::pending::<()>().await,
                    Action::Panic(message) => std::panic::panic_any(message),
                }
            }
        }))
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        let model = self.model.clone();
        Box::pin(async move { Ok(vec![model]) })
    }
}
