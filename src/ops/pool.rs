//! prepare's side of the workspace pool (design §3.20): the idle
//! workspaces proven on a thread of their own beside the source's
//! snapshot (`prove`), given to tasks where they fit the baseline, whose
//! index is built once for all of them (`assign`), then claimed and moved
//! to it in parallel once the batch is marked (`take`: a task whose move
//! fails gets a new workspace at the same slot); and, when `workspace.setup`
//! fails, the other workspaces this prepare took from the pool given back
//! to it (`give_back`), so a failing setup costs the workspace it failed
//! in only.
//!
//! Owns: which task gets which idle workspace, and in what order the
//! pool's steps of prepare run.
//! Never: makes a new workspace (`workspace::create_all_filled` does), or
//! proves, moves or removes one itself (`workspace::pool` does).

use std::path::{Path, PathBuf};

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::Batch;
use crate::workspace::pool::{Fit, Proven};
use crate::workspace::Plan;

/// What `assign` decided: per plan, the idle workspace it takes (if any),
/// and the baseline's index they are moved to.
pub(crate) struct Reuse {
    fits: Vec<Option<Fit>>,
    baseline: Option<gix::index::State>,
}

impl Reuse {
    /// No workspace from the pool.
    pub(crate) fn none(n: usize) -> Reuse {
        Reuse {
            fits: (0..n).map(|_| None).collect(),
            baseline: None,
        }
    }
}

/// What the proof of the idle workspaces needs, owned: it runs on a thread
/// of its own.
pub(crate) struct Proof {
    pub common_dir: PathBuf,
    pub state_dir: PathBuf,
    pub base: PathBuf,
    /// The source's working tree (an idle workspace holding it is not taken).
    pub source: PathBuf,
    pub hash: gix::hash::Kind,
}

impl Proof {
    pub(crate) fn of(source: &Source, base: &Path) -> Proof {
        Proof {
            common_dir: source.common_dir.clone(),
            state_dir: source.state_dir(),
            base: base.to_path_buf(),
            source: source.root.clone(),
            hash: source.repo.object_hash(),
        }
    }

    /// Prove up to `want` idle workspaces (`workspace::pool::prove`).
    pub(crate) fn run(&self, want: usize) -> Vec<Proven> {
        crate::workspace::pool::prove(
            &self.common_dir,
            &self.state_dir,
            (&self.base, &self.source),
            want,
            self.hash,
        )
    }
}

/// Give the `proven` idle workspaces to `plans`, in order, where they fit
/// the baseline tree `tree` (those that do not are removed): each taker's
/// plan names its slot from now on, so the batch records where it runs.
pub(crate) fn assign(
    source: &Source,
    plans: &mut [Plan],
    proven: Vec<Proven>,
    tree: gix::ObjectId,
) -> Result<Reuse> {
    if proven.is_empty() {
        return Ok(Reuse::none(plans.len()));
    }
    // The baseline's index, once for every workspace taken.
    let baseline: gix::index::State = source
        .repo
        .index_from_tree(&tree)
        .map_err(|e| Error::git("cannot read the baseline's tree", e))?
        .into();
    let mut reuse = Reuse::none(plans.len());
    let mut next = 0;
    for p in proven {
        if next >= plans.len() {
            break;
        }
        let Some(fit) =
            crate::workspace::pool::fit(&source.common_dir, &source.state_dir(), p, &baseline)
        else {
            continue;
        };
        plans[next].root = fit.root().to_path_buf();
        plans[next].worktree_id = fit.worktree_id();
        reuse.fits[next] = Some(fit);
        next += 1;
    }
    reuse.baseline = Some(baseline);
    Ok(reuse)
}

/// Claim the idle workspaces `reuse` gave to `plans` (in order) and move
/// them to the baseline `commit` (in parallel): per plan, whether it was
/// taken from the pool. One whose move fails is removed (what is left of
/// it, only while ours), and its plan made anew at the same slot by the
/// caller.
pub(crate) fn take(
    source: &Source,
    plans: &[Plan],
    reuse: Reuse,
    commit: gix::ObjectId,
) -> Result<Vec<bool>> {
    let mut reused = vec![false; plans.len()];
    let Reuse { fits, baseline } = reuse;
    let Some(baseline) = baseline else {
        return Ok(reused);
    };
    let (common_dir, state_dir) = (&source.common_dir, source.state_dir());
    let mut todo: Vec<(usize, Fit)> = Vec::new();
    for (i, fit) in fits.into_iter().enumerate() {
        let Some(fit) = fit else { continue };
        if crate::sys::interrupt::interrupted() {
            return Err(Error::interrupted());
        }
        crate::workspace::pool::claim(common_dir, &state_dir, &fit, &plans[i], commit)?;
        todo.push((i, fit));
    }
    fn lost() -> Error {
        Error::state(
            Code::Internal,
            "a thread moving a workspace of the pool stopped unexpectedly",
            "report this bug; prepare is undone",
        )
    }
    let order: Vec<usize> = todo.iter().map(|(i, _)| *i).collect();
    let threads = crate::sys::parallel::threads(todo.len());
    let moved = crate::sys::parallel::map(todo, threads, lost, |(i, fit)| {
        Ok(crate::workspace::pool::move_to(
            common_dir, fit, &plans[i], &baseline,
        ))
    });
    for (i, r) in order.into_iter().zip(moved) {
        match r {
            Ok(Ok(())) => reused[i] = true,
            Ok(Err(crate::workspace::WorkspaceError::Interrupted)) => {
                return Err(Error::interrupted())
            }
            Ok(Err(_)) | Err(_) => {
                // What was moved goes; the task gets a new workspace there.
                let p = &plans[i];
                crate::workspace::remove(common_dir, &p.root, &p.worktree_id)?;
            }
        }
    }
    Ok(reused)
}

/// `workspace.setup` failed in task `failed`'s workspace (design §3.20):
/// give every other workspace this prepare took from the pool back to it,
/// so the prepare's undo removes only the one it failed in (and those it
/// made anew).
pub(crate) fn give_back(source: &Source, b: &Batch, reused: &[bool], failed: Option<usize>) {
    let state_dir = source.state_dir();
    let batch_dir = crate::record::batch::batch_dir(&state_dir, &b.id);
    let (Ok(commit), Ok(tree)) = (
        gix::ObjectId::from_hex(b.baseline.as_bytes()),
        crate::git::commit::tree_of(&source.repo, &b.baseline),
    ) else {
        return;
    };
    let local = b.tasks.iter().enumerate().filter(|(_, t)| !t.remote);
    for ((i, t), &r) in local.zip(reused) {
        if !r || Some(i) == failed {
            continue;
        }
        let stat = crate::record::stat::of_task(&batch_dir, &t.name);
        // Best effort: one that cannot go back is removed with the batch.
        let _ = crate::workspace::pool::give_back(
            &source.common_dir,
            &state_dir,
            t,
            &stat,
            (commit, tree),
        );
    }
}
