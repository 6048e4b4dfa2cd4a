//! The context limit of one session (issue 26 item 1).
//!
//! Owns: [`Settings`] — `max_tokens`, `compact_threshold`, `auto_compact` — resolved
//! from, in order: config `context:` (key by key over) the bundle's
//! `session.context.config`; else the model's window from [`model_window`]; else the
//! provider module's default ([`provider_default`]). Does not own: reading the config
//! keys (`config::context`) or compacting (`plan`).

use crate::config::context::ContextConfig;
use crate::config::modules::ProviderModule;

/// Share of the limit a compaction aims at (Amplifier `context-simple`'s
/// `target_usage` default): low enough that the next few turns do not compact again.
pub const TARGET_USAGE: f64 = 0.5;

/// One session's context settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The context limit, tokens.
    pub max_tokens: u64,
    /// Compact a request above `compact_threshold × max_tokens` first.
    pub compact_threshold: f64,
    /// Whether to compact on crossing the threshold (`/compact` works either way).
    pub auto_compact: bool,
}

impl Settings {
    /// Settings from config (`over`), the bundle (`bundle`), and the provider module
    /// and model in use.
    pub fn resolve(bundle: ContextConfig, over: ContextConfig, module: &str, model: &str) -> Self {
        let merged = bundle.overridden_by(over);
        Self {
            max_tokens: merged
                .max_tokens
                .or_else(|| model_window(model))
                .unwrap_or_else(|| provider_default(module)),
            compact_threshold: merged.threshold(),
            auto_compact: merged.auto(),
        }
    }

    /// `compact_threshold × max_tokens`, tokens.
    pub fn threshold_tokens(&self) -> u64 {
        share(self.max_tokens, self.compact_threshold)
    }

    /// [`TARGET_USAGE`] of the limit (never above the threshold), tokens.
    pub fn target_tokens(&self) -> u64 {
        share(self.max_tokens, TARGET_USAGE.min(self.compact_threshold))
    }
}

/// `fraction × n`, rounded down.
fn share(n: u64, fraction: f64) -> u64 {
    // Token counts stay far below 2^52, where f64 is exact.
    (n as f64 * fraction).floor() as u64
}

/// The context window of well-known model families, by model-id prefix (published
/// by their vendors: Anthropic's models overview, OpenAI's model pages, Qwen's and
/// Meta's model cards). `None` for a model not listed.
pub fn model_window(model: &str) -> Option<u64> {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    const TABLE: &[(&str, u64)] = &[
        ("claude-", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("qwen2.5", 32_768),
        ("qwen3", 32_768),
        ("llama3.1", 128_000),
        ("llama3.2", 128_000),
    ];
    TABLE
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix))
        .map(|(_, window)| *window)
}

/// The documented default limit of a provider module when the model is unknown: its
/// row's in the provider table (`config::modules`), 32,768 for any other module.
pub fn provider_default(module: &str) -> u64 {
    ProviderModule::context_window_of(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_beats_bundle_beats_model_beats_provider() {
        let none = ContextConfig::default();
        let s = Settings::resolve(none, none, "provider-openai", "mystery");
        assert_eq!(s.max_tokens, 128_000);
        let s = Settings::resolve(none, none, "provider-ollama", "mystery");
        assert_eq!(s.max_tokens, 4_096);
        let s = Settings::resolve(none, none, "provider-anthropic", "mystery");
        assert_eq!(s.max_tokens, 200_000);
        let s = Settings::resolve(none, none, "provider-x", "mystery");
        assert_eq!(s.max_tokens, 32_768);
        let s = Settings::resolve(none, none, "provider-openai", "openai/gpt-4.1-mini");
        assert_eq!(s.max_tokens, 1_047_576);
        let plan = crate::config::mount_plan::MountPlan::from_value(
            json!({"session": {"context": {"config": {"max_tokens": 9000, "auto_compact": false}}}}),
        );
        let over = ContextConfig {
            max_tokens: Some(4000),
            ..ContextConfig::default()
        };
        let s = Settings::resolve(
            ContextConfig::of_plan(&plan).0,
            over,
            "provider-openai",
            "gpt-4o",
        );
        assert_eq!(s.max_tokens, 4000);
        assert!(!s.auto_compact);
        assert_eq!(s.threshold_tokens(), 3200);
        assert_eq!(s.target_tokens(), 2000);
    }
}
