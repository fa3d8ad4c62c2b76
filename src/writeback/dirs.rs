//! Symlink-safe access below the root: folder descriptors opened one
//! component at a time with `O_NOFOLLOW | O_DIRECTORY`, and `*at` calls on them.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::rc::Rc;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::paths::{join, split};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Disk {
    Absent,
    File { exec: bool },
    Link,
    Dir,
    Other,
}

impl Disk {
    pub(super) fn from_mode(mode: u32) -> Disk {
        match FileType::from_raw_mode(mode) {
            FileType::RegularFile => Disk::File {
                exec: mode & 0o111 != 0,
            },
            FileType::Symlink => Disk::Link,
            FileType::Directory => Disk::Dir,
            _ => Disk::Other,
        }
    }

    /// Same kind as an `S` entry (exec bit included).
    pub(super) fn is_kind(self, kind: EntryKind) -> bool {
        matches!(
            (self, kind),
            (Disk::File { exec: false }, EntryKind::Blob)
                | (Disk::File { exec: true }, EntryKind::BlobExecutable)
                | (Disk::Link, EntryKind::Link)
        )
    }
}

/// Folder descriptors below the root, each opened `O_NOFOLLOW | O_DIRECTORY`
/// from its parent: a symlink on the way is an error, never followed.
pub(super) struct Dirs {
    pub(super) root: Rc<OwnedFd>,
    cache: HashMap<BString, Rc<OwnedFd>>,
}

const DIR_CACHE_MAX: usize = 256;

impl Dirs {
    pub(super) fn open(root: &Path) -> std::io::Result<Dirs> {
        let fd = rustix::fs::openat(
            rustix::fs::CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dirs {
            root: Rc::new(fd),
            cache: HashMap::new(),
        })
    }

    pub(super) fn get(&mut self, rel: &BStr) -> std::io::Result<Rc<OwnedFd>> {
        if rel.is_empty() {
            return Ok(self.root.clone());
        }
        if let Some(fd) = self.cache.get(rel) {
            return Ok(fd.clone());
        }
        let (parent, name) = split(rel);
        let pfd = self.get(parent)?;
        let fd = rustix::fs::openat(
            &*pfd,
            name.as_bytes(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if self.cache.len() >= DIR_CACHE_MAX {
            self.cache.clear();
        }
        let fd = Rc::new(fd);
        self.cache.insert(rel.into(), fd.clone());
        Ok(fd)
    }

    /// Drop cached descriptors of `rel` and below (it was moved or removed).
    pub(super) fn forget(&mut self, rel: &BStr) {
        if self.cache.is_empty() {
            return;
        }
        let mut prefix = BString::from(rel);
        prefix.push(b'/');
        self.cache
            .retain(|k, _| k.as_bstr() != rel && !k.starts_with(prefix.as_slice()));
    }

    pub(super) fn parent_of<'p>(
        &mut self,
        rel: &'p BStr,
    ) -> std::io::Result<(Rc<OwnedFd>, &'p BStr)> {
        let (parent, name) = split(rel);
        Ok((self.get(parent)?, name))
    }

    /// What is at `rel`, not following a final symlink. Where a parent is
    /// missing, or is a file or a symlink (never followed), nothing is at
    /// `rel` inside the tree: absent.
    pub(super) fn lstat(&mut self, rel: &BStr) -> std::io::Result<Disk> {
        if rel.is_empty() {
            return Ok(Disk::Dir);
        }
        let (parent, name) = split(rel);
        let pfd = match self.get(parent) {
            Ok(fd) => fd,
            Err(e)
                if [Errno::NOENT, Errno::NOTDIR, Errno::LOOP]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(n.raw_os_error())) =>
            {
                return Ok(Disk::Absent)
            }
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&*pfd, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Disk::from_mode(st.st_mode)),
            Err(Errno::NOENT) => Ok(Disk::Absent),
            Err(e) => Err(e.into()),
        }
    }

    /// `lstat`, with anything unreachable counted as not a folder/absent
    /// (`Other`), for decisions that a later checked step confirms.
    pub(super) fn lstat_lenient(&mut self, rel: &BStr) -> Disk {
        self.lstat(rel).unwrap_or(Disk::Other)
    }

    pub(super) fn list(&mut self, rel: &BStr) -> std::io::Result<Vec<(BString, Disk)>> {
        let fd = self.get(rel)?;
        let mut out = Vec::new();
        for (name, kind) in crate::sys::fs::read_names(std::os::fd::AsFd::as_fd(&*fd))? {
            let kind = match kind {
                FileType::Directory => Disk::Dir,
                FileType::Symlink => Disk::Link,
                FileType::RegularFile => Disk::File { exec: false },
                FileType::Unknown => {
                    let st = rustix::fs::statat(&*fd, &name[..], AtFlags::SYMLINK_NOFOLLOW)?;
                    Disk::from_mode(st.st_mode)
                }
                _ => Disk::Other,
            };
            out.push((BString::from(name), kind));
        }
        Ok(out)
    }

    pub(super) fn unlink(&mut self, rel: &BStr) -> std::io::Result<()> {
        let (pfd, name) = self.parent_of(rel)?;
        match rustix::fs::unlinkat(&*pfd, name.as_bytes(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn rmdir(&mut self, rel: &BStr) -> std::io::Result<()> {
        if rel.is_empty() {
            return Err(Errno::BUSY.into());
        }
        let (pfd, name) = self.parent_of(rel)?;
        self.forget(rel);
        rustix::fs::unlinkat(&*pfd, name.as_bytes(), AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Remove a folder and everything in it, never following a symlink.
    pub(super) fn remove_tree(&mut self, rel: &BStr) -> std::io::Result<()> {
        for (name, kind) in self.list(rel)? {
            let child = join(rel, name.as_bstr());
            if kind == Disk::Dir {
                self.remove_tree(child.as_bstr())?;
            } else {
                self.unlink(child.as_bstr())?;
            }
        }
        match self.rmdir(rel) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
