//! Issue 34: deleting files without naming `rm` (`find -delete`, `unlink`, `rmdir`,
//! `shred -u`, directly or through a wrapper) is denied by `bash(rm*): deny` under
//! `--yes`, through the real binary: the rule's intent is "no deletion through bash"
//! (`config::approvals::deleters`). Each command deletes its own victim `wNN` (a file,
//! or an empty directory for `rmdir`) in the temp project when it runs.

use super::{outcome, run_calls};
use crate::support::*;

/// Commands deleting victim `wNN` (NN = position + 1) without an `rm` word.
const DELETE_EVASIONS: [&str; 12] = [
    "find . -name w01 -delete",
    "find . -maxdepth 1 -name 'w02' -type f -delete -print",
    "/usr/bin/find . -name w03 -delete",
    "unlink w04",
    "rmdir w05",
    "shred -u w06",
    "shred -zu w07",
    "nohup unlink w08",
    "echo w09 | xargs unlink",
    "find . -name w10 -exec unlink {} \\;",
    "sh -c 'find . -name w11 -delete'",
    "true && find . -name w12 -delete",
];

#[test]
fn deleting_without_rm_is_denied_by_an_rm_deny_under_yes() {
    let env = TestEnv::new();
    let calls: Vec<(String, String)> = DELETE_EVASIONS
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("w{:02}", i + 1), (*c).to_string()))
        .collect();
    for (id, command) in &calls {
        let victim = env.project.join(id);
        if command.starts_with("rmdir") {
            std::fs::create_dir(&victim).unwrap();
        } else {
            std::fs::write(&victim, "victim").unwrap();
        }
    }
    let lines = run_calls(&env, "  \"bash(rm*)\": deny\n", true, &calls);
    let mut ran = Vec::new();
    for (id, command) in &calls {
        let gone = !env.project.join(id).exists();
        let got = outcome(&lines, id);
        if gone || got != "denied:policy" {
            ran.push(format!("{id} {command:?}: {got}, victim deleted: {gone}"));
        }
    }
    eprintln!(
        "deletions without rm that got past bash(rm*): {} of {}",
        ran.len(),
        calls.len()
    );
    assert!(ran.is_empty(), "{}", ran.join("\n"));
}
