//! Step 5 of apply, the workspaces of the tasks that closed (design §3.2,
//! §3.18 "Before removing a workspace, prove it", §3.20): each proven to
//! hold what step 1 read (a bounded number of proofs at once), then
//! removed, parked idle in the pool, kept (`--keep`, or the source of an
//! open batch), or, written into since, kept and its task reopened; their
//! proposal refs go with them.
//!
//! Owns: which of those fates each workspace gets, and what it is proven
//! against.
//! Never: removes a folder that is not a workspace prepare made, one that
//! is the source of another open batch, or one not proven unchanged.

use std::path::PathBuf;

use gix::ObjectId;

use crate::error::{Error, Result};
use crate::git::repo::Source;
use crate::ops::apply::{Closed, Kept, Options, Outcome};
use crate::record::batch::{self, Batch, TaskState};
use crate::workspace::WorkspaceError;
use crate::{git::refs, merge::proposal, ops::teardown, workspace};

/// Where the clean-up of the closed tasks' workspaces reports.
pub(super) struct Gone<'a> {
    pub(super) trashes: &'a mut Vec<PathBuf>,
    pub(super) kept: &'a mut Vec<Kept>,
    pub(super) closed: &'a mut Vec<(usize, Closed)>,
    pub(super) artifacts_error: &'a mut Option<Error>,
    /// Closed tasks whose workspace was written into after it was read
    /// (design §3.18 "Before removing a workspace, prove it"): kept, and
    /// (but a discarded one's) their tasks open again.
    pub(super) changed: &'a mut Vec<Changed>,
}

/// A closed task whose workspace was written into after it was read: it
/// was kept (moved back to its place, or, when that was taken meanwhile,
/// left aside at `aside`).
pub(crate) struct Changed {
    pub idx: usize,
    pub aside: Option<PathBuf>,
}

/// Remove (or keep, or leave) the workspaces of the closed tasks, their
/// proposal and base refs and patches. A workspace is removed (or parked)
/// only once proven unchanged since it was read (design §3.18): each is
/// moved aside first, then all are compared at once (a stat walk each, in
/// parallel, as step 1 read them), then each goes or comes back. One
/// written into since is kept, and its task is listed in `gone.changed`
/// with its refs in place.
pub(super) fn teardown_closed(
    source: &Source,
    b: &Batch,
    opts: &Options,
    outcomes: &[Outcome],
    state_dir: &std::path::Path,
    gone: &mut Gone<'_>,
) {
    // Large workspaces are moved into the trash (one rename each) and
    // deleted by a background process: deleting 100k files costs far
    // more kernel time than the whole apply. A workspace that is the
    // source of another open batch (an agent prepared a batch inside
    // it) is kept as an ordinary worktree: that batch writes back into
    // it (`teardown`).
    let others = batch::list_ok(state_dir).unwrap_or_default();
    let mut pending: Vec<Pending> = Vec::new();
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
                    Some(hosted) => gone
                        .kept
                        .push((task.name.clone(), task.root.clone(), hosted)),
                    None => {
                        workspace::release(&source.common_dir, &task.worktree_id)?;
                        if keep {
                            gone.closed.push((i, Closed::Kept));
                        }
                    }
                }
                Ok(())
            })
        } else if this_run || still_locked_by_us(source, b, task) {
            // (A closed task's workspace still locked by us was left
            // behind by an apply interrupted during clean-up.)
            let read =
                tree_of(outcomes, i).or_else(|| teardown::read_tree_of_closed(source, b, task));
            set_aside(source, b, i, &others, read, gone, &mut pending)
        } else {
            Ok(())
        };
        if removed.is_ok() && pending.last().is_some_and(|p| p.idx == i) {
            // Its refs go once it is proven and gone.
            continue;
        }
        close_refs(source, b, i, removed, gone);
    }
    if !pending.is_empty() {
        prove_and_close(source, b, outcomes, &others, pending, gone);
    }
}

/// The workspaces `pending` (moved aside) compared at once with what step
/// 1 read, in parallel; then each removed, parked, or put back and kept.
fn prove_and_close(
    source: &Source,
    b: &Batch,
    outcomes: &[Outcome],
    others: &[Batch],
    pending: Vec<Pending>,
    gone: &mut Gone<'_>,
) {
    fn lost() -> WorkspaceError {
        WorkspaceError::io("compare", std::path::Path::new("a workspace moved aside"))(
            std::io::Error::other("a thread stopped unexpectedly"),
        )
    }
    let common_dir = &source.common_dir;
    let compared =
        crate::sys::parallel::map(pending.iter(), MAX_PROOFS, lost, |p| match &p.aside {
            Some(aside) => aside.compare(common_dir, &p.read),
            None => Ok(workspace::aside::Compared::Changed),
        });
    // Those that stay, and those going to the pool, go back first: every
    // removal may remove the batch folder once it finds it empty (and so
    // may parking), which would leave them no place to go back to.
    let mut proven: Vec<Pending> = Vec::new();
    let mut to_park: Vec<Pending> = Vec::new();
    for (p, compared) in pending.into_iter().zip(compared) {
        let i = p.idx;
        let same = matches!(compared, Ok(workspace::aside::Compared::Same));
        if same && !p.pool {
            proven.push(p);
            continue;
        }
        let Pending {
            aside, read, pool, ..
        } = p;
        let Some(aside) = aside else {
            continue;
        };
        let back = workspace::finish_in_place(aside, compared);
        let removed = match back {
            Ok(Ok(workspace::aside::Compared::Same)) => {
                to_park.push(Pending {
                    idx: i,
                    aside: None,
                    read,
                    pool,
                });
                continue;
            }
            Ok(Ok(workspace::aside::Compared::Changed)) => kept_changed(source, b, i, None, gone),
            Ok(Err(aside)) => kept_changed(source, b, i, Some(aside), gone),
            Err(e) => Err(e.into()),
        };
        close_refs(source, b, i, removed, gone);
    }
    for p in proven {
        let i = p.idx;
        let removed = remove_proven(source, b, p, gone);
        close_refs(source, b, i, removed, gone);
    }
    for p in to_park {
        let i = p.idx;
        let removed = park_or_remove(source, b, p, others, outcomes, gone);
        close_refs(source, b, i, removed, gone);
    }
}

/// At most this many workspaces are compared at once.
pub(super) const MAX_PROOFS: usize = 8;

/// A closed task's workspace moved aside, waiting for its comparison with
/// what was read (and, with `pool`, to go idle in the pool once proven).
pub(super) struct Pending {
    idx: usize,
    /// `None` once it went back to its place.
    aside: Option<workspace::aside::Aside>,
    read: workspace::aside::Read,
    pool: bool,
}

/// The proposal and base refs and patch of closed task `i`, removed once
/// its workspace is (`removed`, whose failure is the clean-up's), unless
/// its workspace was kept for work written since it was read (its task
/// opens again: `reopen`).
pub(super) fn close_refs(
    source: &Source,
    b: &Batch,
    i: usize,
    removed: Result<()>,
    gone: &mut Gone<'_>,
) {
    let task = &b.tasks[i];
    if gone.changed.iter().any(|c| c.idx == i) && task.state != TaskState::Discarded {
        if let Err(e) = removed {
            gone.artifacts_error.get_or_insert(e);
        }
        return;
    }
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
        gone.artifacts_error.get_or_insert(e);
    }
}

/// Closed task `i`'s workspace kept because it was written into after
/// `read` (or what was read is unknown): listed in `gone.changed`; a
/// discarded task's is released, an ordinary worktree (`aside`: where it
/// stays when it could not go back to its place).
pub(super) fn kept_changed(
    source: &Source,
    b: &Batch,
    i: usize,
    aside: Option<PathBuf>,
    gone: &mut Gone<'_>,
) -> Result<()> {
    let task = &b.tasks[i];
    if task.state == TaskState::Discarded && aside.is_none() {
        // Given up, but written into since: kept as an ordinary worktree,
        // never removed unproven.
        workspace::release(&source.common_dir, &task.worktree_id)?;
        gone.closed.push((i, Closed::Changed));
    }
    gone.changed.push(Changed { idx: i, aside });
    Ok(())
}

/// The first step of removing (or parking) closed task `i`'s workspace:
/// kept when it hosts an open batch or what was read in it is unknown;
/// moved aside into `pending` when it is ours (design §3.18); otherwise
/// gone (or left) as `teardown::workspace` has it.
pub(super) fn set_aside(
    source: &Source,
    b: &Batch,
    i: usize,
    others: &[Batch],
    read: Option<ObjectId>,
    gone: &mut Gone<'_>,
    pending: &mut Vec<Pending>,
) -> Result<()> {
    let task = &b.tasks[i];
    let Some(read) = read else {
        return kept_changed(source, b, i, None, gone);
    };
    if let Some(hosted) = teardown::keep_if_hosting(source, b, task, others)? {
        gone.kept
            .push((task.name.clone(), task.root.clone(), hosted));
        return Ok(());
    }
    let pool = may_pool(source, b, task, others);
    match workspace::set_aside(&source.common_dir, task)? {
        Some(aside) => {
            pending.push(Pending {
                idx: i,
                aside: Some(aside),
                read: workspace::aside::Read::from(read)
                    .with_stat(teardown::stat_record(source, b, task)),
                pool,
            });
            Ok(())
        }
        // Not ours, gone, or one that is not proven (a scratch copy).
        None => {
            let (fate, trash) = teardown::workspace(
                source,
                b,
                task,
                others,
                teardown::Way::Trash,
                Some(&read.into()),
            )?;
            record_fate(source, b, i, fate, trash, gone)
        }
    }
}

/// The last step for a workspace moved aside and proven: removed.
pub(super) fn remove_proven(
    source: &Source,
    b: &Batch,
    p: Pending,
    gone: &mut Gone<'_>,
) -> Result<()> {
    let task = &b.tasks[p.idx];
    let Some(aside) = p.aside else {
        return Ok(());
    };
    let proof = workspace::finish_removal(
        &source.common_dir,
        task,
        aside,
        Ok(workspace::aside::Compared::Same),
        false,
    )?;
    let (fate, trash) = match proof {
        workspace::Proof::Removed(trash) => (teardown::Fate::Removed, trash),
        workspace::Proof::Missing => (teardown::Fate::Missing, None),
        workspace::Proof::Foreign => (teardown::Fate::Foreign, None),
        workspace::Proof::Changed => (teardown::Fate::Changed, None),
        workspace::Proof::LeftAside(p) => (teardown::Fate::LeftAside(p), None),
    };
    record_fate(source, b, p.idx, fate, trash, gone)
}

/// The last step for a workspace proven and moved back to go idle in the
/// pool (design §3.20): handed to the pool, which keeps the tree read; if
/// the pool will not take it, removed as usual (proven again).
pub(super) fn park_or_remove(
    source: &Source,
    b: &Batch,
    p: Pending,
    others: &[Batch],
    outcomes: &[Outcome],
    gone: &mut Gone<'_>,
) -> Result<()> {
    let task = &b.tasks[p.idx];
    if park(source, b, task, read_of(outcomes, p.idx)) {
        // Idle in the pool (design §3.20), where it is: no longer the task's.
        gone.closed.push((p.idx, Closed::Parked));
        return Ok(());
    }
    let (fate, trash) =
        teardown::workspace(source, b, task, others, teardown::Way::Trash, Some(&p.read))?;
    record_fate(source, b, p.idx, fate, trash, gone)
}

/// Note what became of closed task `i`'s workspace (and the trash folder
/// its removal used, for the background deleter).
pub(super) fn record_fate(
    source: &Source,
    b: &Batch,
    i: usize,
    fate: teardown::Fate,
    trash: Option<PathBuf>,
    gone: &mut Gone<'_>,
) -> Result<()> {
    let task = &b.tasks[i];
    match fate {
        teardown::Fate::Hosting(hosted) => {
            gone.kept
                .push((task.name.clone(), task.root.clone(), hosted))
        }
        teardown::Fate::Removed => gone.closed.push((i, Closed::Removed)),
        teardown::Fate::Missing => gone.closed.push((i, Closed::Missing)),
        teardown::Fate::Foreign => gone.closed.push((i, Closed::Foreign)),
        teardown::Fate::Changed => kept_changed(source, b, i, None, gone)?,
        teardown::Fate::LeftAside(aside) => kept_changed(source, b, i, Some(aside), gone)?,
    }
    if let Some(t) = trash.filter(|t| !gone.trashes.contains(t)) {
        gone.trashes.push(t);
    }
    Ok(())
}

/// May the workspace of a task that ended applied, no_changes or
/// discarded go idle in the pool, when `workspace.pool` has room (design
/// §3.20): a plain worktree workspace (no submodules, no sparse checkout)
/// hosting no open batch.
pub(super) fn may_pool(source: &Source, b: &Batch, task: &batch::Task, others: &[Batch]) -> bool {
    let ended = matches!(
        task.state,
        TaskState::Applied | TaskState::NoChanges | TaskState::Discarded
    );
    ended
        && workspace::pool::list(&source.state_dir()).len() < source.config.pool
        && poolable(source, b, task, others)
}

/// [`may_pool`] but for the task's state and the pool's room.
pub(super) fn poolable(source: &Source, b: &Batch, task: &batch::Task, others: &[Batch]) -> bool {
    !task.remote
        && workspace::Kind::of_task(task).pools()
        && b.sparse.is_none()
        && source.config.pool != 0
        && workspace::hosted_batches(others, task, &b.id).is_empty()
        && task.root.join(".gitmodules").symlink_metadata().is_err()
}

/// Make the task's workspace, proven to hold what was read, idle in the
/// pool with the record of that read (`read`: this run's; `None`: a
/// workspace an interrupted apply left, read now). Whether it went idle;
/// when it could not (an error included), nothing changed and it is
/// removed as before.
pub(super) fn park(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    read: Option<&crate::snapshot::Vouched>,
) -> bool {
    let state_dir = source.state_dir();
    // Room is counted again: the tasks before it in this run took some.
    if workspace::pool::list(&state_dir).len() >= source.config.pool {
        return false;
    }
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

/// The tree this run's snapshot read in task `i`'s workspace, if it did.
pub(super) fn tree_of(outcomes: &[Outcome], i: usize) -> Option<ObjectId> {
    outcomes
        .iter()
        .find(|o| o.idx == i)
        .and_then(|o| o.workspace_tree)
}

/// What this run's snapshot read in task `i`'s workspace, if it did.
pub(super) fn read_of(outcomes: &[Outcome], i: usize) -> Option<&crate::snapshot::Vouched> {
    outcomes
        .iter()
        .find(|o| o.idx == i)
        .and_then(|o| o.workspace_read.as_deref())
}

/// A closed task's workspace that is still ours and still carries the lock
/// prepare put on it (a `--keep` workspace was unlocked on purpose).
pub(super) fn still_locked_by_us(source: &Source, b: &Batch, task: &batch::Task) -> bool {
    if workspace::health(&source.common_dir, task) != workspace::Health::Ours {
        return false;
    }
    crate::git::registration::Registration::new(&source.common_dir, &task.worktree_id)
        .is_ours_for(&b.id, &task.name)
}
