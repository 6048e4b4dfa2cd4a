//! Remote sub-sessions over TLS with credentials (issue 38 items 1–2), through the real
//! binaries: a NATS server (`scripts/nats-server --extra`) requiring TLS from a private
//! CA made here with `openssl`, a client certificate, and a user with a password; the
//! real `arbor worker` and a headless root (`arbor run`) whose model delegates one
//! sub-session to an agent the root's config marks remote. The password is in the URL
//! of both (`tls://arbor:PASSWORD@127.0.0.1:P`), as an operator would first write it.
//!
//! Checked: the child runs on the worker and its answer reaches the root (no rustls
//! panic: the crypto provider is installed); `arbor doctor` reaches the server and shows
//! the URL redacted; with a wrong password the child fails with an error that names the
//! redacted URL; and neither password is anywhere — stdout and stderr of every process,
//! every file under the root's and the worker's homes (logs, the session store), every
//! request the model servers received. The other credential forms (token, nkey seed)
//! connect in `remote_auth::forms`.

mod forms;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::remote_faults::{root_env, root_model};
use crate::support::nats::NatsServer;
use crate::support::worker_proc::WorkerProc;
use crate::support::*;

const PASSWORD: &str = "Sw0rdfish-9c1e-tls";
const WRONG: &str = "Wr0ngPass-77a1";
const CHILD_ANSWER: &str = "CHILD-OVER-TLS-OK";

/// A private CA, a server certificate for 127.0.0.1 and a client certificate, made
/// with `openssl` in `dir`: `ca.pem`, `server.pem`/`server.key`, `client.pem`/`client.key`.
pub(crate) fn make_certs(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=arbor test CA",
    ]);
    run(&ca);
    for (name, usage, san) in [
        (
            "server",
            "serverAuth",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        ),
        ("client", "clientAuth", ""),
    ] {
        let mut req = vec!["req"];
        req.extend(ec);
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        req.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=localhost"]);
        run(&req);
        let ext = format!("{name}.ext");
        std::fs::write(
            dir.join(&ext),
            format!(
                "{san}basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage={usage}\n"
            ),
        )
        .unwrap();
        let pem = format!("{name}.pem");
        run(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            &ext,
        ]);
    }
}

/// The server's extra config: TLS with the certificates in `dir`, clients verified
/// against the CA, one user `arbor` with [`PASSWORD`].
fn tls_conf(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "tls {{\n  cert_file: \"{d}/server.pem\"\n  key_file: \"{d}/server.key\"\n  ca_file: \"{d}/ca.pem\"\n  verify: true\n  timeout: 3\n}}\nauthorization {{\n  user: arbor\n  password: \"{PASSWORD}\"\n}}\n"
    )
}

/// `NATS_CA`, `NATS_CERT`, `NATS_KEY` for the certificates in `dir`.
fn tls_env(cmd: &mut Command, dir: &Path) {
    cmd.env("NATS_CA", dir.join("ca.pem"))
        .env("NATS_CERT", dir.join("client.pem"))
        .env("NATS_KEY", dir.join("client.key"));
}

/// Every file under `dir` (recursively) whose bytes contain `needle`.
pub(crate) fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_containing(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            out.push(path);
        }
    }
    out
}

/// `arbor run --yes PROMPT` in `env` with the TLS variables; its output (bounded wait).
fn run_root(env: &TestEnv, certs: &Path) -> std::process::Output {
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--yes", "Delegate over TLS"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tls_env(&mut cmd, certs);
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    out
}

#[test]
fn a_remote_child_runs_over_tls_with_a_private_ca_and_no_password_is_written_anywhere() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let Some(nats) = NatsServer::start_with(&tls_conf(certs.path())) else {
        return;
    };
    let url = format!("tls://arbor:{PASSWORD}@127.0.0.1:{}", nats.port);
    let shown = format!("tls://arbor:***@127.0.0.1:{}", nats.port);
    let worker_model = ScriptedServer::sequence(vec![Reply::Sse(sse_text(CHILD_ANSWER))]);
    let (ca, cert, key) = (
        certs.path().join("ca.pem").display().to_string(),
        certs.path().join("client.pem").display().to_string(),
        certs.path().join("client.key").display().to_string(),
    );
    let worker = WorkerProc::start(
        &url,
        &worker_model.base_url,
        &["--ca", &ca, "--cert", &cert, "--key", &key],
    );
    assert!(worker.output().contains(&shown), "{}", worker.output());

    let model = root_model();
    let root = root_env(&model.base_url, &url, "default");
    let out = run_root(&root, certs.path());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{stderr}\nworker:\n{}",
        worker.output()
    );
    assert!(
        stdout.contains("parent saw: ") && stdout.contains(CHILD_ANSWER),
        "{stdout}\n{stderr}\nworker:\n{}",
        worker.output()
    );

    let mut doctor = root.std_cmd();
    doctor.arg("doctor");
    tls_env(&mut doctor, certs.path());
    let report = doctor.output().unwrap();
    let report_text = format!(
        "{}{}",
        String::from_utf8_lossy(&report.stdout),
        String::from_utf8_lossy(&report.stderr)
    );
    assert!(
        report_text.contains(&format!("remote    {shown}, pool default")),
        "{report_text}"
    );
    assert!(report_text.contains("server  NATS "), "{report_text}");
    assert!(!report_text.contains("panicked"), "{report_text}");

    // A wrong password: the child fails, and says where, redacted.
    let wrong_url = format!("tls://arbor:{WRONG}@127.0.0.1:{}", nats.port);
    let wrong_model = root_model();
    let wrong = root_env(&wrong_model.base_url, &wrong_url, "default");
    let failed = run_root(&wrong, certs.path());
    let failed_text = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    let told = wrong_model
        .requests()
        .iter()
        .map(|r| r.to_string())
        .collect::<String>();
    assert!(
        told.contains(&format!(
            "cannot reach NATS at tls://arbor:***@127.0.0.1:{}",
            nats.port
        )),
        "{told}\n{failed_text}"
    );

    let texts = [
        ("root stdout+stderr", format!("{stdout}{stderr}")),
        ("doctor", report_text),
        ("worker output", worker.output()),
        ("failed root", failed_text),
        (
            "model requests",
            [&model, &worker_model, &wrong_model]
                .iter()
                .flat_map(|m| m.requests())
                .map(|r| r.to_string())
                .collect::<String>(),
        ),
    ];
    for secret in [PASSWORD, WRONG] {
        for (what, text) in &texts {
            assert!(!text.contains(secret), "{what} has the password:\n{text}");
        }
        for env in [&root, &wrong, &worker.env] {
            // Only the config file the person wrote holds it.
            let found: Vec<PathBuf> = files_containing(env.dir.path(), secret)
                .into_iter()
                .filter(|p| *p != env.config)
                .collect();
            let shown: Vec<String> = found
                .iter()
                .map(|p| {
                    format!(
                        "{}:\n{}",
                        p.display(),
                        std::fs::read_to_string(p)
                            .unwrap_or_default()
                            .lines()
                            .filter(|l| l.contains(secret))
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                })
                .collect();
            assert!(found.is_empty(), "{shown:?}");
        }
    }
}
