//! The turn loop (SPEC §8): user message → model call → tool calls → … → final answer.
//!
//! Owns: one turn of one live session — transcript repair before it, the user message,
//! the loop of model calls bounded by `max_iterations`, appending assistant messages
//! (`metadata.author`, `metadata.model`, `metadata.usage`) and tool results in call
//! order, and ending the turn as `completed`, `failed` or `cancelled` with metadata
//! written and files synced. Does not own: streaming one call (`stream`), running tool
//! calls (`calls`), which session runs (`runtime`, `spawn`), prices (`routing::prices`).
//! Reads the runtime's setup through [`TurnEnv`] and never names the runtime.
//!
//! Steer and queue (SPEC §13): before every model call the steers waiting in the
//! session's inbox are appended as user messages (after the tool results of the call
//! before), so the model sees them in the same turn; when a turn completes with
//! messages still waiting, the next turn starts at once under the same running guard
//! (the steers first, then each queued message as a turn of its own).
//!
//! Usage: every model call's usage ([`usage_record`]: `{input_tokens, output_tokens,
//! cache_read_tokens, cache_creation_tokens, cost?}`, `cost` in USD only when the
//! config's price table has the model) goes into the assistant message's
//! `metadata.usage`, into `provider:response` `data.usage`, and is added to the
//! session metadata's `usage` (tokens summed; `cost` summed over the priced calls,
//! absent while none was priced). A call that fails leaves no usage (the APIs report
//! none for it).
//!
//! Before each model call: a session whose budget record (`config::budget`, metadata
//! `extra.budget`) is used up ends the turn as `paused`, keeping everything; then the
//! call waits for a slot of its provider endpoint when the provider entry sets
//! `max_concurrent` (`slots`), the session showing `queued` while it waits. A paused
//! session's next turn (any resume) grants one more budget of the same size.
//!
//! Every turn ends with `session:status`, `orchestrator:complete`
//! (`{status, turn_count, usage, error?}`, `usage` being the turn's total in the shape
//! above) and `session:end` (`{status}`): arbor treats each turn like one Amplifier run
//! of the session, so `session:end` marks the end of a turn, not of the session's life
//! (any session can be resumed later). A failed model call publishes `provider:error`
//! (`stream::error_event`, `retrying: false`) first.
//!
//! A panic anywhere in the loop (a provider, a tool call, a bug of the engine) ends the
//! turn as `failed` with `error` `internal error: … panicked: <message>` through the
//! same closing events (the message is logged too): the process and the other
//! sessions carry on.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::calls;
use super::compact::CompactError;
use super::env::TurnEnv;
use super::gate::Gate;
use super::inbox::Pending;
use super::live::{LiveSession, TurnGuard};
use super::outcome::{EngineError, TurnError, TurnOutcome};
use super::panics;
use super::prompt;
use super::providers;
use super::recovered;
use super::request_view;
use super::slots::{ProviderSlots, Slot};
use super::stream::{CallEnd, call_model, error_event};
use super::tool_hooks;
use super::transfer;
use crate::agent::select::TRANSFER_KEY;
use crate::agent::tree::AgentTree;
use crate::tool::ToolOutput;

use crate::config::budget::{Budget, BudgetState, Spent};
use crate::config::response::ResponseLimits;
use crate::config::retry::RetryPolicy;
use crate::provider::{ChatRequest, ProviderResponse};
use crate::routing::prices::PriceTable;
use crate::session::message::{Message, ToolCall, now_rfc3339};
use crate::session::protocol::{
    AgentTransferEvent, CancelCompletedEvent, OrchestratorCompleteEvent, PromptSubmitEvent,
    ProviderRequestEvent, SessionBudgetEvent, SessionEndEvent, ToolEffect,
};
use crate::session::{EngineEvent, SessionStatus, Usage};

/// How the loop ended.
struct LoopEnd {
    status: SessionStatus,
    response: String,
    error: Option<TurnError>,
}

/// Tokens and cost of the model calls of one turn.
#[derive(Default)]
struct TurnUsage {
    usage: Usage,
    /// Sum over the priced calls; `None` while no call was priced.
    cost: Option<f64>,
}

impl TurnUsage {
    fn add(&mut self, usage: &Usage, cost: Option<f64>) {
        self.usage.add(usage);
        if let Some(c) = cost {
            self.cost = Some(round_cost(self.cost.unwrap_or(0.0) + c));
        }
    }
}

/// What starts a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// A new user message (appended verbatim). A root's first one also names the
    /// session (metadata `name`, `session:renamed`) unless it has a name.
    Prompt(String),
    /// Continue a stopped session (SPEC §13 `r`): when the model never answered the
    /// last message (it is a user message or a tool result, after repair) its model
    /// call runs again with no new message; otherwise [`CONTINUE_PROMPT`] is sent as a
    /// visible user message.
    Continue,
    /// Messages taken from the session's inbox (steers its last turn ended before, or
    /// one queued message), each appended verbatim (`prompt:sent`).
    Inbox(Vec<Pending>),
}

/// The user message [`Input::Continue`] sends when the model had answered.
pub const CONTINUE_PROMPT: &str = "Continue.";

/// Runs one turn of `live` with `prompt`. `parent` is the calling turn's token when a
/// parent session's task call runs this turn (cancelling the parent cascades).
///
/// Errors before anything is written: the session already runs a turn
/// (`EngineError::Other`), or no provider of its plan can be built (`NoProvider`).
pub(crate) async fn run(
    env: &TurnEnv,
    live: Arc<LiveSession>,
    prompt: String,
    parent: Option<CancellationToken>,
) -> Result<TurnOutcome, EngineError> {
    run_input(env, live, Input::Prompt(prompt), parent).await
}

/// [`run`] started by any [`Input`].
///
/// Before the input, orphaned tool calls get synthetic results (`repair`): "interrupted"
/// ones when the session was interrupted (its process died mid-turn), "cancelled"
/// ones otherwise, "not run" for calls that were waiting for approval.
///
/// Turns follow while the one before completed and the session's inbox holds
/// messages (`inbox`: steers the turn ended before, then each queued message as a
/// turn of its own); the outcome is the last turn's.
pub(crate) async fn run_input(
    env: &TurnEnv,
    live: Arc<LiveSession>,
    input: Input,
    parent: Option<CancellationToken>,
) -> Result<TurnOutcome, EngineError> {
    if live.is_running() {
        return Err(busy(&live));
    }
    // The session's own provider must build before anything is written.
    providers::provider_for(env, &live)?;
    let guard = live.begin_turn(parent.as_ref())?;
    let chained = chain(env, &live, guard, Some(input)).await;
    chained.ok_or_else(|| EngineError::Other("internal error: no turn ran".into()))
}

/// Runs the messages waiting in `live`'s inbox as turns when no turn runs (a steer or
/// queued message offered to an idle session: SPEC §13, it starts the next turn at
/// once). `Ok(None)` when a running turn will take them, or nothing waits any more.
///
/// Errors: no provider of its plan can be built (`NoProvider`); the waiting messages
/// are then returned unsent (`prompt:unqueued`, `returned`).
pub(crate) async fn run_inbox(
    env: &TurnEnv,
    live: Arc<LiveSession>,
) -> Result<Option<TurnOutcome>, EngineError> {
    match providers::provider_for(env, &live) {
        Ok(_) => {}
        Err(e) => {
            if let Ok(mut guard) = live.begin_turn(None) {
                live.next_input(&mut guard, false);
            }
            return Err(e);
        }
    };
    let guard = match live.begin_turn(None) {
        Ok(guard) => guard,
        Err(EngineError::Busy { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(chain(env, &live, guard, None).await)
}

/// Runs turns under `guard`: `first`, then whatever the inbox holds after each
/// completed turn (`LiveSession::next_input`), until the session stops running.
/// Returns the last turn's outcome (`None`: no turn ran).
async fn chain(
    env: &TurnEnv,
    live: &Arc<LiveSession>,
    mut guard: TurnGuard,
    first: Option<Input>,
) -> Option<TurnOutcome> {
    let mut next = first.or_else(|| live.next_input(&mut guard, true).map(Input::Inbox));
    let mut last = None;
    while let Some(input) = next {
        let token = guard.token.clone();
        let outcome = one_turn(env, live, input, &token).await;
        let completed = outcome.status == SessionStatus::Completed;
        next = live.next_input(&mut guard, completed).map(Input::Inbox);
        last = Some(outcome);
    }
    drop(guard);
    last
}

/// One turn of `live` started by `input`, under the running `token`.
async fn one_turn(
    env: &TurnEnv,
    live: &Arc<LiveSession>,
    input: Input,
    token: &CancellationToken,
) -> TurnOutcome {
    recovered::repair_before_turn(env, live);
    let prompts = prompts_of(live, &input);
    super::isolate::before_turn(live).await;
    // The turn's user messages are stored after the prompt hooks: count them in.
    super::checkpoints::before_turn(env, live, prompts.len()).await;
    grant_budget(live);
    start_turn(live, &prompts);
    let tree = transfer::session_tree(env, live);
    let first = match &tree {
        Some(tree) => {
            let next = transfer::next_agent(tree, live);
            live.update_metadata(|m| m.arbor.active_agent = Some(next.clone()));
            next
        }
        None => live.agent_name.clone(),
    };
    let (prices, retry, limits) = call_settings(env);
    let hosted = super::hosted::spec_of(live);
    let gate = Gate::new(env, live);
    let ctx = CallCtx {
        env,
        tree: tree.as_ref(),
        prices: &prices,
        retry: &retry,
        gate: &gate,
        limits: &limits,
        slots: &env.slots,
    };
    let mut usage = TurnUsage::default();
    Box::pin(tool_hooks::session_start(live, &gate)).await;
    let end = match Box::pin(tool_hooks::prompt_submit(live, &gate, &prompts)).await {
        // A blocked prompt is never stored (Claude Code erases it from the context).
        tool_hooks::PromptVerdict::Blocked(reason) => LoopEnd {
            status: SessionStatus::Failed,
            response: String::new(),
            error: Some(TurnError::HookBlocked { reason }),
        },
        tool_hooks::PromptVerdict::Proceed(context) => {
            append_input(live, input);
            for text in context {
                live.append(system_note(format!("[UserPromptSubmit hook] {text}")));
            }
            match &hosted {
                // An external ACP agent answers instead of the model loop.
                Some(spec) => {
                    let run = async {
                        let tools = env.mount_tools(live, &live.plan).await;
                        let on =
                            super::hosted::drive(env, live, &gate, &tools, spec, &prompts, token);
                        hosted_end(on.await, &live.agent_name, &mut usage)
                    };
                    caught(live, run).await
                }
                None => drive_caught(live, &ctx, first, token, &mut usage).await,
            }
        }
    };
    let end = stop_hooks(live, &ctx, (end, hosted.is_some()), token, &mut usage).await;
    if let Some(tree) = &tree {
        let next = transfer::next_agent(tree, live);
        live.update_metadata(|m| m.arbor.active_agent = Some(next));
    }
    let outcome = finish(live, end, &usage);
    super::checkpoints::after_turn(env, live).await;
    super::isolate::after_turn(live).await;
    outcome
}

/// The turn has started: its start time and `running` in one metadata write (each
/// write creates a file: SPEC §16 spawn cost), then `session:status` and a
/// `prompt:submit` per prompt.
fn start_turn(live: &LiveSession, prompts: &[String]) {
    live.update_metadata(|m| {
        m.arbor.turn_started = Some(now_rfc3339());
        m.status = SessionStatus::Running;
    });
    live.emit(EngineEvent::status(SessionStatus::Running));
    for prompt in prompts {
        live.emit(EngineEvent::PromptSubmit(PromptSubmitEvent {
            prompt: prompt.clone(),
        }));
    }
}

/// Runs the `Stop` / `SubagentStop` hooks after the turn ended with `end`; one that
/// blocks a completed turn continues it with its reason (Claude Code's contract;
/// `stop_hook_active` is set from the second run on), at most [`STOP_CONTINUES`]
/// times — never a `hosted` agent's turn. Returns how the turn finally ended.
async fn stop_hooks(
    live: &LiveSession,
    ctx: &CallCtx<'_>,
    (mut end, hosted): (LoopEnd, bool),
    token: &CancellationToken,
    usage: &mut TurnUsage,
) -> LoopEnd {
    let mut continued = 0;
    loop {
        let active = continued > 0;
        let verdict = Box::pin(tool_hooks::stop(
            live,
            ctx.gate,
            end.status.as_str(),
            active,
        ));
        let Some(reason) = verdict.await else {
            return end;
        };
        if end.status != SessionStatus::Completed || token.is_cancelled() {
            return end;
        }
        let why = if hosted {
            "but a hosted agent's turn is not continued".to_string()
        } else if continued == STOP_CONTINUES {
            format!("{STOP_CONTINUES} times; the turn ends")
        } else {
            String::new()
        };
        if !why.is_empty() {
            live.notice(format!(
                "a Stop hook blocked the end of the turn {why}: {reason}"
            ));
            return end;
        }
        continued += 1;
        live.append(system_note(format!("[Stop hook] {reason}")));
        let agent = match ctx.tree {
            Some(tree) => transfer::next_agent(tree, live),
            None => live.agent_name.clone(),
        };
        end = drive_caught(live, ctx, agent, token, usage).await;
    }
}

/// [`drive`], with a panic anywhere in it ending the turn failed.
async fn drive_caught(
    live: &LiveSession,
    ctx: &CallCtx<'_>,
    first: String,
    token: &CancellationToken,
    usage: &mut TurnUsage,
) -> LoopEnd {
    caught(live, drive(live, ctx, first, token, usage)).await
}

/// `run` (a turn's answering loop), a panic anywhere in it ending the turn failed.
async fn caught(live: &LiveSession, run: impl std::future::Future<Output = LoopEnd>) -> LoopEnd {
    let what = format!("the turn of session '{}'", live.id);
    panics::catch(&what, run)
        .await
        .unwrap_or_else(|panic| LoopEnd {
            status: SessionStatus::Failed,
            response: String::new(),
            error: Some(TurnError::Panicked(panic)),
        })
}

/// The config's prices, retry policy and response limits for a turn's model calls;
/// what the config got wrong is logged.
fn call_settings(env: &TurnEnv) -> (PriceTable, RetryPolicy, ResponseLimits) {
    let (prices, mut warnings) = PriceTable::from_config(&env.config);
    let (retry, retry_warnings) = RetryPolicy::from_config(&env.config);
    let (limits, limit_warnings) = ResponseLimits::from_config(&env.config);
    warnings.extend(retry_warnings);
    warnings.extend(limit_warnings);
    for w in warnings {
        tracing::warn!("config.yaml: {w}");
    }
    (prices, retry, limits)
}

/// Before a turn: a session whose agent sets a `budget` and that has no budget record
/// yet gets one (a sub-session's is written at spawn, tightened by the call); a paused
/// session being resumed gets one more budget of the same size (`config::budget`).
fn grant_budget(live: &LiveSession) {
    let metadata = live.metadata();
    let state = match BudgetState::of(&metadata) {
        Some(mut state) if metadata.status == SessionStatus::Paused => {
            state.regrant(&metadata);
            state
        }
        Some(_) => return,
        None => match Budget::of_overlay(&live.agent_overlay) {
            Ok(Some(budget)) => BudgetState {
                budget,
                since: Spent::of(&metadata),
            },
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(session = %live.id, "agent budget ignored: {e}");
                return;
            }
        },
    };
    live.update_metadata(|m| state.store(m));
    live.emit(budget_event(&state));
}

/// `session:budget` for a session's budget record.
pub(crate) fn budget_event(state: &BudgetState) -> EngineEvent {
    EngineEvent::SessionBudget(SessionBudgetEvent {
        tokens: state.budget.tokens,
        cost_usd: state.budget.cost_usd,
        since_tokens: state.since.tokens,
        since_cost_usd: state.since.cost_usd,
    })
}

fn busy(live: &LiveSession) -> EngineError {
    EngineError::Busy {
        session_id: live.id.clone(),
    }
}

/// What every model call of a turn uses, whichever agent answers.
struct CallCtx<'a> {
    env: &'a TurnEnv,
    /// The session's `sub_agents` tree, when its agent has one (SPEC §11).
    tree: Option<&'a AgentTree>,
    prices: &'a PriceTable,
    retry: &'a RetryPolicy,
    /// Decides whether each tool call may run (SPEC §12).
    gate: &'a Gate<'a>,
    limits: &'a ResponseLimits,
    /// The process's per-endpoint request slots (`max_concurrent`).
    slots: &'a ProviderSlots,
}

/// The loop of model calls, answered by agent `first` until a `transfer_to_agent` call
/// hands the session to another agent of its tree, which then answers in the same
/// turn with its own instruction, tools and model.
async fn drive(
    live: &LiveSession,
    ctx: &CallCtx<'_>,
    first: String,
    token: &CancellationToken,
    turn_usage: &mut TurnUsage,
) -> LoopEnd {
    let max_iterations = live.plan.max_iterations();
    let mut last_text = String::new();
    let mut active = match transfer::activate(ctx.env, live, ctx.tree, &first).await {
        Ok(active) => active,
        Err(e) => return agent_failed(&first, &e, last_text),
    };
    for iteration in 1..=max_iterations {
        if budget_exhausted(live) {
            return LoopEnd::of(SessionStatus::Paused, last_text);
        }
        // Steers sent meanwhile reach this call, after any tool results (SPEC §13).
        for steer in live.take_steers() {
            live.deliver(steer);
        }
        let (response, model) = match model_call(live, ctx, &active, iteration, token).await {
            Called::Answered { response, model } => (response, model),
            Called::Again => continue,
            Called::Ended(end) => return end.or_text(last_text),
        };
        let agent = active.name.as_str();
        let provider = active.provider.as_ref();
        let cost = record_response(live, agent, provider, &model, &response, ctx.prices);
        turn_usage.add(&response.usage, cost);
        let text = response.text();
        if !text.is_empty() {
            last_text = text;
        }
        if response.tool_calls.is_empty() {
            return LoopEnd::of(SessionStatus::Completed, last_text);
        }
        let calls = &response.tool_calls;
        let results = calls::run_calls(live, &active.tools, ctx.gate, calls, token).await;
        let handed_to = append_results(live, agent, calls, results.outputs);
        if !results.panics.is_empty() {
            return LoopEnd {
                status: SessionStatus::Failed,
                response: last_text,
                error: Some(TurnError::ToolsPanicked(results.panics)),
            };
        }
        if token.is_cancelled() {
            return LoopEnd::of(SessionStatus::Cancelled, last_text);
        }
        if let Some((target, tool_call_id)) = handed_to {
            live.emit(EngineEvent::AgentTransfer(AgentTransferEvent {
                from: agent.to_string(),
                to: target.clone(),
                tool_call_id: tool_call_id.into(),
            }));
            live.update_metadata(|m| m.arbor.active_agent = Some(target.clone()));
            active = match transfer::activate(ctx.env, live, ctx.tree, &target).await {
                Ok(next) => next,
                Err(e) => return agent_failed(&target, &e, last_text),
            };
        }
    }
    LoopEnd {
        status: SessionStatus::Failed,
        response: last_text,
        error: Some(TurnError::MaxIterations { max_iterations }),
    }
}

impl LoopEnd {
    /// An end with `status` and answer `response`, no error.
    fn of(status: SessionStatus, response: String) -> Self {
        Self {
            status,
            response,
            error: None,
        }
    }

    /// This end, its answer the turn's last text when it has none of its own (a
    /// call that failed or was cancelled before streaming any).
    fn or_text(mut self, last_text: String) -> Self {
        if self.response.is_empty() {
            self.response = last_text;
        }
        self
    }
}

/// Whether the session's budget is spent (the turn pauses before its next call).
fn budget_exhausted(live: &LiveSession) -> bool {
    let metadata = live.metadata();
    BudgetState::of(&metadata).is_some_and(|b| b.exhausted(&metadata))
}

/// What one model call of a turn came to.
enum Called {
    /// The model answered (normalized), with the model the request named.
    Answered {
        response: ProviderResponse,
        model: String,
    },
    /// Over the context window by the provider's own count: compacted, call again.
    Again,
    /// The turn ends here (cancelled, failed); its answer is the partial text
    /// streamed, if any.
    Ended(LoopEnd),
}

/// Call `iteration` of the turn to `active`'s model: waits for a slot of its endpoint,
/// fits the request view to the context limit, publishes `provider:request`, streams
/// the answer; a failure or cancellation keeps what streamed as a partial message.
async fn model_call(
    live: &LiveSession,
    ctx: &CallCtx<'_>,
    active: &transfer::Active,
    iteration: u32,
    token: &CancellationToken,
) -> Called {
    let transfer::Active {
        name: agent,
        plan,
        provider,
        provider_config,
        tools,
    } = active;
    let on_wait = || live.set_status(SessionStatus::Queued);
    let slot = match ctx
        .slots
        .acquire(provider.id(), provider_config, token, on_wait)
        .await
    {
        Slot::Cancelled => {
            return Called::Ended(LoopEnd::of(SessionStatus::Cancelled, String::new()));
        }
        slot => slot,
    };
    if live.metadata().status == SessionStatus::Queued {
        live.set_status(SessionStatus::Running);
    }
    let system = prompt::system_prompt(ctx.env, live, plan);
    let specs = tools.specs();
    // Shares the live transcript (no copy) unless it needs reordering or compacting.
    let fit = request_view::Request {
        provider,
        provider_config,
        system: &system,
        tools: &specs,
        env: ctx.env,
    };
    let messages = match request_view::messages(live, ctx.env, &fit, token).await {
        Ok(messages) => messages,
        Err(e) => return Called::Ended(compact_failed(&e, String::new())),
    };
    let request = ChatRequest {
        model: provider.default_model().to_string(),
        system,
        messages,
        tools: specs,
        max_tokens: None,
        max_time: Some(ctx.limits.max_time),
        config: provider_config.clone(),
    };
    live.emit(EngineEvent::ProviderRequest(ProviderRequestEvent {
        provider: provider.id().to_string(),
        model: request.model.clone(),
        iteration,
        message_count: request.messages.len(),
        tools: tools.names(),
    }));
    let end = call_model(live, provider, &request, token, ctx.retry, ctx.limits).await;
    // The request's stream has ended: the endpoint's slot goes to the next in line.
    drop(slot);
    // The request shares the transcript: release it before anything is appended, or
    // that append would copy the whole transcript.
    let ChatRequest {
        model, messages, ..
    } = request;
    drop(messages);
    match end {
        CallEnd::Done(response) => Called::Answered {
            response: normalize(response, iteration),
            model,
        },
        CallEnd::Failed {
            error,
            partial,
            attempts,
        } => {
            let event = error_event(provider.as_ref(), &model, &error, attempts, None);
            live.emit(EngineEvent::ProviderError(event));
            if partial.is_empty() && request_view::retry_after_overflow(live, &error) {
                return Called::Again;
            }
            keep_partial(live, agent, &partial, Some(&error.to_string()));
            Called::Ended(LoopEnd {
                status: SessionStatus::Failed,
                response: partial,
                error: Some(error.into()),
            })
        }
        CallEnd::Cancelled { partial } => {
            keep_partial(live, agent, &partial, None);
            Called::Ended(LoopEnd::of(SessionStatus::Cancelled, partial))
        }
    }
}

/// Appends the results of a model call's tool `calls` (each marked with the agent
/// that answered); returns the hand-off a successful `transfer_to_agent` asked for
/// (target agent, call id).
fn append_results(
    live: &LiveSession,
    agent: &str,
    calls: &[ToolCall],
    outputs: Vec<ToolOutput>,
) -> Option<(String, String)> {
    let mut handed_to = None;
    for (call, output) in calls.iter().zip(outputs) {
        let mut meta = json!({"author": agent});
        if let Some(ToolEffect::Transfer(target)) = &output.effect
            && !output.is_error
        {
            meta[TRANSFER_KEY] = json!(target);
            handed_to = Some((target.clone(), call.id.clone()));
        }
        let mut message = Message::tool_result(call, output.content, output.is_error);
        if let Message::Tool(t) = &mut message {
            t.metadata = Some(meta.into());
        }
        live.append(message);
    }
    handed_to
}

/// The end of a turn whose request could not be fitted to the context limit.
fn compact_failed(error: &CompactError, last_text: String) -> LoopEnd {
    LoopEnd {
        status: if matches!(error, CompactError::Cancelled) {
            SessionStatus::Cancelled
        } else {
            SessionStatus::Failed
        },
        response: last_text,
        error: Some(TurnError::ContextLimit {
            reason: error.to_string(),
        })
        .filter(|_| !matches!(error, CompactError::Cancelled)),
    }
}

/// The end of a hosted node's turn (`hosted`), its usage added to the turn's; a
/// failure is the agent `name` that could not answer, with its own message.
fn hosted_end(end: super::hosted::HostedEnd, name: &str, usage: &mut TurnUsage) -> LoopEnd {
    usage.add(&end.usage, end.cost);
    LoopEnd {
        status: end.status,
        response: end.response,
        error: end.error.map(|reason| TurnError::AgentUnavailable {
            name: name.to_string(),
            reason,
        }),
    }
}

/// The end of a turn whose agent `name` could not be set up to answer.
fn agent_failed(name: &str, error: &EngineError, last_text: String) -> LoopEnd {
    LoopEnd {
        status: SessionStatus::Failed,
        response: last_text,
        error: Some(TurnError::AgentUnavailable {
            name: name.to_string(),
            reason: error.to_string(),
        }),
    }
}

/// Ends the turn: counts it, records the status, publishes the closing events, syncs.
fn finish(live: &LiveSession, end: LoopEnd, usage: &TurnUsage) -> TurnOutcome {
    let mut error = end.error;
    if let Some(persist) = live.take_persist_error() {
        error = Some(TurnError::NotSaved {
            failure: error.map(Box::new),
            persist,
        });
    }
    if let Some(e) = &error {
        tracing::warn!(session = %live.id, "turn failed: {e}");
    }
    let status = if error.is_some() && end.status == SessionStatus::Completed {
        SessionStatus::Failed
    } else {
        end.status
    };
    live.update_metadata(|m| m.turn_count += 1);
    live.set_status(status);
    let turn_count = live.metadata().turn_count;
    if status == SessionStatus::Cancelled {
        live.emit(EngineEvent::CancelCompleted(CancelCompletedEvent {}));
    }
    live.emit(EngineEvent::OrchestratorComplete(
        OrchestratorCompleteEvent {
            status,
            turn_count,
            usage: usage_record(&usage.usage, usage.cost),
            error: error.as_ref().map(ToString::to_string),
        },
    ));
    live.emit(EngineEvent::SessionEnd(SessionEndEvent { status }));
    live.sync();
    TurnOutcome {
        session_id: live.id.clone(),
        agent: live.agent_name.clone(),
        status,
        response: end.response,
        turn_count,
        error,
    }
}

mod input;
mod response;
#[cfg(test)]
mod tests;

use input::{STOP_CONTINUES, append_input, prompts_of, system_note};
pub(crate) use response::keep_partial;
pub use response::usage_record;
use response::{normalize, record_response, round_cost};
