//! Step 1 of apply, the first half (design §3.2): sort the selected tasks
//! out (remote, a failed worker's, scratch, discarded, or local and ours
//! to read), then stop what still runs in the local workspaces.
//!
//! Owns: the outcomes decided before anything is recorded (not submitted,
//! worker failed, discarded, unresolved refresh conflicts, a workspace
//! missing or replaced, processes running).
//! Never: records a proposal (`take` does), or reads a folder that is not
//! the workspace prepare made.

use std::collections::HashMap;
use std::path::PathBuf;

use gix::ObjectId;

use super::read::{keep_discarded, probe, probe_all, receive, Recorded};
use super::{missing_message, Ctx, Unfetched};
use crate::config::StopProcesses;
use crate::error::Result;
use crate::ops::apply::{keep_artifacts, Outcome};
use crate::record::batch::{self, TaskState};
use crate::{merge::proposal, sys::quiesce, workspace};

/// The selected tasks sorted out: their outcomes so far, the local ones to
/// stop and record (positions in `outcomes`, with their real paths) and
/// the remote ones received.
pub(super) struct Selected {
    pub(super) outcomes: Vec<Outcome>,
    pub(super) pending: Vec<usize>,
    pub(super) roots: Vec<PathBuf>,
    pub(super) received: Vec<(usize, Result<Option<Recorded>>)>,
}

pub(super) fn select(
    cx: Ctx<'_>,
    selected: &[(usize, bool)],
    (fetched, unfetchable): (&HashMap<String, ObjectId>, &Unfetched),
) -> Result<Selected> {
    let Ctx {
        source,
        b,
        opts,
        scratch,
        ..
    } = cx;
    let dry_run = opts.dry_run;
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut pending: Vec<usize> = Vec::new(); // positions in `outcomes`
    let mut roots: Vec<PathBuf> = Vec::new(); // their real paths
    let mut received: Vec<(usize, Result<Option<Recorded>>)> = Vec::new();
    let mut probed = probe_all(source, b, selected, |&(idx, discard)| {
        let t = &b.tasks[idx];
        !(discard
            || t.remote
            || scratch
            || (t.state == TaskState::WorkerFailed && !opts.only.contains(&t.name)))
    });
    for (&(idx, discard), probed) in selected.iter().zip(&mut probed) {
        let task = &b.tasks[idx];
        if task.remote && !discard {
            let (out, got) = remote(cx, idx, fetched, unfetchable);
            if let Some(got) = got {
                received.push((outcomes.len(), got));
            }
            outcomes.push(out);
            continue;
        }
        // A task whose worker failed in `run` is applied only when named
        // (design §3.13, §3.18 "Follow-through"): a plain apply leaves it
        // open, its workspace neither stopped nor recorded.
        if task.state == TaskState::WorkerFailed && !discard && !opts.only.contains(&task.name) {
            outcomes.push(worker_failed(cx, idx));
            continue;
        }
        if scratch {
            outcomes.push(Outcome::new(idx, TaskState::Discarded));
            continue;
        }
        if discard {
            outcomes.push(discarded(cx, idx, unfetchable)?);
            continue;
        }
        let mut out = Outcome::new(idx, TaskState::Open);
        // Identity before anything is read or signalled: a folder that is
        // not the one prepare made is never read, quiesced nor removed.
        let (identity, unresolved) = probed
            .take()
            .unwrap_or_else(|| probe(&source.common_dir, task));
        match identity {
            workspace::Identity::Ours { real, .. } => {
                // Conflicts a refresh handed back and its worker has not
                // resolved yet (design §3.12): neither stopped nor recorded.
                let (mut left, unusable) = unresolved
                    .unwrap_or_else(|| crate::ops::refresh::unresolved_checked(task, &real));
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
                    keep_artifacts(source, b, &mut out, dry_run);
                    outcomes.push(out);
                    continue;
                }
                pending.push(outcomes.len());
                roots.push(real);
            }
            // Too many files open to tell what is there: the command
            // fails naming the limit, no task is marked missing.
            workspace::Identity::TooManyOpenFiles(e) => return Err(e),
            other => {
                out.fail("workspace_missing", missing_message(task, &other));
                keep_artifacts(source, b, &mut out, dry_run);
            }
        }
        outcomes.push(out);
    }
    Ok(Selected {
        outcomes,
        pending,
        roots,
        received,
    })
}

/// A remote task, not discarded (design §3.14): not submitted yet, its
/// submitted proposal received, or one git would not fetch.
fn remote(
    cx: Ctx<'_>,
    idx: usize,
    fetched: &HashMap<String, ObjectId>,
    unfetchable: &Unfetched,
) -> (Outcome, Option<Result<Option<Recorded>>>) {
    let Ctx {
        source,
        b,
        opts,
        baseline_tree,
        ..
    } = cx;
    let (task, dry_run) = (&b.tasks[idx], opts.dry_run);
    let mut got = None;
    let mut out = Outcome::new(idx, TaskState::NotSubmitted);
    if let Some(&commit) = fetched.get(&task.name) {
        out.status = TaskState::Open;
        got = Some(receive(source, b, task, commit, baseline_tree, dry_run));
    } else if let Some(u) = unfetchable.get(&task.name) {
        out.fail(
            crate::git::validate::REASON,
            format!("{}, so nothing of it is here", u.why()),
        );
        out.resubmit = true;
    }
    (out, got)
}

/// A task whose worker failed in `run`, not named: left open, its
/// workspace neither stopped nor recorded.
fn worker_failed(cx: Ctx<'_>, idx: usize) -> Outcome {
    let Ctx {
        source, b, opts, ..
    } = cx;
    let (task, dry_run) = (&b.tasks[idx], opts.dry_run);
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
    keep_artifacts(source, b, &mut out, dry_run);
    out
}

/// A discarded task: its work kept as a proposal (or, in a dry run, what
/// would keep its workspace named).
fn discarded(cx: Ctx<'_>, idx: usize, unfetchable: &Unfetched) -> Result<Outcome> {
    let Ctx {
        source,
        b,
        opts,
        baseline_tree,
        ..
    } = cx;
    let (task, dry_run) = (&b.tasks[idx], opts.dry_run);
    // A discarded task's work is kept as a proposal (ref and patch)
    // for gc.keep-failed, like a rescue: a mistyped name loses nothing.
    let mut out = Outcome::new(idx, TaskState::Discarded);
    if let Some(u) = unfetchable.get(&task.name) {
        out.message = Some(format!(
            "{}: nothing of it is kept, and the batch's end deletes it on the remote",
            u.why()
        ));
    }
    // Too many files open to tell what is there: fail naming the
    // limit rather than discard unread work.
    if let workspace::Identity::TooManyOpenFiles(e) = workspace::identify(&source.common_dir, task)
    {
        return Err(e);
    }
    if !dry_run {
        keep_discarded(source, b, &mut out, baseline_tree);
    } else if let workspace::Identity::Ours { real, .. } =
        workspace::identify(&source.common_dir, task)
    {
        // Name the nested repositories that would keep the workspace.
        let mut t = task.clone();
        t.root = real;
        let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
        if let Ok(Some(p)) = proposal::preview(&source.repo, &batch_dir, &t, baseline_tree) {
            out.nested_kept = p.nested;
            out.would_keep = true;
        }
    }
    Ok(out)
}

/// Stop (or, by the policy or in a dry run, only describe) the processes
/// running in the `pending` workspaces at `roots`: the positions of those
/// that can be recorded.
pub(super) fn stop(
    cx: Ctx<'_>,
    outcomes: &mut [Outcome],
    pending: &[usize],
    roots: &[PathBuf],
) -> Vec<usize> {
    let Ctx {
        source, b, opts, ..
    } = cx;
    let dry_run = opts.dry_run;
    let policy = source.config.stop_processes;
    let running: Vec<Vec<quiesce::Proc>> = if dry_run || policy == StopProcesses::Refuse {
        let found = quiesce::describe_all(roots);
        if dry_run {
            for (&o, procs) in pending.iter().zip(&found) {
                outcomes[o].processes = procs.clone();
            }
        }
        found
    } else {
        let spare = policy == StopProcesses::Background;
        quiesce::stop_all(roots, quiesce::GRACE, spare)
            .into_iter()
            .zip(pending)
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
        keep_artifacts(source, b, out, dry_run);
    }
    to_record
}
