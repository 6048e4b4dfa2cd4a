//! Logging to the log file only (never the terminal).

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Starts `tracing` writing to `log_file` (directory created if needed), filtered by
/// `ARBOR_LOG` (an `EnvFilter` directive such as `debug` or `arbor=trace`; default
/// `info`). Returns the guard that flushes the file on drop, or `None` when the log
/// file cannot be opened (arbor then runs without a log rather than failing).
pub fn init(log_file: &Path) -> Option<WorkerGuard> {
    let dir = log_file.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let name = log_file.file_name()?;
    let appender = tracing_appender::rolling::never(dir, name);
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = EnvFilter::try_from_env("ARBOR_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
