//! Comparing two trees path by path (files, symlinks; never folders).
//!
//! Owns: the list of leaf paths that differ between two trees, and its
//! error (`DiffError`, the gix error as its cause); the pathspec that lets a
//! tree-to-index status see the whole tree ([`whole_tree`]).
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
}

type Result<T, E = DiffError> = std::result::Result<T, E>;

/// One leaf path that differs: its entry before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    pub path: BString,
    pub old: Option<(EntryKind, ObjectId)>,
    pub new: Option<(EntryKind, ObjectId)>,
}

/// Leaf paths that differ between `old` and `new`, sorted by path.
pub fn trees(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<Vec<PathChange>> {
    if old == new {
        return Ok(Vec::new());
    }
    let read = |source: gix::Error| DiffError::ReadTree { source };
    let old_tree = repo.find_tree(old).map_err(read)?;
    let new_tree = repo.find_tree(new).map_err(read)?;
    // The tree diff itself, paths tracked, no rename tracking: what
    // `diff_tree_to_tree` runs, without the blob resource cache it would
    // set up first (attributes from the whole index) for renames.
    let mut recorder = gix::diff::tree::Recorder::default();
    gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old_tree.data, old_tree.id.kind()),
        gix::objs::TreeRefIter::from_bytes(&new_tree.data, new_tree.id.kind()),
        &mut gix::diff::tree::State::default(),
        &repo.objects,
        &mut recorder,
    )
    .map_err(|e| DiffError::Compare {
        source: gix::Error::from_error(e),
    })?;
    let mut out: Vec<PathChange> = Vec::new();
    use gix::diff::tree::recorder::Change as C;
    for c in recorder.records {
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
