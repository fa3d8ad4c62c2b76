//! A task workspace's identity (design §3.18): `identify` checks the
//! device, inode and real path recorded at prepare time through an
//! `O_NOFOLLOW` handle reached from the workspace root through folders of
//! the user's own (`shared_root`), and its `.git` pointing back at the
//! registration; `health` words it as `presence::Health`.
//! Never: follows a symlink, changes anything on disk.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::{registration, Health};
use crate::git::registration::Registration;
use crate::workspace::Kind;

/// What a task's workspace path leads to now, compared with the folder
/// prepare made (design §3.2: anything else is `workspace_missing`).
#[derive(Debug)]
pub enum Identity {
    /// The folder prepare made, held open (worktree mode; a scratch copy
    /// is recognised by its own marker and not held), at its real path;
    /// for a workspace below the workspace root, with the folders above it
    /// held open too (design §3.18: it is removed through them).
    Ours {
        fd: Option<OwnedFd>,
        real: PathBuf,
        parents: Option<crate::workspace::shared_root::Parents>,
    },
    /// Nothing is there.
    Missing,
    /// Something else is there (why, for people): never read, quiesced,
    /// rescued nor removed.
    Replaced(&'static str),
    /// What is there cannot be told: this process (EMFILE, `ulimit -n`) or
    /// the system (ENFILE) has as many files open as it may. Never taken
    /// for a folder that is not ours (nothing is removed or marked
    /// missing for it): the error names the limit (`FsCause::OpenFiles`,
    /// `delegate::too_many_open_files`), and the caller fails with it.
    TooManyOpenFiles(crate::error::Error),
}

impl Identity {
    pub fn health(&self) -> Health {
        match self {
            Identity::Ours { .. } => Health::Ours,
            Identity::Missing => Health::Missing,
            // Left alone, as a folder that is not ours is, by those that
            // only ask its health.
            Identity::Replaced(_) | Identity::TooManyOpenFiles(_) => Health::Foreign,
        }
    }

    /// The error that says the limit of open files was met, if it was.
    pub fn open_files_error(&self) -> Option<crate::error::Error> {
        match self {
            Identity::TooManyOpenFiles(e) => Some(crate::error::Error::state(
                e.code,
                e.message.clone(),
                e.help.clone(),
            )),
            _ => None,
        }
    }
}

/// `err`, met while telling what is at `root`, as the identity that says
/// the limit of open files was met (EMFILE, ENFILE), if it is that.
fn out_of_files(root: &Path, err: &std::io::Error) -> Option<Identity> {
    match crate::error::FsCause::of(err)? {
        cause @ crate::error::FsCause::OpenFiles { .. } => {
            Some(Identity::TooManyOpenFiles(cause.error(
                format_args!("cannot open the workspace {}", root.display()),
                Some(root),
                err,
            )))
        }
        _ => None,
    }
}

/// [`out_of_files`] for an errno.
fn out_of_files_errno(root: &Path, e: rustix::io::Errno) -> Option<Identity> {
    out_of_files(root, &std::io::Error::from_raw_os_error(e.raw_os_error()))
}

/// The identity of the workspace folder at `root`, just made, for the
/// batch record (`None` when it cannot be read: the batch then falls back
/// to the checks of a batch recorded without one).
pub fn folder_of(root: &Path) -> Option<crate::record::batch::Folder> {
    let fd = open_nofollow(root).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    Some(crate::record::batch::Folder {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        path: real_path(&fd, root)?,
        subvolume: crate::sys::btrfs::subvolume_id(fd.as_fd()).map(|id| format!("{id:016x}")),
    })
}

/// A handle on the task's workspace when it is the one prepare made: the
/// one its identity check opened, or (a scratch copy, identified by its
/// marker) the folder opened without following a symlink. `None` when it
/// is not ours.
pub fn held(common_dir: &Path, task: &crate::record::batch::Task) -> Option<OwnedFd> {
    match identify(common_dir, task) {
        Identity::Ours { fd: Some(fd), .. } => Some(fd),
        Identity::Ours { fd: None, .. } => open_nofollow(&task.root).ok(),
        _ => None,
    }
}

fn open_nofollow(root: &Path) -> rustix::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Where the opened folder really is (the kernel's name for it), or the
/// canonical form of `root` where `/proc` cannot tell.
fn real_path(fd: &OwnedFd, root: &Path) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(p) if p.is_absolute() => Some(p),
        _ => std::fs::canonicalize(root).ok(),
    }
}

/// Is the task's workspace the folder prepare made? Checked before a
/// workspace is read, quiesced, rescued or removed: the path must lead,
/// without a symlink at its end, to a real folder whose device and inode
/// and real path are the ones recorded at prepare time, whose `.git` file
/// (read through the opened folder) points at the task's registration. A
/// batch recorded before identities were kept has no device, inode nor
/// real path to compare: there, the folder must not be a symlink and its
/// `.git` file must point back.
pub fn identify(common_dir: &Path, task: &crate::record::batch::Task) -> Identity {
    // A remote task has no workspace here (design §3.14).
    if task.remote {
        return Identity::Missing;
    }
    if !Kind::of_task(task).registered() {
        return match crate::workspace::scratch::health(common_dir, &task.root) {
            Health::Ours => Identity::Ours {
                fd: None,
                real: task.root.clone(),
                parents: None,
            },
            Health::Missing => Identity::Missing,
            Health::Foreign => Identity::Replaced("is no longer the copy prepare made"),
        };
    }
    // The record is in the shared git dir, where a worker can edit it: only
    // a folder where prepare puts workspaces is ever taken for one.
    if !in_layout(Some(common_dir), task) {
        return Identity::Replaced(NOT_IN_LAYOUT);
    }
    // A workspace of the pool is the task's only while its registration
    // holds the task's lock (design §3.20): the same folder serves other
    // tasks before and after.
    if !serves(common_dir, task) {
        return match task.state.is_open() {
            true => Identity::Replaced(SERVES_ANOTHER),
            false => Identity::Missing,
        };
    }
    identify_at(
        common_dir,
        &task.root,
        &task.worktree_id,
        task.folder.as_ref(),
        Reach::Beneath,
    )
}

/// Why a task whose recorded folder is not where prepare puts workspaces is
/// left alone.
pub const NOT_IN_LAYOUT: &str = "is not where prepare puts a workspace (<workspace root>/<repo>-<fingerprint>/<batch>/<task>, or pool/<id> there): its batch record was changed, so it is left alone";

/// Does the task's workspace serve it: always, but for a workspace of the
/// pool (`task.lock` recorded), whose registration must hold the task's
/// lock (design §3.20)?
pub(super) fn serves(common_dir: &Path, task: &crate::record::batch::Task) -> bool {
    match &task.lock {
        Some(lock) => {
            let held = Registration::new(common_dir, &task.worktree_id).read_lock_reason();
            held.as_deref() == Some(lock.as_str())
        }
        None => true,
    }
}

/// Why an open task's workspace of the pool is not its own any more.
const SERVES_ANOTHER: &str = "is a workspace of the pool whose registration no longer holds this task's lock: it serves another task or went back to the pool";

/// Is `task`'s folder where prepare puts its workspace (design §3.18,
/// §3.20): `<workspace root>/<repo>-<fp>/<batch-short>/<name>` registered
/// as `delegate-<batch-short>-<name>`, or, for a workspace of the pool
/// (`task.lock` recorded), its slot `<workspace root>/<repo>-<fp>/pool/<id>`
/// registered as `delegate-pool-<id>`, with `<fp>` this repository's
/// fingerprint? (`<fp>` is checked when `common_dir` is given.)
fn in_layout(common_dir: Option<&Path>, task: &crate::record::batch::Task) -> bool {
    let (root, name, worktree_id) = (&task.root, &task.name, &task.worktree_id);
    if !root.is_absolute()
        || root.components().any(|c| {
            !matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        })
    {
        return false;
    }
    let Some(batch_dir) = root.parent() else {
        return false;
    };
    let Some(base) = batch_dir.parent() else {
        return false;
    };
    let (Some(leaf), Some(short), Some(repo)) =
        (root.file_name(), batch_dir.file_name(), base.file_name())
    else {
        return false;
    };
    let (Some(leaf), Some(short), Some(repo)) = (leaf.to_str(), short.to_str(), repo.to_str())
    else {
        return false;
    };
    let fp_ok = match common_dir {
        Some(c) => {
            let fp = crate::git::repo::fingerprint_of(c);
            repo.strip_suffix(fp.as_str())
                .is_some_and(|r| r.ends_with('-'))
        }
        None => repo.len() > 13 && repo.as_bytes()[repo.len() - 13] == b'-',
    };
    let named = match &task.lock {
        Some(_) => crate::record::pool::slot_of(root, worktree_id).is_some_and(|id| leaf == id),
        None => leaf == name && *worktree_id == crate::workspace::worktree_id(short, name),
    };
    named && fp_ok && base.parent().is_some()
}

/// How a workspace folder is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// A batch's workspace, `<root>/<repo-name>-<fp>/<batch-short>/<name>`:
    /// the repository folder, the batch folder and the workspace each
    /// through the handle of the one above, never through a symlink, and
    /// only when ours (design §3.18).
    Beneath,
    /// Any other folder (a joined workspace, a worktree the user moved):
    /// by its path, without a symlink at its end.
    Path,
}

/// Why the workspace of `task` is refused below the workspace root (design
/// §3.18: another user's folder, or a symlink where a folder of ours is
/// expected), if it is: for the reports of gc and drop, which leave it alone.
pub fn refusal(
    task: &crate::record::batch::Task,
) -> Option<crate::workspace::shared_root::Refused> {
    if task.remote || !Kind::of_task(task).registered() {
        return None;
    }
    if !in_layout(None, task) {
        use std::os::unix::fs::MetadataExt;
        return Some(crate::workspace::shared_root::Refused {
            path: task.root.clone(),
            owner: task
                .root
                .symlink_metadata()
                .map(|m| m.uid())
                .unwrap_or_else(|_| rustix::process::getuid().as_raw()),
            reason: crate::workspace::shared_root::Reason::NotInLayout,
        });
    }
    if !crate::workspace::shared_root::is_beneath_shape(&task.root) {
        return None;
    }
    crate::workspace::shared_root::refusal(&task.root)
}

pub(super) fn identify_at(
    common_dir: &Path,
    root: &Path,
    worktree_id: &str,
    made: Option<&crate::record::batch::Folder>,
    reach: Reach,
) -> Identity {
    use crate::workspace::shared_root::{Opened, Reason};
    use rustix::io::Errno;
    let (fd, parents) =
        if reach == Reach::Beneath && crate::workspace::shared_root::is_beneath_shape(root) {
            match crate::workspace::shared_root::open_workspace(root) {
                Ok(Opened::Ours(ws)) => (ws.dir.into_fd(), Some(ws.parents)),
                Ok(Opened::Missing) => return Identity::Missing,
                Ok(Opened::Refused(r)) if r.path == root => {
                    return Identity::Replaced(match r.reason {
                        Reason::Symlink => "is a symbolic link now",
                        Reason::NotAFolder => "is not a folder any more",
                        _ => "is owned by another user",
                    })
                }
                Ok(Opened::Refused(r)) => {
                    return Identity::Replaced(match r.reason {
                        Reason::OtherOwner => "is in a folder another user owns",
                        _ => "is reached through a symbolic link now",
                    })
                }
                Err(e) => {
                    return crate::error::io_cause(&e)
                        .and_then(|io| out_of_files(root, io))
                        .unwrap_or(Identity::Replaced("cannot be opened"))
                }
            }
        } else {
            match open_nofollow(root) {
                Ok(fd) => (fd, None),
                Err(Errno::NOENT) if root.symlink_metadata().is_err() => return Identity::Missing,
                Err(e) => {
                    if let Some(limit) = out_of_files_errno(root, e) {
                        return limit;
                    }
                    return Identity::Replaced(match root.symlink_metadata() {
                        Ok(m) if m.file_type().is_symlink() => "is a symbolic link now",
                        Ok(m) if !m.is_dir() => "is not a folder any more",
                        _ => "cannot be opened",
                    });
                }
            }
        };
    let st = match rustix::fs::fstat(&fd) {
        Ok(st) => st,
        Err(e) => {
            return out_of_files_errno(root, e).unwrap_or(Identity::Replaced("cannot be opened"))
        }
    };
    if let Some(m) = made {
        // A subvolume's device number is handed out anew after a remount:
        // its own id stands in for it (design §3.17).
        let same_dev = match &m.subvolume {
            Some(id) => {
                crate::sys::btrfs::subvolume_id(fd.as_fd()).map(|now| format!("{now:016x}"))
                    == Some(id.clone())
            }
            None => st.st_dev as u64 == m.dev,
        };
        if !same_dev || st.st_ino as u64 != m.ino {
            return Identity::Replaced("is another folder than the one prepare made");
        }
    }
    let Some(real) = real_path(&fd, root) else {
        return Identity::Replaced("cannot be opened");
    };
    let expected = match made {
        Some(m) => Some(m.path.clone()),
        None => root
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .zip(root.file_name())
            .map(|(p, n)| p.join(n)),
    };
    if expected.as_ref() != Some(&real) {
        return Identity::Replaced("is reached through a symbolic link now");
    }
    match dotgit_check(fd.as_fd(), &registration(common_dir, worktree_id)) {
        Ok(true) => {}
        Err(e) if out_of_files_errno(root, e).is_some() => {
            return out_of_files_errno(root, e).unwrap_or(Identity::Missing)
        }
        _ => {
            return Identity::Replaced("has a .git file that no longer points at its registration")
        }
    }
    match leads_home(common_dir, worktree_id) {
        Ok(true) => {}
        // Out of open files while reading the registration: no verdict on
        // the folder (read once, so no other thread's use of descriptors
        // between two reads can turn the limit into a "changed" verdict).
        Err(e) if out_of_files(root, &e).is_some() => {
            return out_of_files(root, &e).unwrap_or(Identity::Missing)
        }
        _ => {
            return Identity::Replaced(
                "has a registration that no longer leads to this repository (its `commondir` was changed)",
            )
        }
    }
    Identity::Ours {
        fd: Some(fd),
        real,
        parents,
    }
}

/// Does the registration `worktree_id` lead back to `common_dir` (design
/// §3.18): a real folder where it should be (no symlink on the way), whose
/// `commondir` names `common_dir` itself? A worker that redirects it to a
/// copy of the git dir would have everything read or written through the
/// workspace land in that copy. `Err`: reading its `commondir` failed for
/// a cause that says nothing of the registration (out of open files).
fn leads_home(common_dir: &Path, worktree_id: &str) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let reg = registration(common_dir, worktree_id);
    let real = std::fs::canonicalize(&reg).ok();
    let expected = std::fs::canonicalize(common_dir)
        .ok()
        .map(|c| c.join(crate::git::registration::DIR).join(worktree_id));
    if real.is_none() || real != expected {
        return Ok(false);
    }
    let text = match std::fs::read(reg.join("commondir")) {
        Ok(text) => text,
        Err(e) if crate::error::FsCause::of(&e).is_some() => return Err(e),
        Err(_) => return Ok(false),
    };
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let named = reg.join(std::ffi::OsStr::from_bytes(text));
    Ok(crate::sys::fs::same_file(&named, common_dir))
}

/// Does the `.git` file inside the opened folder `dir` point at `reg`?
/// Never through a symlink.
pub(super) fn dotgit_names(dir: std::os::fd::BorrowedFd<'_>, reg: &Path) -> bool {
    dotgit_check(dir, reg).unwrap_or(false)
}

/// [`dotgit_names`], with the error that kept `.git` from being read.
fn dotgit_check(dir: std::os::fd::BorrowedFd<'_>, reg: &Path) -> Result<bool, rustix::io::Errno> {
    use std::os::unix::ffi::OsStrExt;
    let text = crate::sys::fs::read_at_most(dir, ".git", 64 * 1024)?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let Some(target) = text.strip_prefix(b"gitdir: ") else {
        return Ok(false);
    };
    Ok(Path::new(std::ffi::OsStr::from_bytes(target)) == reg)
}

/// Is `root` the workspace we made: its `.git` file points at our
/// registration? (Prepare's own undo, and `git worktree move` detection;
/// tasks go through [`identify`].)
pub fn is_ours(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    matches!(
        identify_at(common_dir, root, worktree_id, None, Reach::Path),
        Identity::Ours { .. }
    )
}

/// Whether a task's workspace folder is there and is ours.
pub fn health(common_dir: &Path, task: &crate::record::batch::Task) -> Health {
    identify(common_dir, task).health()
}

/// Where the registration's `gitdir` file says its worktree is, if readable.
pub(super) fn registered_location(common_dir: &Path, worktree_id: &str) -> Option<PathBuf> {
    let text = std::fs::read(Registration::new(common_dir, worktree_id).gitdir_file()).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    use std::os::unix::ffi::OsStrExt;
    let dotgit = PathBuf::from(std::ffi::OsStr::from_bytes(text));
    dotgit.parent().map(Path::to_path_buf)
}

/// Has the registration been moved (`git worktree move`) to a folder other
/// than `root` that still points back at it? Then it is the user's now.
pub(super) fn moved_elsewhere(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    match registered_location(common_dir, worktree_id) {
        Some(at) => at != root && is_ours(common_dir, &at, worktree_id),
        None => false,
    }
}
