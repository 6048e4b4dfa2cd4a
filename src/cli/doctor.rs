//! `arbor doctor`: what arbor found and what is wrong, without printing any secret.
//!
//! Reports the config file, the approval rules and whether the current project is
//! trusted, each provider (module, endpoint, whether a key is present and where it
//! comes from, whether it answers), a local Ollama probe, the routing matrix in use
//! (and why a configured one is not), price-table warnings, agent-file problems, and
//! (`doctor_checks`) the bundle, the keymap and the themes, every hook, active or
//! skipped with why (`doctor_hooks`), and the MCP servers with their tools
//! (`doctor_mcp`), the sandbox (`doctor_sandbox`), and the NATS server,
//! job consumer and workers of remote sub-sessions (`doctor_nats`).
//! Exit code 1 when something needs fixing (no usable provider, an unreachable
//! provider, an invalid config — a bad `approvals:` entry included — or agent file,
//! an unreadable trust store, a bundle module arbor cannot run or agents with no
//! delegation tool, an unusable keymap or theme, an MCP server that does not start,
//! an unusable `remote:` or its NATS server unreachable or without JetStream).

use std::time::Duration;

use color_eyre::Result;
use serde_json::Value;

use super::context::{Context, ContextOptions};
use crate::config::modules;
use crate::config::trust::{self, TrustStore};
use crate::config::{ArborConfig, ModuleEntry};
use crate::outln;
use crate::provider::probe::probe_ollama;
use crate::routing::active_matrix;
use crate::routing::prices::PriceTable;
use crate::routing::setup::{build_provider, detect_providers, provider_id};

const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the checks and prints the report; returns the exit code.
pub async fn run(options: ContextOptions) -> Result<i32> {
    let mut problems = 0;
    let config_path = crate::paths::Paths::from_env().config_file;
    let mut ctx = match Context::load(&options) {
        Ok(ctx) => ctx,
        Err(e) => {
            // Every bad key once, the path once (issue 23 item 10).
            let errors = super::doctor_config::config_errors(&config_path);
            if errors.is_empty() {
                outln!("config    {}: {e:#}", config_path.display())?;
            } else {
                outln!("config    {} unusable:", config_path.display())?;
                for error in &errors {
                    outln!("  error   {error}")?;
                }
            }
            return Ok(1);
        }
    };
    let exists = if ctx.paths.config_file.exists() {
        ""
    } else {
        " (not present: defaults)"
    };
    outln!("config    {}{exists}", ctx.paths.config_file.display())?;
    outln!("home      {}", ctx.paths.amplifier_home.display())?;
    outln!("sessions  {}", ctx.paths.sessions_dir().display())?;
    outln!(
        "bundle    {}",
        ctx.bundle_path
            .as_ref()
            .map_or("built-in".to_string(), |p| p.display().to_string())
    )?;

    problems += approvals_and_trust(&ctx)?;

    if let Some(notice) = ctx.use_local_servers() {
        outln!("local     {notice}")?;
    }
    problems += providers(&ctx).await?;
    problems += local_and_routing(&ctx).await?;

    problems += agents(&ctx)?;
    problems += super::doctor_checks::bundle(&ctx)?;
    problems += super::doctor_checks::keymap_and_themes(&ctx)?;
    problems += super::doctor_hooks::report(&ctx)?;
    problems += super::doctor_mcp::report(&ctx).await?;
    problems += super::doctor_sandbox::report(&ctx).await?;
    problems += super::doctor_nats::report(&ctx).await?;
    if problems == 0 {
        outln!("ok        no problems found")?;
        Ok(0)
    } else {
        outln!("problems  {problems}")?;
        Ok(1)
    }
}

/// The configured providers: each one's key source and whether it answers a model
/// listing within [`LIST_TIMEOUT`]. Returns the number of problems.
async fn providers(ctx: &Context) -> Result<usize> {
    let mut problems = 0;
    let env = ctx.env.as_ref();
    let entries = detect_providers(&ctx.config, env);
    if entries.is_empty() {
        problems += 1;
        outln!(
            "providers none configured (set {}, or add `providers:` to the config file)",
            modules::or_list(&modules::detect_vars())
        )?;
    }
    for entry in &entries {
        let id = provider_id(entry);
        outln!("provider  {id} ({})", entry.module)?;
        outln!("  key     {}", key_source(entry, &ctx.config, env))?;
        match build_provider(entry, &ctx.config, env) {
            Err(e) => {
                problems += 1;
                outln!("  status  unusable: {e}")?;
            }
            Ok(p) => match tokio::time::timeout(LIST_TIMEOUT, p.list_models()).await {
                Ok(Ok(models)) => outln!(
                    "  status  reachable, {} listed",
                    super::out::plural(models.len(), "model")
                )?,
                Ok(Err(e)) => {
                    problems += 1;
                    outln!("  status  not reachable: {e}")?;
                }
                Err(_) => {
                    problems += 1;
                    outln!("  status  no answer within {}s", LIST_TIMEOUT.as_secs())?;
                }
            },
        }
    }
    Ok(problems)
}

/// A local Ollama server, the routing matrix and the price table. Returns the number
/// of problems.
async fn local_and_routing(ctx: &Context) -> Result<usize> {
    let mut problems = 0;
    let probe_env = ctx.env.clone();
    let ollama = tokio::task::spawn_blocking(move || probe_ollama(probe_env.as_ref()))
        .await
        .map(|p| p.to_string())
        .unwrap_or_else(|e| format!("probe failed: {e}"));
    outln!("ollama    {ollama}")?;
    let active = active_matrix(&ctx.config, &ctx.paths.routing_dir());
    match &active.matrix {
        Some(m) => outln!(
            "routing   matrix {} ({})",
            m.name,
            super::out::plural(m.known_roles().len(), "role")
        )?,
        None => outln!("routing   no usable matrix")?,
    }
    if let Some(problem) = &active.problem {
        problems += 1;
        outln!("  problem {problem}")?;
    }
    let (_, price_warnings) = PriceTable::from_config(&ctx.config);
    for w in &price_warnings {
        outln!("  prices  {w}")?;
    }
    Ok(problems)
}

/// The agents loaded: invalid ones (each a problem) and warnings.
fn agents(ctx: &Context) -> Result<usize> {
    let mut problems = 0;
    let agents = ctx.registry.agents();
    let invalid: Vec<_> = agents.iter().filter(|a| !a.is_valid()).collect();
    let warned = agents.iter().filter(|a| !a.warnings.is_empty()).count();
    outln!(
        "agents    {} loaded, {} invalid, {} with warnings",
        super::out::plural(agents.len(), "agent"),
        invalid.len(),
        warned
    )?;
    for a in &invalid {
        problems += 1;
        for e in &a.errors {
            outln!("  invalid {e}")?;
        }
    }
    for a in agents.iter().filter(|a| !a.warnings.is_empty()) {
        for w in &a.warnings {
            outln!("  warning {}: {w}", a.name)?;
        }
    }
    Ok(problems)
}

/// The config's approval rules (a bad one already failed loading the config) with
/// warnings for keys naming nothing known, and whether the current project is trusted.
/// Returns the number of problems: an unreadable trust store is one; an untrusted
/// project is not (it is a state the person chooses).
fn approvals_and_trust(ctx: &Context) -> Result<usize> {
    let rules = &ctx.config.approvals;
    if rules.is_empty() {
        outln!(
            "approvals defaults (reads, search and task allow; writes, bash and MCP tools ask)"
        )?;
    } else {
        outln!(
            "approvals {} over the defaults",
            super::out::plural(rules.rules().len(), "rule")
        )?;
    }
    for w in rules.warnings() {
        outln!("  warning {w}")?;
    }
    let Some(root) = trust::project_root(&ctx.paths.cwd) else {
        outln!(
            "project   nothing to trust here (no {}, {}, {} or hooks in {})",
            trust::AGENTS_DIR,
            trust::BUNDLES_DIR,
            trust::MCP_FILE,
            trust::SETTINGS_FILES.join(" / ")
        )?;
        return Ok(0);
    };
    let problems = project_trust(ctx, &root)?;
    for power in trust::powers::describe(&root) {
        outln!("  grants  {}: {}", power.path, power.gains)?;
    }
    Ok(problems)
}

/// The project's line: trusted, not trusted (why), or an unreadable store (a
/// problem). Returns the number of problems.
fn project_trust(ctx: &Context, root: &std::path::Path) -> Result<usize> {
    let root = root.to_path_buf();
    match TrustStore::load(&ctx.paths.trust_file()) {
        Err(e) => {
            outln!("project   {}: {e}", root.display())?;
            Ok(1)
        }
        Ok(store) if store.is_trusted(&root) => {
            outln!("project   {} (trusted)", root.display())?;
            Ok(0)
        }
        Ok(store) if matches!(store.state(&root), trust::TrustState::Changed(_)) => {
            let message = store
                .state(&root)
                .changed_message(&root)
                .unwrap_or_default();
            outln!("project   {} (not trusted: {message})", root.display())?;
            Ok(0)
        }
        Ok(_) => {
            outln!(
                "project   {} (not trusted: its agents add no tools or providers, its hooks do not run and its MCP servers do not start; run `arbor trust`)",
                root.display()
            )?;
            Ok(0)
        }
    }
}

/// Where the key of `entry` would come from — never the key itself.
fn key_source(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let has = |v: &Value| {
        v.get("api_key")
            .and_then(Value::as_str)
            .is_some_and(|k| !k.is_empty() && k != crate::routing::setup::REDACTED)
    };
    let in_file = config
        .providers
        .iter()
        .any(|p| provider_id(p) == provider_id(entry) && has(&p.config));
    if in_file {
        return "present (config file)".into();
    }
    let var = modules::provider_module(&entry.module).and_then(|p| p.key_var);
    match var {
        Some(var) if env(var).is_some_and(|v| !v.is_empty()) => {
            format!("present (environment {var})")
        }
        Some(var) => format!("missing ({var} not set; fine for a local server with base_url)"),
        None => "not needed".into(),
    }
}
