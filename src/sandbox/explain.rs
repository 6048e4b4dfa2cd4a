//! Why a sandboxed command failed, said in one note for the model (issue 39 item 3):
//! what the sandbox blocked and how the person can allow it, so a model does not chase
//! a DNS problem or retry a write that can never succeed.
//!
//! Owns: reading a command's output (stdout and stderr) against the [`Policy`] it ran
//! under — the network refused (`socket()`/`connect` refused, a name that cannot
//! resolve) while the policy denies it; a write refused ("Permission denied",
//! "Read-only file system") on a path outside the writable roots or on one the
//! sandbox keeps read-only; a path under the deny list (a hidden key file) — and the
//! note. Output is text, so this is a reading of familiar messages (libc, curl, git,
//! pip, npm, Python): a message it does not know gets no note. Does not own: the
//! policy (`sandbox`), running the command or its result's shape (`tool::bash`).

use std::path::{Component, Path, PathBuf};

use super::Policy;

/// Messages a command prints when a network call failed (lower case).
const NETWORK_SIGNS: &[&str] = &[
    "could not resolve host",
    "could not resolve hostname",
    "could not resolve proxy",
    "temporary failure in name resolution",
    "name or service not known",
    "no address associated with hostname",
    "nodename nor servname",
    "getaddrinfo",
    "eai_again",
    "network is unreachable",
    "socket: operation not permitted",
    "socket: permission denied",
    "connect: permission denied",
    "connect: operation not permitted",
    "failed to establish a new connection",
];

/// Messages a command prints when a write was refused (lower case).
const WRITE_SIGNS: &[&str] = &[
    "permission denied",
    "read-only file system",
    "operation not permitted",
];

/// The note for a command that ran under `policy` in `dir` and printed `output`;
/// `None` when nothing in it points at the sandbox.
pub fn explain(policy: &Policy, dir: &Path, output: &str) -> Option<String> {
    let lower = output.to_lowercase();
    let mut notes = Vec::new();
    if !policy.network && network_failed(&lower) {
        notes.push(
            "arbor's sandbox blocked the network: this command runs with no network (every \
             socket but a Unix one is refused, so host names do not resolve either) — this \
             is not a DNS problem and retrying will not help. The person can allow it with \
             `sandbox: {network: allow}` in arbor's config.yaml."
                .to_string(),
        );
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut outside = Vec::new();
    let mut read_only = Vec::new();
    let mut hidden = Vec::new();
    for line in output.lines() {
        let refused = WRITE_SIGNS.iter().any(|s| line.to_lowercase().contains(s));
        for path in paths_in(line, &dir) {
            if under_any(&path, &policy.deny_read) {
                push_once(&mut hidden, &path);
            } else if refused && under_any(&path, &policy.read_only) {
                push_once(&mut read_only, &path);
            } else if refused && !under_any(&path, &policy.writable) {
                push_once(&mut outside, &path);
            }
        }
    }
    if !outside.is_empty() {
        let roots: Vec<String> = policy
            .writable
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        notes.push(format!(
            "arbor's sandbox blocked a write outside the allowed paths ({}): commands may \
             write only beneath {} — the agent's `allowed_write_paths` (its tool-filesystem \
             entry's config) — and their $TMPDIR. To write there, the person adds the \
             directory to `allowed_write_paths`.",
            shown(&outside),
            if roots.is_empty() {
                "their temp dir".to_string()
            } else {
                roots.join(", ")
            }
        ));
    }
    if !read_only.is_empty() {
        notes.push(format!(
            "arbor's sandbox keeps {} read-only (the repository's git config, hooks and \
             refs are the person's); this cannot be allowed from a session.",
            shown(&read_only)
        ));
    }
    if !hidden.is_empty() {
        notes.push(format!(
            "arbor's sandbox keeps key files hidden ({}): key files (~/.ssh, ~/.aws, \
             arbor's config, …) read as missing or empty in commands, and no setting of a \
             session allows them.",
            shown(&hidden)
        ));
    }
    (!notes.is_empty()).then(|| notes.join(" "))
}

/// Whether `output` shows the network refused while `policy` denies it (what
/// [`explain`]'s network note says): the command may run once more with network if
/// the person allows it (`engine::escalate`).
pub fn network_blocked(policy: &Policy, output: &str) -> bool {
    !policy.network && network_failed(&output.to_lowercase())
}

fn network_failed(lower: &str) -> bool {
    NETWORK_SIGNS.iter().any(|s| lower.contains(s))
        || (lower.contains("operation not permitted")
            && (lower.contains("socket") || lower.contains("connect")))
}

fn push_once(list: &mut Vec<PathBuf>, path: &Path) {
    if !list.iter().any(|p| p == path) {
        list.push(path.to_path_buf());
    }
}

/// At most three paths, `, `-joined.
fn shown(paths: &[PathBuf]) -> String {
    let mut out: Vec<String> = paths
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    if paths.len() > 3 {
        out.push(format!("{} more", paths.len() - 3));
    }
    out.join(", ")
}

fn under_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

/// The paths a message line names — quoted (`'…'`, `"…"`, `‘…’`, `` `…' ``) or bare
/// words starting with `/`, `./`, `../` — absolute, resolved against `dir` and
/// normalised without touching the file system.
fn paths_in(line: &str, dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<&str> = Vec::new();
    for (open, close) in [
        ('\'', '\''),
        ('"', '"'),
        ('‘', '’'),
        ('`', '\''),
        ('“', '”'),
    ] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            found.push(&after[..end]);
            rest = &after[end + close.len_utf8()..];
        }
    }
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c: char| "'\"‘’“”`:,;()[]".contains(c));
        found.push(word);
    }
    let mut out = Vec::new();
    for candidate in found {
        let candidate = candidate.trim_end_matches(':');
        let looks_like_path = candidate.starts_with('/')
            || candidate.starts_with("./")
            || candidate.starts_with("../");
        if !looks_like_path || candidate.contains("://") {
            continue;
        }
        let path = normalise(&dir.join(candidate));
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            writable: vec![PathBuf::from("/work/p")],
            deny_read: vec![PathBuf::from("/home/ada/.ssh")],
            network: false,
            pinned: vec![],
            read_only: vec![PathBuf::from("/work/p/.git/config")],
        }
    }

    #[test]
    fn names_what_the_sandbox_blocked_and_how_to_allow_it() {
        let dir = Path::new("/work/p");
        let net = explain(
            &policy(),
            dir,
            "curl: (6) Could not resolve host: example.com",
        )
        .unwrap();
        assert!(
            net.contains("network: allow") && net.contains("not a DNS problem"),
            "{net}"
        );
        let py = "PermissionError: [Errno 1] Operation not permitted\n  at socket.socket()";
        assert!(explain(&policy(), dir, py).unwrap().contains("no network"));
        let allowed = Policy {
            network: true,
            ..policy()
        };
        assert_eq!(explain(&allowed, dir, "Could not resolve host: x"), None);

        let write = explain(
            &policy(),
            dir,
            "touch: cannot touch '../outside': Permission denied",
        )
        .unwrap();
        assert!(
            write.contains("/work/outside") && write.contains("allowed_write_paths"),
            "{write}"
        );
        let inside = "touch: cannot touch 'sub/x': Permission denied";
        assert_eq!(explain(&policy(), dir, inside), None);
        let git = "error: could not lock config file /work/p/.git/config: Read-only file system";
        assert!(explain(&policy(), dir, git).unwrap().contains("read-only"));

        let key = "cat: /home/ada/.ssh/id_rsa: No such file or directory";
        let hidden = explain(&policy(), dir, key).unwrap();
        assert!(
            hidden.contains("hidden (/home/ada/.ssh/id_rsa)"),
            "{hidden}"
        );
        assert_eq!(
            explain(&policy(), dir, "ls: cannot access 'x': No such file"),
            None
        );
    }
}
