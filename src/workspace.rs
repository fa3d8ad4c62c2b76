//! Materialization of workspaces: linked worktrees detached at a baseline,
//! registered and locked the way `git worktree add` + `git worktree lock`
//! leave them, checked out in parallel, with an index whose stat data make
//! the first snapshot of an untouched workspace hash nothing.
//!
//! Owns: creating, recognising and removing workspace folders and their
//! registrations under `<common-dir>/worktrees/`.
//! Never: writes `.git/config`, touches the source working tree, or removes a
//! folder that is not the workspace it made (its `.git` must point back at
//! the registration).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::ObjectId;

use crate::error::{Error, Result};

/// One workspace to create.
#[derive(Debug, Clone)]
pub struct Plan {
    pub root: PathBuf,
    pub worktree_id: String,
    /// The text of the `locked` file.
    pub lock_reason: String,
}

pub fn worktree_id(batch_short: &str, task: &str) -> String {
    format!("delegate-{batch_short}-{task}")
}

fn registration(common_dir: &Path, id: &str) -> PathBuf {
    common_dir.join("worktrees").join(id)
}

/// Refuse plans whose folders or registrations already exist (before anything is made).
pub fn check_free(common_dir: &Path, plans: &[Plan]) -> Result<()> {
    for p in plans {
        if p.root.symlink_metadata().is_ok() {
            return Err(Error::usage(
                "delegate::workspace_exists",
                format!("the workspace folder {} already exists", p.root.display()),
                "move or remove that folder (or run `git delegate gc`), then prepare again",
            ));
        }
        let reg = registration(common_dir, &p.worktree_id);
        if reg.symlink_metadata().is_ok() {
            return Err(Error::usage(
                "delegate::workspace_exists",
                format!(
                    "a worktree named {} is already registered at {}",
                    p.worktree_id,
                    reg.display()
                ),
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`",
            ));
        }
    }
    Ok(())
}

/// Create every planned workspace, checked out in parallel. On failure,
/// everything created here is removed again.
pub fn create_all(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
) -> Result<()> {
    let threads_each = (std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        / plans.len().max(1))
    .max(1);
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = plans
            .iter()
            .map(|p| {
                s.spawn(move || create_one(common_dir, baseline, baseline_tree, p, threads_each))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::state(
                        "delegate::internal",
                        "a checkout thread panicked",
                        "report this bug",
                    ))
                })
            })
            .collect()
    });
    if let Some(err) = results.into_iter().find_map(|r| r.err()) {
        for p in plans {
            let _ = remove_created(common_dir, p);
        }
        return Err(err);
    }
    // Give the clock a tick past the last write, so any later edit of a
    // workspace file gets an mtime different from the one recorded.
    std::thread::sleep(std::time::Duration::from_millis(10));
    Ok(())
}

/// Undo `create_one` for a plan: only what it made (our `.git` pointer, our registration).
fn remove_created(common_dir: &Path, p: &Plan) -> Result<()> {
    if is_ours(common_dir, &p.root, &p.worktree_id) || is_empty_dir(&p.root) {
        let _ = std::fs::remove_dir_all(&p.root);
    }
    let _ = std::fs::remove_dir_all(registration(common_dir, &p.worktree_id));
    remove_empty_parents(&p.root);
    Ok(())
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

fn create_one(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    p: &Plan,
    threads: usize,
) -> Result<()> {
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e| Error::io(format!("cannot create {what}"), e)
    };
    if let Some(parent) = p.root.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::create_dir(&p.root).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::usage(
                "delegate::workspace_exists",
                format!("the workspace folder {} already exists", p.root.display()),
                "move or remove that folder, then prepare again",
            )
        } else {
            Error::io(format!("cannot create {}", p.root.display()), e)
        }
    })?;
    let reg = registration(common_dir, &p.worktree_id);
    std::fs::create_dir_all(reg.parent().unwrap_or(common_dir)).map_err(io(&reg))?;
    std::fs::create_dir(&reg).map_err(io(&reg))?;
    let write = |name: &str, text: String| {
        std::fs::write(reg.join(name), text).map_err(io(&reg.join(name)))
    };
    // Lock first, so `git worktree prune` can never take a half-made workspace.
    write("locked", p.lock_reason.clone())?;
    write("gitdir", format!("{}\n", p.root.join(".git").display()))?;
    write("commondir", "../..\n".into())?;
    write("HEAD", format!("{baseline}\n"))?;
    std::fs::write(p.root.join(".git"), format!("gitdir: {}\n", reg.display()))
        .map_err(io(&p.root))?;

    let repo = crate::repo::open_worktree(&p.root)?;
    let git = |e: gix::Error| Error::git(format!("cannot check out {}", p.root.display()), e);
    let mut index = repo.index_from_tree(&baseline_tree).map_err(git)?;
    let mut opts = repo
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(git)?;
    opts.destination_is_initially_empty = true;
    opts.thread_limit = Some(threads);
    let objects = repo
        .objects
        .clone()
        .into_arc()
        .map_err(|e| Error::git("cannot open objects", e))?;
    let outcome = gix::worktree::state::checkout(
        &mut index,
        p.root.clone(),
        objects,
        &gix::progress::Discard,
        &gix::progress::Discard,
        &AtomicBool::new(false),
        opts,
    )
    .map_err(git)?;
    if let Some(first) = outcome.errors.first() {
        return Err(Error::state(
            "delegate::checkout_failed",
            format!(
                "cannot write {} in {}: {}",
                crate::paths::quote(first.path.as_ref()),
                p.root.display(),
                first.error
            ),
            "check free disk space and permissions of the workspace root",
        ));
    }
    index.write(Default::default()).map_err(git)?;
    make_index_not_racy(&reg.join("index"), &index)?;
    Ok(())
}

/// Git (which compares whole seconds) treats entries whose mtime is not
/// older than the index file as "racily clean" and re-hashes them on every
/// status. Date the index one second past the newest entry so the fresh
/// workspace's stat data serve as a cache. Our own snapshots compare
/// nanoseconds, so an edit after prepare returns is still seen.
fn make_index_not_racy(path: &Path, index: &gix::index::File) -> Result<()> {
    let newest = index
        .entries()
        .iter()
        .map(|e| e.stat.mtime.secs)
        .max()
        .unwrap_or(0) as u64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(newest.max(now) + 1);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
    f.set_modified(when)
        .map_err(|e| Error::io(format!("cannot date {}", path.display()), e))
}

/// Is `root` the workspace we made: its `.git` file points at our registration?
pub fn is_ours(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join(".git")) else {
        return false;
    };
    let Some(target) = text.trim_end_matches('\n').strip_prefix("gitdir: ") else {
        return false;
    };
    Path::new(target) == registration(common_dir, worktree_id)
}

/// What became of a workspace on removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// The folder was gone already; the registration was removed.
    Missing,
    /// The folder is no longer ours: left alone.
    Foreign,
}

/// Whether a task's workspace folder is there and is ours.
pub fn health(common_dir: &Path, root: &Path, worktree_id: &str) -> Removal {
    if crate::scratch::is_scratch(worktree_id) {
        return crate::scratch::health(common_dir, root);
    }
    if root.symlink_metadata().is_err() {
        Removal::Missing
    } else if is_ours(common_dir, root, worktree_id) {
        Removal::Removed
    } else {
        Removal::Foreign
    }
}

/// Remove a workspace folder and its registration, never a folder that is not ours.
pub fn remove(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    if crate::scratch::is_scratch(worktree_id) {
        return crate::scratch::remove(common_dir, root);
    }
    let state = health(common_dir, root, worktree_id);
    if state == Removal::Foreign {
        return Ok(state);
    }
    if state == Removal::Removed {
        std::fs::remove_dir_all(root)
            .map_err(|e| Error::io(format!("cannot remove {}", root.display()), e))?;
    }
    let reg = registration(common_dir, worktree_id);
    match std::fs::remove_dir_all(&reg) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("cannot remove {}", reg.display()), e)),
    }
    remove_empty_parents(root);
    Ok(state)
}

/// Unregister-free hand-over for `apply --keep`: the workspace stays as an
/// ordinary registered worktree, unlocked, no longer owned by a batch.
pub fn release(common_dir: &Path, worktree_id: &str) -> Result<()> {
    let locked = registration(common_dir, worktree_id).join("locked");
    match std::fs::remove_file(&locked) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("cannot unlock {}", locked.display()), e)),
    }
}

/// Remove the batch folder and the repository folder above a workspace when empty.
fn remove_empty_parents(root: &Path) {
    let mut dir = root.parent();
    for _ in 0..2 {
        match dir {
            Some(d) if std::fs::remove_dir(d).is_ok() => dir = d.parent(),
            _ => break,
        }
    }
}
