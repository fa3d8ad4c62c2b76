//! Finding and removing scratch copies (design §3.1, §3.5): recognising
//! one by its owner marker and identity, removing it and its container
//! through opened folder handles, and the copies the sweep finds beside
//! the source root.
//! Never: removes a folder whose identity (device and inode recorded in
//! the marker) is not the one prepare made, follows a symlink, or crosses
//! into another filesystem while removing.

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};
use rustix::io::Errno;

use crate::git::repo::Source;
use crate::workspace::carry;
use crate::workspace::presence::{Health, Removal};

use super::{errno_io, home_of, io, Owner, Result, CONTAINER_PREFIX, MARKER, PROJECT};

fn read_marker_at(container: BorrowedFd<'_>) -> Option<Owner> {
    let bytes = crate::sys::fs::read_at_most(container, MARKER, 64 * 1024).ok()?;
    toml::from_str(std::str::from_utf8(&bytes).ok()?).ok()
}

fn container_of(root: &Path) -> Option<&Path> {
    if root.file_name()? != PROJECT {
        return None;
    }
    let c = root.parent()?;
    c.file_name()?
        .to_str()?
        .starts_with(CONTAINER_PREFIX)
        .then_some(c)
}

/// Whether a scratch task's copy is there and is the one we made:
/// `Ours`, `Missing`, or `Foreign`.
pub fn health(common_dir: &Path, root: &Path) -> Health {
    let Ok(st) = rfs::lstat(root) else {
        return Health::Missing;
    };
    let Some(container) = container_of(root) else {
        return Health::Foreign;
    };
    let Ok(cfd) = carry::open_dir_at(rfs::CWD, container) else {
        return Health::Foreign;
    };
    match read_marker_at(cfd.as_fd()) {
        Some(o)
            if o.common_dir == common_dir
                && FileType::from_raw_mode(st.st_mode as _) == FileType::Directory
                && o.dev == st.st_dev as u64
                && o.ino == st.st_ino as u64 =>
        {
            Health::Ours
        }
        _ => Health::Foreign,
    }
}

/// Remove everything inside the opened folder `dir` (which lies on device
/// `dev`), through folder handles, never following a symlink nor crossing
/// into another filesystem. Returns the bytes the removed files occupied.
pub(crate) fn remove_contents(dir: BorrowedFd<'_>, dev: u64) -> rustix::io::Result<u64> {
    let mut freed = 0u64;
    for (name, kind) in crate::sys::fs::read_names(dir)? {
        let st = match rfs::statat(dir, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e),
        };
        let _ = kind;
        if FileType::from_raw_mode(st.st_mode as _) == FileType::Directory {
            freed += remove_dir_at(dir, name.as_slice(), &st, dev)?;
        } else {
            rfs::unlinkat(dir, name.as_slice(), AtFlags::empty())?;
            freed += st.st_blocks as u64 * 512;
        }
    }
    Ok(freed)
}

/// Remove the folder `name` of `dir` (as `st`, its `lstat`, found it, on
/// device `dev`) with everything in it, through folder handles: a folder
/// that is a mount point or was replaced after `st` was read is left
/// (`XDEV`), one already gone is fine. Returns the bytes its files occupied.
pub(crate) fn remove_dir_at(
    dir: BorrowedFd<'_>,
    name: &[u8],
    st: &rfs::Stat,
    dev: u64,
) -> rustix::io::Result<u64> {
    let sub = carry::open_dir_at(dir, name)?;
    let sst = rfs::fstat(&sub)?;
    if sst.st_dev as u64 != dev || sst.st_ino != st.st_ino {
        return Err(Errno::XDEV);
    }
    if sst.st_mode & 0o700 != 0o700 {
        rfs::fchmod(
            &sub,
            Mode::from_raw_mode((sst.st_mode as u32 | 0o700) & 0o7777),
        )?;
    }
    let freed = remove_contents(sub.as_fd(), dev)?;
    drop(sub);
    match rfs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(freed),
        Err(e) => Err(e),
    }
}

/// Remove a scratch task's copy and its container, never a folder that is
/// not the copy we made. Returns `Removed`, `Missing` (already gone) or
/// `Foreign` (left alone).
pub fn remove(common_dir: &Path, root: &Path) -> Result<Removal> {
    remove_counting(common_dir, root).map(|(r, _)| r)
}

/// Like [`remove`], also returning the bytes the removed files occupied.
pub fn remove_counting(common_dir: &Path, root: &Path) -> Result<(Removal, u64)> {
    let Some(container) = container_of(root) else {
        return Ok((
            if root.symlink_metadata().is_ok() {
                Removal::Foreign
            } else {
                Removal::Missing
            },
            0,
        ));
    };
    let cfd = match carry::open_dir_at(rfs::CWD, container) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok((Removal::Missing, 0)),
        Err(_) => return Ok((Removal::Foreign, 0)),
    };
    let Some(owner) = read_marker_at(cfd.as_fd()) else {
        return Ok((Removal::Foreign, 0));
    };
    if owner.common_dir != common_dir {
        return Ok((Removal::Foreign, 0));
    }
    let io = |e: Errno| io("remove", root)(errno_io(e));
    let mut freed = 0;
    let state = match carry::open_dir_at(cfd.as_fd(), PROJECT) {
        Ok(pfd) => {
            let st = rfs::fstat(&pfd).map_err(io)?;
            if st.st_dev as u64 != owner.dev || st.st_ino as u64 != owner.ino {
                return Ok((Removal::Foreign, 0));
            }
            if st.st_mode & 0o700 != 0o700 {
                rfs::fchmod(
                    &pfd,
                    Mode::from_raw_mode((st.st_mode as u32 | 0o700) & 0o7777),
                )
                .map_err(io)?;
            }
            freed = remove_contents(pfd.as_fd(), owner.dev).map_err(io)?;
            drop(pfd);
            // Only an empty folder can go here: a replaced one is never lost.
            rfs::unlinkat(cfd.as_fd(), PROJECT, AtFlags::REMOVEDIR).map_err(io)?;
            Removal::Removed
        }
        Err(Errno::NOENT) => Removal::Missing,
        Err(_) => return Ok((Removal::Foreign, 0)),
    };
    remove_container(&cfd, container)?;
    Ok((state, freed))
}

/// Remove the marker, left-over temp files, and the (then empty) container,
/// checking that the name still leads to the folder we hold open.
fn remove_container(cfd: &OwnedFd, container: &Path) -> Result<()> {
    let io = |e: Errno| io("remove", container)(errno_io(e));
    for (name, _) in crate::sys::fs::read_names(cfd.as_fd()).map_err(io)? {
        if name == MARKER.as_bytes() || name.starts_with(MARKER.as_bytes()) {
            rfs::unlinkat(cfd.as_fd(), name.as_slice(), AtFlags::empty()).map_err(io)?;
        }
    }
    let (Some(parent), Some(name)) = (container.parent(), container.file_name()) else {
        return Ok(());
    };
    let pfd = carry::open_root(parent)?;
    let held = rfs::fstat(cfd).map_err(io)?;
    match rfs::statat(&pfd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if st.st_dev == held.st_dev && st.st_ino == held.st_ino => {
            match rfs::unlinkat(&pfd, name, AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                // Something else was put into it: leave the container.
                Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => Ok(()),
                Err(e) => Err(io(e)),
            }
        }
        _ => Ok(()),
    }
}

/// A scratch container beside the source that `gc` may reclaim.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// `<parent>/.git-delegate-scratch-<random>`
    pub container: PathBuf,
    /// `<container>/project`
    pub root: PathBuf,
    /// From the owner marker (`None` for an unmarked, empty container).
    pub owner: Option<Owner>,
    /// Why it is a candidate: `batch_gone` (no such batch any more),
    /// `task_gone`, `task_closed` (the task was applied, discarded or the copy
    /// replaced), `batch_stale` (its batch's lease is expired or orphaned:
    /// gc's usual stale-batch handling, with rescue, applies), or `unmarked`
    /// (an empty container left by a crash).
    pub reason: &'static str,
}

impl Candidate {
    /// Reclaimable without looking at any batch: its batch or task is gone
    /// or closed, or it is an empty leftover.
    pub fn is_orphan(&self) -> bool {
        self.reason != "batch_stale"
    }
}

/// Scratch containers of this repository that no live batch owns, found
/// beside the main working tree. Containers of other repositories and
/// folders without our marker (unless empty) are never listed.
pub fn sweep_candidates(source: &Source) -> Result<Vec<Candidate>> {
    let Some(home) = home_of(&source.common_dir) else {
        return Ok(Vec::new());
    };
    let rd = match std::fs::read_dir(&home) {
        Ok(rd) => rd,
        Err(_) => return Ok(Vec::new()),
    };
    let mut batches: Option<Vec<crate::record::batch::Batch>> = None;
    let mut out = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(name_s) = name.to_str() else {
            continue;
        };
        if !name_s.starts_with(CONTAINER_PREFIX) {
            continue;
        }
        let container = home.join(&name);
        let root = container.join(PROJECT);
        let Ok(cfd) = carry::open_dir_at(rfs::CWD, container.as_path()) else {
            continue;
        };
        let Some(owner) = read_marker_at(cfd.as_fd()) else {
            if is_empty_container(cfd.as_fd()) {
                out.push(Candidate {
                    container,
                    root,
                    owner: None,
                    reason: "unmarked",
                });
            }
            continue;
        };
        if owner.common_dir != source.common_dir {
            continue;
        }
        let batches = match &batches {
            Some(b) => b,
            None => batches.insert(crate::record::batch::list_ok(&source.state_dir())?),
        };
        let reason = match batches.iter().find(|b| b.id == owner.batch) {
            None => Some("batch_gone"),
            Some(b) => match b.task(&owner.task) {
                None => Some("task_gone"),
                Some(t) if t.root != root || !t.state.is_open() => Some("task_closed"),
                Some(_) if b.lease.state().is_stale() => Some("batch_stale"),
                Some(_) => None,
            },
        };
        if let Some(reason) = reason {
            out.push(Candidate {
                container,
                root,
                owner: Some(owner),
                reason,
            });
        }
    }
    out.sort_by(|a, b| a.container.cmp(&b.container));
    Ok(out)
}

/// A container holding nothing, or only an empty `project` folder.
fn is_empty_container(cfd: BorrowedFd<'_>) -> bool {
    let Ok(names) = crate::sys::fs::read_names(cfd) else {
        return false;
    };
    names.iter().all(|(n, _)| {
        n == PROJECT.as_bytes()
            && carry::open_dir_at(cfd, PROJECT)
                .ok()
                .and_then(|p| crate::sys::fs::read_names(p.as_fd()).ok())
                .is_some_and(|v| v.is_empty())
    })
}

/// Reclaim a candidate of [`sweep_candidates`]; returns the bytes freed.
/// (For `gc`.)
/// An unmarked container is only removed while it is empty.
#[allow(dead_code)]
pub fn remove_candidate(source: &Source, c: &Candidate) -> Result<u64> {
    match &c.owner {
        Some(_) => remove_counting(&source.common_dir, &c.root).map(|(_, b)| b),
        None => {
            let _ = std::fs::remove_dir(&c.root);
            let _ = std::fs::remove_dir(&c.container);
            Ok(0)
        }
    }
}

/// Problems for `status`: scratch copies of this repository that no batch owns.
pub fn orphan_messages(source: &Source) -> Vec<(String, String)> {
    sweep_candidates(source)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.is_orphan())
        .map(|c| {
            let batch = c
                .owner
                .as_ref()
                .map(|o| o.batch.clone())
                .unwrap_or_default();
            let msg = format!(
                "scratch copy {} is left over ({}){}; `git delegate gc` reclaims it",
                c.container.display(),
                c.reason.replace('_', " "),
                c.owner
                    .as_ref()
                    .map(|o| format!(
                        " from batch {} task {}",
                        crate::record::batch::short(&o.batch),
                        o.task
                    ))
                    .unwrap_or_default()
            );
            (batch, msg)
        })
        .collect()
}
