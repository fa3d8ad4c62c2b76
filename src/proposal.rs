//! Proposals (SPEC §1): a task's workspace as a commit on the baseline, with
//! its ref and patch, written before any integration so every proposal has a
//! durable recovery form. Used by `apply` and by `gc`'s rescue.
//!
//! Owns: turning a workspace into proposal commit + ref + patch.
//! Never: merges, or writes the source working tree.

use std::path::{Path, PathBuf};

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
    record_in(
        &source.repo,
        &crate::batch::batch_dir(&source.state_dir(), &batch.id),
        batch,
        task,
        baseline_tree,
    )
}

/// [`record`] with the repository handle and the batch's state folder
/// given (one handle per thread when proposals are recorded in parallel).
pub fn record_in(
    repo: &gix::Repository,
    batch_dir: &Path,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<Proposal>> {
    let ws = crate::repo::open_worktree(&task.root)?;
    let snap = snapshot::snapshot(&ws)?;
    let paths = diff::trees(repo, baseline_tree, snap.tree)?;
    if paths.is_empty() {
        return Ok(None);
    }
    let baseline = ObjectId::from_hex(batch.baseline.as_bytes())
        .map_err(|e| crate::error::Error::git("bad baseline id", e))?;
    let commit = commit::write(
        repo,
        snap.tree,
        Some(baseline),
        format!("git-delegate proposal {} task {}\n", batch.id, task.name),
    )?;
    let ref_name = refs::proposal(&batch.id, &task.name);
    refs::set(repo, &ref_name, commit, false)?;
    let patch = batch_dir.join(format!("{}.patch", task.name));
    patch::write_patch(repo, baseline_tree, snap.tree, &patch)?;
    Ok(Some(Proposal {
        commit,
        tree: snap.tree,
        ref_name,
        patch,
        paths,
    }))
}

/// New objects a snapshot kept in memory.
pub type Objects = gix::odb::memory::Storage;

/// What `record` would find, without writing anything durable (for
/// `apply --dry-run`): the workspace's snapshot tree, the new objects it
/// needs (kept in memory; the caller adds them to its own object memory),
/// and the paths that differ from the baseline. `None` when the workspace
/// does not differ.
pub fn preview(
    repo: &gix::Repository,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<(ObjectId, Vec<PathChange>, Objects)>> {
    let mut ws = crate::repo::open_worktree(&task.root)?.with_object_memory();
    let snap = snapshot::snapshot(&ws)?;
    let objects = ws.objects.take_object_memory().unwrap_or_default();
    let mut view = repo.clone().with_object_memory();
    view.objects.set_object_memory(objects);
    let paths = diff::trees(&view, baseline_tree, snap.tree)?;
    let objects = view.objects.take_object_memory().unwrap_or_default();
    if paths.is_empty() {
        return Ok(None);
    }
    Ok(Some((snap.tree, paths, objects)))
}

/// Add `objects` to `repo`'s object memory.
pub fn add_objects(repo: &mut gix::Repository, objects: Objects) {
    let mut all = repo.objects.take_object_memory().unwrap_or_default();
    let mut objects = objects;
    all.extend(objects.drain());
    repo.objects.set_object_memory(all);
}
