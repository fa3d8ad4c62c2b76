//! What an apply is asked and what it answers (design §3.2, §6.2): the
//! `Options`, the `Report`, each task's `Outcome` and what clean-up did to
//! its workspace (`Closed`).
//!
//! Owns: those types and the small rules on them (which outcomes are ok,
//! which write-back failure the filesystem caused).
//! Never: does git, filesystem or process work; words anything.

use std::collections::BTreeSet;
use std::path::PathBuf;

use gix::bstr::{BString, ByteSlice};

use crate::error::{Error, Result};
use crate::merge::integrate::{self, PathConflict};
use crate::record::batch::{Batch, TaskState};
use crate::{merge::proposal, sys::paths, sys::quiesce};

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The batch (id, prefix or label); `None`: the only open one.
    pub batch: Option<String>,
    /// Only these tasks (and those in `discard`); empty: every open task.
    pub only: Vec<String>,
    /// Tasks whose work is given up (kept as a proposal for gc.keep-failed).
    pub discard: Vec<String>,
    /// Keep the workspaces of applied tasks (unlocked).
    pub keep: bool,
    /// `--strict` (or the config's `apply.strict`).
    pub strict: bool,
    /// Change nothing; say what would happen.
    pub dry_run: bool,
    /// `--verify CMD` / `--no-verify` / `--verify-timeout` / `--verify-jobs`
    /// (design §3.10; `apply.verify*` fill in what is not given).
    pub verify: Option<String>,
    pub no_verify: bool,
    pub verify_timeout_secs: Option<i64>,
    pub verify_jobs: Option<usize>,
    /// `--refresh-conflicts` (design §3.12): refresh the tasks this apply
    /// left `conflict`, right after it.
    pub refresh_conflicts: bool,
}

/// A workspace kept because it is the source of open batches: (task, folder, batch ids).
pub use crate::ops::teardown::Kept;

/// What apply did (or, with `dry_run`, would do).
pub struct Report {
    /// The batch, with the task states recorded by this apply.
    pub batch: Batch,
    /// The selected tasks, in task order.
    pub outcomes: Vec<Outcome>,
    /// Paths written in the source.
    pub written: Vec<BString>,
    /// The undo entry of this apply (design §3.11): `None` when nothing was written.
    pub apply_id: Option<String>,
    /// Whether tasks stay (or would stay) open.
    pub batch_open: bool,
    pub dry_run: bool,
    /// The write-back failed and changed nothing (the applied tasks failed).
    pub write_error: Option<Error>,
    /// Workspaces kept because open batches were prepared in them.
    pub kept: Vec<Kept>,
    /// What clean-up did to the workspaces of closed tasks (task index,
    /// fate), in task order; those in `kept` are not repeated. For a dry
    /// run, what it would do: `Parked` or `Removed` for each task that
    /// would close (`--keep`'s and the kept discarded ones left out).
    pub workspaces: Vec<(usize, Closed)>,
    /// The first clean-up failure (the outcomes stand).
    pub artifacts_error: Option<Error>,
    /// Branches, tags and stash entries made from the batch's workspaces
    /// since prepare (design §3.16).
    pub side_effects: Vec<crate::ops::side_effects::SideEffect>,
    /// With `--verify`: how it went (design §3.10, §6.4).
    pub verify: Option<crate::ops::verify::Report>,
    /// The command keys of `delegate.toml` left out because the user has
    /// not confirmed the file (design §3.18): apply exits 1.
    pub untrusted: Option<crate::ops::trust::Untrusted>,
    /// The batch ended but its refs on its remote could not be deleted (design §3.14).
    pub remote_left: Option<crate::ops::remote_workers::Left>,
    /// A signal (Ctrl-C, SIGTERM) arrived once the write-back had begun, and
    /// it was past its commit point: the write-back and this apply were
    /// finished (design §7 "Signals"). The command says so and exits 1.
    pub interrupted: bool,
    /// With `refresh_conflicts`: the refresh of the tasks this apply left
    /// `conflict` (`None`: there was none), or why it failed.
    pub refreshed: Option<Result<crate::ops::refresh::Report>>,
}

impl Report {
    /// Whether every selected task applied, had no changes or was discarded.
    pub fn all_ok(&self) -> bool {
        // A remote task not submitted yet is no problem by itself (design §3.14).
        self.outcomes
            .iter()
            .all(|o| o.ok() || o.status == TaskState::NotSubmitted)
    }

    /// A write-back the filesystem refused (a full disk, no inodes, a
    /// read-only filesystem, a denied permission), rolled back whole: the
    /// command exits 3 with it (design §3 "Exit status"), its tasks
    /// recorded `failed` (`write_failed`) and the batch open.
    pub fn refused_by_filesystem(&self) -> Option<&Error> {
        self.write_error
            .as_ref()
            .filter(|e| e.code.fs_cause().is_some())
    }
}

/// What apply's clean-up did to a closed task's workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Removed (moved to the trash, deleted in the background).
    Removed,
    /// Parked idle in the pool (`workspace.pool`, design §3.20): gone from
    /// the task's place, kept for a later prepare to reuse.
    Parked,
    /// `--keep`: released (unlocked, still registered), an ordinary worktree
    /// the batch no longer owns.
    Kept,
    /// Nothing was at its path.
    Missing,
    /// Something that is not the workspace prepare made: left alone.
    Foreign,
    /// A discarded task's workspace written into after apply read it
    /// (design §3.18): released (unlocked, still registered), an ordinary
    /// worktree holding what was written since.
    Changed,
}

/// What became of one selected task.
pub struct Outcome {
    pub idx: usize,
    pub status: TaskState,
    pub reason: Option<&'static str>,
    /// A sentence for people (failed tasks).
    pub message: Option<String>,
    pub conflicts: Vec<PathConflict>,
    pub proposed: Vec<BString>,
    pub applied: Vec<BString>,
    pub proposal_ref: Option<String>,
    pub patch: Option<PathBuf>,
    /// A discarded task's proposal is kept until then (RFC 3339).
    pub kept_until: Option<String>,
    /// A discarded task's workspace holds these git repositories its worker
    /// made (relative to the workspace root): no proposal can hold them, so
    /// the workspace is kept as an ordinary worktree instead of removed
    /// (or, with `--dry-run`, would be).
    pub nested_kept: Vec<BString>,
    /// Processes apply stopped inside this task's workspace (design §3.16).
    pub stopped: Vec<quiesce::Proc>,
    /// With `--dry-run`: the processes running inside the workspace now.
    pub processes: Vec<quiesce::Proc>,
    /// With `--dry-run`, a discarded task: its workspace differs from the
    /// baseline, so its work would be kept as a proposal ref and patch.
    pub would_keep: bool,
    /// A `rejected` task: the log of the verification run that failed.
    pub verify_log: Option<PathBuf>,
    /// A remote task that `failed` on what its worker submitted (not a
    /// commit on its base, or not fetched; not a full disk here): it has
    /// no workspace here to fix, only a new submission helps (design
    /// §3.14, the apply hint says so).
    pub resubmit: bool,
    /// The patch of this run's proposal, written only if the task keeps it
    /// (step 5): an applied task needs none.
    pub(crate) unwritten_patch: Option<proposal::PendingPatch>,
    /// What this run's snapshot read in the task's workspace, as
    /// git-delegate vouches for it (its tree, and the record of that tree
    /// with the stat data it took itself), where it holds neither a nested
    /// repository nor a path git refuses and `workspace.pool` is on: what
    /// the pool records for it without reading it again (design §3.20; a
    /// write since then makes the reuse's proof fail, never pass).
    pub(crate) workspace_read: Option<Box<crate::snapshot::Vouched>>,
    /// The tree this run's snapshot read in the task's workspace (where it
    /// holds neither a nested repository nor a path git refuses): what the
    /// workspace must still hold to be removed (design §3.18 "Before
    /// removing a workspace, prove it").
    pub(crate) workspace_tree: Option<gix::ObjectId>,
}

impl Outcome {
    pub(crate) fn new(idx: usize, status: TaskState) -> Outcome {
        Outcome {
            idx,
            status,
            reason: None,
            stopped: Vec::new(),
            processes: Vec::new(),
            would_keep: false,
            message: None,
            conflicts: Vec::new(),
            proposed: Vec::new(),
            applied: Vec::new(),
            proposal_ref: None,
            patch: None,
            kept_until: None,
            nested_kept: Vec::new(),
            verify_log: None,
            resubmit: false,
            unwritten_patch: None,
            workspace_read: None,
            workspace_tree: None,
        }
    }

    pub(crate) fn fail(&mut self, reason: &'static str, message: String) {
        self.status = TaskState::Failed;
        self.reason = Some(reason);
        self.message = Some(message);
    }

    /// Applied by the integration: its paths among the plan's writes
    /// (`to_write`) are what it put in the working tree (a later task may
    /// have changed one back, so its own merge's paths are not enough).
    pub(crate) fn applied_by(&mut self, to_write: &BTreeSet<&BString>) {
        self.status = TaskState::Applied;
        self.applied = self
            .proposed
            .iter()
            .filter(|p| to_write.contains(p))
            .cloned()
            .collect();
    }

    /// Taken out by the integration (design §3.2 step 3): `conflict` with
    /// its reason, or, where a folder it writes in refuses writing (checked
    /// before writing: only this task fails), `failed` naming the folders.
    pub(crate) fn refused(&mut self, r: &integrate::Refused) {
        if r.reason == integrate::Refusal::NotWritable {
            let folders: Vec<String> = r
                .conflicts
                .iter()
                .map(|c| {
                    let folder = if c.path.is_empty() {
                        "the working tree's top folder".to_string()
                    } else {
                        format!("the folder {}", paths::quote(c.path.as_bstr()))
                    };
                    format!("{folder}: {}", c.reason)
                })
                .collect();
            self.fail(
                r.reason.as_str(),
                format!("cannot write in {}", folders.join("; ")),
            );
        } else {
            self.status = TaskState::Conflict;
            self.reason = Some(r.reason.as_str());
        }
        self.conflicts = r.conflicts.clone();
    }

    /// Applied, without changes, or discarded.
    pub fn ok(&self) -> bool {
        matches!(
            self.status,
            TaskState::Applied | TaskState::NoChanges | TaskState::Discarded
        )
    }
}
