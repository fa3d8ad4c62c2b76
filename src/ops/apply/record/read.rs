//! How step 1 of apply reads the workspaces (design §3.2): their identity
//! and unresolved refresh conflicts probed in parallel, their snapshots
//! recorded as proposals (a bounded number of walks at once), a remote
//! task's fetched proposal received as a local one is recorded, a
//! discarded task's work kept.
//!
//! Owns: the parallel probes and snapshots, and what one recording holds.
//! Never: decides a task's outcome (the other files of `record` do), reads
//! a folder that is not the workspace prepare made.

use std::path::PathBuf;

use gix::bstr::BString;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::PathConflict;
use crate::ops::apply::{keep_artifacts, Outcome};
use crate::ops::remote_workers::Received;
use crate::record::batch::{self, Batch};
use crate::{git::refs, merge::proposal, workspace};

/// One workspace's proposal, as recorded (or previewed).
pub(super) struct Recorded {
    pub(super) tree: gix::ObjectId,
    pub(super) paths: Vec<crate::git::diff::PathChange>,
    /// Proposal ref and patch (not with `--dry-run`).
    pub(super) artifacts: Option<(String, PathBuf)>,
    /// The patch, not written yet (see `Outcome::unwritten_patch`).
    pub(super) unwritten: Option<proposal::PendingPatch>,
    /// Objects kept in memory (`--dry-run`).
    pub(super) objects: Option<proposal::Objects>,
    /// Nested repositories in the workspace (the task cannot apply).
    pub(super) nested: Vec<BString>,
    /// Paths in the workspace git refuses (the task cannot apply).
    pub(super) invalid: Vec<crate::git::validate::Invalid>,
    /// A refreshed task's own base tree (design §3.12).
    pub(super) base: Option<gix::ObjectId>,
}

/// A remote task's fetched proposal (design §3.14), checked and recorded
/// as a local one is: its ref (fetched there already) and patch.
pub(super) fn receive(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    commit: gix::ObjectId,
    baseline_tree: gix::ObjectId,
    dry_run: bool,
) -> Result<Option<Recorded>> {
    let (_, base_tree) = proposal::base_of(&source.repo, b, task, baseline_tree)?;
    let (tree, paths) =
        match crate::ops::remote_workers::received(&source.repo, b, task, commit, base_tree)? {
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
pub(super) type Probed = (workspace::Identity, Option<(Vec<PathConflict>, bool)>);

pub(super) fn probe(common_dir: &std::path::Path, task: &batch::Task) -> Probed {
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
pub(super) fn probe_all(
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
pub(super) const MAX_WALKS: usize = 8;

/// What one workspace's snapshot read, as git-delegate vouches for it
/// (with `workspace.pool` only: what the pool keeps of it, design §3.20).
pub(super) type Read = Option<Box<crate::snapshot::Vouched>>;

/// Record (or preview) the proposals of `tasks`, all at once on a few
/// threads: a snapshot is mostly a stat walk, and the walks overlap well on
/// a few cores. Results in the order of `tasks`, each with what its
/// snapshot read where the pool may keep its workspace.
pub(super) fn record_all(
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
pub(super) fn keep_discarded(
    source: &Source,
    b: &Batch,
    out: &mut Outcome,
    baseline_tree: gix::ObjectId,
) {
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
