//! What the kernel sandbox adds to one `bash` call (issue 22): `sh -c true` started
//! directly, as an unsandboxed call runs it, against the same command started through
//! `arbor __sandbox` — the helper binary `exec`'d, a user and mount namespace, the key
//! files masked, Landlock, the seccomp filter, then `exec` of `sh` — with the policy a
//! session's call gets (writes in a temp project and its temp dir, the deny list of a
//! temp home, no network). The two kinds are interleaved in random order with random
//! gaps of 5–20 ms (seed printed), so neither gets a warmer cache or a quieter moment.
//! Wall time from spawn to exit, p50/p95 over `RUNS` calls each.
//! Run: `cargo bench --bench sandbox` (the helper is the bench profile's `arbor`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/stats.rs"]
mod stats;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Calls of each kind.
const RUNS: usize = 300;

fn main() {
    let helper = Path::new(env!("CARGO_BIN_EXE_arbor"));
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let project = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let paths = arbor::paths::Paths::from_env_map(
        &|k: &str| (k == "HOME").then(|| home.path().display().to_string()),
        project.path().to_path_buf(),
    );
    let policy = arbor::sandbox::Policy {
        writable: vec![project.path().to_path_buf(), tmp.path().to_path_buf()],
        deny_read: arbor::sandbox::deny_list(&paths, Some(home.path())),
        network: false,
        ..Default::default()
    };
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut direct, mut sandboxed) = (Vec::new(), Vec::new());
    while direct.len() < RUNS || sandboxed.len() < RUNS {
        std::thread::sleep(Duration::from_micros(rng.random_range(5_000..20_000)));
        let through_sandbox = if direct.len() >= RUNS {
            true
        } else if sandboxed.len() >= RUNS {
            false
        } else {
            rng.random_bool(0.5)
        };
        let mut cmd = if through_sandbox {
            arbor::sandbox::command(helper, &policy, "sh", ["-c", "true"])
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", "true"]);
            c
        };
        cmd.current_dir(project.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let start = Instant::now();
        let status = cmd.status().unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        assert!(status.success(), "the call failed: {status}");
        if through_sandbox {
            sandboxed.push(ms);
        } else {
            direct.push(ms);
        }
    }
    let (d50, d95) = stats::percentiles(&mut direct);
    let (s50, s95) = stats::percentiles(&mut sandboxed);
    println!("sh -c true, {RUNS} calls each, ms");
    println!("  direct     p50 {d50:.2}  p95 {d95:.2}");
    println!("  sandboxed  p50 {s50:.2}  p95 {s95:.2}");
    println!("  added      p50 {:.2}", s50 - d50);
}
