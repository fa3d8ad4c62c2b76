//! Removing a batch whose `batch.toml` cannot be read (`drop BATCH
//! --force`): its workspaces' work rescued first, as gc does, with a
//! one-task stand-in record for each.
//! Never: removes a workspace whose work could not be rescued, or a folder
//! that is not one prepare made.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::{read_gitdir_file, Rescued};
use crate::error::{Code, Error, Result};
use crate::git::registration::{self, Registration};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch};
use crate::record::kept;
use crate::{git::commit, git::refs, merge::proposal, workspace};
/// What [`remove_corrupt`] did.
#[derive(Debug, Default)]
pub struct CorruptRemoval {
    pub workspaces_removed: usize,
    /// Workspace folders left in place: no longer ours, or their work could
    /// not be saved (then unlocked, an ordinary worktree of the user's).
    pub left_alone: Vec<PathBuf>,
    pub rescued: Vec<Rescued>,
    pub refs_removed: usize,
    /// Proposal refs kept for `gc.keep-failed` (rescued now, or recorded before).
    pub refs_kept: Vec<String>,
    /// Folders below the workspace root refused (design §3.18), above or
    /// at workspaces left alone.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
}

/// Remove a batch whose `batch.toml` cannot be read (`drop ID --force`).
/// Without its record, what is the batch's is proven otherwise: its id is
/// the folder name; its workspaces are the registrations
/// `delegate-<short>-<task>` that prepare locked with the reason
/// `git-delegate batch <id> task <task>`, whose folder's `.git` names them
/// back; its refs are those under `refs/pi-delegate/batches/<id>/`. Each
/// workspace's changes against the baseline ref are saved as a proposal
/// ref and patch (kept for `gc.keep-failed`, like a rescue) before the
/// workspace goes; one whose work cannot be saved is unlocked and left in
/// place. Proposal refs recorded before are kept too. The caller holds the
/// repository lock.
pub fn remove_corrupt(source: &Source, id: &str) -> Result<CorruptRemoval> {
    let mut out = CorruptRemoval::default();
    let repo = &source.repo;
    let state_dir = source.state_dir();
    let kept = kept::kept_dir(&state_dir).join(id);
    let baseline = refs::get(repo, &refs::baseline(id))?;
    let baseline_tree = baseline.and_then(|c| commit::tree_of(repo, &c.to_string()).ok());

    // 1. Workspaces: rescue, then remove.
    let regs = registrations(source, id);
    let mut rescued_tasks: HashSet<String> = HashSet::new();
    for (wid, task) in regs {
        let reg = Registration::new(&source.common_dir, &wid);
        let root = read_gitdir_file(&reg.gitdir_file())
            .map(|t| reg.path().join(t))
            .and_then(|t| t.parent().map(Path::to_path_buf));
        let Some(root) = root else {
            // No folder named: nothing to rescue, only the registration.
            crate::sys::fs::remove_all(reg.path())?;
            continue;
        };
        // Without batch.toml there is no recorded identity: the check falls
        // back to "not a symlink, at its real path, its .git ours".
        let probe = stand_in(
            source,
            id,
            gix::ObjectId::null(gix::hash::Kind::Sha1),
            &task,
            &root,
            &wid,
        );
        if workspace::health(&source.common_dir, &probe.tasks[0]) == workspace::Health::Ours {
            let saved = match (baseline, baseline_tree) {
                (Some(commit), Some(tree)) => {
                    let b = stand_in(source, id, commit, &task, &root, &wid);
                    std::fs::create_dir_all(&kept)
                        .map_err(|e| Error::io(format!("cannot create {}", kept.display()), e))
                        .and_then(|()| {
                            let p = proposal::record_deferred(repo, &kept, &b, &b.tasks[0], tree)?;
                            Ok(p.map(|p| p.with_patch(repo)).transpose()?)
                        })
                }
                _ => Err(Error::state(
                    Code::BaselineRefMissing,
                    "the baseline is gone",
                    "",
                )),
            };
            match saved {
                Ok(Some(p)) => {
                    rescued_tasks.insert(task.clone());
                    out.refs_kept.push(p.ref_name.clone());
                    out.rescued.push(Rescued {
                        batch: id.to_string(),
                        task: task.clone(),
                        ref_name: p.ref_name,
                        patch: Some(p.patch),
                        paths: p.paths.len(),
                    });
                }
                Ok(None) => {}
                Err(_) => {
                    // Never lose work: the folder stays, as an ordinary
                    // (unlocked) worktree the user can inspect and remove.
                    workspace::release(&source.common_dir, &wid)?;
                    out.left_alone.push(root);
                    continue;
                }
            }
        }
        match workspace::remove(&source.common_dir, &root, &wid)? {
            workspace::Removal::Removed => out.workspaces_removed += 1,
            workspace::Removal::Missing => {}
            workspace::Removal::Foreign => {
                if let Some(r) = workspace::refusal(&probe.tasks[0]) {
                    crate::workspace::shared_root::note(&mut out.unsafe_folders, r);
                }
                out.left_alone.push(root)
            }
        }
    }

    // 2. Refs: proposals are kept (with their patches), the rest goes.
    keep_proposals(source, id, &kept, &rescued_tasks, &mut out)?;
    crate::sys::fs::sync_dir(&kept);
    // Folders made for patches that were not needed (fails when not empty).
    let _ = std::fs::remove_dir(&kept);
    let _ = std::fs::remove_dir(kept::kept_dir(&state_dir));

    // 3. The state folder.
    batch::remove_state(&state_dir, id)?;
    Ok(out)
}

/// The registrations of batch `id`'s workspaces, as (worktree id, task),
/// sorted.
fn registrations(source: &Source, id: &str) -> Vec<(String, String)> {
    let reg_prefix = format!("delegate-{}-", batch::short(id));
    let regs_dir = registration::dir(&source.common_dir);
    let mut regs: Vec<(String, String)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&regs_dir) {
        for e in rd.flatten() {
            let wid = e.file_name().to_string_lossy().into_owned();
            let Some(task) = wid.strip_prefix(&reg_prefix) else {
                continue;
            };
            if Registration::at(e.path()).is_ours_for(id, task) {
                regs.push((wid.clone(), task.to_string()));
            }
        }
    }
    regs.sort();
    regs
}

/// Step 2: the batch's refs. Proposals are kept (with their patches, but
/// those of `rescued_tasks`, kept already), the rest goes.
fn keep_proposals(
    source: &Source,
    id: &str,
    kept: &Path,
    rescued_tasks: &HashSet<String>,
    out: &mut CorruptRemoval,
) -> Result<()> {
    let repo = &source.repo;
    let state_dir = source.state_dir();
    let dir = batch::batch_dir(&state_dir, id);
    for name in refs::list_batch(repo, id)? {
        let task = name
            .strip_prefix(&format!("{}batches/{id}/tasks/", refs::PREFIX))
            .and_then(|t| t.strip_suffix("/proposal"));
        match task {
            Some(task) => {
                if rescued_tasks.contains(task) {
                    continue;
                }
                let from = dir.join(format!("{task}.patch"));
                let to = kept.join(format!("{task}.patch"));
                if to.symlink_metadata().is_err() {
                    // Recorded by an apply that kept it for the batch: the
                    // keep-failed clock starts now.
                    kept::redate(repo, &name)?;
                    if from.is_file() {
                        std::fs::create_dir_all(kept).map_err(|e| {
                            Error::io(format!("cannot create {}", kept.display()), e)
                        })?;
                        std::fs::rename(&from, &to)
                            .map_err(|e| Error::io(format!("cannot move {}", from.display()), e))?;
                    }
                }
                out.refs_kept.push(name);
            }
            None => {
                if refs::delete(repo, &name)? {
                    out.refs_removed += 1;
                }
            }
        }
    }
    Ok(())
}

/// A one-task batch record standing in for a corrupt batch, for `proposal::record_deferred`.
fn stand_in(
    source: &Source,
    id: &str,
    baseline: ObjectId,
    task: &str,
    root: &Path,
    wid: &str,
) -> Batch {
    Batch::stand_in(
        id,
        &source.root,
        crate::sys::time::rfc3339(crate::sys::time::now()),
        baseline.to_string(),
        batch::Task::open(task.to_string(), root.to_path_buf(), wid.to_string()),
    )
}
