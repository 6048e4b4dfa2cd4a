//! `arbor session cleanup [--yes]` and its offer at start (issue 25 item 2: no
//! worktree is left behind by a crash): lists the worktrees no session claims
//! (`isolation::leftover`) and, with `--yes`, removes them with their branches;
//! [`offer_cleanup`] says on stderr when there are any (headless runs, from
//! `Context::engine`). Its own file so `context` needs nothing from `session`.
//! Does not own: finding or removing them (`isolation::leftover`).

use color_eyre::Result;

use crate::outln;

/// `session cleanup [--yes]`: the left-over worktrees under `root`, removed with
/// `yes`. Exit 0, or 1 when one could not be removed.
pub fn cleanup(root: &std::path::Path, yes: bool) -> Result<i32> {
    let found = crate::isolation::leftover::find(root);
    if found.is_empty() {
        outln!("no left-over worktrees in {}", root.display())?;
        return Ok(0);
    }
    let mut code = 0;
    for leftover in &found {
        let branch = leftover.branch.as_deref().unwrap_or("no branch");
        if !yes {
            outln!("left over: {} ({branch})", leftover.path.display())?;
            continue;
        }
        match crate::isolation::leftover::remove(leftover) {
            Ok(()) => outln!("removed {} ({branch})", leftover.path.display())?,
            Err(e) => {
                crate::cli::out::error(e);
                code = 1;
            }
        }
    }
    if !yes {
        outln!("remove them with: arbor session cleanup --yes")?;
    }
    Ok(code)
}

/// On stderr, when worktrees under `root` are left over from a crash: how many and
/// the command that removes them (issue 25: found and offered at start).
pub fn offer_cleanup(root: &std::path::Path) {
    let found = crate::isolation::leftover::find(root);
    if !found.is_empty() {
        crate::cli::out::warning(format!(
            "{} worktree{} left by an earlier run with no session (in {}): see arbor session cleanup",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            root.display()
        ));
    }
}
