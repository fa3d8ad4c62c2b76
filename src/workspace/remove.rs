//! Removing workspaces: a task's once proven (`remove_proven`: moved aside,
//! compared with what was read, then deleted or left to the trash's
//! deleter, or moved back and kept; design §3.18 "Before removing a
//! workspace, prove it", `aside`), a task's without proof (`remove_task`,
//! `discard` through the trash: a scratch copy, a verification's, `drop
//! --force`), a workspace no identity was recorded for (`remove`,
//! `remove_joined`), their registrations, the empty folders above them,
//! and `release` (kept as an ordinary unlocked worktree).
//! Its error is `WorkspaceError` (worded in `ops::explain`).
//! Never: removes a folder that is not the workspace it made (its `.git`
//! must point back at the registration), or follows a symlink.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::identity::{
    identify, identify_at, moved_elsewhere, registered_location, serves, Identity, Reach,
};
use super::{registration, Health, Removal};
use crate::config::Mode;
use crate::git::registration::Registration;
use crate::workspace::WorkspaceError;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

/// Remove a workspace folder of a batch, below the workspace root, that no
/// identity was recorded for (a verification workspace, a corrupt batch's)
/// and its registration; tasks of a batch go through [`remove_task`].
pub fn remove(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    remove_at(common_dir, root, worktree_id, None, Reach::Beneath)
}

/// Remove a workspace `join` has just made at a folder of the user's
/// choosing (design §3.14), and its registration.
pub fn remove_joined(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    remove_at(common_dir, root, worktree_id, None, Reach::Path)
}

/// Remove a task's workspace folder and its registration, never a folder
/// that is not the one prepare made ([`identify`]). A folder the user
/// replaced is left alone (its stale registration goes); a workspace the
/// user moved with `git worktree move` is left alone with its registration,
/// unlocked, as an ordinary worktree. Both report [`Removal::Foreign`].
pub fn remove_task(common_dir: &Path, task: &crate::record::batch::Task) -> Result<Removal> {
    if task.remote {
        return Ok(Removal::Missing);
    }
    if task.kind() == Mode::Scratch {
        return crate::workspace::scratch::remove(common_dir, &task.root);
    }
    // A workspace of the pool that serves another task, or is idle, is
    // not this task's (design §3.20).
    if !serves(common_dir, task) {
        return Ok(Removal::Missing);
    }
    remove_at(
        common_dir,
        &task.root,
        &task.worktree_id,
        task.folder.as_ref(),
        Reach::Beneath,
    )
}

pub(super) fn remove_at(
    common_dir: &Path,
    root: &Path,
    worktree_id: &str,
    made: Option<&crate::record::batch::Folder>,
    reach: Reach,
) -> Result<Removal> {
    if crate::record::batch::kind_of(worktree_id) == Mode::Scratch {
        return crate::workspace::scratch::remove(common_dir, root);
    }
    if moved_elsewhere(common_dir, root, worktree_id) {
        release(common_dir, worktree_id)?;
        return Ok(Removal::Foreign);
    }
    let identity = identify_at(common_dir, root, worktree_id, made, reach);
    let state = match identity.health() {
        Health::Ours => Removal::Removed,
        Health::Missing => Removal::Missing,
        Health::Foreign => Removal::Foreign,
    };
    if let Identity::Ours {
        fd: Some(fd),
        parents,
        ..
    } = identity
    {
        remove_held(root, fd, parents.as_ref())?;
    }
    unregister(common_dir, root, worktree_id)?;
    if state != Removal::Foreign {
        remove_empty_parents(root, reach);
    }
    Ok(state)
}

/// Remove the folders above the task's workspace when they are empty (the
/// batch folder and the repository folder, through their handles, design
/// §3.18; a scratch copy's container). Best effort.
pub fn remove_empty_parents_of(task: &crate::record::batch::Task) {
    if task.remote {
        return;
    }
    match task.kind() {
        Mode::Worktree => remove_empty_parents(&task.root, Reach::Beneath),
        Mode::Scratch => crate::sys::fs::remove_empty_parents(&task.root, 2),
    }
}

/// Remove the batch folder and the repository folder above a workspace
/// when they are empty: through their handles below the workspace root
/// (design §3.18), by path elsewhere.
pub(super) fn remove_empty_parents(root: &Path, reach: Reach) {
    match reach {
        Reach::Beneath => crate::workspace::shared_root::remove_empty_parents(root),
        Reach::Path => crate::sys::fs::remove_empty_parents(root, 2),
    }
}

/// Remove the folder `root` that `fd` holds open: its content through the
/// handle (never following a symlink nor crossing into another
/// filesystem), then the empty folder, only while `root`'s name still
/// leads to that folder: in the batch folder `parents` holds open (design
/// §3.18), or, without it, in the folder `root`'s parent path leads to.
pub(super) fn remove_held(
    root: &Path,
    fd: OwnedFd,
    parents: Option<&crate::workspace::shared_root::Parents>,
) -> Result<()> {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return Ok(());
    };
    match parents {
        Some(p) => p.batch.remove_child(name, fd)?,
        None => {
            let pfd = crate::workspace::carry::open_root(parent)?;
            crate::workspace::shared_root::remove_held_at(pfd.as_fd(), root, name, fd)?
        }
    }
    Ok(())
}

/// Workspaces whose index lists at most this many entries are removed in
/// place: deleting that few files costs less than starting a deleter.
const REMOVE_IN_PLACE_MAX: u32 = 128;

/// Like [`remove_task`], but a large workspace that is ours is moved into
/// the trash (one rename) instead of being deleted here; the trash folder
/// is returned so the caller can start the background deleter
/// ([`crate::workspace::trash::spawn_purger`]) once it is done. Falls back to
/// [`remove_task`] wherever the move cannot be made.
pub fn discard(
    common_dir: &Path,
    task: &crate::record::batch::Task,
) -> Result<(Removal, Option<PathBuf>)> {
    if task.remote || !serves(common_dir, task) {
        return Ok((Removal::Missing, None));
    }
    let (root, worktree_id) = (task.root.as_path(), task.worktree_id.as_str());
    let small = index_entries(common_dir, worktree_id).is_some_and(|n| n <= REMOVE_IN_PLACE_MAX);
    if small || task.kind() == Mode::Scratch || moved_elsewhere(common_dir, root, worktree_id) {
        return remove_task(common_dir, task).map(|r| (r, None));
    }
    let Identity::Ours {
        fd: Some(fd),
        parents: Some(parents),
        ..
    } = identify(common_dir, task)
    else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    let Ok(held) = rustix::fs::fstat(&fd) else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    let Some(trash) =
        crate::workspace::trash::put(&parents, root, (held.st_dev as u64, held.st_ino as u64))
    else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    unregister(common_dir, root, worktree_id)?;
    drop(parents);
    remove_empty_parents(root, Reach::Beneath);
    Ok((Removal::Removed, Some(trash)))
}

/// What became of a task's workspace removed only once proven (design
/// §3.18 "Before removing a workspace, prove it").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// Proven and removed: deleted here, or (`Some`: the trash folder, for
    /// the background deleter the caller starts) moved into the trash.
    Removed(Option<PathBuf>),
    /// Nothing was there (its registration went).
    Missing,
    /// Not the folder prepare made: left alone (as [`remove_task`]).
    Foreign,
    /// Written into since it was read: moved back to its place and kept,
    /// registered and locked as it was.
    Changed,
    /// Written into since it was read, and its place was taken meanwhile:
    /// it stays aside at this path, never deleted (`aside::restore` puts it
    /// back once its place is free).
    LeftAside(PathBuf),
}

/// Remove a task's workspace only once proven (design §3.18): moved out
/// of its place into the trash (one rename, after which a writer by path
/// gets ENOENT), then compared with `read`, the tree the caller's last
/// snapshot of it gave. The same: it goes, deleted here when `in_place` or
/// when it is small, otherwise left in the trash for the background
/// deleter; changed: moved back and kept ([`Proof::Changed`]). A scratch
/// copy (whose edits never land), a remote task (no workspace here) and a
/// folder that is not the workspace prepare made go (or stay) as
/// [`remove_task`] has them. The three steps are [`set_aside`],
/// `Aside::compare` and [`finish_removal`], for callers that compare many
/// at once.
pub fn remove_proven(
    common_dir: &Path,
    task: &crate::record::batch::Task,
    read: &crate::workspace::aside::Read,
    in_place: bool,
) -> Result<Proof> {
    match set_aside(common_dir, task)? {
        None => remove_task(common_dir, task).map(|r| match r {
            Removal::Removed => Proof::Removed(None),
            Removal::Missing => Proof::Missing,
            Removal::Foreign => Proof::Foreign,
        }),
        Some(aside) => {
            let compared = aside.compare(common_dir, read);
            finish_removal(common_dir, task, aside, compared, in_place)
        }
    }
}

/// The task's workspace moved aside to be proven (design §3.18), when it
/// is one that is: the folder prepare made below the workspace root (not a
/// scratch copy, nor one the user moved with `git worktree move`, nor a
/// remote task's). `None` when it is none of those: nothing was changed.
pub fn set_aside(
    common_dir: &Path,
    task: &crate::record::batch::Task,
) -> Result<Option<crate::workspace::aside::Aside>> {
    let (root, worktree_id) = (task.root.as_path(), task.worktree_id.as_str());
    if task.remote || task.kind() == Mode::Scratch || moved_elsewhere(common_dir, root, worktree_id)
    {
        return Ok(None);
    }
    let (fd, parents) = match identify(common_dir, task) {
        Identity::Ours {
            fd: Some(fd),
            parents: Some(parents),
            ..
        } => (fd, parents),
        // Ours, but not below a workspace root it can be moved aside in:
        // never removed unproven.
        Identity::Ours { .. } => {
            return Err(WorkspaceError::io("move aside", root)(
                std::io::ErrorKind::Unsupported.into(),
            ))
        }
        Identity::Missing | Identity::Replaced(_) => return Ok(None),
        // Nothing is moved while what is there cannot be told.
        Identity::TooManyOpenFiles(e) => return Err(WorkspaceError::Worded(e)),
    };
    crate::sys::interrupt::pause("prove-before-aside");
    let aside = crate::workspace::aside::move_aside(fd, parents, root)?;
    crate::sys::interrupt::pause("prove-aside");
    Ok(Some(aside))
}

/// Remove the task's workspace `aside` once `compared` says it holds what
/// was read: renamed to the trash's entry name, unregistered, then
/// deleted here (when `in_place`, or small) or left to the background
/// deleter; otherwise moved back to its place and kept.
pub fn finish_removal(
    common_dir: &Path,
    task: &crate::record::batch::Task,
    aside: crate::workspace::aside::Aside,
    compared: Result<crate::workspace::aside::Compared>,
    in_place: bool,
) -> Result<Proof> {
    let (root, worktree_id) = (task.root.as_path(), task.worktree_id.as_str());
    let compared = match compared {
        Ok(c) => c,
        // Unproven: back where it was, kept.
        Err(e) => {
            return match aside.back() {
                Ok(()) => Err(e),
                Err(path) => Ok(Proof::LeftAside(path)),
            }
        }
    };
    if compared == crate::workspace::aside::Compared::Changed {
        return Ok(match aside.back() {
            Ok(()) => Proof::Changed,
            Err(path) => Proof::LeftAside(path),
        });
    }
    let small = index_entries(common_dir, worktree_id).is_some_and(|n| n <= REMOVE_IN_PLACE_MAX);
    let trashed = aside.into_trash()?;
    unregister(common_dir, root, worktree_id)?;
    let trash = trashed.trash.path().to_path_buf();
    // Deleted here when asked or small; what cannot be deleted now is
    // proven and named for the deleter: it is left to it.
    let left = !(in_place || small) || trashed.delete().is_err();
    remove_empty_parents(root, Reach::Beneath);
    Ok(Proof::Removed(left.then_some(trash)))
}

/// For a workspace handed on rather than removed (the pool's park): moved
/// back to its place whatever `compared` says; `Err(path)` when it could
/// not go back (its place was taken meanwhile) and stays aside there.
pub fn finish_in_place(
    aside: crate::workspace::aside::Aside,
    compared: Result<crate::workspace::aside::Compared>,
) -> Result<std::result::Result<crate::workspace::aside::Compared, PathBuf>> {
    match aside.back() {
        Ok(()) => compared.map(Ok),
        Err(path) => Ok(Err(path)),
    }
}

/// The number of entries the workspace's index lists (its header), if readable.
fn index_entries(common_dir: &Path, worktree_id: &str) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(Registration::new(common_dir, worktree_id).index_file())
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    (&head[..4] == b"DIRC").then(|| u32::from_be_bytes([head[8], head[9], head[10], head[11]]))
}

/// Unregister-free hand-over for `apply --keep`: the workspace stays as an
/// ordinary registered worktree, unlocked, no longer owned by a batch.
pub fn release(common_dir: &Path, worktree_id: &str) -> Result<()> {
    if let Some(root) = registered_location(common_dir, worktree_id) {
        crate::workspace::submodules::release(common_dir, &root, worktree_id)?;
    }
    let locked = Registration::new(common_dir, worktree_id).locked_file();
    match std::fs::remove_file(&locked) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(WorkspaceError::io("unlock", &locked)(source)),
    }
}

/// Remove a workspace's registration, and its submodules' (a missing one
/// is no error).
fn unregister(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<()> {
    crate::workspace::submodules::unregister(common_dir, root, worktree_id)?;
    let reg = registration(common_dir, worktree_id);
    match std::fs::remove_dir_all(&reg) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(WorkspaceError::io("remove", &reg)(source)),
    }
    Ok(())
}
