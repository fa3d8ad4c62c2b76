//! The words of `record/`'s typed errors (docs/architecture.md "Errors"):
//! a batch's record and the `BATCH` and task arguments, the busy marker,
//! the pool's records, kept proposals.
//!
//! Owns: which code, exit status and help each of those errors has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`.

use crate::error::{Code, Error, Explain};
use crate::record::batch::BatchError;
use crate::record::busy::BusyError;
use crate::record::kept::KeptError;
use crate::record::pool::PoolError;

/// A batch being verified by another apply: exit 3, wait for it.
impl Explain for BusyError {
    fn explain(self) -> Error {
        let e = self;
        Error::state(
            Code::BatchBusy,
            e.to_string(),
            "wait for that apply to finish, then run this command again",
        )
    }
}

/// The pool's records: an id or a record that cannot be one is a bug; the
/// folder and the file, I/O errors named by their cause.
impl Explain for PoolError {
    fn explain(self) -> Error {
        let e = self;
        match e {
            PoolError::Fs(e) => e.into(),
            PoolError::BadId { .. } | PoolError::Toml(_) => {
                Error::state(Code::Internal, e.to_string(), "report this bug")
            }
        }
    }
}

/// A kept proposal's ref or commit: the words of its cause.
impl Explain for KeptError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            KeptError::Lower(e) => e.explain(),
            KeptError::Read { source, .. } => Error::git(message, source),
        }
    }
}

/// A batch's record and a `BATCH` or task argument (design §3): the
/// arguments are usage errors (exit 2) saying what to name instead; a
/// corrupt record is exit 3 with the command that removes it; the files are
/// I/O errors named by their cause.
impl Explain for BatchError {
    fn explain(self) -> Error {
        let e = self;
        use BatchError as B;
        let message = e.to_string();
        const LIST: &str = "run `git delegate status` to list the batches";
        match e {
            B::TaskNotOpen { .. } => Error::usage(
                Code::TaskNotOpen,
                message,
                "name only open tasks; `git delegate status` lists them",
            ),
            B::UnknownTask { tasks, .. } => Error::usage(
                Code::UnknownTask,
                message,
                format!("its tasks are: {}", tasks.join(", ")),
            ),
            B::Record { .. } => Error::state(
                Code::State,
                message,
                "paths in batch state must be valid UTF-8; move the repository or workspace root to such a path",
            ),
            B::CreateDir { source, .. } | B::Remove { source, .. } | B::List { source, .. } => {
                Error::io(message, source)
            }
            B::Write(e) => e.into(),
            B::Corrupt { id, .. } => Error::state(
                Code::CorruptBatch,
                message,
                format!(
                    "remove the batch with `git delegate drop {id} --force` (the changes in its workspaces are saved as proposal refs first)"
                ),
            ),
            B::NoBatch => Error::usage(
                Code::NoBatch,
                message,
                "create one with `git delegate prepare`",
            ),
            B::SeveralBatches { .. } => Error::usage(
                Code::AmbiguousBatch,
                message,
                "name one: its label, its id, or the first 4 or more characters of its id",
            ),
            B::ShortPrefix { .. } | B::NoMatch { .. } => {
                Error::usage(Code::UnknownBatch, message, LIST)
            }
            B::AmbiguousPrefix { .. } => Error::usage(
                Code::AmbiguousBatch,
                message,
                "give more characters of the id",
            ),
            B::BadTaskName { .. } => Error::usage(
                Code::BadTaskName,
                message,
                "task names are 1-64 characters of A-Z a-z 0-9 . _ -, start with a letter or digit, and contain no `..` nor end in `.` or `.lock`",
            ),
        }
    }
}
