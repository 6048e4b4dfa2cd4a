//! `arbor doctor`'s remote section (issue 27): when the config has `remote:`, connects
//! to its NATS server (within 3 s) and reports the server's version and JetStream, the
//! pool's job consumer (jobs waiting, jobs taken but not yet acknowledged) and the pool's
//! live workers from the presence bucket; an agent whose frontmatter says `remote: true`
//! while the config has no `remote:` is a warning (it runs here).
//!
//! ```text
//! remote    nats://127.0.0.1:4222, pool default
//!   server  NATS 2.15.1, JetStream on, max payload 8.0 MiB
//!   jobs    consumer arbor-pool-default: 0 waiting, 1 taken (not acked yet)
//!   workers 2 live in pool default
//!     w-1a2b3c4d on build-1 pid 4242: 1/4 slots busy, arbor 0.1.0, up 3m
//! ```
//!
//! Owns: this report only. Does not own: the `remote:` config and the frontmatter
//! reading (`config::remote`; a bad `remote:` fails loading the config earlier), the
//! names and records it reads (`remote::wire`), connecting (`remote::nats`). It only
//! reads: it creates no stream, consumer or bucket.

use std::time::Duration;

use color_eyre::Result;

use super::context::Context;
use crate::config::remote::frontmatter;
use crate::outln;
use crate::remote::wire::{JOBS_STREAM, consumer_name, now_ms};
use crate::remote::{Remote, RemoteAuth, redact_url};

/// How long connecting, and then each query, may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Prints the section; returns the number of problems: a NATS server that cannot be
/// reached within 3 s (the line names the URL), a server without JetStream. No live worker in the pool, no consumer yet and frontmatter `remote: true`
/// without `remote:` config are warnings: the root can still dispatch (jobs wait in the
/// queue for a worker) or runs the agent here.
pub async fn report(ctx: &Context) -> Result<usize> {
    let asking: Vec<&str> = ctx
        .registry
        .agents()
        .iter()
        .filter(|a| matches!(frontmatter(&a.overlay), Ok(Some(true))))
        .map(|a| a.name.as_str())
        .collect();
    let Some(target) = &ctx.config.remote else {
        outln!("remote    off (no `remote:` in the config file: sub-sessions run here)")?;
        for name in asking {
            outln!(
                "  warning agent {name} says `remote: true` but the config has no `remote:` section: it runs here"
            )?;
        }
        return Ok(0);
    };
    let shown = redact_url(&target.nats_url);
    outln!("remote    {shown}, pool {}", target.pool)?;
    // As the root's dispatch reads them (`engine::remote`).
    let auth = RemoteAuth::from_env(&|name: &str| (ctx.env)(name));
    let remote = match tokio::time::timeout(
        TIMEOUT,
        Remote::connect(&target.nats_url, "arbor doctor", &auth),
    )
    .await
    {
        Ok(Ok(remote)) => remote,
        Ok(Err(e)) => {
            outln!("  failed  {e}")?;
            return Ok(1);
        }
        Err(_) => {
            outln!(
                "  failed  cannot reach NATS at {shown}: no answer within {} s",
                TIMEOUT.as_secs()
            )?;
            return Ok(1);
        }
    };
    let info = remote.client().server_info();
    let payload = format!("{:.1} MiB", info.max_payload as f64 / (1024.0 * 1024.0));
    if !info.jetstream {
        outln!(
            "  failed  NATS {} has JetStream off: start it with `-js` (scripts/nats-server does)",
            info.version
        )?;
        return Ok(1);
    }
    outln!(
        "  server  NATS {}, JetStream on, max payload {payload}",
        info.version
    )?;
    jobs(&remote, &target.pool, target.ack_wait).await?;
    workers(&remote, &target.pool).await?;
    Ok(0)
}

/// The pool's consumer: jobs waiting for a worker and jobs taken but not acknowledged;
/// a warning when its ack wait (set by the workers) is not `ack_wait` (the config's).
async fn jobs(remote: &Remote, pool: &str, ack_wait: Duration) -> Result<()> {
    let name = match consumer_name(pool) {
        Ok(name) => name,
        Err(e) => return Ok(outln!("  jobs    {e}")?),
    };
    let stream = match tokio::time::timeout(TIMEOUT, remote.js().get_stream(JOBS_STREAM)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(_)) => {
            return Ok(outln!(
                "  jobs    no stream {JOBS_STREAM} yet (made by the first root or worker that connects)"
            )?);
        }
        Err(_) => {
            return Ok(outln!(
                "  jobs    no answer within {} s",
                TIMEOUT.as_secs()
            )?);
        }
    };
    match tokio::time::timeout(TIMEOUT, stream.consumer_info(&name)).await {
        Ok(Ok(info)) => {
            outln!(
                "  jobs    consumer {name}: {} waiting, {} taken (not acked yet){}",
                info.num_pending,
                info.num_ack_pending,
                match info.num_redelivered {
                    0 => String::new(),
                    n => format!(", {n} redelivered"),
                }
            )?;
            // The workers set the consumer's ack wait (`--ack-wait`); the root waits that
            // long for a cancelled run (`remote.ack_wait`): they should agree.
            let theirs = info.config.ack_wait;
            if theirs != ack_wait {
                outln!(
                    "  warning the pool's ack wait is {} s (the workers' --ack-wait) but remote.ack_wait is {} s: set them alike",
                    theirs.as_secs(),
                    ack_wait.as_secs()
                )?;
            }
        }
        Ok(Err(_)) => outln!(
            "  warning no consumer {name} yet: no worker has joined pool {pool} (`arbor worker --pool {pool}`)"
        )?,
        Err(_) => outln!("  jobs    no answer within {} s", TIMEOUT.as_secs())?,
    }
    Ok(())
}

/// The live workers of the pool (presence entries expire 30 s after a worker's last
/// refresh, so every entry is a worker alive within that time), and how many serve
/// other pools.
async fn workers(remote: &Remote, pool: &str) -> Result<()> {
    let listed = match tokio::time::timeout(TIMEOUT, remote.live_workers()).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(e)) => return Ok(outln!("  warning cannot list workers: {e}")?),
        Err(_) => {
            return Ok(outln!(
                "  workers no answer within {} s",
                TIMEOUT.as_secs()
            )?);
        }
    };
    let (mine, others): (Vec<_>, Vec<_>) = listed.into_iter().partition(|w| w.pool == pool);
    let elsewhere = match others.len() {
        0 => String::new(),
        n => format!(" ({n} in other pools)"),
    };
    if mine.is_empty() {
        outln!(
            "  warning no live worker in pool {pool}{elsewhere}: remote sub-sessions wait until one joins"
        )?;
        return Ok(());
    }
    outln!("  workers {} live in pool {pool}{elsewhere}", mine.len())?;
    let now = now_ms();
    for w in &mine {
        outln!(
            "    {} on {} pid {}: {}/{} slots busy, arbor {}, up {}",
            w.ran_on.worker,
            w.ran_on.host,
            w.ran_on.pid,
            w.busy,
            w.slots,
            w.version,
            uptime(now.saturating_sub(w.started_ms))
        )?;
    }
    Ok(())
}

/// `ms` as the largest whole unit: `12s`, `3m`, `2h`, `4d`.
fn uptime(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}
