//! The one error of the `workspace/` room (`WorkspaceError`), as `snapshot/`
//! has one `SnapshotError`: making, filling, carrying into, sharing a root
//! with, pooling, deriving and removing workspaces and scratch copies fail
//! with it, each failure a variant once, whichever step meets it.
//!
//! Owns: what failed (the path or file, the cause); a path's I/O error is a
//! `sys::fs::PathError` (`cannot <op> <path>`), passed on as `Lower`, or
//! held by `At`, which says which filesystem a full disk names; what a
//! lower layer failed with is passed on in one variant, `Lower`
//! (`error::Lower`, `lower_from!`).
//! Never: words a help line or decides an error code (`ops::explain`'s
//! `workspace.rs` does); decides how an OS or gix error is classified
//! (`error` does).

use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::ObjectId;

use super::refused::Refused;
use super::Cause;
use crate::error::{lower_from, Lower};
use crate::git::blob::BlobError;
use crate::git::diff::DiffError;
use crate::git::drivers::DriversError;
use crate::git::ident::IdentError;
use crate::git::repo::RepoError;
use crate::git::sparse::SparseError;
use crate::record::batch::BatchError;
use crate::record::pool::PoolError;
use crate::snapshot::SnapshotError;
use crate::sys::fs::{FsError, PathError};

/// Why a workspace (or a scratch copy, or its submodules, or a folder
/// below the workspace root) could not be made, filled, taken from the
/// pool, derived or removed. The message is the `Display` (followed by
/// the cause, as `ops::explain` words it).
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// What a lower layer failed with, in its own words: opening a
    /// workspace's repository (`git/repo`'s `open_worktree`), a workspace's
    /// snapshot, the pool's records, a checkout's filter driver that failed
    /// (`git/blob`'s `checkout_filter`), a path's I/O error named by its
    /// cause (`sys::fs::PathError`), a `.git` file written, a real path
    /// resolved or a folder removed through `sys::fs`, a workspace's
    /// sparse-checkout files, putting `ident` right in a checkout, the
    /// trees of a reused workspace and of the baseline, the batch records a
    /// scratch sweep reads, restricting a scratch copy's filter drivers; and
    /// a failed creation worded before what was made is removed
    /// (`create.rs`'s `undone`: a full disk is named by what ran out, while
    /// the workspaces still stand).
    #[error(transparent)]
    Lower(#[from] Lower),

    /// The same, where a full disk names the filesystem holding `at`
    /// (and, for what is made under the workspace root, `in_root`, says
    /// that the root can move).
    #[error("{io}")]
    At {
        at: PathBuf,
        in_root: bool,
        #[source]
        io: PathError,
    },
    /// A file of the old tree a reuse takes away.
    #[error("cannot remove {file} in {}", root.display())]
    RemoveIn {
        file: String,
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The patterns of `workspace.copy-ignored` or `--copy-ignored`.
    #[error("cannot read the {name} patterns")]
    Patterns {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// The baseline's index for a workspace at `root`, or its checkout's
    /// options.
    #[error("cannot check out {}", root.display())]
    Checkout {
        root: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// The checkout of (or the index of) the workspace at `root` (a full
    /// disk or the like under it is named as such).
    #[error("cannot check out {}", root.display())]
    CheckoutFiles {
        root: PathBuf,
        #[source]
        source: Cause,
    },
    /// A file of the checkout that could not be written.
    #[error("cannot write {file} in {}", root.display())]
    WriteFile {
        file: String,
        root: PathBuf,
        #[source]
        source: Cause,
    },
    /// A path of the checkout where something already is.
    #[error("cannot write {file} in {}: something is in the way", root.display())]
    InTheWay { file: String, root: PathBuf },
    /// A path too long for the kernel below `root`.
    #[error("cannot write {file} in {}: file name too long", root.display())]
    TooLong { file: String, root: PathBuf },
    /// The object database, shared with the checkout's threads.
    #[error("cannot open objects")]
    Objects {
        #[source]
        source: Cause,
    },
    /// Ctrl-C while workspaces were made, filled or taken from the pool.
    #[error("interrupted")]
    Interrupted,
    /// A checkout or copying thread that panicked.
    #[error("a {what} thread panicked")]
    Panicked { what: &'static str },

    /// A workspace folder where one of ours is planned.
    #[error("the workspace folder {} already exists", root.display())]
    Exists { root: PathBuf },
    /// A registered folder that changed before its snapshot replaced it
    /// (`verification`: a verification workspace's).
    #[error("the workspace folder {} was changed while it was made", root.display())]
    Changed { root: PathBuf, verification: bool },
    /// A registration already at the name a reuse moves one to.
    #[error("a worktree named {id} is already registered at {}", path.display())]
    Registered { id: String, path: PathBuf },

    /// A carried entry that would replace a file of the destination.
    #[error("cannot carry {}: {} already exists", file.display(), dest.display())]
    Carried { file: PathBuf, dest: PathBuf },
    /// A filesystem (pair) that cannot clone, for a clone-only walk.
    #[error("the filesystem cannot clone {} into {} ({source}); scratch workspaces are reflink copies and are never made by copying the data", file.display(), dest.display())]
    NoReflink {
        file: PathBuf,
        dest: PathBuf,
        source: std::io::Error,
    },
    /// A `copy-ignored` value with a line break.
    #[error("the copy-ignored pattern {pattern:?} spans several lines")]
    MultiLine { pattern: String },
    /// `.worktreeinclude` that is not a regular file.
    #[error("{} is not a regular file", path.display())]
    IncludeNotFile { path: PathBuf },
    /// The source's ignored files.
    #[error("cannot list the ignored files of the source")]
    List {
        #[source]
        source: gix::Error,
    },

    /// A folder below the workspace root refused (another user's, a
    /// symlink, ...): never entered.
    #[error("the folder {} of the workspace root {}", .0.path.display(), .0.describe())]
    Unsafe(Refused),
    /// A repository folder whose path has no parent to be the root.
    #[error("{} cannot hold workspaces", base.display())]
    NoRoot { base: PathBuf },

    /// A scratch copy that is not self-contained (`why` says how).
    #[error("the scratch copy {} cannot be handed out: {why}", root.display())]
    Refused { root: PathBuf, why: String },
    /// A source root at the filesystem root.
    #[error("{} has no parent folder for scratch copies", root.display())]
    NoParent { root: PathBuf },
    /// A source whose `.git` is a file or a symlink.
    #[error("{} is {}, not the repository folder: the source is a linked worktree or uses a gitfile, and a copy of it would share its git metadata with the source", dot_git.display(), if *symlink { "a symlink" } else { "a file" })]
    GitFile { dot_git: PathBuf, symlink: bool },
    /// A source whose `.git` is not its common folder.
    #[error("{} is not the repository's common folder {}", dot_git.display(), common_dir.display())]
    NotCommonDir {
        dot_git: PathBuf,
        common_dir: PathBuf,
    },
    /// A planned scratch root without a container folder.
    #[error("a scratch root has no container")]
    NoContainer,
    /// A scratch copy's owner marker that cannot be written as TOML.
    #[error("cannot record the owner of {}: {source}", root.display())]
    Owner {
        root: PathBuf,
        source: toml::ser::Error,
    },
    /// A scratch copy's index, given the copied files' stat data.
    #[error("cannot refresh the index of {}", root.display())]
    ScratchIndex {
        root: PathBuf,
        #[source]
        source: gix::Error,
    },

    /// The index of a superproject (or of a submodule with nested ones).
    #[error("cannot read the index")]
    Index {
        #[source]
        source: Cause,
    },
    /// A submodule whose repository is its `.git` folder (the old layout).
    #[error("the submodule {shown} keeps its repository inside its folder ({}), which git delegate cannot share with workspaces", dotgit.display())]
    Inside { shown: String, dotgit: PathBuf },
    /// A submodule with another commit (or none) checked out than the one
    /// its superproject records.
    #[error("{}", head_moved(&.0.shown, .0.head, .0.commit))]
    HeadMoved(Box<Moved>),
    /// A submodule with modified tracked files.
    #[error("the submodule {shown} has uncommitted changes ({} is modified)", crate::sys::paths::quote(changed.as_ref()))]
    Modified {
        shown: String,
        dir: PathBuf,
        changed: BString,
    },
    /// The status of a submodule's working tree.
    #[error("cannot read the status of {}", dir.display())]
    Status {
        dir: PathBuf,
        #[source]
        source: Cause,
    },
    /// The commit a nested submodule's parent was given.
    #[error("cannot read a submodule's commit")]
    ParentCommit {
        #[source]
        source: Cause,
    },
    /// The tree holding a gitlink.
    #[error("cannot read a tree")]
    Tree {
        #[source]
        source: Cause,
    },
    /// A submodule's folder in a fresh workspace that is not empty.
    #[error("cannot check out the submodule {shown} in {}: its folder is not empty", root.display())]
    NotEmpty { shown: String, root: PathBuf },
    /// A registration of that name the submodule's repository already has.
    #[error("a worktree named {id} is already registered at {}", dir.display())]
    SubmoduleRegistered {
        id: String,
        dir: PathBuf,
        git_dir: PathBuf,
    },
    /// Reading what to check out for a submodule at `dest`, or writing its
    /// index.
    #[error("cannot check out the submodule at {}", dest.display())]
    SubmoduleCheckout {
        dest: PathBuf,
        #[source]
        source: Cause,
    },
    /// The checkout's files (a full disk under `dest` is named as such).
    #[error("cannot check out the submodule at {}", dest.display())]
    SubmoduleFiles {
        dest: PathBuf,
        #[source]
        source: Cause,
    },
    /// A file of that checkout that could not be written.
    #[error("cannot check out the submodule at {}: cannot write {file}: {error}", dest.display())]
    SubmoduleFile {
        dest: PathBuf,
        file: String,
        error: String,
    },
}

lower_from!(
    WorkspaceError: RepoError,
    SnapshotError,
    PoolError,
    BlobError,
    PathError,
    FsError,
    SparseError,
    IdentError,
    DiffError,
    BatchError,
    DriversError,
    crate::error::Error,
);

/// The facts of [`WorkspaceError::HeadMoved`].
#[derive(Debug)]
pub struct Moved {
    pub shown: String,
    /// The submodule's folder, its superproject's and the gitlink's path in
    /// that one.
    pub dir: PathBuf,
    pub root: PathBuf,
    pub path: BString,
    pub commit: ObjectId,
    pub head: Option<ObjectId>,
    pub nested: bool,
}

fn head_moved(shown: &str, head: Option<ObjectId>, commit: ObjectId) -> String {
    let recorded = commit.to_hex_with_len(12);
    match head {
        Some(h) => format!(
            "the submodule {shown} has commit {} checked out, not {recorded}, the commit its superproject records",
            h.to_hex_with_len(12)
        ),
        None => format!(
            "the submodule {shown} has no commit checked out (its superproject records {recorded})"
        ),
    }
}

/// What [`WorkspaceError::at`] is given for a failure under the workspace
/// root (`true`) or elsewhere (`false`).
pub(crate) const IN_ROOT: bool = true;

impl WorkspaceError {
    /// `op` on `path` failed, named by its cause (a `PathError`, passed on
    /// as [`WorkspaceError::Lower`]).
    pub(crate) fn io<'a>(
        op: &'static str,
        path: &'a Path,
    ) -> impl Fn(std::io::Error) -> Self + Copy + 'a {
        move |source| PathError::on(op, path)(source).into()
    }

    /// `op` on `path` failed, a full disk naming the filesystem of `at`
    /// ([`WorkspaceError::At`]; `in_root`: made under the workspace root,
    /// [`IN_ROOT`]).
    pub(crate) fn at<'a>(
        op: &'static str,
        path: &'a Path,
        (at, in_root): (&'a Path, bool),
    ) -> impl Fn(std::io::Error) -> Self + Copy + 'a {
        move |source| Self::At {
            at: at.to_path_buf(),
            in_root,
            io: PathError::on(op, path)(source),
        }
    }
}
