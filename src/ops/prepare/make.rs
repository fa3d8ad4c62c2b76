//! Making a prepared batch's workspaces (design §3.1, §3.20): the steps
//! after the marker is written, from the shared branches recorded to the
//! batch completed, and the worktrees themselves (the pool's idle ones
//! first, the others made and given the carried ignored files, then their
//! submodules).
//!
//! Owns: the order of those steps and the checks for a signal between them.
//! Never: decides what is made (the plans and settings are `prepare`'s),
//! or undoes anything (the guard in `prepare` removes the batch).

use super::*;

/// Make everything of a batch whose marker is recorded: the baseline ref,
/// the workspaces and the ignored files they carry (or the scratch copies),
/// then mark the batch complete. On any error (a signal included) the
/// caller removes the whole batch; nothing is undone here.
#[allow(clippy::too_many_arguments)]
pub(super) fn make(
    observer: &dyn Observer,
    source: &Source,
    batch: &mut Batch,
    (plans, reuse): (&[workspace::Plan], crate::ops::pool::Reuse),
    names: &[String],
    settings: &Settings,
    base: &Baseline,
    stat_cache: Option<snapshot::PendingCache>,
) -> Result<Vec<crate::record::batch::CarryStats>> {
    let state_dir = source.state_dir();
    stop()?;
    // The shared branches, tags and stash, config and hooks before any
    // workspace exists (design §3.16); a scratch copy has its own.
    if workspace::Kind::of_batch(batch).shares_git_dir() {
        crate::ops::side_effects::record(source, &batch::batch_dir(&state_dir, &batch.id))?;
    }
    refs::set(&source.repo, &refs::baseline(&batch.id), base.commit, true)?;
    // The source's refreshed stat cache lives with the batch (and goes with it).
    if let Some(cache) = stat_cache {
        cache.keep(&batch::batch_dir(&state_dir, &batch.id));
    }
    stop()?;
    let mut reused = vec![false; plans.len()];
    let carried = {
        let _progress = observer.step(&format!(
            "Checking out {} workspace{}",
            plans.len(),
            if plans.len() == 1 { "" } else { "s" }
        ));
        match &settings.policy {
            Some(policy) => {
                let made = worktrees(source, plans, settings, base, policy, reuse)?;
                reused = made.1;
                made.0
            }
            None => {
                let tasks: Vec<_> = names
                    .iter()
                    .filter(|n| batch.tasks.iter().any(|t| &t.name == *n && !t.remote))
                    .cloned()
                    .zip(plans.iter().map(|p| p.root.clone()))
                    .collect();
                crate::workspace::scratch::create_all(source, &batch.id, &tasks)?
            }
        }
    };
    for (t, c) in batch.tasks.iter_mut().filter(|t| !t.remote).zip(&carried) {
        t.carried = Some(*c);
        // What identifies the folder made (a scratch copy has its marker).
        if settings.policy.is_some() {
            t.folder = workspace::folder_of(&t.root);
        }
    }
    // design §3.20: `workspace.setup` in each new (or reused) workspace,
    // its files in place; a failure (or a signal) undoes the prepare, but
    // the workspaces taken from the pool it did not fail in go back to it.
    if let Err(failed) = crate::ops::setup::run(source, batch, &reused) {
        if let Some(task) = failed.task {
            crate::ops::pool::give_back(source, batch, &reused, Some(task));
        }
        return Err(failed.error);
    }
    stop()?;
    // design §3.14: the baseline goes to the remote last, so a failed push
    // leaves nothing there (and undoes the prepare, as any failure does).
    crate::ops::remote_workers::push_baseline(source, batch)?;
    crate::sys::interrupt::pause("complete-pending");
    stop()?;
    // Complete: written to a temp file, fsync'd and renamed over the marked one.
    batch.preparing = None;
    batch::save(&state_dir, batch)?;
    // A signal that came while it was written still undoes the batch: no
    // worker was given it yet.
    stop()?;
    Ok(carried)
}

/// The worktree workspaces of `plans`: idle ones from the pool first
/// (design §3.20: moved to the baseline, their own ignored files kept),
/// the others made (on btrfs, snapshots of the first made, design §3.17)
/// and given the carried ignored files; then each workspace's submodule
/// worktrees, its own (design §3.15: a snapshot must not share the first
/// one's). What was carried, per plan.
pub(super) fn worktrees(
    source: &Source,
    plans: &[workspace::Plan],
    settings: &Settings,
    base: &Baseline,
    policy: &crate::workspace::carry::Policy,
    reuse: crate::ops::pool::Reuse,
) -> Result<(Vec<crate::record::batch::CarryStats>, Vec<bool>)> {
    let (commit, tree) = (base.commit, base.snap.tree);
    // The idle workspaces given to tasks, claimed and moved to the baseline
    // (where they are, design §3.20).
    let reused = crate::ops::pool::take(source, plans, reuse, commit)?;
    stop()?;
    // The repository folder and the batch folder (the pool's, for
    // workspaces of the pool), through handles, ours and `0700` (design
    // §3.18): nobody else can change what is below them, where the
    // checkout writes by path.
    if let Some(batch_dir) = plans.first().and_then(|p| p.root.parent()) {
        crate::workspace::shared_root::make_batch_dir_at(batch_dir)?;
    }
    let fresh: Vec<workspace::Plan> = plans
        .iter()
        .zip(&reused)
        .filter(|(_, r)| !**r)
        .map(|(p, _)| p.clone())
        .collect();
    let mut made = if fresh.is_empty() {
        Vec::new()
    } else {
        workspace::create_all_filled(
            &source.common_dir,
            commit,
            tree,
            &fresh,
            source.config.snapshots,
            settings.sparse.as_ref(),
            |roots| -> Result<_> {
                stop()?;
                Ok(crate::workspace::carry::carry_ignored(
                    &source.repo,
                    policy,
                    roots,
                )?)
            },
        )?
    }
    .into_iter();
    stop()?;
    for p in plans {
        crate::workspace::submodules::create(
            &source.repo,
            tree,
            &settings.modules,
            &p.root,
            &p.worktree_id,
            &p.lock_reason,
        )?;
    }
    let carried = reused
        .iter()
        .map(|r| match r {
            true => Default::default(),
            false => made.next().unwrap_or_default(),
        })
        .collect();
    Ok((carried, reused))
}
