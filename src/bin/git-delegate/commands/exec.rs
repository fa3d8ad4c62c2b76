//! `git delegate exec` (design §3.22): parse TASK, `--batch`,
//! `--no-sandbox`, `--no-network` and the command after `--`, call the
//! engine (`git_delegate::ops::exec::run`), and exit with the command's
//! status. It prints no document: the command's own output is the output.
//!
//! Owns: the exec command's arguments and the line saying why a command
//! could not be started.
//! Never: does process or filesystem work (the engine's `exec` does).

use crate::cli::ExecArgs;
use crate::ui::Ui;
use git_delegate::error::Result;

pub fn run(ui: &Ui, args: ExecArgs) -> Result<i32> {
    let opts = git_delegate::ops::exec::Options {
        batch: args.batch.batch,
        task: args.task,
        command: args.command,
        no_sandbox: args.contain.no_sandbox,
        no_network: args.contain.no_network,
    };
    let source = super::source()?;
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::exec::run(source, &opts, &shown)?;
    if let Some(why) = &report.start_error {
        ui.warn(&format!("git-delegate: cannot run {why}\n"));
    }
    Ok(report.code)
}
