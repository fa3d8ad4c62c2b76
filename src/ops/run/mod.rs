//! `git delegate run` (design §3.13): the prepare transaction, one worker
//! process per task, then the apply transaction of the tasks whose worker
//! exited 0, in one command.
//!
//! Owns: the `--tasks FILE` format (`[[task]]` tables, errors pointing at
//! the line and column), the workers (placeholders `{task}` `{index}`
//! `{workspace}` in their arguments, never a shell; their environment and
//! ports; at most J at once; timeouts; their logs
//! `<common-dir>/delegate/logs/<uuid>/<task>.log`), stopping every worker
//! on Ctrl-C or SIGTERM, recording `worker_failed`, the lease handed over
//! when run ends with the batch open.
//! Never: prints (workers' lines and status go to the caller's
//! `Observer`); holds the repository lock while workers run (a worker may
//! call `refresh` or `renew`); lets a worker process outlive it; applies
//! anything after an interruption.

use std::ffi::OsString;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::ops::observe::Observer;
use crate::record::batch::{self, TaskState};

mod tasks;
mod workers;

pub use tasks::{load_tasks, parse_tasks, substitute, TaskSpec};
use workers::{failure_reason, run_workers};
pub use workers::{worker_message, Ended, Event, Watcher, Worker};

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The prepare part; its `names` are the tasks (from `specs` when given).
    pub prepare: crate::ops::prepare::Options,
    /// `--tasks FILE`: per task its own command, env and timeout, in order.
    pub specs: Vec<TaskSpec>,
    /// The command after `--` (program and arguments).
    pub command: Vec<OsString>,
    /// `--jobs` (default: all at once).
    pub jobs: Option<usize>,
    /// `--timeout`.
    pub timeout_secs: Option<i64>,
    /// The apply part (`--verify` and friends); `None`: `--no-apply`.
    pub apply: Option<crate::ops::apply::Options>,
    /// `--no-sandbox`, `--no-network` (design §3.22), over `run.sandbox`
    /// and `run.network`.
    pub no_sandbox: bool,
    pub no_network: bool,
}

/// What run did.
pub struct Report {
    pub prepared: crate::ops::prepare::Report,
    pub workers: Vec<Worker>,
    /// The apply (`None`: `--no-apply`, or interrupted). Its outcomes list
    /// every task, `worker_failed` ones included.
    pub apply: Option<crate::ops::apply::Report>,
    /// Ctrl-C or SIGTERM stopped the workers; nothing was applied.
    pub interrupted: bool,
    /// `--no-apply`.
    pub no_apply: bool,
    /// The batch ended while the workers ran: another command applied or
    /// dropped it, and run applied nothing (`apply` is `None`).
    pub ended_elsewhere: Option<EndedElsewhere>,
}

/// How run's batch ended while its workers ran (another command's `apply`
/// or `drop`, a worker's own included).
#[derive(Debug, Clone)]
pub struct EndedElsewhere {
    /// The undo entry of an apply of the batch (design §3.11), when one
    /// wrote anything: that apply landed its work. None: it was dropped, or
    /// applied without writing anything.
    pub apply_id: Option<String>,
}

/// `Some` when batch `id` is gone (no state folder any more): another
/// command applied or dropped it; every apply of it since was another
/// command's (run made the batch and has not applied it).
fn ended_elsewhere(source: &Source, id: &str) -> Option<EndedElsewhere> {
    let state = source.state_dir();
    if batch::batch_dir(&state, id).symlink_metadata().is_ok() {
        return None;
    }
    // Newest first.
    let apply_id = crate::ops::undo::list(&state)
        .into_iter()
        .find(|e| e.batch == id)
        .map(|e| e.apply_id);
    Some(EndedElsewhere { apply_id })
}

impl Report {
    /// A run that applied nothing: its prepare and workers, and why
    /// (`no_apply`, the batch `ended_elsewhere`); not interrupted.
    fn unapplied(
        prepared: crate::ops::prepare::Report,
        workers: Vec<Worker>,
        no_apply: bool,
        ended_elsewhere: Option<EndedElsewhere>,
    ) -> Report {
        Report {
            prepared,
            workers,
            apply: None,
            interrupted: false,
            no_apply,
            ended_elsewhere,
        }
    }

    /// Exit 0 (design §3.13): every worker exited 0 and every task applied
    /// or had no changes (with `--no-apply`: every worker exited 0), and no
    /// command of an unconfirmed `delegate.toml` was left out (design §3.18).
    pub fn ok(&self) -> bool {
        !self.interrupted
            && self.ended_elsewhere.is_none()
            && self.workers.iter().all(Worker::ok)
            && self.apply.as_ref().is_none_or(|a| {
                // Applied or without changes; a discarded task (scratch
                // mode's are always) did not apply.
                a.untrusted.is_none()
                    && a.outcomes
                        .iter()
                        .all(|o| matches!(o.status, TaskState::Applied | TaskState::NoChanges))
            })
    }
}

/// Run (design §3.13): prepare, the workers, apply.
pub fn run(
    source: Source,
    opts: &Options,
    observer: &dyn Observer,
    watcher: &dyn Watcher,
) -> Result<Report> {
    // Ctrl-C (SIGINT) or SIGTERM from now on stop the workers instead of
    // ending run with them still running.
    let _signals = crate::sys::interrupt::catch_signals().map(|d| d.auto_deregister());
    if opts.command.is_empty()
        && (opts.specs.is_empty() || opts.specs.iter().any(|s| s.command.is_none()))
    {
        return Err(Error::usage(
            Code::Usage,
            "no command to run: give it after `--`",
            "for example `git delegate run -n 2 -- sh -c 'echo $GIT_DELEGATE_TASK'`",
        ));
    }
    // A containment key a worker could have planted holds only as the
    // user confirmed it (design §3.18, §3.22).
    let mut source = source;
    if let Some(u) = crate::ops::trust::gate_containment(&mut source)? {
        observer.notice(crate::ops::observe::Notice::LeftOut(
            u.containment_warning(),
        ));
    }
    // Whether workers can be contained is known before anything is made
    // (design §3.22: "on" without Landlock makes nothing).
    let contain =
        crate::ops::contain::Options::new(&source.config, opts.no_sandbox, opts.no_network);
    let decision = crate::ops::contain::decide(contain)?;
    // run owns the lease while it runs (design §3.13); what the caller
    // asked for (`--owner-pid`, or a plain TTL lease) is put in place when
    // it ends with the batch open.
    let mut popts = opts.prepare.clone();
    let after_owner = popts.owner.take();
    let me = std::process::id();
    popts.owner = crate::sys::process::process_start(me).map(|s| (me, s));
    let prepared = crate::ops::prepare::run(&source, &popts, observer)?;
    let b = prepared.batch.clone();
    let logs = batch::logs_dir(&source.state_dir(), &b.id);
    std::fs::create_dir_all(&logs)
        .map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
    let ttl = popts.ttl_secs.unwrap_or(source.config.ttl_secs);
    let hand_over = |source: &Source| hand_over(source, &b.id, ttl, after_owner);

    if let Some(note) = &decision.note {
        observer.notice(crate::ops::observe::Notice::Sandbox(note.clone()));
    }
    let (workers, interrupted) = run_workers(&source, &b, opts, &decision, &logs, watcher);
    let failed: Vec<usize> = (0..workers.len()).filter(|&i| !workers[i].ok()).collect();
    if interrupted {
        // The workers are stopped; what follows (recording, the lease
        // handed over) must not stop at the flag the signal set.
        gix::interrupt::reset();
        // A worker the interruption stopped did not fail: its task stays
        // open for the plain `apply` run prints (design §3.13).
        let failed: Vec<usize> = failed
            .into_iter()
            .filter(|&i| !workers[i].stopped)
            .collect();
        let _ = record_failed(&source, &b.id, &failed, &workers);
        hand_over(&source)?;
        let ended = ended_elsewhere(&source, &b.id);
        let mut report = Report::unapplied(prepared, workers, opts.apply.is_none(), ended);
        report.interrupted = true;
        return Ok(report);
    }
    // Another command may have applied or dropped the batch while the
    // workers ran (no lock is held meanwhile): said so, never taken for
    // an unknown batch (design §3.13: exit 1, the workers' lines shown).
    let no_apply = opts.apply.is_none();
    let elsewhere = |workers: Vec<Worker>, prepared, ended| {
        Ok(Report::unapplied(prepared, workers, no_apply, Some(ended)))
    };
    if let Some(ended) = ended_elsewhere(&source, &b.id) {
        return elsewhere(workers, prepared, ended);
    }
    if let Err(e) = record_failed(&source, &b.id, &failed, &workers) {
        return match ended_elsewhere(&source, &b.id) {
            Some(ended) => elsewhere(workers, prepared, ended),
            None => Err(e),
        };
    }
    let Some(aopts) = &opts.apply else {
        hand_over(&source)?;
        return Ok(Report::unapplied(prepared, workers, true, None));
    };
    let ran = Ran {
        prepared,
        workers,
        failed,
    };
    apply_phase(source, &b, aopts, ran, observer, &hand_over)
}

/// What run had when its workers ended: the prepare, the workers in task
/// order, and the indexes of those that failed.
struct Ran {
    prepared: crate::ops::prepare::Report,
    workers: Vec<Worker>,
    failed: Vec<usize>,
}

/// The apply part of run (design §3.13): the tasks whose worker exited 0
/// and that no other command ended meanwhile are applied; the document
/// lists every task, the failed workers' and the ones ended elsewhere
/// included. `hand_over` gives the lease back while the batch stays open.
fn apply_phase(
    source: Source,
    b: &batch::Batch,
    aopts: &crate::ops::apply::Options,
    ran: Ran,
    observer: &dyn Observer,
    hand_over: &dyn Fn(&Source) -> Result<()>,
) -> Result<Report> {
    let Ran {
        prepared,
        workers,
        failed,
    } = ran;
    let elsewhere = |workers: Vec<Worker>, prepared, ended| {
        Ok(Report::unapplied(prepared, workers, false, Some(ended)))
    };
    // A task another command applied (or discarded) meanwhile is neither
    // applied again nor called worker_failed: listed as it is recorded now.
    let now = match batch::select_open(&source.state_dir(), Some(&b.id)) {
        Ok(now) => now,
        Err(e) => {
            return match ended_elsewhere(&source, &b.id) {
                Some(ended) => elsewhere(workers, prepared, ended),
                None => Err(e.into()),
            }
        }
    };
    let closed: Vec<usize> = (0..workers.len())
        .filter(|&i| now.tasks.get(i).is_some_and(|t| !t.state.is_open()))
        .collect();
    let failed: Vec<usize> = failed.into_iter().filter(|i| !closed.contains(i)).collect();
    let ok: Vec<String> = workers
        .iter()
        .enumerate()
        .filter(|(i, w)| w.ok() && !closed.contains(i))
        .map(|(_, w)| w.name.clone())
        .collect();
    let mut aopts = aopts.clone();
    aopts.batch = Some(b.id.clone());
    aopts.only = ok.clone();
    aopts.discard.clear();
    // The settings run began with: a worker may have changed (or broken)
    // delegate.toml meanwhile (design §3.18).
    let config = source.config.clone();
    let mut apply = if ok.is_empty() {
        nothing_applied(now, &failed)
    } else {
        let root = source.root.clone();
        let r = crate::ops::apply::run(source, &aopts, observer);
        let source = Source::discover_with_config(&root, config.clone())?;
        if r.is_err() {
            if let Some(ended) = ended_elsewhere(&source, &b.id) {
                return elsewhere(workers, prepared, ended);
            }
        }
        // A failed apply leaves the batch open too: its lease is handed
        // over all the same (run's own would be orphaned in a moment).
        if r.as_ref().map_or(true, |r| r.batch_open) {
            let handed = hand_over(&source);
            let r = r?;
            handed?;
            r
        } else {
            r?
        }
    };
    list_unapplied(&mut apply, &workers, &failed, &closed);
    if ok.is_empty() {
        hand_over(&Source::discover_with_config(&b.source, config)?)?;
    }
    Ok(Report {
        prepared,
        workers,
        apply: Some(apply),
        interrupted: false,
        no_apply: false,
        ended_elsewhere: None,
    })
}

/// The apply document when nothing is applied: every task is a failed
/// worker's (`failed`) or was applied by another command (`now` is the
/// batch as recorded now).
fn nothing_applied(now: batch::Batch, failed: &[usize]) -> crate::ops::apply::Report {
    // Nothing to apply: every task is a failed worker's (or was
    // applied by another command).
    let mut batch = now;
    for &i in failed {
        batch.tasks[i].state = TaskState::WorkerFailed;
    }
    crate::ops::apply::Report {
        batch,
        outcomes: Vec::new(),
        written: Vec::new(),
        apply_id: None,
        batch_open: true,
        dry_run: false,
        write_error: None,
        kept: Vec::new(),
        workspaces: Vec::new(),
        artifacts_error: None,
        side_effects: Vec::new(),
        verify: None,
        untrusted: None,
        remote_left: None,
        interrupted: false,
        refreshed: None,
    }
}

/// run's apply document lists every task: the failed workers' (`failed`)
/// and those another command ended meanwhile (`closed`) included, in task
/// order.
fn list_unapplied(
    apply: &mut crate::ops::apply::Report,
    workers: &[Worker],
    failed: &[usize],
    closed: &[usize],
) {
    // run's apply document lists every task, the failed workers' included.
    for &i in failed {
        let mut o = crate::ops::apply::Outcome::new(i, TaskState::WorkerFailed);
        let w = &workers[i];
        o.message = Some(worker_message(w));
        o.reason = Some(failure_reason(w));
        apply.outcomes.push(o);
    }
    for &i in closed {
        let state = apply
            .batch
            .tasks
            .get(i)
            .map_or(TaskState::Applied, |t| t.state);
        let mut o = crate::ops::apply::Outcome::new(i, state);
        o.message = Some(format!(
            "another command ended it ({}) while the workers ran",
            state.as_str()
        ));
        apply.outcomes.push(o);
    }
    apply.outcomes.sort_by_key(|o| o.idx);
}

/// Record `worker_failed` for tasks `failed` (under the lock), with the
/// reason (`timed_out` or `worker_failed`), so a later plain apply leaves
/// them out (design §3.18 "Follow-through").
fn record_failed(source: &Source, id: &str, failed: &[usize], workers: &[Worker]) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let state = source.state_dir();
    let _lock = crate::ops::lock::acquire(&state, source.config.lock_timeout_secs)?;
    let mut b = batch::select_open(&state, Some(id))?;
    for &i in failed {
        if let Some(t) = b.tasks.get_mut(i) {
            if t.state == TaskState::Open {
                t.state = TaskState::WorkerFailed;
                t.reason = Some(failure_reason(&workers[i]).to_string());
            }
        }
    }
    Ok(batch::save(&state, &b)?)
}

/// run ends with the batch open: its lease becomes a plain TTL lease (or
/// one owned by the `--owner-pid` the caller gave), counted from now.
fn hand_over(source: &Source, id: &str, ttl: i64, owner: Option<(u32, u64)>) -> Result<()> {
    let state = source.state_dir();
    let _lock = crate::ops::lock::acquire(&state, source.config.lock_timeout_secs)?;
    let Ok(mut b) = batch::select_open(&state, Some(id)) else {
        return Ok(());
    };
    if b.id != id {
        return Ok(());
    }
    b.lease = crate::record::lease::Lease::new(ttl, owner);
    Ok(batch::save(&state, &b)?)
}
