//! Steps 2-4 of apply (design §3.2): integrate the candidates in memory
//! against the source as it is now (`landing::plan`, or with `--verify`
//! `verify::integrate_verified`), mark each task's outcome, then write the
//! result back through the journal with its record (the undo entry and the
//! tasks applied) staged to take effect at the write-back's commit point.
//!
//! Owns: the outcomes the integration and the write-back decide
//! (`applied`, `rejected`, `unverified`, the refusals, `write_failed`).
//! Never: writes anything with `--dry-run`; writes a path the plan does not
//! name; removes a workspace or a proposal (step 5 does).

use std::collections::BTreeSet;
use std::path::PathBuf;

use gix::bstr::BString;

use super::Outcome;
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::Candidate;
use crate::merge::landing::{persist, Side};
use crate::ops::observe::Observer;
use crate::record::batch::{self, Batch, TaskState};
use crate::writeback::{self, PathWrite};

/// What steps 2-4 read from.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub source: &'a Source,
    pub b: &'a Batch,
    /// The repository with the proposals' objects (object memory).
    pub mem: &'a gix::Repository,
    pub baseline_tree: gix::ObjectId,
    pub strict: bool,
    pub dry_run: bool,
    pub verify: Option<&'a crate::ops::verify::Settings>,
    pub observer: &'a dyn Observer,
}

/// What steps 2-4 did (all empty when nothing was integrated).
#[derive(Default)]
pub(super) struct Landed {
    /// Paths written in the source.
    pub written: Vec<BString>,
    /// The write-back failed (and was rolled back).
    pub write_error: Option<Error>,
    /// The undo entry of this apply.
    pub apply_id: Option<String>,
    /// The undo entry could not be staged or put in place (a warning).
    pub undo_error: Option<Error>,
    /// The write-back happened.
    pub wrote: bool,
    /// With `--verify`: how it went.
    pub verify_report: Option<crate::ops::verify::Report>,
}

/// Steps 2-4 for `candidates` (not empty); `merging` is the observer's
/// step, ended once the outcomes are known. The lock is handed back (the
/// verification gives it up while it runs).
pub(super) fn land(
    cx: Ctx<'_>,
    candidates: &[Candidate],
    outcomes: &mut [Outcome],
    merging: Box<dyn std::any::Any>,
    lock: crate::ops::lock::RepoLock,
) -> Result<(Landed, crate::ops::lock::RepoLock)> {
    let (plan, lock, verify_report) = integrate(cx, candidates, outcomes, lock)?;
    drop(merging);
    let (apply_id, undo_error, write_error, wrote) = write_back(cx, &plan, outcomes)?;
    let mut written: Vec<BString> = Vec::new();
    if write_error.is_none() {
        written = plan.writes.iter().map(|w| w.path.clone()).collect();
    }
    Ok((
        Landed {
            written,
            write_error,
            apply_id,
            undo_error,
            wrote,
            verify_report,
        },
        lock,
    ))
}

/// Steps 2-3: the plan, and each task's outcome by it.
fn integrate(
    cx: Ctx<'_>,
    candidates: &[Candidate],
    outcomes: &mut [Outcome],
    mut lock: crate::ops::lock::RepoLock,
) -> Result<(
    crate::merge::integrate::Plan,
    crate::ops::lock::RepoLock,
    Option<crate::ops::verify::Report>,
)> {
    let Ctx {
        source,
        b,
        mem,
        baseline_tree,
        strict,
        dry_run,
        verify,
        observer,
    } = cx;
    let mut verify_report: Option<crate::ops::verify::Report> = None;
    let mut verdicts: (Vec<(usize, PathBuf)>, Vec<usize>) = Default::default();
    let mut checker = crate::merge::landing::checker(source, mem, !dry_run);
    let mut check =
        |writes: &[PathWrite]| -> Result<Vec<writeback::Blocked>> { Ok(checker(writes)?) };
    let plan = if let Some(settings) = &verify {
        let ctx = crate::ops::verify::Ctx {
            source,
            batch: b,
            mem,
            baseline_tree,
            strict,
            dry_run,
            settings,
            observer,
        };
        let v = crate::ops::verify::integrate_verified(&ctx, candidates, lock, &mut check)?;
        lock = v.lock;
        verify_report = Some(v.report);
        verdicts = (v.rejected, v.unverified);
        v.plan
    } else {
        crate::merge::landing::plan(source, mem, baseline_tree, candidates, strict, !dry_run)?
    };
    let to_write: BTreeSet<&BString> = plan.writes.iter().map(|w| &w.path).collect();
    for out in outcomes.iter_mut() {
        if plan.applied.contains(&out.idx) {
            out.applied_by(&to_write);
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

    Ok((plan, lock, verify_report))
}

/// Step 4: write back what `plan` writes (not in a dry run). Returns the
/// undo entry, the undo entry's failure, the write-back's failure and
/// whether it wrote.
#[allow(clippy::type_complexity)]
fn write_back(
    cx: Ctx<'_>,
    plan: &crate::merge::integrate::Plan,
    outcomes: &mut [Outcome],
) -> Result<(Option<String>, Option<Error>, Option<Error>, bool)> {
    let Ctx {
        source,
        b,
        mem,
        dry_run,
        observer,
        ..
    } = cx;
    let mut write_error: Option<Error> = None;
    let mut apply_id: Option<String> = None;
    let mut undo_error: Option<Error> = None;
    let mut wrote = false;
    // Step 4: write back. Its record (the undo entry, and these tasks
    // applied in the batch) is staged first and takes effect at the
    // write-back's commit point, so a write-back that recovery finishes
    // after a crash is recorded as this one would be (design §7 "What
    // recovery finishes"). A record that cannot be staged does not stop
    // the write-back: the result stands without it, as a warning.
    if !dry_run && !plan.writes.is_empty() {
        let _writing = observer.step(&format!("Writing {} paths", plan.writes.len()));
        let dir = batch::batch_dir(&source.state_dir(), &b.id);
        let result = persist(&source.repo, mem, &plan.writes, Side::New)
            .map_err(Error::from)
            .and_then(|()| {
                let then = match stage_record(source, b, outcomes, &plan.writes, &dir) {
                    Ok((id, staged)) => {
                        apply_id = Some(id);
                        staged
                    }
                    Err(e) => {
                        undo_error = Some(e);
                        Vec::new()
                    }
                };
                writeback::write_then(source, &dir, &plan.writes, &then).map_err(Error::from)
            });
        if let Err(e) = result {
            if let Some(id) = apply_id.take() {
                crate::ops::undo::discard_staged(source, &id);
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
            crate::ops::undo::discard_staged(source, &id);
            undo_error = Some(Error::state(
                Code::WriteFailed,
                "the undo entry of this apply could not be put in place",
                "the result stands; `git delegate undo` cannot take this apply back",
            ));
        }
    }
    Ok((apply_id, undo_error, write_error, wrote))
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
) -> Result<(String, Vec<writeback::StagedState>)> {
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
            writeback::StagedState {
                staged: staged.0,
                to: staged.1,
            },
        ],
    ))
}
