//! A real `arbor worker` process for the remote tests, in its own environment (home,
//! Amplifier home, config with a loopback provider), its stdout and stderr in files of
//! its temp dir; killed on drop.
#![allow(dead_code)]

use std::process::Child;
use std::time::{Duration, Instant};

use super::TestEnv;

/// One `arbor worker` and its environment.
pub struct WorkerProc {
    pub env: TestEnv,
    pub child: Child,
}

impl WorkerProc {
    /// Starts `arbor worker --nats URL` with `args` (`--slots 1` and `--ack-wait 5`
    /// unless `args` give them), its provider
    /// at `base_url`; waits (60 s) for its start line.
    pub fn start(url: &str, base_url: &str, args: &[&str]) -> Self {
        let mut worker = Self::spawn(url, base_url, args);
        worker.wait_for("worker w-", 60);
        worker
    }

    /// [`WorkerProc::start`] with `prepare` run on its environment first (its own
    /// agent files, config).
    pub fn start_with(
        url: &str,
        base_url: &str,
        args: &[&str],
        prepare: impl FnOnce(&TestEnv),
    ) -> Self {
        let env = TestEnv::new();
        env.use_openai(base_url, "sk-worker-proc");
        prepare(&env);
        let mut worker = Self::spawn_in(env, url, args);
        worker.wait_for("worker w-", 60);
        worker
    }

    /// Starts it without waiting for its start line.
    pub fn spawn(url: &str, base_url: &str, args: &[&str]) -> Self {
        let env = TestEnv::new();
        env.use_openai(base_url, "sk-worker-proc");
        Self::spawn_in(env, url, args)
    }

    fn spawn_in(env: TestEnv, url: &str, args: &[&str]) -> Self {
        let mut cmd = env.std_cmd();
        cmd.args(["worker", "--nats", url]);
        for (flag, default) in [("--slots", "1"), ("--ack-wait", "5")] {
            if !args.contains(&flag) {
                cmd.args([flag, default]);
            }
        }
        cmd.args(args)
            .stdout(std::fs::File::create(env.dir.path().join("worker.out")).unwrap())
            .stderr(std::fs::File::create(env.dir.path().join("worker.err")).unwrap());
        let child = cmd.spawn().unwrap();
        Self { env, child }
    }

    /// Waits up to `secs` for its output to contain `needle`; panics with the output
    /// when it does not, or when the worker exits first.
    pub fn wait_for(&mut self, needle: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !self.output().contains(needle) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the worker exited ({status}):\n{}", self.output());
            }
            assert!(
                Instant::now() < deadline,
                "the worker never said {needle:?}:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its stdout, then its stderr, so far.
    pub fn output(&self) -> String {
        let read = |name: &str| {
            std::fs::read_to_string(self.env.dir.path().join(name)).unwrap_or_default()
        };
        format!("{}{}", read("worker.out"), read("worker.err"))
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
