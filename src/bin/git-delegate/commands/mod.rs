//! The command layer: one module per subcommand, each a thin function over
//! the engine modules, plus what they share (batch lookup, argument checks).
//!
//! Owns: which transaction a command line runs (`run`), and what each
//! command prints, in which order, with which exit status; the words are
//! `render::human`'s, the documents `render`'s types.
//! Never: does git work itself; the engine modules do (`prepare` and
//! `apply` are whole engine transactions).

pub mod apply;
pub mod branch;
pub mod complete;
pub mod completions;
pub mod config;
pub mod diff;
pub mod drop;
pub mod exec;
pub mod gc;
pub mod hook;
pub mod hooks;
pub mod kept;
pub mod man;
pub mod observer;
pub mod path;
pub mod pre_push;
pub mod prepare;
pub mod refresh;
pub mod remote;
pub mod renew;
pub mod run;
pub mod side_effects;
pub mod status;
pub mod undo;

use std::ffi::OsString;

pub use crate::render::human::{human_bytes, left_alone_text, shorts, show};
pub use observer::{lock_and_recover, tell_finished, CommandObserver};

use crate::cli::{Cli, Command};
use crate::ui::Ui;
use git_delegate::error::{Code, Error, Result};
use git_delegate::git::repo::Source;
use git_delegate::writeback::Recovery;

/// Run a parsed command line; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    let json = match &cli.command {
        Command::Prepare(a) => a.json.json,
        Command::Apply(a) => a.json.json,
        Command::Undo(a) => a.json.json,
        Command::Status(a) => a.json.json,
        Command::Diff(a) => a.json.json,
        Command::Path(a) => a.json.json,
        Command::Branch(a) => a.json.json,
        Command::Gc(a) => a.json.json,
        Command::Drop(a) => a.json.json,
        Command::Renew(a) => a.json.json,
        Command::Config(a) => a.json.json,
        Command::Refresh(a) => a.json.json,
        Command::Run(a) => a.prepare.json.json,
        Command::Join(a) => a.json.json,
        Command::Submit(a) => a.json.json,
        Command::Hooks(crate::cli::HooksArgs {
            action: crate::cli::HooksAction::Install { json, .. },
        }) => json.json,
        Command::Hook(_)
        | Command::Exec(_)
        | Command::Man(_)
        | Command::Completions(_)
        | Command::Snapshot
        | Command::Complete { .. }
        | Command::PurgeTrash { .. } => false,
    };
    let ui = Ui::new(json, cli.color);
    // What the lock-and-recover step of a mutating command did: every
    // document it prints names it, its error document too.
    let mut recovered = Recovery::default();
    let result = match cli.command {
        Command::Prepare(a) => prepare::run(&ui, a, &mut recovered),
        Command::Status(a) => status::run(&ui, a),
        Command::Diff(a) => diff::run(&ui, a),
        Command::Path(a) => path::run(&ui, a),
        Command::Branch(a) => branch::run(&ui, a),
        Command::Drop(a) => drop::run(&ui, a, &mut recovered),
        Command::Renew(a) => renew::run(&ui, a, &mut recovered),
        Command::Config(a) => config::run(&ui, a),
        Command::Refresh(a) => refresh::run(&ui, a, &mut recovered),
        Command::Run(a) => run::run(&ui, a, &mut recovered),
        Command::Exec(a) => exec::run(&ui, a),
        Command::Join(a) => remote::join(&ui, a),
        Command::Submit(a) => remote::submit(&ui, a),
        // `apply --kept REF` lands one kept proposal (`kept`), which renders
        // through apply's document: dispatched here, so `apply` never calls it.
        // `apply --from-undo APPLY` applies an undone apply again (`undo`).
        Command::Apply(mut a) => match (a.kept.take(), a.from_undo.take()) {
            (Some(reference), _) => kept::run(&ui, reference, a.strict, a.dry_run, &mut recovered),
            (None, Some(from)) => undo::reapply(&ui, &from, &a, &mut recovered),
            (None, None) => apply::run(&ui, a, &mut recovered),
        },
        Command::Undo(a) => undo::run(&ui, a, &mut recovered),
        Command::Gc(a) => gc::run(&ui, a, &mut recovered),
        Command::Hook(a) => hook::run(&ui, a),
        Command::Hooks(a) => hooks::run(&ui, a),
        Command::Man(a) => man::run(&ui, a),
        Command::Completions(a) => completions::run(&ui, a),
        Command::Snapshot => snapshot_plumbing(&ui),
        Command::Complete { words } => complete::run(&words),
        Command::PurgeTrash { dir, state_dir } => {
            git_delegate::workspace::trash::purge_in_background(&dir, state_dir.as_deref());
            Ok(0)
        }
    };
    // Drivers the batch's prepare did not record were not run (design §3.18).
    for d in git_delegate::git::drivers::disabled() {
        ui.warn(&format!(
            "git-delegate: warning: the {} driver was not run (prepare did not record it, or its command changed since; its files passed through unfiltered, merges used git's text merge): check `git config --get-regexp '^{}\\.'`\n",
            crate::ui::escape_text(&d),
            git_delegate::sys::paths::shell_quote(&d).trim_matches('\'')
        ));
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            ui.error(&e, &recovered);
            e.exit_code()
        }
    }
}

/// Report a clap error: help and version go to stdout with exit 0; usage
/// errors exit 2, as an error document when `--json` was asked for.
pub fn report_parse_error(args: &[OsString], e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    let choice = crate::ui::color_choice_from_args(args);
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            crate::ui::print_clap(&e, choice);
            0
        }
        _ => {
            if args
                .iter()
                .skip(1)
                .take_while(|a| *a != "--")
                .any(|a| a == "--json")
            {
                let ui = Ui {
                    json: true,
                    color: false,
                };
                ui.doc(crate::ui::error_doc(
                    Code::Usage,
                    &parse_error_message(&e),
                    "run `git delegate -h` for the usage",
                ));
            }
            crate::ui::print_clap(&e, choice);
            2
        }
    }
}

/// The first line of a clap error, without clap's `error: ` prefix and styling.
fn parse_error_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid command line");
    line.trim_start_matches("error: ").trim().to_string()
}

/// The source around the current directory.
/// A command that takes its batch as `--batch BATCH` (`diff`, `path`):
/// when the batch was left out and several are open, the help says so, with
/// the command as the user gave it and the first open batch's id filled in
/// (design §3.16: every printed hint works as printed).
pub fn batch_flag_help(
    mut e: git_delegate::error::Error,
    source: &Source,
    words: &[&str],
) -> git_delegate::error::Error {
    if e.code != git_delegate::error::Code::AmbiguousBatch {
        return e;
    }
    let Some(first) = git_delegate::record::batch::list_ok(&source.state_dir())
        .ok()
        .and_then(|l| l.into_iter().find(|b| b.preparing.is_none()))
    else {
        return e;
    };
    let mut command = vec!["git", "delegate"];
    command.extend_from_slice(words);
    let command: Vec<String> = command
        .iter()
        .map(|w| git_delegate::sys::paths::shell_quote(w))
        .collect();
    e.help = format!(
        "name one with --batch (its label, its id, or the first 4 or more characters of its id), e.g. `{} --batch {}`",
        command.join(" "),
        first.short()
    );
    e
}

pub fn source() -> Result<Source> {
    Ok(Source::discover_here()?)
}

/// [`parse_ttl`] of an optional flag's value.
pub fn parse_ttl_opt(s: Option<&str>) -> Result<Option<i64>> {
    s.map(parse_ttl).transpose()
}

/// Parse a `--ttl` value.
pub fn parse_ttl(s: &str) -> Result<i64> {
    git_delegate::sys::time::duration(s).map_err(|e| {
        Error::usage(
            Code::BadDuration,
            e.describe(s),
            match e {
                git_delegate::sys::time::DurationError::Malformed => {
                    "use a number and a unit: 90s, 30m, 2h, 7d"
                }
                git_delegate::sys::time::DurationError::TooLong => {
                    "use a shorter duration: a lease can end by 9999-12-31 at the latest"
                }
            },
        )
    })
}

/// Check an `--owner-pid` and read its start time.
pub fn owner(pid: u32) -> Result<(u32, u64)> {
    match git_delegate::sys::process::process_start(pid) {
        Some(start) => Ok((pid, start)),
        None => Err(Error::usage(
            Code::OwnerNotRunning,
            format!("no process with pid {pid} is running"),
            "pass the pid of the process that owns the batch (for a shell, `$$`)",
        )),
    }
}

/// `git delegate snapshot` (hidden plumbing): print the snapshot's tree id
/// and, on stderr, how many files had to be hashed.
fn snapshot_plumbing(ui: &Ui) -> Result<i32> {
    let source = source()?;
    let snap = git_delegate::snapshot::snapshot(&source.repo)?;
    ui.warn(&format!(
        "hashed {} changed {}\n",
        snap.hashed, snap.changes
    ));
    crate::ui::stdout(&format!("{}\n", snap.tree));
    Ok(0)
}
