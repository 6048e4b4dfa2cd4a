//! The real `arbor` TUI in a pseudo-terminal (portable-pty): every signal that ends it
//! — `kill -INT`, `-QUIT`, `-TERM`, `-HUP` (in raw mode Ctrl+C is a key, so these come
//! from outside) — leaves the terminal restored: alternate screen left, cursor shown,
//! mouse capture and bracketed paste off, and the process exits by itself.

use crate::support;
use crate::support::term;

use std::time::{Duration, Instant};

use support::TestEnv;

/// Drawn once the TUI is up (the composer's placeholder).
const READY: &str = "Message…";

/// Sequences the terminal must have received after the TUI last took it.
const RESTORE: [(&str, &str); 5] = [
    ("\x1b[?1049l", "leave the alternate screen"),
    ("\x1b[?25h", "show the cursor"),
    ("\x1b[?1000l", "mouse capture off"),
    ("\x1b[?1006l", "SGR mouse reports off"),
    ("\x1b[?2004l", "bracketed paste off"),
];

fn last(hay: &[u8], needle: &str) -> Option<usize> {
    hay.windows(needle.len())
        .rposition(|w| w == needle.as_bytes())
}

#[test]
fn every_ending_signal_restores_the_terminal() {
    let env = TestEnv::new();
    for signal in ["INT", "QUIT", "TERM", "HUP"] {
        let term_env = term::Env {
            home: &env.home,
            amplifier_home: &env.amplifier_home,
            config: &env.config,
            cwd: &env.project,
        };
        let mut tui = term::Pty::spawn(env!("CARGO_BIN_EXE_arbor"), &[], &term_env);
        assert!(
            tui.wait_text(READY, Duration::from_secs(60)).is_some(),
            "the TUI never drew:\n{}",
            tui.screen()
        );
        let sent = std::process::Command::new("kill")
            .args([format!("-{signal}"), tui.pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = tui.wait_exit(Duration::from_secs(20));
        assert!(
            status.as_ref().is_some_and(|s| s.success()),
            "SIG{signal}: {status:?}"
        );
        // The reader thread may still be draining the pty.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut out = tui.output();
        while last(&out, RESTORE[0].0).is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            out = tui.output();
        }
        let entered = last(&out, "\x1b[?1049h").expect("the TUI entered the alternate screen");
        for (sequence, what) in RESTORE {
            assert!(
                last(&out, sequence).is_some_and(|at| at > entered),
                "SIG{signal}: no `{what}` ({sequence:?}) after the TUI took the terminal"
            );
        }
    }
}
