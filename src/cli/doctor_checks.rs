//! `arbor doctor`'s checks of what the TUI and the bundle will use, each a problem
//! (non-zero exit) named on its own line:
//! - the config's `keymap:` (an unknown action, a key that does not parse, a conflict:
//!   `tui::keymap::Keymap::with_overrides`, the check the TUI runs at start);
//! - the theme (config `theme:`, default `dark`) and every user theme file in the
//!   themes directory (`tui::theme::Theme::load`);
//! - the bundle: `tools`/`providers`/`hooks` modules arbor cannot run (SPEC §5: the
//!   built-in modules of `agent::validate`; arbor runs no hook modules), and agents
//!   the root may delegate to while the bundle mounts no delegation tool (`tool-task`),
//!   so none of them could ever be reached.
//!
//! Does not own: the rest of the report (`doctor`), or the rules themselves (the
//! keymap, theme and bundle modules).

use color_eyre::Result;

use super::context::Context;
use super::out::plural;
use crate::agent::validate::implemented_modules;
use crate::config::mount_plan::ModuleSpec;
use crate::outln;
use crate::tool::delegate::MODULE as DELEGATE_MODULE;
use crate::tool::task::{MODULE as TASK_MODULE, allowed_agents};
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;

/// Checks the keymap and themes; prints one line each (and one per broken user theme).
/// Returns the number of problems.
pub(super) fn keymap_and_themes(ctx: &Context) -> Result<usize> {
    let mut problems = 0;
    match Keymap::with_overrides(&ctx.config.keymap) {
        Ok(_) if ctx.config.keymap.is_empty() => outln!("keymap    defaults")?,
        Ok(_) => outln!("keymap    {}", plural(ctx.config.keymap.len(), "override"))?,
        Err(_) => {
            // Every bad entry once (issue 23 item 10); the known actions once.
            let (errors, known) = super::doctor_config::keymap_errors(&ctx.config.keymap);
            problems += errors.len().max(1);
            for (i, error) in errors.iter().enumerate() {
                let lead = if i == 0 {
                    "keymap    unusable:"
                } else {
                    "  keymap "
                };
                outln!("{lead} {error}")?;
            }
            if let Some(known) = known {
                outln!("  known   {known}")?;
            }
        }
    }
    let dir = &ctx.paths.themes_dir;
    let configured = ctx.config.theme.as_deref();
    match Theme::load(configured, dir, false) {
        Ok(theme) => outln!("theme     {}", theme.name())?,
        Err(e) => {
            problems += 1;
            outln!("theme     unusable: {e}")?;
        }
    }
    // A user theme that is not selected now still breaks `--theme NAME` later.
    for name in user_theme_names(dir) {
        if Some(name.as_str()) == configured {
            continue;
        }
        if let Err(e) = Theme::load(Some(&name), dir, false) {
            problems += 1;
            outln!("  theme   unusable: {e}")?;
        }
    }
    Ok(problems)
}

/// The stems of `*.yaml` files in `dir`, sorted (none when it cannot be read).
fn user_theme_names(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

/// Checks the bundle (see the module docs) and prints its warnings. Returns the
/// number of problems.
pub(super) fn bundle(ctx: &Context) -> Result<usize> {
    let mut problems = 0;
    let plan = &ctx.bundle.mount_plan;
    for (list, implemented) in implemented_modules() {
        for module in plan.module_list(list).iter().filter_map(ModuleSpec::module) {
            if !implemented.contains(&module) {
                problems += 1;
                outln!(
                    "  bundle  {list}: module {module} is one arbor cannot run (it runs {})",
                    if implemented.is_empty() {
                        "no hook modules".to_string()
                    } else {
                        implemented.join(", ")
                    }
                )?;
            }
        }
    }
    let delegation: Vec<String> = plan
        .tools()
        .into_iter()
        .map(|entry| entry.module)
        .filter(|m| m == TASK_MODULE || m == DELEGATE_MODULE)
        .collect();
    let agents = allowed_agents(ctx.registry.agents(), plan.agents());
    if !delegation.is_empty() {
        outln!(
            "  bundle  delegation tool mounted: {} ({} available)",
            delegation.join(", "),
            plural(agents.len(), "agent")
        )?;
    }
    if delegation.is_empty() && !agents.is_empty() {
        problems += 1;
        outln!(
            "  bundle  {} available but no delegation tool: add `- module: {TASK_MODULE}` or `- module: {DELEGATE_MODULE}` to the bundle's tools (or `agents: none`)",
            plural(agents.len(), "agent")
        )?;
    }
    for w in &ctx.bundle.warnings {
        // Unavailable modules are reported above, as problems.
        if !w.starts_with("unavailable module ") {
            outln!("  bundle  {w}")?;
        }
    }
    Ok(problems)
}
