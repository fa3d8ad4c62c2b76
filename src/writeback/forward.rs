//! Roll-forward: finishing a write-back past its commit point (the staged
//! state files put in place, the originals kept aside and the folders the
//! deletions emptied removed, then the journal), idempotent, each step
//! decided by what is on disk; and dropping staged state files.
//!
//! Owns: what happens after `committed`.
//! Never: touches a path the write-back did not record.

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::{BString, ByteSlice};

use super::dirs::{Dirs, Disk};
use super::failure::{Left, LeftReason};
use super::faults::Faults;
use super::journal::{enc, remove_journal, Plan};
use super::paths::{depth, parents, split};
use super::writer::sync_touched;

/// After `committed`: remove the originals kept aside and the folders the
/// deletions emptied, then the journal.
pub(super) fn roll_forward(
    dirs: &mut Dirs,
    plan: &Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<Left>> {
    let mut problems = Vec::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
    // The state files staged for the commit point (the record of what was
    // written), before the journal that names them can go.
    for (staged, to) in &plan.then {
        if let Err(e) = put_in_place(staged, to) {
            problems.push(Left {
                path: BString::default(),
                reason: LeftReason::Error,
                kept: None,
                yours: false,
                detail: format!("cannot put {} in place: {e}", to.display()),
            });
        }
    }
    for it in &plan.items {
        let Some(aside) = &it.aside else { continue };
        let res = match dirs.lstat_lenient(aside.as_bstr()) {
            Disk::Absent => continue,
            Disk::Dir => dirs.remove_tree(aside.as_bstr()),
            _ => dirs.unlink(aside.as_bstr()),
        };
        match res {
            Ok(()) => {
                touched.insert(split(aside.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) => problems.push(Left {
                path: it.path.clone(),
                reason: LeftReason::Error,
                kept: Some(aside.clone()),
                yours: false,
                detail: format!("cannot remove the original kept at {}: {e}", enc(aside)),
            }),
        }
    }
    // Folders left empty by deletions, deepest first; never the root.
    let mut emptied: BTreeSet<BString> = BTreeSet::new();
    for it in plan.items.iter().filter(|i| i.new.is_none()) {
        for p in parents(it.path.as_bstr()) {
            emptied.insert(p.into());
        }
    }
    let mut emptied: Vec<BString> = emptied.into_iter().collect();
    emptied.sort_by_key(|p| std::cmp::Reverse((depth(p.as_bstr()), p.clone())));
    for d in emptied {
        if dirs.lstat_lenient(d.as_bstr()) == Disk::Dir && dirs.rmdir(d.as_bstr()).is_ok() {
            touched.insert(split(d.as_bstr()).0.into());
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    sync_touched(dirs, touched);
    faults.hit("before-journal-remove");
    remove_journal(journal).map_err(|e| {
        vec![Left {
            path: BString::default(),
            reason: LeftReason::Error,
            kept: None,
            yours: false,
            detail: format!("cannot remove the journal: {e}"),
        }]
    })
}

/// Remove the state files staged for the commit point that are still there.
pub(super) fn drop_staged(plan: &Plan) {
    for (staged, _) in &plan.then {
        if std::fs::remove_file(staged).is_ok() {
            crate::sys::fs::sync_dir(staged.parent().unwrap_or(Path::new(".")));
        }
    }
}

/// Rename a staged state file over its final name (its folder made first),
/// durably; done already (nothing staged) is fine.
fn put_in_place(staged: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(staged).is_err() {
        return Ok(());
    }
    let dir = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    std::fs::rename(staged, to)?;
    std::fs::File::open(dir)?.sync_all()
}
