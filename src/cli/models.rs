//! `arbor models [--provider P] [--json]`: what each configured provider offers.
//!
//! `--json` prints an array of `{provider, module, models: [ids], error?}`.

use std::time::Duration;

use color_eyre::Result;
use serde_json::{Value, json};

use super::context::{Context, ContextOptions};
use super::out;
use crate::outln;
use crate::routing::setup::{build_provider, detect_providers, no_provider_message, provider_id};

/// How long one provider may take to list its models.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Lists the models of every configured provider (or of `provider`, by id or module).
pub async fn run(provider: Option<String>, as_json: bool, options: ContextOptions) -> Result<i32> {
    let ctx = Context::load(&options)?;
    let entries: Vec<_> = detect_providers(&ctx.config, ctx.env.as_ref())
        .into_iter()
        .filter(|e| {
            provider
                .as_deref()
                .is_none_or(|p| provider_id(e) == p || e.module == p)
        })
        .collect();
    if entries.is_empty() {
        match &provider {
            Some(p) => out::error(format!("no configured provider named '{p}'")),
            None => out::plain_error(no_provider_message(
                &ctx.paths.config_file,
                ctx.env.as_ref(),
            )),
        }
        return Ok(1);
    }
    let mut results = Vec::new();
    let mut failed = false;
    for entry in &entries {
        let id = provider_id(entry);
        let listed = match build_provider(entry, &ctx.config, ctx.env.as_ref()) {
            Ok(p) => match tokio::time::timeout(LIST_TIMEOUT, p.list_models()).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!(
                    "{id}: no answer within {}s",
                    LIST_TIMEOUT.as_secs()
                )),
            },
            Err(e) => Err(e.to_string()),
        };
        failed |= listed.is_err();
        let mut v = json!({"provider": id, "module": entry.module});
        match listed {
            Ok(mut models) => {
                models.sort();
                v["models"] = json!(models);
            }
            Err(e) => {
                v["models"] = json!([]);
                v["error"] = json!(e);
            }
        }
        results.push(v);
    }
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&Value::Array(results))?)?;
    } else {
        for r in &results {
            outln!(
                "{} ({})",
                r["provider"].as_str().unwrap_or_default(),
                r["module"].as_str().unwrap_or_default()
            )?;
            if let Some(e) = r["error"].as_str() {
                outln!("  error: {e}")?;
            }
            for m in r["models"].as_array().into_iter().flatten() {
                outln!("  {}", m.as_str().unwrap_or_default())?;
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}
