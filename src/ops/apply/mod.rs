//! The apply transaction (design §3.2): stop what still runs in each
//! selected workspace, record every proposal (commit, ref, patch), integrate
//! them in memory, merge the result with the source as it is now, write the
//! difference back through the journal, and clean up; the caller renders
//! the returned `Report` (design §6.2). With `--verify CMD` the integration
//! is `verify::integrate_verified` (design §3.10), which gives the lock up
//! while CMD runs and returns it.
//!
//! Owns: the order of those steps (`run`: the batch and its lock, then
//! step 1 in `record`, steps 2-4 in `land`, step 5 in `clean`), task
//! outcomes (a workspace holding a git repository its worker made is a
//! `nested_repository` conflict, one holding a path git refuses an
//! `invalid_path` conflict (design §3.18), never applied in part). Steps
//! 2-3 themselves are `landing::plan`, shared with every other command
//! that lands work.
//! Never: prints (long steps and notices go to the caller's `Observer`);
//! changes the user's index, HEAD, branches or stash; reads, quiesces
//! or deletes a folder that is not a workspace prepare made
//! (`workspace::identify`); deletes a workspace that is the source of
//! another open batch (it is kept as an ordinary worktree); writes anything
//! with `--dry-run`; applies a batch whose prepare never completed (design §3.15).

mod clean;
pub use clean::CHANGED_AFTER_READ;
mod land;
mod record;

use std::collections::BTreeSet;
use std::path::PathBuf;

use gix::bstr::{BString, ByteSlice};
use serde_json::json;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{self, PathConflict};
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch, TaskState};
use crate::{git::commit, git::refs, merge::proposal, sys::paths, sys::quiesce};

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
    pub remote_left: Option<crate::ops::remote::Left>,
    /// A signal (Ctrl-C, SIGTERM) arrived once the write-back had begun, and
    /// it was past its commit point: the write-back and this apply were
    /// finished (design §7 "Signals"). The command says so and exits 1.
    pub interrupted: bool,
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

/// Apply a batch (design §3.2), found from `here` (the repository around the
/// caller), into the working tree it was prepared in. Takes the repository
/// lock: recovering interrupted write-backs (told to `observer` at once),
/// or with `dry_run` refusing when one is left over.
pub fn run(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    // A dry run never recovers an interrupted write-back; it reports it (design §7).
    let mut lock = if opts.dry_run {
        lock_and_report(&here)?
    } else {
        let locked = crate::ops::lock::lock_and_recover(&here)?;
        observer.notice(Notice::Recovered(locked.recovery));
        locked.lock
    };
    // Omitted, BATCH skips batches whose prepare never completed while
    // another is open (`batch::choose`).
    let mut b = batch::select_open(&here.state_dir(), opts.batch.as_deref())?;
    // Another apply verifies it without the lock (design §3.10).
    crate::record::busy::refuse_if_busy(&here.state_dir(), &b)?;
    // A batch whose prepare never completed is never applied (design §3.15).
    if let Some(p) = crate::ops::preparing::progress(&b) {
        return Err(crate::ops::preparing::refuse(&b, p));
    }
    // The batch writes back into the working tree it was prepared in,
    // wherever apply is run from (a workspace is a worktree of the same
    // repository), opened by its recorded path: a source that moved away
    // (or another repository now at its path) is refused by name.
    let mut source = if here.root == b.source {
        here
    } else {
        Source::open_recorded(&here, &b.source, b.short())?
    };
    // Only the drivers prepare recorded run for the batch (design §3.18).
    crate::git::drivers::enforce(b.drivers.as_ref(), &mut source.repo)?;
    let selected = select_tasks(&b, opts)?;
    let strict = opts.strict || source.config.strict;
    // design §3.18: an `apply.verify` the user has not confirmed is left
    // out (the confirmed one runs in its place); the command line's wins.
    let cli_verifies = opts.verify.is_some() || opts.no_verify;
    let untrusted = crate::ops::trust::gate_apply(&mut source, cli_verifies, opts.dry_run)?;
    let verify = crate::ops::verify::settings(
        opts.verify.as_deref(),
        opts.no_verify,
        opts.verify_timeout_secs,
        opts.verify_jobs,
        opts.keep,
        &source.config,
    );
    let dry_run = opts.dry_run;
    check_baseline(&source, &b)?;
    let baseline_tree = commit::tree_of(&source.repo, &b.baseline)?;
    let scratch = b.mode == crate::config::Mode::Scratch;

    // Step 1: stop what runs in the selected workspaces (one scan of /proc
    // for all of them), then record every proposal, the workspaces'
    // snapshots (each a stat walk of the whole tree) in parallel.
    let recording = observer.step(&format!(
        "Recording the work of {} task{}",
        selected.len(),
        if selected.len() == 1 { "" } else { "s" }
    ));
    let mut mem = source.repo.clone().with_object_memory();
    // Merges read the same trees again and again.
    mem.object_cache_size_if_unset(8 << 20);
    let cx = record::Ctx {
        source: &source,
        b: &b,
        opts,
        baseline_tree,
        scratch,
    };
    let record::Recording {
        mut outcomes,
        candidates,
        fetched,
        side_effects,
    } = record::record(cx, &selected, &mut mem)?;

    drop(recording);
    // Steps 2-3: integrate in memory against a fresh snapshot of the source:
    // its state at the paths the proposals touch, which is all the merges
    // and the write-back use (see `touched`), or where that is not exact,
    // all of it.
    let merging = observer.step("Merging");
    let landed = if candidates.is_empty() {
        land::Landed::default()
    } else {
        let cx = land::Ctx {
            source: &source,
            b: &b,
            mem: &mem,
            baseline_tree,
            strict,
            dry_run,
            verify: verify.as_ref(),
            observer,
        };
        let (landed, returned) = land::land(cx, &candidates, &mut outcomes, merging, lock)?;
        lock = returned;
        landed
    };
    let land::Landed {
        written,
        mut write_error,
        apply_id,
        undo_error,
        wrote,
        verify_report,
    } = landed;

    let cleaned = clean::clean(&source, &mut b, opts, &mut outcomes, &fetched, undo_error)?;

    // Nothing more changes: the deleter runs without the lock held (it
    // takes it to remove the emptied repository folder).
    drop(lock);
    for t in &cleaned.trashes {
        crate::workspace::trash::spawn_purger(t, &source.state_dir());
    }
    // A write-back that could not be rolled back leaves the repository in a
    // state only recovery can fix (exit 3); the task states are saved first.
    if let Some(e) = write_error.take_if(|e| e.is_rollback_failed()) {
        return Err(e);
    }

    Ok(Report {
        batch: b,
        outcomes,
        apply_id,
        written,
        batch_open: cleaned.batch_open,
        dry_run,
        write_error,
        kept: cleaned.kept,
        workspaces: cleaned.closed,
        artifacts_error: cleaned.artifacts_error,
        side_effects,
        remote_left: cleaned.remote_left,
        // Nothing merged: nothing was verified (design §6.4 "not_run"); a
        // command left out was not run either (design §3.18).
        verify: verify_report
            .or_else(|| verify.map(crate::ops::verify::not_run))
            .or_else(|| {
                let left = untrusted.as_ref()?.verify_left_out()?;
                Some(crate::ops::verify::left_out(left))
            }),
        untrusted,
        // A signal since the write-back began, which was finished (design §7 "Signals").
        interrupted: wrote && crate::sys::interrupt::interrupted(),
    })
}

/// The batch's baseline ref must still point at its baseline.
fn check_baseline(source: &Source, b: &Batch) -> Result<()> {
    let baseline_ref = refs::baseline(&b.id);
    match refs::get(&source.repo, &baseline_ref)? {
        Some(id) if gix::ObjectId::from_hex(b.baseline.as_bytes()).ok() == Some(id) => {}
        Some(_) | None => {
            return Err(Error::state(
                Code::BaselineRefMissing,
                format!(
                    "the baseline ref {baseline_ref} of batch {} was deleted or moved by someone else",
                    b.short()
                ),
                format!(
                    "restore it with `git update-ref {baseline_ref} {}`, or end the batch with `git delegate drop {} --force`",
                    b.baseline,
                    b.short()
                ),
            ))
        }
    }
    Ok(())
}

/// The message of a task an earlier, interrupted apply recorded applied.
pub const EARLIER: &str =
    "applied by an earlier apply that was interrupted (its write-back was finished); its clean-up is done now";

/// Take the repository lock for a command that changes nothing but reads
/// the working tree (`apply --dry-run`): an interrupted write-back is
/// reported, never recovered (design §7). With one left over, the working
/// tree holds part of a result, so nothing it would say can be trusted:
/// exit 3, naming the batches.
pub(crate) fn lock_and_report(source: &Source) -> Result<crate::ops::lock::RepoLock> {
    let lock = crate::ops::lock::acquire(&source.state_dir(), source.config.lock_timeout_secs)?;
    let pending = crate::writeback::pending(source)?;
    if !pending.is_empty() {
        let shorts: Vec<&str> = pending
            .iter()
            .map(|id| crate::record::batch::short(id))
            .collect();
        let mut details = serde_json::Map::new();
        details.insert("pending_writebacks".into(), json!(pending));
        return Err(Error::state(
            Code::WritebackPending,
            format!(
                "an interrupted write-back of batch {} is left over: the working tree may hold part of its result, so a dry run cannot say what apply would do (it changed nothing)",
                shorts.join(", ")
            ),
            "run `git delegate apply` or `git delegate gc`: they roll it back (or finish it, past its commit point) first (a path you changed since is left as you left it, and named); `git delegate status` shows it",
        )
        .with_details(details));
    }
    Ok(lock)
}

/// The tasks this run processes, in task order, each with "discard?".
fn select_tasks(b: &Batch, args: &Options) -> Result<Vec<(usize, bool)>> {
    for name in args.only.iter().chain(&args.discard) {
        b.open_task_named(name)?;
    }
    if let Some(name) = args.only.iter().find(|n| args.discard.contains(n)) {
        return Err(Error::usage(
            Code::OnlyAndDiscard,
            format!("task {name:?} is given to both --only and --discard"),
            "name each task in one of them",
        ));
    }
    Ok(b.tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.state.is_open())
        .filter(|(_, t)| {
            args.only.is_empty() || args.only.contains(&t.name) || args.discard.contains(&t.name)
        })
        .map(|(i, t)| (i, args.discard.contains(&t.name)))
        .collect())
}

/// Point a kept task at whatever recovery artifacts exist for it.
fn keep_artifacts(source: &Source, b: &Batch, out: &mut Outcome, dry_run: bool) {
    let task = &b.tasks[out.idx];
    if dry_run {
        out.proposal_ref = task.proposal_ref.clone();
        out.patch = task.patch.clone();
        return;
    }
    let name = refs::proposal(&b.id, &task.name);
    out.proposal_ref = match refs::get(&source.repo, &name) {
        Ok(Some(_)) => Some(name),
        _ => None,
    };
    let patch = proposal::patch_path(source, b, &task.name);
    out.patch = patch.exists().then_some(patch);
}
