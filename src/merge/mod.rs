//! Landing work, in memory (design §3.2 steps 1-3): a workspace as a
//! proposal (`proposal`: commit, ref, and its `git apply --3way`-able patch,
//! `patch`), the 3-way integration of the proposals with the source as it is
//! now (`integrate`), and those steps as every command that lands work runs
//! them (`landing`: the source snapshot, partial or whole, the integration,
//! the write-back check, and the objects persisted).
//!
//! Owns: the failures its files raise themselves (`MergeError`: the object
//! or step and the gix error); each file says what else it owns.
//! Never: imports a module above it (`ops/`, the binary); writes the
//! source's working tree (that is `writeback`, which a caller runs with
//! what `landing` planned); words a help line or decides an error code
//! (`ops::explain` does).

use gix::ObjectId;

pub mod integrate;
pub mod landing;
pub mod patch;
pub mod proposal;

/// Why merging, rendering a patch or copying objects failed.
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
}
