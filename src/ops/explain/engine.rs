//! The words of the engine's middle layers: `From<XError> for Error` for
//! the typed errors of `snapshot/`, `writeback/` and `merge/`, as
//! `ops::explain`'s own file does for the floor, `git/` and `record/`
//! (docs/architecture.md "Errors").
//!
//! Owns: which code, exit status and help each of those errors has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`
//! (`Error::io`, `Error::git`).

use crate::error::{Code, Error};
use crate::snapshot::SnapshotError;

/// A snapshot's step inside gix is `delegate::git` (or a full disk,
/// read-only filesystem or denied permission inside it, named for what it
/// is); a touched path that cannot be read, an I/O error named by its
/// cause; a rebuilt index that cannot be written, `delegate::io`; the
/// blob and sparse checkout errors, their own words.
impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Error {
        let message = e.to_string();
        match e {
            SnapshotError::Step { source, .. }
            | SnapshotError::Read { source, .. }
            | SnapshotError::Git { source, .. } => Error::git(message, source),
            SnapshotError::Unexpected { root, what } => {
                Error::git(format!("snapshot of {root}"), what)
            }
            SnapshotError::Panicked => Error::state(Code::Internal, message, "report this bug"),
            SnapshotError::ReadPath { source, .. } => Error::io(message, source),
            SnapshotError::Reindex { .. } => Error::state(
                Code::Io,
                message,
                "check the permissions of that folder; its work is read from its files either way",
            ),
            SnapshotError::Blob(e) => e.into(),
            SnapshotError::Sparse(e) => e.into(),
        }
    }
}
