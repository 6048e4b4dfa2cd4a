//! `arbor agent list|show|validate`.
//!
//! `agent validate` also checks the `sub_agents` trees among the files it is given
//! (cycles, unknown names, two parents; `agent::tree::check`). `agent show` adds `tree`
//! (the outline of the agent's `sub_agents` tree, from its topmost parent) when the
//! agent is in one.
//!
//! `agent list --json`: an array of `{name, source, path, description, valid, errors,
//! warnings, shadows: [{source, path}]}`. `agent show NAME --format json`: the agent's
//! overlay with `name`, `source`, `path`, `instruction` and every frontmatter key;
//! `--merged` adds `project_instructions` (`{files, text, cut}` of the `AGENTS.md` and `CLAUDE.md` files
//! a root session started here adds to its system prompt, `null` when none) and
//! `merged` (the child mount plan a spawn from the root would get,
//! secrets redacted) and `resolved_model` (`{provider, model, via, role?, reason?}`:
//! the model that spawn would route to).

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use color_eyre::Result;
use serde_json::{Value, json};

use super::call::unexpected;
use super::context::{Context, ContextOptions};
use super::out::{self, plural};
use crate::agent::AgentDef;
use crate::agent::registry::validate_file;
use crate::agent::tree::outline_of_tree_with;
use crate::engine::{EngineError, QueryReply};
use crate::session::EngineQuery;
use crate::session::redact::redact;
use crate::{out, outln};

/// `arbor agent …`.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// List every agent: name, source, first line of the description.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one agent's definition.
    Show {
        /// The agent's name (as `agent list` shows it).
        name: String,
        /// Add the child mount plan a spawn from the root session would get.
        #[arg(long)]
        merged: bool,
        /// `yaml` (the definition as its file would hold it) or `json`.
        #[arg(long, value_enum, default_value_t = ShowFormat::Yaml)]
        format: ShowFormat,
    },
    /// Validate agent files (default: every agent the registry sees).
    Validate {
        /// Agent files to check (Markdown with YAML frontmatter).
        paths: Vec<PathBuf>,
    },
}

/// `agent show --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    Yaml,
    Json,
}

/// Runs an agent subcommand; returns the exit code.
pub async fn run(cmd: AgentCommand, options: ContextOptions) -> Result<i32> {
    match cmd {
        AgentCommand::List { json } => {
            let ctx = Context::load(&options)?;
            list(&ctx, json)
        }
        AgentCommand::Show {
            name,
            merged,
            format,
        } => {
            let ctx = Context::load(&options)?;
            show(&ctx, &name, merged, format).await
        }
        AgentCommand::Validate { paths } => validate(paths, options),
    }
}

/// The `agent list --json` object of one agent.
pub fn agent_json(agent: &AgentDef) -> Value {
    json!({
        "name": agent.name,
        "source": agent.source,
        "path": agent.display_path(),
        "description": agent.description,
        "valid": agent.is_valid(),
        "errors": agent.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "warnings": agent.warnings,
        "shadows": agent.shadows,
    })
}

fn list(ctx: &Context, as_json: bool) -> Result<i32> {
    let agents = ctx.registry.agents();
    if as_json {
        let all: Vec<Value> = agents.iter().map(agent_json).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(0);
    }
    let width = agents
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    outln!("{:width$}  {:7}  DESCRIPTION", "NAME", "SOURCE")?;
    for a in agents {
        let source = serde_json::to_value(a.source)?;
        let mut line = a.summary().to_string();
        if !a.is_valid() {
            line = format!(
                "INVALID: {}",
                a.errors
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
        } else if !a.shadows.is_empty() {
            line = format!("{line} (shadows {})", a.shadows.len());
        }
        if !a.warnings.is_empty() {
            line = format!("{line} ({})", plural(a.warnings.len(), "warning"));
        }
        outln!(
            "{:width$}  {:7}  {}",
            a.name,
            source.as_str().unwrap_or("?"),
            truncate(&line, 100)
        )?;
    }
    // What `--json` gives as `warnings` (an untrusted project's withheld tools among
    // them), on stderr so the table stays the table.
    for a in agents {
        for w in &a.warnings {
            out::warning(format!("agent {}: {w}", a.name));
        }
    }
    Ok(0)
}

async fn show(ctx: &Context, name: &str, merged: bool, format: ShowFormat) -> Result<i32> {
    let Some(agent) = ctx.registry.get(name) else {
        out::error(format!(
            "unknown agent '{name}'. Available agents: {}",
            ctx.registry.valid_names().join(", ")
        ));
        return Ok(1);
    };
    let mut out = serde_json::Map::new();
    out.insert("name".into(), json!(agent.name));
    out.insert("source".into(), json!(agent.source));
    out.insert("path".into(), json!(agent.display_path()));
    if let Value::Object(overlay) = &agent.overlay {
        for (k, v) in overlay {
            if k != "instruction" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("instruction".into(), json!(agent.instruction));
    out.insert("valid".into(), json!(agent.is_valid()));
    if !agent.errors.is_empty() {
        out.insert(
            "errors".into(),
            json!(
                agent
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            ),
        );
    }
    if !agent.warnings.is_empty() {
        out.insert("warnings".into(), json!(agent.warnings));
    }
    if !agent.shadows.is_empty() {
        out.insert("shadows".into(), json!(agent.shadows));
    }
    if let Some(tree) = outline_of_tree_with(ctx.registry.agents(), name) {
        out.insert("tree".into(), json!(tree));
    }
    if merged && let Err(e) = add_merged(ctx, name, &mut out).await {
        out::error(e);
        return Ok(1);
    }
    let value = Value::Object(out);
    match format {
        ShowFormat::Json => outln!("{}", serde_json::to_string_pretty(&value)?)?,
        ShowFormat::Yaml => out!("{}", serde_saphyr::to_string(&value)?)?,
    }
    Ok(0)
}

/// `agent show --merged`'s keys: the plan and model a sub-session of `name` spawned
/// from a new root here would get (the engine's `AgentPlan`), and the project
/// instructions such a root adds to its system prompt.
async fn add_merged(
    ctx: &Context,
    name: &str,
    out: &mut serde_json::Map<String, Value>,
) -> std::result::Result<(), EngineError> {
    let (engine, _tx) = ctx.engine(false);
    let query = EngineQuery::AgentPlan {
        agent: name.to_string(),
    };
    let routed = match engine.ask(query).await {
        QueryReply::AgentPlan(result) => result?,
        other => return Err(unexpected(other)),
    };
    out.insert("merged".into(), redact(&routed.plan.to_value()));
    out.insert("resolved_model".into(), routed.model.to_value());
    let max = crate::config::context::ContextConfig::from_config(&ctx.config).0;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let private = crate::config::private::private_paths(&ctx.paths, home.as_deref());
    let found = crate::agent::instructions::load(&ctx.paths.cwd, max.instructions_max(), &private);
    out.insert("project_instructions".into(), json!(found));
    Ok(())
}

fn validate(paths: Vec<PathBuf>, options: ContextOptions) -> Result<i32> {
    let agents: Vec<AgentDef> = if paths.is_empty() {
        Context::load(&options)?.registry.agents().to_vec()
    } else {
        let mut defs: Vec<AgentDef> = paths.iter().map(|p| validate_file(p)).collect();
        crate::agent::tree::check(&mut defs);
        defs
    };
    let mut invalid = 0;
    for a in &agents {
        if a.is_valid() {
            outln!("ok       {} ({})", a.name, a.display_path())?;
        } else {
            invalid += 1;
            outln!("INVALID  {} ({})", a.name, a.display_path())?;
        }
        for e in &a.errors {
            outln!("  error: {e}")?;
        }
        for w in &a.warnings {
            outln!("  warning: {w}")?;
        }
    }
    outln!("{}, {} invalid", plural(agents.len(), "agent"), invalid)?;
    Ok(if invalid == 0 { 0 } else { 1 })
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
