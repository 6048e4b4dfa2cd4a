//! Session locks: in this process and held by another (live or SIGKILLed) process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use arbor::session::{SessionStore, StoreError};

use super::{ROOT, meta, unwrap_err};

#[test]
fn second_writer_in_this_process_is_locked_until_the_first_drops() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let writer = store.create(&meta(ROOT)).unwrap();
    let pid = std::process::id();
    for err in [
        unwrap_err(store.open(ROOT)),
        unwrap_err(store.create(&meta(ROOT))),
    ] {
        assert!(matches!(&err, StoreError::Locked { id, pid: p } if id == ROOT && *p == pid));
        assert_eq!(
            err.to_string(),
            format!("session '{ROOT}' is open in another process (pid {pid})")
        );
    }
    assert!(store.load(ROOT).is_ok(), "reading needs no lock");
    assert_eq!(store.list().unwrap().len(), 1);
    drop(writer);
    // Also while another test of this binary is spawning a child (which holds copies of
    // our fds until it execs): the store waits that window out.
    store.open(ROOT).unwrap();
}

/// Helper run in a child process by `lock_held_by_another_process_*`: holds the lock
/// of `ARBOR_TEST_LOCK_STORE`/`ROOT`, prints `ARBOR-LOCK-HELD`, and waits for stdin to close.
#[test]
#[ignore = "helper for the cross-process lock test"]
fn helper_hold_lock() {
    let Ok(root) = std::env::var("ARBOR_TEST_LOCK_STORE") else {
        return;
    };
    let _writer = SessionStore::new(root).open(ROOT).unwrap();
    println!("ARBOR-LOCK-HELD");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

fn spawn_holder(root: &Path) -> (std::process::Child, u32) {
    // The helper's test name without the crate: `store::lock::helper_hold_lock`.
    let module = module_path!().split_once("::").unwrap().1;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            &format!("{module}::helper_hold_lock"),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ARBOR_TEST_LOCK_STORE", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let locked = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("ARBOR-LOCK-HELD"));
    assert!(locked, "helper never took the lock");
    let pid = child.id();
    (child, pid)
}

#[test]
fn lock_held_by_another_process_names_it_and_dies_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    drop(store.create(&meta(ROOT)).unwrap());

    // Clean exit releases the lock.
    let (mut child, pid) = spawn_holder(store.root());
    let err = unwrap_err(store.open(ROOT));
    assert!(
        matches!(err, StoreError::Locked { pid: p, .. } if p == pid),
        "{err:?}"
    );
    assert!(store.load(ROOT).is_ok());
    drop(child.stdin.take());
    child.wait().unwrap();
    drop(store.open(ROOT).unwrap());

    // SIGKILL leaves no stale lock either.
    let (mut child, pid) = spawn_holder(store.root());
    assert!(matches!(store.open(ROOT), Err(StoreError::Locked { pid: p, .. }) if p == pid));
    child.kill().unwrap();
    child.wait().unwrap();
    let writer = store.open(ROOT).unwrap();
    assert_eq!(writer.id(), ROOT);
}
