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
    let mut failure = results.into_iter().find_map(|r| r.err());
    if failure.is_none() && gix::interrupt::is_triggered() {
        failure = Some(interrupted());
    }
    if let Some(err) = failure {
        for p in plans {
            let _ = remove_created(common_dir, p);
        }
        return Err(err);
    }
    Ok(())
}

/// The error for a prepare interrupted by a signal (Ctrl-C).
pub fn interrupted() -> Error {
    Error::state(
        "delegate::interrupted",
        "interrupted; everything this command made was removed again",
        "run the command again",
    )
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
    let write = |name: &str, bytes: Vec<u8>| {
        std::fs::write(reg.join(name), bytes).map_err(io(&reg.join(name)))
    };
    let line = |prefix: &str, path: &Path| {
        use std::os::unix::ffi::OsStrExt;
        [prefix.as_bytes(), path.as_os_str().as_bytes(), b"\n"].concat()
    };
    // Lock first, so `git worktree prune` can never take a half-made workspace.
    write("locked", p.lock_reason.clone().into_bytes())?;
    write("gitdir", line("", &p.root.join(".git")))?;
    write("commondir", b"../..\n".to_vec())?;
    write("HEAD", format!("{baseline}\n").into_bytes())?;
    std::fs::write(p.root.join(".git"), line("gitdir: ", &reg)).map_err(io(&p.root))?;

    let repo = crate::repo::open_worktree(&p.root)?;
    let git = |e: gix::Error| Error::git(format!("cannot check out {}", p.root.display()), e);
    let checkout_failed = |e: &dyn std::fmt::Display| {
        Error::state(
            "delegate::checkout_failed",
            format!("cannot check out {}: {e}", p.root.display()),
            "check free disk space, permissions and path lengths under the workspace root",
        )
    };
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
        &gix::interrupt::IS_INTERRUPTED,
        opts,
    )
    .map_err(|e| checkout_failed(&e))?;
    if gix::interrupt::is_triggered() {
        return Err(interrupted());
    }
    if let Some(first) = outcome.errors.first() {
        return Err(Error::state(
            "delegate::checkout_failed",
            format!(
                "cannot write {} in {}: {}",
                crate::paths::quote(first.path.as_ref()),
                p.root.display(),
                first.error
            ),
            "check free disk space, permissions and path lengths under the workspace root",
        ));
    }
    date_entries(&p.root, &mut index, threads)?;
    index
        .write(Default::default())
        .map_err(|e| checkout_failed(&e))?;
    Ok(())
}

/// Make the fresh index a stat cache that neither git nor gix must second-guess.
///
/// git compares whole seconds and treats an entry whose mtime is not older
/// than the index file as "racily clean" (re-hashed on every status), and a
/// same-size edit within the second the file was written would look clean
/// to it. So every checked-out file is dated one whole second before the
/// current second of the filesystem clock (probed with a file, since that
/// clock can lag the system clock by a tick), and its stat data recorded
/// afterwards: the index, written later, is strictly newer than every entry,
/// and any later edit lands in a later second than the one recorded.
fn date_entries(root: &Path, index: &mut gix::index::File, threads: usize) -> Result<()> {
    let probe = root.join(".git-delegate-clock");
    let now = std::fs::write(&probe, b"")
        .and_then(|_| std::fs::symlink_metadata(&probe))
        .and_then(|m| m.modified())
        .map_err(|e| Error::io(format!("cannot write in {}", root.display()), e));
    let _ = std::fs::remove_file(&probe);
    let now = now?
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let stamp = rustix::fs::Timespec {
        tv_sec: now - 1,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: stamp,
        last_modification: stamp,
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    let chunk = entries.len().div_ceil(threads.max(1)).max(1);
    let date = |entries: &mut [gix::index::Entry]| -> Result<()> {
        for e in entries {
            let path = root.join(crate::paths::to_os(e.path_in(paths)));
            let io =
                |err: std::io::Error| Error::io(format!("cannot date {}", path.display()), err);
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &path,
                &times,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|err| io(err.into()))?;
            let md = gix::index::fs::Metadata::from_path_no_follow(&path).map_err(io)?;
            e.stat = gix::index::entry::Stat::from_fs(&md)
                .map_err(|err| io(std::io::Error::other(err)))?;
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = entries
            .chunks_mut(chunk)
            .map(|c| s.spawn(move || date(c)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::state(
                        "delegate::internal",
                        "a thread panicked",
                        "report this bug",
                    ))
                })
            })
            .collect::<Result<Vec<()>>>()
    })?;
    Ok(())
}

/// Is `root` the workspace we made: its `.git` file points at our registration?
pub fn is_ours(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(text) = std::fs::read(root.join(".git")) else {
        return false;
    };
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let Some(target) = text.strip_prefix(b"gitdir: ") else {
        return false;
    };
    Path::new(std::ffi::OsStr::from_bytes(target)) == registration(common_dir, worktree_id)
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

/// Where the registration's `gitdir` file says its worktree is, if readable.
fn registered_location(common_dir: &Path, worktree_id: &str) -> Option<PathBuf> {
    let text = std::fs::read(registration(common_dir, worktree_id).join("gitdir")).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    use std::os::unix::ffi::OsStrExt;
    let dotgit = PathBuf::from(std::ffi::OsStr::from_bytes(text));
    dotgit.parent().map(Path::to_path_buf)
}

/// Has the registration been moved (`git worktree move`) to a folder other
/// than `root` that still points back at it? Then it is the user's now.
fn moved_elsewhere(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    match registered_location(common_dir, worktree_id) {
        Some(at) => at != root && is_ours(common_dir, &at, worktree_id),
        None => false,
    }
}

/// Remove a workspace folder and its registration, never a folder that is
/// not ours. A folder the user replaced is left alone (its stale
/// registration goes); a workspace the user moved with `git worktree move`
/// is left alone with its registration, unlocked, as an ordinary worktree.
/// Both report [`Removal::Foreign`].
pub fn remove(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    if crate::scratch::is_scratch(worktree_id) {
        return crate::scratch::remove(common_dir, root);
    }
    let state = health(common_dir, root, worktree_id);
    if moved_elsewhere(common_dir, root, worktree_id) {
        release(common_dir, worktree_id)?;
        return Ok(Removal::Foreign);
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
    if state != Removal::Foreign {
        remove_empty_parents(root);
    }
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
