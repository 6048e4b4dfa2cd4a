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

pub mod agent;
pub mod context;
pub mod doctor;
mod doctor_checks;
pub mod doctor_mcp;
pub mod doctor_sandbox;
pub mod logging;
pub mod models;
pub mod out;
pub mod run;
pub mod session;
pub mod trust;
pub mod tui_cmd;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

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
    #[arg(long, value_name = "NAME", global = true)]
    pub agent: Option<String>,
    /// Model for new root sessions (TUI, `run`) or for the resumed session's next
    /// turns (`session resume`): `MODEL` on the configured provider, or
    /// `PROVIDER/MODEL`; a glob (`claude-sonnet-*`) picks the newest listed match.
    #[arg(long, value_name = "NAME", global = true)]
    pub model: Option<String>,
    /// Bundle file (`bundle.md` or `.yaml`) instead of the built-in one.
    #[arg(long, value_name = "PATH", global = true)]
    pub bundle: Option<PathBuf>,
    /// Theme name (built-in `dark`, `light`, `ansi`, or a user theme).
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands; none starts the TUI.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one prompt headless and print the answer.
    Run(run::RunArgs),
    /// Inspect and validate agent files.
    #[command(subcommand)]
    Agent(agent::AgentCommand),
    /// Inspect, resume and export stored sessions.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// List the models each configured provider offers.
    Models {
        /// Only this provider (id or module).
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Trust a project once, so its agents may add tools (or `--revoke`, `--list`).
    Trust(trust::TrustArgs),
    /// Check providers, keys (never printed), local servers, routing, approvals, trust
    /// and agent files.
    Doctor,
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
    let options = context::ContextOptions {
        bundle: cli.bundle.clone(),
    };
    match cli.command {
        None => tui_cmd::run_tui(&cli, options).await,
        Some(Command::Run(args)) => {
            let root = crate::engine::RootOptions {
                agent: cli.agent.clone(),
                model: cli.model.clone(),
            };
            run::run(args, root, options).await
        }
        Some(Command::Agent(cmd)) => agent::run(cmd, options).await,
        Some(Command::Session(cmd)) => session::run(cmd, cli.model.clone(), options).await,
        Some(Command::Models { provider, json }) => models::run(provider, json, options).await,
        Some(Command::Trust(args)) => trust::run(args),
        Some(Command::Doctor) => doctor::run(options).await,
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
