//! Batch state: `<common-dir>/delegate/batches/<uuid>/batch.toml`, one per
//! open batch, and how a `BATCH` argument names one (design §3).
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

/// The write-back journal's file name inside a batch folder (design §7).
pub const JOURNAL_FILE: &str = "writeback.journal";

/// Where a batch's logs go (`<state>/logs/<uuid>/`): its workers' (design
/// §3.13) and its verification runs' (design §3.10).
pub fn logs_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("logs").join(id)
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

/// The log of task `task`'s worker in `run` (design §3.13).
pub fn worker_log(state_dir: &Path, id: &str, task: &str) -> PathBuf {
    logs_dir(state_dir, id).join(format!("{task}.log"))
}

/// Where batches live in a state dir.
pub fn batches_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("batches")
}

/// Where undo entries live in a state dir (design §3.11): one folder per
/// apply id, holding its entry file and, while an undo writes, its journal.
pub fn undo_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("undo")
}

pub fn batch_dir(state_dir: &Path, id: &str) -> PathBuf {
    batches_dir(state_dir).join(id)
}

/// The text of a batch's `batch.toml`.
pub fn to_toml(batch: &Batch) -> Result<String> {
    toml::to_string_pretty(batch).map_err(|source| BatchError::Record {
        id: batch.id.clone(),
        source,
    })
}

pub fn save(state_dir: &Path, batch: &Batch) -> Result<()> {
    let dir = batch_dir(state_dir, &batch.id);
    if let Err(source) = std::fs::create_dir_all(&dir) {
        return Err(BatchError::CreateDir { dir, source });
    }
    Ok(crate::sys::fs::write_atomic(
        &dir.join("batch.toml"),
        to_toml(batch)?.as_bytes(),
    )?)
}

/// Write `batch` as it will be once a write-back commits: under a staged
/// name next to its `batch.toml`, which the write-back renames over it at
/// its commit point (`writeback::Then`, design §7 "What recovery
/// finishes"). Returns (staged, final) paths.
pub fn stage(state_dir: &Path, batch: &Batch) -> Result<(PathBuf, PathBuf)> {
    let dir = batch_dir(state_dir, &batch.id);
    let staged = dir.join("batch.toml.staged");
    crate::sys::fs::write_atomic(&staged, to_toml(batch)?.as_bytes())?;
    Ok((staged, dir.join("batch.toml")))
}

/// Remove a batch's state folder, once everything else of the batch is
/// gone: first renamed to a hidden name (`.<id>.removed-<pid>`, which no
/// command reads as a batch) in one step and the parent fsync'd, so the
/// batch disappears whole, never as a folder without a readable
/// `batch.toml` (reported as corrupt). Gone already is fine. A
/// `delegate.toml` changed while the batch was open stays unconfirmed
/// after it (`trust::batch_ended`, design §3.18).
pub fn remove_state(state_dir: &Path, id: &str) -> Result<()> {
    crate::record::trust::batch_ended(state_dir);
    let dir = batch_dir(state_dir, id);
    let parent = batches_dir(state_dir);
    let hidden = parent.join(format!(".{id}.removed-{}", std::process::id()));
    match std::fs::rename(&dir, &hidden) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(BatchError::Remove { dir, source }),
    }
    crate::sys::fs::sync_dir(&parent);
    // What a failure here leaves is hidden and holds nothing of value.
    let _ = std::fs::remove_dir_all(&hidden);
    Ok(())
}

/// One entry of the state folder: a batch, or a folder whose record is unreadable.
#[derive(Debug)]
pub enum Entry {
    Batch(Box<Batch>),
    Broken { id: String, problem: String },
}

/// The entries of a state folder (`batches/`, `undo/`), but hidden ones (a
/// batch's state on its way out, `remove_state`, or in); none if no folder.
pub fn visible_entries(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let rd = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        rd => rd?,
    };
    rd.map(|e| e.map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())))
        .filter(|e| !e.as_ref().is_ok_and(|(id, _)| id.starts_with('.')))
        .collect()
}

/// Every batch of the repository, oldest first.
pub fn list(state_dir: &Path) -> Result<Vec<Entry>> {
    let dir = batches_dir(state_dir);
    let found = visible_entries(&dir).map_err(|source| BatchError::List { dir, source })?;
    let mut out = Vec::new();
    for (id, folder) in found.into_iter().filter(|(_, f)| f.is_dir()) {
        let path = folder.join("batch.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => match toml::from_str::<Batch>(&text) {
                Ok(b) => out.push(Entry::Batch(Box::new(b))),
                Err(e) => out.push(Entry::Broken {
                    id,
                    problem: format!("{} is not valid: {}", path.display(), e.message()),
                }),
            },
            Err(e) => out.push(Entry::Broken {
                id,
                problem: format!("cannot read {}: {e}", path.display()),
            }),
        }
    }
    out.sort_by(|a, b| match (a, b) {
        (Entry::Batch(a), Entry::Batch(b)) => a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)),
        (Entry::Batch(_), _) => std::cmp::Ordering::Less,
        (_, Entry::Batch(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    Ok(out)
}

pub fn list_ok(state_dir: &Path) -> Result<Vec<Batch>> {
    Ok(list(state_dir)?
        .into_iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(*b),
            Entry::Broken { .. } => None,
        })
        .collect())
}

/// The readable batches whose recorded source is the working tree `root`
/// (canonical), oldest first.
pub fn of_source(state_dir: &Path, root: &Path) -> Result<Vec<Batch>> {
    Ok(list_ok(state_dir)?
        .into_iter()
        .filter(|b| b.source == root)
        .collect())
}

/// Resolve a `BATCH` argument (design §3) among open batches: see [`choose`].
/// (Kept for callers that hold a list of readable batches only.)
/// A batch whose state is unreadable is never returned: naming one is
/// `delegate::corrupt_batch` (exit 3, with the command that removes it).
#[allow(dead_code)]
pub fn select(batches: Vec<Batch>, arg: Option<&str>) -> Result<Batch> {
    select_entry(
        batches
            .into_iter()
            .map(|b| Entry::Batch(Box::new(b)))
            .collect(),
        arg,
    )
}

/// [`select`] among every entry of the state folder, so that naming a
/// batch whose `batch.toml` cannot be read says so.
pub fn select_entry(entries: Vec<Entry>, arg: Option<&str>) -> Result<Batch> {
    match choose(entries, arg)? {
        Entry::Batch(b) => Ok(*b),
        Entry::Broken { id, problem } => Err(corrupt(&id, &problem)),
    }
}

/// [`select_entry`] of the batches of `state_dir`.
pub fn select_open(state_dir: &Path, arg: Option<&str>) -> Result<Batch> {
    select_entry(list(state_dir)?, arg)
}

/// The error for a batch whose state cannot be read (exit 3).
pub fn corrupt(id: &str, problem: &str) -> BatchError {
    BatchError::Corrupt {
        id: id.to_string(),
        problem: problem.to_string(),
    }
}

/// Does `arg` name the batch `id`: its full id, or a prefix of at least 4
/// characters of it (any case)?
fn names_id(id: &str, arg: &str, prefix: bool) -> bool {
    let lower = arg.to_ascii_lowercase();
    if prefix {
        lower.len() >= 4 && id.starts_with(&lower)
    } else {
        id == lower
    }
}

/// Resolve a `BATCH` argument (design §3) among the entries of the state
/// folder: a full id first (so that no label can shadow an id), then a
/// label, then a unique prefix of at least 4 characters of an id; omitted
/// means the only readable batch whose prepare completed (or, when there is
/// none, the only readable one, or the only unreadable one).
pub fn choose(entries: Vec<Entry>, arg: Option<&str>) -> Result<Entry> {
    let name = |e: &Entry| match e {
        Entry::Batch(b) => match &b.label {
            Some(l) => format!("{} ({l})", b.short()),
            None => b.short().to_string(),
        },
        Entry::Broken { id, .. } => format!("{} (corrupt)", short(id)),
    };
    let id_of = |e: &Entry| match e {
        Entry::Batch(b) => b.id.clone(),
        Entry::Broken { id, .. } => id.clone(),
    };
    let Some(arg) = arg else {
        // Omitted, BATCH means the only batch there is work in: a readable
        // batch whose prepare completed; failing that, a readable one (its
        // prepare never completed, design §3.15); failing that, the only one.
        let complete = |e: &Entry| matches!(e, Entry::Batch(b) if b.preparing.is_none());
        let readable = |e: &Entry| matches!(e, Entry::Batch(_));
        let pool: Vec<Entry> = if entries.iter().any(complete) {
            entries.into_iter().filter(complete).collect()
        } else if entries.iter().any(readable) {
            entries.into_iter().filter(readable).collect()
        } else {
            entries
        };
        return match pool.len() {
            0 => Err(BatchError::NoBatch),
            1 => Ok(pool.into_iter().next().expect("one batch")),
            _ => Err(BatchError::SeveralBatches {
                names: pool.iter().map(name).collect(),
            }),
        };
    };
    if let Some(i) = entries.iter().position(|e| names_id(&id_of(e), arg, false)) {
        return Ok(entries.into_iter().nth(i).expect("found"));
    }
    if let Some(i) = entries
        .iter()
        .position(|e| matches!(e, Entry::Batch(b) if b.label.as_deref() == Some(arg)))
    {
        return Ok(entries.into_iter().nth(i).expect("found"));
    }
    if arg.len() < 4 {
        return Err(BatchError::ShortPrefix {
            arg: arg.to_string(),
        });
    }
    let matching: Vec<usize> = (0..entries.len())
        .filter(|&i| names_id(&id_of(&entries[i]), arg, true))
        .collect();
    match matching.len() {
        1 => Ok(entries.into_iter().nth(matching[0]).expect("found")),
        0 => Err(BatchError::NoMatch {
            arg: arg.to_string(),
        }),
        _ => Err(BatchError::AmbiguousPrefix {
            arg: arg.to_string(),
            names: matching.iter().map(|&i| name(&entries[i])).collect(),
        }),
    }
}

/// Could `label` ever be read as a batch id or id prefix (design §3: hex
/// digits and hyphens, 4 or more characters, any case)? Such labels are
/// refused: a label is tried before an id prefix, so it would shadow one.
pub fn label_reads_as_id(label: &str) -> bool {
    label.len() >= 4 && label.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')
}

/// Validate a task name (design §1).
pub fn valid_task_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Is `name` the proposal ref a discarded task of `b` keeps (design §3.16
/// "kept")? It is no longer the batch's: gc removes it once its commit is
/// older than `gc.keep-failed`, whether the batch is open or not.
pub fn discard_kept(b: &Batch, name: &str) -> bool {
    b.tasks
        .iter()
        .any(|t| t.state == TaskState::Discarded && t.proposal_ref.as_deref() == Some(name))
}

// ---------------------------------------------------------------------------
// A prepare under way (the `[preparing]` table; see `preparing`)

/// Who is preparing the batch: recorded before anything is made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Marker {
    pub pid: u32,
    /// Start time of that process in clock ticks since boot (`/proc/PID/stat`
    /// field 22), so a recycled pid is not taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    pub host: String,
    pub started_at: String,
}

impl Marker {
    /// The marker of this process.
    pub fn mine() -> Marker {
        let pid = std::process::id();
        Marker {
            pid,
            start: crate::sys::process::process_start(pid),
            host: crate::sys::process::hostname(),
            started_at: crate::sys::time::rfc3339(crate::sys::time::now()),
        }
    }
}

/// Where an incomplete batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Its prepare still runs.
    Preparing,
    /// Its prepare was killed: the batch is not live, whatever its lease says.
    Interrupted,
}

impl Progress {
    pub fn as_str(self) -> &'static str {
        match self {
            Progress::Preparing => "preparing",
            Progress::Interrupted => "interrupted",
        }
    }
}

/// `None` for a complete batch; otherwise whether its prepare still runs.
/// On another host the process cannot be checked: there the batch counts
/// as being prepared until its lease expires.
pub fn progress(b: &Batch) -> Option<Progress> {
    let m = b.preparing.as_ref()?;
    let alive = if m.host == crate::sys::process::hostname() {
        m.start.is_some() && crate::sys::process::process_start(m.pid) == m.start
    } else {
        crate::sys::time::now() < b.lease.expires_at_secs()
    };
    Some(if alive {
        Progress::Preparing
    } else {
        Progress::Interrupted
    })
}

/// Refuse a task name that cannot name a folder and a ref component.
pub fn check_task_name(name: &str) -> Result<()> {
    // Task names become folder names and ref components: refuse what git refs refuse too.
    if !valid_task_name(name)
        || name.contains("..")
        || name.ends_with('.')
        || name.ends_with(".lock")
    {
        return Err(BatchError::BadTaskName {
            name: name.to_string(),
        });
    }
    Ok(())
}
