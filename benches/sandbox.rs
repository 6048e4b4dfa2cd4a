//! What the kernel sandbox adds to one `bash` call (issue 22): `sh -c true` started
//! directly, as an unsandboxed call runs it, against the same command started through
//! `arbor __sandbox` — the helper binary `exec`'d, a user and mount namespace, the key
//! files masked, Landlock, the seccomp filter, then `exec` of `sh` — with the policy a
//! session's call gets (writes in a temp project and its temp dir, the deny list of a
//! temp home, no network). The two kinds are interleaved in random order with random
//! gaps of 5–20 ms (seed printed), so neither gets a warmer cache or a quieter moment.
//! Wall time from spawn to exit, p50/p95 over `RUNS` calls each.
//!
//! Then what arbor's hermetic git (issue 34: `isolation::hermetic`, nothing the
//! repository configures runs) costs per turn: a turn's two checkpoints (before and
//! after: `Checkpoints::open` then `before_turn` / `after_turn`, as the engine runs
//! them) in a repository of
//! `FILES` files with one file changed per turn, against the same plumbing run as it
//! was before (`git add --all` through a temporary index, `write-tree`, `update-ref`,
//! with the caller's environment and the repository's config), interleaved the same
//! way, `TURNS` turns each.
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

/// Turns of each kind in the checkpoint comparison.
const TURNS: usize = 60;

/// Files in the checkpoint comparison's repository.
const FILES: usize = 500;

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
    checkpoints(&mut rng);
}

fn git(dir: &Path, args: &[&str], index: Option<&Path>) -> String {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// One turn's two checkpoints the way they ran before issue 34: each finds the
/// repository (`rev-parse`), then snapshots through a temporary index and sets a ref.
fn plain_turn(dir: &Path, turn: usize) {
    for label in [turn.to_string(), "end".to_string()] {
        git(
            dir,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-common-dir",
                "--git-dir",
            ],
            None,
        );
        git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
            None,
        );
        let tmp = tempfile::tempdir().unwrap();
        let index = tmp.path().join("index");
        std::fs::copy(dir.join(".git/index"), &index).unwrap();
        git(dir, &["add", "--all", "--", ":/"], Some(&index));
        let tree = git(dir, &["write-tree"], Some(&index));
        git(
            dir,
            &["update-ref", &format!("refs/plain/s/{label}"), &tree],
            None,
        );
    }
}

fn checkpoints(rng: &mut StdRng) {
    let repo = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "--quiet"], None);
    for i in 0..FILES {
        let sub = dir.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    git(dir, &["add", "--all"], None);
    git(
        dir,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "init",
        ],
        None,
    );
    let private = sessions.path().join("s").join("checkpoints.git");
    // As `engine::checkpoints` does: opened before the turn and again after it.
    let open = || arbor::isolation::checkpoint::Checkpoints::open(dir, "s", &private).unwrap();
    let (mut plain, mut hermetic) = (Vec::new(), Vec::new());
    let mut turn = 0;
    while plain.len() < TURNS || hermetic.len() < TURNS {
        std::thread::sleep(Duration::from_micros(rng.random_range(5_000..20_000)));
        turn += 1;
        let edited = dir.join(format!("d{}/f{}.txt", turn % 20, turn % FILES));
        std::fs::write(&edited, format!("turn {turn}\n")).unwrap();
        let use_hermetic = if plain.len() >= TURNS {
            true
        } else if hermetic.len() >= TURNS {
            false
        } else {
            rng.random_bool(0.5)
        };
        let start = Instant::now();
        if use_hermetic {
            open().before_turn(turn as u64).unwrap();
            open().after_turn().unwrap();
        } else {
            plain_turn(dir, turn);
        }
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if use_hermetic {
            hermetic.push(ms);
        } else {
            plain.push(ms);
        }
    }
    let (p50, p95) = stats::percentiles(&mut plain);
    let (h50, h95) = stats::percentiles(&mut hermetic);
    println!("a turn's two checkpoints, {FILES} files, {TURNS} turns each, ms");
    println!("  plain git      p50 {p50:.2}  p95 {p95:.2}");
    println!("  hermetic git   p50 {h50:.2}  p95 {h95:.2}");
    println!("  added          p50 {:.2}", h50 - p50);
}
