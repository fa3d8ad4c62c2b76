//! A task workspace's index is a cache (design §3.2 step 1): when it is
//! missing, cannot be decoded or fails its checksum, the snapshot reads the
//! workspace without it (`snapshot::snapshot_workspace_rebuilding`) and this
//! module writes the index that should stand there, so the task's work is
//! never stuck behind it and `git status` works in the workspace again.
//!
//! Owns: what a rebuilt index holds beyond the snapshot's
//! (`snapshot::Rebuilt`: HEAD's tree, sparse skip-worktree bits, fresh stat
//! data): for a task a refresh left `conflicted` (design §3.12), each file
//! it listed as unmerged entries again, stage 2 the file as it is on disk
//! and stage 3 HEAD's (the task's new base), no stage 1 (the old base is
//! not known any more), so `git status` there says "both added" and apply
//! keeps refusing the task until its worker runs `git add`; and writing
//! it, atomically through git's own `index.lock` in the workspace's
//! registration (`<common-dir>/worktrees/<id>/index`), only while the index
//! there is still unusable.
//! Never: runs without the repository lock held by its caller; writes over
//! an index that became usable meanwhile (a worker's `git` wrote one), or
//! while a git command holds `index.lock` (the repair is left for the next
//! command; the snapshot did not need it); writes anything else.

use std::path::Path;

use gix::bstr::ByteSlice;
use gix::index::entry::{Flags, Stage, Stat};

use crate::git::registration::Registration;
use crate::record::batch::{Task, TaskState};
use crate::snapshot::{Rebuilt, Snapshot, SnapshotError};

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// Write `rebuilt` (what the snapshot `snap` of the workspace `ws` of
/// `task` made when its index could not be used) as that workspace's index.
/// `Ok(false)`: left alone (the index is usable now, or `index.lock` is
/// held). Call with the repository lock held.
pub fn write(
    common_dir: &Path,
    task: &Task,
    ws: &gix::Repository,
    snap: &Snapshot,
    rebuilt: Rebuilt,
) -> Result<bool> {
    let mut index = rebuilt.index;
    if task.state == TaskState::Conflicted {
        unmerge(ws, snap, task, &mut index)?;
    }
    let _ = index.remove_tree();
    let _ = index.remove_resolve_undo();
    let path = Registration::new(common_dir, &task.worktree_id).index_file();
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| SnapshotError::Reindex {
        path: path.clone(),
        task: task.name.clone(),
        source,
    };
    let mut lock = match gix::lock::File::acquire_to_update_resource(
        &path,
        gix::lock::acquire::Fail::Immediately,
        None,
        0,
    ) {
        Ok(lock) => lock,
        // A git command in the workspace holds it: that command may be
        // writing a good index right now.
        Err(_) => return Ok(false),
    };
    if usable(&path, ws.object_hash()) {
        return Ok(false);
    }
    let file = gix::index::File::from_state(index, &path);
    file.write_to(&mut lock, gix::index::write::Options::default())
        .map_err(|e| failed(e.into()))?;
    lock.commit().map_err(|e| failed(e.error.into()))?;
    Ok(true)
}

/// Rebuild the index of `task`'s workspace at `real` (its real path, as
/// the identity check found it) when it cannot be used; `Ok(true)` when it
/// was rebuilt. Costs one snapshot of the workspace (every file hashed)
/// only then; a usable index is read once. Call with the repository lock
/// held, before anything reads the index for what it says (unmerged
/// entries: `refresh::unresolved`).
pub fn repair(common_dir: &Path, task: &Task, real: &Path) -> Result<bool> {
    let ws = crate::git::repo::open_worktree(real)?;
    if usable(&ws.index_path(), ws.object_hash()) {
        return Ok(false);
    }
    let (snap, rebuilt) = crate::snapshot::snapshot_workspace_rebuilding(&ws)?;
    match rebuilt {
        Some(rebuilt) => write(common_dir, task, &ws, &snap, rebuilt),
        None => Ok(false),
    }
}

/// Can the index at `path` be read, checksum included (as the workspace
/// snapshot reads it)?
fn usable(path: &Path, hash: gix::hash::Kind) -> bool {
    gix::index::File::at(path, hash, false, Default::default()).is_ok()
}

/// The files a refresh listed for `task`, as unmerged entries of `index`:
/// stage 2 the file in the snapshot (what is on disk), stage 3 HEAD's entry
/// (in `index` at stage 0 so far). A path in neither stays absent.
fn unmerge(
    ws: &gix::Repository,
    snap: &Snapshot,
    task: &Task,
    index: &mut gix::index::State,
) -> Result<()> {
    let git = |source: gix::Error| SnapshotError::Git {
        what: "cannot rebuild a workspace's unmerged entries",
        source,
    };
    let tree = ws.find_tree(snap.tree).map_err(git)?;
    let mut staged = Vec::new();
    for p in &task.conflicted_paths {
        let path = gix::bstr::BStr::new(p.as_bytes());
        let ours = tree
            .lookup_entry_by_path(crate::sys::paths::to_os(path))
            .map_err(git)?
            .filter(|e| !e.mode().is_tree())
            .map(|e| (gix::index::entry::Mode::from(e.mode()), e.object_id()));
        let theirs = index
            .entry_by_path(path)
            .filter(|e| e.stage_raw() == 0)
            .map(|e| (e.mode, e.id));
        for (stage, side) in [(Stage::Ours, ours), (Stage::Theirs, theirs)] {
            if let Some((mode, id)) = side {
                staged.push((path.to_owned(), stage, mode, id));
            }
        }
    }
    let paths: std::collections::HashSet<&[u8]> =
        task.conflicted_paths.iter().map(|p| p.as_bytes()).collect();
    index.remove_entries(|_, path, _| paths.contains(path.as_bytes()));
    for (path, stage, mode, id) in &staged {
        index.dangerously_push_entry(
            Stat::default(),
            *id,
            Flags::from_stage(*stage),
            *mode,
            path.as_bstr(),
        );
    }
    index.sort_entries();
    Ok(())
}
