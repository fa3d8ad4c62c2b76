//! `git delegate exec [--batch B] TASK -- COMMAND...` (design §3.22): one
//! command in a task's `cwd`, contained like a `run` worker and with its
//! environment, its stdin, stdout and stderr the caller's (a person or an
//! agent host runs an agent by hand in a task: `git delegate exec 1 --
//! claude`), in the caller's process group (so a terminal's Ctrl-C and job
//! control reach it as they would reach the command run directly).
//!
//! Owns: choosing the batch (`--batch`, else the only open batch) and the
//! task (open, local, its workspace the folder prepare made: refused
//! otherwise before anything runs), waiting for the command while a
//! signal to git-delegate only counts (the command gets its own), and its
//! exit status as the command's (a signal: 128 + its number; not found:
//! 127; not executable: 126, as a shell says them).
//! Never: holds the repository lock or changes the batch record while the
//! command runs (it may call `git delegate` itself, outside a sandbox);
//! prints (the binary does).

use std::ffi::OsString;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::ops::contain;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch;

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub batch: Option<String>,
    pub task: String,
    /// The command (program and arguments).
    pub command: Vec<OsString>,
    pub no_sandbox: bool,
    pub no_network: bool,
}

/// How the command ended.
#[derive(Debug)]
pub struct Report {
    /// The exit status to end with: the command's, 128 + a signal's
    /// number, or 126/127 when it could not be started.
    pub code: i32,
    /// Why it could not be started (then `code` is 126 or 127).
    pub start_error: Option<String>,
    /// How it was contained.
    pub sandbox: contain::Summary,
}

/// The position in `b` of its open task `name`, whose workspace is here
/// and is still the folder prepare made.
fn local_task(source: &Source, b: &batch::Batch, name: &str) -> Result<usize> {
    let task = b.open_task_named(name)?;
    if task.remote {
        return Err(Error::usage(
            Code::Usage,
            format!(
                "task {} of batch {} is remote: its workspace is on its worker's machine",
                task.name,
                b.short()
            ),
            "run the command there, in the workspace `git delegate join` made",
        ));
    }
    let idx = b
        .tasks
        .iter()
        .position(|t| t.name == task.name)
        .unwrap_or_default();
    if !matches!(
        crate::workspace::identify(&source.common_dir, task),
        crate::workspace::Identity::Ours { .. }
    ) {
        return Err(Error::state(
            Code::WorkspaceMissing,
            format!(
                "the workspace of task {} ({}) is missing or is no longer the folder prepare made",
                task.name,
                task.root.display()
            ),
            format!(
                "`git delegate status {}` shows the batch; apply or drop it, and prepare again",
                b.short()
            ),
        ));
    }
    Ok(idx)
}

/// Run the command (design §3.22).
pub fn run(source: Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    let Some((program, args)) = opts.command.split_first() else {
        return Err(Error::usage(
            Code::Usage,
            "no command to run: give it after `--`",
            "for example `git delegate exec 1 -- sh`",
        ));
    };
    // A containment key a worker could have planted holds only as the
    // user confirmed it (design §3.18, §3.22).
    let mut source = source;
    if let Some(u) = crate::ops::trust::gate_containment(&mut source)? {
        observer.notice(Notice::LeftOut(u.containment_warning()));
    }
    let source = &source;
    let decision = contain::decide(contain::Options::new(
        &source.config,
        opts.no_sandbox,
        opts.no_network,
    ))?;
    let state = source.state_dir();
    let b = batch::select_open(&state, opts.batch.as_deref())?;
    if let Some(p) = crate::ops::preparing::progress(&b) {
        return Err(crate::ops::preparing::refuse(&b, p));
    }
    let idx = local_task(source, &b, &opts.task)?;
    let mut cmd =
        crate::ops::setup::worker_command(program, &source.config, &b, idx).map_err(|why| {
            Error::state(
                Code::WorkspaceMissing,
                why,
                "fix what the message names, then run exec again",
            )
        })?;
    cmd.args(args);
    crate::sys::process::without_locating(&mut cmd);
    if let Some(note) = &decision.note {
        observer.notice(Notice::Sandbox(note.clone()));
    }
    let contained = contain::contain(
        &decision,
        &source.common_dir,
        &source.config,
        &b,
        idx,
        &mut cmd,
    )
    .map_err(|why| {
        Error::state(
            Code::State,
            format!("cannot contain the command: {why}"),
            "fix what the message names, or run it unconfined with --no-sandbox",
        )
    })?;
    // A signal to git-delegate (a terminal's Ctrl-C reaches both) only
    // counts from now on: the command decides what it means.
    let _signals = crate::sys::interrupt::catch_signals().map(|d| d.auto_deregister());
    let sandbox = contained.summary;
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(Report {
                code,
                start_error: Some(format!("{}: {e}", program.to_string_lossy())),
                sandbox,
            });
        }
    };
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("cannot wait for the command", e)),
        }
    };
    contained.settle(&source.repo);
    drop(contained);
    use std::os::unix::process::ExitStatusExt;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    };
    Ok(Report {
        code,
        start_error: None,
        sandbox,
    })
}
