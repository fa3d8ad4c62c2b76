//! Refresh (design §3.12): bring task workspaces up to date with the source
//! as it is now, conflicts handed back to the worker, as after `git merge`.
//!
//! Owns: per task, in this order: the workspace recorded as a proposal
//! (ref and patch, `proposal::record`), the source's snapshot as the task's
//! own base (commit + ref `.../tasks/<task>/base`), `merge3(old base,
//! workspace, new base)` with diff3-style markers labelled `task`, `base`
//! and `source` written into the workspace through the write-back's
//! journal (symlink-safe, temp then rename), the workspace's index (the new
//! base, conflicted files as stages 1-3) and detached HEAD moved to the new
//! base, then the task's `base`, state (`conflicted` or `open`) and
//! conflicted files saved in the batch (the writes into the workspace are
//! `write`'s). Also what apply and status ask:
//! which conflicts a worker left unresolved (`unresolved`; with a
//! workspace index that cannot be used, every listed file, as the index
//! `reindex` rebuilds holds them unmerged).
//! Never: stops processes in a workspace (the worker may be the caller);
//! writes the source working tree, its index or HEAD; writes a workspace
//! path whose content is not what its snapshot read (the write-back's
//! check); refreshes a task whose earlier conflicts are unresolved, or
//! whose workspace holds paths git refuses (design §3.18).

use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::PathConflict;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch, TaskState};
use crate::{git::commit, git::refs, merge::proposal, snapshot, workspace};

mod write;
use write::{merge_keep, move_head, write_index, write_merge};

/// Apply's reason for a task whose refresh conflicts are unresolved.
pub const UNRESOLVED: &str = "unresolved_conflicts";

/// The marker lines refresh writes that apply looks for (design §3.12).
const MARKERS: [&[u8]; 2] = [b"<<<<<<< task", b">>>>>>> source"];

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The batch; `None`: the batch of the workspace `cwd` is in, else the
    /// only open one.
    pub batch: Option<String>,
    /// These tasks; empty: the task whose workspace holds `cwd`, else every
    /// open task.
    pub tasks: Vec<String>,
    /// The caller's folder.
    pub cwd: PathBuf,
}

/// What became of one task.
#[derive(Debug, Clone)]
pub struct Refreshed {
    pub name: String,
    /// Its base now (unchanged when it was not refreshed).
    pub base: String,
    /// Files with conflict markers and unmerged entries (workspace-relative).
    pub conflicted: Vec<BString>,
    pub state: TaskState,
    /// Not refreshed because its earlier conflicts are unresolved.
    pub unresolved: bool,
    /// The proposal ref recorded first (none when the workspace had no changes).
    pub proposal_ref: Option<String>,
}

pub struct Report {
    pub batch: Batch,
    pub tasks: Vec<Refreshed>,
    /// A signal arrived once a write-back had begun, and it was past its
    /// commit point: that task was finished, the rest not refreshed
    /// (design §7 "Signals"); the command exits 1.
    pub interrupted: bool,
}

/// Refresh tasks of a batch (design §3.12), found from `here`. Takes the
/// repository lock (recovering interrupted write-backs first, told to
/// `observer`).
pub fn run(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    let locked = crate::ops::lock::lock_and_recover(&here)?;
    observer.notice(Notice::Recovered(locked.recovery));
    let _lock = locked.lock;
    let inside = workspace_of(&here.state_dir(), &opts.cwd);
    let batch_arg = opts
        .batch
        .clone()
        .or_else(|| inside.as_ref().map(|(id, _)| id.clone()));
    let mut b = batch::select_open(&here.state_dir(), batch_arg.as_deref())?;
    if let Some(p) = crate::ops::preparing::progress(&b) {
        return Err(crate::ops::preparing::refuse(&b, p));
    }
    // An apply verifying this batch holds no lock while its command runs
    // (design §3.10): the batch is busy instead.
    crate::record::busy::refuse_if_busy(&here.state_dir(), &b)?;
    if !crate::workspace::Kind::of_batch(&b).writes_back() {
        return Err(Error::usage(
            Code::Usage,
            format!(
                "batch {} is a scratch batch: its tasks' edits never reach the source, so there is nothing to refresh",
                b.short()
            ),
            "refresh works on batches prepared with --mode worktree",
        ));
    }
    let names = task_names(&b, opts, inside)?;
    let mut source = if here.root == b.source {
        here
    } else {
        Source::open_recorded(&here, &b.source, b.short())?
    };
    // Only the drivers prepare recorded run for the batch (design §3.18).
    crate::git::drivers::enforce(b.drivers.as_ref(), &mut source.repo)?;
    // A dirty submodule is refused as prepare refuses it (design §3.15).
    crate::workspace::submodules::discover(&source)?;
    let baseline_tree = commit::tree_of(&source.repo, &b.baseline)?;

    let _step = observer.step("Snapshotting the source");
    // The new base: the source as it is now, on the source's HEAD.
    let snap = snapshot::snapshot(&source.repo)?;
    let head = source.repo.head_id().ok().map(|id| id.detach());
    let new_base = commit::write(
        &source.repo,
        snap.tree,
        head,
        commit::refresh_base_message(&b.id),
    )?;
    // The workers get the source as it is now: its private files are
    // recorded for the pre-push guard as prepare records them (design §3.19).
    if snap.changes > 0 {
        let changed = crate::git::diff::trees(&source.repo, snap.head_tree, snap.tree)?;
        crate::record::private::record(&source.state_dir(), &b.id, &changed)?;
    }
    drop(_step);

    let mut tasks = Vec::new();
    for name in names {
        let Some(idx) = b.tasks.iter().position(|t| t.name == name) else {
            continue;
        };
        let _step = observer.step(&format!("Refreshing task {name}"));
        let done = refresh_task(&source, &mut b, idx, baseline_tree, new_base, snap.tree)?;
        batch::save(&source.state_dir(), &b)?;
        tasks.push(done);
        // A signal during (or since) that write-back, past its commit point:
        // that task is finished and recorded; the others are left for
        // another refresh (design §7 "Signals").
        if crate::sys::interrupt::interrupted() {
            return Ok(Report {
                batch: b,
                tasks,
                interrupted: true,
            });
        }
    }
    Ok(Report {
        batch: b,
        tasks,
        interrupted: false,
    })
}

/// The tasks to refresh: those named (none remote), else the one whose
/// workspace the command runs in, else every open local task.
fn task_names(b: &Batch, opts: &Options, inside: Option<(String, String)>) -> Result<Vec<String>> {
    Ok(if !opts.tasks.is_empty() {
        for n in &opts.tasks {
            // A remote task's workspace is on its worker's machine (design §3.14).
            if b.open_task_named(n)?.remote {
                return Err(Error::usage(
                    Code::Usage,
                    format!("task {n} is remote: refresh cannot reach its workspace"),
                    "its worker can join again and carry its work over, or apply it and prepare anew",
                ));
            }
        }
        opts.tasks.clone()
    } else {
        match inside {
            Some((id, task)) if id == b.id => {
                b.open_task_named(&task)?;
                vec![task]
            }
            _ => b
                .open_tasks()
                .filter(|t| !t.remote)
                .map(|t| t.name.clone())
                .collect(),
        }
    })
}

/// The batch and task whose workspace holds `cwd`, among the repository's
/// open batches.
fn workspace_of(state_dir: &Path, cwd: &Path) -> Option<(String, String)> {
    let here = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for b in batch::list_ok(state_dir).ok()? {
        for t in b.open_tasks().filter(|t| !t.remote) {
            let root = std::fs::canonicalize(&t.root).unwrap_or_else(|_| t.root.clone());
            if here.starts_with(&root) {
                return Some((b.id.clone(), t.name.clone()));
            }
        }
    }
    None
}

fn refresh_task(
    source: &Source,
    b: &mut Batch,
    idx: usize,
    baseline_tree: ObjectId,
    new_base: ObjectId,
    s_tree: ObjectId,
) -> Result<Refreshed> {
    let task = b.tasks[idx].clone();
    let workspace::Identity::Ours { real, .. } = workspace::identify(&source.common_dir, &task)
    else {
        return Err(Error::state(
            Code::WorkspaceMissing,
            format!(
                "the workspace of task {} ({}) is missing or is no longer the folder prepare made",
                task.name,
                task.root.display()
            ),
            "refresh the other tasks by name; `git delegate status` shows the batch",
        ));
    };
    let (mut left, unusable) = unresolved_checked(&task, &real);
    if unusable
        && crate::snapshot::reindex::repair(&source.common_dir, &task, &real).unwrap_or(false)
    {
        // design §3.2 step 1: a workspace's index is a cache, rebuilt.
        left = unresolved(&task, &real);
    }
    if !left.is_empty() {
        return Ok(Refreshed {
            name: task.name.clone(),
            base: task.base_or(&b.baseline).to_string(),
            conflicted: left.into_iter().map(|c| c.path).collect(),
            state: task.state,
            unresolved: true,
            proposal_ref: task.proposal_ref.clone(),
        });
    }
    // 1. Nothing the worker did can be lost: the workspace as a proposal.
    let (recorded, old_base_tree, w_tree) = save_work(source, b, &task, &real, baseline_tree)?;

    // 2. merge3(old base, workspace, new base), markers kept.
    let (m_tree, staged) = merge_keep(&source.repo, old_base_tree, w_tree, s_tree)?;
    let conflicted: Vec<BString> = {
        let mut v: Vec<BString> = staged.iter().map(|e| e.0.clone()).collect();
        v.dedup();
        v
    };

    // 3. Write what differs between the workspace and the merge.
    let (ws, sparse) = write_merge(source, b, &task, &real, (w_tree, m_tree), new_base)?;

    // 4. Index and HEAD at the new base; conflicted files unmerged.
    write_index(&ws.repo, s_tree, &staged, sparse.as_ref())?;
    move_head(&ws.repo, new_base)?;

    // 5. Recorded in the batch.
    let t = &mut b.tasks[idx];
    t.base = Some(new_base.to_string());
    t.state = if conflicted.is_empty() {
        TaskState::Open
    } else {
        TaskState::Conflicted
    };
    t.reason = None;
    t.conflicted_paths = conflicted
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    if let Some(p) = &recorded {
        t.proposal_ref = Some(p.ref_name.clone());
        t.patch = Some(p.patch.clone());
    }
    t.updated_at = Some(crate::sys::time::rfc3339(crate::sys::time::now()));
    Ok(Refreshed {
        name: task.name.clone(),
        base: new_base.to_string(),
        conflicted,
        state: t.state,
        unresolved: false,
        proposal_ref: recorded.map(|p| p.ref_name),
    })
}

/// Step 1: the workspace `real` of `task` recorded as a proposal; with the
/// tree of the task's old base and the workspace's tree. Refuses a
/// workspace holding paths git refuses (design §3.18: those the snapshot
/// left out, and any its tree holds otherwise), which is not merged.
fn save_work(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    real: &Path,
    baseline_tree: ObjectId,
) -> Result<(Option<proposal::Proposal>, ObjectId, ObjectId)> {
    let mut at_real = task.clone();
    at_real.root = real.to_path_buf();
    let (_, old_base_tree) = proposal::base_of(&source.repo, b, task, baseline_tree)?;
    let recorded = proposal::record(source, b, &at_real, baseline_tree)?;
    let w_tree = recorded.as_ref().map_or(old_base_tree, |p| p.tree);
    let mut invalid = recorded
        .as_ref()
        .map(|p| p.invalid.clone())
        .unwrap_or_default();
    invalid.extend(crate::git::validate::tree(
        &source.repo,
        Some(old_base_tree),
        w_tree,
    )?);
    if !invalid.is_empty() {
        return Err(Error::state(
            Code::InvalidPath,
            format!(
                "cannot refresh task {}: its workspace {} holds paths git refuses to add or check out: {}; nothing was changed there",
                task.name,
                real.display(),
                crate::git::validate::list(&invalid)
            ),
            format!(
                "rename or remove them in the workspace (the rest of its work is saved as {}), then run `git delegate refresh {} --batch {}` again",
                refs::proposal(&b.id, &task.name),
                task.name,
                b.short()
            ),
        ));
    }
    Ok((recorded, old_base_tree, w_tree))
}

/// The conflicts a refresh handed back that the worker has not resolved
/// (design §3.12): every unmerged index entry of the workspace at `real`,
/// and every file the refresh listed that still holds a marker line
/// exactly as refresh wrote it. Where the workspace's index cannot be read
/// (missing, not decodable), every file the refresh
/// listed counts as unmerged: the index rebuilt for it holds them so
/// (`reindex`), until the worker's `git add`.
pub fn unresolved(task: &batch::Task, real: &Path) -> Vec<PathConflict> {
    unresolved_checked(task, real).0
}

/// [`unresolved`], and whether the workspace's index could not be read
/// (the caller holding the lock rebuilds it: `reindex::repair`).
pub fn unresolved_checked(task: &batch::Task, real: &Path) -> (Vec<PathConflict>, bool) {
    let mut out: Vec<PathConflict> = Vec::new();
    let mut unusable = false;
    if let Ok(ws) = crate::git::repo::open_worktree(real) {
        // Decoded, its checksum not verified (the snapshot that records
        // the task verifies it: design §3.2 step 1).
        let path = ws.index_path();
        match gix::index::File::at(&path, ws.object_hash(), true, Default::default()) {
            Ok(index) => {
                for e in index.entries().iter().filter(|e| e.stage_raw() != 0) {
                    let path = e.path(&index);
                    if out.last().is_none_or(|c| c.path != path) {
                        out.push(PathConflict {
                            path: path.to_owned(),
                            reason: "unmerged".into(),
                        });
                    }
                }
            }
            Err(_) => {
                unusable = true;
                if task.state == TaskState::Conflicted {
                    for p in &task.conflicted_paths {
                        out.push(PathConflict {
                            path: p.as_str().into(),
                            reason: "unmerged".into(),
                        });
                    }
                }
            }
        }
    }
    for p in &task.conflicted_paths {
        if out.iter().any(|c| c.path == p.as_bytes()) {
            continue;
        }
        let file = real.join(p);
        let Ok(meta) = file.symlink_metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let marked = bytes.lines().any(|l| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            MARKERS.contains(&l)
        });
        if marked {
            out.push(PathConflict {
                path: p.as_str().into(),
                reason: "conflict markers".into(),
            });
        }
    }
    (out, unusable)
}
