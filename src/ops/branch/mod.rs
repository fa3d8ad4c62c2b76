//! Publishing a task as a branch (design §3.19): `git delegate branch TASK
//! [NAME]` makes `refs/heads/NAME` at a new commit whose parent is REV
//! (default HEAD) and whose tree is REV's tree with the task's changes
//! merged in 3-way (base: the task's base, ours: REV's tree, theirs: the
//! proposal) — a cherry-pick of the task's work onto REV, made in object
//! memory, without the user's uncommitted or untracked files that the
//! baseline holds.
//!
//! Owns: the branch commit and the one `refs/heads/` ref it creates or,
//! with `force`, moves.
//! Never: touches the working tree, the index, HEAD or any other branch;
//! moves a branch checked out in any worktree; changes the task's state
//! (publishing is not landing: the task stays open); writes any object or
//! ref when the merge conflicts.

use std::path::Path;

use gix::bstr::{BString, ByteSlice};
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::{self, Merge, PathConflict};
use crate::record::batch::{self, Task};
use crate::{git::commit, git::diff, merge::proposal};

mod write;

use write::write_branch;

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub task: String,
    /// The branch name (without `refs/heads/`); default
    /// `delegate/<label or short id>/<task>`.
    pub name: Option<String>,
    pub batch: Option<String>,
    /// The revision the branch starts from (default HEAD).
    pub onto: Option<String>,
    pub message: Option<String>,
    pub force: bool,
}

/// What `branch` did.
pub struct Report {
    pub batch: String,
    pub batch_short: String,
    pub task: String,
    /// `refs/heads/NAME`.
    pub branch: String,
    /// The new commit (`None` when the merge conflicted: nothing was made).
    pub commit: Option<ObjectId>,
    /// REV, resolved.
    pub parent: ObjectId,
    /// The paths the commit changes against its parent, sorted.
    pub paths: Vec<BString>,
    /// The branch's previous commit when `force` moved it.
    pub moved_from: Option<ObjectId>,
    /// The paths that conflict with REV (then nothing was made).
    pub conflicts: Vec<PathConflict>,
}

/// The default branch name of a task.
pub fn default_name(b: &batch::Batch, task: &str) -> String {
    let who = b.label.clone().unwrap_or_else(|| b.short().to_string());
    format!("delegate/{who}/{task}")
}

/// Make the branch (see the header). Takes the repository lock: a local
/// task's workspace is recorded as a proposal first (as apply's step 1).
/// `here` is where it runs: the source, or any worktree of its repository
/// (a task's own folder included, whose HEAD is the baseline): the branch
/// goes on the source's HEAD all the same.
pub fn run(here: &Source, opts: &Options) -> Result<Report> {
    let _lock = crate::ops::lock::lock_and_recover(here)?;
    // Without --batch, inside a task's folder: that task's batch.
    let inside = match opts.batch {
        Some(_) => None,
        None => batch_of_workspace(here),
    };
    let arg = opts.batch.as_deref().or(inside.as_deref());
    let b = batch::select_open(&here.state_dir(), arg)?;
    let task = b.open_task_named(&opts.task)?;
    // The batch's source, opened by its recorded path (as apply opens it).
    let opened;
    let source = if here.root == b.source {
        here
    } else {
        opened = Source::open_recorded(here, &b.source, b.short())?;
        &opened
    };
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| default_name(&b, &task.name));
    let full = format!("refs/heads/{name}");
    let full_name: gix::refs::FullName = full.as_str().try_into().map_err(|e| {
        Error::usage(
            Code::Usage,
            format!("{name:?} is not a valid branch name: {e}"),
            "pick a name `git check-ref-format --branch NAME` accepts",
        )
    })?;
    // Only the drivers prepare recorded run for the batch (design §3.18).
    let mut restricted = source.repo.clone();
    crate::git::drivers::enforce(b.drivers.as_ref(), &mut restricted)?;
    let repo = &restricted;
    // REV as git resolves it where branch runs; by default the source's
    // HEAD, never a workspace's (design §3.19).
    let rev = opts.onto.as_deref().unwrap_or("HEAD");
    let (parent_id, ours) = match opts.onto {
        Some(_) => onto(&here.repo, rev)?,
        None => onto(repo, rev)?,
    };
    refuse_private_parent(repo, &b, task, parent_id, opts.onto.as_deref())?;

    // Where the branch would go: refused before anything is recorded.
    let existing = free_branch(repo, source, &name, &full, opts.force)?;

    // The task's work as a proposal commit: recorded now for a local task,
    // fetched for a remote one.
    let (base_tree, theirs) = task_trees(source, &b, task)?;

    let mut mem = repo.clone().with_object_memory();
    mem.object_cache_size_if_unset(8 << 20);
    let mut report = Report {
        batch: b.id.clone(),
        batch_short: b.short().to_string(),
        task: task.name.clone(),
        branch: full.clone(),
        commit: None,
        parent: parent_id,
        paths: Vec::new(),
        moved_from: None,
        conflicts: Vec::new(),
    };
    let tree = match integrate::merge3(&mem, base_tree, ours, theirs)? {
        Merge::Conflicts(c) => {
            report.conflicts = c;
            return Ok(report);
        }
        Merge::Clean(t) => t,
    };
    let paths = diff::trees(&mem, ours, tree)?;
    if paths.is_empty() {
        return Err(no_changes(
            &b,
            &task.name,
            &format!("its changes are already in {rev}"),
        ));
    }
    let id = write_branch(
        repo, &mut mem, opts, &b, task, tree, parent_id, existing, full_name,
    )?;
    report.commit = Some(id);
    report.moved_from = existing;
    report.paths = paths.into_iter().map(|c| c.path).collect();
    Ok(report)
}

/// What branch `full` (`name`) holds now, when it may be written: it is
/// checked out nowhere, and is new or `force` moves it.
fn free_branch(
    repo: &gix::Repository,
    source: &Source,
    name: &str,
    full: &str,
    force: bool,
) -> Result<Option<gix::ObjectId>> {
    let existing = crate::git::refs::get(repo, full)?;
    if let Some(wt) = checked_out_in(&source.common_dir, full) {
        return Err(Error::state(
            Code::BranchCheckedOut,
            format!(
                "branch {name} is checked out in {}; it is never moved",
                wt.display()
            ),
            "pick another name: `git delegate branch TASK NEW-NAME`",
        ));
    }
    if let (Some(old), false) = (existing, force) {
        return Err(Error::usage(
            Code::BranchExists,
            format!("branch {name} already exists (at {old})"),
            "pick another name, or pass --force to move it to the task's work",
        ));
    }
    Ok(existing)
}

/// The open batch one of whose workspaces is the working tree `here` runs in.
fn batch_of_workspace(here: &Source) -> Option<String> {
    let batches = batch::list_ok(&here.state_dir()).ok()?;
    batches
        .into_iter()
        .find(|b| {
            b.open_tasks()
                .filter(|t| !t.remote)
                .any(|t| std::fs::canonicalize(&t.root).is_ok_and(|r| r == here.root))
        })
        .map(|b| b.id)
}

/// A parent that is the batch's baseline (or the task's refreshed base),
/// or is built on it, would publish the user's uncommitted and untracked
/// files: refused (exit 2), with the way that works.
fn refuse_private_parent(
    repo: &gix::Repository,
    b: &batch::Batch,
    task: &Task,
    parent: ObjectId,
    onto: Option<&str>,
) -> Result<()> {
    let mut snapshots = vec![b.baseline.as_str()];
    snapshots.extend(task.base.as_deref());
    for snap in snapshots {
        let Ok(snap) = ObjectId::from_hex(snap.as_bytes()) else {
            continue;
        };
        let on_it = parent == snap
            || repo
                .merge_base(parent, snap)
                .is_ok_and(|m| m.is_some_and(|m| m.detach() == snap));
        if !on_it {
            continue;
        }
        let what = match onto {
            Some(rev) => format!("--onto {rev:?}"),
            None => "the source's HEAD".to_string(),
        };
        let help = match onto {
            Some(_) => format!(
                "leave out --onto: `git delegate branch {} --batch {}` puts the branch on the source's HEAD",
                task.name,
                b.short()
            ),
            None => "check out a branch of your own in the source, or pass --onto one of your branches"
                .to_string(),
        };
        return Err(Error::usage(
            Code::Usage,
            format!(
                "{what} is the baseline of batch {} or is built on it: a branch there would publish your uncommitted and untracked files",
                b.short()
            ),
            help,
        ));
    }
    Ok(())
}

/// The commit `rev` names and its tree: the branch's parent and the
/// merge's "ours".
fn onto(repo: &gix::Repository, rev: &str) -> Result<(ObjectId, ObjectId)> {
    let parent = repo
        .rev_parse_single(rev)
        .map_err(|e| {
            Error::usage(
                Code::Usage,
                format!("cannot resolve {rev:?}: {e}"),
                "name a commit for --onto (a branch, a tag or an id)",
            )
        })?
        .object()
        .map_err(|e| Error::git(format!("cannot read {rev}"), e))?
        .peel_to_commit()
        .map_err(|e| {
            Error::usage(
                Code::Usage,
                format!("{rev:?} is not a commit: {e}"),
                "name a commit for --onto",
            )
        })?;
    let parent_id = parent.id;
    let ours = parent
        .tree_id()
        .map_err(|e| Error::git(format!("cannot read the tree of {rev}"), e))?
        .detach();
    Ok((parent_id, ours))
}

/// The task's base tree and its work's tree (the merge's "base" and
/// "theirs"): a local task's workspace recorded as a proposal now, a remote
/// task's submission fetched.
fn task_trees(source: &Source, b: &batch::Batch, task: &Task) -> Result<(ObjectId, ObjectId)> {
    let repo = &source.repo;
    let baseline_tree = commit::tree_of(repo, &b.baseline)?;
    let refused = |f: &crate::git::validate::Invalid, fix: &str| {
        Error::state(
            Code::InvalidPath,
            format!(
                "task {} holds a path git refuses: {} ({})",
                task.name,
                f.path.to_str_lossy(),
                f.why
            ),
            fix.to_string(),
        )
    };
    Ok(if task.remote {
        let fetched =
            crate::ops::remote_workers::fetch_proposals(source, b, &[task.name.as_str()], true)?
                .or_first_unfetchable()?;
        let Some(&c) = fetched.get(&task.name) else {
            return Err(no_changes(
                b,
                &task.name,
                "its worker has not submitted work",
            ));
        };
        let tree = commit::tree_of(repo, &c.to_string())?;
        let base_tree = proposal::base_of(repo, b, task, baseline_tree)?.1;
        // Checked before any merge reads it (design §3.18): a path bomb
        // costs its distinct trees only.
        if let Some(f) = crate::git::validate::tree(repo, Some(base_tree), tree)?.first() {
            return Err(refused(
                f,
                "its worker fixes it in its workspace and submits again (`git delegate submit`)",
            ));
        }
        (base_tree, tree)
    } else {
        match crate::workspace::identify(&source.common_dir, task) {
            crate::workspace::Identity::Ours { .. } => {}
            _ => {
                return Err(Error::state(
                    Code::WorkspaceMissing,
                    format!("the workspace of task {} is missing or replaced", task.name),
                    "run `git delegate status` to see what happened to it",
                ))
            }
        }
        match proposal::record(source, b, task, baseline_tree)? {
            None => return Err(no_changes(b, &task.name, "its workspace has no changes")),
            Some(p) => {
                if let Some(f) = p.invalid.first() {
                    return Err(refused(
                        f,
                        "rename or remove it in the task's workspace, then try again",
                    ));
                }
                (proposal::base_of(repo, b, task, baseline_tree)?.1, p.tree)
            }
        }
    })
}

fn no_changes(b: &batch::Batch, task: &str, why: &str) -> Error {
    Error::usage(
        Code::NoChanges,
        format!(
            "task {task} of batch {} has nothing to publish: {why}",
            b.short()
        ),
        format!(
            "let the worker finish first; `git delegate diff {task} --batch {}` shows its changes",
            b.short()
        ),
    )
}

/// The worktree (main or linked) whose HEAD is the branch `full`, if any.
fn checked_out_in(common_dir: &Path, full: &str) -> Option<std::path::PathBuf> {
    let is = |git_dir: &Path| {
        std::fs::read(git_dir.join("HEAD")).is_ok_and(|h| {
            h.strip_prefix(b"ref: ")
                .map(|r| r.trim_ascii_end() == full.as_bytes())
                .unwrap_or(false)
        })
    };
    if is(common_dir) {
        // The main worktree: its folder is the common dir's parent, unless bare.
        return Some(common_dir.parent().unwrap_or(common_dir).to_path_buf());
    }
    let rd = std::fs::read_dir(common_dir.join("worktrees")).ok()?;
    for e in rd.flatten() {
        let dir = e.path();
        if is(&dir) {
            let folder = std::fs::read(dir.join("gitdir"))
                .ok()
                .and_then(|t| {
                    let t = t.trim_ascii_end().to_vec();
                    String::from_utf8(t).ok()
                })
                .map(|t| {
                    Path::new(&t)
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| dir.clone())
                })
                .unwrap_or(dir);
            return Some(folder);
        }
    }
    None
}
