//! Folders below the workspace root (design §3.18 "Shared workspace
//! roots"). `workspace.root` may be a folder other users write in (a sticky
//! `/tmp`-like one), where the name of this repository's folder
//! `<root>/<repo-name>-<fp>` is one anyone can work out. So every folder
//! below the root is reached from an open handle of the folder above it,
//! one name at a time, with `O_NOFOLLOW | O_DIRECTORY` (what `openat2`'s
//! `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH` gives for a path, plus an
//! ownership check at every step, which `openat2` cannot make), and used
//! only when the current user owns it. What is removed is removed through
//! the handle that was checked: its content through it, then its name
//! through the parent's handle, only while that name still is that folder;
//! never by resolving its path again.
//!
//! prepare (and a verification) makes the repository folder and the batch
//! folder `0700` (an existing one of ours is made `0700`), once the root
//! itself is known to be safe: no folder on the way to it is another
//! user's, or writable by everyone without the sticky bit, and no symlink
//! on the way is another user's. Then nobody else can rename, add or
//! replace anything below the batch folder, so the checkout that follows
//! may write there by path (gix writes by path).
//!
//! Owns: the walk below the root (`open_base`, `open_workspace`, `Dir`),
//! the refusal (`Refused`, `delegate::unsafe_workspace_root`), the root
//! check, the private folders prepare makes (`make_batch_dir`), sizes and
//! removals through handles.
//! Never: follows a symlink below the root; enters, reads or removes a
//! folder another user owns; removes by path what it checked through a
//! handle; knows what a batch or a workspace holds (its callers do).
//! Its failures are `WorkspaceError` (the folder, the refusal or the
//! cause); `ops::explain` words them.

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::workspace::error::IN_ROOT;
pub use crate::workspace::refused::{Reason, Refused};
use crate::workspace::WorkspaceError;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

mod make;
pub use make::{check, make_batch_dir, make_batch_dir_at};

impl Refused {
    /// prepare's refusal (exit 3, `delegate::unsafe_workspace_root`, with
    /// the folder in the JSON error document). A file of the user's own
    /// where a folder should be is no one's attack: it is the error making
    /// the folder there gives (`delegate::io`).
    pub fn error(&self) -> WorkspaceError {
        if self.reason == Reason::NotAFolder && self.owner == me() {
            return WorkspaceError::at("create", &self.path, (&self.path, IN_ROOT))(errno_io(
                Errno::NOTDIR,
            ));
        }
        WorkspaceError::Unsafe(self.clone())
    }
}

/// Add `r` to `list` unless a refusal of the same folder is there already.
pub fn note(list: &mut Vec<Refused>, r: Refused) {
    if !list.iter().any(|x| x.path == r.path) {
        list.push(r);
    }
}

/// What opening a folder below the root found.
#[derive(Debug)]
pub enum Opened<T> {
    /// A real folder the current user owns, held open.
    Ours(T),
    /// Nothing is there.
    Missing,
    Refused(Refused),
}

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

/// A folder below the workspace root, held open: reached without
/// following a symlink, owned by the current user.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    dev: u64,
    ino: u64,
    mode: u32,
}

impl Dir {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Where it was found.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its device and inode.
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// The folder `name` in this one, never through a symlink, only when it is ours.
    pub fn child(&self, name: &OsStr) -> Result<Opened<Dir>> {
        child_at(self.fd(), &self.path, name)
    }

    /// The folder `name` in this one, made `0700` if it is not there; an
    /// existing one of ours is made `0700`. Another user's, or anything
    /// but a folder, is refused (`delegate::unsafe_workspace_root`).
    pub fn make_child(&self, name: &OsStr) -> Result<Dir> {
        make_child_at(self.fd(), &self.path, name)
    }

    /// The names in this folder (best effort: empty when it cannot be read).
    pub fn names(&self) -> Vec<OsString> {
        let mut names: Vec<OsString> = crate::sys::fs::read_names(self.fd())
            .unwrap_or_default()
            .into_iter()
            .map(|(n, _)| std::os::unix::ffi::OsStringExt::from_vec(n))
            .collect();
        names.sort();
        names
    }

    /// Does it hold nothing?
    pub fn is_empty(&self) -> bool {
        crate::sys::fs::read_names(self.fd()).is_ok_and(|n| n.is_empty())
    }

    /// Sum of the sizes of the files (and symlinks) below it, never
    /// following a symlink.
    pub fn size(&self) -> u64 {
        size_at(self.fd())
    }

    /// Remove the folder `name` of this one, which `held` holds open (the
    /// one that was checked): its content through `held` (never following a
    /// symlink nor crossing into another filesystem), then the empty folder
    /// through this one, only while `name` still is that folder.
    pub fn remove_child(&self, name: &OsStr, held: OwnedFd) -> Result<()> {
        remove_held_at(self.fd(), &self.path.join(name), name, held)
    }

    /// Remove the folder `name` of this one if it is empty (best effort; a
    /// symlink there is no folder and stays).
    pub fn remove_child_if_empty(&self, name: &OsStr) -> bool {
        rfs::unlinkat(self.fd(), name, AtFlags::REMOVEDIR).is_ok()
    }
}

/// The single name `name` is: no `/`, not empty, `.` or `..`.
fn is_one_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/')
}

fn child_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> Result<Opened<Dir>> {
    let path = dir_path.join(name);
    if !is_one_name(name) {
        return Ok(Opened::Missing);
    }
    let io = |e: Errno| WorkspaceError::io("open", &path)(errno_io(e));
    match rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let st = rfs::fstat(&fd).map_err(io)?;
            if st.st_uid as u32 != me() {
                return Ok(Opened::Refused(Refused {
                    path,
                    owner: st.st_uid as u32,
                    reason: Reason::OtherOwner,
                }));
            }
            Ok(Opened::Ours(Dir {
                fd,
                path,
                dev: st.st_dev as u64,
                ino: st.st_ino as u64,
                mode: st.st_mode as u32,
            }))
        }
        Err(Errno::NOENT) => Ok(Opened::Missing),
        // A symlink (ELOOP), not a folder (ENOTDIR), or a folder we may not
        // open (EACCES): what is it, and whose?
        Err(e) => match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let kind = FileType::from_raw_mode(st.st_mode as _);
                let reason = if kind == FileType::Symlink {
                    Reason::Symlink
                } else if kind != FileType::Directory {
                    Reason::NotAFolder
                } else if st.st_uid as u32 != me() {
                    Reason::OtherOwner
                } else {
                    return Err(io(e));
                };
                Ok(Opened::Refused(Refused {
                    path,
                    owner: st.st_uid as u32,
                    reason,
                }))
            }
            Err(Errno::NOENT) => Ok(Opened::Missing),
            Err(_) => Err(io(e)),
        },
    }
}

fn make_child_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> Result<Dir> {
    let path = dir_path.join(name);
    let io = |e: Errno| WorkspaceError::at("create", &path, (&path, IN_ROOT))(errno_io(e));
    // Removed by someone else in between (a background deleter taking an
    // empty trash): once more.
    for _ in 0..2 {
        match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io(e)),
        }
        match child_at(dir, dir_path, name)? {
            Opened::Ours(d) => {
                if d.mode & 0o7777 != 0o700 {
                    rfs::fchmod(&d.fd, Mode::from_raw_mode(0o700)).map_err(io)?;
                }
                return Ok(d);
            }
            Opened::Refused(r) => return Err(r.error()),
            Opened::Missing => continue,
        }
    }
    Err(io(Errno::NOENT))
}

/// The repository folder `<root>/<repo-name>-<fp>`, held open with the
/// root (opened by its path: the user chose it).
#[derive(Debug)]
pub struct Base {
    root: OwnedFd,
    name: OsString,
    pub dir: Dir,
}

impl Base {
    /// Remove the repository folder if it is empty (best effort).
    pub fn remove_if_empty(&self) -> bool {
        rfs::unlinkat(&self.root, self.name.as_os_str(), AtFlags::REMOVEDIR).is_ok()
    }
}

fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    Some((path.parent()?, path.file_name()?))
}

/// Open the repository folder `base` (`<root>/<repo-name>-<fp>`): the root
/// by its path, the folder through it, never through a symlink and only
/// when it is ours. `Missing` when either is not there.
pub fn open_base(base: &Path) -> Result<Opened<Base>> {
    let Some((root, name)) = split(base) else {
        return Ok(Opened::Missing);
    };
    let rootfd = match rfs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Opened::Missing),
        Err(e) => return Err(WorkspaceError::io("open", root)(errno_io(e))),
    };
    Ok(match child_at(rootfd.as_fd(), root, name)? {
        Opened::Ours(dir) => Opened::Ours(Base {
            root: rootfd,
            name: name.to_os_string(),
            dir,
        }),
        Opened::Missing => Opened::Missing,
        Opened::Refused(r) => Opened::Refused(r),
    })
}

/// The folders above a workspace `<root>/<repo-name>-<fp>/<batch>/<name>`, held open.
#[derive(Debug)]
pub struct Parents {
    pub base: Base,
    pub batch: Dir,
}

/// A workspace folder reached through its parents.
#[derive(Debug)]
pub struct Workspace {
    pub parents: Parents,
    pub dir: Dir,
}

/// Is `root` deep enough to be `<root>/<repo-name>-<fp>/<batch>/<name>`?
pub fn is_beneath_shape(root: &Path) -> bool {
    root.parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .is_some()
        && root.file_name().is_some()
}

/// Open the workspace folder `root` = `<root>/<repo-name>-<fp>/<batch>/<name>`
/// through its parents: the repository folder, the batch folder and the
/// workspace itself, each never through a symlink and only when ours.
pub fn open_workspace(root: &Path) -> Result<Opened<Workspace>> {
    let Some((batch_path, name)) = split(root) else {
        return Ok(Opened::Missing);
    };
    let Some((base_path, short)) = split(batch_path) else {
        return Ok(Opened::Missing);
    };
    let base = match open_base(base_path)? {
        Opened::Ours(b) => b,
        Opened::Missing => return Ok(Opened::Missing),
        Opened::Refused(r) => return Ok(Opened::Refused(r)),
    };
    let batch = match base.dir.child(short)? {
        Opened::Ours(d) => d,
        Opened::Missing => return Ok(Opened::Missing),
        Opened::Refused(r) => return Ok(Opened::Refused(r)),
    };
    Ok(match batch.child(name)? {
        Opened::Ours(dir) => Opened::Ours(Workspace {
            parents: Parents { base, batch },
            dir,
        }),
        Opened::Missing => Opened::Missing,
        Opened::Refused(r) => Opened::Refused(r),
    })
}

/// Why the workspace folder `root` (or a folder above it, below the
/// workspace root) is refused, if it is.
pub fn refusal(root: &Path) -> Option<Refused> {
    match open_workspace(root) {
        Ok(Opened::Refused(r)) => Some(r),
        _ => None,
    }
}

/// The size of the workspace folder `root` reached through its parents
/// (0 when it is not ours).
pub fn tree_size(root: &Path) -> u64 {
    match open_workspace(root) {
        Ok(Opened::Ours(ws)) => ws.dir.size(),
        _ => 0,
    }
}

/// Remove the batch folder and the repository folder above the workspace
/// `root` when they are empty, through their handles (best effort).
pub fn remove_empty_parents(root: &Path) {
    let Some((batch_path, _)) = split(root) else {
        return;
    };
    let Some((base_path, short)) = split(batch_path) else {
        return;
    };
    if let Ok(Opened::Ours(base)) = open_base(base_path) {
        if base.dir.remove_child_if_empty(short) {
            base.remove_if_empty();
        }
    }
}

/// Remove the folder `name` in `parent` that `held` holds open (see
/// [`Dir::remove_child`]); `path` names it in errors.
pub fn remove_held_at(
    parent: BorrowedFd<'_>,
    path: &Path,
    name: &OsStr,
    held: OwnedFd,
) -> Result<()> {
    let io = |e: Errno| WorkspaceError::io("remove", path)(errno_io(e));
    let st = rfs::fstat(&held).map_err(io)?;
    if st.st_mode & 0o700 != 0o700 {
        rfs::fchmod(
            &held,
            Mode::from_raw_mode((st.st_mode as u32 | 0o700) & 0o7777),
        )
        .map_err(io)?;
    }
    crate::workspace::scratch::remove_contents(held.as_fd(), st.st_dev as u64).map_err(io)?;
    drop(held);
    match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(now) if now.st_dev == st.st_dev && now.st_ino == st.st_ino => {
            // Only an empty folder can go here: a replaced one is never
            // lost (an emptied subvolume too, design §3.17).
            match crate::sys::btrfs::remove_empty_dir_at(parent, name.as_bytes()) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(io(e)),
            }
        }
        _ => Ok(()),
    }
}

/// Sum of the sizes of the files (and symlinks) below the opened folder,
/// never following a symlink (what cannot be read counts nothing).
fn size_at(dir: BorrowedFd<'_>) -> u64 {
    let mut total = 0;
    for (name, _) in crate::sys::fs::read_names(dir).unwrap_or_default() {
        let Ok(st) = rfs::statat(dir, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if FileType::from_raw_mode(st.st_mode as _) == FileType::Directory {
            if let Ok(sub) = crate::workspace::carry::open_dir_at(dir, name.as_slice()) {
                total += size_at(sub.as_fd());
            }
        } else {
            total += st.st_size as u64;
        }
    }
    total
}

#[cfg(test)]
mod tests;
