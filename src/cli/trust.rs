//! `arbor trust [PATH] [--revoke] [--list]`: trust a project once (SPEC §12 "Trust").
//!
//! Owns: the subcommand's arguments and output. The project is PATH (default: the
//! current directory) or its nearest ancestor with `.amplifier/agents/`,
//! `.amplifier/bundles/`, `.mcp.json` or hooks in a settings file; it lists each power
//! file and what it gains (`config::trust::powers`); trusting records a hash of the files that
//! grant power (`config::trust::power_files`), and a changed file asks again;
//! a directory with neither has nothing to trust. Reads no config file, so a broken
//! config never stands in the way. Does not own: the store or what trust unlocks
//! (`config::trust`, `agent::registry`).

use std::path::{Path, PathBuf};

use color_eyre::Result;
use color_eyre::eyre::eyre;

use crate::config::trust::{self, TrustStore};
use crate::outln;
use crate::paths::Paths;

/// `arbor trust` arguments.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The project directory (default: the current directory's project).
    pub path: Option<PathBuf>,
    /// Forget the project instead: its agents add no tools again.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List the trusted projects.
    #[arg(long, conflicts_with = "path")]
    pub list: bool,
}

/// Runs `arbor trust`; returns the exit code.
pub fn run(args: TrustArgs) -> Result<i32> {
    let paths = Paths::from_env();
    let mut store = TrustStore::load(&paths.trust_file())?;
    if args.list {
        if store.projects().is_empty() {
            outln!("no trusted projects")?;
        }
        for p in store.projects() {
            let note = if !p.path.is_dir() {
                " (missing)".to_string()
            } else {
                match store.state(&p.path) {
                    trust::TrustState::Changed(files) => {
                        format!(
                            " (changed since: {}; run `arbor trust` again)",
                            files.join(", ")
                        )
                    }
                    _ => String::new(),
                }
            };
            outln!("{}  {}{note}", p.path.display(), p.trusted_at)?;
        }
        return Ok(0);
    }
    let start = match &args.path {
        Some(p) => std::fs::canonicalize(p).map_err(|e| eyre!("{}: {e}", p.display()))?,
        None => paths.cwd.clone(),
    };
    let root = trust::project_root(&start);
    if args.revoke {
        let root = root.unwrap_or(start);
        if store.revoke(&root)? {
            outln!(
                "revoked   {}: its hooks, MCP servers and agents' tools stop until trusted \
                 again (a running arbor applies it at the next turn)",
                root.display()
            )?;
        } else {
            outln!("not trusted  {}", root.display())?;
        }
        return Ok(0);
    }
    let Some(root) = root else {
        outln!(
            "nothing to trust: {} and its parents have no {}, {}, {} or hooks in {}",
            start.display(),
            trust::AGENTS_DIR,
            trust::BUNDLES_DIR,
            trust::MCP_FILE,
            trust::SETTINGS_FILES.join(" / ")
        )?;
        return Ok(0);
    };
    describe(&root)?;
    let (root, added) = store.trust(&root)?;
    if added {
        outln!(
            "trusted   {}: its hooks run, its agents may add tools and its MCP servers \
             may start (a running arbor applies it at the next turn); agent files still \
             cannot loosen approvals",
            root.display()
        )?;
    } else {
        outln!("trusted   {} (already)", root.display())?;
    }
    Ok(0)
}

/// What trusting `root` lets in: each power file and what it gains
/// (`config::trust::powers`).
fn describe(root: &Path) -> Result<()> {
    let powers = trust::powers::describe(root);
    if powers.is_empty() {
        outln!("grants    nothing yet (no hooks, .mcp.json, agent that adds tools, or bundle)")?;
    }
    for power in powers {
        outln!("grants    {}: {}", power.path, power.gains)?;
    }
    Ok(())
}
