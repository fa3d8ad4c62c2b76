//! Step 5 of apply (design §3.2): record every outcome in the batch, then
//! clean up: workspaces and proposal refs of `applied`, `no_changes` and
//! `discarded` tasks go (`--keep` keeps workspaces; with `workspace.pool`
//! a plain one goes idle in the pool instead, design §3.20), tasks that ended
//! `conflict` or `failed` keep their proposal ref, patch (written now) and
//! workspace; when no task is open any more the batch's refs, state folder
//! and lease go too.
//!
//! Owns: the task states saved, which workspaces are removed, kept or left
//! alone, and the patches of kept proposals (written only here, for the
//! tasks that keep them; discarded ones move to the kept store).
//! Never: removes a workspace before every outcome is saved; removes a
//! folder that is not a workspace prepare made, or one that is the source
//! of another open batch; changes anything with `--dry-run`.

use std::collections::HashMap;
use std::path::PathBuf;

use gix::ObjectId;

use super::{keep_artifacts, Closed, Kept, Options, Outcome, EARLIER};
use crate::error::{Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch, TaskState};
use crate::{git::refs, merge::proposal, ops::teardown, workspace};

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
    pub remote_left: Option<crate::ops::remote::Left>,
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
        let mut gone = Gone {
            trashes: &mut trashes,
            kept: &mut kept,
            closed: &mut closed,
            artifacts_error: &mut artifacts_error,
        };
        teardown_closed(source, b, opts, outcomes, &state_dir, &mut gone);
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
        remote_left = crate::ops::remote::end(source, b, &Default::default());
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

/// Where the clean-up of the closed tasks' workspaces reports.
struct Gone<'a> {
    trashes: &'a mut Vec<PathBuf>,
    kept: &'a mut Vec<Kept>,
    closed: &'a mut Vec<(usize, Closed)>,
    artifacts_error: &'a mut Option<Error>,
}

/// Remove (or keep, or leave) the workspaces of the closed tasks, their
/// proposal and base refs and patches.
fn teardown_closed(
    source: &Source,
    b: &Batch,
    opts: &Options,
    outcomes: &[Outcome],
    state_dir: &std::path::Path,
    gone: &mut Gone<'_>,
) {
    let Gone {
        trashes,
        kept,
        closed,
        artifacts_error,
    } = gone;
    // Large workspaces are moved into the trash (one rename each) and
    // deleted by a background process: deleting 100k files costs far
    // more kernel time than the whole apply. A workspace that is the
    // source of another open batch (an agent prepared a batch inside
    // it) is kept as an ordinary worktree: that batch writes back into
    // it (`teardown`).
    let others = batch::list_ok(state_dir).unwrap_or_default();
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
            teardown::keep_if_hosting(source, b, task, &others).and_then(|h| {
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
        } else if (this_run || still_locked_by_us(source, b, task))
            && pooled(source, b, task, &others, read_of(outcomes, i))
        {
            // Idle in the pool (design §3.20), where it is: no longer the task's.
            closed.push((i, Closed::Parked));
            Ok(())
        } else if this_run || still_locked_by_us(source, b, task) {
            // (A closed task's workspace still locked by us was left
            // behind by an apply interrupted during clean-up.)
            teardown::workspace(source, b, task, &others, teardown::Way::Trash).map(
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
                Ok(refs::delete(&source.repo, &refs::proposal(&b.id, &task.name)).map(|_| ())?)
            })
            .and_then(|()| {
                Ok(refs::delete(&source.repo, &refs::task_base(&b.id, &task.name)).map(|_| ())?)
            })
            .and_then(|()| {
                Ok(crate::sys::fs::remove_file(&proposal::patch_path(
                    source, b, &task.name,
                ))?)
            });
        if let Err(e) = r {
            artifacts_error.get_or_insert(e);
        }
    }
}

/// Make the workspace of a task that ended applied, no_changes or
/// discarded idle in the pool, when `workspace.pool` has room (design
/// §3.20): a plain worktree workspace (no submodules, no sparse checkout)
/// hosting no open batch. Whether it went idle; when it could not (an
/// error included), nothing changed and it is removed as before.
fn pooled(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    others: &[Batch],
    read: Option<&crate::snapshot::Vouched>,
) -> bool {
    let ended = matches!(
        task.state,
        TaskState::Applied | TaskState::NoChanges | TaskState::Discarded
    );
    let state_dir = source.state_dir();
    if !ended
        || task.remote
        || task.kind() != crate::config::Mode::Worktree
        || b.sparse.is_some()
        || source.config.pool == 0
        || workspace::pool::list(&state_dir).len() >= source.config.pool
        || !workspace::hosted_batches(others, task, &b.id).is_empty()
        || task.root.join(".gitmodules").symlink_metadata().is_ok()
    {
        return false;
    }
    // A workspace this run did not read (an interrupted apply's) is read now.
    let fresh;
    let read = match read {
        Some(read) => read,
        None => {
            let batch_dir = batch::batch_dir(&state_dir, &b.id);
            match proposal::read_vouched(&source.repo, &batch_dir, task) {
                Ok(Some(read)) => {
                    fresh = read;
                    &fresh
                }
                _ => return false,
            }
        }
    };
    workspace::pool::park(&source.common_dir, &state_dir, task, read).unwrap_or(false)
}

/// What this run's snapshot read in task `i`'s workspace, if it did.
fn read_of(outcomes: &[Outcome], i: usize) -> Option<&crate::snapshot::Vouched> {
    outcomes
        .iter()
        .find(|o| o.idx == i)
        .and_then(|o| o.workspace_read.as_deref())
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
