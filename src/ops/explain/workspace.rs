//! The words for the typed errors of `workspace/` (docs/architecture.md
//! "Errors"): `From<WorkspaceError> for Error` (the room's one error) and
//! `From<PlanError> for Error`, each giving the code, exit status and help
//! line the modules built in place before.
//!
//! Owns: which code, exit status and help each `workspace/` error has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`
//! (`Error::io`, `Error::io_at`, `Error::git`, `Error::fs_cause`).

use std::path::Path;

use crate::error::{Code, Error, Explain};
use crate::workspace::shared_root::{Reason, Refused};
use crate::workspace::submodules::Moved;
use crate::workspace::{Cause, PlanError, WorkspaceError};

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

/// Every failure of `workspace/`, one arm a variant: a folder or
/// registration in the way is a usage error (`delegate::workspace_exists`);
/// what the repository's state refuses (a dirty or unshareable submodule,
/// a scratch copy that cannot be one, a refused folder below the workspace
/// root, a carried file in the way) exits 3 with what to do; the files are
/// I/O and git errors named by their cause (under the workspace root, with
/// the hint that it can move), as before.
impl Explain for WorkspaceError {
    fn explain(self) -> Error {
        let e = self;
        use WorkspaceError as W;
        let message = e.to_string();
        match e {
            W::Lower(e) => e.explain(),
            W::At { at, in_root, io } => match Error::io_at(message, &at, io.source) {
                e if in_root => e.in_workspace_root(),
                e => e,
            },
            W::RemoveIn { root, source, .. } => Error::io_at(message, &root, source),
            W::Patterns { source, .. } => Error::io(message, source),
            W::Checkout { source, .. } | W::ScratchIndex { source, .. } | W::List { source } => {
                Error::git(message, source)
            }
            W::CheckoutFiles { root, source } | W::WriteFile { root, source, .. } => {
                match Error::fs_cause(&message, Some(&root), &*source) {
                    Some(e) => e.in_workspace_root(),
                    None => Error::state(
                        Code::CheckoutFailed,
                        format!("{message}: {source}"),
                        CHECKOUT_HELP,
                    ),
                }
            }
            W::InTheWay { .. } | W::TooLong { .. } => {
                Error::state(Code::CheckoutFailed, message, CHECKOUT_HELP)
            }
            W::Objects { source }
            | W::Index { source }
            | W::Status { source, .. }
            | W::ParentCommit { source }
            | W::Tree { source }
            | W::SubmoduleCheckout { source, .. } => git(message, source),
            W::SubmoduleFiles { dest, source } => git_at(message, &dest, source),
            W::Interrupted => Error::interrupted(),
            W::Panicked { .. } | W::NoContainer => {
                Error::state(Code::Internal, message, "report this bug")
            }
            W::Exists { .. }
            | W::Changed {
                verification: false,
                ..
            } => Error::usage(
                Code::WorkspaceExists,
                message,
                "move or remove that folder, then prepare again",
            ),
            W::Changed { .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                "move or remove that folder, then run again",
            ),
            W::Registered { .. } => Error::usage(
                Code::WorkspaceExists,
                message,
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`",
            ),
            W::Unsafe(r) => unsafe_root(message, &r),
            W::NoRoot { .. } => Error::state(
                Code::NoWorkspaceRoot,
                message,
                "set `workspace.root` in .git/delegate.toml",
            ),
            e @ (W::Carried { .. }
            | W::NoReflink { .. }
            | W::MultiLine { .. }
            | W::IncludeNotFile { .. }) => carry(message, e),
            e @ (W::Refused { .. }
            | W::NoParent { .. }
            | W::GitFile { .. }
            | W::NotCommonDir { .. }
            | W::Owner { .. }) => scratch(message, e),
            e => submodule(message, e),
        }
    }
}

/// Carrying ignored files and copying trees (design §3.9): a carried file in
/// the way, a filesystem that cannot clone and a bad pattern are named with
/// what to do.
fn carry(message: String, e: WorkspaceError) -> Error {
    use WorkspaceError as W;
    match e {
        W::Carried { .. } => Error::state(
            Code::CarryExists,
            message,
            "a carried ignored file would replace a file of the workspace: narrow the copy-ignored patterns",
        ),
        W::NoReflink { .. } => Error::state(
            Code::NoReflink,
            message,
            "use scratch mode on a filesystem with reflink support (XFS made with `mkfs.xfs -m reflink=1`, Btrfs), with the source and its parent folder on it; or use `--mode worktree`",
        ),
        W::MultiLine { .. } => Error::usage(
            Code::BadPattern,
            message,
            "give one gitignore-style pattern per value",
        ),
        _ => Error::usage(
            Code::BadPattern,
            message,
            "make .worktreeinclude a plain file of gitignore-style patterns, or remove it",
        ),
    }
}

/// Scratch copies (design §2): a source or copy that cannot be one is
/// `delegate::scratch_refused`, with what to use instead.
fn scratch(message: String, e: WorkspaceError) -> Error {
    use WorkspaceError as W;
    let refused = |exit: fn(Code, String, &'static str) -> Error, help| {
        exit(Code::ScratchRefused, message.clone(), help)
    };
    match e {
        W::Refused { .. } => refused(
            Error::state,
            "scratch copies must be self-contained; use `--mode worktree` for this repository",
        ),
        W::NoParent { .. } => refused(
            Error::usage,
            "use `--mode worktree` for a repository at the filesystem root",
        ),
        W::GitFile { .. } => refused(
            Error::state,
            "run scratch prepares in the main working tree of a repository whose .git is a folder, or use `--mode worktree`",
        ),
        W::NotCommonDir { .. } => {
            refused(Error::state, "use `--mode worktree` for this repository")
        }
        _ => Error::state(
            Code::State,
            message,
            "paths must be valid UTF-8; move the repository to such a path",
        ),
    }
}

/// Submodules (design §3.15): one that cannot be shared or is dirty is the
/// repository's state (exit 3); a registration in the way is a usage error.
fn submodule(message: String, e: WorkspaceError) -> Error {
    use WorkspaceError as W;
    match e {
        W::Inside { .. } => Error::state(
            Code::Submodules,
            message,
            "run `git submodule absorbgitdirs` in the superproject (it moves the repository under .git/modules), then run the command again",
        ),
        W::HeadMoved(m) => {
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
        W::Modified { dir, .. } => Error::state(
            Code::DirtySubmodule,
            message,
            format!(
                "commit them inside it, or put them aside (`git -C {d} stash`), then run the command again (`git -C {d} status` shows them)",
                d = quoted(&dir)
            ),
        ),
        W::NotEmpty { .. } => Error::state(
            Code::CheckoutFailed,
            message,
            "report this bug; nothing was changed",
        ),
        W::SubmoduleRegistered { git_dir, .. } => Error::usage(
            Code::WorkspaceExists,
            message,
            format!(
                "it is a worktree of that submodule's repository that git delegate did not make: look at `git --git-dir={git} worktree list`; `git --git-dir={git} worktree prune` removes it when its folder is gone; then run the command again",
                git = quoted(&git_dir)
            ),
        ),
        _ => Error::state(Code::CheckoutFailed, message, CHECKOUT_HELP),
    }
}

/// What every checkout failure of a workspace says to do.
const CHECKOUT_HELP: &str =
    "check free disk space, permissions and path lengths under the workspace root";

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

/// A planned workspace's place taken (`delegate::workspace_exists`, exit
/// 2): gc removes neither a registered worktree nor a folder holding files
/// (either may hold work, design §3.18), so the help says what works for
/// each (design §3.16 "Hints").
impl Explain for PlanError {
    fn explain(self) -> Error {
        let e = self;
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
            // gc removes only an empty leftover folder: one holding files
            // nothing records as applied or saved is left (design §3.18).
            PlanError::FolderExists { root, .. } => format!(
                "nothing records whether what it holds was applied, so git delegate leaves it: look at it, then move it away or remove it (`rm -rf {}`), and prepare again",
                quoted(&root)
            ),
            PlanError::Registered { .. } => {
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`".to_string()
            }
        };
        Error::usage(Code::WorkspaceExists, message, help)
    }
}
