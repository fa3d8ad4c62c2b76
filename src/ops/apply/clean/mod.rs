//! Step 5 of apply (design §3.2): record every outcome in the batch, then
//! clean up: workspaces and proposal refs of `applied`, `no_changes` and
//! `discarded` tasks go (`--keep` keeps workspaces; with `workspace.pool`
//! a plain one goes idle in the pool instead, design §3.20), tasks that ended
//! `conflict` or `failed` keep their proposal ref, patch (written now) and
//! workspace; when no task is open any more the batch's refs, state folder
//! and lease go too.
//!
//! A workspace is removed or parked only once proven to hold what step 1
//! read (design §3.18 "Before removing a workspace, prove it"); one
//! written into since is kept, and its task opens again
//! (`changed_after_read`, what landed becoming its base: `reopen`), or, a
//! discarded one's, stays as an ordinary worktree.
//!
//! Owns: the task states saved, which workspaces are removed, kept or left
//! alone, what each is proven against, and the patches of kept proposals
//! (written only here, for the tasks that keep them; discarded ones move
//! to the kept store).
//! Never: removes a workspace before every outcome is saved; removes a
//! folder that is not a workspace prepare made, one that is the source of
//! another open batch, or one not proven unchanged since it was read;
//! changes anything with `--dry-run`.

use std::collections::HashMap;
use std::path::PathBuf;

use gix::ObjectId;

use super::{keep_artifacts, Closed, Kept, Options, Outcome, EARLIER};
use crate::error::{Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch, TaskState};
use crate::{git::refs, ops::teardown, workspace};

mod close;

pub(super) use close::Changed;
use close::{poolable, still_locked_by_us, teardown_closed, Gone};

/// What step 5 did.
pub(super) struct Cleaned {
    /// Trash folders for the background deleter.
    pub trashes: Vec<PathBuf>,
    /// Workspaces kept because open batches were prepared in them.
    pub kept: Vec<Kept>,
    /// What became of the closed tasks' workspaces.
    pub closed: Vec<(usize, Closed)>,
    /// The first clean-up failure.
    pub artifacts_error: Option<Error>,
    /// Whether tasks stay (or would stay) open.
    pub batch_open: bool,
    /// The batch ended but its refs on its remote could not be deleted.
    pub remote_left: Option<crate::ops::remote_workers::Left>,
}

/// Step 5 (and, before it, the tasks an earlier apply left applied);
/// `undo_error` is the first warning so far.
pub(super) fn clean(
    source: &Source,
    b: &mut Batch,
    opts: &Options,
    outcomes: &mut Vec<Outcome>,
    fetched: &HashMap<String, ObjectId>,
    undo_error: Option<Error>,
) -> Result<Cleaned> {
    let dry_run = opts.dry_run;
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
                && still_locked_by_us(source, b, t)
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
        record_states(source, b, outcomes, fetched, &mut artifacts_error);
        let state_dir = source.state_dir();
        batch::save(&state_dir, b)?;
        let mut changed: Vec<Changed> = Vec::new();
        let mut gone = Gone {
            trashes: &mut trashes,
            kept: &mut kept,
            closed: &mut closed,
            artifacts_error: &mut artifacts_error,
            changed: &mut changed,
        };
        teardown_closed(source, b, opts, outcomes, &state_dir, &mut gone);
        if !changed.is_empty() {
            reopen(source, b, outcomes, &changed, &mut artifacts_error);
            batch::save(&state_dir, b)?;
        }
    }
    if dry_run {
        closed = would_close(source, b, opts, outcomes);
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
        remote_left = crate::ops::remote_workers::end(source, b, &Default::default());
        teardown::refs_and_state(source, b)?;
    }
    Ok(Cleaned {
        trashes,
        kept,
        closed,
        artifacts_error,
        batch_open,
        remote_left,
    })
}

/// With `--dry-run`: what clean-up would do to the workspaces of the tasks
/// that would close (applied, no_changes, discarded), in task order: park
/// it in the pool while `workspace.pool` has room for it (design §3.20),
/// otherwise remove it. Those `--keep` keeps, and a discarded one holding
/// a nested repository, are left out (said elsewhere).
fn would_close(
    source: &Source,
    b: &Batch,
    opts: &Options,
    outcomes: &[Outcome],
) -> Vec<(usize, Closed)> {
    let others = batch::list_ok(&source.state_dir()).unwrap_or_default();
    let mut room = source
        .config
        .pool
        .saturating_sub(workspace::pool::list(&source.state_dir()).len());
    outcomes
        .iter()
        .filter(|o| o.ok())
        .filter(|o| o.status != TaskState::Discarded || o.nested_kept.is_empty())
        .filter(|o| !(opts.keep && o.status != TaskState::Discarded))
        .map(|o| {
            let task = &b.tasks[o.idx];
            if room > 0 && poolable(source, b, task, &others) {
                room -= 1;
                (o.idx, Closed::Parked)
            } else {
                (o.idx, Closed::Removed)
            }
        })
        .collect()
}

/// The reason of a task whose workspace was written into after apply read
/// it (design §3.18 "Before removing a workspace, prove it").
pub const CHANGED_AFTER_READ: &str = "changed_after_read";

/// The tasks whose workspace was written into after it was read (`changed`,
/// workspaces kept): an applied one opens again on the proposal that landed
/// as its base (its ref and the task's base ref keep it), so the next apply
/// lands only the rest; one without changes opens again as it was; a
/// discarded one stays discarded (its workspace, released, holds the rest).
/// Each outcome says so; the batch is not saved here.
fn reopen(
    source: &Source,
    b: &mut Batch,
    outcomes: &mut Vec<Outcome>,
    changed: &[Changed],
    artifacts_error: &mut Option<Error>,
) {
    let now = crate::sys::time::rfc3339(crate::sys::time::now());
    let short = b.short().to_string();
    for c in changed {
        if !outcomes.iter().any(|o| o.idx == c.idx) {
            outcomes.push(Outcome::new(c.idx, b.tasks[c.idx].state));
            outcomes.sort_by_key(|o| o.idx);
        }
        let Some(out) = outcomes.iter_mut().find(|o| o.idx == c.idx) else {
            continue;
        };
        let t = &mut b.tasks[c.idx];
        out.reason = Some(CHANGED_AFTER_READ);
        let wrote = "its worker wrote into its workspace after apply read it";
        let waits = match &c.aside {
            Some(p) => format!(
                "; the workspace could not go back to its place ({}: something is there now) and waits at {}: move what is there out of the way, and",
                t.root.display(),
                p.display()
            ),
            None => String::new(),
        };
        if t.state == TaskState::Discarded {
            out.message = Some(format!(
                "{wrote}: what was read is kept as its proposal, and the workspace is kept as an ordinary worktree holding the rest{waits}"
            ));
            continue;
        }
        let landed = t.state == TaskState::Applied;
        if landed {
            // What landed is the task's base from now on.
            let name = refs::proposal(&b.id, &t.name);
            let set = refs::get(&source.repo, &name)
                .map_err(Error::from)
                .and_then(|id| match id {
                    Some(id) => {
                        refs::set(&source.repo, &refs::task_base(&b.id, &t.name), id, false)
                            .map(|()| Some(id))
                            .map_err(Error::from)
                    }
                    None => Ok(None),
                });
            match set {
                Ok(Some(id)) => {
                    t.base = Some(id.to_string());
                    t.proposal_ref = Some(name.clone());
                    out.proposal_ref = Some(name);
                }
                Ok(None) => {}
                Err(e) => {
                    artifacts_error.get_or_insert(e);
                }
            }
        }
        t.state = TaskState::Open;
        t.reason = Some(CHANGED_AFTER_READ.to_string());
        t.updated_at = Some(now.clone());
        out.status = TaskState::Open;
        let then = if landed {
            format!(
                "what was read landed ({} path(s) written) and the workspace is kept with the rest",
                out.applied.len()
            )
        } else {
            "it had no changes then, and the workspace is kept".to_string()
        };
        let what = if landed { "the rest" } else { "its work" };
        out.message = Some(format!(
            "{wrote}: {then}{waits}{} once nothing writes there any more, `git delegate apply {short}` lands {what}",
            if waits.is_empty() { ";" } else { "" }
        ));
    }
}

/// Record this run's outcomes in the batch (not saved yet), with the
/// artifacts each one keeps: a kept task's patch is written now.
fn record_states(
    source: &Source,
    b: &mut Batch,
    outcomes: &mut [Outcome],
    fetched: &HashMap<String, ObjectId>,
    artifacts_error: &mut Option<Error>,
) {
    let now = crate::sys::time::rfc3339(crate::sys::time::now());
    for out in outcomes.iter_mut() {
        if out.status == TaskState::Discarded && out.proposal_ref.is_some() {
            // Kept past the batch: the patch moves out of its state folder.
            if let Err(e) = move_to_kept(source, b, out) {
                artifacts_error.get_or_insert(e);
            }
            out.kept_until = Some(kept_until(source, out.proposal_ref.as_deref()));
        } else if out.ok() {
            out.proposal_ref = None;
            out.patch = None;
        } else {
            // The patch of a proposal recorded by this run, kept now.
            if let Some(Err(e)) = out.unwritten_patch.take().map(|p| p.write(&source.repo)) {
                artifacts_error.get_or_insert(e.into());
            }
            keep_artifacts(source, b, out, false);
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
