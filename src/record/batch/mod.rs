//! Batch state: `<common-dir>/delegate/batches/<uuid>/batch.toml`, one per
//! open batch, and how a `BATCH` argument names one (design §3). This file
//! holds the model (`Batch`, `Task`, their states) and its error; its files
//! the state folder's layout (`layout`), listing and choosing (`select`),
//! name checks (`names`) and a prepare under way (`progress`), all
//! re-exported here (`record::batch::X`).
//!
//! Owns: the on-disk record of batches and tasks, written atomically
//! (temp file, fsync, rename, fsync of the folder: `fs::write_atomic`), and
//! what can be read off it alone: a task's workspace kind (`Task::kind`;
//! the record's `mode` is `config::Mode`, spelt `worktree`/`scratch` as
//! before), the `[preparing]` marker and whether its prepare still runs
//! (`progress`; `preparing` gives it its meaning), the proposal a discarded
//! task keeps (`discard_kept`); the one rule for listing batches (`list`,
//! `list_ok`, `of_source`) that every reader asks; what carrying ignored
//! files gave each task (`CarryStats`). Below every module that works on
//! batches: it imports only the types it records (`config::Mode`,
//! `lease::Lease`), none of which imports it back. Its failures are
//! `BatchError` (the batch, task or argument, the I/O cause).
//! Never: creates workspaces or refs (see `workspace` and `refs`); words a
//! help line or decides an error code (`ops::explain` does).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod layout;
mod names;
mod progress;
mod select;

pub use layout::*;
pub use names::*;
pub use progress::*;
pub use select::*;

use crate::record::lease::Lease;
use crate::sys::fs::FsError;

/// Why a batch could not be recorded, listed or chosen, or a task named.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A task named on the command line that is not open.
    #[error("task {name:?} of batch {batch} is not open (it is {state})")]
    TaskNotOpen {
        name: String,
        batch: String,
        state: &'static str,
    },
    /// A task name the batch (short id) does not have; `tasks` are its own.
    #[error("batch {batch} has no task named {name:?}")]
    UnknownTask {
        name: String,
        batch: String,
        tasks: Vec<String>,
    },
    /// A batch record TOML cannot hold (a path that is not UTF-8).
    #[error("cannot record batch {id}: {source}")]
    Record {
        id: String,
        #[source]
        source: toml::ser::Error,
    },
    /// The batch's state folder cannot be made.
    #[error("cannot create {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `batch.toml` (or its staged copy) cannot be written.
    #[error(transparent)]
    Write(#[from] FsError),
    /// The batch's state folder cannot be renamed away.
    #[error("cannot remove {}", dir.display())]
    Remove {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The folder of batches cannot be listed.
    #[error("cannot read {}", dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A batch whose `batch.toml` cannot be read (`problem` says why).
    #[error("the state of batch {} is corrupt: {problem}", short(id))]
    Corrupt { id: String, problem: String },
    /// `BATCH` omitted and no batch or several (their names); a `BATCH`
    /// that is no label and too short a prefix, or names none, or several.
    #[error("this repository has no open batch")]
    NoBatch,
    #[error("this repository has {} open batches: {}", names.len(), names.join(", "))]
    SeveralBatches { names: Vec<String> },
    #[error("no batch is labelled {arg:?}, and a batch id prefix needs at least 4 characters")]
    ShortPrefix { arg: String },
    #[error("no open batch matches {arg:?}")]
    NoMatch { arg: String },
    #[error("{arg:?} matches several batches: {}", names.join(", "))]
    AmbiguousPrefix { arg: String, names: Vec<String> },
    /// A task name that cannot name a folder and a ref component.
    #[error("{name:?} is not a valid task name")]
    BadTaskName { name: String },
}

type Result<T, E = BatchError> = std::result::Result<T, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Open,
    Applied,
    NoChanges,
    Discarded,
    Conflict,
    Failed,
    /// Refreshed with conflicts (design §3.12): its workspace holds conflict
    /// markers and unmerged index entries until its worker resolves them.
    Conflicted,
    /// Its addition made `apply --verify` fail (design §3.10); kept like a conflict.
    Rejected,
    /// `apply --verify` failed without any task, so nothing was applied.
    Unverified,
    /// `run`'s worker for it failed or timed out (design §3.13): not
    /// applied, its work kept in the open batch.
    WorkerFailed,
    /// A remote task (design §3.14) whose worker has not submitted yet: an
    /// apply outcome only; the task stays `open` in the record.
    NotSubmitted,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Open => "open",
            TaskState::Applied => "applied",
            TaskState::NoChanges => "no_changes",
            TaskState::Discarded => "discarded",
            TaskState::Conflict => "conflict",
            TaskState::Failed => "failed",
            TaskState::Conflicted => "conflicted",
            TaskState::Rejected => "rejected",
            TaskState::Unverified => "unverified",
            TaskState::WorkerFailed => "worker_failed",
            TaskState::NotSubmitted => "not_submitted",
        }
    }

    /// Still owned by the batch: its work has not been applied or dropped.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            TaskState::Open
                | TaskState::Conflict
                | TaskState::Failed
                | TaskState::Conflicted
                | TaskState::Rejected
                | TaskState::Unverified
                | TaskState::WorkerFailed
                | TaskState::NotSubmitted
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Task {
    pub name: String,
    pub state: TaskState,
    /// The workspace folder.
    pub root: PathBuf,
    /// The worktree registration under `<common-dir>/worktrees/`.
    pub worktree_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The proposal ref kept for recovery (conflict, failed, rescued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_ref: Option<String>,
    /// The patch kept for recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PathBuf>,
    /// What prepare put into the workspace besides the baseline: ignored
    /// files carried (worktree mode) or the whole copy (scratch mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<CarryStats>,
    /// When the task last changed state (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// What identifies the workspace folder prepare made (worktree mode;
    /// absent in batches recorded before it was kept, see
    /// `workspace::identify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<Folder>,
    /// The task's own base commit once refreshed (design §3.12); absent:
    /// the batch's baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The files the last refresh left with conflicts (relative to the
    /// workspace root), while the task is `conflicted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicted_paths: Vec<String>,
    /// The log of the verification run that rejected it (design §3.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_log: Option<PathBuf>,
    /// A remote task (design §3.14): no local workspace (`root` empty,
    /// `worktree_id` [`REMOTE_WORKTREE_ID`]); its worker joins through the
    /// batch's remote and submits its proposal there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
    /// A remote task's proposal as apply last fetched it (full hex; design
    /// §3.14 "Remote refs"): the only value of its proposal ref the batch's
    /// end deletes on the remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched: Option<String>,
    /// A workspace of the pool (design §3.20): the lock reason its
    /// registration holds while it serves this task, the only time it is
    /// this task's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
}

/// `task.worktree_id` of a remote task: it has no workspace here.
pub const REMOTE_WORKTREE_ID: &str = "remote";

/// The git remote a batch's remote tasks go through (design §3.14).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    /// As given to `prepare --remote` (a remote's name, or a URL).
    pub name: String,
    /// The URL workers join from.
    pub url: String,
}

/// The identity of a folder prepare made: device and inode of the
/// workspace root, and its real path (no symlink in it), taken when it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folder {
    pub dev: u64,
    pub ino: u64,
    pub path: PathBuf,
    /// A btrfs subvolume's id (its `statfs` filesystem id, 16 hex digits:
    /// TOML has no unsigned 64-bit integers), which stands in for `dev`
    /// (design §3.17): absent for a plain folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subvolume: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Batch {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: String,
    pub source: PathBuf,
    /// The caller's folder relative to the source root at prepare time.
    #[serde(default)]
    pub prefix: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_head: Option<String>,
    pub baseline: String,
    pub mode: crate::config::Mode,
    #[serde(default)]
    pub forbid_commit: bool,
    pub lease: Lease,
    pub tasks: Vec<Task>,
    /// Present while the batch is being prepared (design §3.15 "Killed
    /// commands"): a batch that still has it after its prepare is gone is
    /// incomplete, never applied nor rescued (see `preparing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparing: Option<Marker>,
    /// The remote of its remote tasks (design §3.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Remote>,
    /// The workspaces' sparse-checkout patterns, as `git sparse-checkout
    /// list` prints them there (design §3.15); absent: full workspaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse: Option<Vec<String>>,
    /// The filter and merge drivers the config defined at prepare (design
    /// §3.18 "Drivers"): the only ones that run for the batch. Absent in a
    /// batch recorded before they were: then none runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drivers: Option<crate::git::drivers::Drivers>,
}

/// `task.worktree_id` of a scratch task: it has no worktree registration
/// (how the kind of a task's workspace is told, see [`Task::kind`]).
pub const SCRATCH_WORKTREE_ID: &str = "scratch";

impl Task {
    /// A task as prepare records it: open, with nothing kept yet.
    pub fn open(name: String, root: PathBuf, worktree_id: String) -> Task {
        Task {
            name,
            state: TaskState::Open,
            root,
            worktree_id,
            reason: None,
            proposal_ref: None,
            patch: None,
            carried: None,
            updated_at: None,
            folder: None,
            base: None,
            conflicted_paths: Vec::new(),
            verify_log: None,
            remote: false,
            fetched: None,
            lock: None,
        }
    }

    /// A remote task as prepare records it (design §3.14).
    pub fn open_remote(name: String) -> Task {
        Task {
            remote: true,
            ..Task::open(name, PathBuf::new(), REMOTE_WORKTREE_ID.to_string())
        }
    }

    /// The commit the task's work is measured from: its own base once
    /// refreshed (design §3.12), else the batch's baseline.
    pub fn base_or<'a>(&'a self, baseline: &'a str) -> &'a str {
        self.base.as_deref().unwrap_or(baseline)
    }

    /// The kind of the task's workspace: a scratch copy has the worktree id
    /// [`SCRATCH_WORKTREE_ID`], a linked worktree its own registration.
    pub fn kind(&self) -> crate::config::Mode {
        kind_of(&self.worktree_id)
    }

    /// The task's working folder: its workspace root plus the caller's
    /// prefix at prepare time (no trailing slash at the root).
    pub fn cwd(&self, prefix: &Path) -> PathBuf {
        if prefix.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(prefix)
        }
    }
}

/// The kind of a workspace by its worktree id (see [`Task::kind`]).
pub fn kind_of(worktree_id: &str) -> crate::config::Mode {
    if worktree_id == SCRATCH_WORKTREE_ID {
        crate::config::Mode::Scratch
    } else {
        crate::config::Mode::Worktree
    }
}

impl Batch {
    /// A one-task batch record standing in for a batch whose record is gone
    /// or cannot be read (a kept proposal's, a corrupt one's), for the
    /// steps that take a `Batch`: worktree mode, no label, prefix or lease
    /// owner.
    pub fn stand_in(
        id: &str,
        source: &Path,
        created_at: String,
        baseline: String,
        task: Task,
    ) -> Batch {
        Batch {
            id: id.to_string(),
            label: None,
            created_at,
            source: source.to_path_buf(),
            prefix: PathBuf::new(),
            source_head: None,
            baseline,
            mode: crate::config::Mode::Worktree,
            forbid_commit: false,
            sparse: None,
            drivers: None,
            lease: Lease::new(1, None),
            preparing: None,
            remote: None,
            tasks: vec![task],
        }
    }

    /// The first 8 hex digits of the id.
    pub fn short(&self) -> &str {
        short(&self.id)
    }

    pub fn open_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.state.is_open())
    }

    pub fn task(&self, name: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.name == name)
    }

    /// The task a user named, which must be open: `delegate::unknown_task`
    /// or `delegate::task_not_open` (exit 2) otherwise. Every command that
    /// takes task names (`apply --only/--discard`, `diff`, `path`) asks here.
    pub fn open_task_named(&self, name: &str) -> Result<&Task> {
        let t = self.task_named(name)?;
        if !t.state.is_open() {
            return Err(BatchError::TaskNotOpen {
                name: name.to_string(),
                batch: self.short().to_string(),
                state: t.state.as_str(),
            });
        }
        Ok(t)
    }

    /// The task a user named, open or not: `delegate::unknown_task` (exit 2)
    /// naming the batch's tasks otherwise.
    pub fn task_named(&self, name: &str) -> Result<&Task> {
        self.task(name).ok_or_else(|| BatchError::UnknownTask {
            name: name.to_string(),
            batch: self.short().to_string(),
            tasks: self.tasks.iter().map(|t| t.name.clone()).collect(),
        })
    }
}

pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// What was carried into one destination (`carry`, `scratch`), as the
/// batch records it for each task (`Task::carried`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CarryStats {
    /// Regular files and symlinks written.
    pub files: u64,
    /// Bytes of the regular files written.
    pub bytes: u64,
    /// Regular files cloned with FICLONE (sharing the source's extents).
    pub cloned: u64,
    /// Regular files whose data was copied.
    pub copied: u64,
    /// Symlinks recreated (they count in `files`, not in `cloned`/`copied`).
    pub symlinks: u64,
}

impl CarryStats {
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "files": self.files,
            "bytes": self.bytes,
            "cloned": self.cloned,
            "copied": self.copied,
            "symlinks": self.symlinks,
        })
    }
}

/// Is `name` the proposal ref a discarded task of `b` keeps (design §3.16
/// "kept")? It is no longer the batch's: gc removes it once its commit is
/// older than `gc.keep-failed`, whether the batch is open or not.
pub fn discard_kept(b: &Batch, name: &str) -> bool {
    b.tasks
        .iter()
        .any(|t| t.state == TaskState::Discarded && t.proposal_ref.as_deref() == Some(name))
}
