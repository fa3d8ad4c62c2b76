//! `git-delegate`: parse the command line, run the command, report errors
//! with the exit statuses of design §3. The binary's own modules are `cli` (the
//! interface), `commands` (one module per subcommand), `ui` (output),
//! `progress` (the spinner), `pager` (the pager of long output) and `manpage`; the engine is the library crate
//! (`src/lib.rs`), its modules named after what they own.

mod cli;
mod commands;
mod manpage;
mod pager;
mod progress;
mod ui;

// The engine is the library crate; importing its modules at the crate root
// keeps `crate::record::batch::...` paths in the binary's modules working.
use git_delegate::{config, error, git, merge, ops, record, snapshot, sys, workspace, writeback};

fn main() {
    // First, before any thread: the source's GIT_DIR etc. must reach no workspace.
    git::repo::isolate_environment();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = cli::command()
        .try_get_matches_from(&args)
        .and_then(|mut m| <cli::Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => std::process::exit(commands::report_parse_error(&args, e)),
    };
    let code = commands::run(cli);
    std::process::exit(code);
}
