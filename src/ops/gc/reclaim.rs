//! Reclaiming one stale batch (design §3.4), in steps: what leaves it
//! alone (an interrupted write-back, an unreadable baseline, a process
//! inside), the rescue of its open tasks' work (workspaces and remote
//! submissions), the proposals kept with their patches, then its
//! workspaces, refs and state folder; and the whole removal of a batch
//! whose prepare was killed.
//! Never: removes anything of a batch whose work could not be rescued;
//! changes anything with `dry_run`.

use std::path::PathBuf;

use gix::ObjectId;

use crate::error::{Error, Result};
use crate::git::registration::Registration;
use crate::record::batch::{self, Batch};
use crate::record::kept;
use crate::{git::commit, git::refs, merge::proposal, workspace};

use super::{registration_is_dead, Gc, KeptWorkspace, Rescued, Skipped, StashedWork};
/// What step 1 saved: the rescued work, and the tasks whose workspace
/// must be kept (nested repositories, changed submodules), by task name.
struct Saved {
    rescued: Vec<Rescued>,
    nested: Vec<(String, Vec<gix::bstr::BString>)>,
    submodules: Vec<(String, Vec<gix::bstr::BString>)>,
    /// What the rescue read in each open task's workspace, by task name:
    /// what its removal is proven against (design §3.18).
    read: Vec<(String, workspace::aside::Read)>,
}

/// The paths [`Saved`] lists for `task` (none if it is not listed).
fn of_task(by_task: &[(String, Vec<gix::bstr::BString>)], task: &str) -> Vec<gix::bstr::BString> {
    by_task
        .iter()
        .find(|(name, _)| name == task)
        .map(|(_, paths)| paths.clone())
        .unwrap_or_default()
}

impl Gc<'_> {
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
        self.report.workspaces_removed += r.workspaces;
        self.report.refs_removed += r.refs;
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
            if let Some(left) = crate::ops::remote::end(self.source, b, &remote_seen) {
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

    /// Step 1 for the workspaces: every open task's work saved in its
    /// proposal (previewed with `dry_run`), or why it could not be.
    fn rescue_workspaces(
        &mut self,
        b: &Batch,
        baseline_tree: ObjectId,
    ) -> std::result::Result<Saved, String> {
        // Only the drivers its prepare recorded run (design §3.18).
        crate::git::drivers::allow(b.drivers.as_ref());
        let mut rescued = Vec::new();
        let mut nested: Vec<(String, Vec<gix::bstr::BString>)> = Vec::new();
        let mut submodules: Vec<(String, Vec<gix::bstr::BString>)> = Vec::new();
        let mut read: Vec<(String, workspace::aside::Read)> = Vec::new();
        for task in b.open_tasks() {
            // Read at the real path the identity check found.
            let workspace::Identity::Ours { real, .. } =
                workspace::identify(&self.source.common_dir, task)
            else {
                continue;
            };
            let mut t = task.clone();
            t.root = real;
            let t = &t;
            let ref_name = refs::proposal(&b.id, &t.name);
            let before = refs::get(&self.source.repo, &ref_name)
                .ok()
                .flatten()
                .and_then(|c| commit::tree_of(&self.source.repo, &c.to_string()).ok());
            let saved = if self.dry_run {
                let batch_dir = crate::record::batch::batch_dir(&self.source.state_dir(), &b.id);
                proposal::preview(&self.source.repo, &batch_dir, t, baseline_tree)
                    .map(|r| r.map(|p| (p.tree, p.paths.len(), p.nested, invalid_of(&p.invalid))))
                    .map_err(Error::from)
            } else {
                proposal::record(self.source, b, t, baseline_tree)
                    .map(|r| r.map(|p| (p.tree, p.paths.len(), p.nested, invalid_of(&p.invalid))))
                    .map_err(Error::from)
            };
            // What was read: the snapshot's tree, or (no difference) the
            // task's base.
            match &saved {
                Ok(Some((tree, _, _, invalid))) => read.push((
                    t.name.clone(),
                    workspace::aside::Read {
                        tree: *tree,
                        invalid: invalid.clone(),
                        stat: Some(crate::ops::teardown::stat_record(self.source, b, t)),
                    },
                )),
                Ok(None) => {
                    if let Ok((_, tree)) = proposal::base_of(&self.source.repo, b, t, baseline_tree)
                    {
                        let stat = crate::ops::teardown::stat_record(self.source, b, t);
                        read.push((
                            t.name.clone(),
                            workspace::aside::Read::from(tree).with_stat(stat),
                        ));
                    }
                }
                Err(_) => {}
            }
            if let Ok(Some((_, _, repos, _))) = &saved {
                if !repos.is_empty() {
                    nested.push((t.name.clone(), repos.clone()));
                }
            }
            // Work in a submodule cannot be saved in a proposal either
            // (design §3.15): its workspace is kept.
            match crate::workspace::submodules::changed(&self.source.common_dir, &t.root) {
                Ok(subs) if !subs.is_empty() => submodules.push((t.name.clone(), subs)),
                Ok(_) => {}
                Err(e) => {
                    return Err(kept_whole(
                        b,
                        "the submodules",
                        &t.name,
                        "read",
                        Error::from(e),
                    ))
                }
            }
            match saved {
                Ok(Some((tree, paths, _, _))) if before != Some(tree) && paths > 0 => {
                    rescued.push(Rescued {
                        batch: b.id.clone(),
                        task: t.name.clone(),
                        ref_name,
                        patch: kept::kept_dir(&self.state_dir)
                            .join(&b.id)
                            .join(format!("{}.patch", t.name)),
                        paths,
                    })
                }
                Ok(_) => {}
                Err(e) => return Err(kept_whole(b, "the work", &t.name, "saved", e)),
            }
        }
        Ok(Saved {
            rescued,
            nested,
            submodules,
            read,
        })
    }

    /// Step 1 for the remote tasks: what their workers submitted, fetched
    /// and added to `rescued`; returns what was fetched (what the batch's
    /// end may delete there).
    fn rescue_remote(
        &mut self,
        b: &Batch,
        baseline_tree: ObjectId,
        rescued: &mut Vec<Rescued>,
    ) -> Result<std::collections::HashMap<String, ObjectId>> {
        let mut remote_seen = std::collections::HashMap::new();
        let remote_open: Vec<&str> = b
            .open_tasks()
            .filter(|t| t.remote)
            .map(|t| t.name.as_str())
            .collect();
        if !remote_open.is_empty() {
            let found = if self.dry_run {
                crate::ops::remote::submitted(self.source, b).map(|mut f| {
                    f.retain(|t, _| remote_open.contains(&t.as_str()));
                    f
                })
            } else {
                // A proposal git would not fetch is rescued by no one (design
                // §3.18): the batch's end deletes it there, as listed.
                crate::ops::remote::fetch_proposals(self.source, b, &remote_open, true).map(|f| {
                    remote_seen.extend(f.unfetchable.into_iter().map(|(t, u)| (t, u.listed)));
                    f.found
                })
            };
            // A remote that cannot be asked keeps what was submitted under
            // its refs there: the batch goes here, and the refs left on the
            // remote are reported (`remote::end`, below), never lost.
            let found = found.unwrap_or_default();
            // What was fetched is what the batch's end may delete there
            // (design §3.14 "Remote refs").
            remote_seen.extend(found.iter().map(|(t, id)| (t.clone(), *id)));
            for (task, commit) in found {
                let ref_name = refs::proposal(&b.id, &task);
                let paths = match b.tasks.iter().find(|t| t.name == task) {
                    Some(t) if !self.dry_run => {
                        let (_, base_tree) =
                            proposal::base_of(&self.source.repo, b, t, baseline_tree)?;
                        let patch = proposal::patch_path(self.source, b, &task);
                        match crate::ops::remote::received(
                            &self.source.repo,
                            b,
                            t,
                            commit,
                            base_tree,
                        ) {
                            Ok(crate::ops::remote::Received::Changes(tree, paths)) => {
                                crate::merge::patch::write_patch(
                                    &self.source.repo,
                                    base_tree,
                                    tree,
                                    &patch,
                                )?;
                                paths.len()
                            }
                            // A path bomb is kept as its ref alone, with no
                            // patch (design §3.18 "Limits").
                            Ok(crate::ops::remote::Received::TooMany(..)) => {
                                crate::sys::fs::remove_file(&patch).map_err(Error::from)?;
                                0
                            }
                            _ => 0,
                        }
                    }
                    _ => 0,
                };
                rescued.push(Rescued {
                    batch: b.id.clone(),
                    task: task.clone(),
                    ref_name,
                    patch: kept::kept_dir(&self.state_dir)
                        .join(&b.id)
                        .join(format!("{task}.patch")),
                    paths,
                });
            }
        }
        Ok(remote_seen)
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

/// The paths git refuses that a snapshot left out.
fn invalid_of(invalid: &[crate::git::validate::Invalid]) -> Vec<gix::bstr::BString> {
    invalid.iter().map(|i| i.path.clone()).collect()
}

/// Why a batch is left whole: `what` of task `task` could not be `done`.
fn kept_whole(b: &Batch, what: &str, task: &str, done: &str, e: Error) -> String {
    format!(
        "batch {}: {what} of task {task} could not be {done} ({}); nothing of this batch was removed",
        b.short(),
        e.message
    )
}
