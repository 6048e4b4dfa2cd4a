//! `/compact [focus]`: compacting a session's context on request (issue 26 item 4).
//!
//! Owns: [`Runtime::compact`]. Does not own: how a compaction is made
//! (`compact`, `request_view`).

use tokio_util::sync::CancellationToken;

use super::Runtime;
use crate::engine::compact::CompactError;
pub use crate::engine::compact::Compacted;
use crate::engine::live::lock;
use crate::engine::{prompt, providers, request_view};

impl Runtime {
    /// Compacts session `session_id`'s context now, summarising everything before its
    /// newest turn (with `focus`, when not empty, as what the summary should keep);
    /// on a running session, before its next model call. Errors: the session cannot be
    /// loaded or has no provider ([`CompactError::Session`]), the summary call fails.
    pub async fn compact(&self, session_id: &str, focus: &str) -> Result<Compacted, CompactError> {
        let env = &self.turn_env;
        let live = self
            .live_or_resume(session_id)
            .map_err(|e| CompactError::Session(Box::new(e)))?;
        if live.is_running() {
            lock(&live.context).pending_manual = Some(focus.to_string());
            return Ok(Compacted::BeforeNextCall);
        }
        let (provider, config) =
            providers::provider_for(env, &live).map_err(|e| CompactError::Session(Box::new(e)))?;
        let system = prompt::system_prompt(env, &live, &live.plan);
        let request = request_view::Request {
            provider: &provider,
            provider_config: &config,
            system: &system,
            tools: &[],
            env,
        };
        let token = CancellationToken::new();
        request_view::compact_now(&live, env, &request, focus.to_string(), &token).await
    }
}
