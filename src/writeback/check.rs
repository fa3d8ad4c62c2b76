//! `check` (see the write-back's module header, "`check`"): every write
//! tested against the disk, per path, before anything is written: parents
//! that must be folders, `S` content still there, nothing unknown where `F`
//! puts a file, and folders that refuse writing.
//! Never: changes anything on disk, or follows a symlink out of the root.

use std::collections::{HashMap, HashSet};

use gix::bstr::{BStr, BString, ByteSlice};

use super::dirs::{Dirs, Disk};
use super::failure::Failure;
use super::hash::Hasher;
use super::paths::{join, parents, split};
use super::{refuse_invalid, BlockReason, Blocked, PathWrite, WriteError, WritebackError};
use crate::git::repo::Source;
use crate::sys::fs::PathError;

/// Check every write against the disk without changing anything.
pub fn check(source: &Source, writes: &[PathWrite]) -> Result<Vec<Blocked>, WritebackError> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    refuse_invalid(writes)?;
    let mut dirs =
        Dirs::open(&source.root).map_err(PathError::on("open the working tree", &source.root))?;
    let mut hasher = Hasher::new(&source.repo)?;
    let deleted: HashSet<&BStr> = writes
        .iter()
        .filter(|w| w.old.is_some() && w.new.is_none())
        .map(|w| w.path.as_bstr())
        .collect();
    let mut blocked = Vec::new();
    let mut writable: HashMap<BString, Option<i32>> = HashMap::new();
    for w in writes {
        let reason =
            check_one(&mut dirs, &mut hasher, w, &deleted).map_err(|f| WriteError::Check {
                root: source.root.clone(),
                what: f.to_string(),
                cause: f.cause(),
            })?;
        match reason {
            Some((reason, at)) => blocked.push(Blocked {
                path: at.unwrap_or_else(|| w.path.clone()),
                reason,
            }),
            None => {
                if let Some((folder, errno)) = not_writable(&mut dirs, &mut writable, w) {
                    blocked.push(Blocked {
                        path: folder,
                        reason: BlockReason::NotWritable(errno),
                    });
                }
            }
        }
    }
    blocked.dedup();
    Ok(blocked)
}

/// The folder a write has to change (the path's folder, or the deepest
/// one that exists when folders must be made) when it refuses writing, and
/// the OS error (`access(2)` with `W_OK`: EACCES, EPERM for an immutable
/// folder, which binds root too, EROFS). Cached per folder.
fn not_writable(
    dirs: &mut Dirs,
    cache: &mut HashMap<BString, Option<i32>>,
    w: &PathWrite,
) -> Option<(BString, i32)> {
    // The path's folder, or the deepest one that exists: opened from the
    // root without following symlinks (the cache makes repeats free).
    let mut folder: &BStr = split(w.path.as_bstr()).0;
    loop {
        if let Some(errno) = cache.get(folder) {
            return errno.map(|e| (folder.to_owned(), e));
        }
        match dirs.get(folder) {
            Ok(fd) => {
                let errno = rustix::fs::accessat(
                    &*fd,
                    ".",
                    rustix::fs::Access::WRITE_OK,
                    rustix::fs::AtFlags::EACCESS,
                )
                .err()
                .map(|e| e.raw_os_error());
                cache.insert(folder.to_owned(), errno);
                return errno.map(|e| (folder.to_owned(), e));
            }
            Err(_) if folder.is_empty() => return None,
            Err(_) => folder = split(folder).0,
        }
    }
}

fn check_one(
    dirs: &mut Dirs,
    hasher: &mut Hasher<'_>,
    w: &PathWrite,
    deleted: &HashSet<&BStr>,
) -> Result<Option<(BlockReason, Option<BString>)>, Failure> {
    use BlockReason::*;
    for parent in parents(w.path.as_bstr()) {
        match dirs
            .lstat(parent)
            .map_err(|e| Failure::io("stat", parent, e))?
        {
            Disk::Dir => continue,
            Disk::Absent => {
                return Ok(w.old.is_some().then_some((ChangedSinceSnapshot, None)));
            }
            disk => {
                if w.old.is_none() && deleted.contains(parent) {
                    // The S file on the way goes first; below it all is new.
                    return Ok(None);
                }
                if w.old.is_none() && disk == Disk::Link {
                    // Name the symlink, not a path behind it that does not exist.
                    return Ok(Some((SymlinkInTheWay, Some(parent.to_owned()))));
                }
                return Ok(Some((
                    if w.old.is_some() {
                        ChangedSinceSnapshot
                    } else {
                        UntrackedInTheWay
                    },
                    None,
                )));
            }
        }
    }
    let path = w.path.as_bstr();
    let disk = dirs.lstat(path).map_err(|e| Failure::io("stat", path, e))?;
    Ok(match (w.old, disk) {
        (Some(s), _) => {
            let (pfd, name) = dirs
                .parent_of(path)
                .map_err(|e| Failure::io("open", path, e))?;
            (!hasher.matches(&pfd, name, path, s)?).then_some(ChangedSinceSnapshot)
        }
        (None, Disk::Absent) => None,
        (None, _) if w.new.is_none() => None,
        (None, Disk::Dir) => {
            (!folder_only_deletions(dirs, path, deleted)?).then_some(FolderInTheWay)
        }
        (None, _) => Some(UntrackedInTheWay),
    }
    .map(|r| (r, None)))
}

/// A folder holds nothing but paths the write deletes (and empty folders).
fn folder_only_deletions(
    dirs: &mut Dirs,
    dir: &BStr,
    deleted: &HashSet<&BStr>,
) -> Result<bool, Failure> {
    let mut stack = vec![BString::from(dir)];
    while let Some(d) = stack.pop() {
        for (name, kind) in dirs
            .list(d.as_bstr())
            .map_err(|e| Failure::io("read", d.as_bstr(), e))?
        {
            let child = join(d.as_bstr(), name.as_bstr());
            if kind == Disk::Dir {
                stack.push(child);
            } else if !deleted.contains(child.as_bstr()) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}
