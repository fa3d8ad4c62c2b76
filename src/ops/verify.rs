//! Verified integration (design §3.10): `apply --verify CMD` runs CMD against
//! the integrated result `F` before anything is written to the source, and
//! lands only a set of tasks that passes it.
//!
//! Owns: the culprit search (`search`, a pure function over an oracle, with
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

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gix::bstr::BString;
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{self, Candidate, PathConflict, Plan, Refusal, Refused};
use crate::ops::lock::RepoLock;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch};
use crate::writeback::{Blocked, PathWrite};

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
// The culprit search (pure).

/// What the search found. Sets are positions `0..n` in task order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Found {
    /// The set that lands (known to pass), in order.
    pub landed: Vec<usize>,
    /// Each culprit with the index (in `runs`) of the run that failed.
    pub rejected: Vec<(usize, usize)>,
    /// CMD failed with no task at all: nothing lands.
    pub fails_without_tasks: bool,
    /// Every set evaluated, in the order evaluated, with "passed".
    pub runs: Vec<(Vec<usize>, bool)>,
}

enum Step {
    Need(Vec<usize>),
    Done {
        landed: Vec<usize>,
        rejected: Vec<(usize, Vec<usize>)>,
        fails_without_tasks: bool,
    },
}

/// The sequential procedure of design §3.10, replayed over the answers
/// known so far: the next set it needs, or its result.
fn drive(n: usize, known: &HashMap<Vec<usize>, bool>) -> Step {
    macro_rules! ask {
        ($set:expr) => {{
            let set: Vec<usize> = $set;
            match known.get(&set) {
                Some(&v) => v,
                None => return Step::Need(set),
            }
        }};
    }
    let all: Vec<usize> = (0..n).collect();
    if ask!(all.clone()) {
        return Step::Done {
            landed: all,
            rejected: Vec::new(),
            fails_without_tasks: false,
        };
    }
    if !ask!(Vec::new()) {
        return Step::Done {
            landed: Vec::new(),
            rejected: Vec::new(),
            fails_without_tasks: true,
        };
    }
    // `g` passes; `g + rest` fails.
    let mut g: Vec<usize> = Vec::new();
    let mut rest: Vec<usize> = all;
    let mut rejected = Vec::new();
    loop {
        // The smallest k with g + rest[..k] failing: k = rest.len() fails,
        // k = 0 passes.
        let (mut lo, mut hi) = (0usize, rest.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let set: Vec<usize> = g.iter().chain(&rest[..mid]).copied().collect();
            if ask!(set) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let failing: Vec<usize> = g.iter().chain(&rest[..hi]).copied().collect();
        rejected.push((rest[hi - 1], failing));
        g.extend_from_slice(&rest[..hi - 1]);
        rest = rest[hi..].to_vec();
        if rest.is_empty() {
            return Step::Done {
                landed: g,
                rejected,
                fails_without_tasks: false,
            };
        }
        let set: Vec<usize> = g.iter().chain(&rest).copied().collect();
        if ask!(set.clone()) {
            return Step::Done {
                landed: set,
                rejected,
                fails_without_tasks: false,
            };
        }
    }
}

/// The sets the sequential search would reach next, nearest first: the one
/// it needs now, then those it would need after each answer, up to `jobs`.
fn frontier(n: usize, known: &HashMap<Vec<usize>, bool>, jobs: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut queue: VecDeque<HashMap<Vec<usize>, bool>> = VecDeque::new();
    queue.push_back(known.clone());
    while let Some(k) = queue.pop_front() {
        if out.len() >= jobs {
            break;
        }
        let Step::Need(set) = drive(n, &k) else {
            continue;
        };
        if !out.contains(&set) {
            out.push(set.clone());
        }
        for answer in [false, true] {
            let mut next = k.clone();
            next.insert(set.clone(), answer);
            queue.push_back(next);
        }
    }
    out.truncate(jobs.max(1));
    out
}

/// Runs CMD on each set given (positions in task order), saying which passed.
pub type Oracle<'a> = dyn FnMut(&[Vec<usize>]) -> Result<Vec<bool>> + 'a;

/// Find the culprits among `n` tasks (design §3.10): `eval` runs CMD on
/// each of the sets it is given (up to `jobs` at once) and says which
/// passed. With `jobs` 1 this costs at most `2 + m·(⌈log2 n⌉ + 1)` runs for
/// `m` culprits; with more, the sets the sequential search would reach are
/// evaluated ahead, and the outcome is the same given the same answers.
pub fn search(n: usize, jobs: usize, eval: &mut Oracle<'_>) -> Result<Found> {
    let mut known: HashMap<Vec<usize>, bool> = HashMap::new();
    let mut runs: Vec<(Vec<usize>, bool)> = Vec::new();
    loop {
        if n == 0 {
            return Ok(Found::default());
        }
        match drive(n, &known) {
            Step::Done {
                landed,
                rejected,
                fails_without_tasks,
            } => {
                let rejected = rejected
                    .into_iter()
                    .map(|(culprit, failing)| {
                        let run = runs.iter().position(|(s, _)| *s == failing).unwrap_or(0);
                        (culprit, run)
                    })
                    .collect();
                return Ok(Found {
                    landed,
                    rejected,
                    fails_without_tasks,
                    runs,
                });
            }
            Step::Need(_) => {
                let sets = frontier(n, &known, jobs);
                let answers = eval(&sets)?;
                for (set, passed) in sets.into_iter().zip(answers) {
                    known.insert(set.clone(), passed);
                    runs.push((set, passed));
                }
            }
        }
    }
}

/// The file in a batch's log folder that starts its keep-failed clock.
const ENDED: &str = ".ended";

/// Remove the log folders (`<state>/logs/<id>/`) of batches that ended more
/// than `keep_secs` ago (design §3.10: failing logs are kept like worker
/// logs, until `gc.keep-failed` after the batch ends). The first gc that
/// finds a folder whose batch is gone (`ids`: every batch there is) starts
/// its clock (a `.ended` file), so it is never removed earlier. Returns how
/// many folders went (or, with `dry_run`, would go).
pub fn prune_logs(state_dir: &Path, ids: &[String], keep_secs: i64, dry_run: bool) -> usize {
    let Ok(rd) = std::fs::read_dir(state_dir.join("logs")) else {
        return 0;
    };
    let now = crate::sys::time::now();
    let mut removed = 0;
    for e in rd.flatten() {
        let dir = e.path();
        let name = e.file_name();
        if ids.iter().any(|id| name.to_str() == Some(id)) || !crate::sys::fs::is_real_dir(&dir) {
            continue;
        }
        let ended = dir.join(ENDED);
        let since = std::fs::read_to_string(&ended)
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok());
        match since {
            None if !dry_run => {
                let _ = crate::sys::fs::write_atomic(&ended, format!("{now}\n").as_bytes());
            }
            Some(t) if now >= t.saturating_add(keep_secs) => {
                removed += 1;
                if !dry_run {
                    let _ = crate::sys::fs::remove_all(&dir);
                }
            }
            _ => {}
        }
    }
    removed
}

// ---------------------------------------------------------------------------
// What an apply killed while verifying leaves.

/// What to do about processes still inside a leftover verification workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    /// Stop them (SIGTERM, a grace, SIGKILL; never this process or its
    /// parents), then remove the workspace: whatever ends the batch
    /// (apply, drop) and the next verification of it. They are what the
    /// killed apply's CMD left running: nobody else is meant to be there
    /// (`--keep` is how verification workspaces are kept).
    Stop,
    /// Leave the workspace where they are, and say so (gc, which never
    /// signals anyone).
    Leave,
}

/// What [`remove_leftovers`] did (or, with `dry_run`, would do).
#[derive(Debug, Default)]
pub struct Swept {
    /// Verification workspaces (and templates) removed.
    pub removed: Vec<PathBuf>,
    /// Their size (counted only with `Processes::Leave`, for gc's report).
    pub bytes: u64,
    /// Left in place because processes still run inside: (batch, folder, pids).
    pub in_use: Vec<(String, PathBuf, Vec<u32>)>,
    /// Registrations removed whose folder was gone already.
    pub registrations: usize,
    /// Their `verify/<n>` refs removed with them.
    pub refs: Vec<String>,
}

/// Remove the verification workspaces, templates and their `verify/<n>`
/// refs that an apply killed while verifying left (design §3.10) of the
/// batches `of` accepts (by id; their batch may be gone). The caller holds
/// the repository lock and knows that no apply verifies those batches
/// now (`record::busy::refuse_if_busy`; gc asks `record::busy::is_busy`). A workspace `apply --keep`
/// released is an ordinary worktree: never touched.
pub fn remove_leftovers(
    source: &Source,
    of: &dyn Fn(&str) -> bool,
    processes: Processes,
    dry_run: bool,
) -> Swept {
    let common = &source.common_dir;
    let mut out = Swept::default();
    for v in crate::workspace::verifications(common) {
        if !of(&v.batch) {
            continue;
        }
        if let Some(real) = &v.real {
            let inside = match processes {
                Processes::Leave => crate::sys::quiesce::find_users(std::slice::from_ref(real))
                    .into_iter()
                    .next()
                    .unwrap_or_default(),
                Processes::Stop if dry_run => Vec::new(),
                Processes::Stop => {
                    match crate::sys::quiesce::stop_all(
                        std::slice::from_ref(real),
                        crate::sys::quiesce::GRACE,
                        false,
                    )
                    .into_iter()
                    .next()
                    {
                        Some(crate::sys::quiesce::Outcome::Running(procs)) => {
                            procs.iter().map(|p| p.pid).collect()
                        }
                        _ => Vec::new(),
                    }
                }
            };
            if !inside.is_empty() {
                out.in_use.push((v.batch.clone(), v.root.clone(), inside));
                continue;
            }
            if processes == Processes::Leave {
                out.bytes += crate::sys::fs::tree_size(real);
            }
        }
        let gone = dry_run
            || crate::workspace::remove_verification(common, &v)
                .is_ok_and(|r| r != crate::workspace::Removal::Foreign);
        if !gone {
            continue;
        }
        if v.real.is_some() {
            out.removed.push(v.root.clone());
        } else if v.root.symlink_metadata().is_err() {
            out.registrations += 1;
        }
        if let Some(n) = v
            .worktree_id
            .rsplit("--verify-")
            .next()
            .filter(|_| !v.template)
        {
            let name = format!("{}batches/{}/verify/{n}", crate::git::refs::PREFIX, v.batch);
            let exists = crate::git::refs::get(&source.repo, &name)
                .ok()
                .flatten()
                .is_some();
            if exists && (dry_run || crate::git::refs::delete(&source.repo, &name).unwrap_or(false))
            {
                out.refs.push(name);
            }
        }
    }
    out
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
}

/// The report when no task was there to verify.
pub fn not_run(settings: Settings) -> Report {
    Report {
        command: settings.command,
        outcome: Outcome::NotRun,
        runs: Vec::new(),
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
            let mut plan = full;
            plan.refused.extend(taken_out);
            plan.refused.sort_by_key(|r| r.task);
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
            plan.refused.extend(taken_out);
            plan.refused.sort_by_key(|r| r.task);
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
        let landed_c: Vec<Candidate> = cands
            .iter()
            .filter(|c| landed.contains(&c.task))
            .cloned()
            .collect();
        let verified_tree = runner.trees.get(&landed).copied().unwrap_or(s_tree);
        // The verified set against the source as it is now: read at the
        // paths the tasks touch (all the merges and the write-back use, see
        // `touched`), or where that is not exact, all of it.
        let s_now = if ctx.dry_run {
            s_tree
        } else {
            crate::merge::landing::source_tree(ctx.mem, ctx.baseline_tree, &landed_c)?
        };
        let mut plan = integrate::integrate(
            ctx.mem,
            ctx.baseline_tree,
            s_now,
            &landed_c,
            ctx.strict,
            check,
        )?;
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
        plan.refused.extend(taken_out);
        plan.refused.sort_by_key(|r| r.task);
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
        return crate::ops::lock::acquire(
            &ctx.source.state_dir(),
            ctx.source.config.lock_timeout_secs,
        );
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

/// One verification run being prepared or running.
struct Job {
    n: usize,
    tasks: Vec<String>,
    root: PathBuf,
    worktree_id: String,
    ref_name: String,
    tree: ObjectId,
    commit: ObjectId,
    log: PathBuf,
}

/// Makes the runs: numbering, workspaces, CMD, logs, clean-up.
struct Runner<'a> {
    ctx: &'a Ctx<'a>,
    next_n: usize,
    runs: Vec<Run>,
    /// The `F` of each set evaluated (task indices), this round of search.
    trees: HashMap<Vec<usize>, ObjectId>,
    logs_dir: PathBuf,
    ws_dir: PathBuf,
    baseline: Option<ObjectId>,
    /// Ignored files carried into each verification workspace (design §3.9).
    carried: Option<(PathBuf, Vec<crate::workspace::carry::Carried>)>,
    /// For each set `search` evaluated (in its order), the index in `runs`.
    by_set: Vec<usize>,
    /// On btrfs (design §3.17): make the workspaces as snapshots of a
    /// template, made with the first one and removed when `Runner` goes.
    derive: bool,
    template: Option<crate::workspace::Template>,
}

impl Drop for Runner<'_> {
    /// The template goes when the verification ends, whatever the outcome
    /// (`--keep` keeps the runs' workspaces, not the template).
    fn drop(&mut self) {
        if let Some(t) = self.template.take() {
            let (root, id) = (&t.plan.root, &t.plan.worktree_id);
            if let Some(trash) = discard_workspace(self.ctx, ".verify-template", root, id) {
                crate::workspace::trash::spawn_purger(&trash, &self.ctx.source.state_dir());
            }
            crate::workspace::shared_root::remove_empty_parents(&self.ws_dir.join("x"));
        }
    }
}

impl<'a> Runner<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Result<Runner<'a>> {
        let b = ctx.batch;
        let logs_dir = ctx.source.state_dir().join("logs").join(&b.id);
        let ws_dir = ctx.source.workspace_base()?.join(b.short());
        sweep(ctx);
        // Numbers go on from runs of earlier applies (their failing logs stay).
        let mut last = 0usize;
        for dir in [&logs_dir, &ws_dir] {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    let num = name
                        .strip_prefix("verify-")
                        .and_then(|r| r.strip_suffix(".log"))
                        .or_else(|| name.strip_prefix(".verify-"));
                    if let Some(k) = num.and_then(|k| k.parse::<usize>().ok()) {
                        last = last.max(k);
                    }
                }
            }
        }
        let policy = crate::workspace::carry::Policy::load(
            &ctx.source.root,
            &ctx.source.config.copy_ignored,
            &[],
        )?;
        let carried = if policy.is_empty() || b.mode == crate::config::Mode::Scratch {
            None
        } else {
            let root = crate::sys::fs::canonical(&ctx.source.root)?;
            Some((
                root,
                crate::workspace::carry::find(&ctx.source.repo, &policy)?,
            ))
        };
        Ok(Runner {
            ctx,
            next_n: last + 1,
            runs: Vec::new(),
            trees: HashMap::new(),
            logs_dir,
            baseline: ObjectId::from_hex(b.baseline.as_bytes()).ok(),
            carried,
            by_set: Vec::new(),
            derive: crate::workspace::can_derive(ctx.source.config.snapshots, &ws_dir),
            template: None,
            ws_dir,
        })
    }

    fn report(&self, outcome: Outcome) -> Report {
        Report {
            command: self.ctx.settings.command.clone(),
            outcome,
            runs: self.runs.clone(),
        }
    }

    /// The log of the `run`-th set `search` evaluated.
    fn log_of(&self, run: usize) -> PathBuf {
        self.by_set
            .get(run)
            .and_then(|&i| self.runs.get(i))
            .map(|r| r.log.clone())
            .unwrap_or_default()
    }

    /// Remove passing logs (failing ones are kept and named), unless `--keep`.
    fn finish(&self) {
        if self.ctx.settings.keep {
            return;
        }
        for r in self.runs.iter().filter(|r| r.passed()) {
            let _ = std::fs::remove_file(&r.log);
        }
    }

    /// Evaluate `sets` (positions in `order`), all at once.
    fn round(
        &mut self,
        sets: &[Vec<usize>],
        order: &[usize],
        cands: &[Candidate],
        s_tree: ObjectId,
        check: &mut dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>>,
    ) -> Result<Vec<bool>> {
        // Each set's `F`, as a commit and ref.
        let ctx = self.ctx;
        let b = ctx.batch;
        let mut jobs: Vec<Job> = Vec::new();
        let made = (|| -> Result<()> {
            for set in sets {
                let tasks: Vec<usize> = set.iter().map(|&p| order[p]).collect();
                let subset: Vec<Candidate> = cands
                    .iter()
                    .filter(|c| tasks.contains(&c.task))
                    .cloned()
                    .collect();
                let plan = integrate::integrate(
                    ctx.mem,
                    ctx.baseline_tree,
                    s_tree,
                    &subset,
                    ctx.strict,
                    check,
                )?;
                self.trees.insert(tasks.clone(), plan.f_tree);
                let names: Vec<String> = plan
                    .applied
                    .iter()
                    .filter_map(|&t| b.tasks.get(t).map(|t| t.name.clone()))
                    .collect();
                let n = self.next_n;
                self.next_n += 1;
                persist_tree(&ctx.source.repo, ctx.mem, plan.f_tree)?;
                let commit = crate::git::commit::write(
                    &ctx.source.repo,
                    plan.f_tree,
                    self.baseline,
                    format!(
                        "git-delegate verify {} {n}\n\ntasks: {}\n",
                        b.id,
                        names.join(" ")
                    ),
                )?;
                let ref_name = format!("{}batches/{}/verify/{n}", crate::git::refs::PREFIX, b.id);
                crate::git::refs::set(&ctx.source.repo, &ref_name, commit, false)?;
                jobs.push(Job {
                    n,
                    tasks: names,
                    root: self.ws_dir.join(format!(".verify-{n}")),
                    worktree_id: format!("delegate-{}--verify-{n}", b.short()),
                    ref_name,
                    tree: plan.f_tree,
                    commit,
                    log: self.logs_dir.join(format!("verify-{n}.log")),
                });
            }
            Ok(())
        })();
        let result = made
            .and_then(|()| self.make_workspaces(&jobs))
            .and_then(|()| {
                std::fs::create_dir_all(&self.logs_dir).map_err(|e| {
                    Error::io(format!("cannot create {}", self.logs_dir.display()), e)
                })?;
                run_all(ctx, &jobs)
            });
        // Clean up what this round made (`--keep` keeps it, released as an
        // ordinary worktree the batch no longer owns, as task workspaces are).
        if ctx.settings.keep && result.is_ok() {
            for j in &jobs {
                let _ = crate::workspace::release(&ctx.source.common_dir, &j.worktree_id);
            }
        }
        if !ctx.settings.keep || result.is_err() {
            let mut trashes: Vec<PathBuf> = Vec::new();
            for j in &jobs {
                let name = format!(".verify-{}", j.n);
                match discard_workspace(ctx, &name, &j.root, &j.worktree_id) {
                    Some(trash) if !trashes.contains(&trash) => trashes.push(trash),
                    _ => {}
                }
                let _ = crate::git::refs::delete(&ctx.source.repo, &j.ref_name);
            }
            for t in &trashes {
                crate::workspace::trash::spawn_purger(t, &ctx.source.state_dir());
            }
            crate::workspace::shared_root::remove_empty_parents(&self.ws_dir.join("x"));
        }
        let runs = result?;
        let mut answers = Vec::with_capacity(runs.len());
        for run in runs {
            answers.push(run.passed());
            self.by_set.push(self.runs.len());
            self.runs.push(run);
        }
        Ok(answers)
    }

    /// The verification workspaces, made as task workspaces are (design
    /// §3.1 step 4, §3.9), in parallel.
    fn make_workspaces(&mut self, jobs: &[Job]) -> Result<()> {
        let ctx = self.ctx;
        let common = &ctx.source.common_dir;
        // Below the workspace root as task workspaces are (design §3.18).
        crate::workspace::shared_root::make_batch_dir_at(&self.ws_dir)?;
        crate::workspace::check_free(
            common,
            &jobs
                .iter()
                .map(|j| plan_of(ctx.batch, j))
                .collect::<Vec<_>>(),
        )?;
        let lost = || {
            Error::state(
                Code::Internal,
                "a checkout thread stopped unexpectedly",
                "report this bug; nothing was changed",
            )
        };
        // On btrfs, snapshots of a template (made at the first `F`);
        // those that could not be derived from it are checked out.
        if let Some(first) = jobs
            .first()
            .filter(|_| self.derive && self.template.is_none())
        {
            let plan = template_plan(ctx.batch, &self.ws_dir);
            let carried = &self.carried;
            let made =
                crate::workspace::check_free(common, std::slice::from_ref(&plan)).and_then(|()| {
                    crate::workspace::create_template(
                        common,
                        first.commit,
                        first.tree,
                        &plan,
                        |root| {
                            if let Some((src, entries)) = carried {
                                crate::workspace::carry::carry(
                                    src,
                                    entries,
                                    &[root.to_path_buf()],
                                )?;
                            }
                            Ok(())
                        },
                    )
                });
            match made {
                Ok(t) => self.template = Some(t),
                Err(e) if gix::interrupt::is_triggered() => return Err(e),
                // Made as elsewhere: checked out.
                Err(_) => self.derive = false,
            }
        }
        let template = self.template.as_ref();
        let derived = crate::sys::parallel::try_map(jobs.iter(), jobs.len(), lost, |j| {
            let plan = plan_of(ctx.batch, j);
            match template {
                Some(t) => crate::workspace::create_from(common, t, j.commit, j.tree, &plan),
                None => {
                    crate::workspace::create_all(common, j.commit, j.tree, &[plan]).map(|()| false)
                }
            }
        })?;
        // The submodules a build needs, at the commits `F` records (design §3.15).
        let modules = crate::workspace::submodules::find(ctx.source)?;
        for j in jobs.iter().filter(|_| !modules.is_empty()) {
            let p = plan_of(ctx.batch, j);
            crate::workspace::submodules::create(
                &ctx.source.repo,
                j.tree,
                &modules,
                &j.root,
                &p.worktree_id,
                &p.lock_reason,
            )?;
        }
        if let Some((src, entries)) = &self.carried {
            // A snapshot holds them already.
            let roots: Vec<PathBuf> = jobs
                .iter()
                .zip(&derived)
                .filter(|(_, d)| !**d)
                .map(|(j, _)| j.root.clone())
                .collect();
            crate::workspace::carry::carry(src, entries, &roots)?;
        }
        Ok(())
    }
}

/// Remove what an apply killed while verifying this batch left behind:
/// verification workspaces (only folders that are ours and still locked
/// as such, `remove_leftovers`) and every verify ref of the batch. Runs
/// under the repository lock, with no other apply verifying the batch.
fn sweep(ctx: &Ctx<'_>) {
    let id = ctx.batch.id.as_str();
    remove_leftovers(ctx.source, &|b| b == id, Processes::Stop, false);
    if let Ok(names) = crate::git::refs::list_batch(&ctx.source.repo, id) {
        let prefix = format!("{}batches/{id}/verify/", crate::git::refs::PREFIX);
        for r in names.iter().filter(|r| r.starts_with(&prefix)) {
            let _ = crate::git::refs::delete(&ctx.source.repo, r);
        }
    }
}

/// Remove a verification workspace (or the template) as apply removes
/// task workspaces: moved into the trash (one rename) and deleted by a
/// background process (the trash folder returned, for
/// `trash::spawn_purger`), or removed in place.
fn discard_workspace(ctx: &Ctx<'_>, name: &str, root: &Path, worktree_id: &str) -> Option<PathBuf> {
    let mut t = batch::Task::open(
        name.to_string(),
        root.to_path_buf(),
        worktree_id.to_string(),
    );
    t.folder = crate::workspace::folder_of(root);
    match crate::workspace::discard(&ctx.source.common_dir, &t) {
        Ok((_, trash)) => trash,
        Err(_) => {
            let _ = crate::workspace::remove(&ctx.source.common_dir, root, worktree_id);
            None
        }
    }
}

/// The template of design §3.17: `.verify-template` beside the
/// verification workspaces (a leftover is swept as theirs are).
fn template_plan(b: &Batch, ws_dir: &Path) -> crate::workspace::Plan {
    crate::workspace::Plan {
        root: ws_dir.join(".verify-template"),
        worktree_id: format!("delegate-{}--verify-template", b.short()),
        lock_reason: crate::git::registration::verify_lock_reason(&b.id, "template"),
    }
}

fn plan_of(b: &Batch, j: &Job) -> crate::workspace::Plan {
    crate::workspace::Plan {
        root: j.root.clone(),
        worktree_id: j.worktree_id.clone(),
        lock_reason: crate::git::registration::verify_lock_reason(&b.id, &j.n.to_string()),
    }
}

/// Copy the objects of `tree` that only `mem` holds into `disk`, so a
/// worktree can be checked out at it.
fn persist_tree(disk: &gix::Repository, mem: &gix::Repository, tree: ObjectId) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| {
        Error::git(format!("cannot store object {tree}"), e.to_string())
    };
    let mut todo = vec![tree];
    while let Some(id) = todo.pop() {
        if disk.has_object(id) {
            continue;
        }
        let obj = mem.find_object(id).map_err(|e| err(&e))?;
        if obj.kind == gix::object::Kind::Tree {
            let t = gix::objs::TreeRefIter::from_bytes(&obj.data, disk.object_hash());
            for e in t {
                let e = e.map_err(|e| err(&e))?;
                if e.mode.is_commit() {
                    continue;
                }
                todo.push(e.oid.to_owned());
            }
        }
        gix::objs::Write::write_buf(disk, obj.kind, &obj.data).map_err(|e| err(&e))?;
    }
    Ok(())
}

/// How often a running CMD is looked at.
const POLL: Duration = Duration::from_millis(50);

struct Running {
    group: crate::sys::process::Group,
    done: Option<Run>,
}

/// Run CMD for every job at once; return the runs in job order.
fn run_all(ctx: &Ctx<'_>, jobs: &[Job]) -> Result<Vec<Run>> {
    let timeout = Duration::from_secs(ctx.settings.timeout_secs.max(0) as u64);
    let mut running: Vec<Running> = Vec::with_capacity(jobs.len());
    let kill_all = |running: &mut Vec<Running>| {
        for r in running.iter_mut().filter(|r| r.done.is_none()) {
            r.group.kill();
        }
    };
    for j in jobs {
        match spawn(ctx, j) {
            Ok(group) => running.push(Running { group, done: None }),
            Err(e) => {
                kill_all(&mut running);
                return Err(e);
            }
        }
    }
    // Short commands (`true`) end within milliseconds: look often at first.
    let mut poll = Duration::from_millis(1);
    loop {
        let mut all_done = true;
        for (j, r) in jobs.iter().zip(running.iter_mut()) {
            if r.done.is_some() {
                continue;
            }
            let status = match r.group.try_wait() {
                Ok(s) => s,
                Err(e) => {
                    r.group.kill();
                    return Err(Error::io("cannot wait for the verification command", e));
                }
            };
            let elapsed = r.group.started.elapsed();
            let (exit, timed_out) = match status {
                Some(s) => (s.code(), false),
                None if elapsed >= timeout => {
                    r.group.kill();
                    (None, true)
                }
                None => {
                    all_done = false;
                    continue;
                }
            };
            // What it left running in its group goes with it.
            crate::sys::process::kill(r.group.pgid);
            r.done = Some(Run {
                tasks: j.tasks.clone(),
                exit,
                timed_out,
                duration_ms: elapsed.as_millis() as u64,
                log: j.log.clone(),
            });
        }
        for (j, r) in jobs.iter().zip(running.iter_mut()) {
            let done = r.done.is_some();
            r.group
                .lines(done, 1 << 20, |line| ctx.observer.output(j.n, line));
        }
        if all_done {
            break;
        }
        if crate::sys::interrupt::interrupted() {
            kill_all(&mut running);
            return Err(Error::interrupted());
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(POLL);
    }
    Ok(running.into_iter().filter_map(|r| r.done).collect())
}

/// Start CMD for one job (design §3.10): `sh -c CMD` at the caller's
/// position in the verification workspace, stdin `/dev/null`, its own
/// process group, output to the log (`process::spawn`).
fn spawn(ctx: &Ctx<'_>, j: &Job) -> Result<crate::sys::process::Group> {
    let mut cwd = j.root.join(&ctx.source.prefix);
    if std::fs::create_dir_all(&cwd).is_err() {
        cwd = j.root.clone();
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&ctx.settings.command).current_dir(&cwd);
    cmd.env("GIT_DELEGATE_BATCH", &ctx.batch.id)
        .env("GIT_DELEGATE_VERIFY", "1")
        .env("GIT_DELEGATE_TASKS", j.tasks.join(" "));
    crate::sys::process::spawn(cmd, &j.log).map_err(|(log, e)| {
        if log {
            Error::io(format!("cannot create {}", j.log.display()), e)
        } else {
            Error::io(
                format!(
                    "cannot run the verification command {:?}",
                    ctx.settings.command
                ),
                e,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake CMD: fails when a set holds any culprit (monotonic), or as `fails` says.
    fn run_search(n: usize, culprits: &[usize], jobs: usize) -> (Found, usize) {
        let mut calls = 0usize;
        let found = search(n, jobs, &mut |sets| {
            calls += sets.len();
            assert!(sets.len() <= jobs);
            Ok(sets
                .iter()
                .map(|s| !s.iter().any(|t| culprits.contains(t)))
                .collect())
        })
        .unwrap();
        (found, calls)
    }

    fn bound(n: usize, m: usize) -> usize {
        let log = if n <= 1 {
            0
        } else {
            (usize::BITS - (n - 1).leading_zeros()) as usize
        };
        2 + m * (log + 1)
    }

    /// Every choice of m culprits among n tasks, for n = 1..16, m = 0..3.
    fn subsets(n: usize, m: usize) -> Vec<Vec<usize>> {
        fn go(start: usize, n: usize, m: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if cur.len() == m {
                out.push(cur.clone());
                return;
            }
            for i in start..n {
                cur.push(i);
                go(i + 1, n, m, cur, out);
                cur.pop();
            }
        }
        let mut out = Vec::new();
        go(0, n, m, &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn finds_exactly_the_culprits_within_the_bound() {
        for n in 1..=16 {
            for m in 0..=3.min(n) {
                for culprits in subsets(n, m) {
                    let (found, calls) = run_search(n, &culprits, 1);
                    let got: Vec<usize> = found.rejected.iter().map(|r| r.0).collect();
                    assert_eq!(got, culprits, "n={n} culprits={culprits:?}");
                    let landed: Vec<usize> = (0..n).filter(|t| !culprits.contains(t)).collect();
                    assert_eq!(found.landed, landed);
                    assert!(!found.fails_without_tasks);
                    assert_eq!(calls, found.runs.len());
                    assert!(
                        calls <= bound(n, m),
                        "n={n} culprits={culprits:?}: {calls} runs > {}",
                        bound(n, m)
                    );
                    // Each rejection names a run that failed with the culprit in it.
                    for &(c, run) in &found.rejected {
                        let (set, passed) = &found.runs[run];
                        assert!(!passed && set.contains(&c));
                    }
                }
            }
        }
    }

    #[test]
    fn eight_tasks_one_culprit_cost_at_most_six_runs() {
        for c in 0..8 {
            let (_, calls) = run_search(8, &[c], 1);
            assert!(calls <= 6, "culprit {c}: {calls}");
        }
    }

    #[test]
    fn source_alone_failing_lands_nothing() {
        let mut calls = 0;
        let found = search(5, 1, &mut |sets| {
            calls += sets.len();
            Ok(vec![false; sets.len()])
        })
        .unwrap();
        assert!(found.fails_without_tasks);
        assert!(found.landed.is_empty() && found.rejected.is_empty());
        assert_eq!(calls, 2);
        assert_eq!(found.runs[1].0, Vec::<usize>::new());
    }

    #[test]
    fn an_interaction_rejects_the_later_task() {
        // Fails when 1 and 3 are both present.
        let found = search(5, 1, &mut |sets| {
            Ok(sets
                .iter()
                .map(|s| !(s.contains(&1) && s.contains(&3)))
                .collect())
        })
        .unwrap();
        assert_eq!(found.rejected.iter().map(|r| r.0).collect::<Vec<_>>(), [3]);
        assert_eq!(found.landed, [0, 1, 2, 4]);
    }

    #[test]
    fn parallel_jobs_give_the_sequential_outcome() {
        // Monotonic and non-monotonic (deterministic) oracles alike.
        type Fake = Box<dyn Fn(&[usize]) -> bool>;
        let oracles: Vec<Fake> = vec![
            Box::new(|s| !s.contains(&2) && !s.contains(&7)),
            Box::new(|s| !(s.contains(&1) && s.contains(&5))),
            Box::new(|s| s.len() % 3 != 2),
            Box::new(|s| s.iter().sum::<usize>() % 4 != 1),
            Box::new(|_| true),
            Box::new(|s| s.is_empty()),
        ];
        for (i, oracle) in oracles.iter().enumerate() {
            for n in 1..=12 {
                let seq = search(n, 1, &mut |sets| {
                    Ok(sets.iter().map(|s| oracle(s)).collect())
                })
                .unwrap();
                for jobs in [2, 3, 4, 8] {
                    let par = search(n, jobs, &mut |sets| {
                        assert!(sets.len() <= jobs);
                        Ok(sets.iter().map(|s| oracle(s)).collect())
                    })
                    .unwrap();
                    assert_eq!(par.landed, seq.landed, "oracle {i} n={n} J={jobs}");
                    assert_eq!(
                        par.rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
                        seq.rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
                        "oracle {i} n={n} J={jobs}"
                    );
                    assert_eq!(par.fails_without_tasks, seq.fails_without_tasks);
                    // Every set the sequential search asked was asked.
                    for (s, _) in &seq.runs {
                        assert!(par.runs.iter().any(|(p, _)| p == s));
                    }
                }
            }
        }
    }

    #[test]
    fn parallel_rounds_are_fewer() {
        let mut rounds = 0;
        let _ = search(16, 4, &mut |sets| {
            rounds += 1;
            Ok(sets.iter().map(|s| !s.contains(&9)).collect())
        })
        .unwrap();
        let mut seq = 0;
        let _ = search(16, 1, &mut |sets| {
            seq += 1;
            Ok(sets.iter().map(|s| !s.contains(&9)).collect())
        })
        .unwrap();
        assert!(rounds < seq, "{rounds} vs {seq}");
    }
}
