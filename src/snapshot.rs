//! The snapshot of a working tree: everything on disk that `git add -A` would
//! take (tracked changes, deletions, untracked non-ignored files, modes,
//! symlinks), written as a git tree.
//!
//! Owns: turning a working tree into a tree id, using the worktree's own index
//! only as a stat cache: only files whose stat data differ are hashed, through
//! the same clean filters as `git add`.
//! Never: writes an index, a ref or a working-tree file; the index it reads
//! stays byte-for-byte unchanged.

use std::collections::BTreeMap;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::status::index_worktree::Item as WtItem;
use gix::ObjectId;

use crate::error::{Error, Result};

/// A working tree written as a tree.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree of the working tree.
    pub tree: ObjectId,
    /// The tree of `HEAD` (the empty tree on an unborn branch).
    pub head_tree: ObjectId,
    /// Paths whose content differs from `HEAD` (staged, unstaged, untracked).
    pub changes: usize,
    /// Untracked git repositories inside the working tree: left out (git
    /// would record them as embedded repositories without content).
    pub nested_repos: Vec<BString>,
    /// Files that had to be read (their stat data differed from the index,
    /// or they are new): the cost the index as a stat cache did not save.
    pub hashed: usize,
}

type Edit = Option<(EntryKind, ObjectId)>;

/// Snapshot the working tree of `repo`. Blobs and trees are written to the
/// repository's object store (or to memory, if `repo` keeps objects there).
pub fn snapshot(repo: &gix::Repository) -> Result<Snapshot> {
    let git = |what: &str| {
        let what = what.to_string();
        move |e: gix::Error| Error::git(format!("snapshot of {}: {what}", display_root(repo)), e)
    };
    let index = repo
        .index_or_empty()
        .map_err(git("cannot read the index"))?;
    let head_tree = repo
        .head_tree_id_or_empty()
        .map_err(git("cannot read HEAD"))?
        .detach();
    let mut iter = repo
        .status(gix::progress::Discard)
        .map_err(git("cannot start status"))?
        .index(index.clone().into())
        .untracked_files(gix::status::UntrackedFiles::Files)
        .index_worktree_rewrites(None)
        .index_worktree_submodules(gix::status::Submodule::Given {
            ignore: gix::submodule::config::Ignore::All,
            check_dirty: false,
        })
        .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
        .into_iter(None)
        .map_err(git("cannot compute status"))?;

    // Staged changes (HEAD -> index) first, then what the worktree says on top.
    let mut staged: BTreeMap<BString, Edit> = BTreeMap::new();
    let mut on_disk: BTreeMap<BString, Option<()>> = BTreeMap::new();
    let mut nested_repos = Vec::new();
    for item in iter.by_ref() {
        let item = item.map_err(git("status failed"))?;
        match item {
            gix::status::Item::TreeIndex(change) => {
                use gix::diff::index::ChangeRef;
                match change {
                    ChangeRef::Addition {
                        location,
                        entry_mode,
                        id,
                        ..
                    }
                    | ChangeRef::Modification {
                        location,
                        entry_mode,
                        id,
                        ..
                    } => {
                        staged.insert(
                            location.into_owned(),
                            tree_kind(entry_mode).map(|k| (k, id.into_owned())),
                        );
                    }
                    ChangeRef::Deletion { location, .. } => {
                        staged.insert(location.into_owned(), None);
                    }
                    ChangeRef::Rewrite {
                        source_location,
                        location,
                        entry_mode,
                        id,
                        copy,
                        ..
                    } => {
                        if !copy {
                            staged.insert(source_location.into_owned(), None);
                        }
                        staged.insert(
                            location.into_owned(),
                            tree_kind(entry_mode).map(|k| (k, id.into_owned())),
                        );
                    }
                }
            }
            gix::status::Item::IndexWorktree(item) => match item {
                WtItem::Modification {
                    rela_path, status, ..
                } => {
                    use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
                    match status {
                        EntryStatus::Change(Change::Removed) => {
                            on_disk.insert(rela_path, None);
                        }
                        EntryStatus::Change(Change::SubmoduleModification(_))
                        | EntryStatus::NeedsUpdate(_) => {}
                        EntryStatus::Change(_)
                        | EntryStatus::IntentToAdd
                        | EntryStatus::Conflict { .. } => {
                            on_disk.insert(rela_path, Some(()));
                        }
                    }
                }
                WtItem::DirectoryContents { entry, .. } => {
                    if entry.status == gix::dir::entry::Status::Untracked
                        && entry.disk_kind == Some(gix::dir::entry::Kind::Repository)
                    {
                        nested_repos.push(entry.rela_path.clone());
                    }
                    if entry.status == gix::dir::entry::Status::Untracked
                        && matches!(
                            entry.disk_kind,
                            Some(gix::dir::entry::Kind::File)
                                | Some(gix::dir::entry::Kind::Symlink)
                        )
                    {
                        on_disk.insert(entry.rela_path, Some(()));
                    }
                }
                WtItem::Rewrite { .. } => {
                    return Err(Error::git(
                        format!("snapshot of {}", display_root(repo)),
                        "unexpected rename record from status",
                    ))
                }
            },
        }
    }

    // Files status itself had to read (stat data differed, or racily clean).
    let mut hashed = iter
        .into_outcome()
        .map(|o| {
            o.index_worktree
                .tracked_file_modification
                .worktree_files_read
        })
        .unwrap_or(0);
    // Hash what changed on disk through the clean filters.
    let mut edits: BTreeMap<BString, Edit> = staged;
    if !on_disk.is_empty() {
        let (mut pipeline, _) = repo
            .filter_pipeline(Some(head_tree))
            .map_err(git("cannot set up filters"))?;
        for (path, present) in on_disk {
            let edit = match present {
                None => None,
                Some(()) => {
                    hashed += 1;
                    hash_file(repo, &mut pipeline, path.as_bstr(), &index)?
                }
            };
            edits.insert(path, edit);
        }
    }

    let changes = edits.len();
    let tree = if edits.is_empty() {
        head_tree
    } else {
        let mut editor = repo
            .edit_tree(head_tree)
            .map_err(git("cannot edit the tree"))?;
        // Removals first: a file that became a folder is removed, then its children added.
        for (path, edit) in &edits {
            if edit.is_none() {
                editor
                    .remove(path.as_bstr())
                    .map_err(git("cannot edit the tree"))?;
            }
        }
        for (path, edit) in &edits {
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
    };
    Ok(Snapshot {
        tree,
        head_tree,
        changes,
        nested_repos,
        hashed,
    })
}

/// Hash one worktree file; `None` if it vanished or cannot be tracked.
fn hash_file(
    repo: &gix::Repository,
    pipeline: &mut gix::filter::Pipeline<'_>,
    path: &BStr,
    index: &gix::index::State,
) -> Result<Edit> {
    match pipeline.worktree_file_to_object(path, index) {
        Ok(Some((id, kind, _md))) => Ok(match kind {
            EntryKind::Commit | EntryKind::Tree => None,
            k => Some((k, id)),
        }),
        Ok(None) => Ok(None),
        Err(e) => Err(Error::state(
            "delegate::unreadable_file",
            format!(
                "cannot read {} in {}: {e}",
                crate::paths::quote(path),
                display_root(repo)
            ),
            "make the file readable (or remove it), then run the command again",
        )),
    }
}

fn tree_kind(mode: gix::index::entry::Mode) -> Option<EntryKind> {
    mode.to_tree_entry_mode().map(|m| m.kind())
}

fn display_root(repo: &gix::Repository) -> String {
    repo.workdir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| repo.git_dir().display().to_string())
}
