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
use crate::workspace::carry::CarryError;
use crate::workspace::pool::PoolError;
use crate::workspace::scratch::ScratchError;
use crate::workspace::shared_root::{Reason, Refused, SharedRootError};
use crate::workspace::submodules::{Moved, SubmoduleError};
use crate::workspace::{Cause, CreateError, DerivedError, FillError, PlanError, RemoveError};

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

/// Carrying ignored files and copying trees (design §3.9): a carried file in
/// the way, a filesystem that cannot clone and a bad pattern are named with
/// what to do; the files are I/O errors (under the workspace root, with the
/// hint that it can move), as before.
impl From<CarryError> for Error {
    fn from(e: CarryError) -> Error {
        use CarryError as C;
        let message = e.to_string();
        match e {
            C::Open { source, .. }
            | C::Source { source, .. }
            | C::Read { source, .. }
            | C::Patterns { source, .. } => Error::io(message, source),
            C::Dest { root, source, .. } => {
                Error::io_at(message, &root, source).in_workspace_root()
            }
            C::List { source } => Error::git(message, source),
            C::Fs(e) => e.into(),
            C::Interrupted => Error::interrupted(),
            C::Panicked => Error::state(Code::Internal, message, "report this bug"),
            C::Exists { .. } => Error::state(
                Code::CarryExists,
                message,
                "a carried ignored file would replace a file of the workspace: narrow the copy-ignored patterns",
            ),
            C::NoReflink { .. } => Error::state(
                Code::NoReflink,
                message,
                "use scratch mode on a filesystem with reflink support (XFS made with `mkfs.xfs -m reflink=1`, Btrfs), with the source and its parent folder on it; or use `--mode worktree`",
            ),
            C::MultiLine { .. } => Error::usage(
                Code::BadPattern,
                message,
                "give one gitignore-style pattern per value",
            ),
            C::IncludeNotFile { .. } => Error::usage(
                Code::BadPattern,
                message,
                "make .worktreeinclude a plain file of gitignore-style patterns, or remove it",
            ),
        }
    }
}

/// Scratch copies (design §2): a source or copy that cannot be one is
/// `delegate::scratch_refused`, with what to use instead; the files are
/// I/O errors named by their cause, as before.
impl From<ScratchError> for Error {
    fn from(e: ScratchError) -> Error {
        use ScratchError as S;
        let message = e.to_string();
        let refused = |exit: fn(Code, String, &'static str) -> Error, help| {
            exit(Code::ScratchRefused, message.clone(), help)
        };
        match e {
            S::Carry(e) => e.into(),
            S::Fs(e) => e.into(),
            S::Engine(e) => e,
            S::Drivers(e) => e.into(),
            S::Io { source, .. } => Error::io(message, source),
            S::Index { source, .. } => Error::git(message, source),
            S::Refused { .. } => refused(
                Error::state,
                "scratch copies must be self-contained; use `--mode worktree` for this repository",
            ),
            S::NoParent { .. } => refused(
                Error::usage,
                "use `--mode worktree` for a repository at the filesystem root",
            ),
            S::GitFile { .. } => refused(
                Error::state,
                "run scratch prepares in the main working tree of a repository whose .git is a folder, or use `--mode worktree`",
            ),
            S::NotCommonDir { .. } => {
                refused(Error::state, "use `--mode worktree` for this repository")
            }
            S::NoContainer => Error::state(Code::Internal, message, "report this bug"),
            S::Owner { .. } => Error::state(
                Code::State,
                message,
                "paths must be valid UTF-8; move the repository to such a path",
            ),
        }
    }
}

/// Folders below the workspace root (design §3.18): a refused folder is
/// `delegate::unsafe_workspace_root` with the folder in the JSON error
/// document; what cannot be made there says the root can move.
impl From<SharedRootError> for Error {
    fn from(e: SharedRootError) -> Error {
        use SharedRootError as S;
        let message = e.to_string();
        match e {
            S::Carry(e) => e.into(),
            S::Create { path, source } => Error::io_at(message, &path, source).in_workspace_root(),
            S::Open { source, .. } | S::Remove { source, .. } => Error::io(message, source),
            S::NoRoot { .. } => Error::state(
                Code::NoWorkspaceRoot,
                message,
                "set `workspace.root` in .git/delegate.toml",
            ),
            S::Unsafe(r) => unsafe_root(message, &r),
        }
    }
}

fn unsafe_root(message: String, r: &Refused) -> Error {
    use crate::sys::paths::{doc_path, note_lossy, path_is_lossy};
    let help = match r.reason {
        Reason::WritableByOthers => format!(
            "make it sticky as /tmp is (`chmod +t {}`), or set `workspace.root` in .git/delegate.toml to a folder only you can write to; then prepare again",
            quoted(&r.path)
        ),
        _ => "another user may have put it there to reach your workspaces: have it removed by its owner (or root), or set `workspace.root` in .git/delegate.toml to a folder only you can write to; then prepare again".to_string(),
    };
    let mut details = serde_json::Map::new();
    details.insert(
        "unsafe_folder".into(),
        serde_json::json!({
            "path": doc_path(&r.path),
            "owner": r.owner,
            "reason": r.reason.as_str(),
        }),
    );
    note_lossy(&mut details, path_is_lossy(&r.path));
    Error::state(Code::UnsafeWorkspaceRoot, message, help).with_details(details)
}

/// Removing a workspace: the registration's files are I/O errors named by
/// their cause; the rest are the modules' it calls, as before.
impl From<RemoveError> for Error {
    fn from(e: RemoveError) -> Error {
        use RemoveError as R;
        let message = e.to_string();
        match e {
            R::Scratch(e) => e.into(),
            R::Submodule(e) => e.into(),
            R::SharedRoot(e) => e.into(),
            R::Carry(e) => e.into(),
            R::Unlock { source, .. } | R::Unregister { source, .. } => Error::io(message, source),
        }
    }
}

/// The pool of idle workspaces (design §3.20): a registration in the way is
/// a usage error; the files are I/O and git errors named by their cause
/// (under the workspace root where they were), as before.
impl From<PoolError> for Error {
    fn from(e: PoolError) -> Error {
        use PoolError as P;
        let message = e.to_string();
        match e {
            P::Engine(e) => e,
            P::Removal(e) => e.into(),
            P::SharedRoot(e) => e.into(),
            P::Fs(e) => e.into(),
            P::Diff(e) => e.into(),
            P::Fill(e) => e.into(),
            P::Interrupted => Error::interrupted(),
            P::Checkout { source, .. } => Error::git(message, source),
            P::Read { root, source }
            | P::Remove { root, source, .. }
            | P::DotGit { root, source } => Error::io_at(message, &root, source),
            P::Rename { path, source } => Error::io_at(message, &path, source),
            P::Move { source, .. } => Error::io(message, source),
            P::Registered { .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`",
            ),
        }
    }
}

/// What every checkout failure of a workspace says to do.
const CHECKOUT_HELP: &str =
    "check free disk space, permissions and path lengths under the workspace root";

/// Filling a workspace: a full disk (and the like) under the workspace
/// root says the root can move; a checkout that fails otherwise is
/// `delegate::checkout_failed`, naming its cause, as before.
impl From<FillError> for Error {
    fn from(e: FillError) -> Error {
        use FillError as F;
        let message = e.to_string();
        match e {
            F::Filter(e) => e,
            F::Ident(e) => e.into(),
            F::Carry(e) => e.into(),
            F::Interrupted => Error::interrupted(),
            F::Panicked => Error::state(Code::Internal, message, "report this bug"),
            F::Options { source, .. } => Error::git(message, source),
            F::Objects { source } => git(message, source),
            F::Checkout { root, source } | F::Write { root, source, .. } => {
                match Error::fs_cause(&message, Some(&root), &*source) {
                    Some(e) => e.in_workspace_root(),
                    None => Error::state(
                        Code::CheckoutFailed,
                        format!("{message}: {source}"),
                        CHECKOUT_HELP,
                    ),
                }
            }
            F::InTheWay { .. } | F::TooLong { .. } => {
                Error::state(Code::CheckoutFailed, message, CHECKOUT_HELP)
            }
            F::Clock { source, .. } | F::Date { source, .. } => Error::io(message, source),
            F::Walk { root, source, .. } => {
                Error::io_at(message, &root, source).in_workspace_root()
            }
        }
    }
}

/// Making a batch's workspaces: a folder in the way is a usage error
/// (`delegate::workspace_exists`); the files are I/O and git errors named
/// by their cause (under the workspace root, with the hint that it can
/// move), as before.
impl From<CreateError> for Error {
    fn from(e: CreateError) -> Error {
        use CreateError as C;
        let message = e.to_string();
        match e {
            C::Fill(e) => e.into(),
            C::Sparse(e) => e.into(),
            C::Fs(e) => e.into(),
            C::Submodule(e) => e.into(),
            C::Engine(e) => e,
            C::Removal(e) => e.into(),
            C::Interrupted => Error::interrupted(),
            C::Exists { .. } | C::Changed { .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                "move or remove that folder, then prepare again",
            ),
            C::Create { path, source } => Error::io_at(message, &path, source).in_workspace_root(),
            C::Snapshot { root, source, .. } => {
                Error::io_at(message, &root, source).in_workspace_root()
            }
            C::Read { root, source } => Error::io_at(message, &root, source),
            C::Remove { source, .. } => Error::io(message, source),
            C::Checkout { source, .. } => Error::git(message, source),
        }
    }
}

/// Verification workspaces derived from a template (design §3.17): a
/// folder that changed under the snapshot is `delegate::workspace_exists`;
/// the files are I/O and git errors named by their cause, as before.
impl From<DerivedError> for Error {
    fn from(e: DerivedError) -> Error {
        use DerivedError as D;
        let message = e.to_string();
        match e {
            D::Create(e) => e.into(),
            D::Fill(e) => e.into(),
            D::Fs(e) => e.into(),
            D::Engine(e) => e,
            D::Removal(e) => e.into(),
            D::Interrupted => Error::interrupted(),
            D::Checkout { source, .. } => Error::git(message, source),
            D::Changed { .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                "move or remove that folder, then run again",
            ),
            D::Snapshot { root, source, .. } => {
                Error::io_at(message, &root, source).in_workspace_root()
            }
            D::Remove { source, .. } => Error::io(message, source),
            D::Read { root, source } => Error::io_at(message, &root, source),
        }
    }
}

/// A planned workspace's place taken (`delegate::workspace_exists`, exit
/// 2): gc removes a leftover folder git delegate made, never a registered
/// worktree (it may hold work), so the help says what works for each
/// (design §3.16 "Hints").
impl From<PlanError> for Error {
    fn from(e: PlanError) -> Error {
        let message = e.to_string();
        let help = match e {
            PlanError::FolderExists {
                root,
                worktree_id,
                registered: true,
            } => format!(
                "it is the linked worktree {worktree_id} that no batch owns (`git worktree list` shows it): look at what it holds, then `git worktree remove --force --force {}` removes it; then prepare again",
                quoted(&root)
            ),
            PlanError::FolderExists { .. } => "move or remove that folder (or, if git delegate left it, run `git delegate gc`), then prepare again".to_string(),
            PlanError::Registered { .. } => {
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`".to_string()
            }
        };
        Error::usage(Code::WorkspaceExists, message, help)
    }
}
