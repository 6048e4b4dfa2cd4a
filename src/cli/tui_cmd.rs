//! `arbor` with no subcommand: the TUI.
//!
//! Wires the context, the file watcher (hot reload) and an interactive engine into
//! `tui::run`.
//! A watcher that cannot start (e.g. inotify limits) is logged and the TUI runs
//! without hot reload rather than not at all.

use color_eyre::Result;

use super::Cli;
use super::context::{Context, ContextOptions};
use crate::agent::watcher::spawn_watcher;
use crate::engine::{ApprovalMode, Engine, EngineError};
use crate::routing::local::no_provider_banner;
use crate::routing::setup::detect_providers;
use crate::tui::error::NoProvider;
use crate::tui::{TuiOptions, no_color_from_env};

/// Starts the TUI; returns the exit code.
pub async fn run_tui(cli: &Cli, options: ContextOptions) -> Result<i32> {
    let mut ctx = Context::load(&options)?;
    let notice = ctx.use_local_servers();
    let mut watcher = spawn_watcher(
        ctx.paths.clone(),
        ctx.bundle_path.clone(),
        ctx.env.clone(),
        ctx.registry.clone(),
    )
    .inspect_err(|e| tracing::warn!("hot reload is off: {e}"))
    .ok();
    // Without a watcher the registry stays as loaded; the sender keeps the channel open.
    let (_fixed_tx, fixed_rx) = tokio::sync::watch::channel(ctx.registry.clone());
    let registry = watcher.as_ref().map_or(fixed_rx, |w| w.registry.clone());
    // The handle must stay alive (it stops watching on drop): take only its receiver.
    let reloads = watcher
        .as_mut()
        .map(|w| std::mem::replace(&mut w.reloads, tokio::sync::mpsc::unbounded_channel().1));
    // `--model`: every new root session of this TUI uses it unless switched.
    let engine =
        Engine::interactive(ctx.engine_options(registry.clone(), ApprovalMode::Interactive))
            .with_root_model(cli.model.clone());
    let tui_options = TuiOptions {
        open_session: cli.resume.clone(),
        continue_last: cli.continue_,
        agent: cli.agent.clone(),
        theme: cli.theme.clone().or_else(|| ctx.config.theme.clone()),
        provider_label: engine.provider_label().map_err(|e| {
            NoProvider(match e {
                // Nothing configured and nothing found: the short banner with a config to
                // paste (the long text is `arbor doctor`'s and `arbor run`'s).
                EngineError::NoProvider(_)
                    if detect_providers(&ctx.config, ctx.env.as_ref()).is_empty() =>
                {
                    no_provider_banner(&ctx.paths.config_file)
                }
                e => e.to_string(),
            })
        }),
        notice,
        registry,
        reloads,
        keymap: ctx.config.keymap.clone(),
        paths: ctx.paths.clone(),
        no_color: no_color_from_env(),
        notify: ctx.config.notify,
        mouse: ctx.config.mouse_capture(),
    };
    crate::tui::run(engine, tui_options).await?;
    drop(watcher);
    Ok(0)
}
