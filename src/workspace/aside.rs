//! Proving a task's workspace before it is removed or parked (design §3.18
//! "Before removing a workspace, prove it"). A worker may still run outside
//! its workspace and write into it by absolute path while apply (or gc, or
//! drop) reads it and then removes it: every write made after the read
//! would be lost without a word. So the folder is first moved out of its
//! place, with one rename into the trash under a name no deleter ever
//! takes (`<batch-short>-<task>-<random>.aside`): from then on a writer
//! reaching it by its path gets ENOENT, a failed write, never a lost one.
//! Then no process may still be able to write into it without a path (its
//! cwd inside, a folder inside held open, a file inside open for writing),
//! and a snapshot of the folder where it now is must give the tree the
//! caller read (and no nested repository, no path git refuses): only then
//! is it proven, and becomes an ordinary trash entry (a second rename, to
//! the name the deleter takes). Written into meanwhile, it is moved back to
//! its place, where its registration (never touched) still names it.
//!
//! A command killed between the two renames leaves the `.aside` entry in
//! the trash: no deleter takes it, and the next command that changes
//! things puts it back at its place (`restore`, from `lock_and_recover`),
//! where the batch finds it again (apply proves it anew). One that cannot
//! go back (its place is taken, its batch is gone) stays, and gc reports it
//! (`left_alone`), never deletes it.
//!
//! The cost is one scan of `/proc` and one snapshot of the workspace (a
//! stat walk, like one `git status`, with its index as the stat cache:
//! only the files whose stat data differ from the index are read), its new
//! objects kept in memory.
//!
//! Owns: the move aside, the comparison, the move back, and putting back
//! what a killed command left aside.
//! Never: deletes anything; moves a folder that is not the workspace
//! prepare made (the caller's `identify` holds it open: what moved is
//! checked to be that folder, by device and inode, and moved back when it
//! is not); touches the registration; follows a symlink (every rename goes
//! from an open folder handle to another, below the workspace root).

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use rustix::fs::{self as rfs, AtFlags, FileType, RenameFlags};
use rustix::io::Errno;

use crate::workspace::shared_root::{Dir, Opened, Parents};
use crate::workspace::trash::TRASH;
use crate::workspace::WorkspaceError;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

/// The end of the name of a workspace moved aside to be proven.
pub const SUFFIX: &str = ".aside";

/// A task's workspace moved out of its place into the trash, not proven
/// yet: held open, with the folders it came from.
pub struct Aside {
    parents: Parents,
    trash: Dir,
    /// Its name in the trash (ending in [`SUFFIX`]).
    name: OsString,
    /// Its name in the batch folder.
    place: OsString,
    fd: OwnedFd,
    /// Where it was (the task's workspace path).
    root: PathBuf,
}

/// What the last snapshot of a workspace read: its tree, and the paths git
/// refuses that it left out of the tree (none, except for gc's rescue:
/// apply never removes a workspace holding any). It held no nested
/// repository. `stat`: git-delegate's own stat record of the workspace
/// (`record::stat`, design §3.20), the only stat data the comparison
/// trusts, as the snapshot that read it did (`None`: a batch prepared
/// before records were kept, whose workspace index serves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub tree: ObjectId,
    pub invalid: Vec<gix::bstr::BString>,
    pub stat: Option<PathBuf>,
}

impl From<ObjectId> for Read {
    fn from(tree: ObjectId) -> Read {
        Read {
            tree,
            invalid: Vec::new(),
            stat: None,
        }
    }
}

impl Read {
    /// The same, compared with the stat record at `path`.
    pub fn with_stat(mut self, path: PathBuf) -> Read {
        self.stat = Some(path);
        self
    }
}

/// What comparing a workspace with what was read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// The same tree, no nested repository, no path git refuses.
    Same,
    /// Something a proposal would carry changed since it was read.
    Changed,
}

/// Move the workspace `root` that `fd` holds open (checked to be the task's
/// by the caller; `parents` hold its batch folder and repository folder)
/// into the trash under an aside name. What the rename moved is checked to
/// be the folder held (device and inode), and moved back when it is not.
pub fn move_aside(fd: OwnedFd, parents: Parents, root: &Path) -> Result<Aside> {
    let io = |e: Errno| WorkspaceError::io("move aside", root)(std::io::Error::from(e));
    let place = root
        .file_name()
        .ok_or_else(|| io(Errno::INVAL))?
        .to_os_string();
    let short = parents
        .batch
        .path()
        .file_name()
        .ok_or_else(|| io(Errno::INVAL))?
        .to_os_string();
    let held = rfs::fstat(&fd).map_err(io)?;
    let held = (held.st_dev as u64, held.st_ino as u64);
    // A deleter may remove the trash folder when it finds it empty just
    // after we made it: one retry.
    for _ in 0..2 {
        let trash = parents.base.dir.make_child(OsStr::new(TRASH))?;
        let random = uuid::Uuid::new_v4().simple().to_string();
        let mut name = short.clone();
        name.push("-");
        name.push(&place);
        name.push(format!("-{}{SUFFIX}", &random[..8]));
        match rfs::renameat_with(
            parents.batch.fd(),
            &place,
            trash.fd(),
            &name,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                if is_at(&trash, &name, held) {
                    return Ok(Aside {
                        parents,
                        trash,
                        name,
                        place,
                        fd,
                        root: root.to_path_buf(),
                    });
                }
                // Not the folder we checked (swapped in between): put it
                // back where it was.
                let _ = rfs::renameat_with(
                    trash.fd(),
                    &name,
                    parents.batch.fd(),
                    &place,
                    RenameFlags::NOREPLACE,
                );
                return Err(io(Errno::STALE));
            }
            Err(Errno::NOENT)
                if rfs::statat(parents.batch.fd(), &place, AtFlags::SYMLINK_NOFOLLOW).is_ok() =>
            {
                continue
            }
            Err(e) => return Err(io(e)),
        }
    }
    Err(io(Errno::NOENT))
}

/// Is `name` in `dir` the folder with this (device, inode)?
fn is_at(dir: &Dir, name: &OsStr, id: (u64, u64)) -> bool {
    rfs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|m| {
        FileType::from_raw_mode(m.st_mode as _) == FileType::Directory
            && (m.st_dev as u64, m.st_ino as u64) == id
    })
}

impl Aside {
    /// Where it is now.
    pub fn path(&self) -> PathBuf {
        self.trash.path().join(&self.name)
    }

    /// Compare it, where it is now, with what was read. First, nothing
    /// may still be able to write into it without a path (`holders`: a
    /// process whose cwd is inside, or that holds a folder inside open, or
    /// a file inside open for writing); then a snapshot of it now (its
    /// index as the stat cache, its new objects kept in memory) must give
    /// the same tree, no nested repository, and the same paths git
    /// refuses, and no submodule may have changed. (In that order: a write
    /// made before the scan is in what the snapshot reads, and after it
    /// nothing can write.)
    pub fn compare(&self, common_dir: &Path, read: &Read) -> Result<Compared> {
        let path = self.path();
        if crate::sys::quiesce::holders(std::slice::from_ref(&path))
            .iter()
            .any(|pids| !pids.is_empty())
        {
            return Ok(Compared::Changed);
        }
        // Work in a submodule is no part of the tree (design §3.15): what
        // was read changed none (or its workspace would have been kept).
        if !crate::workspace::submodules::changed(common_dir, &path)?.is_empty() {
            return Ok(Compared::Changed);
        }
        compare_at(common_dir, &path, read)
    }

    /// Put it back at its place (its registration never left it), making
    /// its batch folder again when a removal found it empty meanwhile and
    /// removed it. `Err`: where it stays aside, when its place is taken.
    pub fn back(mut self) -> std::result::Result<(), PathBuf> {
        let id = match rfs::fstat(&self.fd) {
            Ok(st) => (st.st_dev as u64, st.st_ino as u64),
            Err(_) => return Err(self.path()),
        };
        for _ in 0..2 {
            let moved = rfs::renameat_with(
                self.trash.fd(),
                &self.name,
                self.parents.batch.fd(),
                &self.place,
                RenameFlags::NOREPLACE,
            );
            match moved {
                Ok(()) if is_at(&self.parents.batch, &self.place, id) => return Ok(()),
                // The batch folder held open is gone (removed once empty):
                // made again, the same way prepare makes it.
                Err(Errno::NOENT) => {
                    let Some(short) = self.parents.batch.path().file_name() else {
                        return Err(self.path());
                    };
                    let short = short.to_os_string();
                    match self.parents.base.dir.make_child(&short) {
                        Ok(batch) => self.parents.batch = batch,
                        Err(_) => return Err(self.path()),
                    }
                }
                _ => return Err(self.path()),
            }
        }
        Err(self.path())
    }

    /// Proven: an ordinary trash entry now (the deleter's name), which the
    /// caller deletes or leaves to the deleter. Returns it held open, the
    /// trash folder, its name there and the folders it came from.
    pub fn into_trash(self) -> Result<Trashed> {
        let name = self.name.as_bytes();
        let entry = OsStr::from_bytes(&name[..name.len() - SUFFIX.len()]).to_os_string();
        rfs::renameat_with(
            self.trash.fd(),
            &self.name,
            self.trash.fd(),
            &entry,
            RenameFlags::NOREPLACE,
        )
        .map_err(|e| WorkspaceError::io("move into the trash", &self.path())(e.into()))?;
        Ok(Trashed {
            fd: self.fd,
            trash: self.trash,
            entry,
            parents: self.parents,
            root: self.root,
        })
    }
}

/// A proven workspace in the trash, under the name the deleter takes.
pub struct Trashed {
    pub fd: OwnedFd,
    pub trash: Dir,
    pub entry: OsString,
    pub parents: Parents,
    /// Where it was.
    pub root: PathBuf,
}

impl Trashed {
    /// Delete it now, through its handle (then the trash folder if that
    /// is empty).
    pub fn delete(self) -> Result<()> {
        self.trash.remove_child(&self.entry, self.fd)?;
        self.parents
            .base
            .dir
            .remove_child_if_empty(OsStr::new(TRASH));
        Ok(())
    }
}

/// A snapshot of the workspace folder at `path` compared with `read`.
fn compare_at(common_dir: &Path, path: &Path, read: &Read) -> Result<Compared> {
    let repo = crate::git::repo::open_worktree_of(path, common_dir)?.with_object_memory();
    // Never the workspace's index for stat data: its worker can forge one.
    let record = read
        .stat
        .as_deref()
        .and_then(|p| crate::record::stat::read(p, repo.object_hash()));
    let (snap, _, _) = crate::snapshot::snapshot_task(&repo, record.as_ref(), false)?;
    let mut invalid: Vec<&gix::bstr::BString> = snap.invalid.iter().map(|i| &i.path).collect();
    let mut was: Vec<&gix::bstr::BString> = read.invalid.iter().collect();
    invalid.sort();
    was.sort();
    Ok(
        if snap.tree == read.tree && snap.nested_repos.is_empty() && invalid == was {
            Compared::Same
        } else {
            Compared::Changed
        },
    )
}

/// A workspace left aside in a trash folder by a killed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftAside {
    /// Where it is.
    pub path: PathBuf,
    /// The batch's short id and the task, from its name.
    pub short: String,
    pub task: String,
}

/// The workspaces left aside in the trash of the repository folder `base`
/// (none when there is no trash: one failed open).
pub fn left_aside(base: &Path) -> Vec<LeftAside> {
    let Ok(Opened::Ours(b)) = crate::workspace::shared_root::open_base(base) else {
        return Vec::new();
    };
    let Ok(Opened::Ours(trash)) = b.dir.child(OsStr::new(TRASH)) else {
        return Vec::new();
    };
    trash
        .names()
        .into_iter()
        .filter_map(|n| {
            let (short, task) = parse(&n)?;
            Some(LeftAside {
                path: trash.path().join(&n),
                short,
                task,
            })
        })
        .collect()
}

/// `<8 hex>-<task>-<8 hex>.aside` as (short, task).
fn parse(name: &OsStr) -> Option<(String, String)> {
    let name = name.to_str()?.strip_suffix(SUFFIX)?;
    let hex8 = |s: &str| s.len() == 8 && s.bytes().all(|c| c.is_ascii_hexdigit());
    let (short, rest) = name.split_at_checked(8)?;
    let rest = rest.strip_prefix('-')?;
    let (task, random) = rest.rsplit_once('-')?;
    (hex8(short) && hex8(random) && !task.is_empty()).then(|| (short.to_string(), task.to_string()))
}

/// Put back at their places the workspaces a killed command left aside in
/// the trash of `base`, each where `place_of` says its task's workspace
/// goes (`None`: no batch owns it now, it stays). Only a folder whose
/// `.git` still names that task's registration goes back, and only where
/// nothing is in its place. Returns the ones left aside.
pub fn restore(
    common_dir: &Path,
    base: &Path,
    place_of: &dyn Fn(&str, &str) -> Option<PathBuf>,
) -> Vec<LeftAside> {
    let left = left_aside(base);
    if left.is_empty() {
        return left;
    }
    let Ok(Opened::Ours(b)) = crate::workspace::shared_root::open_base(base) else {
        return left;
    };
    let Ok(Opened::Ours(trash)) = b.dir.child(OsStr::new(TRASH)) else {
        return left;
    };
    left.into_iter()
        .filter(|l| {
            let Some(place) = place_of(&l.short, &l.task) else {
                return true;
            };
            !put_back(common_dir, &trash, l, &place)
        })
        .collect()
}

/// Put back at their places the workspaces a killed command left aside in
/// the trash of the repository folder `base`: each goes back to the place
/// of the task of a batch (in `state_dir`) its name names, where that
/// batch finds it again. Best effort, and cheap when there is no trash
/// (one failed open); every command that changes things runs it first
/// (`lock::lock_and_recover`).
pub fn restore_all(common_dir: &Path, base: &Path, state_dir: &Path) {
    if left_aside(base).is_empty() {
        return;
    }
    let batches = crate::record::batch::list_ok(state_dir).unwrap_or_default();
    restore(common_dir, base, &|short, task| {
        place_in(&batches, short, task)
    });
}

/// Where the task `task` of the batch `short` among `batches` has its
/// workspace, if it is a local worktree task.
fn place_in(batches: &[crate::record::batch::Batch], short: &str, task: &str) -> Option<PathBuf> {
    batches
        .iter()
        .filter(|b| b.short() == short)
        .find_map(|b| b.task(task))
        .filter(|t| !t.remote && t.kind() == crate::config::Mode::Worktree)
        .map(|t| t.root.clone())
}

/// What [`restore_all`] would put back, changing nothing (`gc --dry-run`
/// tells what gc, which runs it first, then does): each as (its place,
/// where it waits in the trash). Only one whose `.git` names its task's
/// registration and whose place is free.
pub fn would_restore(common_dir: &Path, base: &Path, state_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let left = left_aside(base);
    if left.is_empty() {
        return Vec::new();
    }
    let batches = crate::record::batch::list_ok(state_dir).unwrap_or_default();
    let Ok(Opened::Ours(b)) = crate::workspace::shared_root::open_base(base) else {
        return Vec::new();
    };
    let Ok(Opened::Ours(trash)) = b.dir.child(OsStr::new(TRASH)) else {
        return Vec::new();
    };
    left.into_iter()
        .filter_map(|l| {
            let place = place_in(&batches, &l.short, &l.task)?;
            if place.symlink_metadata().is_ok() {
                return None;
            }
            let Ok(Opened::Ours(entry)) = trash.child(l.path.file_name()?) else {
                return None;
            };
            let worktree_id = crate::workspace::worktree_id(&l.short, &l.task);
            let reg = crate::workspace::registration(common_dir, &worktree_id);
            crate::workspace::identity::dotgit_names(entry.fd(), &reg).then_some((place, l.path))
        })
        .collect()
}

/// Put the aside entry `l` of `trash` back at `place`: whether it went.
fn put_back(common_dir: &Path, trash: &Dir, l: &LeftAside, place: &Path) -> bool {
    let Some(name) = l.path.file_name() else {
        return false;
    };
    let Ok(Opened::Ours(entry)) = trash.child(name) else {
        return false;
    };
    let worktree_id = crate::workspace::worktree_id(&l.short, &l.task);
    let reg = crate::workspace::registration(common_dir, &worktree_id);
    if !crate::workspace::identity::dotgit_names(entry.fd(), &reg) {
        return false;
    }
    let (Some(batch_path), Some(place_name)) = (place.parent(), place.file_name()) else {
        return false;
    };
    let Some(short) = batch_path.file_name() else {
        return false;
    };
    let Ok(Opened::Ours(base)) = batch_path.parent().map_or(
        Ok(Opened::Missing),
        crate::workspace::shared_root::open_base,
    ) else {
        return false;
    };
    // Its batch folder, made again if a removal found it empty meanwhile.
    let Ok(batch) = base.dir.make_child(short) else {
        return false;
    };
    let id = entry.id();
    let moved = rfs::renameat_with(
        trash.fd(),
        name,
        batch.fd(),
        place_name,
        RenameFlags::NOREPLACE,
    );
    if moved.is_err() {
        return false;
    }
    if is_at(&batch, place_name, id) {
        return true;
    }
    // Not the folder we checked: back into the trash.
    let _ = rfs::renameat_with(
        batch.fd(),
        place_name,
        trash.fd(),
        name,
        RenameFlags::NOREPLACE,
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aside_names_are_parsed_and_never_taken_for_trash_entries() {
        assert_eq!(
            parse(OsStr::new("0123abcd-my-task-89abcdef.aside")),
            Some(("0123abcd".into(), "my-task".into()))
        );
        assert_eq!(parse(OsStr::new("0123abcd-1-89abcdef")), None);
        assert_eq!(parse(OsStr::new("0123abcd--89abcdef.aside")), None);
        assert_eq!(parse(OsStr::new("0123abcX-1-89abcdef.aside")), None);
        assert_eq!(parse(OsStr::new("x.aside")), None);
    }
}
