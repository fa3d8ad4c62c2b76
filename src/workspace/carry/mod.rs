//! Carrying files between trees by copy-on-write (design §3.9, §3.1 step 4):
//! the policy that picks which ignored files of the source go into each new
//! worktree, and the copy engine shared with scratch copies, which clones
//! every regular file with FICLONE where the filesystem allows and copies it
//! otherwise (or refuses, for scratch), keeping symlinks as symlinks,
//! permission bits and modification times.
//!
//! Owns: the `copy-ignored` patterns (`workspace.copy-ignored`,
//! `.worktreeinclude`, `--copy-ignored`), finding the ignored entries they
//! match, and the fd-relative copy walk (which stops at the next entry once
//! gix's interrupt flag is set: Ctrl-C during a prepare, design §3.15).
//! Never: follows a symlink (every component is opened with `O_NOFOLLOW`
//! relative to an opened folder), overwrites an existing file (files are
//! created with `O_EXCL`), writes into the source, or carries anything no
//! pattern asks for.
//! Its failures are `WorkspaceError` (the file or pattern and the cause;
//! `ops::explain` words them), a walk's filter's too (scratch's refusals
//! stop the walk).

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::record::batch::CarryStats;
use crate::workspace::error::IN_ROOT;
use crate::workspace::WorkspaceError;

mod policy;
pub(crate) use policy::copy_panicked;
pub use policy::{carry, carry_ignored, find, Carried, Policy};

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

/// The file that lists patterns of ignored files to carry, at the source root.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// How file data reaches a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// FICLONE, falling back to copying the data.
    CloneOrCopy,
    /// FICLONE only: a file that cannot be cloned is an error (`delegate::no_reflink`).
    CloneOnly,
}

/// What the walk does with an entry it is about to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    Copy,
    Skip,
}

/// Errors of FICLONE that mean "this filesystem (pair) cannot share extents".
pub fn is_no_reflink(e: Errno) -> bool {
    e == Errno::OPNOTSUPP
        || e == Errno::XDEV
        || e == Errno::INVAL
        || e == Errno::NOTTY
        || e == Errno::NOSYS
}

fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

/// Join a display path with a relative byte path.
fn at(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(crate::sys::paths::to_os(rel.as_bstr()))
    }
}

/// Open a folder by absolute path (its own path may contain symlinks; what
/// lies below it is opened with `O_NOFOLLOW`).
pub fn open_root(path: &Path) -> Result<OwnedFd> {
    rfs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkspaceError::io("open", path)(errno_io(e)))
}

/// Open the folder `name` inside `dir`, never through a symlink.
pub fn open_dir_at<P: rustix::path::Arg>(
    dir: BorrowedFd<'_>,
    name: P,
) -> rustix::io::Result<OwnedFd> {
    rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Create (or reuse) the folder `name` in `dir` and open it, never through a symlink.
fn ensure_dir_at(dir: BorrowedFd<'_>, name: &[u8], mode: u32) -> rustix::io::Result<OwnedFd> {
    match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => {
            let fd = open_dir_at(dir, name)?;
            rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777))?;
            Ok(fd)
        }
        Err(Errno::EXIST) => open_dir_at(dir, name),
        Err(e) => Err(e),
    }
}

fn timespec(secs: i64, nsecs: i64) -> rfs::Timespec {
    rfs::Timespec {
        tv_sec: secs,
        tv_nsec: nsecs as _,
    }
}

/// Copy the data of `src` into `dst` (both opened), without FICLONE: in
/// the kernel (`copy_file_range`), or with reads and writes where the two
/// files cannot do that.
pub fn copy_data(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: u64) -> rustix::io::Result<()> {
    let mut off_in = 0u64;
    let mut off_out = 0u64;
    let mut use_range = true;
    let mut buf = Vec::new();
    while off_in < len {
        let want = (len - off_in).min(1 << 30) as usize;
        if use_range {
            match rfs::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), want) {
                Ok(0) => break, // the file shrank while we copied
                Ok(_) => continue,
                Err(e)
                    if e == Errno::XDEV
                        || e == Errno::INVAL
                        || e == Errno::NOSYS
                        || e == Errno::OPNOTSUPP =>
                {
                    use_range = false;
                }
                Err(e) => return Err(e),
            }
        }
        if buf.is_empty() {
            buf = vec![0u8; 1 << 20];
        }
        let n = rustix::io::pread(src, &mut buf[..want.min(1 << 20)], off_in)?;
        if n == 0 {
            break;
        }
        let mut written = 0;
        while written < n {
            written += rustix::io::pwrite(dst, &buf[written..n], off_out + written as u64)?;
        }
        off_in += n as u64;
        off_out += n as u64;
    }
    Ok(())
}

/// What a walk asks before each entry it copies: its relative path and
/// type in, whether to copy it (or why the walk must stop) out.
pub type Filter<'a> = dyn FnMut(&[u8], FileType) -> Result<Visit> + 'a;

/// One fd-relative copy walk from a source tree into one or more destinations.
pub struct Walker<'a> {
    pub method: Method,
    /// What was written, per destination.
    pub stats: Vec<CarryStats>,
    /// Symlinks written, as paths relative to the walk's root (recorded when `record_symlinks`).
    pub symlinks: Vec<Vec<u8>>,
    pub record_symlinks: bool,
    /// Display paths of the source root and of each destination root, for messages.
    src_root: PathBuf,
    dst_roots: Vec<PathBuf>,
    /// Called with each entry's relative path and type before it is copied.
    filter: &'a mut Filter<'a>,
}

impl<'a> Walker<'a> {
    pub fn new(
        method: Method,
        src_root: PathBuf,
        dst_roots: Vec<PathBuf>,
        filter: &'a mut Filter<'a>,
    ) -> Walker<'a> {
        Walker {
            method,
            stats: vec![CarryStats::default(); dst_roots.len()],
            symlinks: Vec::new(),
            record_symlinks: false,
            src_root,
            dst_roots,
            filter,
        }
    }

    fn src_err(&self, rel: &[u8], what: &'static str, e: Errno) -> WorkspaceError {
        WorkspaceError::io(what, &at(&self.src_root, rel))(errno_io(e))
    }

    fn dst_err(&self, i: usize, rel: &[u8], what: &'static str, e: Errno) -> WorkspaceError {
        if e == Errno::EXIST {
            return WorkspaceError::Carried {
                file: at(&self.src_root, rel),
                dest: at(&self.dst_roots[i], rel),
            };
        }
        let root = &self.dst_roots[i];
        WorkspaceError::at(what, &at(root, rel), (root, IN_ROOT))(errno_io(e))
    }

    /// Copy every entry of the opened source folder into the opened
    /// destination folders (which must exist), recursively.
    pub fn copy_contents(
        &mut self,
        src: BorrowedFd<'_>,
        dsts: &[BorrowedFd<'_>],
        rel: &mut Vec<u8>,
    ) -> Result<()> {
        let names = crate::sys::fs::read_names(src).map_err(|e| self.src_err(rel, "read", e))?;
        for (name, kind) in names {
            // A carried folder can hold a whole node_modules: Ctrl-C stops
            // the copy at the next entry, not after it.
            if gix::interrupt::is_triggered() {
                return Err(WorkspaceError::Interrupted);
            }
            self.copy_entry(src, dsts, &name, kind, rel)?;
        }
        Ok(())
    }

    /// Copy the entry `name` of the opened folder `src` into each of `dsts`
    /// under the same name. `kind` is the directory entry's type (may be unknown).
    pub fn copy_entry(
        &mut self,
        src: BorrowedFd<'_>,
        dsts: &[BorrowedFd<'_>],
        name: &[u8],
        kind: FileType,
        rel: &mut Vec<u8>,
    ) -> Result<()> {
        let len_before = rel.len();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name);
        let result = self.copy_named((src, name, kind), dsts, rel);
        rel.truncate(len_before);
        result
    }

    /// [`Walker::copy_named`] for a folder: made in each destination,
    /// filled, then given the source's mode.
    fn copy_dir(
        &mut self,
        src: BorrowedFd<'_>,
        name: &[u8],
        dsts: &[BorrowedFd<'_>],
        rel: &mut Vec<u8>,
    ) -> Result<()> {
        let sfd = open_dir_at(src, name).map_err(|e| self.src_err(rel, "open", e))?;
        let st = rfs::fstat(&sfd).map_err(|e| self.src_err(rel, "read", e))?;
        let mode = st.st_mode as u32;
        let mut dfds = Vec::with_capacity(dsts.len());
        for (i, d) in dsts.iter().enumerate() {
            // Created owner-writable so the walk can fill it; the
            // source's mode is set once its content is written.
            match rfs::mkdirat(*d, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(self.dst_err(i, rel, "create", e)),
            }
            dfds.push(open_dir_at(*d, name).map_err(|e| self.dst_err(i, rel, "open", e))?);
        }
        let borrowed: Vec<BorrowedFd<'_>> = dfds.iter().map(|f| f.as_fd()).collect();
        self.copy_contents(sfd.as_fd(), &borrowed, rel)?;
        for (i, d) in dfds.iter().enumerate() {
            rfs::fchmod(d, Mode::from_raw_mode(mode & 0o7777))
                .map_err(|e| self.dst_err(i, rel, "set the mode of", e))?;
        }
        Ok(())
    }

    /// [`Walker::copy_entry`] once `rel` names the entry: `name` of the
    /// opened folder `src`, of type `kind`.
    fn copy_named(
        &mut self,
        (src, name, kind): (BorrowedFd<'_>, &[u8], FileType),
        dsts: &[BorrowedFd<'_>],
        rel: &mut Vec<u8>,
    ) -> Result<()> {
        let kind = if kind == FileType::Unknown {
            let st = rfs::statat(src, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| self.src_err(rel, "read", e))?;
            FileType::from_raw_mode(st.st_mode as _)
        } else {
            kind
        };
        if (self.filter)(rel, kind)? == Visit::Skip {
            return Ok(());
        }
        match kind {
            FileType::Directory => self.copy_dir(src, name, dsts, rel)?,
            FileType::RegularFile => {
                // O_NONBLOCK: never hang on a FIFO that replaced the file.
                let sfd = rfs::openat(
                    src,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
                    Mode::empty(),
                )
                .map_err(|e| self.src_err(rel, "open", e))?;
                let st = rfs::fstat(&sfd).map_err(|e| self.src_err(rel, "read", e))?;
                if FileType::from_raw_mode(st.st_mode as _) != FileType::RegularFile {
                    return Ok(());
                }
                let size = st.st_size as u64;
                let times = rfs::Timestamps {
                    last_access: timespec(st.st_atime as i64, st.st_atime_nsec as i64),
                    last_modification: timespec(st.st_mtime as i64, st.st_mtime_nsec as i64),
                };
                for (i, d) in dsts.iter().enumerate() {
                    let dfd = crate::sys::fs::create_new_at(*d, name, Mode::from_raw_mode(0o600))
                        .map_err(|e| self.dst_err(i, rel, "create", e))?;
                    match rfs::ioctl_ficlone(&dfd, &sfd) {
                        Ok(()) => self.stats[i].cloned += 1,
                        Err(e) if is_no_reflink(e) && self.method == Method::CloneOrCopy => {
                            copy_data(sfd.as_fd(), dfd.as_fd(), size)
                                .map_err(|e| self.dst_err(i, rel, "write", e))?;
                            self.stats[i].copied += 1;
                        }
                        Err(e) if is_no_reflink(e) => {
                            return Err(no_reflink(
                                &at(&self.src_root, rel),
                                &self.dst_roots[i],
                                e,
                            ));
                        }
                        Err(e) => return Err(self.dst_err(i, rel, "clone into", e)),
                    }
                    rfs::fchmod(&dfd, Mode::from_raw_mode(st.st_mode as u32 & 0o7777))
                        .map_err(|e| self.dst_err(i, rel, "set the mode of", e))?;
                    rfs::futimens(&dfd, &times)
                        .map_err(|e| self.dst_err(i, rel, "set the times of", e))?;
                    self.stats[i].files += 1;
                    self.stats[i].bytes += size;
                }
            }
            FileType::Symlink => {
                let target = rfs::readlinkat(src, name, Vec::new())
                    .map_err(|e| self.src_err(rel, "read the link", e))?;
                for (i, d) in dsts.iter().enumerate() {
                    rfs::symlinkat(target.as_c_str(), *d, name)
                        .map_err(|e| self.dst_err(i, rel, "create the link", e))?;
                    self.stats[i].files += 1;
                    self.stats[i].symlinks += 1;
                }
                if self.record_symlinks {
                    self.symlinks.push(rel.clone());
                }
            }
            // FIFOs, sockets and devices are not carried.
            _ => {}
        }
        Ok(())
    }
}

/// The error for a filesystem that cannot clone.
pub fn no_reflink(file: &Path, dest: &Path, e: Errno) -> WorkspaceError {
    WorkspaceError::NoReflink {
        file: file.to_path_buf(),
        dest: dest.to_path_buf(),
        source: errno_io(e),
    }
}
