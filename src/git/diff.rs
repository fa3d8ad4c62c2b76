//! Comparing two trees path by path (files, symlinks; never folders).
//!
//! Owns: the list of leaf paths that differ between two trees ([`trees`]),
//! and the same list bounded ([`bounded`]: a comparison that stops past
//! the limit of design §3.18 "Limits", for every tree a worker made: a
//! remote or kept proposal, an undo entry, so that a path bomb costs at
//! most that many entries of time and memory), and its error (`DiffError`,
//! the gix error as its cause); the pathspec that lets a tree-to-index
//! status see the whole tree ([`whole_tree`]).
//! Never: reads or writes the working tree; words a help line or decides an
//! error code (`ops::explain` does).

use gix::bstr::BString;
use gix::objs::tree::EntryKind;
use gix::ObjectId;

/// Two trees the git library could not read or compare. The message is the
/// `Display` followed by the cause, as `ops::explain` words it.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("cannot read tree")]
    ReadTree {
        #[source]
        source: gix::Error,
    },
    #[error("cannot compare trees")]
    Compare {
        #[source]
        source: gix::Error,
    },
    /// [`bounded`] passed its bound at `path` (design §3.18 "Limits"): the
    /// tree brings more changed paths (or folders) than any task may.
    #[error("more than {max} changed paths (or folders), the bound passed at {path}")]
    TooMany { path: BString, max: u64 },
}

type Result<T, E = DiffError> = std::result::Result<T, E>;

/// One leaf path that differs: its entry before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    pub path: BString,
    pub old: Option<(EntryKind, ObjectId)>,
    pub new: Option<(EntryKind, ObjectId)>,
}

/// Leaf paths that differ between `old` and `new`, sorted by path. For
/// trees made from the user's own files (the source, a workspace read
/// from disk, a baseline); a tree a worker made goes through [`bounded`].
pub fn trees(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<Vec<PathChange>> {
    walk(repo, old, new, u64::MAX)
}

/// [`trees`], stopping with [`DiffError::TooMany`] once more than the
/// bound of design §3.18 "Limits" (`validate::max_changed`) of files and
/// symlinks added or changed (each counted under every name it appears at,
/// as `validate` counts them), or as many removed, or as many folders on
/// either side, were seen: a tree repeating one folder under many names,
/// on either side, costs at most that many entries of time and memory,
/// however many it expands to.
pub fn bounded(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<Vec<PathChange>> {
    walk(repo, old, new, crate::git::validate::max_changed())
}

/// gix's tree diff recording changes (paths tracked, no rename tracking),
/// cancelled past `max` of any count: leaves added or changed, leaves
/// removed, folders added or changed, folders removed. It walks breadth
/// first and queues each changed folder, so the counts bound its memory;
/// folders are not recorded (only leaves are returned).
struct Counting {
    inner: gix::diff::tree::Recorder,
    max: u64,
    /// [new leaves, removed leaves, new folders, removed folders].
    counts: [u64; 4],
    /// Where the bound was passed.
    over: Option<BString>,
}

impl gix::diff::tree::Visit for Counting {
    fn pop_front_tracked_path_and_set_current(&mut self) {
        self.inner.pop_front_tracked_path_and_set_current()
    }
    fn push_back_tracked_path_component(&mut self, component: &gix::bstr::BStr) {
        self.inner.push_back_tracked_path_component(component)
    }
    fn push_path_component(&mut self, component: &gix::bstr::BStr) {
        self.inner.push_path_component(component)
    }
    fn pop_path_component(&mut self) {
        self.inner.pop_path_component()
    }
    fn visit(&mut self, change: gix::diff::tree::visit::Change) -> gix::diff::tree::visit::Action {
        use gix::diff::tree::visit::Change as V;
        let (folder, removed) = match &change {
            V::Addition { entry_mode, .. } => (entry_mode.is_tree(), false),
            V::Deletion { entry_mode, .. } => (entry_mode.is_tree(), true),
            V::Modification {
                previous_entry_mode,
                entry_mode,
                ..
            } => (previous_entry_mode.is_tree() || entry_mode.is_tree(), false),
        };
        let count = &mut self.counts[usize::from(folder) * 2 + usize::from(removed)];
        *count += 1;
        if *count > self.max {
            self.over = Some(self.inner.path_clone());
            return std::ops::ControlFlow::Break(());
        }
        // A folder's own change is never returned: only what is below it.
        if folder {
            let leaf_too = matches!(&change, V::Modification { previous_entry_mode, entry_mode, .. }
                if !previous_entry_mode.is_tree() || !entry_mode.is_tree());
            if !leaf_too {
                return std::ops::ControlFlow::Continue(());
            }
        }
        self.inner.visit(change)
    }
}

fn walk(repo: &gix::Repository, old: ObjectId, new: ObjectId, max: u64) -> Result<Vec<PathChange>> {
    if old == new {
        return Ok(Vec::new());
    }
    let read = |source: gix::Error| DiffError::ReadTree { source };
    let old_tree = repo.find_tree(old).map_err(read)?;
    let new_tree = repo.find_tree(new).map_err(read)?;
    // The tree diff itself, paths tracked, no rename tracking: what
    // `diff_tree_to_tree` runs, without the blob resource cache it would
    // set up first (attributes from the whole index) for renames.
    let mut counting = Counting {
        inner: gix::diff::tree::Recorder::default(),
        max,
        counts: [0; 4],
        over: None,
    };
    let diffed = gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old_tree.data, old_tree.id.kind()),
        gix::objs::TreeRefIter::from_bytes(&new_tree.data, new_tree.id.kind()),
        &mut gix::diff::tree::State::default(),
        &repo.objects,
        &mut counting,
    );
    if let Some(path) = counting.over.take() {
        return Err(DiffError::TooMany { path, max });
    }
    diffed.map_err(|e| DiffError::Compare {
        source: gix::Error::from_error(e),
    })?;
    let mut out: Vec<PathChange> = Vec::new();
    use gix::diff::tree::recorder::Change as C;
    for c in counting.inner.records {
        let (path, old, new) = match c {
            C::Addition {
                path,
                entry_mode,
                oid,
                ..
            } => (path, None, Some((entry_mode.kind(), oid))),
            C::Deletion {
                path,
                entry_mode,
                oid,
                ..
            } => (path, Some((entry_mode.kind(), oid)), None),
            C::Modification {
                path,
                previous_entry_mode,
                previous_oid,
                entry_mode,
                oid,
            } => (
                path,
                Some((previous_entry_mode.kind(), previous_oid)),
                Some((entry_mode.kind(), oid)),
            ),
        };
        let leaf = |e: Option<(EntryKind, ObjectId)>| e.filter(|(k, _)| *k != EntryKind::Tree);
        let (old, new) = (leaf(old), leaf(new));
        if old.is_none() && new.is_none() {
            continue;
        }
        out.push(PathChange { path, old, new });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    // A path can show up twice around a file<->folder switch: merge such pairs.
    out.dedup_by(|later, earlier| {
        if later.path == earlier.path {
            earlier.old = earlier.old.or(later.old);
            earlier.new = earlier.new.or(later.new);
            true
        } else {
            false
        }
    });
    Ok(out)
}

/// A pathspec matching the whole tree of `repo`, wherever the command runs:
/// gix's default pathspec (`None`) matches only below the caller's folder.
/// For `tree_index_status`.
pub fn whole_tree(repo: &gix::Repository) -> std::result::Result<gix::Pathspec<'_>, gix::Error> {
    repo.pathspec(
        false,
        None::<&str>,
        false,
        &gix::index::State::new(repo.object_hash()),
        gix::worktree::stack::state::attributes::Source::IdMapping,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix::objs::tree::{Entry, EntryMode};

    /// A tree naming `below` (`mode`) `fan` times, in `repo`.
    fn fan(repo: &gix::Repository, fan: usize, mode: EntryMode, below: ObjectId) -> ObjectId {
        let mut entries: Vec<Entry> = (0..fan)
            .map(|i| Entry {
                mode,
                filename: format!("n{i:03}").into(),
                oid: below,
            })
            .collect();
        entries.sort();
        repo.write_object(gix::objs::Tree { entries })
            .unwrap()
            .detach()
    }

    /// `10^depth` leaves (a file, or an empty folder) from `depth + 1`
    /// objects.
    fn nest(repo: &gix::Repository, depth: usize, file: bool) -> ObjectId {
        let (mut mode, mut id) = if file {
            (
                EntryKind::Blob.into(),
                repo.write_blob(b"x\n").unwrap().detach(),
            )
        } else {
            let empty = gix::objs::Tree {
                entries: Vec::new(),
            };
            (
                EntryKind::Tree.into(),
                repo.write_object(empty).unwrap().detach(),
            )
        };
        for _ in 0..depth {
            id = fan(repo, 10, mode, id);
            mode = EntryKind::Tree.into();
        }
        id
    }

    fn repo() -> (tempfile::TempDir, gix::Repository) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = gix::init_bare(tmp.path()).unwrap();
        (tmp, repo)
    }

    #[test]
    fn the_bounded_walk_stops_past_the_bound_on_either_side() {
        let (_tmp, repo) = repo();
        let empty = repo.empty_tree().id;
        // 1000 files below 111 folders.
        let bomb = nest(&repo, 3, true);
        assert_eq!(walk(&repo, empty, bomb, 1000).unwrap().len(), 1000);
        let Err(DiffError::TooMany { path, max }) = walk(&repo, empty, bomb, 999) else {
            panic!("not stopped");
        };
        assert_eq!(max, 999);
        assert!(path.starts_with(b"n"), "{path}");
        // Removed paths are bounded apart: a bomb on either side stops.
        assert!(matches!(
            walk(&repo, bomb, empty, 999),
            Err(DiffError::TooMany { .. })
        ));
        assert_eq!(walk(&repo, bomb, empty, 1000).unwrap().len(), 1000);
        let other = nest(&repo, 2, false);
        let both = fan(&repo, 2, EntryKind::Tree.into(), other);
        assert_eq!(walk(&repo, bomb, both, 1000).unwrap().len(), 1000);
        assert_eq!(trees(&repo, bomb, empty).unwrap().len(), 1000);
    }

    #[test]
    fn folders_count_against_the_bound_though_none_is_returned() {
        let (_tmp, repo) = repo();
        let empty = repo.empty_tree().id;
        // No file: 1000 empty folders below 110 more.
        let bomb = nest(&repo, 3, false);
        assert_eq!(walk(&repo, empty, bomb, 1110).unwrap(), Vec::new());
        assert!(matches!(
            walk(&repo, empty, bomb, 1109),
            Err(DiffError::TooMany { .. })
        ));
    }

    #[test]
    fn the_count_before_any_walk_costs_the_distinct_trees_only() {
        let (_tmp, repo) = repo();
        // A billion files from 10 objects: counted, never expanded.
        let bomb = nest(&repo, 9, true);
        let over = crate::git::validate::too_many(&repo, None, bomb)
            .unwrap()
            .expect("over the bound");
        assert_eq!(over.why, crate::git::validate::TOO_MANY);
        let small = nest(&repo, 2, true);
        assert_eq!(
            crate::git::validate::too_many(&repo, None, small).unwrap(),
            None
        );
    }
}
