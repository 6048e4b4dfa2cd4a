//! Logging to the log file only (never the terminal), credentials scrubbed.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::session::redact::scrub;

/// Starts `tracing` writing to `log_file` (directory created if needed), filtered by
/// `ARBOR_LOG` (an `EnvFilter` directive such as `debug` or `arbor=trace`; default
/// `info`). Every line passes `session::redact::scrub` on its way to the file, so a
/// registered key or an echoed `Authorization` header never reaches the log. Returns
/// the guard that flushes the file on drop, or `None` when the log file cannot be
/// opened (arbor then runs without a log rather than failing).
pub fn init(log_file: &Path) -> Option<WorkerGuard> {
    let dir = log_file.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    // Opened here rather than by `tracing_appender::rolling::never`, which panics on a
    // file it cannot open (a read-only state directory, as inside the sandbox).
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_file)
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = EnvFilter::try_from_env("ARBOR_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Scrubbing(writer))
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

/// A `MakeWriter` whose writers scrub what they are given. The fmt layer writes each
/// formatted event with one `write_all`, so a secret is never split across writes.
struct Scrubbing<M>(M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Scrubbing<M> {
    type Writer = ScrubbingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubbingWriter(self.0.make_writer())
    }
}

struct ScrubbingWriter<W>(W);

impl<W: Write> Write for ScrubbingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        match scrub(&text) {
            Cow::Borrowed(_) => self.0.write_all(buf)?,
            Cow::Owned(clean) => self.0.write_all(clean.as_bytes())?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_scrubbed_on_the_way_out() {
        crate::session::redact::register_secrets(["log-secret-7777-aaaa"]);
        let mut out = ScrubbingWriter(Vec::new());
        out.write_all(b"ERROR 401 for log-secret-7777-aaaa; Authorization: Bearer abcdefgh1234\n")
            .unwrap();
        assert_eq!(
            String::from_utf8(out.0).unwrap(),
            "ERROR 401 for [REDACTED]; Authorization: Bearer [REDACTED]\n"
        );
    }
}
