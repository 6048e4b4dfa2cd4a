//! Per-endpoint concurrency (issue 14): `providers[].config.max_concurrent: N` bounds
//! the model requests in flight to one provider across the whole process.
//!
//! Owns: [`ProviderSlots`] — one FIFO semaphore per provider endpoint (provider id and
//! `base_url`), created with the first limit seen for that endpoint — and reading the
//! limit from a provider entry's config ([`max_concurrent`]). A request beyond the
//! limit waits its turn in arrival order (tokio's semaphore is fair). Does not own:
//! what a waiting session shows (the turn loop sets status `queued`), the task tool's
//! `max_parallel` (children per call, `tool::task`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use super::live::lock;
use crate::config::mount_plan::ProviderConfig;

/// The limit a provider entry's `config` sets: a positive integer, else none (a bad
/// value is logged and ignored, so a typo never stops the session).
pub fn max_concurrent(config: &Value) -> Option<usize> {
    let value = ProviderConfig::of(config).max_concurrent?;
    match value.as_u64().filter(|n| *n > 0) {
        Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        None => {
            tracing::warn!(
                "providers[].config.max_concurrent must be a positive integer, got {value}; ignored"
            );
            None
        }
    }
}

/// How waiting for a slot ended.
pub(crate) enum Slot {
    /// The endpoint has no limit.
    Free,
    /// A slot: hold it until the request's stream has ended.
    Held { _permit: OwnedSemaphorePermit },
    /// The turn was cancelled while waiting.
    Cancelled,
}

/// The process-wide slots of every endpoint that has a limit.
#[derive(Default)]
pub(crate) struct ProviderSlots {
    endpoints: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl ProviderSlots {
    /// The semaphore of `endpoint`, created with `limit` permits on first use.
    fn semaphore(&self, endpoint: &str, limit: usize) -> Arc<Semaphore> {
        lock(&self.endpoints)
            .entry(endpoint.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(limit)))
            .clone()
    }

    /// A slot for one request to the provider `provider_id` whose entry config is
    /// `config`. When none is free, `on_wait` runs once (the turn marks the session
    /// `queued`) and the request waits in FIFO order, or until `token` is cancelled.
    pub async fn acquire(
        &self,
        provider_id: &str,
        config: &Value,
        token: &CancellationToken,
        on_wait: impl FnOnce(),
    ) -> Slot {
        let Some(limit) = max_concurrent(config) else {
            return Slot::Free;
        };
        let base = ProviderConfig::of(config).base_url;
        let endpoint = format!("{provider_id} {}", base.unwrap_or_default());
        let semaphore = self.semaphore(&endpoint, limit);
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => return Slot::Held { _permit: permit },
            Err(TryAcquireError::Closed) => return Slot::Free,
            Err(TryAcquireError::NoPermits) => on_wait(),
        }
        tokio::select! {
            permit = semaphore.acquire_owned() => match permit {
                Ok(p) => Slot::Held { _permit: p },
                Err(_) => Slot::Free,
            },
            _ = token.cancelled() => Slot::Cancelled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_limit_is_a_positive_integer() {
        assert_eq!(max_concurrent(&json!({"max_concurrent": 2})), Some(2));
        assert_eq!(max_concurrent(&json!({})), None);
        assert_eq!(max_concurrent(&json!({"max_concurrent": 0})), None);
        assert_eq!(max_concurrent(&json!({"max_concurrent": "2"})), None);
    }

    #[tokio::test]
    async fn requests_beyond_the_limit_wait_in_arrival_order() {
        let slots = Arc::new(ProviderSlots::default());
        let config = json!({"max_concurrent": 1, "base_url": "http://127.0.0.1:1"});
        let token = CancellationToken::new();
        let first = slots.acquire("openai", &config, &token, || {}).await;
        assert!(matches!(first, Slot::Held { .. }));
        // Another endpoint has its own slots; no limit means no slot at all.
        let other = json!({"max_concurrent": 1, "base_url": "http://127.0.0.1:2"});
        assert!(matches!(
            slots.acquire("openai", &other, &token, || {}).await,
            Slot::Held { .. }
        ));
        assert!(matches!(
            slots.acquire("openai", &json!({}), &token, || {}).await,
            Slot::Free
        ));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for n in 0..3 {
            let (slots, config, token, order) =
                (slots.clone(), config.clone(), token.clone(), order.clone());
            let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
            waiters.push(tokio::spawn(async move {
                let slot = slots
                    .acquire("openai", &config, &token, || {
                        let _ = queued_tx.send(());
                    })
                    .await;
                lock(&order).push(n);
                drop(slot);
            }));
            // Each waiter is queued before the next one starts.
            queued_rx.await.unwrap();
        }
        assert!(lock(&order).is_empty(), "nobody passes a held slot");
        drop(first);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*lock(&order), [0, 1, 2]);
    }

    #[tokio::test]
    async fn a_cancelled_wait_ends_without_a_slot() {
        let slots = ProviderSlots::default();
        let config = json!({"max_concurrent": 1});
        let token = CancellationToken::new();
        let _held = slots.acquire("anthropic", &config, &token, || {}).await;
        let waiting = CancellationToken::new();
        waiting.cancel();
        let mut queued = false;
        let slot = slots
            .acquire("anthropic", &config, &waiting, || queued = true)
            .await;
        assert!(queued);
        assert!(matches!(slot, Slot::Cancelled));
    }
}
