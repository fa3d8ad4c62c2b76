//! Rollback (back to `S`), idempotent, each step decided by what is on
//! disk (roll-forward, finishing a committed write, is `forward.rs`).
//!
//! Owns: putting a failed or interrupted write-back's paths back, and the
//! paths it must leave to the user (`Left`).
//! Never: moves back or deletes a path that does not hold exactly what the
//! write put there.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::dirs::{Dirs, Disk};
use super::failure::{Left, LeftReason};
use super::faults::Faults;
use super::forward::drop_staged;
use super::hash::{raw_sha1, raw_sha1_reader};
use super::journal::{append_left, enc, remove_journal, Item, Phase, Plan, Wrote};
use super::paths::split;
use super::writer::{rename_noreplace, sync_touched};

/// Put every path back to `S`, remove what the write created, remove the
/// journal. A path goes back only if it still holds exactly what the write
/// put there (the journal's `wrote` record: kind, permissions, size and
/// the hash of its bytes); one the user changed since is left as the user
/// left it, and its original stays where it was moved aside. Returns the
/// paths left; the journal stays while any of them keeps a file (until the
/// user resolves it, see the module header). Every step is decided by what
/// is on disk, so a rollback interrupted at any point is finished by the
/// next one; it appends nothing to the journal (a full disk cannot stop it).
pub(super) fn rollback(
    dirs: &mut Dirs,
    plan: &mut Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<Left>> {
    let mut left: BTreeMap<usize, Left> = BTreeMap::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
    // 0. The state files staged for the commit point never take effect.
    drop_staged(plan);
    let proven = take_back_renamed(dirs, plan, faults, &mut left, &mut touched);
    // 2. Folders the write created and that are empty again, deepest first
    //    (a file that stood where one was created comes back next).
    rmdir_created(dirs, plan, &mut touched, faults);
    put_originals_back(dirs, plan, faults, &mut left, &mut touched);
    remove_temps(dirs, plan, faults, &proven, &mut left, &mut touched);
    rmdir_created(dirs, plan, &mut touched, faults);
    sync_touched(dirs, touched);
    settle_journal(dirs, journal, left)
}

/// Step 1 of a rollback; returns the temps proven to hold what the write
/// made (the step took them back).
fn take_back_renamed(
    dirs: &mut Dirs,
    plan: &Plan,
    faults: &Faults,
    left: &mut BTreeMap<usize, Left>,
    touched: &mut BTreeSet<BString>,
) -> HashSet<usize> {
    // Temps proven to hold what the write made (step 1 took them back).
    let mut proven: HashSet<usize> = HashSet::new();
    // 1. Files renamed into place go back to their temp names, which puts
    //    the tree where it was before the first rename. A temp is durable
    //    before `renaming` is recorded, so a missing temp means it was
    //    renamed; and its original was moved aside before that (asides stay
    //    until the commit): no aside, no rename. Each is proven to be what
    //    the write put there first, and again once it is under the temp
    //    name (what the user writes between the check and the move is
    //    never lost).
    if plan.phase == Phase::Renaming {
        for (i, it) in plan.items.iter().enumerate().rev() {
            let (Some(temp), Some(_)) = (&it.temp, it.new) else {
                continue;
            };
            if dirs.lstat_lenient(temp.as_bstr()) != Disk::Absent {
                continue;
            }
            let has_original = it.old.is_some() || it.aside_folder;
            let renamed = match (&it.aside, has_original) {
                (Some(a), true) => dirs.lstat_lenient(a.as_bstr()) != Disk::Absent,
                (None, true) => false,
                (_, false) => true,
            };
            if !renamed {
                continue;
            }
            let path = it.path.as_bstr();
            let original = if has_original { it.aside.clone() } else { None };
            if original.is_none() && dirs.lstat_lenient(path) == Disk::Absent {
                // An addition already taken back (or removed by the user):
                // nothing of `S` to restore.
                continue;
            }
            match holds(dirs, path, it.wrote.as_ref()) {
                Ok(true) => {}
                Ok(false) => {
                    left.insert(i, changed(it, original));
                    continue;
                }
                Err(e) => {
                    left.insert(i, error(it, original, format!("cannot read it: {e}")));
                    continue;
                }
            }
            if let Err(e) = move_entry(dirs, path, temp.as_bstr()) {
                left.insert(i, error(it, original, format!("cannot take it back: {e}")));
                continue;
            }
            touched.insert(split(path).0.into());
            faults.recovery_step();
            if holds(dirs, temp.as_bstr(), it.wrote.as_ref()).unwrap_or(false) {
                proven.insert(i);
                continue;
            }
            // Changed between the check and the move: back where the user had it.
            match move_entry(dirs, temp.as_bstr(), path) {
                Ok(()) => {
                    left.insert(i, changed(it, original));
                }
                Err(e) => {
                    // Something else stands there now: the user's version
                    // stays under the temp name, the original stays aside
                    // (the next rollback names the temp once the original
                    // is dealt with).
                    let yours = format!(
                        "changed while it was being taken back, and something else stands there now ({e}); your version is kept at {}",
                        enc(temp)
                    );
                    left.insert(
                        i,
                        match original {
                            Some(_) => Left {
                                detail: yours,
                                ..changed(it, original)
                            },
                            None => Left {
                                path: it.path.clone(),
                                reason: LeftReason::ChangedSinceWritten,
                                kept: Some(temp.clone()),
                                yours: true,
                                detail: yours,
                            },
                        },
                    );
                }
            }
        }
    }
    proven
}

/// Step 3 of a rollback.
fn put_originals_back(
    dirs: &mut Dirs,
    plan: &Plan,
    faults: &Faults,
    left: &mut BTreeMap<usize, Left>,
    touched: &mut BTreeSet<BString>,
) {
    // 3. Originals back in place (folders in the way first: a file aside
    //    never lives inside one), never over anything: where the write
    //    removed a path, nothing may stand there now.
    let order = plan
        .items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.aside_folder)
        .chain(
            plan.items
                .iter()
                .enumerate()
                .filter(|(_, i)| !i.aside_folder && !i.covered),
        );
    for (i, it) in order {
        let Some(aside) = &it.aside else { continue };
        if left.contains_key(&i) || dirs.lstat_lenient(aside.as_bstr()) == Disk::Absent {
            continue;
        }
        match move_entry(dirs, aside.as_bstr(), it.path.as_bstr()) {
            Ok(()) => {
                touched.insert(split(it.path.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) if is_occupied(&e) => {
                left.insert(
                    i,
                    Left {
                        path: it.path.clone(),
                        reason: LeftReason::InTheWay,
                        kept: Some(aside.clone()),
                        yours: false,
                        detail:
                            "something new stands where its original must come back; left as it is"
                                .into(),
                    },
                );
            }
            Err(e) => {
                left.insert(
                    i,
                    error(
                        it,
                        Some(aside.clone()),
                        format!("cannot put the original back: {e}"),
                    ),
                );
            }
        }
    }
}

/// Step 4 of a rollback (the folders are the caller's next step).
fn remove_temps(
    dirs: &mut Dirs,
    plan: &Plan,
    faults: &Faults,
    proven: &HashSet<usize>,
    left: &mut BTreeMap<usize, Left>,
    touched: &mut BTreeSet<BString>,
) {
    // 4. Temps (each proven to be what the write made, once renaming had
    //    begun), then the folders that held only temps.
    for (i, it) in plan.items.iter().enumerate() {
        let Some(temp) = &it.temp else { continue };
        if matches!(dirs.lstat_lenient(temp.as_bstr()), Disk::Absent | Disk::Dir) {
            continue;
        }
        // Before `renaming` a temp may be incomplete and has no record;
        // nothing was renamed, and the temp name is the write's own.
        let check = plan.phase == Phase::Renaming && !proven.contains(&i);
        if check
            && it.wrote.is_some()
            && !holds(dirs, temp.as_bstr(), it.wrote.as_ref()).unwrap_or(false)
        {
            left.entry(i).or_insert_with(|| Left {
                path: it.path.clone(),
                reason: LeftReason::ChangedSinceWritten,
                kept: Some(temp.clone()),
                yours: true,
                detail: "a file under the write's temporary name is not what it wrote there".into(),
            });
            continue;
        }
        match dirs.unlink(temp.as_bstr()) {
            Ok(()) => {
                touched.insert(split(temp.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) => {
                left.entry(i).or_insert_with(|| Left {
                    path: it.path.clone(),
                    reason: LeftReason::Error,
                    kept: Some(temp.clone()),
                    yours: false,
                    detail: format!("cannot remove the temporary file: {e}"),
                });
            }
        }
    }
}

/// The end of a rollback: the journal kept (with the paths left recorded)
/// while a kept file waits for the user, removed otherwise; the paths left.
fn settle_journal(
    dirs: &mut Dirs,
    journal: &Path,
    left: BTreeMap<usize, Left>,
) -> Result<(), Vec<Left>> {
    let records: Vec<(usize, Option<BString>, bool)> = left
        .iter()
        .map(|(i, l)| (*i, l.kept.clone(), l.yours))
        .collect();
    let left: Vec<Left> = left.into_values().collect();
    // The journal stays while a kept file waits for the user: the next
    // command re-checks. A path left with nothing kept (an addition the
    // user changed) is the user's; it is reported, and needs no journal.
    let keep_journal = left.iter().any(|l| {
        l.kept
            .as_ref()
            .is_some_and(|k| dirs.lstat_lenient(k.as_bstr()) != Disk::Absent)
    });
    if keep_journal {
        // For `status` (best effort: the next rollback finds them again).
        let _ = append_left(journal, &records);
    } else {
        if let Err(e) = remove_journal(journal) {
            let mut left = left;
            left.push(Left {
                path: BString::default(),
                reason: LeftReason::Error,
                kept: None,
                yours: false,
                detail: format!("cannot remove the journal: {e}"),
            });
            return Err(left);
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(left)
    }
}

fn changed(it: &Item, original: Option<BString>) -> Left {
    Left {
        path: it.path.clone(),
        reason: LeftReason::ChangedSinceWritten,
        detail: if original.is_some() {
            "changed since the write put it there; left as you left it".into()
        } else {
            "changed since the write put it there (it did not exist before); left as you left it"
                .into()
        },
        kept: original,
        yours: false,
    }
}

fn error(it: &Item, original: Option<BString>, detail: String) -> Left {
    Left {
        path: it.path.clone(),
        reason: LeftReason::Error,
        kept: original,
        yours: false,
        detail,
    }
}

fn is_occupied(e: &std::io::Error) -> bool {
    [Errno::EXIST, Errno::NOTEMPTY]
        .iter()
        .any(|n| e.raw_os_error() == Some(n.raw_os_error()))
}

/// Whether `rel` holds exactly what the write recorded putting there. No
/// record (a journal of version 1) proves nothing: never ours.
pub(super) fn holds(dirs: &mut Dirs, rel: &BStr, wrote: Option<&Wrote>) -> std::io::Result<bool> {
    let Some(w) = wrote else { return Ok(false) };
    let absent = matches!(w, Wrote::Absent);
    let gone = |e: &std::io::Error| {
        [Errno::NOENT, Errno::NOTDIR, Errno::LOOP]
            .iter()
            .any(|n| e.raw_os_error() == Some(n.raw_os_error()))
    };
    let (pfd, name) = match dirs.parent_of(rel) {
        Ok(x) => x,
        Err(e) if gone(&e) => return Ok(absent),
        Err(e) => return Err(e),
    };
    let st = match rustix::fs::statat(&*pfd, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(absent),
        Err(e) => return Err(e.into()),
    };
    let ft = FileType::from_raw_mode(st.st_mode);
    match w {
        Wrote::Absent => Ok(false),
        Wrote::Link { sha1, .. } => {
            if ft != FileType::Symlink {
                return Ok(false);
            }
            let target = rustix::fs::readlinkat(&*pfd, name.as_bytes(), Vec::new())?;
            Ok(raw_sha1(target.as_bytes()) == *sha1)
        }
        Wrote::File {
            mode, size, sha1, ..
        } => {
            // The cheap first check: kind, permissions and size.
            if ft != FileType::RegularFile
                || st.st_mode & 0o7777 != *mode
                || st.st_size as u64 != *size
            {
                return Ok(false);
            }
            let fd = rustix::fs::openat(
                &*pfd,
                name.as_bytes(),
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut file = std::fs::File::from(fd);
            let (got, n) = raw_sha1_reader(&mut file)?;
            Ok(n == *size && got == *sha1)
        }
    }
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
