//! Where model lists come from during resolution, and the per-process cache of them.
//!
//! Owns: the [`ModelSource`] trait resolution asks (by mount name), [`ModelCache`]
//! (one successful `list_models` per key per process; failures are not cached, so a
//! server that comes up later is seen), and [`StaticModels`], a fixed source with call
//! counters for tests and the conformance suite. Does not own: HTTP (`Provider::list_models`)
//! or deciding which provider a name means (`prefs`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use tokio::sync::OnceCell;

/// Why a provider's model list is not available; one line that resolution records in
/// its skip reasons (`… cannot list models ({error})`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// The mount's provider could not be built.
    #[error("provider is not built")]
    NotBuilt,
    /// The provider cannot list models (or the source has no list for it).
    #[error("provider cannot list models")]
    Unsupported,
    /// The listing failed: the provider's error as one line, or a timeout.
    #[error("{0}")]
    Failed(String),
    /// The listing did not answer within this many seconds.
    #[error("no answer within {0}s")]
    Timeout(u64),
    /// The list came back without a model.
    #[error("the server lists no model")]
    NoModel,
}

impl From<String> for ListError {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

/// Lists the models of a mounted provider. `Err` says why not ([`ListError`]:
/// "connection refused", "provider cannot list models").
pub trait ModelSource: Send + Sync {
    /// The model ids mounted provider `mount` offers, in the provider's order.
    fn list_models<'a>(&'a self, mount: &'a str) -> BoxFuture<'a, Result<Vec<String>, ListError>>;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Model lists cached by key (arbor keys them by provider id and base URL). Owned by
/// the runtime, shared by every resolution in the process; concurrent requests for one
/// key share a single fetch.
#[derive(Debug, Default)]
pub struct ModelCache {
    lists: Mutex<HashMap<String, Arc<OnceCell<Vec<String>>>>>,
}

impl ModelCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached list for `key`, else the result of `list()` (cached when `Ok`; its
    /// error `E` is returned as is). The internal lock is never held across the fetch.
    pub async fn get_or_list<F, Fut, E>(&self, key: &str, list: F) -> Result<Vec<String>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<String>, E>>,
    {
        let cell = lock(&self.lists)
            .entry(key.to_string())
            .or_default()
            .clone();
        cell.get_or_try_init(list).await.cloned()
    }

    /// The cached list for `key`, if fetched successfully before.
    pub fn cached(&self, key: &str) -> Option<Vec<String>> {
        lock(&self.lists).get(key).and_then(|c| c.get().cloned())
    }

    /// Forgets every list (e.g. `arbor models --refresh`).
    pub fn clear(&self) {
        lock(&self.lists).clear();
    }
}

/// A fixed [`ModelSource`]: per mount, a model list or a failure; mounts not given
/// fail with "provider cannot list models". Counts calls per mount.
#[derive(Debug, Default)]
pub struct StaticModels {
    lists: HashMap<String, Result<Vec<String>, ListError>>,
    calls: Mutex<HashMap<String, usize>>,
}

impl StaticModels {
    /// A source that lists nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// `mount` lists `models`.
    pub fn with_models<S: Into<String>>(
        mut self,
        mount: &str,
        models: impl IntoIterator<Item = S>,
    ) -> Self {
        let models = models.into_iter().map(Into::into).collect();
        self.lists.insert(mount.to_string(), Ok(models));
        self
    }

    /// Listing `mount` fails with `reason`.
    pub fn with_failure(mut self, mount: &str, reason: &str) -> Self {
        self.lists.insert(
            mount.to_string(),
            Err(ListError::Failed(reason.to_string())),
        );
        self
    }

    /// How many times `mount` was listed.
    pub fn calls(&self, mount: &str) -> usize {
        lock(&self.calls).get(mount).copied().unwrap_or(0)
    }
}

impl ModelSource for StaticModels {
    fn list_models<'a>(&'a self, mount: &'a str) -> BoxFuture<'a, Result<Vec<String>, ListError>> {
        *lock(&self.calls).entry(mount.to_string()).or_default() += 1;
        let result = self
            .lists
            .get(mount)
            .cloned()
            .unwrap_or(Err(ListError::Unsupported));
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn cache_fetches_once_and_does_not_keep_failures() {
        let cache = ModelCache::new();
        let calls = AtomicUsize::new(0);
        let fetch = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ListError>(vec!["m1".to_string()])
        };
        for _ in 0..3 {
            assert_eq!(cache.get_or_list("openai", fetch).await.unwrap(), ["m1"]);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(cache.cached("openai").unwrap(), ["m1"]);

        let failed = cache
            .get_or_list("local", || async {
                Err::<Vec<String>, _>("down".to_string())
            })
            .await;
        assert_eq!(failed.unwrap_err(), "down");
        assert!(cache.cached("local").is_none());
        let ok = cache
            .get_or_list("local", || async {
                Ok::<_, ListError>(vec!["up".to_string()])
            })
            .await;
        assert_eq!(ok.unwrap(), ["up"]);
        cache.clear();
        assert!(cache.cached("openai").is_none());
    }

    #[tokio::test]
    async fn static_models_count_calls() {
        let source = StaticModels::new()
            .with_models("a", ["x"])
            .with_failure("b", "boom");
        assert_eq!(source.list_models("a").await.unwrap(), ["x"]);
        assert_eq!(
            source.list_models("b").await.unwrap_err(),
            ListError::Failed("boom".into())
        );
        assert!(source.list_models("c").await.is_err());
        assert_eq!(
            (source.calls("a"), source.calls("b"), source.calls("z")),
            (1, 1, 0)
        );
    }
}
