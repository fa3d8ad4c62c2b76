//! The snapshot of a working tree: everything on disk that `git add -A` would
//! take (tracked changes, deletions, untracked non-ignored files, modes,
//! symlinks), written as a git tree. The folder holds its two companions:
//! the source read only at the paths the proposals touch (`touched`) and
//! the index a workspace's snapshot found unusable, written again
//! (`reindex`); and its steps: the stat cache (`cache`), the indexes it
//! reads (`indexes`), the status walks (`status`) and the snapshot proper
//! as a sequence of steps (`take`). Above `git/` and `record/` (the stat cache is a batch's), below
//! everything that records or lands work.
//!
//! Owns: turning a working tree into a tree id, using the worktree's own index
//! only as a stat cache: only files whose stat data differ are hashed, through
//! the same clean filters as `git add`; and the source's private stat cache
//! (`source-index` in a batch's state folder): a copy of the user's index with
//! refreshed stat data, so that a stat-dirty user index (every file touched)
//! costs one re-hash per batch, not one per snapshot. A source is read as git
//! reads it (`assume-unchanged` and `skip-worktree` entries count at their
//! index content); a task's workspace (`snapshot_workspace`, design §3.2
//! step 1) by what is on disk only, and the untracked nested repositories
//! of either are named, never part of the tree. A workspace's index is a
//! cache too: one that is missing, cannot be decoded or fails its checksum
//! is read as its HEAD's tree with no stat data (every file hashed, as git
//! would after `rm .git/index && git reset`), and the index that should
//! stand there is handed back (`snapshot_workspace_rebuilding`, `Rebuilt`)
//! for the caller holding the repository lock to write (`reindex`).
//! It fails with `SnapshotError` (the step, and the gix or I/O error; the
//! paths git refuses, `validate`'s error); `ops::explain` words them.
//! Never: writes the worktree's index, a ref or a working-tree file; the index
//! it reads stays byte-for-byte unchanged. The private cache is only ever
//! written to a batch's state folder, by temp file and rename. Never lists
//! batches itself: which batches are the source's is `batch::of_source`.
//! Never words a help line or decides an error code.
//!
//! # The stat cache and racy entries
//!
//! An index entry says "a file with exactly this stat data had exactly this
//! content". That holds only if the file cannot have changed within the same
//! timestamp tick after its stat data were taken. git's answer (racy-git) is
//! to distrust entries not older than the index file. The cache does better:
//! before a snapshot starts it creates its temp file and reads that file's
//! mtime from the filesystem clock (the probe); an entry is recorded as
//! trusted only when its mtime and ctime are strictly older than the probe,
//! so any later change to the file (even one that restores the mtime) gives
//! it a newer ctime and is seen. Every other refreshed entry is stored
//! smudged (mtime zero): the next snapshot reads that file.
//!
//! When a snapshot uses the cache, the effective index is the user's index in
//! which an entry may take the cache's `(mode, id, stat)` for the same path:
//! only where the cache's entry is trusted and saw a later state of the file
//! than the user's entry (a later ctime, then mtime: any change to a file
//! moves its ctime). Any trusted `(stat -> content)` pair gives the same tree
//! (a file whose stat data differ is hashed), so the choice only decides how
//! much is read. The tracked set (which paths are in the index, conflicts,
//! intent-to-add, skip-worktree) always comes from the user's index.

mod cache;
mod indexes;
pub mod reindex;
mod status;
mod take;
pub mod touched;
mod vouch;

use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::{lower_from, Lower};
use crate::git::blob::BlobError;
use crate::git::repo::RepoError;
use crate::git::sparse::SparseError;
use crate::git::validate::ValidateError;
use cache::{find_cache, Probe, Refresh};
use take::{run, Own, Ran};

/// Why a snapshot (or the index a workspace's is rebuilt with) failed:
/// the step and the gix or I/O error, or the blob or sparse checkout it
/// could not read. `ops::explain` words them.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A step of the snapshot of the working tree `root` inside gix.
    #[error("snapshot of {root}: {step}")]
    Step {
        root: String,
        step: &'static str,
        #[source]
        source: gix::Error,
    },
    /// The index or the status of the working tree `root`.
    #[error("snapshot of {root}")]
    Read {
        root: String,
        #[source]
        source: gix::Error,
    },
    /// gix's status said what a snapshot never asks it for (`what`).
    #[error("snapshot of {root}: {what}")]
    Unexpected { root: String, what: &'static str },
    /// A thread of the snapshot panicked.
    #[error("a snapshot thread panicked")]
    Panicked,
    /// A tree, the index or the ignore rules, in a snapshot of the touched
    /// paths or a rebuilt index (`what` failed).
    #[error("{what}")]
    Git {
        what: &'static str,
        #[source]
        source: gix::Error,
    },
    /// What stands at a touched path cannot be read.
    #[error("cannot read {}", path.display())]
    ReadPath {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A rebuilt index of `task`'s workspace that cannot be written.
    #[error("cannot rebuild the index {} of task {task}'s workspace: {source}", path.display())]
    Reindex {
        path: PathBuf,
        task: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What a lower layer failed with, its own words: a file that cannot
    /// be stored (or whose filters cannot be set up), a sparse checkout
    /// that cannot be read or expanded, a source working tree holding paths
    /// git refuses, the workspace whose index a repair rebuilds (opened by
    /// its path).
    #[error(transparent)]
    Lower(#[from] Lower),
}

lower_from!(SnapshotError: BlobError, SparseError, ValidateError, RepoError);

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// The file name of the source's stat cache inside a batch's state folder.
pub const CACHE_FILE: &str = "source-index";

/// A working tree written as a tree.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree of the working tree.
    pub tree: ObjectId,
    /// The tree of `HEAD` (the empty tree on an unborn branch).
    pub head_tree: ObjectId,
    /// Paths whose content differs from `HEAD` (staged, unstaged, untracked).
    pub changes: usize,
    /// Untracked git repositories inside the working tree: left out (git
    /// would record them as embedded repositories without content). For a
    /// source, prepare warns; for a workspace, the task cannot apply (design
    /// §3.2 `nested_repository`).
    pub nested_repos: Vec<BString>,
    /// Files that had to be read (their stat data differed from the index,
    /// or they are new): the cost the index as a stat cache did not save.
    pub hashed: usize,
    /// A workspace's paths git refuses to add or check out (design §3.18
    /// "Paths"): left out of the tree, so that the task alone is refused
    /// (`invalid_path`) with the rest of its work recorded. A source
    /// holding such paths is an error that names them instead.
    pub invalid: Vec<crate::git::validate::Invalid>,
}

type Edit = Option<(EntryKind, ObjectId)>;

/// Snapshot the working tree of `repo`. Blobs and trees are written to the
/// repository's object store (or to memory, if `repo` keeps objects there).
///
/// When the working tree is the source of open batches, the newest stat
/// cache among them is used, and refreshed in place when this snapshot had to
/// read many files whose content had not changed.
pub fn snapshot(repo: &gix::Repository) -> Result<Snapshot> {
    let Some(slot) = find_cache(repo) else {
        return run(repo, None, None, Side::Source, Own::default()).map(|r| r.snap);
    };
    let probe = Probe::new(&slot.dir);
    let Ran {
        snap,
        refresh: refreshed,
        ..
    } = run(
        repo,
        slot.read.as_deref(),
        probe.as_ref(),
        Side::Source,
        Own::default(),
    )?;
    match (refreshed, probe) {
        (Refresh::Write(state), Some(probe)) => {
            // Best effort: a cache that cannot be written costs time, never correctness.
            let _ = probe.commit(*state, &slot.write);
        }
        (Refresh::Useless, _) => {
            if let Some(read) = &slot.read {
                let _ = std::fs::remove_file(read);
            }
        }
        _ => {}
    }
    Ok(snap)
}

/// Snapshot a task's workspace (design §3.2 step 1): only the files on disk
/// count. Unlike a source snapshot, the workspace's own index flags hide
/// nothing: `assume-unchanged` is ignored, and a `skip-worktree` entry counts
/// at its index content only while its file is absent from disk. Untracked
/// nested repositories are reported in [`Snapshot::nested_repos`] (the caller
/// decides: they are never part of the tree). No stat cache is used.
///
/// A workspace's index that cannot be used (missing, not decodable, a
/// checksum that does not match) lies about nothing: the snapshot reads
/// the workspace as if its index held its HEAD's tree without stat data
/// (see [`snapshot_workspace_rebuilding`]).
pub fn snapshot_workspace(repo: &gix::Repository) -> Result<Snapshot> {
    snapshot_workspace_rebuilding(repo).map(|(s, _)| s)
}

/// A workspace's index made anew by a snapshot that could not use the one
/// on disk (design §3.2 step 1, "a workspace's index is a cache").
pub struct Rebuilt {
    /// Why the index on disk could not be used.
    pub cause: String,
    /// The index that should stand there: the workspace's HEAD tree (the
    /// task's base, unless its worker moved HEAD), skip-worktree where its
    /// sparse checkout leaves a path out and nothing is on disk there, and
    /// the stat data of every file whose content HEAD holds (the others
    /// have none, so git reads them). No intent-to-add entries, no unmerged
    /// stages, no extensions: the caller adds what it knows (`reindex`).
    pub index: gix::index::State,
}

/// [`snapshot_workspace`], also handing back the index to write when the
/// workspace's own could not be used. The tree is the same either way:
/// every file on disk, as `git add -A` would record it given an index
/// equal to the workspace's HEAD tree.
pub fn snapshot_workspace_rebuilding(
    repo: &gix::Repository,
) -> Result<(Snapshot, Option<Rebuilt>)> {
    run(repo, None, None, Side::Workspace, Own::default()).map(|r| (r.snap, r.rebuilt))
}

/// What a task workspace's snapshot read, as git-delegate vouches for it
/// (design §3.20): the tree it wrote, and the index of exactly that tree's
/// entries with the stat data git-delegate itself took of each file (zero
/// where it cannot vouch for them: that file is read next time). What an
/// idle workspace's record is made of.
#[derive(Debug, Clone)]
pub struct Vouched {
    pub tree: ObjectId,
    pub index: gix::index::State,
}

/// [`snapshot_workspace_rebuilding`] of a task's workspace with
/// git-delegate's own stat `record` of it (`record::stat`; `None`: a
/// workspace of a batch prepared before records were kept): the only
/// stat data the snapshot trusts, so a forged workspace index hides no
/// change (design §3.20). With `vouch`, also the record of what it read,
/// where one can be made (no nested repository, no path left out, no
/// conflict or intent-to-add entry in its index).
pub fn snapshot_task(
    repo: &gix::Repository,
    record: Option<&gix::index::State>,
    vouch: bool,
) -> Result<(Snapshot, Option<Rebuilt>, Option<Vouched>)> {
    let ran = run(repo, None, None, Side::Workspace, Own { record, vouch })?;
    let vouched = ran.vouched.map(|index| Vouched {
        tree: ran.snap.tree,
        index,
    });
    Ok((ran.snap, ran.rebuilt, vouched))
}

/// Prove an idle workspace (`repo`) against git-delegate's own stat
/// `record` of it alone (design §3.20; its worker's index is never read):
/// the record with fresh stat data for the files that had to be read when
/// the workspace holds exactly the record's files (nothing changed,
/// deleted or added that is not ignored, no nested repository), else
/// `None`. Writes nothing.
pub fn prove(
    repo: &gix::Repository,
    record: &gix::index::State,
) -> Result<Option<gix::index::State>> {
    let Some(clock) = repo.workdir().and_then(vouch::Clock::at) else {
        return Ok(None);
    };
    vouch::prove(repo, record, clock)
}

/// Whose working tree a snapshot reads, which decides what the index flags mean.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The user's working tree: the index is read as git reads it, so an
    /// `assume-unchanged` or `skip-worktree` entry counts at its index content
    /// (git does not look at those files; design §3.1 "exactly the files
    /// `git status` would look at"; §3.15 sparse checkouts).
    Source,
    /// A task's workspace: see [`snapshot_workspace`].
    Workspace,
}

/// A refreshed stat cache waiting for the state folder of the batch being
/// prepared. Dropping it removes its temp file.
pub struct PendingCache {
    probe: Probe,
    state: gix::index::State,
}

impl PendingCache {
    /// Move the cache into `batch_dir` (best effort).
    pub fn keep(self, batch_dir: &Path) {
        let _ = self.probe.commit(self.state, &batch_dir.join(CACHE_FILE));
    }
}

/// The snapshot `prepare` takes of the source: like [`snapshot`], but a
/// refreshed cache is handed back to be kept in the new batch's folder
/// (`state_dir` must exist; the temp file lives there until then).
pub fn snapshot_for_prepare(
    repo: &gix::Repository,
    state_dir: &Path,
) -> Result<(Snapshot, Option<PendingCache>)> {
    let slot = find_cache(repo);
    let probe = Probe::new(state_dir);
    let read = slot.as_ref().and_then(|s| s.read.as_deref());
    let Ran {
        snap,
        refresh: refreshed,
        ..
    } = run(repo, read, probe.as_ref(), Side::Source, Own::default())?;
    let pending = match (refreshed, probe) {
        (Refresh::Write(state), Some(probe)) => Some(PendingCache {
            probe,
            state: *state,
        }),
        _ => None,
    };
    Ok((snap, pending))
}

fn tree_kind(mode: gix::index::entry::Mode) -> Option<EntryKind> {
    mode.to_tree_entry_mode().map(|m| m.kind())
}

/// The error for a gix failure of a snapshot step (`what`), naming a filter
/// process that could not start as such.
fn git_error<'a>(
    repo: &'a gix::Repository,
    step: &'static str,
) -> impl FnOnce(gix::Error) -> SnapshotError + 'a {
    move |source: gix::Error| {
        // A filter process that cannot start (git-lfs not installed).
        let root = display_root(repo);
        match crate::git::blob::process_start_failed(repo, &source, &root) {
            Some(e) => e.into(),
            None => SnapshotError::Step { root, step, source },
        }
    }
}

fn display_root(repo: &gix::Repository) -> String {
    repo.workdir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| repo.git_dir().display().to_string())
}
