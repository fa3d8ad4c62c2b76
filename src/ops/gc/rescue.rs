//! Step 1 of reclaiming a stale batch (design §3.4): the rescue of its
//! open tasks' work, from their workspaces (each saved in its proposal)
//! and from the remote (what their workers submitted, fetched).
//!
//! Owns: what the rescue saved (`Saved`: the work, the workspaces that
//! must be kept, what it read in each, which their removal is proven
//! against).
//! Never: removes anything (`reclaim` does, after); changes anything with
//! `dry_run`.

use gix::ObjectId;

use crate::error::{Error, Result};
use crate::record::batch::Batch;
use crate::record::kept;
use crate::{git::commit, git::refs, merge::proposal, workspace};

use super::{Gc, Rescued};

/// What step 1 saved: the rescued work, and the tasks whose workspace
/// must be kept (nested repositories, changed submodules), by task name.
pub(super) struct Saved {
    pub(super) rescued: Vec<Rescued>,
    pub(super) nested: Vec<(String, Vec<gix::bstr::BString>)>,
    pub(super) submodules: Vec<(String, Vec<gix::bstr::BString>)>,
    /// What the rescue read in each open task's workspace, by task name:
    /// what its removal is proven against (design §3.18).
    pub(super) read: Vec<(String, workspace::aside::Read)>,
}

impl Gc<'_> {
    /// Step 1 for the workspaces: every open task's work saved in its
    /// proposal (previewed with `dry_run`), or why it could not be.
    pub(super) fn rescue_workspaces(
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
            let real = match workspace::identify(&self.source.common_dir, task) {
                workspace::Identity::Ours { real, .. } => real,
                // The dry run reads one the real run puts back first where it waits.
                _ => match self.waiting_aside(&task.root) {
                    Some(aside) => aside.to_path_buf(),
                    None => continue,
                },
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
                Ok(None) => read.extend(self.base_read(b, t, baseline_tree)),
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
                        patch: Some(
                            kept::kept_dir(&self.state_dir)
                                .join(&b.id)
                                .join(format!("{}.patch", t.name)),
                        ),
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

    /// What the rescue read of task `t` whose workspace holds no
    /// difference: its base (none when that cannot be read).
    fn base_read(
        &self,
        b: &Batch,
        t: &crate::record::batch::Task,
        baseline_tree: ObjectId,
    ) -> Option<(String, workspace::aside::Read)> {
        let (_, tree) = proposal::base_of(&self.source.repo, b, t, baseline_tree).ok()?;
        let stat = crate::ops::teardown::stat_record(self.source, b, t);
        Some((
            t.name.clone(),
            workspace::aside::Read::from(tree).with_stat(stat),
        ))
    }

    /// Step 1 for the remote tasks: what their workers submitted, fetched
    /// and added to `rescued`; returns what was fetched (what the batch's
    /// end may delete there).
    pub(super) fn rescue_remote(
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
                crate::ops::remote_workers::submitted(self.source, b).map(|mut f| {
                    f.retain(|t, _| remote_open.contains(&t.as_str()));
                    f
                })
            } else {
                // A proposal git would not fetch is rescued by no one (design
                // §3.18): the batch's end deletes it there, as listed.
                crate::ops::remote_workers::fetch_proposals(self.source, b, &remote_open, true).map(
                    |f| {
                        remote_seen.extend(f.unfetchable.into_iter().map(|(t, u)| (t, u.listed)));
                        f.found
                    },
                )
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
                // Whether a patch is (or, dry run, would be) written.
                let mut patched = true;
                let paths = match b.tasks.iter().find(|t| t.name == task) {
                    Some(t) if !self.dry_run => {
                        let (_, base_tree) =
                            proposal::base_of(&self.source.repo, b, t, baseline_tree)?;
                        let patch = proposal::patch_path(self.source, b, &task);
                        match crate::ops::remote_workers::received(
                            &self.source.repo,
                            b,
                            t,
                            commit,
                            base_tree,
                        ) {
                            Ok(crate::ops::remote_workers::Received::Changes(tree, paths)) => {
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
                            Ok(crate::ops::remote_workers::Received::TooMany(..)) => {
                                crate::sys::fs::remove_file(&patch).map_err(Error::from)?;
                                patched = false;
                                0
                            }
                            _ => {
                                patched = patch.symlink_metadata().is_ok();
                                0
                            }
                        }
                    }
                    _ => 0,
                };
                rescued.push(Rescued {
                    batch: b.id.clone(),
                    task: task.clone(),
                    ref_name,
                    patch: patched.then(|| {
                        kept::kept_dir(&self.state_dir)
                            .join(&b.id)
                            .join(format!("{task}.patch"))
                    }),
                    paths,
                });
            }
        }
        Ok(remote_seen)
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
