//! `arbor worker`: takes remote sub-sessions' jobs from NATS JetStream and runs them
//! (`crate::worker`, issue 27).
//!
//! Owns: the flags, the worker's [`Factory`] — an engine per job over this machine's
//! config (provider keys, MCP servers, sandbox) and bundle, with the job's `approvals:`
//! replacing the config's, no `remote:` (a job's own sub-sessions run on this worker)
//! and interactive approvals (answered by the root), all jobs' engines sharing one
//! pool of HTTP clients — where
//! its jobs' directories go (`worker/` in arbor's state directory), and stopping on
//! Ctrl-C / SIGTERM. Does not own: the
//! worker loop, leases or the wire (`worker`, `remote`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{Context as _, Result, eyre};
use tokio_util::sync::CancellationToken;

use super::context::{Context, ContextOptions};
use crate::engine::{ApprovalMode, Engine, RuntimeOptions};
use crate::remote::RemoteAuth;
use crate::remote::wire::DEFAULT_POOL;
use crate::session::EventBus;
use crate::worker::{Factory, JobSetup, Voice, WorkerOptions};

/// `arbor worker`'s flags.
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// The NATS server (`nats://host:4222`, `tls://…`; several comma-separated).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The pool whose jobs this worker takes (`remote.pool` of the root's config).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_POOL)]
    pub pool: String,
    /// Jobs run at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    pub slots: Option<u32>,
    /// This machine's clone of the project's repository (default: the current
    /// directory); jobs run in worktrees of their base commit cut from it.
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Seconds a job may go without a heartbeat before JetStream hands it to another
    /// worker (the worker renews every third of it).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub ack_wait: u64,
    /// A NATS credentials file (`.creds`). Other forms come from the environment only,
    /// as the `nats` CLI reads them: `NATS_TOKEN`, `NATS_USER` with `NATS_PASSWORD`, or
    /// credentials in the URL (shown redacted).
    #[arg(long, value_name = "PATH", env = "NATS_CREDS")]
    pub creds: Option<PathBuf>,
    /// A file holding an nkey seed (`SU…`).
    #[arg(long, value_name = "PATH", env = "NATS_NKEY")]
    pub nkey: Option<PathBuf>,
    /// An extra CA certificate (PEM) for a `tls://` server with a private CA.
    #[arg(long, value_name = "PATH", env = "NATS_CA")]
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM) for a server that verifies clients; needs `--key`.
    #[arg(long, value_name = "PATH", env = "NATS_CERT")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "PATH", env = "NATS_KEY")]
    pub key: Option<PathBuf>,
}

/// Runs `arbor worker` until Ctrl-C or SIGTERM. Returns the exit code (0).
///
/// Errors: a `--nats` URL of another scheme than `nats://`, `tls://`, `ws://`,
/// `wss://`; the config or bundle cannot be loaded; `--slots 0`, `--ack-wait 0`, a
/// `--repo` that does not exist; the streams, buckets or consumer cannot be created.
pub async fn run(args: WorkerArgs, options: ContextOptions) -> Result<i32> {
    if let Some(bad) = args.nats.split(',').map(str::trim).find(|u| {
        !u.is_empty()
            && !crate::config::remote::SCHEMES
                .iter()
                .any(|s| u.starts_with(s))
    }) {
        return Err(eyre!(
            "--nats: expected a URL starting with {}, got {}",
            crate::config::remote::SCHEMES.join(", "),
            crate::remote::redact_url(bad)
        ));
    }
    if args.slots == Some(0) {
        return Err(eyre!("--slots must be at least 1"));
    }
    if args.ack_wait == 0 {
        return Err(eyre!("--ack-wait must be at least 1 second"));
    }
    let repo = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().wrap_err("cannot read the current directory")?,
    };
    let repo =
        std::fs::canonicalize(&repo).wrap_err_with(|| format!("--repo {}", repo.display()))?;
    if crate::isolation::Repo::discover(&repo).is_err() {
        super::out::warning(format!(
            "{} is not a git repository: jobs that work on files will fail (start the worker in, or with --repo, a clone of the project)",
            repo.display()
        ));
    }
    let mut ctx = Context::load(&options)?;
    if ctx.config.remote.is_some() {
        tracing::info!(
            "worker: remote: of this machine's config is not used by jobs; their sub-sessions run here"
        );
    }
    if let Some(notice) = ctx.use_local_servers() {
        tracing::info!("{notice}");
    }
    let slots = args.slots.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(1))
            .unwrap_or(1)
    });
    let worker_options = WorkerOptions {
        nats_url: args.nats.clone(),
        auth: RemoteAuth {
            creds: args.creds.clone(),
            nkey: args.nkey.clone(),
            ca: args.ca.clone(),
            cert: args.cert.clone(),
            key: args.key.clone(),
            ..RemoteAuth::from_env(&|name: &str| std::env::var(name).ok())
        },
        pool: args.pool.clone(),
        slots,
        repo,
        ack_wait: Duration::from_secs(args.ack_wait),
        paths: ctx.paths.clone(),
        scratch: ctx.paths.log_file.with_file_name("worker"),
    };
    let voice = Voice {
        out: Arc::new(|line: &str| {
            if let Err(e) = crate::outln!("{line}") {
                tracing::warn!("worker: stdout: {e}");
            }
        }),
        err: Arc::new(|line: &str| super::out::error(line)),
    };
    let stop = CancellationToken::new();
    tokio::spawn(stop_on_signal(stop.clone()));
    crate::worker::serve(worker_options, factory(ctx), voice, stop).await?;
    Ok(0)
}

/// An engine per job over `ctx` (see the module doc).
fn factory(ctx: Context) -> Factory {
    let (registry, handle) = tokio::sync::watch::channel(ctx.registry.clone());
    // One pool for every job's engine: the system certificates are read, and the
    // provider's connections made, once per worker instead of once per job.
    let http = Arc::new(crate::provider::HttpPool::new());
    Arc::new(move |setup: JobSetup| {
        // The sender lives as long as the factory, so every job's registry stays open.
        let _ = &registry;
        let mut config = ctx.config.clone();
        config.approvals = setup.approvals;
        // A job's own sub-sessions run here: dispatching them to the pool again could
        // wait on a slot this very job holds.
        config.remote = None;
        let options = RuntimeOptions {
            paths: setup.paths,
            config,
            bundle: ctx.bundle.clone(),
            registry: handle.clone(),
            env: ctx.env.clone(),
            bus: EventBus::new(),
            approval_mode: ApprovalMode::Interactive,
        };
        Ok(Engine::builder(options)
            .headless()
            .starts_now()
            .http_pool(http.clone())
            .tree_room(setup.tree_room)
            .build())
    })
}

/// Cancels `stop` at Ctrl-C or SIGTERM.
async fn stop_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    stop.cancel();
}
