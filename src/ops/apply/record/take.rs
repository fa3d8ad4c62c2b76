//! Step 1 of apply, the second half (design §3.2): record the workspaces
//! left to record, add the remote proposals received, and turn each into
//! an outcome or a candidate for the integration.
//!
//! Owns: the outcomes decided by what was recorded (no changes, a snapshot
//! failure, a submodule changed, paths git refuses, nested repositories,
//! a workspace swapped while it was read).
//! Never: merges, or writes into the source's working tree.

use std::path::PathBuf;

use gix::bstr::BString;

use super::read::{record_all, Recorded};
use super::{missing_message, Ctx};
use crate::error::{Error, Result};
use crate::merge::integrate::{Candidate, PathConflict};
use crate::ops::apply::{keep_artifacts, Outcome};
use crate::record::batch::{self, TaskState};
use crate::{merge::proposal, workspace};

/// Record the workspaces at `to_record` (positions in `outcomes`; the
/// `pending` ones with their real `roots`), add the `received` remote ones,
/// and decide each one's outcome: the candidates for the integration.
pub(super) fn take(
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
        if let Some(c) = settle(cx, out, rec, read, mem) {
            candidates.push(c);
        }
    }
    Ok(candidates)
}

/// One recorded (or received) task's outcome by what was recorded: the
/// candidate for the integration, if it is one.
fn settle(
    cx: Ctx<'_>,
    out: &mut Outcome,
    rec: Result<Option<Recorded>>,
    read: super::read::Read,
    mem: &mut gix::Repository,
) -> Option<Candidate> {
    let Ctx {
        source,
        b,
        opts,
        baseline_tree,
        ..
    } = cx;
    let dry_run = opts.dry_run;
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
                return None;
            }
            if let Some(objects) = r.objects {
                proposal::add_objects(mem, objects);
            }
            return Some(Candidate {
                task: out.idx,
                tree: r.tree,
                paths: out.proposed.clone(),
                base: r.base,
            });
        }
    }
    None
}

/// A task that changed submodules: a conflict that keeps its workspace,
/// and its proposal ref and patch when it changed superproject files too
/// (design §3.15).
pub(super) fn submodule_changed(out: &mut Outcome, r: Option<Recorded>, subs: Vec<BString>) {
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
