//! The words of `git/`'s typed errors (docs/architecture.md "Errors"):
//! discovering and opening repositories, blobs and filters, refs, commits,
//! trees compared, the git command against a remote, `ident`, sparse
//! checkouts, drivers, paths git refuses.
//!
//! Owns: which code, exit status and help each of those errors has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; how an OS or gix error is classified stays in `error`
//! (`Error::io`, `Error::git`).

use crate::error::{Code, Error, Explain};
use crate::git::blob::BlobError;
use crate::git::commit::CommitError;
use crate::git::diff::DiffError;
use crate::git::discovery::DiscoveryError;
use crate::git::drivers::DriversError;
use crate::git::ident::IdentError;
use crate::git::refs::RefError;
use crate::git::repo::RepoError;
use crate::git::sparse::SparseError;
use crate::git::transport::TransportError;
use crate::git::validate::ValidateError;

use super::quoted;

/// Discovery errors (design §3.15): exit 3, each with what to do about
/// the `.git` it names.
impl Explain for DiscoveryError {
    fn explain(self) -> Error {
        let e = self;
        use DiscoveryError as D;
        let message = e.to_string();
        let (code, help) = match &e {
            D::NotFound(_) => (
                Code::NotARepository,
                "run git delegate from inside a git working tree, or pass `git -C DIR delegate ...`".into(),
            ),
            D::DanglingLink { dotgit, .. } => (
                Code::NotARepository,
                format!(
                    "point the link at the repository's git folder, or remove it (`rm {}`)",
                    quoted(dotgit)
                ),
            ),
            D::BadGitFile { dotgit } => (
                Code::NotARepository,
                format!(
                    "write the repository's git folder into it as `gitdir: PATH`, or move it away (`mv {0} {0}.broken`)",
                    quoted(dotgit)
                ),
            ),
            D::GitFileTargetMissing { dotgit, .. } => (
                Code::NotARepository,
                format!(
                    "if the repository moved, write its git folder into {} (`gitdir: PATH`; `git worktree repair` does it for a linked worktree, run in its main working tree); if it is gone, move the file away",
                    dotgit.display()
                ),
            ),
            D::SpecialFile { dotgit } => (
                Code::NotARepository,
                format!(
                    "move it away (`mv {0} {0}.moved`) or run git delegate in another folder",
                    quoted(dotgit)
                ),
            ),
            D::NotGit { dotgit, .. } => (
                Code::NotARepository,
                format!(
                    "repair or move away {}, or run git delegate in another folder",
                    dotgit.display()
                ),
            ),
            D::Unreadable { path, source } => {
                let shown = quoted(path);
                let help = if source.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                    format!("{shown} is a symbolic link that leads back to itself: point it at the repository's git folder, or remove it (`rm {shown}`)")
                } else if source.kind() == std::io::ErrorKind::PermissionDenied {
                    format!("run git delegate as a user who may read it, or give yourself read access (`ls -ld {shown}` shows its owner and mode)")
                } else {
                    format!("check {shown} (`ls -ld {shown}`) and run the command again")
                };
                (Code::UnreadableGitDir, help)
            }
            D::UnsupportedObjectFormat { .. } => (
                Code::UnsupportedObjectFormat,
                "git delegate works in SHA-1 and SHA-256 repositories; use it in a clone of the project in one of those formats".into(),
            ),
            D::UnsupportedRefFormat { .. } => (
                Code::UnsupportedRefFormat,
                "git delegate needs git's `files` ref format: convert the repository with `git refs migrate --ref-format=files` (git 2.46 or later; it refuses while reflogs exist, which `git reflog expire --expire=all --all` deletes), or work in a clone made with `git clone --ref-format=files`".into(),
            ),
            D::DubiousOwnership { shown, .. } => (
                Code::DubiousOwnership,
                format!(
                    "if you trust it, let git (and git delegate) in as git says: git config --global --add safe.directory {}",
                    quoted(shown)
                ),
            ),
        };
        Error::state(code, message, help)
    }
}

/// The command that lists `dir` in `objects`' `info/alternates` (git reads
/// an absolute path there as it is).
fn list_as_alternate(dir: &std::path::Path, objects: &std::path::Path) -> String {
    format!(
        "echo {} >> {}",
        quoted(dir),
        quoted(&objects.join("info/alternates"))
    )
}

/// Opening the source or a workspace (design §3.15): a bare repository, a
/// moved source and locating variables git-delegate cannot honour are
/// state errors saying what to do; a workspace root that cannot be, a usage
/// error; gix's failures, `delegate::git` (or a full disk, read-only
/// filesystem or denied permission inside it), as before.
impl Explain for RepoError {
    fn explain(self) -> Error {
        let e = self;
        use RepoError as R;
        let message = e.to_string();
        let env = |help: String| Error::state(Code::UnsupportedEnvironment, message.clone(), help);
        match e {
            R::Lower(e) => e.explain(),
            R::Open { source, .. } | R::Workdir { source, .. } | R::Reopen { source, .. } => {
                Error::git(message, source)
            }
            R::Cwd { source } => Error::io(message, source),
            R::Moved { batch, root, .. } => Error::state(
                Code::SourceMoved,
                message,
                format!(
                    "a batch writes back into the working tree it was prepared in: if you moved it, move it back to {} and run `git delegate apply {batch}` there; to give the batch up, `git delegate drop {batch} --force`",
                    root.display()
                ),
            ),
            R::Foreign { dir, .. } => Error::state(
                Code::WorkspaceMissing,
                message,
                format!(
                    "a worker changed the workspace's registration: nothing was read or written through it; look at {} and `git worktree list`, then `git delegate drop` the batch (its work stays in that folder)",
                    dir.display()
                ),
            ),
            R::Bare { .. } => Error::state(
                Code::BareRepository,
                message,
                "git delegate needs a working tree to snapshot: run it inside a non-bare clone or a linked worktree",
            ),
            R::NoWorkspaceRoot => Error::usage(
                Code::NoWorkspaceRoot,
                message,
                "set `workspace.root` in .git/delegate.toml",
            ),
            R::RootInsideSource { .. } => Error::usage(
                Code::WorkspaceRootInsideSource,
                message,
                "tools such as cargo, npm and eslint search parent folders; set `workspace.root` in .git/delegate.toml to a folder outside the project",
            ),
            R::CommonDir { common_dir, .. } => env(format!(
                "run it without that variable (`unset GIT_COMMON_DIR`, then the command again): git delegate then works in the repository of this working tree, {}",
                common_dir.display()
            )),
            // Its workspaces (linked worktrees, which do not see the
            // variable) read objects in `objects` only: the variable goes,
            // and what git wrote there stays readable as an alternate.
            R::ObjectDir {
                dir,
                objects,
                is_dir: true,
            } => env(format!(
                "make the objects there readable from the repository (`{}`), then run the command again without the variable (`unset GIT_OBJECT_DIRECTORY`)",
                list_as_alternate(&dir, &objects)
            )),
            R::ObjectDir { is_dir: false, .. } => env(
                "run the command again without that variable (`unset GIT_OBJECT_DIRECTORY`)".into(),
            ),
            R::Alternate { dir, objects } => env(format!(
                "list it there (`{}`), so that the workspaces read it too, then run the command again; or run it without the variable (`unset GIT_ALTERNATE_OBJECT_DIRECTORIES`)",
                list_as_alternate(&dir, &objects)
            )),
        }
    }
}

/// A file that could not be stored as a blob or checked out: a failing
/// filter driver is `delegate::filter_failed` with what to fix; a full,
/// read-only or forbidden object store is named for what it is (with the
/// filesystem that holds it); a file that cannot be read,
/// `delegate::unreadable_file`.
impl Explain for BlobError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            BlobError::Filters { source } => Error::git(message, source),
            BlobError::DriverFailed {
                direction, driver, ..
            } => Error::state(
                Code::FilterFailed,
                message,
                format!(
                    "fix the filter driver (`git config filter.{driver}.{direction}`), or let git run without it with `git config filter.{driver}.required false`, then run the command again"
                ),
            ),
            BlobError::FilterFailed { .. } => Error::state(
                Code::FilterFailed,
                message,
                "fix the filter driver that the file's `filter` attribute names, or make it optional with `git config filter.<driver>.required false`, then run the command again",
            ),
            BlobError::ProcessStart { program, .. } => Error::state(
                Code::FilterFailed,
                message,
                format!(
                    "install `{program}` (git needs it for these files too: `git add` and `git checkout` fail the same way; for Git LFS, the `git-lfs` package), check that `{program}` runs from this shell, then run the command again"
                ),
            ),
            BlobError::ProcessStopped { driver, .. } => {
                let help = if driver == "lfs" {
                    "git-lfs says above why it could not give the files' content (often: the LFS objects are not in this clone and the LFS server cannot be reached): fetch them with `git lfs fetch` once it can be, or run the command with GIT_LFS_SKIP_SMUDGE=1 to give the workspaces the pointers instead, as `git worktree add` would".to_string()
                } else {
                    format!(
                        "the driver's own messages above say why: fix what they report (`git config filter.{driver}.process` shows the command), then run the command again"
                    )
                };
                Error::state(Code::FilterFailed, message, help)
            }
            BlobError::Store {
                objects,
                cause,
                source,
                ..
            } => match crate::error::io_cause(&source) {
                Some(io) => cause.error(message, Some(&objects), io),
                None => Error::git(message, source),
            },
            BlobError::Unreadable { .. } => Error::state(
                Code::UnreadableFile,
                message,
                "make the file readable (or remove it), then run the command again",
            ),
        }
    }
}

/// A private ref the git library failed on: `delegate::git` (or a full
/// disk, read-only filesystem or denied permission inside it, named for
/// what it is), as every failure inside gix.
impl Explain for RefError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            RefError::Name { source, .. } => Error::git(message, source),
            RefError::Write { source, .. }
            | RefError::Read { source, .. }
            | RefError::Delete { source, .. }
            | RefError::List { source } => Error::git(message, source),
        }
    }
}

/// A commit the git library failed on: `delegate::git` as for refs; a
/// commit that is not there, `delegate::missing_object`.
impl Explain for CommitError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            CommitError::Missing { .. } => Error::state(
                Code::MissingObject,
                message,
                "the repository lost objects git-delegate needs; run `git fsck`",
            ),
            CommitError::Write { source }
            | CommitError::BadId { source, .. }
            | CommitError::Read { source, .. } => Error::git(message, source),
        }
    }
}

/// Two trees the git library failed on: `delegate::git`; a tree past the
/// bound of design §3.18 "Limits": `delegate::invalid_path` (exit 3; a
/// command that lands tasks refuses such a task alone before it gets here).
impl Explain for DiffError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            DiffError::ReadTree { source } | DiffError::Compare { source } => {
                Error::git(message, source)
            }
            DiffError::TooMany { .. } => Error::state(
                Code::InvalidPath,
                format!("a proposal's tree holds {message}"),
                "nothing was changed; a worker's proposal never brings that many paths: drop it, and have its worker submit its real work",
            ),
        }
    }
}

/// The git command against a remote: `delegate::remote_failed`, with what
/// to check.
impl Explain for TransportError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        let help = match &e {
            TransportError::Spawn { .. } => "install git (git-delegate moves refs to and from remotes with the git command) and make sure it is on PATH".to_string(),
            TransportError::Failed { remote, .. } => format!(
                "check that the remote {remote} is reachable and accepts refs under refs/pi-delegate/ (run the command above to see git's own output), then run the command again"
            ),
        };
        Error::state(Code::RemoteFailed, message, help)
    }
}

/// Putting `ident` right in a checkout: `delegate::git` for the git
/// library's failures, an I/O error (named by its cause) for the files.
impl Explain for IdentError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            IdentError::Git { source, .. } => Error::git(message, source),
            IdentError::Smudge { source, .. } | IdentError::Write { source, .. } => {
                Error::io(message, source)
            }
        }
    }
}

/// A sparse checkout (design §3.15): a bad `--sparse` folder is a usage
/// error; the files and the index are I/O and git errors named by their
/// cause, as before.
impl Explain for SparseError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            SparseError::Read { source, .. } => Error::io(message, source),
            SparseError::Write { path, source } => Error::io_at(message, &path, source),
            SparseError::Index { source, .. } => Error::git(message, source),
            SparseError::Expand { source } => Error::git(message, source),
            SparseError::BadPattern { .. } => Error::usage(
                Code::BadPattern,
                message,
                "give --sparse a folder path relative to the repository's top folder, such as `--sparse src/app` (cone patterns: no wildcards, no `..`)",
            ),
        }
    }
}

/// The drivers a batch does not let run: a configuration that cannot be
/// edited in memory is a git error named by its cause, as before.
impl Explain for DriversError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            DriversError::Restrict { source } => Error::git(message, source),
        }
    }
}

/// Paths git refuses (design §3.18 "Paths"): a working tree holding them
/// is `delegate::invalid_path` (exit 3), naming them in the message and in
/// `error.invalid_paths` (the first `validate::NAMED`); a tree that cannot
/// be read is a git error named by its cause, as before.
impl Explain for ValidateError {
    fn explain(self) -> Error {
        let e = self;
        use crate::git::validate::NAMED;
        use crate::sys::paths::{doc_bytes, is_lossy, note_lossy};
        let message = e.to_string();
        match e {
            ValidateError::Tree { source, .. } => Error::git(message, source),
            ValidateError::InWorkingTree { found, .. } => {
                let mut details = serde_json::Map::new();
                details.insert(
                    "invalid_paths".into(),
                    found
                        .iter()
                        .take(NAMED)
                        .map(|f| serde_json::json!({"path": doc_bytes(&f.path), "reason": f.why}))
                        .collect::<Vec<_>>()
                        .into(),
                );
                let lossy = found.iter().take(NAMED).any(|f| is_lossy(&f.path));
                note_lossy(&mut details, lossy);
                Error::state(
                    Code::InvalidPath,
                    message,
                    "rename or remove them (`git add` refuses them too, as \"invalid path\"), then run the command again",
                )
                .with_details(details)
            }
        }
    }
}
