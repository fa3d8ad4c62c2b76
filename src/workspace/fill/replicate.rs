//! The fd-relative walk that makes the files of a batch's later
//! workspaces from the first one's (`replicate`): cloned with FICLONE
//! where the filesystem shares extents and the file is big, otherwise read
//! once and written to each; each workspace's index gets its own stat data.
//!
//! Owns: the walk, the choice between clone and copy, and the indexes it returns.
//! Never: follows a symlink, or writes outside the workspaces it is given.

use super::*;

/// How the files of later workspaces are made from the first one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::workspace) enum Method {
    /// FICLONE for files of at least [`CLONE_MIN`] bytes, copies below.
    Clone,
    /// Copies only (the filesystem cannot share extents).
    Copy,
}

/// Below this size a file is copied even where it could be cloned: a
/// small file costs a data block either way, and creating it with its data
/// is cheaper than a clone (measured on XFS: FICLONE of a small file costs
/// about three times a write of its data).
const CLONE_MIN: u64 = 64 * 1024;

/// Files up to this size are read once and written from memory into every
/// destination; bigger ones are copied in the kernel (`copy_file_range`).
const BUFFER_MAX: u64 = 1 << 20;

/// Make the files of `first` (checked out at `src_root`, its entries
/// carrying their stat data) in every plan's folder, and return each of
/// those workspaces' index (the same entries with their own stat data).
pub(in crate::workspace) fn replicate(
    src_root: &Path,
    first: &gix::index::State,
    plans: &[Plan],
    method: Method,
    threads: usize,
) -> Result<Vec<gix::index::State>> {
    let roots: Vec<&Path> = plans.iter().map(|p| p.root.as_path()).collect();
    let mut indexes: Vec<gix::index::State> = plans.iter().map(|_| first.clone()).collect();
    let n = first.entries().len();
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let paths = first.path_backing();
    // Per thread: the same entry range of every destination index.
    let mut work: Vec<(usize, Vec<&mut [gix::index::Entry]>)> = Vec::new();
    {
        let mut per_dest: Vec<std::slice::ChunksMut<'_, gix::index::Entry>> = indexes
            .iter_mut()
            .map(|i| i.entries_mut().chunks_mut(chunk))
            .collect();
        let mut start = 0;
        while start < n {
            let slices: Vec<&mut [gix::index::Entry]> =
                per_dest.iter_mut().filter_map(|c| c.next()).collect();
            let len = slices.first().map_or(0, |s| s.len());
            if len == 0 {
                break;
            }
            work.push((start, slices));
            start += len;
        }
    }
    let src_entries = first.entries();
    let threads = work.len();
    crate::sys::parallel::try_map(work, threads, checkout_panicked, |(start, mut slices)| {
        let len = slices.first().map_or(0, |x| x.len());
        let mut walk = Replicator::new(src_root, &roots, method)?;
        for i in 0..len {
            if start == 0 && i == len / 2 {
                crate::sys::interrupt::pause("replicating");
            }
            if gix::interrupt::is_triggered() {
                return Err(WorkspaceError::Interrupted);
            }
            let e = &src_entries[start + i];
            if e.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE) {
                continue; // not checked out (design §3.15)
            }
            let stats = walk.entry(e.path_in(paths), e.mode)?;
            for (slice, stat) in slices.iter_mut().zip(stats) {
                if let Some(stat) = stat {
                    slice[i].stat = stat;
                }
            }
        }
        Ok(())
    })?;
    Ok(indexes)
}

/// An fd-relative walk over sorted index paths: the folders of the current
/// path are kept open in the source and in every destination, and nothing
/// is ever followed through a symlink.
struct Replicator<'a> {
    src_root: &'a Path,
    dst_roots: &'a [&'a Path],
    method: Method,
    /// Open folders below the roots: (name, source fd, destination fds).
    stack: Vec<(Vec<u8>, OwnedFd, Vec<OwnedFd>)>,
    src_base: OwnedFd,
    dst_base: Vec<OwnedFd>,
    buf: Vec<u8>,
}

impl<'a> Replicator<'a> {
    fn new(
        src_root: &'a Path,
        dst_roots: &'a [&'a Path],
        method: Method,
    ) -> Result<Replicator<'a>> {
        Ok(Replicator {
            src_root,
            dst_roots,
            method,
            stack: Vec::new(),
            src_base: crate::workspace::carry::open_root(src_root)?,
            dst_base: dst_roots
                .iter()
                .map(|r| crate::workspace::carry::open_root(r))
                .collect::<Result<_, _>>()?,
            buf: Vec::new(),
        })
    }

    fn err(root: &Path, rel: &[u8], what: &'static str, e: rustix::io::Errno) -> WorkspaceError {
        let path = root.join(crate::sys::paths::to_os(rel.into()));
        WorkspaceError::at(what, &path, (root, IN_ROOT))(std::io::Error::from_raw_os_error(
            e.raw_os_error(),
        ))
    }

    /// Open (and create in the destinations) the folders `dirs`.
    fn enter(&mut self, dirs: &[&[u8]], rel: &[u8]) -> Result<()> {
        let keep = self
            .stack
            .iter()
            .zip(dirs)
            .take_while(|((name, _, _), d)| name.as_slice() == **d)
            .count();
        self.stack.truncate(keep);
        for d in &dirs[keep..] {
            let (src_parent, dst_parents) = self.current();
            let sfd = crate::workspace::carry::open_dir_at(src_parent, *d)
                .map_err(|e| Self::err(self.src_root, rel, "open", e))?;
            let mut dfds = Vec::with_capacity(dst_parents.len());
            for (i, parent) in dst_parents.iter().enumerate() {
                match rustix::fs::mkdirat(*parent, *d, rustix::fs::Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(Self::err(self.dst_roots[i], rel, "create", e)),
                }
                dfds.push(
                    crate::workspace::carry::open_dir_at(*parent, *d)
                        .map_err(|e| Self::err(self.dst_roots[i], rel, "open", e))?,
                );
            }
            self.stack.push((d.to_vec(), sfd, dfds));
        }
        Ok(())
    }

    /// The innermost open folder, in the source and in every destination.
    fn current(&self) -> (BorrowedFd<'_>, Vec<BorrowedFd<'_>>) {
        match self.stack.last() {
            Some((_, s, ds)) => (s.as_fd(), ds.iter().map(|f| f.as_fd()).collect()),
            None => (
                self.src_base.as_fd(),
                self.dst_base.iter().map(|f| f.as_fd()).collect(),
            ),
        }
    }

    /// The walk is fd-relative and could go deeper than a path can name;
    /// such a workspace would be unusable (git itself stops at PATH_MAX),
    /// so it fails like a checkout of the same file does.
    fn check_length(&self, rel: &[u8]) -> Result<()> {
        for root in self.dst_roots {
            if root.as_os_str().len() + 1 + rel.len() >= PATH_MAX {
                return Err(WorkspaceError::TooLong {
                    file: crate::sys::paths::quote(rel.into()),
                    root: root.to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Make the entry `rel` in every destination; its stat data per destination.
    fn entry(
        &mut self,
        rel: &gix::bstr::BStr,
        mode: gix::index::entry::Mode,
    ) -> Result<Vec<Option<gix::index::entry::Stat>>> {
        use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
        let rel: &[u8] = rel.as_ref();
        self.check_length(rel)?;
        let mut parts: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
        let name = parts.pop().unwrap_or_default();
        self.enter(&parts, rel)?;
        let mut buf = std::mem::take(&mut self.buf);
        let (src_dir, dst_dirs) = self.current();
        let (src_root, dst_roots, method) = (self.src_root, self.dst_roots, self.method);
        let mut out = Vec::with_capacity(dst_dirs.len());
        // A symlink entry is a plain file holding its target where the
        // checkout made one (`core.symlinks = false`, design §3.15): copied
        // as the file it is.
        let link = mode == gix::index::entry::Mode::SYMLINK
            && rfs::FileType::from_raw_mode(
                rfs::statat(src_dir, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| Self::err(src_root, rel, "read", e))?
                    .st_mode,
            ) == rfs::FileType::Symlink;
        match mode {
            gix::index::entry::Mode::SYMLINK if link => {
                let target = rfs::readlinkat(src_dir, name, Vec::new())
                    .map_err(|e| Self::err(src_root, rel, "read the link", e))?;
                for (i, d) in dst_dirs.iter().enumerate() {
                    let fail = |what, e| Self::err(dst_roots[i], rel, what, e);
                    rfs::symlinkat(target.as_c_str(), *d, name)
                        .map_err(|e| fail("create the link", e))?;
                    let st = rfs::statat(*d, name, AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(|e| fail("read", e))?;
                    out.push(Some(stat_of(&st)));
                }
            }
            gix::index::entry::Mode::FILE
            | gix::index::entry::Mode::FILE_EXECUTABLE
            | gix::index::entry::Mode::SYMLINK => {
                let sfd = rfs::openat(
                    src_dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| Self::err(src_root, rel, "open", e))?;
                let st = rfs::fstat(&sfd).map_err(|e| Self::err(src_root, rel, "read", e))?;
                let size = st.st_size as u64;
                let perm = Mode::from_raw_mode(st.st_mode as u32 & 0o777);
                let clone = method == Method::Clone && size >= CLONE_MIN;
                let buffered = !clone && size <= BUFFER_MAX;
                if buffered {
                    read_into(&sfd, &mut buf, size)
                        .map_err(|e| Self::err(src_root, rel, "read", e))?;
                }
                for (i, d) in dst_dirs.iter().enumerate() {
                    let fail = |what, e| Self::err(dst_roots[i], rel, what, e);
                    let dfd = crate::sys::fs::create_new_at(*d, name, perm)
                        .map_err(|e| fail("create", e))?;
                    if buffered {
                        let mut at = 0;
                        while at < buf.len() {
                            at += rustix::io::write(&dfd, &buf[at..])
                                .map_err(|e| fail("write", e))?;
                        }
                    } else {
                        let cloned = clone
                            && match rfs::ioctl_ficlone(&dfd, &sfd) {
                                Ok(()) => true,
                                Err(e) if crate::workspace::carry::is_no_reflink(e) => false,
                                Err(e) => return Err(fail("clone into", e)),
                            };
                        if !cloned {
                            crate::workspace::carry::copy_data(sfd.as_fd(), dfd.as_fd(), size)
                                .map_err(|e| fail("write", e))?;
                        }
                    }
                    let st = rfs::fstat(&dfd).map_err(|e| fail("read", e))?;
                    out.push(Some(stat_of(&st)));
                }
            }
            // Gitlinks: an empty folder, as a checkout leaves it.
            _ => {
                for (i, d) in dst_dirs.iter().enumerate() {
                    match rfs::mkdirat(*d, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(Self::err(dst_roots[i], rel, "create", e)),
                    }
                    out.push(None);
                }
            }
        }
        drop(dst_dirs);
        self.buf = buf;
        Ok(out)
    }
}

/// Read the file `fd` (`size` bytes when it was looked at) into `buf`,
/// which holds what was read (less when it shrank meanwhile).
fn read_into(fd: &OwnedFd, buf: &mut Vec<u8>, size: u64) -> rustix::io::Result<()> {
    buf.clear();
    buf.resize(size as usize, 0);
    let mut at = 0;
    while at < buf.len() {
        match rustix::io::pread(fd, &mut buf[at..], at as u64) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(at);
    Ok(())
}
