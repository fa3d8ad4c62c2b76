//! `git-delegate`: parse the command line, run the command, report errors
//! with the exit statuses of SPEC §3. Everything else lives in the modules
//! below: `cli` (the interface), `commands` (one module per subcommand), `ui`
//! (output), and the engine modules named after what they own.

mod batch;
mod blob;
mod carry;
mod cli;
mod commands;
mod commit;
mod config;
mod diff;
mod error;
mod gc;
mod integrate;
mod lease;
mod lock;
mod manpage;
mod patch;
mod paths;
mod preparing;
mod progress;
mod proposal;
mod quiesce;
mod refs;
mod repo;
mod scratch;
mod snapshot;
mod time;
mod touched;
mod trash;
mod ui;
mod workspace;
mod writeback;

use clap::Parser;

fn main() {
    // First, before any thread: the source's GIT_DIR etc. must reach no workspace.
    repo::isolate_environment();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => std::process::exit(commands::report_parse_error(&args, e)),
    };
    let code = commands::run(cli);
    std::process::exit(code);
}
