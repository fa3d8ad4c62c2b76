//! The snapshot proper (`take::run`), as a sequence of steps: read the index, merge
//! the stat cache, walk the status, hash what changed on disk through the
//! clean filters, leave out the paths git refuses, write the tree, and hand
//! back the index to rebuild and the cache to refresh.
//! Never: writes the worktree's index, a ref or a working-tree file, or the
//! stat cache itself (the callers in the snapshot's `mod.rs` do that).

use std::collections::BTreeMap;
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Mode, Stat};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use super::cache::{merge_cache, refreshed_cache, Merged, Probe, Refresh};
use super::indexes::{
    head_index, index_is_head, unflag_for_workspace, user_index, workspace_index,
};
use super::status::{walk, Collect, OnDisk};
use super::SnapshotError;
use super::{display_root, git_error, Edit, Rebuilt, Side, Snapshot};

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// What a file hashed from disk recorded: its index entry, kind, blob and
/// the stat data taken before it was read (for the refreshed stat cache).
type Recorded = Vec<(usize, EntryKind, ObjectId, Stat)>;

/// How a task workspace's snapshot uses git-delegate's own stat record
/// (design §3.20, `vouch`).
#[derive(Clone, Copy, Default)]
pub(super) struct Own<'a> {
    /// The record: the only stat data the snapshot trusts.
    pub(super) record: Option<&'a gix::index::State>,
    /// Hand back the record of what it read (`Ran::vouched`).
    pub(super) vouch: bool,
}

/// What [`run`] made.
pub(super) struct Ran {
    pub(super) snap: Snapshot,
    pub(super) refresh: Refresh,
    pub(super) rebuilt: Option<Rebuilt>,
    pub(super) vouched: Option<gix::index::State>,
}

/// The snapshot proper. `cache`: a stat cache to merge into the user's
/// index; `probe`: given when a refreshed cache may be written; `own`: a
/// workspace's own stat record.
pub(super) fn run(
    repo: &gix::Repository,
    cache: Option<&Path>,
    probe: Option<&Probe>,
    side: Side,
    own: Own<'_>,
) -> Result<Ran> {
    let git = |what: &'static str| git_error(repo, what);
    let head_tree = repo
        .head_tree_id_or_empty()
        .map_err(git("cannot read HEAD"))?
        .detach();
    let stat_opts = repo
        .stat_options()
        .map_err(git("cannot read the stat options"))?;
    let (mut index, unusable) = read_index(repo, side, head_tree)?;
    let merged = merge_stat_cache(repo, &mut index, cache, stat_opts);
    let used = merged.used;
    if side == Side::Workspace {
        unflag_for_workspace(repo, &mut index);
        if let Some(record) = own.record {
            super::vouch::distrust(&mut index, record);
        }
    }
    // The clock before anything is read: what it vouches for (design §3.20).
    let clock = match (own.vouch, repo.workdir()) {
        (true, Some(root)) => super::vouch::Clock::at(root),
        _ => None,
    };
    // HEAD -> index costs reading every tree of HEAD. git's cache tree can
    // tell that the user's index holds HEAD's tree; then the only entries
    // that differ from HEAD are those the stat cache gave other content.
    let from_cache: Option<BTreeMap<BString, Edit>> =
        index_is_head(&index, head_tree).then(|| merged.changed.into_iter().collect());

    let (staged, outcome, mut collect) = walk(repo, &index, head_tree, from_cache, side)?;

    // Files status itself had to read (stat data differed, or racily clean).
    let mut hashed = outcome.tracked_file_modification.worktree_files_read;
    // Hash what changed on disk through the clean filters.
    let mut edits: BTreeMap<BString, Edit> = staged;
    let (recorded, disk) = hash_changes(repo, &index, &mut collect, &mut edits, &mut hashed)?;
    let invalid = leave_out_invalid(repo, side, &mut edits)?;
    let changes = edits.len();
    let tree = write_tree(repo, head_tree, &edits)?;

    let rebuilt = unusable.map(|cause| rebuilt_index(&index, &collect, cause));
    // Only a record of exactly the tree written: none beside what was left out.
    let vouched = match clock {
        Some(clock) if invalid.is_empty() && collect.nested_repos.is_empty() => {
            super::vouch::vouch(index.clone(), &collect.refreshed, &disk, clock)
        }
        _ => None,
    };
    let refresh = match probe {
        Some(probe) => refreshed_cache(
            index,
            probe,
            &collect.refreshed,
            &recorded,
            cache.is_some(),
            used,
        ),
        None => Refresh::Keep,
    };
    Ok(Ran {
        snap: Snapshot {
            tree,
            head_tree,
            changes,
            nested_repos: collect.nested_repos,
            hashed,
            invalid,
        },
        refresh,
        rebuilt,
        vouched,
    })
}

/// Step 1: the index the snapshot reads, and why a workspace's own could not
/// be used (then it is its HEAD's tree without stat data).
fn read_index(
    repo: &gix::Repository,
    side: Side,
    head_tree: ObjectId,
) -> Result<(gix::index::State, Option<String>)> {
    let (mut index, unusable) = match side {
        Side::Source => (user_index(repo)?, None),
        Side::Workspace => match workspace_index(repo) {
            Ok(index) => (index, None),
            Err(cause) => (head_index(repo, head_tree)?, Some(cause)),
        },
    };
    // design §3.15: a sparse index is expanded where the snapshot needs
    // every path (the HEAD -> index diff, a workspace's files on disk).
    if index.is_sparse() && (side == Side::Workspace || !index_is_head(&index, head_tree)) {
        crate::git::sparse::unsparse(repo, &mut index)?;
    }
    Ok((index, unusable))
}

/// Step 2: merge the stat cache at `cache` (if any, and readable) into `index`.
fn merge_stat_cache(
    repo: &gix::Repository,
    index: &mut gix::index::State,
    cache: Option<&Path>,
    stat_opts: gix::index::entry::stat::Options,
) -> Merged {
    let cache_state = cache.and_then(|p| {
        gix::index::File::at(p, repo.object_hash(), false, Default::default())
            .ok()
            .map(gix::index::State::from)
    });
    // Without a cache, gix applies the racy rule against the user's index timestamp itself.
    match &cache_state {
        Some(c) => merge_cache(index, c, stat_opts),
        None => Merged::default(),
    }
}

/// What changed on disk, per path: what it became (`None`: gone, or
/// nothing git tracks) and the stat data taken before it was read.
type Disk = Vec<(BString, Edit, Option<Stat>)>;

/// Step 4: hash what the status found changed on disk through the clean
/// filters into `edits`, counting each file read in `hashed`; returns what
/// the tracked files hashed recorded, and every change on disk.
fn hash_changes(
    repo: &gix::Repository,
    index: &gix::index::State,
    collect: &mut Collect,
    edits: &mut BTreeMap<BString, Edit>,
    hashed: &mut usize,
) -> Result<(Recorded, Disk)> {
    let git = |what: &'static str| git_error(repo, what);
    let mut recorded: Recorded = Vec::new();
    let mut disk: Disk = Vec::new();
    // `core.symlinks = false` (design §3.15): a plain file where the index
    // has a symlink stands in for it, holding its target; it stays a link.
    let symlinks = repo
        .filesystem_options()
        .map_err(git("cannot read core.symlinks"))?
        .symlink;
    if !collect.on_disk.is_empty() {
        // The filters see the same index as the status did (gix's
        // `filter_pipeline` would read the user's index once more).
        let mut pipeline = crate::git::blob::add_pipeline(repo, index)?;
        for (path, what) in std::mem::take(&mut collect.on_disk) {
            let mut taken = None;
            let edit = match what {
                OnDisk::Gone => None,
                OnDisk::Tracked(_) | OnDisk::Other => {
                    *hashed += 1;
                    let (mut edit, stat) = hash_file(repo, &mut pipeline, path.as_bstr(), index)?;
                    if let (OnDisk::Tracked(idx), Some((kind, _))) = (&what, &mut edit) {
                        let stand_in = !symlinks
                            && matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable)
                            && index.entries().get(*idx).map(|e| e.mode) == Some(Mode::SYMLINK);
                        if stand_in {
                            *kind = EntryKind::Link;
                        }
                    }
                    if let (OnDisk::Tracked(idx), Some((kind, id)), Some(stat)) =
                        (&what, edit, stat)
                    {
                        recorded.push((*idx, kind, id, stat));
                    }
                    taken = stat;
                    edit
                }
            };
            disk.push((path.clone(), edit, taken));
            edits.insert(path, edit);
        }
    }
    Ok((recorded, disk))
}

/// Step 5 (design §3.18): a path git refuses never enters a tree. A
/// workspace's are left out and named (its task is refused alone); a
/// source's stop the command with a diagnostic naming them.
fn leave_out_invalid(
    repo: &gix::Repository,
    side: Side,
    edits: &mut BTreeMap<BString, Edit>,
) -> Result<Vec<crate::git::validate::Invalid>> {
    let mut invalid: Vec<crate::git::validate::Invalid> = Vec::new();
    edits.retain(|path, edit| {
        let Some((kind, _)) = edit else {
            return true;
        };
        match crate::git::validate::path(path.as_bstr(), *kind) {
            Some(why) => {
                invalid.push(crate::git::validate::Invalid {
                    path: path.clone(),
                    why,
                });
                false
            }
            None => true,
        }
    });
    if side == Side::Source && !invalid.is_empty() {
        let root = repo.workdir().unwrap_or(repo.git_dir());
        return Err(crate::git::validate::in_working_tree(root, &invalid).into());
    }
    Ok(invalid)
}

/// Step 6: `head_tree` with `edits` applied, written to the object store.
fn write_tree(
    repo: &gix::Repository,
    head_tree: ObjectId,
    edits: &BTreeMap<BString, Edit>,
) -> Result<ObjectId> {
    let git = |what: &'static str| git_error(repo, what);
    Ok(if edits.is_empty() {
        head_tree
    } else {
        let mut editor = repo
            .edit_tree(head_tree)
            .map_err(git("cannot edit the tree"))?;
        // Removals first: a file that became a folder is removed, then its children added.
        for (path, edit) in edits {
            if edit.is_none() {
                editor
                    .remove(path.as_bstr())
                    .map_err(git("cannot edit the tree"))?;
            }
        }
        for (path, edit) in edits {
            if let Some((kind, id)) = edit {
                editor
                    .upsert(path.as_bstr(), *kind, *id)
                    .map_err(git("cannot edit the tree"))?;
            }
        }
        editor
            .write()
            .map_err(git("cannot write the tree"))?
            .detach()
    })
}

/// Step 7: the index a workspace whose own was unusable should get.
fn rebuilt_index(index: &gix::index::State, collect: &Collect, cause: String) -> Rebuilt {
    // Stat data for the files whose content is the entry's; the others
    // keep none (git reads them).
    let mut index = index.clone();
    let entries = index.entries_mut();
    for (idx, stat) in &collect.refreshed {
        if let Some(e) = entries.get_mut(*idx) {
            e.stat = *stat;
        }
    }
    Rebuilt { cause, index }
}

/// Hash one worktree file; `None` if it vanished or cannot be tracked. Also
/// returns its stat data, taken before the file was read.
fn hash_file(
    repo: &gix::Repository,
    pipeline: &mut gix::filter::Pipeline<'_>,
    path: &BStr,
    index: &gix::index::State,
) -> Result<(Edit, Option<Stat>)> {
    // Big files are streamed (never whole in memory) into the object store
    // itself, even when `repo` keeps new objects in memory.
    match crate::git::blob::worktree_file_to_object(repo, pipeline, path, index) {
        Ok(Some((id, kind, md))) => Ok(match kind {
            EntryKind::Commit | EntryKind::Tree => (None, None),
            k => (Some((k, id)), Some(crate::git::stat::of_metadata(&md))),
        }),
        Ok(None) => Ok((None, None)),
        Err(e) => {
            Err(
                crate::git::blob::store_failure(repo, Path::new(&display_root(repo)), path, e)
                    .into(),
            )
        }
    }
}
