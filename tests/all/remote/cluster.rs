//! The processes of the remote end-to-end test besides the NATS server
//! (`support::nats`): `arbor worker`s (each in its own temp HOME / AMPLIFIER_HOME /
//! ARBOR_CONFIG, its provider pointing at its own loopback stub), signals to them, and
//! the work queue's state and the leases read back from the server. Every worker is
//! killed when dropped, a stopped one continued first.

use crate::support::*;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use arbor::remote::lease;
use arbor::remote::wire::Lease;
use arbor::remote::{Remote, RemoteAuth};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// One `arbor worker` process and its isolated environment.
pub struct Worker {
    pub env: TestEnv,
    pub child: Child,
    /// Its tag in the stub script (1–3).
    pub tag: usize,
    stopped: bool,
}

impl Worker {
    /// Starts `arbor worker --nats URL --slots SLOTS --ack-wait ACK_WAIT` with its
    /// provider at `base_url`, output to files in its temp dir; waits for its start line
    /// (`worker <id> on <host> pid <pid>: …`).
    pub fn start(tag: usize, nats: &str, base_url: &str, slots: u32, ack_wait: u64) -> Self {
        let env = TestEnv::new();
        env.use_openai(base_url, &format!("sk-worker-{tag}"));
        let child = env
            .std_cmd()
            .args(["worker", "--nats", nats, "--slots", &slots.to_string()])
            .args(["--ack-wait", &ack_wait.to_string()])
            .stdout(std::fs::File::create(env.dir.path().join("worker.out")).unwrap())
            .stderr(std::fs::File::create(env.dir.path().join("worker.err")).unwrap())
            .spawn()
            .unwrap();
        let mut worker = Self {
            env,
            child,
            tag,
            stopped: false,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !worker.output().contains("worker w-") {
            if let Some(status) = worker.child.try_wait().unwrap() {
                panic!("worker {tag} exited ({status}):\n{}", worker.output());
            }
            assert!(
                Instant::now() < deadline,
                "worker {tag} never said it started:\n{}",
                worker.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        worker
    }

    /// Its worker id (`w-…`), from its start line.
    pub fn id(&self) -> String {
        let out = self.output();
        let rest = &out[out.find("worker w-").expect("the start line") + "worker ".len()..];
        rest.split_whitespace().next().unwrap().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it printed so far (stdout, then stderr) and the last 30 lines of its log.
    pub fn output(&self) -> String {
        let read = |name: &str| {
            std::fs::read_to_string(self.env.dir.path().join(name)).unwrap_or_default()
        };
        let log = std::fs::read_to_string(log_file(&self.env)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!(
            "{}{}log tail:\n{tail}\n",
            read("worker.out"),
            read("worker.err")
        )
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal).unwrap();
    }

    /// `kill -9`, and reaps it.
    pub fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGSTOP: frozen, its connections open, its timers stalled.
    pub fn freeze(&mut self) {
        self.signal(Signal::SIGSTOP);
        self.stopped = true;
    }

    /// SIGCONT.
    pub fn thaw(&mut self) {
        self.signal(Signal::SIGCONT);
        self.stopped = false;
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.stopped {
            let _ = kill(Pid::from_raw(self.pid() as i32), Signal::SIGCONT);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (polling, up to `secs`) until `ready` returns `Some`; fails with `what` and
/// `context()` otherwise. Only a bound on a hang: nothing is asserted about the time.
pub fn wait_for<T>(
    secs: u64,
    what: &str,
    context: impl Fn() -> String,
    mut ready: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}:\n{}", context());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Messages of the job stream, and the pool consumer's pending / ack-pending counts.
#[derive(Debug, PartialEq, Eq)]
pub struct QueueState {
    pub messages: u64,
    pub pending: u64,
    pub ack_pending: usize,
}

/// The job stream `ARBOR_JOBS` and the `default` pool's consumer as the server reports
/// them now.
pub fn queue_state(nats: &str) -> QueueState {
    use arbor::remote::wire;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(nats).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream(wire::JOBS_STREAM).await.unwrap();
        let messages = stream.info().await.unwrap().state.messages;
        let mut consumer: async_nats::jetstream::consumer::PullConsumer = stream
            .get_consumer(&wire::consumer_name("default").unwrap())
            .await
            .unwrap();
        let info = consumer.info().await.unwrap();
        QueueState {
            messages,
            pending: info.num_pending,
            ack_pending: info.num_ack_pending,
        }
    })
}

/// An `arbor` process's log file (`$HOME/.local/state/arbor/arbor.log`, no XDG
/// variables set).
pub fn log_file(env: &TestEnv) -> PathBuf {
    env.home.join(".local/state/arbor/arbor.log")
}

/// The lease of each of `sessions` as the leases bucket holds it now.
pub fn leases(nats: &str, sessions: &[String]) -> BTreeMap<String, Lease> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let remote = Remote::connect(nats, "e2e-test", &RemoteAuth::default())
            .await
            .unwrap();
        let bucket = remote.leases().await.unwrap();
        let mut out = BTreeMap::new();
        for id in sessions {
            let lease = lease::current(&bucket, id).await.unwrap();
            out.insert(
                id.clone(),
                lease.unwrap_or_else(|| panic!("{id}: no lease")),
            );
        }
        out
    })
}

/// The root's `arbor run`, killed on drop (a failed test leaves no process behind).
pub struct Root(Option<Child>);

impl Root {
    /// Spawns `cmd` with stdout and stderr piped.
    pub fn spawn(cmd: &mut Command) -> Self {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Self(Some(child))
    }

    /// Waits (up to `secs`, against a hang) for it to exit; its output.
    pub fn finish(mut self, secs: u64, context: impl Fn() -> String) -> Output {
        let mut child = self.0.take().unwrap();
        let status = wait_for(secs, "the root never finished", context, || {
            child.try_wait().unwrap()
        });
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
