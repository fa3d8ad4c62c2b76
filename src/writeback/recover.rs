//! Recovery of the journals left by dead processes (see the write-back's
//! module header, "Recovery"): finding them in batches' and undo entries'
//! state folders, rolling each back or forward (`recover_all_detailed`),
//! and what the read-only commands ask of them (`pending`, `committed`,
//! `left_paths`).
//! Never: touches a journal whose writer still runs, or recovers on behalf
//! of a read-only command (those only read: `pending`, `left_paths`).

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use super::dirs::Dirs;
use super::faults::Faults;
use super::forward::roll_forward;
use super::journal::{parse_journal, tmp_journal, Phase};
use super::rollback::rollback;
use super::{LeftPath, Recovery, Undoing, WriteError, WritebackError};
use crate::git::repo::Source;
use crate::record::batch;
use crate::sys::fs::PathError;

type Result<T, E = WritebackError> = std::result::Result<T, E>;

/// Roll back every journal left by a dead process in this repository's
/// batches (and finish the clean-up of those whose result had committed).
/// Call with the repository lock held.
pub fn recover_all_detailed(source: &Source) -> Result<Recovery> {
    recover_with(source, &Faults::from_env())
}

/// The folders whose write-back journals recovery scans: every batch's
/// state folder, and every undo entry's (an undo, or an `apply
/// --from-undo`, writes through a journal there: design §3.11), each with
/// its id (batch id, apply id).
fn journal_dirs(source: &Source) -> Result<Vec<(String, PathBuf)>> {
    let state = source.state_dir();
    let mut out = Vec::new();
    for dir in [batch::batches_dir(&state), batch::undo_dir(&state)] {
        // Hidden folders are never batches (`batch::list`).
        let found = batch::visible_entries(&dir).map_err(PathError::on("read", &dir))?;
        out.extend(found);
    }
    Ok(out)
}

pub(super) fn recover_with(source: &Source, faults: &Faults) -> Result<Recovery> {
    let mut out = Recovery::default();
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let undo_dir = batch::undo_dir(&source.state_dir());
    for (id, batch_dir) in journal_dirs(source)? {
        if batch_dir.parent() == Some(undo_dir.as_path()) {
            out.undo.push(id.clone());
        }
        // A journal that never got its final name: nothing was written yet.
        let _ = std::fs::remove_file(tmp_journal(&batch_dir.join(batch::JOURNAL_FILE)));
        let journal = batch_dir.join(batch::JOURNAL_FILE);
        if journal.is_file() {
            found.push((id, journal));
        }
    }
    found.sort();
    for (id, journal) in found {
        // A journal whose write-back went into another tree than the
        // source's (a refresh into a workspace) is told as such.
        let elsewhere = std::fs::read(&journal)
            .ok()
            .and_then(|text| parse_journal(&text))
            .is_some_and(|plan| {
                let same = |a: &Path, b: &Path| {
                    a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
                };
                !same(&plan.root, &source.root)
            });
        if elsewhere && !out.workspaces.contains(&id) {
            out.workspaces.push(id.clone());
        }
        match recover_one(&journal, faults)? {
            Recovered::RolledBack => out.rolled_back.push(id),
            Recovered::Completed { recorded } => {
                if recorded {
                    out.recorded.push(id.clone());
                }
                out.completed.push(id)
            }
            Recovered::LiveWriter => {}
        }
    }
    Ok(out)
}

enum Recovered {
    RolledBack,
    /// `recorded`: it had staged state files, put in place now.
    Completed {
        recorded: bool,
    },
    LiveWriter,
}

fn recover_one(journal: &Path, faults: &Faults) -> Result<Recovered> {
    let text = std::fs::read(journal).map_err(PathError::on("read", journal))?;
    let Some(mut plan) = parse_journal(&text) else {
        // No durable plan: nothing in the working tree was changed.
        std::fs::remove_file(journal).map_err(PathError::on("remove", journal))?;
        return Ok(Recovered::RolledBack);
    };
    if plan.writer_alive() {
        return Ok(Recovered::LiveWriter);
    }
    let mut dirs = match Dirs::open(&plan.root) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The working tree is gone, and with it everything to restore.
            std::fs::remove_file(journal).map_err(PathError::on("remove", journal))?;
            return Ok(Recovered::RolledBack);
        }
        Err(e) => {
            return Err(WritebackError::OpenToRecover {
                root: plan.root.clone(),
                source: e,
            })
        }
    };
    if plan.phase == Phase::Committed {
        let recorded = plan.then.iter().any(|(staged, _)| staged.exists());
        roll_forward(&mut dirs, &plan, journal, faults).map_err(|left| {
            WriteError::rollback_failed(
                &plan.root,
                journal,
                Undoing::Recovery { committed: true },
                left,
            )
        })?;
        return Ok(Recovered::Completed { recorded });
    }
    rollback(&mut dirs, &mut plan, journal, faults).map_err(|left| {
        WriteError::rollback_failed(
            &plan.root,
            journal,
            Undoing::Recovery { committed: false },
            left,
        )
    })?;
    Ok(Recovered::RolledBack)
}

/// The paths the last rollback of `batch_dir`'s journal left to the user
/// whose kept file is still there (what resolving means: see the module
/// header). Reads only; empty when there is no such journal.
pub fn left_paths(batch_dir: &Path) -> Vec<LeftPath> {
    let Ok(text) = std::fs::read(batch_dir.join(batch::JOURNAL_FILE)) else {
        return Vec::new();
    };
    let Some(plan) = parse_journal(&text) else {
        return Vec::new();
    };
    let mut out: Vec<LeftPath> = Vec::new();
    for (path, kept, yours) in plan.left {
        let Some(kept) = kept else { continue };
        let kept = plan.root.join(crate::sys::paths::to_os(kept.as_bstr()));
        if std::fs::symlink_metadata(&kept).is_ok() && !out.iter().any(|l| l.kept == kept) {
            out.push(LeftPath { path, kept, yours });
        }
    }
    out
}

/// Whether the write-back journal in `batch_dir` is past its commit point:
/// every result file is in place, and recovery finishes it (clean-up, and
/// the record its command staged) instead of rolling it back (design §7).
/// Reads only; false without a journal.
pub fn committed(batch_dir: &Path) -> bool {
    std::fs::read(batch_dir.join(batch::JOURNAL_FILE))
        .ok()
        .and_then(|text| parse_journal(&text))
        .is_some_and(|plan| plan.phase == Phase::Committed)
}

/// Batches of this repository whose state folder holds a write-back
/// journal (an interrupted write-back, or one whose rollback left paths
/// to the user). Reads only; `apply --dry-run` reports them instead of
/// recovering (design §7).
pub fn pending(source: &Source) -> Result<Vec<String>> {
    let mut out: Vec<String> = journal_dirs(source)?
        .into_iter()
        .filter(|(_, dir)| dir.join(batch::JOURNAL_FILE).is_file())
        .map(|(id, _)| id)
        .collect();
    out.sort();
    Ok(out)
}
