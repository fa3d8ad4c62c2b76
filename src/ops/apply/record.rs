//! Step 1 of apply (design §3.2): fetch what remote tasks submitted, check
//! each selected workspace's identity, stop what still runs in the
//! workspaces, record every proposal (commit, ref; its patch is written in
//! step 5 only where the task keeps it), and turn each into an outcome or
//! a candidate for the integration; then the side effects the workspaces
//! left (design §3.16).
//!
//! Owns: which tasks are read (a folder that is not the workspace prepare
//! made is never read, quiesced nor recorded), the parallel probes and
//! snapshots of the workspaces, and the outcomes step 1 decides (unresolved
//! refresh conflicts, processes running, snapshot failures, submodule
//! changes, paths git refuses, nested repositories, stashed work).
//! Never: merges, writes into the source's working tree, or removes a
//! workspace; writes anything durable with `--dry-run`.

use std::collections::HashMap;
use std::path::PathBuf;

use gix::bstr::BString;
use gix::ObjectId;

use super::{keep_artifacts, Options, Outcome};
use crate::config::StopProcesses;
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{Candidate, PathConflict};
use crate::ops::remote::{Fetched, Received};
use crate::record::batch::{self, Batch, TaskState};
use crate::{git::refs, merge::proposal, sys::quiesce, workspace};

/// The proposals git would not fetch, by task (`remote::Fetched`).
type Unfetched = std::collections::BTreeMap<String, crate::ops::remote::Unfetchable>;

/// What step 1 reads from.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub source: &'a Source,
    pub b: &'a Batch,
    pub opts: &'a Options,
    pub baseline_tree: ObjectId,
    /// The batch's mode is `scratch`: every task is discarded.
    pub scratch: bool,
}

/// What step 1 hands on.
pub(super) struct Recording {
    /// The selected tasks, in selection order (remote ones included).
    pub outcomes: Vec<Outcome>,
    /// The proposals to integrate, in task order.
    pub candidates: Vec<Candidate>,
    /// What the remote tasks submitted (design §3.14).
    pub fetched: HashMap<String, ObjectId>,
    /// Branches, tags and stash entries the workspaces made, and changes
    /// to the shared git dir (design §3.16).
    pub side_effects: Vec<crate::ops::side_effects::SideEffect>,
}

/// Step 1 for the `selected` tasks; the proposals' objects of a dry run
/// are added to `mem`.
pub(super) fn record(
    cx: Ctx<'_>,
    selected: &[(usize, bool)],
    mem: &mut gix::Repository,
) -> Result<Recording> {
    let Ctx {
        source, b, opts, ..
    } = cx;
    let dry_run = opts.dry_run;
    // design §3.14: what the remote tasks submitted, fetched first (a
    // remote that fails stops the apply before anything changed).
    // One proposal git refuses to fetch fails its own task alone (design
    // §3.18 "Bounded work on remote bytes").
    let Fetched {
        found: mut fetched,
        unfetchable,
    } = {
        // (A discarded one's too: its submitted work is kept, as a local
        // workspace's is, before the batch's remote refs may go.)
        let names: Vec<&str> = selected
            .iter()
            .filter(|&&(i, discard)| b.tasks[i].remote && !(discard && dry_run))
            .map(|&(i, _)| b.tasks[i].name.as_str())
            .collect();
        match names.is_empty() {
            true => Default::default(),
            false => crate::ops::remote::fetch_proposals(source, b, &names, !dry_run)?,
        }
    };
    let Selected {
        mut outcomes,
        pending,
        roots,
        received,
    } = select(cx, selected, (&fetched, &unfetchable))?;
    // A discarded task whose proposal git would not fetch: what the remote
    // lists is what the batch's end deletes there (the user ended it, and
    // nothing can fetch it), as `drop --force` deletes what it listed.
    for &(i, discard) in selected {
        if let (true, Some(u)) = (discard, unfetchable.get(&b.tasks[i].name)) {
            fetched.insert(b.tasks[i].name.clone(), u.listed);
        }
    }
    let to_record = stop(cx, &mut outcomes, &pending, &roots);
    let mut candidates = take(
        cx,
        &mut outcomes,
        (&pending, &roots),
        to_record,
        received,
        mem,
    )?;
    // Branches, tags and stash entries the workspaces made (design §3.16);
    // a task whose work sits in the stash stays open.
    let mut side_effects = crate::ops::side_effects::find(source, b)?;
    if !dry_run {
        // Reporting only: a failure to keep it changes no outcome.
        let _ = crate::ops::side_effects::remember(source, b, &side_effects);
    }
    // And what changed in the shared config and hooks (design §3.16 "The
    // shared git dir"): reported, never a task's outcome.
    side_effects.extend(crate::ops::side_effects::find_git_dir(source, b));
    stash_holds_work(b, &side_effects, &mut outcomes, &mut candidates);
    candidates.sort_by_key(|c| c.task);
    Ok(Recording {
        outcomes,
        candidates,
        fetched,
        side_effects,
    })
}

/// The selected tasks sorted out: their outcomes so far, the local ones to
/// stop and record (positions in `outcomes`, with their real paths) and
/// the remote ones received.
struct Selected {
    outcomes: Vec<Outcome>,
    pending: Vec<usize>,
    roots: Vec<PathBuf>,
    received: Vec<(usize, Result<Option<Recorded>>)>,
}

fn select(
    cx: Ctx<'_>,
    selected: &[(usize, bool)],
    (fetched, unfetchable): (&HashMap<String, ObjectId>, &Unfetched),
) -> Result<Selected> {
    let Ctx {
        source,
        b,
        opts,
        baseline_tree,
        scratch,
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
            let mut out = Outcome::new(idx, TaskState::NotSubmitted);
            if let Some(&commit) = fetched.get(&task.name) {
                out.status = TaskState::Open;
                received.push((
                    outcomes.len(),
                    receive(source, b, task, commit, baseline_tree, dry_run),
                ));
            } else if let Some(u) = unfetchable.get(&task.name) {
                out.fail(
                    crate::git::validate::REASON,
                    format!("{}, so nothing of it is here", u.why()),
                );
                out.resubmit = true;
            }
            outcomes.push(out);
            continue;
        }
        // A task whose worker failed in `run` is applied only when named
        // (design §3.13, §3.18 "Follow-through"): a plain apply leaves it
        // open, its workspace neither stopped nor recorded.
        if task.state == TaskState::WorkerFailed && !discard && !opts.only.contains(&task.name) {
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
            outcomes.push(out);
            continue;
        }
        if scratch {
            outcomes.push(Outcome::new(idx, TaskState::Discarded));
            continue;
        }
        if discard {
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
            if let workspace::Identity::TooManyOpenFiles(e) =
                workspace::identify(&source.common_dir, task)
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
                if let Ok(Some(p)) = proposal::preview(&source.repo, &batch_dir, &t, baseline_tree)
                {
                    out.nested_kept = p.nested;
                    out.would_keep = true;
                }
            }
            outcomes.push(out);
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

/// Stop (or, by the policy or in a dry run, only describe) the processes
/// running in the `pending` workspaces at `roots`: the positions of those
/// that can be recorded.
fn stop(cx: Ctx<'_>, outcomes: &mut [Outcome], pending: &[usize], roots: &[PathBuf]) -> Vec<usize> {
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

/// Record the workspaces at `to_record` (positions in `outcomes`; the
/// `pending` ones with their real `roots`), add the `received` remote ones,
/// and decide each one's outcome: the candidates for the integration.
fn take(
    cx: Ctx<'_>,
    outcomes: &mut [Outcome],
    (pending, roots): (&[usize], &[PathBuf]),
    mut to_record: Vec<usize>,
    received: Vec<(usize, Result<Option<Recorded>>)>,
    mem: &mut gix::Repository,
) -> Result<Vec<Candidate>> {
    let Ctx {
        source,
        b,
        opts,
        baseline_tree,
        ..
    } = cx;
    let dry_run = opts.dry_run;
    // Each workspace is read at the real path its identity check found, so
    // a symlink put at its path since is not followed.
    let reals: std::collections::HashMap<usize, &PathBuf> =
        pending.iter().copied().zip(roots).collect();
    let owned: Vec<batch::Task> = to_record
        .iter()
        .map(|&o| {
            let mut t = b.tasks[outcomes[o].idx].clone();
            if let Some(real) = reals.get(&o) {
                t.root = (*real).clone();
            }
            t
        })
        .collect();
    let tasks: Vec<&batch::Task> = owned.iter().collect();
    let (mut recorded, mut read): (Vec<_>, Vec<_>) =
        record_all(source, b, &tasks, baseline_tree, dry_run)?
            .into_iter()
            .unzip();
    for (o, rec) in received {
        to_record.push(o);
        recorded.push(rec);
        read.push(None);
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    // `owned` covers the local tasks only; a remote task's work was
    // received, and it has no workspace here (design §3.14).
    let roots_of: std::collections::HashMap<usize, &PathBuf> = to_record
        .iter()
        .copied()
        .zip(owned.iter().map(|t| &t.root))
        .collect();
    for ((&o, mut rec), read) in to_record.iter().zip(recorded).zip(read) {
        let out = &mut outcomes[o];
        // Its patch is written in step 5 if the task keeps its proposal.
        if let Ok(Some(r)) = &mut rec {
            out.unwritten_patch = r.unwritten.take();
        }
        // Swapped while it was read: what was read is not the task's work.
        let rec = match workspace::identify(&source.common_dir, &b.tasks[out.idx]) {
            _ if b.tasks[out.idx].remote => rec,
            workspace::Identity::Ours { .. } => rec,
            workspace::Identity::TooManyOpenFiles(e) => return Err(e),
            other => {
                out.fail(
                    "workspace_missing",
                    missing_message(&b.tasks[out.idx], &other),
                );
                keep_artifacts(source, b, out, dry_run);
                continue;
            }
        };
        // A task that changed a submodule (read-only, design §3.15) keeps its
        // work (a remote task's submodules are its worker's to keep).
        let subs = match roots_of.get(&o) {
            Some(root) if !b.tasks[out.idx].remote => {
                crate::workspace::submodules::changed(&source.common_dir, root).map_err(Error::from)
            }
            _ => Ok(Vec::new()),
        };
        let rec = match (rec, subs) {
            (Ok(r), Ok(subs)) if !subs.is_empty() => {
                submodule_changed(out, r, subs);
                continue;
            }
            (Ok(_), Err(e)) => Err(e),
            (rec, _) => rec,
        };
        match rec {
            Err(e) => {
                out.fail("snapshot_failed", e.message.clone());
                out.resubmit = b.tasks[out.idx].remote && e.code.fs_cause().is_none();
                keep_artifacts(source, b, out, dry_run);
            }
            Ok(None) => {
                out.status = TaskState::NoChanges;
                // No difference from the task's base: its tree is the workspace's.
                let task = &b.tasks[out.idx];
                if !task.remote {
                    out.workspace_tree = proposal::base_of(&source.repo, b, task, baseline_tree)
                        .ok()
                        .map(|(_, tree)| tree);
                }
                out.workspace_read = read;
            }
            Ok(Some(r)) => {
                if r.invalid.is_empty() && r.nested.is_empty() {
                    if !b.tasks[out.idx].remote {
                        out.workspace_tree = Some(r.tree);
                    }
                    out.workspace_read = read;
                }
                out.proposed = r.paths.into_iter().map(|c| c.path).collect();
                if let Some((name, patch)) = r.artifacts {
                    out.proposal_ref = Some(name);
                    out.patch = Some(patch);
                }
                // Paths git refuses (design §3.18) and repositories the
                // worker made (design §3.2): the task is refused alone, its
                // work kept (the workspace holds them, the proposal ref and
                // patch the rest); a repository is never dropped silently.
                if let Some((reason, conflicts)) = proposal::refusal(r.invalid, r.nested) {
                    out.status = TaskState::Conflict;
                    out.reason = Some(reason);
                    out.conflicts = conflicts;
                    continue;
                }
                if let Some(objects) = r.objects {
                    proposal::add_objects(mem, objects);
                }
                candidates.push(Candidate {
                    task: out.idx,
                    tree: r.tree,
                    paths: out.proposed.clone(),
                    base: r.base,
                });
            }
        }
    }
    Ok(candidates)
}

/// A task whose workspace pushed entries still in the stash has work
/// there that apply cannot see: it stays open (reason `stashed`), whatever
/// its workspace holds, so neither is applied without the other nor its
/// workspace removed (design §3.16).
fn stash_holds_work(
    b: &Batch,
    effects: &[crate::ops::side_effects::SideEffect],
    outcomes: &mut [Outcome],
    candidates: &mut Vec<Candidate>,
) {
    for (task, entries) in crate::ops::side_effects::stashed(effects) {
        let Some(out) = outcomes.iter_mut().find(|o| o.idx == task) else {
            continue;
        };
        if !matches!(out.status, TaskState::NoChanges | TaskState::Open) {
            continue;
        }
        candidates.retain(|c| c.task != task);
        let names: Vec<String> = entries.iter().map(|e| e.display_name()).collect();
        out.status = TaskState::Open;
        out.reason = Some("stashed");
        out.message = Some(format!(
            "the work of task {} is in the repository's stash ({}), not in its workspace",
            b.tasks[task].name,
            names.join(", ")
        ));
    }
}

/// Why a task's workspace cannot be read (reason `workspace_missing`).
fn missing_message(task: &batch::Task, identity: &workspace::Identity) -> String {
    match identity {
        workspace::Identity::Replaced(why) => format!(
            "the workspace {} {why}: it is no longer the folder prepare made, so it is neither read nor removed",
            task.root.display()
        ),
        _ => format!("the workspace {} is missing", task.root.display()),
    }
}

/// A task that changed submodules: a conflict that keeps its workspace,
/// and its proposal ref and patch when it changed superproject files too
/// (design §3.15).
fn submodule_changed(out: &mut Outcome, r: Option<Recorded>, subs: Vec<BString>) {
    if let Some(r) = r {
        out.proposed = r.paths.into_iter().map(|c| c.path).collect();
        if let Some((name, patch)) = r.artifacts {
            out.proposal_ref = Some(name);
            out.patch = Some(patch);
        }
    }
    out.status = TaskState::Conflict;
    out.reason = Some("submodule_changed");
    out.conflicts = subs
        .into_iter()
        .map(|path| PathConflict {
            path,
            reason: "submodule changed".into(),
        })
        .collect();
}

/// One workspace's proposal, as recorded (or previewed).
struct Recorded {
    tree: gix::ObjectId,
    paths: Vec<crate::git::diff::PathChange>,
    /// Proposal ref and patch (not with `--dry-run`).
    artifacts: Option<(String, PathBuf)>,
    /// The patch, not written yet (see `Outcome::unwritten_patch`).
    unwritten: Option<proposal::PendingPatch>,
    /// Objects kept in memory (`--dry-run`).
    objects: Option<proposal::Objects>,
    /// Nested repositories in the workspace (the task cannot apply).
    nested: Vec<BString>,
    /// Paths in the workspace git refuses (the task cannot apply).
    invalid: Vec<crate::git::validate::Invalid>,
    /// A refreshed task's own base tree (design §3.12).
    base: Option<gix::ObjectId>,
}

/// A remote task's fetched proposal (design §3.14), checked and recorded
/// as a local one is: its ref (fetched there already) and patch.
fn receive(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    commit: gix::ObjectId,
    baseline_tree: gix::ObjectId,
    dry_run: bool,
) -> Result<Option<Recorded>> {
    let (_, base_tree) = proposal::base_of(&source.repo, b, task, baseline_tree)?;
    let (tree, paths) =
        match crate::ops::remote::received(&source.repo, b, task, commit, base_tree)? {
            Received::Nothing => return Ok(None),
            Received::Changes(tree, paths) => (tree, paths),
            Received::TooMany(tree, over) => {
                // Refused before anything expands it: its ref is kept, with no
                // patch (one as large as the bomb; a patch an earlier
                // submission left goes, design §3.18 "Limits").
                let artifacts = if dry_run {
                    None
                } else {
                    let patch = proposal::patch_path(source, b, &task.name);
                    crate::sys::fs::remove_file(&patch).map_err(Error::from)?;
                    Some((refs::proposal(&b.id, &task.name), patch))
                };
                return Ok(Some(Recorded {
                    tree,
                    paths: Vec::new(),
                    artifacts,
                    unwritten: None,
                    objects: None,
                    nested: Vec::new(),
                    invalid: vec![over],
                    base: task.base.is_some().then_some(base_tree),
                }));
            }
        };
    let (artifacts, unwritten) = if dry_run {
        (None, None)
    } else {
        let patch = proposal::patch_path(source, b, &task.name);
        let unwritten = proposal::defer_patch(&source.repo, base_tree, tree, &patch)?;
        (Some((refs::proposal(&b.id, &task.name), patch)), unwritten)
    };
    Ok(Some(Recorded {
        tree,
        paths,
        artifacts,
        unwritten,
        objects: None,
        nested: Vec::new(),
        // Checked by the integration (`integrate::screen`), with the tree.
        invalid: Vec::new(),
        base: task.base.is_some().then_some(base_tree),
    }))
}

/// A local task's workspace identity (checked before anything in it is
/// read) and, where it is ours, the conflicts a refresh left unresolved
/// in it and whether its index could be read (`refresh::unresolved_checked`).
type Probed = (workspace::Identity, Option<(Vec<PathConflict>, bool)>);

fn probe(common_dir: &std::path::Path, task: &batch::Task) -> Probed {
    let identity = workspace::identify(common_dir, task);
    let unresolved = match &identity {
        workspace::Identity::Ours { real, .. } => {
            Some(crate::ops::refresh::unresolved_checked(task, real))
        }
        _ => None,
    };
    (identity, unresolved)
}

/// [`probe`] of the selected tasks `wanted` picks, all at once (each reads
/// its workspace's whole index); `None` for the others (and for any whose
/// thread failed: the caller probes it itself).
fn probe_all(
    source: &Source,
    b: &Batch,
    selected: &[(usize, bool)],
    wanted: impl Fn(&(usize, bool)) -> bool + Sync,
) -> Vec<Option<Probed>> {
    fn lost() -> Error {
        Error::state(
            Code::Internal,
            "a workspace probe thread stopped unexpectedly",
            "report this bug; nothing was changed",
        )
    }
    let common_dir = &source.common_dir;
    crate::sys::parallel::map(selected.iter(), MAX_WALKS, lost, |sel| {
        Ok(wanted(sel).then(|| probe(common_dir, &b.tasks[sel.0])))
    })
    .into_iter()
    .map(|r| r.ok().flatten())
    .collect()
}

/// At most this many snapshots run at once.
const MAX_WALKS: usize = 8;

/// What one workspace's snapshot read, as git-delegate vouches for it
/// (with `workspace.pool` only: what the pool keeps of it, design §3.20).
type Read = Option<Box<crate::snapshot::Vouched>>;

/// Record (or preview) the proposals of `tasks`, all at once on a few
/// threads: a snapshot is mostly a stat walk, and the walks overlap well on
/// a few cores. Results in the order of `tasks`, each with what its
/// snapshot read where the pool may keep its workspace.
fn record_all(
    source: &Source,
    b: &Batch,
    tasks: &[&batch::Task],
    baseline_tree: gix::ObjectId,
    dry_run: bool,
) -> Result<Vec<(Result<Option<Recorded>>, Read)>> {
    let shared = source.repo.clone().into_sync();
    let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
    let vouch = source.config.pool > 0;
    let record = |task: &batch::Task| -> Result<(Option<Recorded>, Read)> {
        let repo = shared.to_thread_local();
        let (_, base_tree) = proposal::base_of(&repo, b, task, baseline_tree)?;
        let base = task.base.is_some().then_some(base_tree);
        if dry_run {
            let preview =
                proposal::preview(&repo, &batch_dir, task, base_tree)?.map(|p| Recorded {
                    tree: p.tree,
                    paths: p.paths,
                    artifacts: None,
                    unwritten: None,
                    objects: Some(p.objects),
                    nested: p.nested,
                    invalid: p.invalid,
                    base,
                });
            Ok((preview, None))
        } else {
            let (proposal, read) =
                proposal::record_vouching(&repo, &batch_dir, b, task, baseline_tree, vouch)?;
            let recorded = proposal.map(|p| Recorded {
                tree: p.tree,
                paths: p.paths,
                artifacts: Some((p.ref_name, p.patch)),
                unwritten: p.unwritten,
                objects: None,
                nested: p.nested,
                invalid: p.invalid,
                base,
            });
            Ok((recorded, read.map(Box::new)))
        }
    };
    // Each walk mostly waits on the kernel's stat calls, and gix already
    // spreads one walk over the cores: running all of them at once (up to
    // a bound that keeps memory, one index per walk, in check) measured
    // faster than one or two at a time on 2 cores, and much faster when
    // other processes compete.
    fn lost() -> Error {
        Error::state(
            Code::Internal,
            "a snapshot thread stopped unexpectedly",
            "report this bug; nothing was changed",
        )
    }
    Ok(
        crate::sys::parallel::map(tasks.iter().copied(), MAX_WALKS, lost, record)
            .into_iter()
            .map(|r| match r {
                Ok((rec, read)) => (Ok(rec), read),
                Err(e) => (Err(e), None),
            })
            .collect(),
    )
}

/// Save a task apply discards: its workspace's changes as a proposal commit,
/// ref and patch (as gc's rescue does), or, when the workspace is gone or no
/// longer ours, the proposal recorded before. A workspace whose changes
/// cannot be read is not discarded: the task fails and keeps it.
fn keep_discarded(source: &Source, b: &Batch, out: &mut Outcome, baseline_tree: gix::ObjectId) {
    // Read at the real path the identity check found; a folder that is not
    // the one prepare made is never read.
    let workspace::Identity::Ours { real, .. } =
        workspace::identify(&source.common_dir, &b.tasks[out.idx])
    else {
        keep_artifacts(source, b, out, false);
        return;
    };
    let mut task = b.tasks[out.idx].clone();
    task.root = real;
    let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
    let vouch = source.config.pool > 0;
    let recorded =
        proposal::record_vouching(&source.repo, &batch_dir, b, &task, baseline_tree, vouch)
            .and_then(|(p, read)| Ok((p.map(|p| p.with_patch(&source.repo)).transpose()?, read)))
            .map_err(Error::from);
    match recorded {
        Ok((Some(p), read)) => {
            out.proposal_ref = Some(p.ref_name);
            out.patch = Some(p.patch);
            if p.invalid.is_empty() && p.nested.is_empty() {
                out.workspace_read = read.map(Box::new);
            }
            out.nested_kept = p.nested;
        }
        Ok((None, read)) => out.workspace_read = read.map(Box::new),
        Err(e) => {
            out.fail(
                "snapshot_failed",
                format!(
                    "its work could not be saved, so it was not discarded: {}",
                    e.message
                ),
            );
            keep_artifacts(source, b, out, false);
        }
    }
}
