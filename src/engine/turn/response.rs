//! What a model call leaves in the session (SPEC §8): the response normalised (an id
//! and a `tool_call` block for every call), the assistant message with its author,
//! model and usage, the session's usage and cost, `provider:response`, and the text
//! streamed before an error or cancel kept as a partial message.
//!
//! Owns: those records. Does not own: the loop that makes the calls (`turn`) or
//! prices (`routing::prices`).

use serde_json::json;

use crate::engine::live::LiveSession;
use crate::engine::providers;
use crate::provider::{Provider, ProviderResponse};
use crate::routing::prices::{CacheAccounting, PriceTable};
use crate::session::message::{AssistantMessage, ContentBlock, Message, now_rfc3339};
use crate::session::metadata::SessionUsage;
use crate::session::protocol::ProviderResponseEvent;
use crate::session::{EngineEvent, Usage};

/// The response with an id on every tool call (a provider that sent none gets
/// `call_<iteration>_<n>`) and a `tool_call` content block for every call, so the
/// stored assistant message and the results agree.
pub(super) fn normalize(mut response: ProviderResponse, iteration: u32) -> ProviderResponse {
    for (n, call) in response.tool_calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{iteration}_{n}");
        }
    }
    response
        .content
        .retain(|b| !matches!(b, ContentBlock::ToolCall { id, .. } if id.is_empty()));
    for call in &response.tool_calls {
        let present = response
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if *id == call.id));
        if !present {
            response.content.push(ContentBlock::ToolCall {
                id: call.id.clone(),
                name: call.tool.clone(),
                input: call.arguments.clone(),
            });
        }
    }
    response
}

/// Appends the assistant message of a completed call, adds its usage (and cost, when
/// `prices` has the model) to the metadata and publishes `provider:response`. Returns
/// the call's cost.
pub(super) fn record_response(
    live: &LiveSession,
    author: &str,
    provider: &dyn Provider,
    request_model: &str,
    response: &ProviderResponse,
    prices: &PriceTable,
) -> Option<f64> {
    let model = providers::label(provider, response.model.as_deref());
    let reported = response.model.as_deref().unwrap_or_default();
    let cost = prices
        .price_for(provider.id(), provider.module(), &[reported, request_model])
        .map(|p| {
            let accounting = CacheAccounting::for_module(provider.module());
            round_cost(p.cost(&response.usage, accounting))
        });
    let usage = usage_record(&response.usage, cost);
    live.append(Message::Assistant(AssistantMessage {
        content: response.content.clone(),
        tool_calls: response.tool_calls.clone(),
        timestamp: Some(now_rfc3339()),
        metadata: Some(
            json!({
                "author": author,
                "model": model,
                "usage": usage,
            })
            .into(),
        ),
    }));
    live.update_metadata(|m| {
        m.usage.add(&response.usage);
        if let Some(c) = cost {
            m.usage.cost = Some(round_cost(m.usage.cost.unwrap_or(0.0) + c));
        }
        m.model = Some(model.clone());
    });
    // The same name `provider:request` gave (issue 23 item 9): the resolved model,
    // not the `provider/model` label the metadata keeps.
    let asked = if request_model.is_empty() {
        reported
    } else {
        request_model
    };
    live.emit(EngineEvent::ProviderResponse(ProviderResponseEvent {
        provider: provider.id().to_string(),
        model: asked.to_string(),
        response_model: Some(reported)
            .filter(|r| !r.is_empty() && *r != asked)
            .map(str::to_string),
        usage,
        stop_reason: response.stop_reason.clone(),
        tool_calls: response.tool_calls.len(),
    }));
    cost
}

/// A usage record: `{input_tokens, output_tokens, cache_read_tokens,
/// cache_creation_tokens}` plus `cost` (USD) when known.
pub fn usage_record(usage: &Usage, cost: Option<f64>) -> SessionUsage {
    let mut record = SessionUsage {
        cost,
        ..SessionUsage::default()
    };
    record.add(usage);
    record
}

/// USD rounded to 10 decimals, so sums of prices stay readable in JSON.
pub(super) fn round_cost(usd: f64) -> f64 {
    (usd * 1e10).round() / 1e10
}

/// Saves text streamed before an error or cancel as an assistant message
/// (`metadata.partial = true`).
pub(crate) fn keep_partial(live: &LiveSession, author: &str, partial: &str, error: Option<&str>) {
    if partial.is_empty() {
        return;
    }
    live.append(Message::Assistant(AssistantMessage {
        content: vec![ContentBlock::Text {
            text: partial.into(),
        }],
        tool_calls: Vec::new(),
        timestamp: Some(now_rfc3339()),
        metadata: Some(json!({"author": author, "partial": true, "error": error}).into()),
    }));
}
