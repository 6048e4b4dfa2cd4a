//! Local model servers as providers when nothing is configured (SPEC §10 "With nothing
//! configured, arbor probes the environment and local servers and says plainly what it
//! found"), and the short no-provider text the TUI's banner shows.
//!
//! Owns: the provider entries for servers `provider::probe::discover_local` found
//! ([`local_providers`]: Ollama as `provider-ollama`, LM Studio and llama.cpp as
//! `provider-openai` with ids `lmstudio` / `llamacpp`, each at the address that
//! answered, the model left to the server), the notice saying which one is used and
//! which others were found ([`local_notice`]), and the banner text with a suggested
//! config that the config loader accepts as it is ([`no_provider_banner`],
//! [`SUGGESTED_CONFIG`]). Does not own: probing (`provider::probe`), deciding when to
//! look (the front ends: only when no provider is configured anywhere).

use std::path::Path;

use serde_json::json;

use crate::config::modules::{OLLAMA, OPENAI};
use crate::config::mount_plan::ModuleEntry;
use crate::provider::probe::{LocalKind, LocalServer};

/// What the banner suggests pasting into the config file: valid YAML for
/// `config::ArborConfig` that builds a provider (an OpenAI-compatible server, e.g.
/// llama.cpp's `llama-server`), every line at most 38 columns so a 40-column terminal
/// shows it unwrapped.
pub const SUGGESTED_CONFIG: &str =
    "providers:\n- module: provider-openai\n  config:\n    base_url: http://127.0.0.1:8080/v1\n";

/// One provider entry per found server, in the order found (the first is used).
pub fn local_providers(servers: &[LocalServer]) -> Vec<ModuleEntry> {
    servers
        .iter()
        .map(|server| {
            let base_url = format!("http://{}/v1", server.addr);
            match server.kind {
                LocalKind::Ollama => ModuleEntry {
                    module: OLLAMA.name.into(),
                    config: json!({ "base_url": base_url }),
                    ..Default::default()
                },
                kind => ModuleEntry {
                    module: OPENAI.name.into(),
                    id: Some(kind.key().to_string()),
                    config: json!({ "base_url": base_url }),
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// The notice for found servers (`None` when none): which one new sessions use and,
/// when several answered, how to pick another (`--model lmstudio/MODEL`, or the
/// TUI's model switch with the same text).
pub fn local_notice(servers: &[LocalServer]) -> Option<String> {
    let (first, others) = servers.split_first()?;
    let mut text = format!(
        "using {} at {} (found locally)",
        first.kind.title(),
        first.addr
    );
    if !others.is_empty() {
        let names: Vec<String> = others
            .iter()
            .map(|s| format!("{} at {} ({}/MODEL)", s.kind.title(), s.addr, s.kind.key()))
            .collect();
        text.push_str(&format!(
            "; also {}: switch with --model or the model key",
            names.join(", ")
        ));
    }
    Some(text)
}

/// The TUI banner's text when no provider is configured and no local server answered:
/// one short paragraph, then [`SUGGESTED_CONFIG`] to paste into `config_path`, then
/// where the details are. Fits an 80×24 and a 40-column screen.
pub fn no_provider_banner(config_path: &Path) -> String {
    format!(
        "No model provider: nothing configured, no API key, no local server \
         (Ollama, LM Studio, llama.cpp).\n\
         Set ANTHROPIC_API_KEY or OPENAI_API_KEY, or add to {}:\n\
         {SUGGESTED_CONFIG}\
         Details: arbor doctor",
        config_path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(kind: LocalKind, port: u16, models: &[&str]) -> LocalServer {
        LocalServer {
            kind,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            models: models.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn found_servers_become_providers_and_the_notice_names_them() {
        let one = [server(LocalKind::LlamaCpp, 8080, &["qwen"])];
        let entries = local_providers(&one);
        assert_eq!(entries[0].module, "provider-openai");
        assert_eq!(entries[0].id.as_deref(), Some("llamacpp"));
        assert_eq!(entries[0].config["base_url"], "http://127.0.0.1:8080/v1");
        assert_eq!(
            local_notice(&one).unwrap(),
            "using llama.cpp at 127.0.0.1:8080 (found locally)"
        );
        let several = [
            server(LocalKind::Ollama, 11434, &[]),
            server(LocalKind::LmStudio, 1234, &["m"]),
        ];
        let entries = local_providers(&several);
        assert_eq!(entries[0].module, "provider-ollama");
        assert_eq!(entries[1].id.as_deref(), Some("lmstudio"));
        let notice = local_notice(&several).unwrap();
        assert!(notice.starts_with("using Ollama at 127.0.0.1:11434 (found locally); also LM Studio at 127.0.0.1:1234 (lmstudio/MODEL)"), "{notice}");
        assert_eq!(local_notice(&[]), None);
    }

    #[test]
    fn the_suggested_config_fits_40_columns_and_loads_as_a_working_provider() {
        assert!(SUGGESTED_CONFIG.lines().all(|l| l.chars().count() <= 38));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let banner = no_provider_banner(&path);
        // What a person copies: the lines from `providers:` to the blank-free end.
        let pasted: String = banner
            .lines()
            .skip_while(|l| *l != "providers:")
            .take_while(|l| !l.starts_with("Details"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(pasted, SUGGESTED_CONFIG);
        std::fs::write(&path, &pasted).unwrap();
        let config = crate::config::ArborConfig::load(&path).unwrap();
        let none = |_: &str| None;
        let entries = crate::routing::setup::detect_providers(&config, &none);
        assert_eq!(entries.len(), 1);
        let provider = crate::routing::setup::build_provider(&entries[0], &config, &none).unwrap();
        assert_eq!(provider.id(), "openai");
    }
}
