//! The apply transaction (design §3.2): stop what still runs in each
//! selected workspace, record every proposal (commit, ref, patch), integrate
//! them in memory, merge the result with the source as it is now, write the
//! difference back through the journal, and clean up; the caller renders
//! the returned `Report` (design §6.2). With `--verify CMD` the integration
//! is `verify::integrate_verified` (design §3.10), which gives the lock up
//! while CMD runs and returns it.
//!
//! Owns: the order of those steps, task outcomes (a workspace holding a git
//! repository its worker made is a `nested_repository` conflict, one
//! holding a path git refuses an `invalid_path` conflict (design §3.18),
//! never applied in part). Steps 2-3 themselves are `landing::plan`, shared with
//! every other command that lands work.
//! Never: prints (long steps and notices go to the caller's `Observer`);
//! changes the user's index, HEAD, branches or stash; reads, quiesces
//! or deletes a folder that is not a workspace prepare made
//! (`workspace::identify`); deletes a workspace that is the source of
//! another open batch (it is kept as an ordinary worktree); writes anything
//! with `--dry-run`; applies a batch whose prepare never completed (design §3.15).

use std::collections::BTreeSet;
use std::path::PathBuf;

use gix::bstr::{BString, ByteSlice};
use serde_json::json;

use crate::config::StopProcesses;
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{self, Candidate, PathConflict};
use crate::merge::landing::{persist, Side};
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch, TaskState};
use crate::writeback::PathWrite;
use crate::{
    git::commit, git::refs, merge::proposal, ops::teardown, sys::paths, sys::quiesce, workspace,
    writeback,
};

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
    /// fate), in task order; those in `kept` are not repeated. Empty for a
    /// dry run.
    pub workspaces: Vec<(usize, Closed)>,
    /// The first clean-up failure (the outcomes stand).
    pub artifacts_error: Option<Error>,
    /// Branches, tags and stash entries made from the batch's workspaces
    /// since prepare (design §3.16).
    pub side_effects: Vec<crate::ops::side_effects::SideEffect>,
    /// With `--verify`: how it went (design §3.10, §6.4).
    pub verify: Option<crate::ops::verify::Report>,
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
}

/// What apply's clean-up did to a closed task's workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Removed (moved to the trash, deleted in the background).
    Removed,
    /// `--keep`: released (unlocked, still registered), an ordinary worktree
    /// the batch no longer owns.
    Kept,
    /// Nothing was at its path.
    Missing,
    /// Something that is not the workspace prepare made: left alone.
    Foreign,
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
        }
    }

    pub(crate) fn fail(&mut self, reason: &'static str, message: String) {
        self.status = TaskState::Failed;
        self.reason = Some(reason);
        self.message = Some(message);
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
    let verify = crate::ops::verify::settings(
        opts.verify.as_deref(),
        opts.no_verify,
        opts.verify_timeout_secs,
        opts.verify_jobs,
        opts.keep,
        &source.config,
    );
    let mut verify_report: Option<crate::ops::verify::Report> = None;
    let mut verdicts: (Vec<(usize, PathBuf)>, Vec<usize>) = Default::default();
    let dry_run = opts.dry_run;

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
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut pending: Vec<usize> = Vec::new(); // positions in `outcomes`
    let mut roots: Vec<PathBuf> = Vec::new(); // their real paths
                                              // design §3.14: what the remote tasks submitted, fetched first (a
                                              // remote that fails stops the apply before anything changed).
    let fetched = {
        // (A discarded one's too: its submitted work is kept, as a local
        // workspace's is, before the batch's remote refs may go.)
        let names: Vec<&str> = selected
            .iter()
            .filter(|&&(i, discard)| b.tasks[i].remote && !(discard && dry_run))
            .map(|&(i, _)| b.tasks[i].name.as_str())
            .collect();
        match names.is_empty() {
            true => Default::default(),
            false => crate::ops::remote::fetch_proposals(&source, &b, &names, !dry_run)?,
        }
    };
    let mut received: Vec<(usize, Result<Option<Recorded>>)> = Vec::new();
    for &(idx, discard) in &selected {
        let task = &b.tasks[idx];
        if task.remote && !discard {
            let mut out = Outcome::new(idx, TaskState::NotSubmitted);
            if let Some(&commit) = fetched.get(&task.name) {
                out.status = TaskState::Open;
                received.push((
                    outcomes.len(),
                    receive(&source, &b, task, commit, baseline_tree, dry_run),
                ));
            }
            outcomes.push(out);
            continue;
        }
        // A task whose worker failed in `run` is applied only when named
        // (design §3.13, §3.18 "Follow-through"): a plain apply leaves it
        // open, its workspace neither stopped nor recorded.
        if task.state == TaskState::WorkerFailed && !discard && !opts.only.contains(&task.name) {
            let mut out = Outcome::new(idx, TaskState::WorkerFailed);
            out.reason = Some(match task.reason.as_deref() {
                Some("timed_out") => "timed_out",
                _ => "worker_failed",
            });
            let log = batch::worker_log(&source.state_dir(), &b.id, &task.name);
            out.message = Some(format!(
                "its worker failed in `git delegate run`, so only an apply that names it lands its work{}",
                match log.exists() {
                    true => format!(" (the worker's log: {})", log.display()),
                    false => String::new(),
                }
            ));
            keep_artifacts(&source, &b, &mut out, dry_run);
            outcomes.push(out);
            continue;
        }
        if scratch {
            outcomes.push(Outcome::new(idx, TaskState::Discarded));
            continue;
        }
        if discard {
            // A discarded task's work is kept as a proposal (ref and patch)
            // for gc.keep-failed, like a rescue: a mistyped name loses nothing.
            let mut out = Outcome::new(idx, TaskState::Discarded);
            if !dry_run {
                keep_discarded(&source, &b, &mut out, baseline_tree);
            } else if let workspace::Identity::Ours { real, .. } =
                workspace::identify(&source.common_dir, task)
            {
                // Name the nested repositories that would keep the workspace.
                let mut t = task.clone();
                t.root = real;
                if let Ok(Some(p)) = proposal::preview(&source.repo, &t, baseline_tree) {
                    out.nested_kept = p.nested;
                    out.would_keep = true;
                }
            }
            outcomes.push(out);
            continue;
        }
        let mut out = Outcome::new(idx, TaskState::Open);
        // Identity before anything is read or signalled: a folder that is
        // not the one prepare made is never read, quiesced nor removed.
        match workspace::identify(&source.common_dir, task) {
            workspace::Identity::Ours { real, .. } => {
                // Conflicts a refresh handed back and its worker has not
                // resolved yet (design §3.12): neither stopped nor recorded.
                let (mut left, unusable) = crate::ops::refresh::unresolved_checked(task, &real);
                // design §3.2 step 1: a workspace's index is a cache, rebuilt
                // (never in a dry run, which changes nothing).
                if unusable
                    && !dry_run
                    && crate::snapshot::reindex::repair(&source.common_dir, task, &real)
                        .unwrap_or(false)
                {
                    left = crate::ops::refresh::unresolved(task, &real);
                }
                if !left.is_empty() {
                    out.status = TaskState::Conflict;
                    out.reason = Some(crate::ops::refresh::UNRESOLVED);
                    out.conflicts = left;
                    keep_artifacts(&source, &b, &mut out, dry_run);
                    outcomes.push(out);
                    continue;
                }
                pending.push(outcomes.len());
                roots.push(real);
            }
            other => {
                out.fail("workspace_missing", missing_message(task, &other));
                keep_artifacts(&source, &b, &mut out, dry_run);
            }
        }
        outcomes.push(out);
    }
    let policy = source.config.stop_processes;
    let running: Vec<Vec<quiesce::Proc>> = if dry_run || policy == StopProcesses::Refuse {
        let found = quiesce::describe_all(&roots);
        if dry_run {
            for (&o, procs) in pending.iter().zip(&found) {
                outcomes[o].processes = procs.clone();
            }
        }
        found
    } else {
        let spare = policy == StopProcesses::Background;
        quiesce::stop_all(&roots, quiesce::GRACE, spare)
            .into_iter()
            .zip(&pending)
            .map(|(o, &i)| match o {
                quiesce::Outcome::Clear { stopped } => {
                    outcomes[i].stopped = stopped;
                    Vec::new()
                }
                quiesce::Outcome::Running(procs) => procs,
            })
            .collect()
    };
    let mut to_record: Vec<usize> = Vec::new();
    for (&o, procs) in pending.iter().zip(&running) {
        // A dry run reports what apply would do under the policy: with
        // `terminate` everything would be stopped, with `background` only
        // processes without a terminal.
        let blocking: Vec<&quiesce::Proc> = match (dry_run, policy) {
            (true, StopProcesses::Terminate) => Vec::new(),
            (true, StopProcesses::Background) => procs.iter().filter(|p| p.terminal).collect(),
            _ => procs.iter().collect(),
        };
        if blocking.is_empty() {
            to_record.push(o);
            continue;
        }
        let list = blocking
            .iter()
            .map(|p| format!("{} {}", p.pid, p.command))
            .collect::<Vec<_>>()
            .join(", ");
        let out = &mut outcomes[o];
        out.fail(
            "processes_running",
            match policy {
                StopProcesses::Refuse => format!("processes still run inside the workspace ({list}) and apply.stop-processes is \"refuse\""),
                StopProcesses::Background if blocking.iter().all(|p| p.terminal) => format!(
                    "processes attached to a terminal run inside the workspace ({list}); apply never stops them: leave the workspace (or end them) and apply again, or set apply.stop-processes = \"terminate\""
                ),
                _ => format!("processes inside the workspace could not be stopped ({list})"),
            },
        );
        keep_artifacts(&source, &b, out, dry_run);
    }
    // Each workspace is read at the real path its identity check found, so
    // a symlink put at its path since is not followed.
    let reals: std::collections::HashMap<usize, &PathBuf> =
        pending.iter().copied().zip(&roots).collect();
    let owned: Vec<batch::Task> = to_record
        .iter()
        .map(|&o| {
            let mut t = b.tasks[outcomes[o].idx].clone();
            if let Some(real) = reals.get(&o) {
                t.root = (*real).clone();
            }
            t
        })
        .collect();
    let tasks: Vec<&batch::Task> = owned.iter().collect();
    let mut recorded = record_all(&source, &b, &tasks, baseline_tree, dry_run)?;
    for (o, rec) in received {
        to_record.push(o);
        recorded.push(rec);
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    // `owned` covers the local tasks only; a remote task's work was
    // received, and it has no workspace here (design §3.14).
    let roots_of: std::collections::HashMap<usize, &PathBuf> = to_record
        .iter()
        .copied()
        .zip(owned.iter().map(|t| &t.root))
        .collect();
    for (&o, rec) in to_record.iter().zip(recorded) {
        let out = &mut outcomes[o];
        // Swapped while it was read: what was read is not the task's work.
        let rec = match workspace::identify(&source.common_dir, &b.tasks[out.idx]) {
            _ if b.tasks[out.idx].remote => rec,
            workspace::Identity::Ours { .. } => rec,
            other => {
                out.fail(
                    "workspace_missing",
                    missing_message(&b.tasks[out.idx], &other),
                );
                keep_artifacts(&source, &b, out, dry_run);
                continue;
            }
        };
        // A task that changed a submodule (read-only, design §3.15) keeps its
        // work (a remote task's submodules are its worker's to keep).
        let subs = match roots_of.get(&o) {
            Some(root) if !b.tasks[out.idx].remote => {
                crate::workspace::submodules::changed(&source.common_dir, root)
            }
            _ => Ok(Vec::new()),
        };
        let rec = match (rec, subs) {
            (Ok(r), Ok(subs)) if !subs.is_empty() => {
                submodule_changed(out, r, subs);
                continue;
            }
            (Ok(_), Err(e)) => Err(e),
            (rec, _) => rec,
        };
        match rec {
            Err(e) => {
                out.fail("snapshot_failed", e.message.clone());
                out.resubmit = b.tasks[out.idx].remote && e.code.fs_cause().is_none();
                keep_artifacts(&source, &b, out, dry_run);
            }
            Ok(None) => out.status = TaskState::NoChanges,
            Ok(Some(r)) => {
                out.proposed = r.paths.into_iter().map(|c| c.path).collect();
                if let Some((name, patch)) = r.artifacts {
                    out.proposal_ref = Some(name);
                    out.patch = Some(patch);
                }
                if !r.invalid.is_empty() {
                    // Paths git refuses (design §3.18): the task is refused
                    // alone, its work kept (the workspace holds them, the
                    // proposal ref and patch the rest).
                    out.status = TaskState::Conflict;
                    out.reason = Some(crate::git::validate::REASON);
                    out.conflicts = r
                        .invalid
                        .into_iter()
                        .take(crate::git::validate::NAMED)
                        .map(|f| PathConflict {
                            path: f.path,
                            reason: f.why.into(),
                        })
                        .collect();
                    continue;
                }
                if !r.nested.is_empty() {
                    // A repository the worker made is never dropped silently:
                    // the task stays open with its workspace, the rest of its
                    // work recorded in the proposal (design §3.2).
                    out.status = TaskState::Conflict;
                    out.reason = Some("nested_repository");
                    out.conflicts = r
                        .nested
                        .into_iter()
                        .map(|path| PathConflict {
                            path,
                            reason: "nested repository".into(),
                        })
                        .collect();
                    continue;
                }
                if let Some(objects) = r.objects {
                    proposal::add_objects(&mut mem, objects);
                }
                candidates.push(Candidate {
                    task: out.idx,
                    tree: r.tree,
                    paths: out.proposed.clone(),
                    base: r.base,
                });
            }
        }
    }
    // Branches, tags and stash entries the workspaces made (design §3.16);
    // a task whose work sits in the stash stays open.
    let mut side_effects = crate::ops::side_effects::find(&source, &b)?;
    if !dry_run {
        // Reporting only: a failure to keep it changes no outcome.
        let _ = crate::ops::side_effects::remember(&source, &b, &side_effects);
    }
    // And what changed in the shared config and hooks (design §3.16 "The
    // shared git dir"): reported, never a task's outcome.
    side_effects.extend(crate::ops::side_effects::find_git_dir(&source, &b));
    stash_holds_work(&b, &side_effects, &mut outcomes, &mut candidates);
    candidates.sort_by_key(|c| c.task);

    drop(recording);
    // Steps 2-3: integrate in memory against a fresh snapshot of the source:
    // its state at the paths the proposals touch, which is all the merges
    // and the write-back use (see `touched`), or where that is not exact,
    // all of it.
    let merging = observer.step("Merging");
    let mut written: Vec<BString> = Vec::new();
    let mut write_error: Option<Error> = None;
    let mut apply_id: Option<String> = None;
    let mut undo_error: Option<Error> = None;
    let mut wrote = false;
    if !candidates.is_empty() {
        let mut check = |writes: &[PathWrite]| -> Result<Vec<writeback::Blocked>> {
            if !dry_run {
                persist(&source.repo, &mem, writes, Side::Old)?;
            }
            writeback::check(&source, writes)
        };
        let plan = if let Some(settings) = &verify {
            let ctx = crate::ops::verify::Ctx {
                source: &source,
                batch: &b,
                mem: &mem,
                baseline_tree,
                strict,
                dry_run,
                settings,
                observer,
            };
            let v = crate::ops::verify::integrate_verified(&ctx, &candidates, lock, &mut check)?;
            lock = v.lock;
            verify_report = Some(v.report);
            verdicts = (v.rejected, v.unverified);
            v.plan
        } else {
            crate::merge::landing::plan(
                &source,
                &mem,
                baseline_tree,
                &candidates,
                strict,
                !dry_run,
            )?
        };
        let to_write: BTreeSet<&BString> = plan.writes.iter().map(|w| &w.path).collect();
        for out in outcomes.iter_mut() {
            if plan.applied.contains(&out.idx) {
                out.status = TaskState::Applied;
                out.applied = out
                    .proposed
                    .iter()
                    .filter(|p| to_write.contains(p))
                    .cloned()
                    .collect();
            } else if let Some((_, log)) = verdicts.0.iter().find(|(t, _)| *t == out.idx) {
                out.status = TaskState::Rejected;
                out.reason = Some("verify_failed");
                out.verify_log = Some(log.clone());
            } else if verdicts.1.contains(&out.idx) {
                out.status = TaskState::Unverified;
                out.reason = Some("verify_fails_without_tasks");
            } else if let Some(r) = plan.refused.iter().find(|r| r.task == out.idx) {
                out.refused(r);
            }
        }

        drop(merging);
        // Step 4: write back. Its record (the undo entry, and these tasks
        // applied in the batch) is staged first and takes effect at the
        // write-back's commit point, so a write-back that recovery finishes
        // after a crash is recorded as this one would be (design §7 "What
        // recovery finishes"). A record that cannot be staged does not stop
        // the write-back: the result stands without it, as a warning.
        if !dry_run && !plan.writes.is_empty() {
            let _writing = observer.step(&format!("Writing {} paths", plan.writes.len()));
            let dir = batch::batch_dir(&source.state_dir(), &b.id);
            let result = persist(&source.repo, &mem, &plan.writes, Side::New).and_then(|()| {
                let then = match stage_record(&source, &b, &outcomes, &plan.writes, &dir) {
                    Ok((id, staged)) => {
                        apply_id = Some(id);
                        staged
                    }
                    Err(e) => {
                        undo_error = Some(e);
                        Vec::new()
                    }
                };
                writeback::write_then(&source, &dir, &plan.writes, &then)
            });
            if let Err(e) = result {
                if let Some(id) = apply_id.take() {
                    crate::ops::undo::discard_staged(&source, &id);
                }
                // Interrupted (Ctrl-C, SIGTERM) and rolled back: nothing
                // changed, every task stays open as it was (design §7 "Signals").
                if e.code == Code::Interrupted {
                    return Err(e);
                }
                for out in outcomes
                    .iter_mut()
                    .filter(|o| o.status == TaskState::Applied)
                {
                    out.applied.clear();
                    out.fail("write_failed", e.message.clone());
                }
                write_error = Some(e);
            }
            wrote = write_error.is_none();
            if let Some(id) =
                apply_id.take_if(|id| wrote && !crate::ops::undo::recorded(&source.state_dir(), id))
            {
                crate::ops::undo::discard_staged(&source, &id);
                undo_error = Some(Error::state(
                    Code::WriteFailed,
                    "the undo entry of this apply could not be put in place",
                    "the result stands; `git delegate undo` cannot take this apply back",
                ));
            }
        }
        if write_error.is_none() {
            written = plan.writes.iter().map(|w| w.path.clone()).collect();
        }
    }

    // Tasks an earlier apply recorded applied and did not clean up (it was
    // interrupted during its clean-up, or recovery finished its write-back:
    // design §7 "What recovery finishes"): applied, and cleaned up now.
    // (Listed only when `--only` does not restrict the run to other tasks.)
    if !dry_run {
        for (i, t) in b.tasks.iter().enumerate() {
            if t.state == TaskState::Applied
                && opts.only.is_empty()
                && !t.remote
                && !outcomes.iter().any(|o| o.idx == i)
                && still_locked_by_us(&source, &b, t)
            {
                let mut out = Outcome::new(i, TaskState::Applied);
                out.message = Some(EARLIER.to_string());
                outcomes.push(out);
            }
        }
        outcomes.sort_by_key(|o| o.idx);
    }

    // Step 5: record, then clean up. Every outcome is saved before any
    // workspace is removed, so a crash during clean-up never leaves a task
    // listed open with a half-removed workspace (a re-run would read the
    // missing files as deletions).
    let mut artifacts_error: Option<Error> = undo_error;
    let mut trashes: Vec<PathBuf> = Vec::new();
    // Workspaces kept because they are the source of open batches.
    let mut kept: Vec<Kept> = Vec::new();
    let mut closed: Vec<(usize, Closed)> = Vec::new();
    if !dry_run {
        let now = crate::sys::time::rfc3339(crate::sys::time::now());
        for out in outcomes.iter_mut() {
            if out.status == TaskState::Discarded && out.proposal_ref.is_some() {
                // Kept past the batch: the patch moves out of its state folder.
                if let Err(e) = move_to_kept(&source, &b, out) {
                    artifacts_error.get_or_insert(e);
                }
                out.kept_until = Some(kept_until(&source, out.proposal_ref.as_deref()));
            } else if out.ok() {
                out.proposal_ref = None;
                out.patch = None;
            } else {
                keep_artifacts(&source, &b, out, false);
            }
            if let Some(t) = b.tasks.get_mut(out.idx) {
                // Unresolved, a refreshed task stays `conflicted` (design §3.12).
                let unresolved = out.reason == Some(crate::ops::refresh::UNRESOLVED);
                t.state = if unresolved {
                    TaskState::Conflicted
                } else if out.status == TaskState::NotSubmitted {
                    TaskState::Open
                } else {
                    out.status
                };
                // The files still unresolved (a conflict the worker made
                // itself included), which status names (design §3.12).
                t.conflicted_paths = if unresolved {
                    let mut paths: Vec<String> = out
                        .conflicts
                        .iter()
                        .map(|c| String::from_utf8_lossy(&c.path).into_owned())
                        .collect();
                    paths.sort();
                    paths.dedup();
                    paths
                } else {
                    Vec::new()
                };
                t.reason = out.reason.map(str::to_string);
                t.proposal_ref = out.proposal_ref.clone();
                t.patch = out.patch.clone();
                t.verify_log = out.verify_log.clone();
                t.updated_at = Some(now.clone());
                if t.remote {
                    // What this apply fetched is what the batch's end may
                    // delete on the remote (design §3.14 "Remote refs").
                    t.fetched = fetched.get(&t.name).map(|id| id.to_string());
                }
            }
        }
        let state_dir = source.state_dir();
        batch::save(&state_dir, &b)?;
        // Large workspaces are moved into the trash (one rename each) and
        // deleted by a background process: deleting 100k files costs far
        // more kernel time than the whole apply. A workspace that is the
        // source of another open batch (an agent prepared a batch inside
        // it) is kept as an ordinary worktree: that batch writes back into
        // it (`teardown`).
        let others = batch::list_ok(&state_dir).unwrap_or_default();
        for (i, task) in b.tasks.iter().enumerate() {
            if task.state.is_open() {
                continue;
            }
            let this_run = outcomes.iter().any(|o| o.idx == i);
            let keep = this_run && task.state != TaskState::Discarded && opts.keep;
            // A discarded workspace holding git repositories its worker made
            // is kept (design §3.2: never dropped silently; a mistyped
            // `--discard` must lose nothing a proposal cannot hold).
            let nested = this_run
                && task.state == TaskState::Discarded
                && outcomes
                    .iter()
                    .any(|o| o.idx == i && !o.nested_kept.is_empty());
            let removed = if task.remote {
                // No workspace here (design §3.14).
                Ok(())
            } else if nested || keep {
                // Released (unlocked), kept as a worktree (`--keep`, or a
                // discarded workspace holding a nested repository).
                teardown::keep_if_hosting(&source, &b, task, &others).and_then(|h| {
                    match h {
                        Some(hosted) => kept.push((task.name.clone(), task.root.clone(), hosted)),
                        None => {
                            workspace::release(&source.common_dir, &task.worktree_id)?;
                            if keep {
                                closed.push((i, Closed::Kept));
                            }
                        }
                    }
                    Ok(())
                })
            } else if this_run || still_locked_by_us(&source, &b, task) {
                // (A closed task's workspace still locked by us was left
                // behind by an apply interrupted during clean-up.)
                teardown::workspace(&source, &b, task, &others, teardown::Way::Trash).map(
                    |(fate, trash)| {
                        match fate {
                            teardown::Fate::Hosting(hosted) => {
                                kept.push((task.name.clone(), task.root.clone(), hosted))
                            }
                            teardown::Fate::Removed => closed.push((i, Closed::Removed)),
                            teardown::Fate::Missing => closed.push((i, Closed::Missing)),
                            teardown::Fate::Foreign => closed.push((i, Closed::Foreign)),
                        }
                        if let Some(t) = trash.filter(|t| !trashes.contains(t)) {
                            trashes.push(t);
                        }
                    },
                )
            } else {
                Ok(())
            };
            let kept = task.state == TaskState::Discarded && task.proposal_ref.is_some();
            let r = removed
                .and_then(|()| {
                    if kept {
                        return Ok(());
                    }
                    Ok(
                        refs::delete(&source.repo, &refs::proposal(&b.id, &task.name))
                            .map(|_| ())?,
                    )
                })
                .and_then(|()| {
                    Ok(
                        refs::delete(&source.repo, &refs::task_base(&b.id, &task.name))
                            .map(|_| ())?,
                    )
                })
                .and_then(|()| {
                    Ok(crate::sys::fs::remove_file(&proposal::patch_path(
                        &source, &b, &task.name,
                    ))?)
                });
            if let Err(e) = r {
                artifacts_error.get_or_insert(e);
            }
        }
    }
    let batch_open = if dry_run {
        b.tasks.iter().enumerate().any(|(i, t)| {
            t.state.is_open() && outcomes.iter().find(|o| o.idx == i).is_none_or(|o| !o.ok())
        })
    } else {
        b.open_tasks().next().is_some()
    };
    let mut remote_left = None;
    if !dry_run && !batch_open {
        // Its refs on the remote first: a remote that fails is reported, never
        // a reason to keep local state (design §3.14).
        remote_left = crate::ops::remote::end(&source, &b, &Default::default());
        teardown::refs_and_state(&source, &b)?;
    }

    // Nothing more changes: the deleter runs without the lock held (it
    // takes it to remove the emptied repository folder).
    drop(lock);
    for t in &trashes {
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
        batch_open,
        dry_run,
        write_error,
        kept,
        workspaces: closed,
        artifacts_error,
        side_effects,
        remote_left,
        // Nothing merged: nothing was verified (design §6.4 "not_run").
        verify: verify_report.or_else(|| verify.map(crate::ops::verify::not_run)),
        // A signal since the write-back began, which was finished (design §7 "Signals").
        interrupted: wrote && crate::sys::interrupt::interrupted(),
    })
}

/// The record of an apply about to write `writes`, staged in `dir` (the
/// batch's state folder) for `writeback::write_then`: its undo entry
/// (design §3.11), and the batch with the tasks it applies recorded
/// `applied` (the other tasks as they are: an apply finished by recovery
/// re-examines them). Returns the apply id and the staged files.
fn stage_record(
    source: &Source,
    b: &Batch,
    outcomes: &[Outcome],
    writes: &[PathWrite],
    dir: &std::path::Path,
) -> Result<(String, Vec<writeback::Then>)> {
    let applied: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.status == TaskState::Applied)
        .collect();
    let tasks: Vec<(String, String)> = applied
        .iter()
        .filter_map(|o| Some((b.tasks[o.idx].name.clone(), o.proposal_ref.clone()?)))
        .collect();
    let (id, entry) = crate::ops::undo::stage(source, &b.id, writes, &tasks, dir)?;
    let mut after = b.clone();
    let now = crate::sys::time::rfc3339(crate::sys::time::now());
    for o in &applied {
        if let Some(t) = after.tasks.get_mut(o.idx) {
            t.state = TaskState::Applied;
            t.reason = None;
            t.conflicted_paths.clear();
            t.updated_at = Some(now.clone());
        }
    }
    let staged = batch::stage(&source.state_dir(), &after).inspect_err(|_| {
        crate::ops::undo::discard_staged(source, &id);
        let _ = std::fs::remove_file(&entry.staged);
    })?;
    Ok((
        id,
        vec![
            entry,
            writeback::Then {
                staged: staged.0,
                to: staged.1,
            },
        ],
    ))
}

/// The message of a task an earlier, interrupted apply recorded applied.
pub const EARLIER: &str =
    "applied by an earlier apply that was interrupted (its write-back was finished); its clean-up is done now";

/// A task whose workspace pushed entries still in the stash has work
/// there that apply cannot see: it stays open (reason `stashed`), whatever
/// its workspace holds, so neither is applied without the other nor its
/// workspace removed (design §3.16).
fn stash_holds_work(
    b: &Batch,
    effects: &[crate::ops::side_effects::SideEffect],
    outcomes: &mut [Outcome],
    candidates: &mut Vec<Candidate>,
) {
    for (task, entries) in crate::ops::side_effects::stashed(effects) {
        let Some(out) = outcomes.iter_mut().find(|o| o.idx == task) else {
            continue;
        };
        if !matches!(out.status, TaskState::NoChanges | TaskState::Open) {
            continue;
        }
        candidates.retain(|c| c.task != task);
        let names: Vec<String> = entries.iter().map(|e| e.display_name()).collect();
        out.status = TaskState::Open;
        out.reason = Some("stashed");
        out.message = Some(format!(
            "the work of task {} is in the repository's stash ({}), not in its workspace",
            b.tasks[task].name,
            names.join(", ")
        ));
    }
}

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

/// Why a task's workspace cannot be read (reason `workspace_missing`).
fn missing_message(task: &batch::Task, identity: &workspace::Identity) -> String {
    match identity {
        workspace::Identity::Replaced(why) => format!(
            "the workspace {} {why}: it is no longer the folder prepare made, so it is neither read nor removed",
            task.root.display()
        ),
        _ => format!("the workspace {} is missing", task.root.display()),
    }
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

/// A task that changed submodules: a conflict that keeps its workspace,
/// and its proposal ref and patch when it changed superproject files too
/// (design §3.15).
fn submodule_changed(out: &mut Outcome, r: Option<Recorded>, subs: Vec<BString>) {
    if let Some(r) = r {
        out.proposed = r.paths.into_iter().map(|c| c.path).collect();
        if let Some((name, patch)) = r.artifacts {
            out.proposal_ref = Some(name);
            out.patch = Some(patch);
        }
    }
    out.status = TaskState::Conflict;
    out.reason = Some("submodule_changed");
    out.conflicts = subs
        .into_iter()
        .map(|path| PathConflict {
            path,
            reason: "submodule changed".into(),
        })
        .collect();
}

/// One workspace's proposal, as recorded (or previewed).
struct Recorded {
    tree: gix::ObjectId,
    paths: Vec<crate::git::diff::PathChange>,
    /// Proposal ref and patch (not with `--dry-run`).
    artifacts: Option<(String, PathBuf)>,
    /// Objects kept in memory (`--dry-run`).
    objects: Option<proposal::Objects>,
    /// Nested repositories in the workspace (the task cannot apply).
    nested: Vec<BString>,
    /// Paths in the workspace git refuses (the task cannot apply).
    invalid: Vec<crate::git::validate::Invalid>,
    /// A refreshed task's own base tree (design §3.12).
    base: Option<gix::ObjectId>,
}

/// A remote task's fetched proposal (design §3.14), checked and recorded
/// as a local one is: its ref (fetched there already) and patch.
fn receive(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    commit: gix::ObjectId,
    baseline_tree: gix::ObjectId,
    dry_run: bool,
) -> Result<Option<Recorded>> {
    let (_, base_tree) = proposal::base_of(&source.repo, b, task, baseline_tree)?;
    let Some((tree, paths)) =
        crate::ops::remote::received(&source.repo, b, task, commit, base_tree)?
    else {
        return Ok(None);
    };
    let artifacts = if dry_run {
        None
    } else {
        let patch = proposal::patch_path(source, b, &task.name);
        crate::merge::patch::write_patch(&source.repo, base_tree, tree, &patch)?;
        Some((refs::proposal(&b.id, &task.name), patch))
    };
    Ok(Some(Recorded {
        tree,
        paths,
        artifacts,
        objects: None,
        nested: Vec::new(),
        // Checked by the integration (`integrate::screen`), with the tree.
        invalid: Vec::new(),
        base: task.base.is_some().then_some(base_tree),
    }))
}

/// At most this many snapshots run at once.
const MAX_WALKS: usize = 8;

/// Record (or preview) the proposals of `tasks`, all at once on a few
/// threads: a snapshot is mostly a stat walk, and the walks overlap well on
/// a few cores. Results in the order of `tasks`.
fn record_all(
    source: &Source,
    b: &Batch,
    tasks: &[&batch::Task],
    baseline_tree: gix::ObjectId,
    dry_run: bool,
) -> Result<Vec<Result<Option<Recorded>>>> {
    let shared = source.repo.clone().into_sync();
    let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
    let record = |task: &batch::Task| -> Result<Option<Recorded>> {
        let repo = shared.to_thread_local();
        let (_, base_tree) = proposal::base_of(&repo, b, task, baseline_tree)?;
        let base = task.base.is_some().then_some(base_tree);
        if dry_run {
            Ok(
                proposal::preview(&repo, task, base_tree)?.map(|p| Recorded {
                    tree: p.tree,
                    paths: p.paths,
                    artifacts: None,
                    objects: Some(p.objects),
                    nested: p.nested,
                    invalid: p.invalid,
                    base,
                }),
            )
        } else {
            Ok(
                proposal::record_in(&repo, &batch_dir, b, task, baseline_tree)?.map(|p| Recorded {
                    tree: p.tree,
                    paths: p.paths,
                    artifacts: Some((p.ref_name, p.patch)),
                    objects: None,
                    nested: p.nested,
                    invalid: p.invalid,
                    base,
                }),
            )
        }
    };
    // Each walk mostly waits on the kernel's stat calls, and gix already
    // spreads one walk over the cores: running all of them at once (up to
    // a bound that keeps memory, one index per walk, in check) measured
    // faster than one or two at a time on 2 cores, and much faster when
    // other processes compete.
    fn lost() -> Error {
        Error::state(
            Code::Internal,
            "a snapshot thread stopped unexpectedly",
            "report this bug; nothing was changed",
        )
    }
    Ok(crate::sys::parallel::map(
        tasks.iter().copied(),
        MAX_WALKS,
        lost,
        record,
    ))
}

/// A closed task's workspace that is still ours and still carries the lock
/// prepare put on it (a `--keep` workspace was unlocked on purpose).
fn still_locked_by_us(source: &Source, b: &Batch, task: &batch::Task) -> bool {
    if workspace::health(&source.common_dir, task) != workspace::Health::Ours {
        return false;
    }
    crate::git::registration::Registration::new(&source.common_dir, &task.worktree_id)
        .is_ours_for(&b.id, &task.name)
}

/// Save a task apply discards: its workspace's changes as a proposal commit,
/// ref and patch (as gc's rescue does), or, when the workspace is gone or no
/// longer ours, the proposal recorded before. A workspace whose changes
/// cannot be read is not discarded: the task fails and keeps it.
fn keep_discarded(source: &Source, b: &Batch, out: &mut Outcome, baseline_tree: gix::ObjectId) {
    // Read at the real path the identity check found; a folder that is not
    // the one prepare made is never read.
    let workspace::Identity::Ours { real, .. } =
        workspace::identify(&source.common_dir, &b.tasks[out.idx])
    else {
        keep_artifacts(source, b, out, false);
        return;
    };
    let mut task = b.tasks[out.idx].clone();
    task.root = real;
    match proposal::record(source, b, &task, baseline_tree) {
        Ok(Some(p)) => {
            out.proposal_ref = Some(p.ref_name);
            out.patch = Some(p.patch);
            out.nested_kept = p.nested;
        }
        Ok(None) => {}
        Err(e) => {
            out.fail(
                "snapshot_failed",
                format!(
                    "its work could not be saved, so it was not discarded: {}",
                    e.message
                ),
            );
            keep_artifacts(source, b, out, false);
        }
    }
}

/// Move a discarded task's patch to `<state>/kept/<batch>/` (where gc keeps
/// rescued patches), and start its keep-failed clock now.
fn move_to_kept(source: &Source, b: &Batch, out: &mut Outcome) -> Result<()> {
    let task = &b.tasks[out.idx];
    if let Some(name) = &out.proposal_ref {
        crate::record::kept::redate(&source.repo, name)?;
    }
    let Some(from) = out.patch.clone() else {
        return Ok(());
    };
    let dir = crate::record::kept::kept_dir(&source.state_dir()).join(&b.id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let to = dir.join(format!("{}.patch", task.name));
    std::fs::rename(&from, &to)
        .map_err(|e| Error::io(format!("cannot move {}", from.display()), e))?;
    crate::sys::fs::sync_dir(&dir);
    out.patch = Some(to);
    Ok(())
}

/// When gc may remove a discarded task's kept proposal: its clock is the
/// proposal commit's time, as `status` and gc read it (not this moment,
/// which may be a second later).
fn kept_until(source: &Source, proposal_ref: Option<&str>) -> String {
    let started = proposal_ref
        .and_then(|name| refs::get(&source.repo, name).ok().flatten())
        .and_then(|id| crate::record::kept::commit_time(&source.repo, id))
        .unwrap_or_else(crate::sys::time::now);
    crate::sys::time::rfc3339(
        crate::sys::time::deadline(started, source.config.keep_failed_secs)
            .unwrap_or(crate::sys::time::MAX_SECS),
    )
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
