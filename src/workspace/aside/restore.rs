//! Putting back a workspace a killed command left aside in the trash
//! (design §3.18 "Before removing a workspace, prove it"): to its place
//! when its batch still has the task there and the place is free
//! (`restore_all`, which every command taking the lock runs), and what that
//! would do (`would_restore`, for `status` and `gc --dry-run`).
//!
//! Owns: those moves back.
//! Never: puts one where something else is, or follows a symlink.

use super::*;

/// Put back at their places the workspaces a killed command left aside in
/// the trash of `base`, each where `place_of` says its task's workspace
/// goes (`None`: no batch owns it now, it stays). Only a folder whose
/// `.git` still names that task's registration goes back, and only where
/// nothing is in its place. Returns the ones left aside.
pub fn restore(
    common_dir: &Path,
    base: &Path,
    place_of: &dyn Fn(&str, &str) -> Option<PathBuf>,
) -> Vec<LeftAside> {
    let left = left_aside(base);
    if left.is_empty() {
        return left;
    }
    let Ok(Opened::Ours(b)) = crate::workspace::shared_root::open_base(base) else {
        return left;
    };
    let Ok(Opened::Ours(trash)) = b.dir.child(OsStr::new(TRASH)) else {
        return left;
    };
    left.into_iter()
        .filter(|l| {
            let Some(place) = place_of(&l.short, &l.task) else {
                return true;
            };
            !put_back(common_dir, &trash, l, &place)
        })
        .collect()
}

/// Put back at their places the workspaces a killed command left aside in
/// the trash of the repository folder `base`: each goes back to the place
/// of the task of a batch (in `state_dir`) its name names, where that
/// batch finds it again. Best effort, and cheap when there is no trash
/// (one failed open); every command that changes things runs it first
/// (`lock::lock_and_recover`).
pub fn restore_all(common_dir: &Path, base: &Path, state_dir: &Path) {
    if left_aside(base).is_empty() {
        return;
    }
    let batches = crate::record::batch::list_ok(state_dir).unwrap_or_default();
    restore(common_dir, base, &|short, task| {
        place_in(&batches, short, task)
    });
}

/// Where the task `task` of the batch `short` among `batches` has its
/// workspace, if it is a local worktree task.
fn place_in(batches: &[crate::record::batch::Batch], short: &str, task: &str) -> Option<PathBuf> {
    batches
        .iter()
        .filter(|b| b.short() == short)
        .find_map(|b| b.task(task))
        .filter(|t| !t.remote && crate::workspace::Kind::of_task(t).registered())
        .map(|t| t.root.clone())
}

/// What [`restore_all`] would put back, changing nothing (`gc --dry-run`
/// tells what gc, which runs it first, then does): each as (its place,
/// where it waits in the trash). Only one whose `.git` names its task's
/// registration and whose place is free.
pub fn would_restore(common_dir: &Path, base: &Path, state_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let left = left_aside(base);
    if left.is_empty() {
        return Vec::new();
    }
    let batches = crate::record::batch::list_ok(state_dir).unwrap_or_default();
    let Ok(Opened::Ours(b)) = crate::workspace::shared_root::open_base(base) else {
        return Vec::new();
    };
    let Ok(Opened::Ours(trash)) = b.dir.child(OsStr::new(TRASH)) else {
        return Vec::new();
    };
    left.into_iter()
        .filter_map(|l| {
            let place = place_in(&batches, &l.short, &l.task)?;
            if place.symlink_metadata().is_ok() {
                return None;
            }
            let Ok(Opened::Ours(entry)) = trash.child(l.path.file_name()?) else {
                return None;
            };
            let worktree_id = crate::workspace::worktree_id(&l.short, &l.task);
            let reg = crate::workspace::registration(common_dir, &worktree_id);
            crate::workspace::identity::dotgit_names(entry.fd(), &reg).then_some((place, l.path))
        })
        .collect()
}

/// Put the aside entry `l` of `trash` back at `place`: whether it went.
fn put_back(common_dir: &Path, trash: &Dir, l: &LeftAside, place: &Path) -> bool {
    let Some(name) = l.path.file_name() else {
        return false;
    };
    let Ok(Opened::Ours(entry)) = trash.child(name) else {
        return false;
    };
    let worktree_id = crate::workspace::worktree_id(&l.short, &l.task);
    let reg = crate::workspace::registration(common_dir, &worktree_id);
    if !crate::workspace::identity::dotgit_names(entry.fd(), &reg) {
        return false;
    }
    let (Some(batch_path), Some(place_name)) = (place.parent(), place.file_name()) else {
        return false;
    };
    let Some(short) = batch_path.file_name() else {
        return false;
    };
    let Ok(Opened::Ours(base)) = batch_path.parent().map_or(
        Ok(Opened::Missing),
        crate::workspace::shared_root::open_base,
    ) else {
        return false;
    };
    // Its batch folder, made again if a removal found it empty meanwhile.
    let Ok(batch) = base.dir.make_child(short) else {
        return false;
    };
    let id = entry.id();
    let moved = rfs::renameat_with(
        trash.fd(),
        name,
        batch.fd(),
        place_name,
        RenameFlags::NOREPLACE,
    );
    if moved.is_err() {
        return false;
    }
    if is_at(&batch, place_name, id) {
        return true;
    }
    // Not the folder we checked: back into the trash.
    let _ = rfs::renameat_with(
        batch.fd(),
        place_name,
        trash.fd(),
        name,
        RenameFlags::NOREPLACE,
    );
    false
}
