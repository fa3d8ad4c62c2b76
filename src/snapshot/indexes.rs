//! The indexes a snapshot reads: the user's (`user_index`, checksum not
//! verified, as git), a workspace's (`workspace_index`, verified) and the
//! one a workspace whose own is unusable is read with (`head_index`); what
//! an index's flags mean in a workspace (`unflag_for_workspace`); whether an
//! index holds exactly HEAD (`index_is_head`, `head_entries`, `holds_exactly`).
//! Never: writes an index; the ones it reads stay byte-for-byte unchanged.

use std::path::Path;
use std::sync::{Arc, Mutex};

use gix::bstr::ByteSlice;
use gix::index::entry::{Flags, Mode};
use gix::ObjectId;

use super::display_root;
use super::SnapshotError;

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// Read the worktree's index (empty when there is none). Like git, and
/// unlike gix's default, the trailing checksum is not verified on read (it
/// costs a SHA-1 pass over the whole file); the entries are still decoded
/// and checked for structure.
pub(super) fn user_index(repo: &gix::Repository) -> Result<gix::index::State> {
    let git = |source: gix::Error| SnapshotError::Read {
        root: display_root(repo),
        source,
    };
    let path = repo.index_path();
    if path.exists() {
        match gix::index::File::at(&path, repo.object_hash(), true, Default::default()) {
            Ok(f) => return Ok(f.into()),
            // Removed in between: treat as missing, like `index_or_empty`.
            Err(_) if !path.exists() => {}
            Err(e) => return Err(git(e)),
        }
    }
    Ok(gix::index::State::new(repo.object_hash()))
}

/// Read a workspace's index, checksum verified (a workspace's index is
/// small next to the files it describes, and one that lies must not be
/// trusted as a stat cache); `Err` with the cause when it is missing or
/// cannot be used.
pub(super) fn workspace_index(
    repo: &gix::Repository,
) -> std::result::Result<gix::index::State, String> {
    let path = repo.index_path();
    match gix::index::File::at(&path, repo.object_hash(), false, Default::default()) {
        Ok(f) => Ok(f.into()),
        Err(_) if !path.exists() => Err(format!("{} is missing", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The index a workspace whose own cannot be used is read with: its HEAD
/// tree, no stat data, skip-worktree where its sparse checkout leaves a
/// path out (design §3.15).
pub(super) fn head_index(repo: &gix::Repository, head_tree: ObjectId) -> Result<gix::index::State> {
    let mut index: gix::index::State = repo
        .index_from_tree(&head_tree)
        .map_err(|source| SnapshotError::Step {
            root: display_root(repo),
            step: "cannot read HEAD's tree",
            source,
        })?
        .into();
    crate::git::sparse::mark_workspace(repo, &mut index)?;
    Ok(index)
}

/// Does the index's cache tree (git's TREE extension) say the index holds
/// exactly `head_tree`? git keeps it valid only while no entry differs from
/// the tree it names; the entry count is checked as well, as a guard against
/// a stale extension written by another tool.
pub(super) fn index_is_head(index: &gix::index::State, head_tree: ObjectId) -> bool {
    let Some(root) = index.tree() else {
        return false;
    };
    let entries = index
        .entries()
        .iter()
        .filter(|e| e.stage_raw() == 0 && !e.flags.contains(Flags::INTENT_TO_ADD))
        .count();
    let all_plain = index.entries().iter().all(|e| e.stage_raw() == 0);
    all_plain
        && root.id == head_tree
        && root.num_entries.and_then(|n| usize::try_from(n).ok()) == Some(entries)
}

/// The index entries of `tree` (as `index_from_tree` makes them), kept for
/// the next snapshot of a working tree with the same HEAD: apply snapshots
/// its workspaces in parallel, every one on the batch's baseline.
pub(super) fn head_entries(
    repo: &gix::Repository,
    tree: ObjectId,
) -> Option<Arc<gix::index::State>> {
    static LAST: Mutex<Option<(ObjectId, Arc<gix::index::State>)>> = Mutex::new(None);
    // Held while the first one is built: the others would build the same.
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, state)) = last.as_ref().filter(|(id, _)| *id == tree) {
        return Some(Arc::clone(state));
    }
    let state: Arc<gix::index::State> = Arc::new(repo.index_from_tree(&tree).ok()?.into());
    *last = Some((tree, Arc::clone(&state)));
    Some(state)
}

/// Whether `index` holds exactly the entries of `head` (same paths, modes
/// and ids, all merged, none intent-to-add): then the HEAD -> index diff
/// (`tree_index_status`, which compares exactly those) is empty.
pub(super) fn holds_exactly(index: &gix::index::State, head: &gix::index::State) -> bool {
    index.entries().len() == head.entries().len()
        && index.entries().iter().zip(head.entries()).all(|(e, h)| {
            e.stage_raw() == 0
                && !e.flags.contains(Flags::INTENT_TO_ADD)
                && e.mode == h.mode
                && e.id == h.id
                && e.path(index) == h.path(head)
        })
}

/// Make a workspace's index flags hide nothing (design §3.2 step 1): clear
/// `assume-unchanged` everywhere, and `skip-worktree` where something is on
/// disk at the entry's path, so that the status compares those files like
/// any other (stat first, then content). A `skip-worktree` entry whose path
/// is absent keeps its flag: it counts at its index content.
pub(super) fn unflag_for_workspace(repo: &gix::Repository, index: &mut gix::index::State) {
    let Some(root) = repo.workdir().map(Path::to_path_buf) else {
        return;
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for e in entries.iter_mut() {
        if !e
            .flags
            .intersects(Flags::ASSUME_VALID | Flags::SKIP_WORKTREE)
        {
            continue;
        }
        e.flags.remove(Flags::ASSUME_VALID);
        // A sparse index's folder entry (design §3.15) stands for the
        // tree it names; files made below it are untracked ones.
        if e.flags.contains(Flags::SKIP_WORKTREE) && e.mode != Mode::DIR {
            let rela = e.path_in(paths);
            let rela = std::os::unix::ffi::OsStrExt::from_bytes(rela.as_bytes());
            let on_disk = root
                .join::<&std::ffi::OsStr>(rela)
                .symlink_metadata()
                .is_ok();
            if on_disk {
                e.flags.remove(Flags::SKIP_WORKTREE);
            }
        }
    }
}
