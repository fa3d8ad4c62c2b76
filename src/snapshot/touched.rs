//! The source's state at the paths the proposals touch: the only part of
//! the source snapshot `S` that integration and write-back can use, read
//! without walking the whole working tree.
//!
//! `F = merge3(baseline, S, I)` takes `S` wherever `I` equals the baseline,
//! so the writes (`F` against `S`), the conflicts and `--strict`'s overlaps
//! all come from the paths `I` changes. `S_touched` is the baseline tree with
//! each touched path set to what a snapshot would record there now (its
//! content through the clean filters, or nothing when it is missing or
//! ignored and untracked). Merged against it, every touched path gets what
//! the full `S` gives it, with one exception: the merge's rename detection
//! pairs deletions and additions of one side, and a touched path that was
//! added or deleted in the source since the baseline could pair with an
//! untouched one. So this gives up (`None`, the caller snapshots the whole
//! source) wherever a touched path's presence differs from the baseline,
//! and wherever the disk at or above a touched path is anything but
//! folders and a file or symlink (a folder where a file was, a file on the
//! way, a nested repository), or its index entry is a conflict, an
//! intent-to-add or skip-worktree one, or names are case-folded (or git is
//! told not to trust exec bits or symlinks on disk).
//!
//! `GIT_DELEGATE_FULL_SOURCE_SNAPSHOT` (test-only) makes apply snapshot the
//! whole source always, so tests can check that both give the same result.
//!
//! Owns: `S_touched`.
//! Never: writes the working tree, the index or refs (blobs it hashes go to
//! the repository given, object memory included).

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use super::SnapshotError;

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// What stands on disk at a path, without following a final symlink.
#[derive(PartialEq, Eq)]
enum Disk {
    Absent,
    Dir,
    /// A regular file or a symlink.
    Leaf,
    Other,
}

fn disk(root: &Path, rela: &BStr) -> Result<Disk> {
    let p = root.join(crate::sys::paths::to_os(rela));
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => Ok(Disk::Dir),
        Ok(m) if m.is_file() || m.file_type().is_symlink() => Ok(Disk::Leaf),
        Ok(_) => Ok(Disk::Other),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(Disk::Absent)
        }
        Err(source) => Err(SnapshotError::ReadPath { path: p, source }),
    }
}

/// `S_touched` for `touched` (paths relative to the source root), or
/// `None` where only a snapshot of the whole source is exact.
pub fn snapshot(
    repo: &gix::Repository,
    baseline_tree: ObjectId,
    touched: &BTreeSet<BString>,
) -> Result<Option<ObjectId>> {
    let git = |what: &'static str| move |source: gix::Error| SnapshotError::Git { what, source };
    let Some(root) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(None);
    };
    // Case-folded names, and modes or links git is told not to trust on
    // disk: only the whole snapshot knows how the index's entries stand in.
    let config = repo.config_snapshot();
    if config.boolean("core.ignoreCase").unwrap_or(false)
        || !config.boolean("core.fileMode").unwrap_or(true)
        || !config.boolean("core.symlinks").unwrap_or(true)
    {
        return Ok(None);
    }
    let index = repo
        .index_or_empty()
        .map_err(git("cannot read the index"))?;
    let baseline = repo
        .find_tree(baseline_tree)
        .map_err(git("cannot read the baseline"))?;
    let mut excludes = repo
        .excludes(
            &index,
            None,
            gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
        )
        .map_err(git("cannot read the ignore rules"))?;
    let mut pipeline = crate::git::blob::add_pipeline(repo, &index)?;

    let mut parents_seen: BTreeSet<BString> = BTreeSet::new();
    let mut edits: Vec<(BString, (EntryKind, ObjectId))> = Vec::new();
    for path in touched {
        if !plain_parents(&root, path, &mut parents_seen)? {
            return Ok(None);
        }
        let in_baseline = baseline
            .lookup_entry_by_path(crate::sys::paths::to_os(path.as_bstr()))
            .map_err(git("cannot read the baseline"))?
            .map(|e| (e.mode().kind(), e.object_id()));
        if matches!(in_baseline, Some((EntryKind::Tree | EntryKind::Commit, _))) {
            return Ok(None);
        }
        let Some(entry) = index_entry(&index, path) else {
            return Ok(None);
        };
        let ignored = |path: &BStr| -> Result<bool> {
            Ok(entry.is_none()
                && excludes
                    .at_entry(path, Some(gix::index::entry::Mode::FILE))
                    .map_err(git("cannot read the ignore rules"))?
                    .is_excluded())
        };
        let Some(now) = now_on_disk(repo, &root, &index, &mut pipeline, path, ignored)? else {
            return Ok(None);
        };
        // Added or deleted since the baseline: a rename could involve it.
        if now.is_some() != in_baseline.is_some() {
            return Ok(None);
        }
        if let (Some(now), true) = (now, now != in_baseline) {
            edits.push((path.clone(), now));
        }
    }
    if edits.is_empty() {
        return Ok(Some(baseline_tree));
    }
    let mut editor = repo
        .edit_tree(baseline_tree)
        .map_err(git("cannot edit the tree"))?;
    for (path, (kind, id)) in &edits {
        editor
            .upsert(path.as_bstr(), *kind, *id)
            .map_err(git("cannot edit the tree"))?;
    }
    Ok(Some(
        editor
            .write()
            .map_err(git("cannot write the tree"))?
            .detach(),
    ))
}

/// Whether the folders above `path` are folders (or nothing) all the way
/// down, none a repository of its own (`seen`: the parents found so).
fn plain_parents(root: &Path, path: &BString, seen: &mut BTreeSet<BString>) -> Result<bool> {
    for (i, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
        let parent = path[..i].as_bstr();
        if seen.contains(parent) {
            continue;
        }
        match disk(root, parent)? {
            Disk::Dir => {
                if disk(root, [parent.as_bytes(), b"/.git"].concat().as_bstr())? != Disk::Absent {
                    return Ok(false);
                }
            }
            Disk::Absent => break,
            Disk::Leaf | Disk::Other => return Ok(false),
        }
        seen.insert(parent.to_owned());
    }
    Ok(true)
}

/// The index's entry at `path` (`Some(None)`: none); `None` where only a
/// whole snapshot knows how it stands in (conflict stages, intent-to-add,
/// skip-worktree, assume-valid, a gitlink).
fn index_entry<'i>(
    index: &'i gix::index::State,
    path: &BString,
) -> Option<Option<&'i gix::index::Entry>> {
    match index.entry_range(path.as_bstr()) {
        None => Some(None),
        Some(r) if r.len() == 1 => {
            use gix::index::entry::Flags;
            let e = &index.entries()[r.start];
            if e.stage_raw() != 0
                || e.flags
                    .intersects(Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE | Flags::ASSUME_VALID)
                || e.mode == gix::index::entry::Mode::COMMIT
            {
                return None;
            }
            Some(Some(e))
        }
        Some(_) => None, // conflict stages
    }
}

/// What `path` is on disk as a tree entry (`Some(None)`: nothing, or an
/// ignored file); `None` where only a whole snapshot is exact.
fn now_on_disk(
    repo: &gix::Repository,
    root: &Path,
    index: &gix::index::State,
    pipeline: &mut gix::filter::Pipeline<'_>,
    path: &BString,
    ignored: impl FnOnce(&BStr) -> Result<bool>,
) -> Result<Option<Option<(EntryKind, ObjectId)>>> {
    Ok(Some(match disk(root, path.as_bstr())? {
        Disk::Absent => None,
        Disk::Dir | Disk::Other => return Ok(None),
        Disk::Leaf => {
            if ignored(path.as_bstr())? {
                None
            } else {
                match crate::git::blob::worktree_file_to_object(
                    repo,
                    pipeline,
                    path.as_bstr(),
                    index,
                ) {
                    Ok(Some((id, kind, _)))
                        if !matches!(kind, EntryKind::Tree | EntryKind::Commit) =>
                    {
                        Some((kind, id))
                    }
                    Ok(_) => return Ok(None),
                    Err(e) => {
                        return Err(
                            crate::git::blob::store_failure(repo, root, path.as_bstr(), e).into(),
                        )
                    }
                }
            }
        }
    }))
}
