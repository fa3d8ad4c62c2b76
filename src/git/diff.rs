//! Comparing two trees path by path (files, symlinks; never folders).
//!
//! Owns: the list of leaf paths that differ between two trees, and its
//! error (`DiffError`, the gix error as its cause).
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
    /// The diff reported a rename, which it was told not to track.
    #[error("cannot compare trees")]
    UnexpectedRename,
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
    let err = |source: gix::Error| DiffError::Compare { source };
    let read = |source: gix::Error| DiffError::ReadTree { source };
    let old_tree = repo.find_tree(old).map_err(read)?;
    let new_tree = repo.find_tree(new).map_err(read)?;
    let mut opts = gix::diff::Options::default();
    opts.track_path().track_rewrites(None);
    let changes = repo
        .diff_tree_to_tree(&old_tree, &new_tree, opts)
        .map_err(err)?;
    let mut out: Vec<PathChange> = Vec::new();
    use gix::object::tree::diff::ChangeDetached as C;
    for c in changes {
        let (path, old, new) = match c {
            C::Addition {
                location,
                entry_mode,
                id,
                ..
            } => (location, None, Some((entry_mode.kind(), id))),
            C::Deletion {
                location,
                entry_mode,
                id,
                ..
            } => (location, Some((entry_mode.kind(), id)), None),
            C::Modification {
                location,
                previous_entry_mode,
                previous_id,
                entry_mode,
                id,
            } => (
                location,
                Some((previous_entry_mode.kind(), previous_id)),
                Some((entry_mode.kind(), id)),
            ),
            C::Rewrite { .. } => return Err(DiffError::UnexpectedRename),
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
