//! The words for the typed errors of `workspace/` (docs/architecture.md
//! "Errors"): one `From<XError> for Error` per enum, each giving the code,
//! exit status and help line that module built in place before.
//!
//! Owns: which code, exit status and help each `workspace/` error has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`
//! (`Error::io`, `Error::io_at`, `Error::git`, `Error::fs_cause`).

use std::path::Path;

use crate::error::{Code, Error};
use crate::workspace::submodules::{Moved, SubmoduleError};
use crate::workspace::Cause;

use super::quoted;

/// `Error::git` on the gix error a `Cause` holds, with the type it had:
/// a `gix::Error` is searched for a full disk (and the like) as before,
/// any other of gix's error types only named.
fn git(message: String, source: Cause) -> Error {
    match source.downcast::<gix::Error>() {
        Ok(e) => Error::git(message, *e),
        Err(e) => Error::git(message, e),
    }
}

/// A gix failure while writing under `path`: a full disk, read-only
/// filesystem or denied permission there is named for what it is, with
/// the filesystem of `path`; anything else as [`git`].
fn git_at(message: String, path: &Path, source: Cause) -> Error {
    match Error::fs_cause(&message, Some(path), &*source) {
        Some(e) => e,
        None => git(message, source),
    }
}

/// Submodules (design §3.15): one that cannot be shared or is dirty is the
/// repository's state (exit 3); a registration in the way is a usage error;
/// the rest are git and I/O errors named by their cause, as before.
impl From<SubmoduleError> for Error {
    fn from(e: SubmoduleError) -> Error {
        use SubmoduleError as S;
        let message = e.to_string();
        match e {
            S::Repo(e) => e,
            S::Fs(e) => e.into(),
            S::Ident(e) => e.into(),
            S::Interrupted => Error::interrupted(),
            S::Index { source }
            | S::Status { source, .. }
            | S::ParentCommit { source }
            | S::Tree { source }
            | S::Checkout { source, .. } => git(message, source),
            S::CheckoutFiles { dest, source } => git_at(message, &dest, source),
            S::Create { path, source } => Error::io_at(message, &path, source),
            S::Remove { source, .. } | S::Unlock { source, .. } => Error::io(message, source),
            S::Inside { .. } => Error::state(
                Code::Submodules,
                message,
                "run `git submodule absorbgitdirs` in the superproject (it moves the repository under .git/modules), then run the command again",
            ),
            S::HeadMoved(m) => {
                let Moved {
                    dir,
                    root,
                    path,
                    commit,
                    head,
                    nested,
                    ..
                } = *m;
                let checkout = format!("git -C {} checkout -q --detach {commit}", quoted(&dir));
                let help = match head {
                    Some(_) => format!(
                        "check out the recorded commit in it (`{checkout}`), or record the one it has in its superproject (`git -C {} add {}`{}), then run the command again",
                        quoted(&root),
                        crate::sys::paths::shell_quote(&gix::bstr::ByteSlice::to_str_lossy(path.as_slice())),
                        if nested { ", and commit that there" } else { "" }
                    ),
                    None => format!(
                        "check out the recorded commit in it (`{checkout}`), then run the command again"
                    ),
                };
                Error::state(Code::DirtySubmodule, message, help)
            }
            S::Modified { dir, .. } => Error::state(
                Code::DirtySubmodule,
                message,
                format!(
                    "commit them inside it, or put them aside (`git -C {d} stash`), then run the command again (`git -C {d} status` shows them)",
                    d = quoted(&dir)
                ),
            ),
            S::NotEmpty { .. } => Error::state(
                Code::CheckoutFailed,
                message,
                "report this bug; nothing was changed",
            ),
            S::Registered { git_dir, .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                format!(
                    "it is a worktree of that submodule's repository that git delegate did not make: look at `git --git-dir={git} worktree list`; `git --git-dir={git} worktree prune` removes it when its folder is gone; then run the command again",
                    git = quoted(&git_dir)
                ),
            ),
            S::CheckoutFile { .. } => Error::state(
                Code::CheckoutFailed,
                message,
                "check free disk space, permissions and path lengths under the workspace root",
            ),
        }
    }
}
