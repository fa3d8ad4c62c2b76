//! The words of `writeback/`'s errors: `From<WritebackError>` (what its
//! entry points return: a write-back that cannot start, a journal recovery
//! cannot read, and what it passes on as it is) and
//! `From<WriteError>` (a write that failed and was rolled back, a check
//! that could not read the disk, an interrupt, a rollback that left paths
//! to the user) for `Error` (docs/architecture.md "Errors").
//!
//! Owns: which code, exit status, help and JSON details each of those has
//! (`delegate::write_failed` and the code its cause decides,
//! `write_check_failed`, `interrupted`, `rollback_failed` with `batch`,
//! `journal` and `paths`).
//! Never: decides what failed or reads the disk (the write-back does, and
//! says whether the journal is still there), or prints anything; how an OS
//! error is classified stays in `error` (`FsCause`).

use crate::error::{Code, Error, Explain};
use crate::writeback::{Cause, RollbackFailed, WriteError, WritebackError};

/// A write-back that cannot start, or a journal recovery cannot read (what
/// a write-back passes on, a `WriteError` or `DiffError`, is worded as its
/// own): `delegate::git` for the filters, I/O errors named by their cause for
/// the folders and files; a path git refuses reaching the write-back is a
/// bug, and nothing was changed.
impl Explain for WritebackError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            // Passed on as they are: worded as their own.
            WritebackError::Lower(e) => e.explain(),
            WritebackError::Filters { source, .. } => Error::git(message, source),
            WritebackError::Invalid { .. } => Error::state(
                Code::Internal,
                message,
                "report this bug; nothing was changed",
            ),
            WritebackError::OpenToRecover { source, .. } => Error::io(message, source),
        }
    }
}

/// A write-back that failed: `delegate::write_failed` (exit 3), or the
/// code its cause decides (a full disk, a filter driver), the working tree
/// as it was; a check that could not read the disk,
/// `delegate::write_check_failed` unless its cause names another code;
/// `delegate::interrupted` rolled back on a signal; and
/// `delegate::rollback_failed` naming the paths left (message and JSON).
impl Explain for WriteError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            WriteError::OpenRoot { source, root } => failed(
                message,
                crate::error::FsCause::of(&source).map(Cause::Fs),
                &root,
            ),
            WriteError::Journal { cause, path, .. } => failed(message, cause.map(Cause::Fs), &path),
            WriteError::Plan { cause, root, .. } | WriteError::Write { cause, root, .. } => {
                failed(message, cause, &root)
            }
            WriteError::Check {
                cause: cause @ Some(Cause::Fs(_) | Cause::Filter(_)),
                root,
                ..
            } => failed(message, cause, &root),
            WriteError::Check { .. } => Error::state(
                Code::WriteCheckFailed,
                message,
                "check the permissions of that path, then run the command again",
            ),
            WriteError::Interrupted { .. } => {
                let mut details = serde_json::Map::new();
                details.insert("interrupted".into(), serde_json::json!("rolled_back"));
                Error::state(
                    Code::Interrupted,
                    message,
                    "nothing of it was written; run the command again to write it",
                )
                .with_details(details)
            }
            WriteError::RollbackFailed(r) => rollback_failed(message, &r),
        }
    }
}

/// The error of a write-back that changed nothing; `cause` decides the
/// code. `at` is what was written (the working tree's root, or the
/// journal): the help names the filesystem mounted there.
fn failed(message: String, cause: Option<Cause>, at: &std::path::Path) -> Error {
    if let Some(Cause::Fs(cause)) = cause {
        // A denied permission is the path's in the message, not the root's.
        let help = match cause {
            crate::error::FsCause::Denied => cause
                .help(None)
                .replace("that holds it", "that holds the working tree"),
            _ => cause.help(Some(at)),
        };
        return Error::state(
            cause.code(),
            message,
            format!("the working tree is as it was before; {help}"),
        );
    }
    if let Some(Cause::Filter(driver)) = cause {
        // Named when it is known and prints as it is (design §3.16 "Hints").
        let help = match driver.filter(|d| {
            !d.is_empty() && d.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c))
        }) {
            Some(d) => format!(
                "the working tree is as it was before; fix the filter driver {d}, or make it optional with `git config filter.{d}.required false`, and run `git delegate apply` again"
            ),
            None => "the working tree is as it was before; fix the filter driver (or make it optional with `git config filter.<driver>.required false`) and run `git delegate apply` again".to_string(),
        };
        return Error::state(Code::FilterFailed, message, help);
    }
    Error::state(
        Code::WriteFailed,
        message,
        "the working tree is as it was before; fix the cause (disk space, permissions, a file changed meanwhile) and run `git delegate apply` again",
    )
}

/// `delegate::rollback_failed`: the paths left as they were found, each
/// with the file kept for it, in the JSON error object too (`batch`,
/// `journal`, `paths`).
fn rollback_failed(message: String, r: &RollbackFailed) -> Error {
    use crate::sys::paths::{doc_bytes, doc_path, is_lossy, note_lossy, path_is_lossy};
    let help = if r.journal_kept {
        "for each path named, keep your version by deleting the kept file, or take the original back by moving the kept file over the path; then run `git delegate gc` (or any command that changes things), which re-checks and finishes the rollback"
    } else {
        "look at the paths named: they hold your version; the rest of the working tree is as it was before the write-back"
    };
    let paths: Vec<serde_json::Value> = r
        .left
        .iter()
        .filter(|l| !l.path.is_empty())
        .map(|l| {
            serde_json::json!({
                "path": doc_bytes(&l.path),
                "reason": l.reason.as_str(),
                "kept": r.kept(l).map(|k| doc_path(&k)),
                "kept_is": l.kept.as_ref().map(|_| if l.yours { "yours" } else { "original" }),
                "message": l.detail,
            })
        })
        .collect();
    let mut details = serde_json::Map::new();
    let batch = r
        .journal
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    details.insert("batch".into(), serde_json::json!(batch));
    details.insert(
        "journal".into(),
        serde_json::json!(r.journal_kept.then(|| doc_path(&r.journal))),
    );
    details.insert("paths".into(), serde_json::Value::Array(paths));
    let lossy = r
        .left
        .iter()
        .any(|l| is_lossy(&l.path) || r.kept(l).is_some_and(|k| path_is_lossy(&k)))
        || (r.journal_kept && path_is_lossy(&r.journal));
    note_lossy(&mut details, lossy);
    Error::state(Code::RollbackFailed, message, help).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FsCause;
    use crate::writeback::{Left, LeftReason, Undoing};

    fn os(errno: rustix::io::Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(errno.raw_os_error())
    }

    const AS_BEFORE: &str = "the working tree is as it was before; ";

    /// The cases of [`the_words_are_those_the_modules_wrote`]: the error,
    /// its code, message and help.
    fn cases() -> Vec<(Error, Code, &'static str, String)> {
        use rustix::io::Errno;
        let what = |w: &str| w.to_string();
        let check = |cause| WriteError::Check {
            root: "/s".into(),
            what: what("cannot stat a: Input/output error (EIO)"),
            cause,
        };
        let checking =
            "cannot check the working tree before writing: cannot stat a: Input/output error (EIO)";
        let rot = |d: &str| Some(Cause::Filter(Some(d.into())));
        vec![
            (
                WritebackError::Invalid { path: ".git/config".into(), why: "it is inside .git" }.into(),
                Code::Internal,
                "refusing to write .git/config: git refuses that path (it is inside .git)",
                "report this bug; nothing was changed".into(),
            ),
            (
                check(None).into(),
                Code::WriteCheckFailed,
                checking,
                "check the permissions of that path, then run the command again".into(),
            ),
            (
                check(Some(Cause::Interrupted)).into(),
                Code::WriteCheckFailed,
                checking,
                "check the permissions of that path, then run the command again".into(),
            ),
            (
                check(Some(Cause::Fs(FsCause::Denied))).into(),
                Code::PermissionDenied,
                checking,
                format!("{AS_BEFORE}check the permissions of that path and the folders above it, then run the command again"),
            ),
            (
                check(rot("lfs")).into(),
                Code::FilterFailed,
                checking,
                format!("{AS_BEFORE}fix the filter driver lfs, or make it optional with `git config filter.lfs.required false`, and run `git delegate apply` again"),
            ),
            // A driver name that would not print as it is is not named.
            (
                check(rot("a b")).into(),
                Code::FilterFailed,
                checking,
                format!("{AS_BEFORE}fix the filter driver (or make it optional with `git config filter.<driver>.required false`) and run `git delegate apply` again"),
            ),
            (
                WriteError::Write { root: "/s".into(), what: what("cannot rename a: injected"), cause: None }.into(),
                Code::WriteFailed,
                "write-back failed: cannot rename a: injected; every path was rolled back to what it was before",
                format!("{AS_BEFORE}fix the cause (disk space, permissions, a file changed meanwhile) and run `git delegate apply` again"),
            ),
            (
                WriteError::Journal {
                    path: "/s/.git/delegate/batches/b/writeback.journal".into(),
                    cause: Some(FsCause::Full),
                    source: os(Errno::NOSPC),
                }
                .into(),
                Code::DiskFull,
                "cannot record the write-back journal /s/.git/delegate/batches/b/writeback.journal: No space left on device (os error 28); nothing was changed",
                format!("{AS_BEFORE}free space on the filesystem mounted at / and run the command again"),
            ),
            (
                WriteError::OpenRoot { root: "/s".into(), source: os(Errno::ROFS) }.into(),
                Code::ReadOnlyFilesystem,
                "cannot open the working tree /s: Read-only file system (os error 30)",
                format!("{AS_BEFORE}remount the filesystem mounted at / read-write and run the command again"),
            ),
            (
                WriteError::Plan { root: "/s".into(), what: what("cannot stat a"), cause: Some(Cause::Fs(FsCause::NoInodes)) }.into(),
                Code::DiskFull,
                "write-back stopped before any change: cannot stat a",
                format!("{AS_BEFORE}free inodes on the filesystem mounted at /: remove files or folders you do not need there (each takes one; `df -i /` shows how many are left) and run the command again"),
            ),
            (
                WriteError::Interrupted { root: "/s".into() }.into(),
                Code::Interrupted,
                "interrupted by a signal during the write-back into /s: it was rolled back, so every path there is as it was before",
                "nothing of it was written; run the command again to write it".into(),
            ),
        ]
    }

    /// The words these errors had when they were built in place (the suite
    /// provokes the others through the binary): code, exit status,
    /// message, help.
    #[test]
    fn the_words_are_those_the_modules_wrote() {
        use rustix::io::Errno;
        for (e, code, message, help) in cases() {
            assert_eq!(
                (e.code, e.exit_code(), e.message.as_str(), e.help.as_str()),
                (code, 3, message, help.as_str())
            );
        }
        let e = Error::from(WritebackError::from(crate::sys::fs::PathError {
            op: "read",
            path: "/s/.git/delegate/batches".into(),
            source: os(Errno::ROFS),
        }));
        assert_eq!(e.code, Code::ReadOnlyFilesystem);
        assert!(
            e.message
                .starts_with("cannot read /s/.git/delegate/batches: "),
            "{}",
            e.message
        );
        let e = Error::from(WriteError::Interrupted { root: "/s".into() });
        let details = serde_json::Value::Object(*e.details.unwrap());
        assert_eq!(details, serde_json::json!({"interrupted": "rolled_back"}));
    }

    /// What a write-back's entry point passes on (`WritebackError::Lower`:
    /// a `WriteError`, a `DiffError`) is worded as its own error is: code,
    /// exit status, message, help and JSON details.
    #[test]
    fn what_the_write_back_passes_on_keeps_its_words() {
        let write = || WriteError::Interrupted { root: "/s".into() };
        let (inner, outer) = (
            Error::from(write()),
            Error::from(WritebackError::from(write())),
        );
        assert_eq!(
            (outer.code, outer.exit_code(), &outer.message, &outer.help),
            (Code::Interrupted, 3, &inner.message, &inner.help)
        );
        assert_eq!(
            outer.details.map(|d| serde_json::Value::Object(*d)),
            Some(serde_json::json!({"interrupted": "rolled_back"}))
        );
        let diff = || crate::git::diff::DiffError::ReadTree {
            source: gix::Error::from_error(std::fmt::Error),
        };
        let (inner, outer) = (
            Error::from(diff()),
            Error::from(WritebackError::from(diff())),
        );
        assert_eq!(
            (outer.code, outer.exit_code(), &outer.message, &outer.help),
            (inner.code, inner.exit_code(), &inner.message, &inner.help)
        );
        assert_eq!(outer.code, Code::Git);
        assert!(
            outer.message.starts_with("cannot read tree: "),
            "{}",
            outer.message
        );
    }

    /// A recovery that left paths without keeping its journal (finishing a
    /// committed write-back, and rolling one back): message, help, details.
    #[test]
    fn a_recovery_that_left_paths_names_them() {
        let left = |path: &str, kept: Option<&str>| Left {
            path: path.into(),
            reason: LeftReason::ChangedSinceWritten,
            kept: kept.map(Into::into),
            yours: false,
            detail: "changed since it was written".into(),
        };
        for (committed, said) in [
            (true, "finishing an interrupted write-back"),
            (false, "rolling back an interrupted write-back"),
        ] {
            let e = Error::from(WriteError::RollbackFailed(Box::new(RollbackFailed {
                root: "/s".into(),
                journal: "/s/.git/delegate/batches/0123abcd/writeback.journal".into(),
                journal_kept: false,
                during: Undoing::Recovery { committed },
                left: vec![left("a", None), left("b", Some(".gd-x-1.orig"))],
            })));
            assert_eq!(
                (e.code, e.exit_code(), e.message, e.help.as_str()),
                (
                    Code::RollbackFailed,
                    3,
                    format!("{said}: 2 paths were left as found (a: changed since it was written; b: changed since it was written, the original is kept at /s/.gd-x-1.orig); every other path was put back"),
                    "look at the paths named: they hold your version; the rest of the working tree is as it was before the write-back"
                )
            );
            let details = serde_json::Value::Object(*e.details.unwrap());
            assert_eq!(details["batch"], "0123abcd");
            assert_eq!(details["journal"], serde_json::Value::Null);
            assert_eq!(details["paths"][1]["kept"], "/s/.gd-x-1.orig");
            assert_eq!(details["paths"][1]["kept_is"], "original");
            assert_eq!(details["paths"][0]["reason"], "changed_since_written");
        }
    }
}
