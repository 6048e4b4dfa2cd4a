//! `arbor doctor`'s `hooks` section (issue 39): every hook of this process — the
//! user's `config.yaml` ones and the project's settings files' — as active, or as
//! skipped with why (the project is not trusted, or changed since), and every hook
//! section that cannot be used (a problem).
//!
//! Does not own: reading the hooks (`hooks::listing`), the rest of the report
//! (`doctor`).

use color_eyre::Result;

use super::context::Context;
use super::out::plural;
use crate::outln;

/// Longest command shown on one line (characters); a longer one ends in `…`.
const COMMAND_SHOWN: usize = 60;

/// Prints the section; returns the number of problems (unusable hook sections).
pub(super) fn report(ctx: &Context) -> Result<usize> {
    let loaded = crate::hooks::listing::load(
        &ctx.config,
        crate::config::trust::Project::of(&ctx.paths).as_ref(),
    );
    let active = loaded
        .listing
        .iter()
        .filter(|h| h.skipped.is_none())
        .count();
    let skipped = loaded.listing.len() - active;
    if loaded.listing.is_empty() && loaded.problems.is_empty() {
        outln!(
            "hooks     none (`hooks:` in the config file, or a project's .claude/settings.json)"
        )?;
        return Ok(0);
    }
    outln!(
        "hooks     {} active, {} skipped",
        plural(active, "hook"),
        skipped
    )?;
    for hook in &loaded.listing {
        let mut command: String = hook.command.chars().take(COMMAND_SHOWN).collect();
        if hook.command.chars().count() > COMMAND_SHOWN {
            command.push('…');
        }
        let line = format!(
            "{} [{}] {command}  ({})",
            hook.event, hook.matcher, hook.source
        );
        match &hook.skipped {
            None => outln!("  active  {line}")?,
            Some(why) => outln!("  skipped {line}: {why}")?,
        }
    }
    for problem in &loaded.problems {
        outln!("  problem {problem}")?;
    }
    Ok(loaded.problems.len())
}
