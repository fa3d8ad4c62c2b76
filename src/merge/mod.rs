//! Landing work, in memory (design §3.2 steps 1-3): a workspace as a
//! proposal (`proposal`: commit, ref, and its `git apply --3way`-able patch,
//! `patch`), the 3-way integration of the proposals with the source as it is
//! now (`integrate`), and those steps as every command that lands work runs
//! them (`landing`: the source snapshot, partial or whole, the integration,
//! the write-back check, and the objects persisted).
//!
//! Owns: the room's one error (`MergeError`: the failures its files raise
//! themselves, the object or step and the gix error, and the lower layers'
//! typed errors they pass on); each file says what else it owns.
//! Never: imports a module above it (`ops/`, the binary); writes the
//! source's working tree (that is `writeback`, which a caller runs with
//! what `landing` planned); words a help line or decides an error code
//! (`ops::explain` does).

use gix::ObjectId;

use crate::error::{lower_from, Lower};
use crate::git::commit::CommitError;
use crate::git::diff::DiffError;
use crate::git::refs::RefError;
use crate::git::repo::RepoError;
use crate::git::sparse::SparseError;
use crate::git::validate::ValidateError;
use crate::snapshot::SnapshotError;
use crate::sys::fs::FsError;
use crate::writeback::WritebackError;

pub mod integrate;
pub mod landing;
pub mod patch;
pub mod proposal;

/// Why merging, rendering a patch, recording a proposal or copying objects
/// failed: the room's own failures, and those of the layers below it,
/// wrapped as they are (each worded as its own by `ops::explain`).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A step of a tree merge or a tree read (`what` failed).
    #[error("{what}")]
    Git {
        what: &'static str,
        #[source]
        source: gix::Error,
    },
    /// An object in object memory that cannot be read.
    #[error("cannot read object {id}")]
    ReadObject {
        id: ObjectId,
        #[source]
        source: gix::Error,
    },
    /// An object that cannot be copied into the object store.
    #[error("cannot write object {id}")]
    WriteObject {
        id: ObjectId,
        #[source]
        source: gix::Error,
    },
    /// An object the store took under another id.
    #[error("cannot write object {id}: it was stored as {written}")]
    Misstored { id: ObjectId, written: ObjectId },
    /// An object a patch shows that cannot be read.
    #[error("cannot read object {id} for a patch")]
    PatchObject {
        id: ObjectId,
        #[source]
        source: gix::Error,
    },
    /// A task's recorded base that is no commit id.
    #[error("bad base commit id {hex}")]
    BadBase {
        hex: String,
        #[source]
        source: gix::Error,
    },
    /// The write-back check blocked paths no applied task changes (a bug).
    #[error("the write-back check blocked paths no applied task changes")]
    UnknownBlocked,
    /// What a lower layer failed with, its own words: the write-back
    /// check (`writeback::check`), a snapshot of the source or of a task's
    /// workspace, a task's workspace opened by its path, a proposal's ref
    /// or commit (or a task's own base read), two trees compared, a
    /// proposal's paths checked against what git refuses, the source's
    /// sparse checkout, a patch file written.
    #[error(transparent)]
    Lower(#[from] Lower),
}

lower_from!(
    MergeError: WritebackError,
    SnapshotError,
    RepoError,
    RefError,
    CommitError,
    DiffError,
    ValidateError,
    SparseError,
    FsError,
);
