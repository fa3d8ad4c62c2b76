//! The words of the engine's middle layers: `From<XError> for Error` for
//! the typed errors of `snapshot/` and `merge/` (`writeback/`'s are in
//! `writeback.rs` beside this file), as
//! `ops::explain`'s own file does for the floor, `git/` and `record/`
//! (docs/architecture.md "Errors").
//!
//! Owns: which code, exit status and help each of those errors has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`
//! (`Error::io`, `Error::git`).

use crate::error::{Code, Error, Explain};
use crate::merge::MergeError;
use crate::snapshot::SnapshotError;

/// A snapshot's step inside gix is `delegate::git` (or a full disk,
/// read-only filesystem or denied permission inside it, named for what it
/// is); a touched path that cannot be read, an I/O error named by its
/// cause; a rebuilt index that cannot be written, `delegate::io`; the
/// blob and sparse checkout errors, their own words.
impl Explain for SnapshotError {
    fn explain(self) -> Error {
        let e = self;
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
            SnapshotError::Lower(e) => e.explain(),
        }
    }
}

/// Merging trees, rendering a patch, copying objects: `delegate::git` (or
/// a full disk, read-only filesystem or denied permission inside gix,
/// named for what it is); the write-back check blocking what no task
/// wrote is a bug. What a lower layer failed with, its own words (the
/// write-back check's, as it worded them).
impl Explain for MergeError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            MergeError::Git { source, .. }
            | MergeError::ReadObject { source, .. }
            | MergeError::WriteObject { source, .. }
            | MergeError::PatchObject { source, .. }
            | MergeError::BadBase { source, .. } => Error::git(message, source),
            MergeError::Misstored { id, written } => Error::git(
                format!("cannot write object {id}"),
                format!("it was stored as {written}"),
            ),
            MergeError::UnknownBlocked => Error::state(
                Code::Internal,
                message,
                "report this bug; nothing was changed",
            ),
            MergeError::Lower(e) => e.explain(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words these errors had when they were built in place (the
    /// suite provokes most of the others through the binary).
    #[test]
    fn the_words_are_those_the_modules_wrote() {
        let id = gix::ObjectId::empty_tree(gix::hash::Kind::Sha1);
        let e = Error::from(MergeError::Misstored { id, written: id });
        assert_eq!(
            (e.code, e.exit_code(), e.message),
            (
                Code::Git,
                3,
                format!("cannot write object {id}: it was stored as {id}")
            )
        );
        let e = Error::from(MergeError::UnknownBlocked);
        assert_eq!(e.code, Code::Internal);
        assert_eq!(e.help, "report this bug; nothing was changed");
        let e = Error::from(SnapshotError::Unexpected {
            root: "/s".into(),
            what: "unexpected rename record from status",
        });
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                Code::Git,
                "snapshot of /s: unexpected rename record from status"
            )
        );
        let e = Error::from(SnapshotError::Panicked);
        assert_eq!(
            (e.code, e.message.as_str(), e.help.as_str()),
            (
                Code::Internal,
                "a snapshot thread panicked",
                "report this bug"
            )
        );
    }

    /// What `merge/` passes on keeps the words it had when merge/'s
    /// functions returned the crate's `Error` (the suite provokes few of
    /// them through `merge/`): a lower layer's typed error (the write-back's
    /// included) is worded by that layer's impl, a full disk named as one.
    #[test]
    fn merge_passes_on_the_words_of_what_it_wraps() {
        let words = |e: &Error| {
            (
                e.code,
                e.exit_code(),
                e.message.clone(),
                e.help.clone(),
                e.details.clone(),
            )
        };
        // The write-back check's failure, as the check's own words.
        let check = || {
            crate::writeback::WritebackError::from(crate::sys::fs::PathError {
                op: "open the working tree",
                path: "/r".into(),
                source: std::io::Error::from_raw_os_error(rustix::io::Errno::ROFS.raw_os_error()),
            })
        };
        let e = Error::from(MergeError::from(check()));
        assert_eq!(words(&e), words(&Error::from(check())));
        assert_eq!(
            MergeError::from(check()).to_string(),
            "cannot open the working tree /r"
        );

        let dir = std::env::temp_dir();
        let full = || crate::sys::fs::FsError::Write {
            dir: dir.clone(),
            io: crate::sys::fs::PathError {
                op: "write in",
                path: dir.join("t.patch"),
                source: std::io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error()),
            },
        };
        let e = Error::from(MergeError::from(full()));
        assert_eq!(e.code, Code::DiskFull);
        assert_eq!(words(&e), words(&Error::from(full())));
        assert_eq!(MergeError::from(full()).to_string(), full().to_string());

        let diff = || crate::git::diff::DiffError::ReadTree {
            source: gix::Error::from_error(std::fmt::Error),
        };
        let e = Error::from(MergeError::from(diff()));
        assert_eq!(words(&e), words(&Error::from(diff())));
        assert_eq!(e.code, Code::Git);

        let e = Error::from(MergeError::from(SnapshotError::Panicked));
        assert_eq!(words(&e), words(&Error::from(SnapshotError::Panicked)));
        assert_eq!(e.code, Code::Internal);
    }
}
