//! The write-back's temp files (step 3 of `writeback`'s "Order of
//! operations"): one symlink or file per path the result puts there, made
//! `O_EXCL` in its folder, its content from the blob through the smudge
//! filters (or copied as it is inflated), hashed as it is written, and the
//! permission bits of the file it replaces.
//!
//! Owns: making one temp entry and saying what it holds (`Wrote`).
//! Never: renames anything into place or fsyncs (`writer` does both).

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;

use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::failure::Failure;
use super::hash::{raw_sha1, Hasher, Tee};
use super::journal::{Item, Wrote};
use super::paths::split;
use super::writer::{result_perm, Writer};

impl Writer<'_> {
    /// The temp symlink of `it` (at `temp`, in the folder `dfd`), from the
    /// blob `id`'s bytes.
    pub(super) fn temp_link(
        &self,
        it: &Item,
        dfd: &OwnedFd,
        temp: &BString,
        id: ObjectId,
    ) -> Result<Wrote, Failure> {
        let tname = split(temp.as_bstr()).1;
        let blob = self
            .repo
            .find_blob(id)
            .map_err(|e| unreadable(it, id, &e))?;
        rustix::fs::symlinkat(&blob.data[..], dfd, tname.as_bytes())
            .map_err(|e| Failure::io("create", temp.as_bstr(), e))?;
        let st = rustix::fs::statat(dfd, tname.as_bytes(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Failure::io("stat", temp.as_bstr(), e))?;
        Ok(Wrote::Link {
            ino: st.st_ino as u64,
            sha1: raw_sha1(&blob.data),
        })
    }

    /// The temp file of `it` (at `temp`, in the folder `dfd`), from the
    /// blob `id` through the smudge filters; a symlink where git makes none
    /// is a plain file holding its target (no filters, as git writes it:
    /// design §3.15). Returns the file (to fsync) and what it holds.
    pub(super) fn temp_file(
        &mut self,
        hasher: &mut Hasher<'_>,
        it: &Item,
        dfd: &OwnedFd,
        temp: &BString,
        (kind, id): (EntryKind, ObjectId),
    ) -> Result<(std::fs::File, Wrote), Failure> {
        let tname = split(temp.as_bstr()).1;
        let unreadable = |e: &gix::Error| unreadable(it, id, e);
        let exec = kind == EntryKind::BlobExecutable;
        let stand_in = kind == EntryKind::Link;
        // The file this one replaces keeps its permission bits
        // (design §7 "Modes"): the temp is private until they
        // are set, so no byte of it is ever more readable.
        let kept = self
            .replaced_perm(it)?
            .map(|perm| result_perm(perm, it.old, exec));
        let create = match kept {
            Some(_) => 0o600,
            None if exec => 0o777,
            None => 0o666,
        };
        let fd = rustix::fs::openat(
            dfd,
            tname.as_bytes(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(create),
        )
        .map_err(|e| Failure::io("create", temp.as_bstr(), e))?;
        let file = std::fs::File::from(fd);
        let big = crate::git::blob::size(self.repo, id).map_err(|e| unreadable(&e))?
            > crate::git::blob::STREAM_ABOVE;
        // The bytes are hashed as they are written (what the
        // journal records of this path); whole blocks of zeros
        // stay holes.
        let mut sparse = crate::git::blob::Sparse::new(&file);
        let mut tee = Tee::new(&mut sparse);
        if stand_in {
            let blob = self.repo.find_blob(id).map_err(|e| unreadable(&e))?;
            std::io::Write::write_all(&mut tee, &blob.data)
                .map_err(|e| Failure::io("write", temp.as_bstr(), e))?;
        } else if big
            && crate::git::blob::smudge_is_identity(&mut hasher.pipeline, it.path.as_bstr())
        {
            // Copied from the object store as it is inflated.
            let mut from = crate::git::blob::open(self.repo, id).map_err(|e| unreadable(&e))?;
            crate::git::blob::copy(&mut from, &mut tee)
                .map_err(|e| Failure::io("write", temp.as_bstr(), e))?;
        } else {
            let blob = self.repo.find_blob(id).map_err(|e| unreadable(&e))?;
            hasher.smudge_into(&blob.data, it.path.as_bstr(), &mut tee)?;
        }
        let sha1 = tee.sha1();
        sparse
            .finish()
            .map_err(|e| Failure::io("write", temp.as_bstr(), e))?;
        if let Some(perm) = kept {
            // fchmod: no umask, and only on the file we made.
            rustix::fs::fchmod(&file, Mode::from_raw_mode(perm))
                .map_err(|e| Failure::io("set the mode of", temp.as_bstr(), e))?;
        }
        let md = file
            .metadata()
            .map_err(|e| Failure::io("stat", temp.as_bstr(), e))?;
        let wrote = Wrote::File {
            mode: md.mode() & 0o7777,
            size: md.len(),
            ino: md.ino(),
            mtime: md.mtime(),
            mtime_ns: md.mtime_nsec(),
            sha1,
        };
        Ok((file, wrote))
    }

    /// The permission bits of the file that `it` replaces: what stands at
    /// its path now, when `S` has an entry there and it is a regular file
    /// (`None` for a new path, or a symlink or folder in its place).
    fn replaced_perm(&mut self, it: &Item) -> Result<Option<u32>, Failure> {
        if it.old.is_none() || it.covered || it.aside_folder {
            return Ok(None);
        }
        let path = it.path.as_bstr();
        let (pfd, name) = match self.dirs.parent_of(path) {
            Ok(p) => p,
            // Not reachable as a folder: the rename step finds out why.
            Err(_) => return Ok(None),
        };
        match rustix::fs::statat(&*pfd, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {
                Ok(Some(st.st_mode & 0o777))
            }
            Ok(_) | Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Failure::io("stat", path, e)),
        }
    }
}

/// The new content of `it` (the blob `id`) cannot be read.
fn unreadable(it: &Item, id: ObjectId, e: &gix::Error) -> Failure {
    Failure::because(
        format!(
            "cannot read the new content of {} ({id}): {e}",
            crate::sys::paths::quote(it.path.as_bstr())
        ),
        e,
    )
}
