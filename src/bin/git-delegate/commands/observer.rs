//! The command's side of a mutating transaction: the lock taken with
//! recovery told (`lock_and_recover`), and `CommandObserver`, the `Observer` that
//! shows a transaction's long steps as spinners and its notices as
//! warnings (design §3, §7).
//!
//! Owns: what a command keeps of recovery for its documents (`Recovery`).
//! Never: words a recovery (`render::human::recovery` does), or does git work.

use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::git::repo::Source;
use git_delegate::writeback::Recovery;

/// Take the repository lock and roll back write-backs interrupted by a
/// crash (design §7): every mutating command starts here. What was recovered
/// is told at once and added to `recovered` for the command's documents.
pub fn lock_and_recover(
    ui: &Ui,
    source: &Source,
    recovered: &mut Recovery,
) -> Result<git_delegate::ops::lock::RepoLock> {
    let locked = git_delegate::ops::lock::lock_and_recover(source)?;
    tell_recovered(ui, &locked.recovery);
    add(recovered, locked.recovery);
    Ok(locked.lock)
}

fn add(to: &mut Recovery, r: Recovery) {
    to.rolled_back.extend(r.rolled_back);
    to.completed.extend(r.completed);
    to.undo.extend(r.undo);
    to.workspaces.extend(r.workspaces);
    to.recorded.extend(r.recorded);
}

/// design §7 "Signals": a command that finished its write-back though a
/// signal arrived says so on stderr (its document says `"interrupted":
/// "finished"`) and exits 1. `what`: what was finished.
pub fn tell_finished(ui: &Ui, what: &str) {
    ui.warn(&format!(
        "git-delegate: interrupted: {what} was past its commit point, so it was finished, not rolled back\n"
    ));
}

/// Tell the user what recovery did.
fn tell_recovered(ui: &Ui, recovery: &Recovery) {
    for line in crate::render::human::recovery::recovered(recovery) {
        ui.warn(&line);
    }
}

/// The command's side of a transaction (`prepare::run`, `apply::run`):
/// long steps as spinners, notices as warnings on stderr (design §3), what
/// recovery did kept for the documents (`into_recovered`).
pub struct CommandObserver<'a> {
    ui: &'a Ui,
    recovered: std::cell::RefCell<Recovery>,
}

impl<'a> CommandObserver<'a> {
    pub fn new(ui: &'a Ui) -> CommandObserver<'a> {
        CommandObserver {
            ui,
            recovered: Default::default(),
        }
    }

    /// Add what the transaction recovered to `to`.
    pub fn recovered_into(self, to: &mut Recovery) {
        add(to, self.recovered.into_inner());
    }
}

impl git_delegate::ops::observe::Observer for CommandObserver<'_> {
    fn step(&self, label: &str) -> Box<dyn std::any::Any> {
        Box::new(self.ui.progress(label))
    }
    fn output(&self, n: usize, line: &git_delegate::sys::paths::BStr) {
        use git_delegate::sys::paths::ByteSlice;
        // design §3.10: the verification command's output, live, on a terminal.
        use std::io::IsTerminal;
        if !self.ui.json && std::io::stderr().is_terminal() {
            self.ui.warn(&format!(
                "  verify-{n} | {}\n",
                crate::ui::escape_text(&line.to_str_lossy())
            ));
        }
    }
    fn notice(&self, notice: git_delegate::ops::observe::Notice) {
        use git_delegate::ops::observe::Notice;
        let ui = self.ui;
        match notice {
            Notice::Recovered(r) => {
                tell_recovered(ui, &r);
                add(&mut self.recovered.borrow_mut(), r);
            }
            Notice::NestedRepository(p) => ui.warn(&format!(
                "git-delegate: warning: {} is a git repository of its own (not a submodule); it is not part of the baseline\n",
                git_delegate::sys::paths::quote(p.as_ref())
            )),
            Notice::UndoIncomplete { short, error } => ui.warn(&format!(
                "git-delegate: warning: not everything of the unfinished batch {short} could be removed ({}); `git delegate gc` removes the rest\n",
                error.message
            )),
            Notice::Sandbox(line) | Notice::LeftOut(line) => ui.warn(&format!("{line}\n")),
        }
    }
}
