//! arbor's binary: parse the command line, start logging and the panic hook, dispatch.
//! Errors are printed as one `arbor: …` line (the cause chain joined by `: `, scrubbed of
//! credentials), exit 1; a closed stdout ends the process quietly with exit code 141.
//! `arbor __sandbox …` is the sandbox helper (`arbor::sandbox`), handled before
//! anything else starts.

use clap::Parser;

fn main() {
    // The sandbox helper (`arbor __sandbox …`) must run while the process has one
    // thread: it enters a user namespace, then `exec`s the confined command.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(arbor::sandbox::HELPER_ARG))
    {
        std::process::exit(arbor::sandbox::helper_main(
            std::env::args_os().skip(2).collect(),
        ));
    }
    let cli = arbor::cli::Cli::parse();
    let paths = arbor::paths::Paths::from_env();
    let log_guard = arbor::cli::logging::init(&paths.log_file);
    arbor::tui::install_panic_hook();
    let code = match run(cli) {
        Ok(code) => code,
        // The reader of stdout went away (`arbor session list | head -1`): end quietly.
        Err(e) if arbor::cli::out::is_broken_pipe(e.as_ref()) => arbor::cli::out::EXIT_BROKEN_PIPE,
        Err(e) => {
            tracing::error!("{e:?}");
            arbor::cli::out::error(one_line(&e));
            1
        }
    };
    drop(log_guard);
    std::process::exit(code);
}

/// The error and its causes joined by `: `, skipping a cause the message before it
/// already ends with (library errors often quote their source).
fn one_line(error: &color_eyre::Report) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if text.ends_with(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

fn run(cli: arbor::cli::Cli) -> color_eyre::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = runtime.block_on(arbor::cli::dispatch(cli))?;
    // Background tasks (watchers, streams) end with the runtime.
    drop(runtime);
    Ok(code)
}
