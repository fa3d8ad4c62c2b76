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
mod follow;
mod land;
mod record;
mod report;
pub use report::{Closed, Kept, Options, Outcome, Report};

use serde_json::json;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch};
use crate::{git::commit, git::refs, merge::proposal};

/// Apply a batch (design §3.2), found from `here` (the repository around the
/// caller), into the working tree it was prepared in. Takes the repository
/// lock: recovering interrupted write-backs (told to `observer` at once),
/// or with `dry_run` refusing when one is left over.
pub fn run(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    let mut report = apply(here, opts, observer)?;
    if opts.refresh_conflicts {
        report.refreshed = follow::refresh_conflicts(&report.batch, &report.outcomes);
    }
    Ok(report)
}

/// The batch apply works on, opened: the lock held, the source it writes
/// back into, the tasks selected and the settings that hold for them.
struct Opened {
    lock: crate::ops::lock::RepoLock,
    b: Batch,
    source: Source,
    selected: Vec<(usize, bool)>,
    strict: bool,
    untrusted: Option<crate::ops::trust::Untrusted>,
    verify: Option<crate::ops::verify::Settings>,
    baseline_tree: gix::ObjectId,
    scratch: bool,
}

/// Take the lock, choose the batch and its source, select its tasks and
/// settle the settings: everything checked before a workspace is read.
fn open(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Opened> {
    // A dry run never recovers an interrupted write-back; it reports it (design §7).
    let lock = if opts.dry_run {
        lock_and_report(&here)?
    } else {
        let locked = crate::ops::lock::lock_and_recover(&here)?;
        observer.notice(Notice::Recovered(locked.recovery));
        locked.lock
    };
    // Omitted, BATCH skips batches whose prepare never completed while
    // another is open (`batch::choose`).
    let b = batch::select_open(&here.state_dir(), opts.batch.as_deref())?;
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
    check_baseline(&source, &b)?;
    let baseline_tree = commit::tree_of(&source.repo, &b.baseline)?;
    let scratch = !crate::workspace::Kind::of_batch(&b).writes_back();
    Ok(Opened {
        lock,
        b,
        source,
        selected,
        strict,
        untrusted,
        verify,
        baseline_tree,
        scratch,
    })
}

/// Steps 1 to 5 on the batch `open` chose.
fn apply(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    let Opened {
        mut lock,
        mut b,
        source,
        selected,
        strict,
        untrusted,
        verify,
        baseline_tree,
        scratch,
    } = open(here, opts, observer)?;
    let dry_run = opts.dry_run;

    let (mem, recorded) = step1(
        &source,
        &b,
        opts,
        (&selected, baseline_tree, scratch),
        observer,
    )?;
    let record::Recording {
        mut outcomes,
        candidates,
        fetched,
        side_effects,
    } = recorded;
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
        refreshed: None,
    })
}

/// Step 1: stop what runs in the selected workspaces (one scan of /proc
/// for all of them), then record every proposal, the workspaces'
/// snapshots (each a stat walk of the whole tree) in parallel. The object
/// memory the merges then work in holds a dry run's proposals.
fn step1(
    source: &Source,
    b: &Batch,
    opts: &Options,
    (selected, baseline_tree, scratch): (&[(usize, bool)], gix::ObjectId, bool),
    observer: &dyn Observer,
) -> Result<(gix::Repository, record::Recording)> {
    let recording = observer.step(&format!(
        "Recording the work of {} task{}",
        selected.len(),
        if selected.len() == 1 { "" } else { "s" }
    ));
    let mut mem = source.repo.clone().with_object_memory();
    // Merges read the same trees again and again.
    mem.object_cache_size_if_unset(8 << 20);
    let cx = record::Ctx {
        source,
        b,
        opts,
        baseline_tree,
        scratch,
    };
    let recorded = record::record(cx, selected, &mut mem)?;
    drop(recording);
    Ok((mem, recorded))
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
