//! The command line (SPEC §14): clap types and one file per subcommand.
//!
//! Owns: argument parsing, building the engine context from paths/config/bundle
//! (`context`), the headless consumers of the engine (`run`, `agent`, `session`), and
//! the commands around them (`doctor`, `models`, `trust`).
//! Does not own: the TUI (started from here through `tui::run`) or any engine logic.
//!
//! Everything printed goes through `out` (a closed stdout ends a command quietly;
//! errors on stderr are scrubbed of credentials), so `print!`/`eprint!` are denied here.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod acp;
pub mod agent;
pub mod call;
pub mod context;
pub mod doctor;
mod doctor_checks;
mod doctor_config;
mod doctor_hooks;
pub mod doctor_mcp;
mod doctor_nats;
pub mod doctor_sandbox;
pub mod logging;
pub mod models;
pub mod out;
pub mod run;
pub mod session;
pub mod trust;
pub mod tui_cmd;
pub mod worker;
pub mod worktrees;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// arbor — a terminal workbench for trees of AI-agent sessions.
#[derive(Debug, Parser)]
#[command(name = "arbor", version, about, long_about = None)]
pub struct Cli {
    /// Open this session in the TUI (full id, unambiguous prefix, or the 8-character
    /// short id the TUI shows).
    #[arg(long, value_name = "ID", global = false)]
    pub resume: Option<String>,
    /// Open the most recent root session of this project in the TUI.
    #[arg(long = "continue", short = 'c')]
    pub continue_: bool,
    /// Agent for new sessions (default: the bundle's root agent).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Model for new root sessions: `MODEL` on the configured provider, or
    /// `PROVIDER/MODEL`; a glob (`claude-sonnet-*`) picks the newest listed match.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Bundle file (`bundle.md` or `.yaml`) instead of the built-in one.
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// Theme name (built-in `dark`, `light`, `ansi`, or a user theme).
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--bundle` on a command that loads the bundle and its agents (issue 23 item 10:
/// each flag only where it applies; `arbor --bundle P COMMAND` works too).
#[derive(Debug, Clone, Default, Args)]
pub struct BundleArg {
    /// Bundle file (`bundle.md` or `.yaml`) instead of the built-in one.
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
}

/// [`BundleArg`] for a command group: given to the group, it applies to every
/// subcommand (`arbor agent list --bundle P`).
#[derive(Debug, Clone, Default, Args)]
pub struct GroupBundleArg {
    /// Bundle file (`bundle.md` or `.yaml`) instead of the built-in one.
    #[arg(long, value_name = "PATH", global = true)]
    pub bundle: Option<PathBuf>,
}

/// `--agent` and `--model` of `arbor run` (a new root session).
#[derive(Debug, Clone, Default, Args)]
pub struct NewRootArgs {
    /// Agent for the new session (default: the bundle's root agent).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Model for the new session: `MODEL` on the configured provider, or
    /// `PROVIDER/MODEL`; a glob (`claude-sonnet-*`) picks the newest listed match.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
}

/// `arbor agent …` with its `--bundle`.
#[derive(Debug, Args)]
pub struct AgentGroup {
    #[command(flatten)]
    pub bundle: GroupBundleArg,
    #[command(subcommand)]
    pub command: agent::AgentCommand,
}

/// `arbor session …` with its `--bundle`.
#[derive(Debug, Args)]
pub struct SessionGroup {
    #[command(flatten)]
    pub bundle: GroupBundleArg,
    #[command(subcommand)]
    pub command: session::SessionCommand,
}

/// Subcommands; none starts the TUI.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt headless and print the answer.
    Run {
        #[command(flatten)]
        args: run::RunArgs,
        #[command(flatten)]
        root: NewRootArgs,
        #[command(flatten)]
        bundle: BundleArg,
    },
    /// Inspect and validate agent files.
    Agent(AgentGroup),
    /// Inspect, resume and export stored sessions.
    Session(SessionGroup),
    /// List the models each configured provider offers.
    Models {
        /// Only this provider (id or module).
        #[arg(long)]
        provider: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        bundle: BundleArg,
    },
    /// Trust a project once, so its agents may add tools (or `--revoke`, `--list`).
    Trust(trust::TrustArgs),
    /// Check providers, keys (never printed), local servers, routing, approvals, trust
    /// and agent files.
    Doctor(BundleArg),
    /// Serve the Agent Client Protocol on stdin/stdout for an editor (Zed, JetBrains,
    /// Neovim): each ACP session is an arbor session, its sub-sessions ACP subagents.
    Acp(BundleArg),
    /// Run remote sub-sessions' turns taken from a NATS JetStream work queue, with this
    /// machine's provider keys, MCP servers, sandbox and repository clone.
    Worker {
        #[command(flatten)]
        args: worker::WorkerArgs,
        #[command(flatten)]
        bundle: BundleArg,
    },
    /// Print shell completions.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// `--output-format` of `run` and `session resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// Stream the answer's text.
    #[default]
    Text,
    /// One final object `{status, response, session_id, agent, error?}`.
    Json,
    /// One bus event per line, then the final object.
    Jsonl,
}

/// Runs the parsed command; returns the process exit code.
pub async fn dispatch(cli: Cli) -> color_eyre::Result<i32> {
    // A subcommand's own `--bundle` wins over one given before it.
    let options = |own: Option<PathBuf>| context::ContextOptions {
        bundle: own.or_else(|| cli.bundle.clone()),
    };
    match cli.command {
        None => tui_cmd::run_tui(&cli, options(None)).await,
        Some(Command::Run { args, root, bundle }) => {
            let root = crate::engine::RootOptions {
                agent: root.agent.or_else(|| cli.agent.clone()),
                model: root.model.or_else(|| cli.model.clone()),
            };
            run::run(args, root, options(bundle.bundle)).await
        }
        Some(Command::Agent(group)) => {
            agent::run(group.command, options(group.bundle.bundle)).await
        }
        Some(Command::Session(group)) => {
            session::run(
                group.command,
                cli.model.clone(),
                options(group.bundle.bundle),
            )
            .await
        }
        Some(Command::Models {
            provider,
            json,
            bundle,
        }) => models::run(provider, json, options(bundle.bundle)).await,
        Some(Command::Trust(args)) => trust::run(args),
        Some(Command::Doctor(bundle)) => doctor::run(options(bundle.bundle)).await,
        Some(Command::Acp(bundle)) => {
            acp::run(options(bundle.bundle), cli.agent.clone(), cli.model.clone()).await
        }
        Some(Command::Worker { args, bundle }) => worker::run(args, options(bundle.bundle)).await,
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "arbor", &mut script);
            crate::out!("{}", String::from_utf8_lossy(&script))?;
            Ok(0)
        }
    }
}
