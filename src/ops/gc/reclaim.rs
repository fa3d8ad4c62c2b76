//! Reclaiming one stale batch (design §3.4), in steps: what leaves it
//! alone (an interrupted write-back, an unreadable baseline, a process
//! inside), the rescue of its open tasks' work (workspaces and remote
//! submissions), the proposals kept with their patches, then its
//! workspaces, refs and state folder; and the whole removal of a batch
//! whose prepare was killed.
//! Never: removes anything of a batch whose work could not be rescued;
//! changes anything with `dry_run`.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::error::{Error, Result};
use crate::git::registration::Registration;
use crate::record::batch::{self, Batch};
use crate::record::kept;
use crate::{git::commit, git::refs, merge::proposal, workspace};

use super::rescue::Saved;
use super::{registration_is_dead, Gc, KeptWorkspace, Rescued, Skipped, StashedWork};
/// The paths [`Saved`] lists for `task` (none if it is not listed).
fn of_task(by_task: &[(String, Vec<gix::bstr::BString>)], task: &str) -> Vec<gix::bstr::BString> {
    by_task
        .iter()
        .find(|(name, _)| name == task)
        .map(|(_, paths)| paths.clone())
        .unwrap_or_default()
}

impl Gc<'_> {
    /// Batch `b` reclaimed, when it is stale and can be (`all`: every
    /// readable batch); `false` when it stays.
    pub(super) fn reclaimed(&mut self, b: &Batch, all: &[Batch]) -> bool {
        // A batch whose prepare never completed: removed whole once its
        // process is gone, whatever its lease says, and never rescued (no
        // worker was given it); left alone while its prepare still runs
        // (design §3.15).
        match crate::ops::preparing::progress(b) {
            Some(crate::ops::preparing::Progress::Interrupted) => {
                return match self.reclaim_incomplete(b) {
                    Ok(()) => {
                        self.report.batches.push(b.id.clone());
                        self.report.incomplete.push(b.id.clone());
                        true
                    }
                    Err(e) => {
                        self.report.skipped.push(Skipped {
                            batch: b.id.clone(),
                            message: format!(
                                "batch {} (its prepare was killed): removing it stopped half-way: {} ({})",
                                b.short(),
                                e.message,
                                e.help
                            ),
                        });
                        false
                    }
                };
            }
            Some(crate::ops::preparing::Progress::Preparing) => return false,
            None => {}
        }
        if batch::batch_dir(&self.state_dir, &b.id)
            .join(batch::JOURNAL_FILE)
            .exists()
        {
            self.report.pending_writebacks.push(b.id.clone());
        }
        if !b.lease.state().is_stale() {
            return false;
        }
        // An apply verifies it now, without the lock (design §3.10).
        if let Err(e) = crate::record::busy::refuse_if_busy(&self.state_dir, b) {
            self.report.skipped.push(Skipped {
                batch: b.id.clone(),
                message: e.to_string(),
            });
            return false;
        }
        match self.reclaim_batch(b, all) {
            Ok(true) => {
                self.report.batches.push(b.id.clone());
                true
            }
            Ok(false) => {
                // Left alone: its stash entries are the batch's still.
                self.report.stashed.retain(|w| w.batch != b.id);
                false
            }
            // Its work was rescued before anything was removed; what is
            // left stays owned by the batch until the next gc.
            Err(e) => {
                self.report.skipped.push(Skipped {
                    batch: b.id.clone(),
                    message: format!(
                        "batch {}: reclaiming it stopped half-way: {} ({})",
                        b.short(),
                        e.message,
                        e.help
                    ),
                });
                false
            }
        }
    }

    pub(super) fn registration(&self, id: &str) -> PathBuf {
        Registration::new(&self.source.common_dir, id)
            .path()
            .to_path_buf()
    }

    /// Remove a batch whose prepare was killed, whole (see `preparing`).
    pub(super) fn reclaim_incomplete(&mut self, b: &Batch) -> Result<()> {
        for name in refs::list_batch(&self.source.repo, &b.id)? {
            self.handled_refs.insert(name);
        }
        for t in &b.tasks {
            self.handled_roots.insert(t.root.clone());
            self.handled_regs.insert(t.worktree_id.clone());
        }
        let r = crate::ops::preparing::remove_whole(self.source, b, self.dry_run)?;
        self.report
            .stopped
            .extend(r.stopped.iter().map(|p| super::Stopped {
                batch: b.id.clone(),
                process: p.clone(),
            }));
        self.report.workspaces_removed += r.workspaces;
        self.report.refs_removed += r.refs;
        self.report.registrations_removed += r.registrations;
        self.report.bytes_freed += r.bytes;
        self.report.left_alone.extend(r.left_alone);
        for u in r.unsafe_folders {
            self.refused(u);
        }
        if !self.dry_run {
            for t in &b.tasks {
                workspace::remove_empty_parents_of(t);
            }
        }
        Ok(())
    }

    /// Reclaim one stale batch; `false` when it was left alone (reported in
    /// `skipped`). `others` are every readable batch (for workspaces that
    /// are the source of another one).
    pub(super) fn reclaim_batch(&mut self, b: &Batch, others: &[Batch]) -> Result<bool> {
        let baseline_tree = match self.left_alone_why(b) {
            Ok(t) => t,
            Err(message) => return Ok(self.skip(b, message)),
        };
        // 1. Rescue: nothing is removed unless every open task's work is
        // saved. A nested repository cannot be saved in a proposal: its
        // workspace is kept (step 3), the rest of its work rescued.
        let mut saved = match self.rescue_workspaces(b, baseline_tree) {
            Ok(s) => s,
            Err(message) => return Ok(self.skip(b, message)),
        };
        // Remote tasks (design §3.14): what their workers submitted is
        // rescued like a workspace's work.
        let remote_seen = self.rescue_remote(b, baseline_tree, &mut saved.rescued)?;

        // 2. Keep the proposal refs that hold work, with their patches.
        let kept = self.keep_proposals(b, &saved.rescued)?;

        // 3. Workspaces and their registrations. A workspace that is the
        // source of another open batch stays as an ordinary worktree.
        // (A remote task has no workspace here, design §3.14.) One written
        // into since the rescue read it is kept, and so is the rest of the
        // batch (design §3.18): what was removed was rescued first.
        for t in b.tasks.iter().filter(|t| !t.remote) {
            if let Some(message) = self.reclaim_workspace(b, t, others, &saved)? {
                self.report.rescued.extend(saved.rescued);
                self.report.refs_kept.extend(kept);
                return Ok(self.skip(b, message));
            }
        }

        // 4. Refs: everything of the batch but the kept proposals (a
        // discarded task's kept proposal runs on its own keep-failed clock,
        // see `leftover_refs`).
        for (name, removed) in
            crate::ops::teardown::remove_refs(self.source, b, &kept, self.dry_run)?
        {
            if removed {
                self.report.refs_removed += 1;
            }
            self.handled_refs.insert(name);
        }

        // 5. The state folder (patches of kept refs were moved out).
        self.report.bytes_freed +=
            crate::sys::fs::tree_size(&batch::batch_dir(&self.state_dir, &b.id));
        if !self.dry_run {
            if let Some(left) = crate::ops::remote_workers::end(self.source, b, &remote_seen) {
                self.report.remote_left.push(left);
            }
            crate::ops::teardown::remove_state(self.source, b)?;
        }
        self.report.rescued.extend(saved.rescued);
        self.report.refs_kept.extend(kept);
        Ok(true)
    }

    /// Leave the batch alone, reported in `skipped` with `message`: `false`.
    fn skip(&mut self, b: &Batch, message: String) -> bool {
        self.report.skipped.push(Skipped {
            batch: b.id.clone(),
            message,
        });
        false
    }

    /// Why the batch is left alone, if it is: an interrupted write-back, an
    /// unreadable baseline, a process inside a workspace; otherwise its
    /// baseline's tree. Work a workspace put in the stash is noted first.
    fn left_alone_why(&mut self, b: &Batch) -> std::result::Result<ObjectId, String> {
        let dir = batch::batch_dir(&self.state_dir, &b.id);
        if dir.join(batch::JOURNAL_FILE).exists() {
            return Err(format!(
                "batch {} still records an interrupted write-back; run `git delegate status` and `git delegate gc` again once its process is gone",
                b.short()
            ));
        }
        // Work a workspace put in the stash stays there: named, not touched
        // (read before the workspaces go: their HEADs tell who made it).
        if let Ok(effects) = crate::ops::side_effects::find(self.source, b) {
            self.report.stashed.extend(
                effects
                    .iter()
                    .filter(|e| e.change == crate::ops::side_effects::Change::Added)
                    .map(|e| StashedWork {
                        batch: b.id.clone(),
                        task: e.task.and_then(|t| b.tasks.get(t)).map(|t| t.name.clone()),
                        stash: e.display_name(),
                    }),
            );
        }
        let baseline_tree = match commit::tree_of(&self.source.repo, &b.baseline) {
            Ok(t) => t,
            Err(e) => {
                return Err(format!(
                    "batch {}: its baseline cannot be read ({}), so its work cannot be rescued; left alone",
                    b.short(),
                    crate::error::Error::from(e).message
                ))
            }
        };

        // A process still working in a workspace could write after the
        // rescue: leave the whole batch until it is gone.
        // Only in folders that are the workspaces prepare made: a folder
        // swapped in is none of the batch's business.
        for t in &b.tasks {
            let workspace::Identity::Ours { real, .. } =
                workspace::identify(&self.source.common_dir, t)
            else {
                continue;
            };
            // Ancestors count here (see `quiesce`'s header).
            let pids = crate::sys::quiesce::find_users(std::slice::from_ref(&real))
                .into_iter()
                .next()
                .unwrap_or_default();
            if !pids.is_empty() {
                let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
                return Err(format!(
                    "batch {}: processes still run inside the workspace of task {} (pid {}); stop them, or `{}`",
                    b.short(),
                    t.name,
                    pids.join(", "),
                    crate::ops::renew::command(b.short(), b.lease.state())
                ));
            }
        }

        // A workspace moved away inside the workspace folder, with its work
        // (a task folder renamed, its batch folder moved aside): never taken
        // for "nothing to rescue" (design §3.18).
        if let Some((task, found)) = crate::ops::teardown::moved_work(self.source, b, false)
            .into_iter()
            .next()
        {
            let root = b
                .task_named(&task)
                .map(|t| t.root.clone())
                .unwrap_or_default();
            for f in &found {
                if !self.report.left_alone.contains(f) {
                    self.report.left_alone.push(f.clone());
                }
                self.handled_roots.insert(f.clone());
            }
            let list: Vec<String> = found.iter().map(|f| f.display().to_string()).collect();
            return Err(format!(
                "batch {}: the workspace of task {task} is not at {}, but {} holds a workspace of it, with its work; left alone: move it back (`mv {} {}`) and apply it, or end the batch with `git delegate drop {} --force` (which leaves that folder alone)",
                b.short(),
                root.display(),
                list.join(", "),
                crate::sys::paths::shell_quote(&found[0].to_string_lossy()),
                crate::sys::paths::shell_quote(&root.to_string_lossy()),
                b.short()
            ));
        }
        Ok(baseline_tree)
    }

    /// Step 2: the proposal refs that hold work, kept with their patches
    /// (their names).
    fn keep_proposals(&mut self, b: &Batch, rescued: &[Rescued]) -> Result<Vec<String>> {
        let mut kept = Vec::new();
        for t in b.open_tasks() {
            let name = refs::proposal(&b.id, &t.name);
            let exists = refs::get(&self.source.repo, &name)?.is_some();
            let would_exist = rescued.iter().any(|r| r.ref_name == name);
            if !(exists || would_exist) {
                continue;
            }
            if !self.dry_run {
                self.keep_patch(b, &t.name)?;
                if !would_exist {
                    kept::redate(&self.source.repo, &name)?;
                }
            }
            self.handled_refs.insert(name.clone());
            kept.push(name);
        }
        Ok(kept)
    }

    /// Step 3 for one task: its workspace removed (once proven to hold
    /// what the rescue read, design §3.18), or kept as an ordinary
    /// worktree, or left alone; its registration removed when dead. `Some`:
    /// why the batch stays (the workspace was written into since it was
    /// read, or what was read is unknown), the workspace kept.
    fn reclaim_workspace(
        &mut self,
        b: &Batch,
        t: &batch::Task,
        others: &[Batch],
        saved: &Saved,
    ) -> Result<Option<String>> {
        let reg = self.registration(&t.worktree_id);
        let health = workspace::health(&self.source.common_dir, t);
        let hosted = if health == workspace::Health::Ours {
            workspace::hosted_batches(others, t, &b.id)
        } else {
            Vec::new()
        };
        let repos = of_task(&saved.nested, &t.name);
        let subs = of_task(&saved.submodules, &t.name);
        if health == workspace::Health::Ours
            && (!hosted.is_empty() || !repos.is_empty() || !subs.is_empty())
        {
            // Kept as an ordinary worktree: registered (so no later gc
            // takes the folder) and unlocked, as `apply --keep` leaves one.
            if !self.dry_run {
                workspace::release(&self.source.common_dir, &t.worktree_id)?;
            }
            if !repos.is_empty() || !subs.is_empty() {
                self.report.left_alone.push(t.root.clone());
            }
            self.report.kept_workspaces.push(KeptWorkspace {
                batch: b.id.clone(),
                task: t.name.clone(),
                root: t.root.clone(),
                nested: repos,
                batches: hosted,
                changed_submodules: subs,
            });
            self.handled_roots.insert(t.root.clone());
            self.handled_regs.insert(t.worktree_id.clone());
            return Ok(None);
        }
        // The dry run counts one the real run puts back first where it waits.
        let waiting = match health {
            workspace::Health::Missing => self.waiting_aside(&t.root).map(Path::to_path_buf),
            _ => None,
        };
        if let Some(aside) = waiting {
            self.report.bytes_freed +=
                crate::workspace::shared_root::tree_size(&aside) + crate::sys::fs::tree_size(&reg);
            self.report.workspaces_removed += 1;
            self.handled_roots.insert(t.root.clone());
            self.handled_regs.insert(t.worktree_id.clone());
            return Ok(None);
        }
        match health {
            workspace::Health::Ours => {
                let bytes = crate::workspace::shared_root::tree_size(&t.root)
                    + crate::sys::fs::tree_size(&reg);
                if !self.dry_run {
                    if let Some(why) = self.remove_proven(b, t, saved)? {
                        self.handled_roots.insert(t.root.clone());
                        self.handled_regs.insert(t.worktree_id.clone());
                        return Ok(Some(why));
                    }
                }
                self.report.bytes_freed += bytes;
                self.report.workspaces_removed += 1;
                self.handled_roots.insert(t.root.clone());
                self.handled_regs.insert(t.worktree_id.clone());
            }
            health => {
                if health == workspace::Health::Foreign {
                    self.report.left_alone.push(t.root.clone());
                    self.handled_roots.insert(t.root.clone());
                    if let Some(r) = workspace::refusal(t) {
                        self.refused(r);
                    }
                }
                // The registration goes only when it still names this
                // task's folder (or nothing that exists): a worktree the
                // user moved elsewhere keeps its registration.
                if reg.symlink_metadata().is_ok() && registration_is_dead(&reg, &t.root) {
                    self.report.bytes_freed += crate::sys::fs::tree_size(&reg);
                    if !self.dry_run {
                        crate::sys::fs::remove_all(&reg)?;
                    }
                    // Its folder was gone (or is not ours): a registration
                    // removed, not a workspace.
                    self.report.registrations_removed += 1;
                }
                self.handled_regs.insert(t.worktree_id.clone());
            }
        }
        if !self.dry_run {
            workspace::remove_empty_parents_of(t);
        }
        Ok(None)
    }

    /// Remove a stale task's workspace that is ours once proven to hold
    /// what was read in it: for an open task, what the rescue read; for a
    /// closed one (an apply interrupted during its clean-up left it), what
    /// it ended with (design §3.18). `Some`: why it was kept instead.
    fn remove_proven(
        &mut self,
        b: &Batch,
        t: &batch::Task,
        saved: &Saved,
    ) -> Result<Option<String>> {
        let read = match t.state.is_open() {
            true => saved
                .read
                .iter()
                .find(|(name, _)| name == &t.name)
                .map(|(_, r)| r.clone()),
            false => crate::ops::teardown::read_tree_of_closed(self.source, b, t).map(Into::into),
        };
        let Some(read) = read else {
            return Ok(Some(format!(
                "batch {}: what the workspace of task {} holds cannot be told, so it is kept; run `git delegate apply {}` (it lands or keeps the work), then `git delegate gc` again",
                b.short(),
                t.name,
                b.short()
            )));
        };
        let kept = |aside: Option<std::path::PathBuf>| {
            format!(
                "batch {}: the workspace of task {} was written into after gc read it (a worker still writes there by its path), so it is kept, and the batch with it{}; once nothing writes there any more, run `git delegate gc` again (or apply the work with `git delegate apply {}`)",
                b.short(),
                t.name,
                match aside {
                    Some(p) => format!(
                        " (it could not go back to its place, something is there now, and waits at {})",
                        p.display()
                    ),
                    None => String::new(),
                },
                b.short()
            )
        };
        Ok(
            match workspace::remove_proven(&self.source.common_dir, t, &read, true)? {
                workspace::Proof::Changed => Some(kept(None)),
                workspace::Proof::LeftAside(p) => Some(kept(Some(p))),
                _ => None,
            },
        )
    }

    /// Move a task's patch out of the batch's state folder, so it outlives it.
    pub(super) fn keep_patch(&self, b: &Batch, task: &str) -> Result<()> {
        let from = proposal::patch_path(self.source, b, task);
        if from.symlink_metadata().is_err() {
            return Ok(());
        }
        let dir = kept::kept_dir(&self.state_dir).join(&b.id);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let to = dir.join(format!("{task}.patch"));
        std::fs::rename(&from, &to)
            .map_err(|e| Error::io(format!("cannot move {}", from.display()), e))?;
        crate::sys::fs::sync_dir(&dir);
        Ok(())
    }
}
