//! Issue 34 "No terminal for tools" through the real binary: `arbor run` in a real
//! pseudo-terminal (its controlling terminal) runs a `bash` command that opens
//! `/dev/tty` and arbor's terminal by its path and types a line into each with `TIOCSTI`
//! — sandboxed and with `sandbox.mode: off`, and the same from the user's
//! `PreToolUse` hook — and nothing reaches the terminal's input: commands and hooks
//! run in a session of their own with no controlling terminal.
//! Inside the sandbox, `TIOCSTI` and `TIOCLINUX` fail even on a pseudo-terminal the
//! command made its own controlling terminal (the seccomp filter). A timeout still
//! kills everything the command started (the session's process group).

use crate::reach::bash_once;
use crate::support;
use crate::support::term;

use std::time::Duration;

use serde_json::json;
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-bash\n---\nYou run commands.\n";

/// Types `INJECTED-77` (built from character codes, so no command text or argument
/// echo holds it) with `TIOCSTI` into `/dev/tty` and into arbor's terminal by its
/// path (`/dev/pts/N` of the nearest ancestor that has a terminal: arbor; never any
/// other terminal of the machine); prints why each failed and `typed=<bytes typed>`.
const INJECT: &str = r#"
import errno, fcntl, os, termios
mark = "".join(map(chr, [73, 78, 74, 69, 67, 84, 69, 68, 45, 55, 55, 10]))
targets = ["/dev/tty"]
pid = os.getpid()
while pid > 1:
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    pid, tty = int(fields[1]), int(fields[4])
    major, minor = (tty >> 8) & 0xFFF, (tty & 0xFF) | ((tty >> 12) & 0xFFF00)
    if 136 <= major <= 143:
        targets.append("/dev/pts/%d" % ((major - 136) * 256 + minor))
        break
typed = 0
for path in targets:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        print(path, "open", errno.errorcode.get(e.errno))
        continue
    for c in mark:
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, c.encode())
            typed += 1
        except OSError as e:
            print(path, "sti", errno.errorcode.get(e.errno))
            break
    os.close(fd)
print("targets=%d typed=%d" % (len(targets), typed))
"#;

/// The user's `PreToolUse` hook: the same attack, its report in `hook.out`.
const HOOK: &str = "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: \"python3 inject.py > hook.out\"}]\n";

/// Runs `arbor run --yes` in a pty with one `bash` call of `python3 inject.py` (and
/// the [`HOOK`] before it) under `config_yaml`; returns the tool result, the hook's
/// report and everything the terminal showed.
fn inject_under_a_pty(config_yaml: &str) -> (String, String, String) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "python3 inject.py"}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-tty-key-1");
    env.append_config(config_yaml);
    env.append_config(HOOK);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
    std::fs::write(env.project.join("inject.py"), INJECT).unwrap();
    let term_env = term::Env {
        home: &env.home,
        amplifier_home: &env.amplifier_home,
        config: &env.config,
        cwd: &env.project,
    };
    let mut pty = term::Pty::spawn(
        env!("CARGO_BIN_EXE_arbor"),
        &["run", "--agent", "shell", "--yes", "go"],
        &term_env,
    );
    let status = pty.wait_exit(Duration::from_secs(60));
    assert!(
        status.as_ref().is_some_and(|s| s.success()),
        "{status:?}: {}",
        pty.screen()
    );
    // Let the reader thread drain what the terminal echoed.
    std::thread::sleep(Duration::from_millis(300));
    let shown = String::from_utf8_lossy(&pty.output()).into_owned();
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{shown}");
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap();
    let hook = std::fs::read_to_string(env.project.join("hook.out")).unwrap();
    (result, hook, shown)
}

#[cfg(unix)]
#[test]
fn a_command_cannot_type_into_arbors_terminal() {
    let mut typed = Vec::new();
    for yaml in ["", "sandbox: {mode: off}\n"] {
        let (result, hook, shown) = inject_under_a_pty(yaml);
        for (who, report) in [("bash", &result), ("hook", &hook)] {
            // ENXIO: no controlling terminal; EACCES: the sandbox also keeps it from
            // `/dev/tty`.
            let opened_tty = !(report.contains("/dev/tty open ENXIO")
                || report.contains("/dev/tty open EACCES"));
            // Both `/dev/tty` and arbor's `/dev/pts/N` were tried.
            if !report.contains("targets=2 typed=0") || opened_tty {
                typed.push(format!("{yaml:?} {who}: {report}"));
            }
        }
        if shown.contains("INJECTED-77") {
            typed.push(format!("{yaml:?}: the terminal echoed the typed line"));
        }
    }
    assert!(typed.is_empty(), "typed into the terminal: {typed:#?}");
}

/// Makes a pseudo-terminal the controlling terminal of a child in a new session, then
/// tries `TIOCSTI` and `TIOCLINUX` on it; prints `sti=` and `linux=` with the errno
/// name or `OK`.
const OWN_PTY: &str = r#"
import errno, fcntl, os, termios
master, slave = os.openpty()
for name, request, arg in [("sti", termios.TIOCSTI, b"Z"), ("linux", 0x541C, b"\x0b")]:
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        try:
            fcntl.ioctl(slave, request, arg)
            os._exit(0)
        except OSError as e:
            os._exit(e.errno)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    print("%s=%s" % (name, errno.errorcode.get(code, "OK")))
"#;

#[test]
fn the_sandbox_refuses_terminal_ioctls_even_on_its_own_terminal() {
    let (result, _env) = bash_once("python3 own_pty.py", "", &[], |env| {
        std::fs::write(env.project.join("own_pty.py"), OWN_PTY).unwrap();
    });
    assert!(
        result.contains("sti=EPERM") && result.contains("linux=EPERM"),
        "{result}"
    );
}

#[test]
fn a_timeout_still_kills_everything_the_command_started() {
    for yaml in ["", "sandbox: {mode: off}\n"] {
        let server = ScriptedServer::sequence(vec![
            Reply::Sse(sse_tool_calls(&[(
                "b1",
                "bash",
                json!({"command": "sleep 300 & echo $! > bg.pid; sleep 300", "timeout": 1}),
            )])),
            Reply::Sse(sse_text("done")),
        ]);
        let env = TestEnv::new();
        env.use_openai(&server.base_url, "sk-test-timeout-key-1");
        env.append_config(yaml);
        let agents = env.amplifier_home.join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
        let started = std::time::Instant::now();
        let out = env
            .cmd()
            .args(["run", "--agent", "shell", "--yes", "go"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{yaml:?}: {out:?}");
        assert!(started.elapsed() < Duration::from_secs(30), "{yaml:?}");
        let pid = std::fs::read_to_string(env.project.join("bg.pid")).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        // Gone, or a zombie nobody reaped yet: it runs nothing.
        let alive = stat.is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        });
        assert!(
            !alive,
            "{yaml:?}: the background sleep survived the timeout"
        );
    }
}
