//! Proposals (design §1): a task's workspace as a commit on the baseline, with
//! its ref and patch, written before any integration so every proposal has a
//! durable recovery form (the ref; apply writes the patch only for a task
//! that keeps it, `record_deferred`). Used by `apply` and by `gc`'s rescue.
//!
//! Owns: turning a workspace into proposal commit + ref + patch, and
//! naming the nested git repositories a worker made in it (never part of a
//! proposal: the caller keeps the task open, design §3.2 `nested_repository`)
//! and the paths in it git refuses (never part of a proposal either: the
//! caller refuses the task, design §3.18 `invalid_path`).
//! Never: merges, or writes the source working tree.

use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::ObjectId;

use crate::git::diff::PathChange;
use crate::git::repo::Source;
use crate::merge::integrate::PathConflict;
use crate::merge::MergeError;
use crate::record::batch::{Batch, Task};
use crate::{git::commit, git::diff, git::refs, merge::patch, snapshot};

type Result<T, E = MergeError> = std::result::Result<T, E>;

pub struct Proposal {
    /// The proposal commit (for callers that report it, such as gc's rescue).
    #[allow(dead_code)]
    pub commit: ObjectId,
    pub tree: ObjectId,
    pub ref_name: String,
    pub patch: PathBuf,
    /// Paths that differ from the baseline.
    pub paths: Vec<PathChange>,
    /// Untracked git repositories inside the workspace (relative paths):
    /// left out of the tree, so the proposal holds only the rest.
    pub nested: Vec<BString>,
    /// Paths git refuses to add or check out (design §3.18): left out of
    /// the tree too.
    pub invalid: Vec<crate::git::validate::Invalid>,
    /// The patch, when [`record_deferred`] left it unwritten.
    pub unwritten: Option<PendingPatch>,
}

/// A proposal's patch not written yet (`record_deferred`): apply writes it
/// only for a task that keeps its proposal (design §3.2 step 5); an applied
/// task needs none (its undo entry holds the trees), and nothing else
/// reads it.
pub struct PendingPatch {
    from: ObjectId,
    to: ObjectId,
    path: PathBuf,
}

impl Proposal {
    /// The proposal with its patch written, if [`record_deferred`] left it
    /// unwritten.
    pub fn with_patch(mut self, repo: &gix::Repository) -> Result<Proposal> {
        if let Some(pending) = self.unwritten.take() {
            pending.write(repo)?;
        }
        Ok(self)
    }
}

impl PendingPatch {
    /// Write the patch at its path.
    pub fn write(&self, repo: &gix::Repository) -> Result<()> {
        patch::write_patch(repo, self.from, self.to, &self.path)
    }
}

/// Why a proposal is refused before anything of it is merged: paths git
/// refuses make it an `invalid_path` conflict naming the first
/// [`crate::git::validate::NAMED`] of them (design §3.18), nested
/// repositories its worker made a `nested_repository` one (design §3.2).
/// The reason and the conflicts to report, `None` where it may be merged.
pub fn refusal(
    invalid: Vec<crate::git::validate::Invalid>,
    nested: Vec<BString>,
) -> Option<(&'static str, Vec<PathConflict>)> {
    if !invalid.is_empty() {
        let conflicts = invalid
            .into_iter()
            .take(crate::git::validate::NAMED)
            .map(|v| PathConflict {
                path: v.path,
                reason: v.why.into(),
            })
            .collect();
        return Some((crate::git::validate::REASON, conflicts));
    }
    if !nested.is_empty() {
        let conflicts = nested
            .into_iter()
            .map(|path| PathConflict {
                path,
                reason: "nested repository".into(),
            })
            .collect();
        return Some(("nested_repository", conflicts));
    }
    None
}

/// What [`preview`] finds.
pub struct Preview {
    pub tree: ObjectId,
    pub paths: Vec<PathChange>,
    pub objects: Objects,
    /// As [`Proposal::nested`].
    pub nested: Vec<BString>,
    /// As [`Proposal::invalid`].
    pub invalid: Vec<crate::git::validate::Invalid>,
}

/// The patch file of a task.
pub fn patch_path(source: &Source, batch: &Batch, task: &str) -> PathBuf {
    crate::record::batch::batch_dir(&source.state_dir(), &batch.id).join(format!("{task}.patch"))
}

/// Snapshot `task`'s workspace. `None` when it does not differ from the
/// baseline and holds no nested repository nor path git refuses;
/// otherwise the proposal commit, its ref (created or moved) and its patch
/// are written.
pub fn record(
    source: &Source,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<Proposal>> {
    let batch_dir = crate::record::batch::batch_dir(&source.state_dir(), &batch.id);
    record_deferred(&source.repo, &batch_dir, batch, task, baseline_tree)?
        .map(|p| p.with_patch(&source.repo))
        .transpose()
}

/// [`record`] with the repository handle and the batch's state folder
/// given (one handle per thread when proposals are recorded in parallel),
/// without writing the patch: it is returned in `unwritten`, for the
/// caller to write if the proposal is kept ([`Proposal::with_patch`]). A
/// patch left at its path by an earlier apply is rewritten now, so that it
/// never describes another proposal than the ref. Every caller holds the
/// repository lock: a workspace index the snapshot could not use is
/// rebuilt here (design §3.2 step 1, `reindex`).
pub fn record_deferred(
    repo: &gix::Repository,
    batch_dir: &Path,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<Proposal>> {
    record_vouching(repo, batch_dir, batch, task, baseline_tree, false).map(|(p, _)| p)
}

/// git-delegate's own stat record of `task`'s workspace (design §3.20),
/// kept in the batch folder `batch_dir` since prepare (none for a batch
/// prepared before records were kept).
fn stat_record(repo: &gix::Repository, batch_dir: &Path, task: &Task) -> Option<gix::index::State> {
    let path = crate::record::stat::of_task(batch_dir, &task.name);
    crate::record::stat::read(&path, repo.object_hash())
}

/// [`record_deferred`], and with `vouch` the record of what the snapshot
/// read (`snapshot::Vouched`, design §3.20: what the pool keeps of a
/// workspace going idle), whether or not the workspace differs. The
/// workspace is read with git-delegate's own stat record, never trusting
/// its index's stat data, and only through a registration that leads back
/// to `repo` (design §3.18: nothing is written into another git dir).
pub fn record_vouching(
    repo: &gix::Repository,
    batch_dir: &Path,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
    vouch: bool,
) -> Result<(Option<Proposal>, Option<snapshot::Vouched>)> {
    let ws = crate::git::repo::open_worktree_of(&task.root, repo.common_dir())?;
    take_private_objects(repo, task)?;
    let record = stat_record(repo, batch_dir, task);
    let (snap, rebuilt, vouched) = snapshot::snapshot_task(&ws, record.as_ref(), vouch)?;
    if let Some(rebuilt) = rebuilt {
        // Best effort: the work is read from the files either way.
        let _ = crate::snapshot::reindex::write(repo.common_dir(), task, &ws, &snap, rebuilt);
    }
    // A refreshed task's proposal sits on its own base (design §3.12).
    let (base, baseline_tree) = base_of(repo, batch, task, baseline_tree)?;
    let paths = diff::trees(repo, baseline_tree, snap.tree)?;
    if paths.is_empty() && snap.nested_repos.is_empty() && snap.invalid.is_empty() {
        return Ok((None, vouched));
    }
    let commit = commit::write(
        repo,
        snap.tree,
        Some(base),
        format!("git-delegate proposal {} task {}\n", batch.id, task.name),
    )?;
    let ref_name = refs::proposal(&batch.id, &task.name);
    refs::set(repo, &ref_name, commit, false)?;
    let patch = batch_dir.join(format!("{}.patch", task.name));
    let unwritten = defer_patch(repo, baseline_tree, snap.tree, &patch)?;
    let proposal = Proposal {
        commit,
        tree: snap.tree,
        ref_name,
        patch,
        paths,
        nested: snap.nested_repos,
        invalid: snap.invalid,
        unwritten,
    };
    Ok((Some(proposal), vouched))
}

/// What a snapshot of `task`'s workspace reads now, as git-delegate
/// vouches for it (design §3.20): for the pool, where no apply read it
/// (a workspace an interrupted apply's clean-up left). `None` where no
/// record can be made (a nested repository, a path git refuses, ...).
pub fn read_vouched(
    repo: &gix::Repository,
    batch_dir: &Path,
    task: &Task,
) -> Result<Option<snapshot::Vouched>> {
    let ws = crate::git::repo::open_worktree_of(&task.root, repo.common_dir())?;
    take_private_objects(repo, task)?;
    let record = stat_record(repo, batch_dir, task);
    let (snap, _, vouched) = snapshot::snapshot_task(&ws, record.as_ref(), true)?;
    Ok(vouched.filter(|_| snap.nested_repos.is_empty() && snap.invalid.is_empty()))
}

/// Take the objects a contained worker's git made (design §3.22: they
/// are in its registration's private folder) into `repo`'s store, before
/// the workspace's index or HEAD, which may name them, are read.
fn take_private_objects(repo: &gix::Repository, task: &Task) -> Result<()> {
    let kind = crate::workspace::Kind::of_task(task);
    let Some(dir) = kind
        .private_objects(repo.common_dir(), task)
        .filter(|_| !task.remote)
    else {
        return Ok(());
    };
    crate::git::private_objects::take_in(repo, &dir).map_err(|source| MergeError::Git {
        what: "cannot take in the objects a contained worker made",
        source,
    })?;
    Ok(())
}

/// The patch from `from` to `to` at `path`, left unwritten (returned)
/// unless a patch is at `path` already: that one is replaced now, so an
/// old patch never stands beside a newer proposal.
pub fn defer_patch(
    repo: &gix::Repository,
    from: ObjectId,
    to: ObjectId,
    path: &Path,
) -> Result<Option<PendingPatch>> {
    let pending = PendingPatch {
        from,
        to,
        path: path.to_path_buf(),
    };
    if path.symlink_metadata().is_err() {
        return Ok(Some(pending));
    }
    pending.write(repo)?;
    Ok(None)
}

/// The commit and tree a task's work is measured from: its own base once
/// refreshed (design §3.12), else the baseline (whose tree is given).
pub fn base_of(
    repo: &gix::Repository,
    batch: &Batch,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<(ObjectId, ObjectId)> {
    let hex = task.base_or(&batch.baseline);
    let id = ObjectId::from_hex(hex.as_bytes()).map_err(|source| MergeError::BadBase {
        hex: hex.to_string(),
        source,
    })?;
    if task.base.is_none() {
        return Ok((id, baseline_tree));
    }
    Ok((id, commit::tree_of(repo, hex)?))
}

/// New objects a snapshot kept in memory.
pub type Objects = gix::odb::memory::Storage;

/// What `record` would find, without writing anything durable (for
/// `apply --dry-run`): the workspace's snapshot tree, the new objects it
/// needs (kept in memory; the caller adds them to its own object memory),
/// the paths that differ from the task's base (the baseline given, or its
/// own once refreshed), the nested repositories and the paths git refuses.
/// `None` when the workspace does not differ and holds neither. Read as
/// [`record_vouching`] reads it (`batch_dir`: the batch's state folder).
pub fn preview(
    repo: &gix::Repository,
    batch_dir: &Path,
    task: &Task,
    baseline_tree: ObjectId,
) -> Result<Option<Preview>> {
    // A refreshed task's changes are measured from its own base (design §3.12).
    let baseline_tree = match &task.base {
        Some(own) => commit::tree_of(repo, own)?,
        None => baseline_tree,
    };
    let mut ws =
        crate::git::repo::open_worktree_of(&task.root, repo.common_dir())?.with_object_memory();
    // Into the object memory: nothing durable is written.
    take_private_objects(&ws, task)?;
    let record = stat_record(repo, batch_dir, task);
    let (snap, _, _) = snapshot::snapshot_task(&ws, record.as_ref(), false)?;
    let objects = ws.objects.take_object_memory().unwrap_or_default();
    let mut view = repo.clone().with_object_memory();
    view.objects.set_object_memory(objects);
    let paths = diff::trees(&view, baseline_tree, snap.tree)?;
    let objects = view.objects.take_object_memory().unwrap_or_default();
    if paths.is_empty() && snap.nested_repos.is_empty() && snap.invalid.is_empty() {
        return Ok(None);
    }
    Ok(Some(Preview {
        tree: snap.tree,
        paths,
        objects,
        nested: snap.nested_repos,
        invalid: snap.invalid,
    }))
}

/// Add `objects` to `repo`'s object memory.
pub fn add_objects(repo: &mut gix::Repository, objects: Objects) {
    let mut all = repo.objects.take_object_memory().unwrap_or_default();
    let mut objects = objects;
    all.extend(objects.drain());
    repo.objects.set_object_memory(all);
}
