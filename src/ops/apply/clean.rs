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
use crate::workspace::WorkspaceError;
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

/// Where the clean-up of the closed tasks' workspaces reports.
struct Gone<'a> {
    trashes: &'a mut Vec<PathBuf>,
    kept: &'a mut Vec<Kept>,
    closed: &'a mut Vec<(usize, Closed)>,
    artifacts_error: &'a mut Option<Error>,
    /// Closed tasks whose workspace was written into after it was read
    /// (design §3.18 "Before removing a workspace, prove it"): kept, and
    /// (but a discarded one's) their tasks open again.
    changed: &'a mut Vec<Changed>,
}

/// A closed task whose workspace was written into after it was read: it
/// was kept (moved back to its place, or, when that was taken meanwhile,
/// left aside at `aside`).
pub(super) struct Changed {
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
fn teardown_closed(
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
    if pending.is_empty() {
        return;
    }
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
        let removed = park_or_remove(source, b, p, &others, outcomes, gone);
        close_refs(source, b, i, removed, gone);
    }
}

/// At most this many workspaces are compared at once.
const MAX_PROOFS: usize = 8;

/// A closed task's workspace moved aside, waiting for its comparison with
/// what was read (and, with `pool`, to go idle in the pool once proven).
struct Pending {
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
fn close_refs(source: &Source, b: &Batch, i: usize, removed: Result<()>, gone: &mut Gone<'_>) {
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
fn kept_changed(
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
fn set_aside(
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
fn remove_proven(source: &Source, b: &Batch, p: Pending, gone: &mut Gone<'_>) -> Result<()> {
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
fn park_or_remove(
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
fn record_fate(
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
fn may_pool(source: &Source, b: &Batch, task: &batch::Task, others: &[Batch]) -> bool {
    let ended = matches!(
        task.state,
        TaskState::Applied | TaskState::NoChanges | TaskState::Discarded
    );
    ended
        && workspace::pool::list(&source.state_dir()).len() < source.config.pool
        && poolable(source, b, task, others)
}

/// [`may_pool`] but for the task's state and the pool's room.
fn poolable(source: &Source, b: &Batch, task: &batch::Task, others: &[Batch]) -> bool {
    !task.remote
        && task.kind() == crate::config::Mode::Worktree
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
fn park(
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
fn tree_of(outcomes: &[Outcome], i: usize) -> Option<ObjectId> {
    outcomes
        .iter()
        .find(|o| o.idx == i)
        .and_then(|o| o.workspace_tree)
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
