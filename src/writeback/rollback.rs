//! Rollback (back to `S`) and roll-forward (finishing a committed write);
//! both idempotent, each step decided by what is on disk.

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};

use super::dirs::{Dirs, Disk};
use super::journal::{enc, remove_journal, Phase, Plan};
use super::util::{depth, parents, split, Faults};
use super::writer::{rename_noreplace, sync_touched};

/// Put every path back to `S`, remove what the write created, remove the
/// journal. Returns the paths that could not be restored (the journal then
/// stays). Every step is decided by what is on disk, so a rollback
/// interrupted at any point is finished by the next one; it appends
/// nothing to the journal (a full disk cannot stop it).
pub(super) fn rollback(
    dirs: &mut Dirs,
    plan: &mut Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
    // 1. Files renamed into place go back to their temp names, which puts
    //    the tree where it was before the first rename. A temp is durable
    //    before `renaming` is recorded, so a missing temp means it was
    //    renamed; and its original was moved aside before that (asides stay
    //    until the commit): no aside, no rename.
    if plan.phase == Phase::Renaming {
        for it in plan.items.iter().rev() {
            let (Some(temp), Some(_)) = (&it.temp, it.new) else {
                continue;
            };
            if dirs.lstat_lenient(temp.as_bstr()) != Disk::Absent {
                continue;
            }
            let renamed = match (&it.aside, it.old.is_some() || it.aside_folder) {
                (Some(a), true) => dirs.lstat_lenient(a.as_bstr()) != Disk::Absent,
                (None, true) => false,
                (_, false) => true,
            };
            let path = it.path.as_bstr();
            if !renamed || matches!(dirs.lstat_lenient(path), Disk::Absent | Disk::Dir) {
                continue;
            }
            match move_entry(dirs, path, temp.as_bstr()) {
                Ok(()) => {
                    touched.insert(split(path).0.into());
                    faults.recovery_step();
                }
                Err(e) => problems.push(format!("cannot take back {}: {e}", enc(path))),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    // 2. Folders the write created and that are empty again, deepest first
    //    (a file that stood where one was created comes back next).
    rmdir_created(dirs, plan, &mut touched, faults);
    // 3. Originals back in place (folders in the way first: a file aside
    //    never lives inside one).
    let order = plan
        .items
        .iter()
        .filter(|i| i.aside_folder)
        .chain(plan.items.iter().filter(|i| !i.aside_folder && !i.covered));
    for it in order {
        let Some(aside) = &it.aside else { continue };
        if dirs.lstat_lenient(aside.as_bstr()) == Disk::Absent {
            continue;
        }
        match move_entry(dirs, aside.as_bstr(), it.path.as_bstr()) {
            Ok(()) => {
                touched.insert(split(it.path.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) => problems.push(format!(
                "cannot put {} back from {}: {e}",
                enc(&it.path),
                enc(aside)
            )),
        }
    }
    // 4. Temps, then the folders that held only temps.
    for it in &plan.items {
        if let Some(temp) = &it.temp {
            if !matches!(dirs.lstat_lenient(temp.as_bstr()), Disk::Absent | Disk::Dir) {
                match dirs.unlink(temp.as_bstr()) {
                    Ok(()) => {
                        touched.insert(split(temp.as_bstr()).0.into());
                        faults.recovery_step();
                    }
                    Err(e) => problems.push(format!("cannot remove {}: {e}", enc(temp))),
                }
            }
        }
    }
    rmdir_created(dirs, plan, &mut touched, faults);
    if !problems.is_empty() {
        return Err(problems);
    }
    sync_touched(dirs, touched);
    remove_journal(journal).map_err(|e| vec![format!("cannot remove the journal: {e}")])
}

/// Rename `from` to `to` (both repo-relative), never over something.
fn move_entry(dirs: &mut Dirs, from: &BStr, to: &BStr) -> std::io::Result<()> {
    let (fdir, fname) = split(from);
    let (tdir, tname) = split(to);
    let res = dirs.get(fdir).and_then(|f| {
        let t = dirs.get(tdir)?;
        rename_noreplace(&f, fname.as_bytes(), &t, tname.as_bytes())
    });
    dirs.forget(from);
    dirs.forget(to);
    res
}

/// Remove the folders the write created, deepest first, where empty.
fn rmdir_created(dirs: &mut Dirs, plan: &Plan, touched: &mut BTreeSet<BString>, faults: &Faults) {
    for d in plan.mkdirs.iter().rev() {
        if dirs.lstat_lenient(d.as_bstr()) == Disk::Dir && dirs.rmdir(d.as_bstr()).is_ok() {
            touched.insert(split(d.as_bstr()).0.into());
            faults.recovery_step();
        }
    }
}

/// After `committed`: remove the originals kept aside and the folders the
/// deletions emptied, then the journal.
pub(super) fn roll_forward(
    dirs: &mut Dirs,
    plan: &Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
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
            Err(e) => problems.push(format!("cannot remove {}: {e}", enc(aside))),
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
    remove_journal(journal).map_err(|e| vec![format!("cannot remove the journal: {e}")])
}
