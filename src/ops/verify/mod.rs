//! Verified integration (design §3.10): `apply --verify CMD` runs CMD against
//! the integrated result `F` before anything is written to the source, and
//! lands only a set of tasks that passes it.
//!
//! Owns (in `culprit`, `runner` and `leftovers`): the culprit search (`search`, a pure function over an oracle, with
//! `--verify-jobs` evaluating the sets the sequential search would reach, up
//! to J at once); the verification runs (each candidate set's `F` as a commit
//! under `refs/pi-delegate/batches/<uuid>/verify/<n>`, a verification
//! workspace made the way task workspaces are, with the ignored files of
//! design §3.9 (on btrfs, snapshots of a template made once per
//! verification and never run in, design §3.17), CMD through `sh -c` in its own process group with stdin from
//! `/dev/null`, a timeout that kills the group, and its log
//! `<common-dir>/delegate/logs/<uuid>/verify-<n>.log`), with the batch's
//! busy marker (`record::busy`) set while apply runs CMD without the
//! repository lock; and the loop that redoes integration and verification when the source
//! changed at a written path while CMD ran.
//! Never: writes the source working tree (apply writes the plan returned
//! here); holds the repository lock while CMD runs; prints (CMD's output
//! goes to its log and, line by line, to the caller's `Observer`); lets the
//! repository-locating `GIT_*` variables reach CMD.

use std::path::PathBuf;

use gix::bstr::BString;
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{self, Candidate, PathConflict, Plan, Refusal, Refused};
use crate::ops::lock::RepoLock;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::Batch;
use crate::writeback::{Blocked, PathWrite};

mod culprit;
mod leftovers;
mod runner;

pub use culprit::{search, Found, Oracle};
pub use leftovers::{prune_logs, remove_leftovers, Processes, Swept};
use runner::Runner;

/// What to run and how (design §3.10; command line over `apply.*` config).
#[derive(Debug, Clone)]
pub struct Settings {
    pub command: String,
    /// `--verify-timeout` (default `apply.verify-timeout`, 30m).
    pub timeout_secs: i64,
    /// `--verify-jobs` (default `apply.verify-jobs`, 1).
    pub jobs: usize,
    /// `--keep`: verification workspaces, refs and passing logs stay.
    pub keep: bool,
}

/// The verification to run, if any: `--verify CMD` wins over
/// `apply.verify`, `--no-verify` turns either off, an empty command is none.
pub fn settings(
    cli: Option<&str>,
    no_verify: bool,
    timeout_secs: Option<i64>,
    jobs: Option<usize>,
    keep: bool,
    config: &crate::config::Config,
) -> Option<Settings> {
    if no_verify {
        return None;
    }
    let command = cli.unwrap_or(&config.verify).to_string();
    if command.trim().is_empty() {
        return None;
    }
    Some(Settings {
        command,
        timeout_secs: timeout_secs.unwrap_or(config.verify_timeout_secs),
        jobs: jobs.unwrap_or(config.verify_jobs).max(1),
        keep,
    })
}

// ---------------------------------------------------------------------------
// Verification runs.

/// How the verification went (design §6.4 `verify.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    PassedAfterRejections,
    FailsWithoutTasks,
    NotRun,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::PassedAfterRejections => "passed_after_rejections",
            Outcome::FailsWithoutTasks => "fails_without_tasks",
            Outcome::NotRun => "not_run",
        }
    }
}

/// One run of CMD.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its number: the run is `verify-N` (its log, its live output's
    /// prefix), numbered on from the batch's earlier verifications, whose
    /// failing logs stay.
    pub n: usize,
    /// The tasks in the tree under test, in task order.
    pub tasks: Vec<String>,
    /// CMD's exit status (`None`: killed by a signal or the timeout).
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Its log (a passing run's is removed at the end unless `--keep`).
    pub log: PathBuf,
}

impl Run {
    pub fn passed(&self) -> bool {
        self.exit == Some(0) && !self.timed_out
    }
}

/// The `verify` object of the apply document.
#[derive(Debug, Clone)]
pub struct Report {
    pub command: String,
    pub outcome: Outcome,
    pub runs: Vec<Run>,
    /// Why it was not run, when that is not "nothing merged":
    /// `untrusted_config` (design §3.18).
    pub reason: Option<&'static str>,
}

/// The report when no task was there to verify.
pub fn not_run(settings: Settings) -> Report {
    Report {
        command: settings.command,
        outcome: Outcome::NotRun,
        runs: Vec::new(),
        reason: None,
    }
}

/// The report of `command`, an `apply.verify` left out because the user
/// has not confirmed `delegate.toml` when no confirmed command ran in its
/// place (design §3.18): `not_run`, reason `untrusted_config`.
pub fn left_out(command: String) -> Report {
    Report {
        command,
        outcome: Outcome::NotRun,
        runs: Vec::new(),
        reason: Some("untrusted_config"),
    }
}

/// What verified integration decided.
pub struct Verified {
    /// The plan to write: the verified set against the source as it is now
    /// (its `refused` also names tasks taken out because the source changed
    /// at a path they write while CMD ran).
    pub plan: Plan,
    /// The repository lock, taken again after the runs.
    pub lock: RepoLock,
    pub report: Report,
    /// Culprits (task index) with the log of the run that failed.
    pub rejected: Vec<(usize, PathBuf)>,
    /// Tasks left open because CMD fails without any task.
    pub unverified: Vec<usize>,
}

/// What apply hands over.
pub struct Ctx<'a> {
    pub source: &'a Source,
    pub batch: &'a Batch,
    /// The repository with the proposals' objects (object memory).
    pub mem: &'a gix::Repository,
    pub baseline_tree: ObjectId,
    pub strict: bool,
    pub dry_run: bool,
    pub settings: &'a Settings,
    pub observer: &'a dyn Observer,
}

/// Integrate `candidates` (design §3.2 steps 2-3) and verify the result
/// (design §3.10): returns the plan to write back. `lock` is released while
/// CMD runs (the batch is marked busy) and taken again before returning.
pub fn integrate_verified(
    ctx: &Ctx<'_>,
    candidates: &[Candidate],
    lock: RepoLock,
    check: &mut dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>>,
) -> Result<Verified> {
    let mut lock = Some(lock);
    let mut cands: Vec<Candidate> = candidates.to_vec();
    let mut taken_out: Vec<Refused> = Vec::new();
    let mut runner = Runner::new(ctx)?;
    // Ctrl-C while CMD runs: its process groups are killed and everything
    // made for them removed.
    let _signals = crate::sys::interrupt::catch_signals().map(|d| d.auto_deregister());
    loop {
        // The whole source: the verification workspace holds all of it.
        let s_tree = crate::snapshot::snapshot(ctx.mem)?.tree;
        let full = integrate::integrate(
            ctx.mem,
            ctx.baseline_tree,
            s_tree,
            &cands,
            ctx.strict,
            check,
        )?;
        let order: Vec<usize> = full.applied.clone();
        let Some(held) = lock.take() else {
            return Err(internal());
        };
        if order.is_empty() {
            let plan = with_refusals(full, taken_out);
            return Ok(Verified {
                plan,
                lock: held,
                report: runner.report(Outcome::NotRun),
                rejected: Vec::new(),
                unverified: Vec::new(),
            });
        }
        let busy = crate::record::busy::mark(&ctx.source.state_dir(), ctx.batch)?;
        drop(held);
        let found = {
            let _step = ctx
                .observer
                .step(&format!("Verifying: {}", ctx.settings.command));
            runner.trees.clear();
            runner.by_set.clear();
            search(order.len(), ctx.settings.jobs, &mut |sets| {
                runner.round(sets, &order, &cands, s_tree, &mut *check)
            })
        };
        let relocked = relock(ctx)?;
        drop(busy);
        let found = found?;
        let rejected: Vec<(usize, PathBuf)> = found
            .rejected
            .iter()
            .map(|&(p, run)| (order[p], runner.log_of(run)))
            .collect();
        if found.fails_without_tasks {
            let mut plan = full;
            plan.writes.clear();
            plan.applied.clear();
            plan.changed.clear();
            plan.f_tree = s_tree;
            let plan = with_refusals(plan, taken_out);
            runner.finish();
            return Ok(Verified {
                plan,
                lock: relocked,
                report: runner.report(Outcome::FailsWithoutTasks),
                rejected: Vec::new(),
                unverified: order,
            });
        }
        let landed: Vec<usize> = found.landed.iter().map(|&p| order[p]).collect();
        let verified_tree = runner.trees.get(&landed).copied().unwrap_or(s_tree);
        let (landed_c, mut plan) = integrate_now(ctx, &cands, &landed, s_tree, check)?;
        let out = changed_while_running(ctx, &plan, &landed, &landed_c, verified_tree)?;
        if !out.is_empty() {
            // design §3.10: the paths written hold exactly the verified
            // content; the tasks concerned are taken out and integration
            // and verification are redone without them.
            cands.retain(|c| !out.iter().any(|r| r.task == c.task));
            taken_out.extend(out);
            lock = Some(relocked);
            continue;
        }
        // Tasks that did not merge at all keep their refusals.
        let earlier: Vec<Refused> = full
            .refused
            .into_iter()
            .filter(|r| !plan.refused.iter().any(|k| k.task == r.task))
            .collect();
        plan.refused.extend(earlier);
        let plan = with_refusals(plan, taken_out);
        runner.finish();
        let outcome = if rejected.is_empty() {
            Outcome::Passed
        } else {
            Outcome::PassedAfterRejections
        };
        return Ok(Verified {
            plan,
            lock: relocked,
            report: runner.report(outcome),
            rejected,
            unverified: Vec::new(),
        });
    }
}

/// The verified tasks `landed` integrated again with the source as it is
/// now: read at the paths the tasks touch (all the merges and the
/// write-back use, see `touched`), or where that is not exact, all of it
/// (`s_tree` in a dry run). Their candidates, and the plan.
fn integrate_now(
    ctx: &Ctx<'_>,
    cands: &[Candidate],
    landed: &[usize],
    s_tree: ObjectId,
    check: &mut dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>>,
) -> Result<(Vec<Candidate>, Plan)> {
    let landed_c: Vec<Candidate> = cands
        .iter()
        .filter(|c| landed.contains(&c.task))
        .cloned()
        .collect();
    let s_now = if ctx.dry_run {
        s_tree
    } else {
        crate::merge::landing::source_tree(ctx.mem, ctx.baseline_tree, &landed_c)?
    };
    let plan = integrate::integrate(
        ctx.mem,
        ctx.baseline_tree,
        s_now,
        &landed_c,
        ctx.strict,
        check,
    )?;
    Ok((landed_c, plan))
}

/// `plan` with the tasks taken out while verifying refused too, in task order.
fn with_refusals(mut plan: Plan, taken_out: Vec<Refused>) -> Plan {
    plan.refused.extend(taken_out);
    plan.refused.sort_by_key(|r| r.task);
    plan
}

fn internal() -> Error {
    Error::state(
        Code::Internal,
        "the repository lock was lost during verification",
        "report this bug; nothing was changed",
    )
}

/// Take the repository lock again after the runs (recovering, as every
/// mutating command does; a dry run only waits for it).
fn relock(ctx: &Ctx<'_>) -> Result<RepoLock> {
    if ctx.dry_run {
        return Ok(crate::ops::lock::acquire(
            &ctx.source.state_dir(),
            ctx.source.config.lock_timeout_secs,
        )?);
    }
    let locked = crate::ops::lock::lock_and_recover(ctx.source)?;
    ctx.observer.notice(Notice::Recovered(locked.recovery));
    Ok(locked.lock)
}

/// The tasks to take out because what `plan` would write is not what was
/// verified: a task of the verified set no longer merges with the source
/// (or no longer can be written: its own refusal), or the source changed at
/// a path written on a task's behalf (`source_changed`).
fn changed_while_running(
    ctx: &Ctx<'_>,
    plan: &Plan,
    landed: &[usize],
    landed_c: &[Candidate],
    verified: ObjectId,
) -> Result<Vec<Refused>> {
    let mut out: Vec<Refused> = plan.refused.clone();
    let tree = ctx
        .mem
        .find_tree(verified)
        .map_err(|e| Error::git("cannot read the verified tree", e))?;
    let mut bad: Vec<BString> = Vec::new();
    for w in &plan.writes {
        let entry = tree
            .lookup_entry(w.path.split(|&c| c == b'/').map(|c| c.to_vec()))
            .map_err(|e| Error::git("cannot read the verified tree", e))?
            .map(|e| (e.mode().kind(), e.object_id()));
        if entry != w.new {
            bad.push(w.path.clone());
        }
    }
    if bad.is_empty() {
        return Ok(out);
    }
    for &t in landed {
        if out.iter().any(|r| r.task == t) {
            continue;
        }
        let mine = plan.changed.get(&t).map_or(&[][..], |v| v.as_slice());
        let props = landed_c
            .iter()
            .find(|c| c.task == t)
            .map_or(&[][..], |c| c.paths.as_slice());
        let conflicts: Vec<PathConflict> = bad
            .iter()
            .filter(|p| mine.contains(p) || props.contains(p))
            .map(|p| PathConflict {
                path: p.clone(),
                reason: "changed in the working tree while verifying".into(),
            })
            .collect();
        if !conflicts.is_empty() {
            out.push(Refused {
                task: t,
                reason: Refusal::SourceChanged,
                conflicts,
            });
        }
    }
    if out.is_empty() {
        // A path written on no task's behalf differs: take every task out
        // rather than write what was not verified.
        for &t in landed {
            out.push(Refused {
                task: t,
                reason: Refusal::SourceChanged,
                conflicts: bad
                    .iter()
                    .map(|p| PathConflict {
                        path: p.clone(),
                        reason: "changed in the working tree while verifying".into(),
                    })
                    .collect(),
            });
        }
    }
    Ok(out)
}
