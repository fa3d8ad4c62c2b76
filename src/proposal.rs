//! Proposals (SPEC §1): a task's workspace as a commit on the baseline, with
//! its ref and patch, written before any integration so every proposal has a
//! durable recovery form. Used by `apply` and by `gc`'s rescue.
//!
//! Owns: turning a workspace into proposal commit + ref + patch.
//! Never: merges, or writes the source working tree.

use std::path::PathBuf;

use gix::ObjectId;

use crate::batch::{Batch, Task};
use crate::diff::PathChange;
use crate::error::Result;
use crate::repo::Source;
use crate::{commit, diff, patch, refs, snapshot};

pub struct Proposal {
    /// The proposal commit (for callers that report it, such as gc's rescue).
    #[allow(dead_code)]
    pub commit: ObjectId,
    pub tree: ObjectId,
    pub ref_name: String,
    pub patch: PathBuf,
    /// Paths that differ from the baseline.
    pub paths: Vec<PathChange>,
}

/// The patch file of a task.
pub fn patch_path(source: &Source, batch: &Batch, task: &str) -> PathBuf {
    crate::batch::batch_dir(&source.state_dir(), &batch.id).join(format!("{task}.patch"))
}

/// Snapshot `task`'s workspace. `None` when it does not differ from the
/// baseline; otherwise the proposal commit, its ref (created or moved) and
/// its patch are written.
pub fn record(
    source: &Source,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<Proposal>> {
    let ws = crate::repo::open_worktree(&task.root)?;
    let snap = snapshot::snapshot(&ws)?;
    let paths = diff::trees(&source.repo, baseline_tree, snap.tree)?;
    if paths.is_empty() {
        return Ok(None);
    }
    let baseline = ObjectId::from_hex(batch.baseline.as_bytes())
        .map_err(|e| crate::error::Error::git("bad baseline id", e))?;
    let commit = commit::write(
        &source.repo,
        snap.tree,
        Some(baseline),
        format!("git-delegate proposal {} task {}\n", batch.id, task.name),
    )?;
    let ref_name = refs::proposal(&batch.id, &task.name);
    refs::set(&source.repo, &ref_name, commit, false)?;
    let patch = patch_path(source, batch, &task.name);
    patch::write_patch(&source.repo, baseline_tree, snap.tree, &patch)?;
    Ok(Some(Proposal {
        commit,
        tree: snap.tree,
        ref_name,
        patch,
        paths,
    }))
}

/// What `record` would find, without writing anything durable (for
/// `apply --dry-run`): the workspace's snapshot tree, with its new objects
/// moved into `mem`'s object memory, and the paths that differ from the
/// baseline. `None` when the workspace does not differ.
pub fn preview(
    mem: &mut gix::Repository,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<(ObjectId, Vec<PathChange>)>> {
    let mut ws = crate::repo::open_worktree(&task.root)?.with_object_memory();
    let snap = snapshot::snapshot(&ws)?;
    if let Some(objects) = ws.objects.take_object_memory() {
        let mut all = mem.objects.take_object_memory().unwrap_or_default();
        let mut objects = objects;
        all.extend(objects.drain());
        mem.objects.set_object_memory(all);
    }
    let paths = diff::trees(mem, baseline_tree, snap.tree)?;
    if paths.is_empty() {
        return Ok(None);
    }
    Ok(Some((snap.tree, paths)))
}
