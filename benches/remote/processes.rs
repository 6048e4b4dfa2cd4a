//! The processes of the remote bench (`benches/remote.rs`): the NATS server and the
//! `arbor worker`s it starts, where they run (`REMOTE_BENCH_SPLIT`), and the CPU time
//! each spends.
//!
//! Owns: starting and stopping them, and reading their CPU time. Does not own: the
//! root, the stub model or what is measured (`remote.rs`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The e2e helper's port range is 14600–14699; the bench takes the top.
const PORTS: std::ops::Range<u16> = 14680..14700;

/// `REMOTE_BENCH_SPLIT=1`: this process (root, stub model) runs on core 0 only and
/// the NATS server and workers on core 1 only — as if the workers were on other
/// machines: what one core of a root achieves, local and remote alike.
pub(crate) fn split() -> bool {
    std::env::var_os("REMOTE_BENCH_SPLIT").is_some_and(|v| v == "1")
}

/// `program` as a command, started on core 1 under [`split`] (`taskset -c 1`).
fn on_the_other_core(program: impl AsRef<std::ffi::OsStr>) -> Command {
    if split() {
        let mut command = Command::new("taskset");
        command.args(["-c", "1"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// The CPU time (user + system) process `pid` used so far: `/proc/<pid>/stat` fields
/// 14 and 15, in clock ticks of `getconf CLK_TCK` (100 per second on Linux).
pub(crate) fn cpu_of(pid: u32) -> Duration {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let ticks = *TICKS.get_or_init(|| {
        let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    });
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: field 3 onwards.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let used: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    Duration::from_secs_f64(used / ticks)
}

/// The processes whose CPU a throughput run counts: this one, each worker, the NATS
/// server (the script `exec`s it: same pid).
pub(crate) fn pids_of(nats: &Nats, workers: &[Worker]) -> Vec<u32> {
    std::iter::once(std::process::id())
        .chain(workers.iter().map(|w| w.child.id()))
        .chain([nats.child.id()])
        .collect()
}

/// A NATS server from `scripts/nats-server` on a free port of [`PORTS`]; killed on
/// drop.
pub(crate) struct Nats {
    child: Child,
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

impl Nats {
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/nats-server");
        let port = PORTS
            .clone()
            .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
            .expect("a free port");
        let mut child = on_the_other_core(script)
            .args(["--port", &port.to_string(), "--store"])
            .arg(dir.path().join("store"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("nats.log")).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(child.try_wait().unwrap().is_none(), "nats-server exited");
            assert!(Instant::now() < deadline, "NATS never listened on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An `arbor worker` (the bench profile's binary) in its own temp home, its provider
/// at the stub, with `slots` (default: one per core); killed on drop.
pub(crate) struct Worker {
    child: Child,
    /// Its home, store and job directories (`None` once [`Worker::stop`] handed it on).
    dir: Option<tempfile::TempDir>,
}

impl Worker {
    pub(crate) fn start(nats: &str, base_url: &str, slots: Option<usize>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["home", "amp", "work"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(
            root.join("config.yaml"),
            format!(
                "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{base_url}\"\n      api_key: local\n      default_model: scripted-model\n"
            ),
        )
        .unwrap();
        let out = root.join("worker.out");
        let mut child = on_the_other_core(env!("CARGO_BIN_EXE_arbor"))
            .args(["worker", "--nats", nats])
            .args(slots.map(|n| format!("--slots={n}")))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", root.join("home"))
            .env("AMPLIFIER_HOME", root.join("amp"))
            .env("ARBOR_CONFIG", root.join("config.yaml"))
            .env("ARBOR_LOCAL_SERVERS", "")
            .current_dir(root.join("work"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("worker w-")
        {
            assert!(child.try_wait().unwrap().is_none(), "arbor worker exited");
            assert!(Instant::now() < deadline, "arbor worker never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            dir: Some(dir),
        }
    }

    /// Kills the worker; its directory, which dropping it would delete, is returned.
    pub(crate) fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().expect("a running worker has its directory")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
