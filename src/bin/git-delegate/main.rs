//! `git-delegate`: parse the command line, run the command, report errors
//! with the exit statuses of design §3. The binary is everything a person or
//! a script sees: its own modules are `cli` (the interface), `commands` (one
//! module per subcommand), `ui` (output: documents, human text, colour,
//! diagnostics), `progress` (the spinner), `pager` (the pager of long
//! output) and `manpage`; the engine is the library crate `git_delegate`
//! (`src/lib.rs`), which the binary uses by its name (`git_delegate::ops::...`).

mod cli;
mod commands;
mod manpage;
mod pager;
mod progress;
mod render;
mod ui;

fn main() {
    // First, before any thread: the source's GIT_DIR etc. must reach no workspace.
    git_delegate::git::repo::isolate_environment();
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
