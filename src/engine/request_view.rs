//! The messages of one model call, fitted to the session's context limit (issue 26).
//!
//! Owns: the one call the turn loop makes before each request ([`messages`]): load
//! the session's compaction record (from `events.jsonl`, once per process), measure
//! the view, publish `context:usage` and record `metadata.context`, run a
//! compaction plan when the view crosses the threshold (or `/compact` asked for one)
//! — with the summary call on the session's own provider — publish
//! `context:compaction`, and hand back the repaired view. Does not own: the rules of
//! compaction (`compact`), repair (`repair`), or the call itself (`turn`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::compact::record::{self, Stats};
use super::compact::summary::Summariser;
use super::compact::{
    CompactError, Compacted, ContextState, Plan, Record, Settings, estimate, plan, view,
};
use super::env::TurnEnv;
use super::live::{LiveSession, lock};
use super::providers;
use super::repair;
use crate::config::context::ContextConfig;
use crate::config::modules::CacheAccounting;
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ToolSpec};
use crate::routing::ModelRequest;
use crate::session::metadata::ContextUse;
use crate::session::protocol::{
    ContextCompactingEvent, ContextCompactionEvent, ContextUsageEvent, EngineEvent,
};
use crate::session::{Message, Usage};

/// One request's parts that compaction reads.
pub(crate) struct Request<'a> {
    /// The session's provider (the summary calls use it too).
    pub provider: &'a Arc<dyn Provider>,
    /// Its mount-plan config.
    pub provider_config: &'a Value,
    /// The request's system prompt (counts against the limit).
    pub system: &'a str,
    /// The request's tool specs (count against the limit).
    pub tools: &'a [ToolSpec],
    /// The runtime's environment, for routing the summary to model role `fast`.
    pub env: &'a TurnEnv,
}

/// The session's settings for `provider` (bundle `session.context.config` under
/// config `context:`).
pub(crate) fn settings(live: &LiveSession, env: &TurnEnv, provider: &dyn Provider) -> Settings {
    let (config, mut warnings) = ContextConfig::from_config(&env.config);
    let (bundle, more) = ContextConfig::of_plan(&live.plan);
    warnings.extend(more);
    if !warnings.is_empty() && !std::mem::replace(&mut lock(&live.context).warned, true) {
        for warning in warnings {
            tracing::warn!(session = %live.id, "{warning}");
        }
    }
    Settings::resolve(bundle, config, provider.module(), provider.default_model())
}

/// The session's compaction record, read from its `events.jsonl` on first use.
fn state(live: &LiveSession) -> ContextState {
    let mut state = lock(&live.context);
    if !state.loaded {
        state.loaded = true;
        if let Some(record) = record::latest(&live.dir()) {
            state.record = record;
        }
    }
    state.clone()
}

/// The messages to send: the transcript's request view under the session's
/// compaction, compacting first when it crosses the threshold or `/compact` is
/// pending. Errors: see [`CompactError`] (the turn fails with it).
pub(crate) async fn messages(
    live: &LiveSession,
    env: &TurnEnv,
    request: &Request<'_>,
    token: &CancellationToken,
) -> Result<Arc<Vec<Message>>, CompactError> {
    let settings = settings(live, env, request.provider.as_ref());
    let state = state(live);
    let mut transcript = live.transcript_snapshot();
    let fixed = estimate::fixed(request.system, request.tools);
    let accounting = CacheAccounting::for_module(request.provider.module());
    let tokens = plan::measure(&transcript, &state.record, fixed, accounting);
    let manual = state.pending_manual.clone();
    let trigger = match (&manual, state.force_overflow) {
        (Some(_), _) => "manual",
        (None, true) => "overflow",
        (None, false) => "auto",
    };
    let force = trigger != "auto";
    let decided = plan::plan(&transcript, &state.record, &settings, fixed, tokens, force);
    if force {
        let mut state = lock(&live.context);
        state.pending_manual = None;
        state.force_overflow = false;
    }
    let (record, tokens) = match decided? {
        Plan::Keep => (state.record, tokens),
        step => {
            let run = Run {
                settings: &settings,
                transcript: &transcript,
                old: &state.record,
                before_tokens: tokens,
                trigger,
                focus: manual,
            };
            match run.go(live, request, step, token).await? {
                Done::Compacted(record, after, _) => {
                    // A `SessionStart` hook's note (source `compact`) rides along.
                    if Box::pin(super::tool_hooks::session_start_compact(live, env)).await {
                        transcript = live.transcript_snapshot();
                    }
                    (record, after)
                }
                // A `/compact` that saved nothing keeps the view as it was.
                Done::NotSmaller { .. } => (state.record, tokens),
            }
        }
    };
    publish_use(live, tokens, &settings);
    if record.is_empty() {
        return Ok(repair::request_view_shared(&transcript));
    }
    Ok(repair::request_view_shared(&Arc::new(view::build(
        &transcript,
        &record,
    ))))
}

/// Compacts session `live` now (`/compact [focus]` on an idle session), as if its
/// next request crossed the threshold: everything before the newest turn is
/// summarised (with `focus`). Returns the compaction ([`Compacted::Now`]),
/// [`Compacted::Nothing`] when there was nothing to compact (a single turn whose tool
/// results are already stubs), [`Compacted::NotSmaller`] when the compacted request
/// came out no smaller than the one it would replace (then nothing is recorded).
pub(crate) async fn compact_now(
    live: &LiveSession,
    env: &TurnEnv,
    request: &Request<'_>,
    focus: String,
    token: &CancellationToken,
) -> Result<Compacted, CompactError> {
    let settings = settings(live, env, request.provider.as_ref());
    let state = state(live);
    let transcript = live.transcript_snapshot();
    let fixed = estimate::fixed(request.system, request.tools);
    let accounting = CacheAccounting::for_module(request.provider.module());
    let tokens = plan::measure(&transcript, &state.record, fixed, accounting);
    let step = plan::plan(&transcript, &state.record, &settings, fixed, tokens, true)?;
    if step == Plan::Keep {
        return Ok(Compacted::Nothing);
    }
    let run = Run {
        settings: &settings,
        transcript: &transcript,
        old: &state.record,
        before_tokens: tokens,
        trigger: "manual",
        focus: Some(focus),
    };
    let done = match run.go(live, request, step, token).await? {
        Done::Compacted(_, after, event) => {
            Box::pin(super::tool_hooks::session_start_compact(live, env)).await;
            publish_use(live, after, &settings);
            Compacted::Now(event)
        }
        Done::NotSmaller { tokens, compacted } => Compacted::NotSmaller { tokens, compacted },
    };
    // No response follows to write it (the summary call's usage, the context use):
    // write the metadata now.
    live.update_metadata(|_| {});
    live.sync();
    Ok(done)
}

/// What [`Run::go`] did.
enum Done {
    /// Compacted: the new record, the view's estimated tokens after, the event.
    Compacted(Record, u64, Box<ContextCompactionEvent>),
    /// A `/compact` (trigger `manual`) whose compacted request came out no smaller
    /// than the one it replaces (both estimated): nothing was recorded or published.
    NotSmaller {
        /// The request's estimated tokens as it is.
        tokens: u64,
        /// The compacted request's estimated tokens.
        compacted: u64,
    },
}

/// Whether a request the provider refused as too long (`error`) is sent again,
/// compacted first: once per transcript length, so it never loops, and only when
/// compacting can shrink it.
pub(crate) fn retry_after_overflow(live: &LiveSession, error: &ProviderError) -> bool {
    if error.kind != ProviderErrorKind::ContextTooLong {
        return false;
    }
    let transcript = live.transcript_snapshot();
    let len = transcript.len();
    let mut state = lock(&live.context);
    if state.overflow_at == Some(len) || !plan::compactable(&transcript, &state.record) {
        return false;
    }
    state.overflow_at = Some(len);
    state.force_overflow = true;
    true
}

/// Records (in memory; written with the response's metadata write) and publishes how
/// full the context is.
fn publish_use(live: &LiveSession, tokens: u64, settings: &Settings) {
    let max_tokens = settings.max_tokens;
    live.stage_metadata(|m| m.arbor.context = Some(ContextUse { tokens, max_tokens }));
    live.emit(EngineEvent::ContextUsage(ContextUsageEvent {
        tokens,
        max_tokens,
        compact_threshold: settings.compact_threshold,
    }));
}

/// One compaction about to be carried out.
struct Run<'a> {
    settings: &'a Settings,
    transcript: &'a [Message],
    /// The record before.
    old: &'a Record,
    /// The view's tokens before.
    before_tokens: u64,
    /// `auto`, `manual` (`/compact`) or `overflow` (the provider refused the request).
    trigger: &'static str,
    /// `/compact`'s focus.
    focus: Option<String>,
}

impl Run<'_> {
    /// Carries out `step`: writes the summary if it needs one, stores the new record,
    /// publishes `context:compaction` — unless a `/compact` came out no smaller than
    /// what it replaces ([`Done::NotSmaller`]: then nothing is stored, only the
    /// summary call's usage is counted).
    async fn go(
        mut self,
        live: &LiveSession,
        request: &Request<'_>,
        step: Plan,
        token: &CancellationToken,
    ) -> Result<Done, CompactError> {
        let started = Instant::now();
        let focus = self.focus.take().filter(|f| !f.trim().is_empty());
        if step != Plan::Keep {
            Box::pin(super::tool_hooks::pre_compact(
                live,
                request.env,
                self.trigger,
                focus.as_deref(),
            ))
            .await;
        }
        let (record, usage) = self
            .record_of(live, request, step, focus.as_deref(), token)
            .await?;
        let Run {
            settings,
            transcript,
            old,
            before_tokens,
            trigger,
            ..
        } = self;
        let fixed = estimate::fixed(request.system, request.tools);
        let after_view = view::build(transcript, &record);
        let after_tokens = fixed + estimate::messages(&after_view);
        if let Some(usage) = &usage {
            live.update_metadata(|m| m.usage.add(usage));
        }
        // A compaction the person asked for must pay off: a summary larger than the
        // turns it replaces is not kept (auto and overflow compactions are needed to
        // fit the limit and go on).
        let (before_est, after_est) = plan::sizes(transcript, old, &record);
        if trigger == "manual" && after_est >= before_est {
            tracing::info!(
                session = %live.id,
                before_est,
                after_est,
                "nothing saved by compacting: not recorded"
            );
            return Ok(Done::NotSmaller {
                tokens: fixed + before_est,
                compacted: fixed + after_est,
            });
        }
        let stats = Stats {
            before_tokens,
            after_tokens,
            before_messages: view::build(transcript, old).len() as u64,
            after_messages: after_view.len() as u64,
            removed: record.covers.saturating_sub(old.covers) as u64,
            truncated: stubs_between(transcript, old, &record),
            budget: settings.max_tokens,
            target: settings.target_tokens(),
            trigger,
            focus,
            summary_tokens: usage.as_ref().map_or(0, Usage::total),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let event = record::event(&record, stats);
        lock(&live.context).record = record.clone();
        live.emit(EngineEvent::ContextCompaction(event.clone()));
        Ok(Done::Compacted(record, after_tokens, Box::new(event)))
    }
    /// The record `step` leads to, with the usage of the summary call when it wrote a
    /// summary (on the session's fast model, told to keep `focus`).
    async fn record_of(
        &self,
        live: &LiveSession,
        request: &Request<'_>,
        step: Plan,
        focus: Option<&str>,
        token: &CancellationToken,
    ) -> Result<(Record, Option<Usage>), CompactError> {
        Ok(match step {
            Plan::Keep => (self.old.clone(), None),
            Plan::Stub(record, _) => (record, None),
            Plan::Summarise { from, mut record } => {
                live.emit(EngineEvent::ContextCompacting(ContextCompactingEvent {
                    trigger: self.trigger.to_string(),
                    messages: record.covers.saturating_sub(from) as u64,
                }));
                let summariser = Summariser {
                    provider: request.provider,
                    config: request.provider_config,
                    model: fast_model(live, request).await,
                    max_tokens: self.settings.max_tokens,
                    allowance: plan::summary_allowance(self.settings),
                };
                let summary = summariser
                    .summarise(
                        self.old.summary.as_deref(),
                        &self.transcript[from..record.covers],
                        focus,
                        token,
                    )
                    .await?;
                record.summary = Some(summary.text);
                (record, Some(summary.usage))
            }
        })
    }
}

/// The model the summary asks: the session's provider's model for role `fast` when
/// routing finds one on that provider (issue 26: "model role `fast` when
/// routable"), else empty (the provider's default model).
async fn fast_model(live: &LiveSession, request: &Request<'_>) -> String {
    let env = request.env;
    let ask = ModelRequest {
        call_role: Some(serde_json::json!("fast")),
        ..ModelRequest::default()
    };
    let provider = request.provider;
    let parent = (provider.id(), provider.default_model());
    let routed = providers::route(env, &live.plan, &ask, parent).await;
    match routed.choice {
        Some(choice) if choice.provider == provider.id() && !choice.model.is_empty() => {
            choice.model
        }
        _ => String::new(),
    }
}

/// Tool results stubbed under `new` but not under `old` (outside both summaries).
fn stubs_between(transcript: &[Message], old: &Record, new: &Record) -> u64 {
    let from = new.covers.max(old.stubbed_before);
    let to = new.stubbed_before.min(transcript.len());
    (from..to)
        .filter(|&i| view::is_stubbed(&transcript[i], i, new))
        .count() as u64
}
