//! arbor's binary: parse the command line, start logging and the panic hook, dispatch.

use clap::Parser;

fn main() -> color_eyre::Result<()> {
    color_eyre::install()?;
    let cli = arbor::cli::Cli::parse();
    let paths = arbor::paths::Paths::from_env();
    let log_guard = arbor::cli::logging::init(&paths.log_file);
    arbor::tui::install_panic_hook();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = runtime.block_on(arbor::cli::dispatch(cli))?;
    drop(runtime);
    drop(log_guard);
    std::process::exit(code);
}
