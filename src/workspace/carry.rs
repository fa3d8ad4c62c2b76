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
            FileType::Directory => {
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
            }
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

// ---------------------------------------------------------------------------
// The policy: which ignored files are carried.

/// The `copy-ignored` patterns of a prepare: `.worktreeinclude`, then
/// `workspace.copy-ignored`, then `--copy-ignored`; like gitignore, a later
/// pattern wins over an earlier one, and `!pattern` excludes again.
pub struct Policy {
    search: gix::ignore::Search,
    count: usize,
}

impl Policy {
    /// Read the patterns of a source. `cli` are the `--copy-ignored` values.
    pub fn load(source_root: &Path, config: &[String], cli: &[String]) -> Result<Policy> {
        for p in config.iter().chain(cli) {
            if p.contains('\n') || p.contains('\r') {
                return Err(WorkspaceError::MultiLine { pattern: p.clone() });
            }
        }
        let parse = gix::ignore::search::Ignore {
            support_precious: false,
        };
        let mut search = gix::ignore::Search::default();
        let include = source_root.join(INCLUDE_FILE);
        match std::fs::symlink_metadata(&include) {
            Ok(m) if m.is_file() => {
                let bytes =
                    std::fs::read(&include).map_err(WorkspaceError::io("read", &include))?;
                search
                    .add_patterns_buffer(&bytes, include.clone(), None, parse)
                    .map_err(WorkspaceError::io("read", &include))?;
            }
            Ok(_) => return Err(WorkspaceError::IncludeNotFile { path: include }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(WorkspaceError::io("read", &include)(source)),
        }
        for (list, name) in [(config, "workspace.copy-ignored"), (cli, "--copy-ignored")] {
            if list.is_empty() {
                continue;
            }
            let text = list.join("\n");
            search
                .add_patterns_buffer(text.as_bytes(), PathBuf::from(name), None, parse)
                .map_err(|source| WorkspaceError::Patterns { name, source })?;
        }
        let count = search.patterns.iter().map(|l| l.patterns.len()).sum();
        Ok(Policy { search, count })
    }

    /// No pattern at all: nothing is carried and the source is not even walked.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `Some(true)`: a pattern asks for `path`; `Some(false)`: a `!pattern` refuses it.
    pub fn matches(&self, path: &BStr, is_dir: bool) -> Option<bool> {
        self.search
            .pattern_matching_relative_path(path, Some(is_dir), gix::glob::pattern::Case::Sensitive)
            .map(|m| !m.pattern.is_negative())
    }

    /// Could a pattern match something inside the folder `dir`?
    pub fn may_match_below(&self, dir: &BStr) -> bool {
        use gix::glob::pattern::Mode as M;
        let mut prefix = BString::from(dir);
        prefix.push(b'/');
        self.search
            .patterns
            .iter()
            .flat_map(|l| &l.patterns)
            .any(|m| {
                let p = &m.pattern;
                if p.is_negative() {
                    return false;
                }
                if p.mode.contains(M::NO_SUB_DIR) {
                    return !p.mode.contains(M::ABSOLUTE);
                }
                let literal = &p.text[..p.first_wildcard_pos.unwrap_or(p.text.len())];
                if literal.len() >= prefix.len() {
                    literal.starts_with(&prefix)
                } else {
                    prefix.starts_with(literal)
                }
            })
    }
}

/// One ignored entry to carry (a file, symlink, or a whole folder).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Carried {
    pub path: BString,
    pub is_dir: bool,
}

struct Finder<'a> {
    policy: &'a Policy,
    found: Vec<Carried>,
    descend: Vec<BString>,
}

impl gix::dir::walk::Delegate for Finder<'_> {
    fn emit(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        _collapsed: Option<gix::dir::entry::Status>,
    ) -> gix::dir::walk::Action {
        use gix::dir::entry::{Kind, Status};
        if matches!(entry.status, Status::Ignored(_)) {
            let is_dir = matches!(entry.disk_kind, Some(Kind::Directory | Kind::Repository));
            let carry_able = matches!(
                entry.disk_kind,
                Some(Kind::Directory | Kind::Repository | Kind::File | Kind::Symlink)
            );
            let path = entry.rela_path.as_ref();
            match self.policy.matches(path, is_dir) {
                Some(true) if carry_able => self.found.push(Carried {
                    path: path.to_owned(),
                    is_dir,
                }),
                Some(_) => {}
                None if is_dir && self.policy.may_match_below(path) => {
                    self.descend.push(path.to_owned())
                }
                None => {}
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// The ignored files and folders of the source that the policy asks for, sorted.
pub fn find(repo: &gix::Repository, policy: &Policy) -> Result<Vec<Carried>> {
    if policy.is_empty() {
        return Ok(Vec::new());
    }
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Vec::new());
    };
    let git = |source: gix::Error| WorkspaceError::List { source };
    let index = repo.index_or_empty().map_err(git)?;
    let opts = repo
        .dirwalk_options()
        .map_err(git)?
        .emit_ignored(Some(gix::dir::walk::EmissionMode::Matching))
        .emit_untracked(gix::dir::walk::EmissionMode::Matching)
        .emit_tracked(false)
        .emit_empty_directories(false)
        .recurse_repositories(false);
    let mut finder = Finder {
        policy,
        found: Vec::new(),
        descend: Vec::new(),
    };
    // Ctrl-C during a prepare stops the walk (design §3.15).
    repo.dirwalk(
        &index,
        None::<&str>,
        &gix::interrupt::IS_INTERRUPTED,
        opts,
        &mut finder,
    )
    .map_err(git)?;
    if gix::interrupt::is_triggered() {
        return Err(WorkspaceError::Interrupted);
    }
    // Below an ignored folder everything is ignored (git cannot re-include
    // there): walk such folders ourselves where a pattern may match inside.
    let mut stack = std::mem::take(&mut finder.descend);
    while let Some(dir) = stack.pop() {
        let abs = workdir.join(crate::sys::paths::to_os(dir.as_ref()));
        let rd = match std::fs::read_dir(&abs) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(WorkspaceError::io("read", &abs)(source)),
        };
        for entry in rd {
            let entry = entry.map_err(WorkspaceError::io("read", &abs))?;
            let Ok(ft) = entry.file_type() else { continue };
            use std::os::unix::ffi::OsStrExt;
            let mut path = dir.clone();
            path.push(b'/');
            path.extend_from_slice(entry.file_name().as_bytes());
            let is_dir = ft.is_dir();
            if !(is_dir || ft.is_file() || ft.is_symlink()) {
                continue;
            }
            match policy.matches(path.as_ref(), is_dir) {
                Some(true) => finder.found.push(Carried { path, is_dir }),
                Some(false) => {}
                None if is_dir && policy.may_match_below(path.as_ref()) => stack.push(path),
                None => {}
            }
        }
    }
    finder.found.sort();
    finder.found.dedup();
    // A folder carried whole already holds whatever else matched inside it.
    let dirs: std::collections::HashSet<BString> = finder
        .found
        .iter()
        .filter(|c| c.is_dir)
        .map(|c| c.path.clone())
        .collect();
    let out: Vec<Carried> = finder
        .found
        .into_iter()
        .filter(|c| {
            let p: &[u8] = c.path.as_ref();
            !p.iter()
                .enumerate()
                .any(|(i, &b)| b == b'/' && dirs.contains(p[..i].as_bstr()))
        })
        .collect();
    Ok(out)
}

/// Copy `entries` (relative to `src_root`) into every destination root,
/// cloning where possible and copying otherwise. Missing parent folders are
/// created with the source's modes. Returns what each destination received.
pub fn carry(
    src_root: &Path,
    entries: &[Carried],
    dst_roots: &[PathBuf],
) -> Result<Vec<CarryStats>> {
    if entries.is_empty() || dst_roots.is_empty() {
        return Ok(vec![CarryStats::default(); dst_roots.len()]);
    }
    // One walker per destination, in parallel: FICLONE and the metadata
    // writes are per-file system calls that overlap well.
    crate::sys::parallel::try_map(
        dst_roots,
        crate::sys::parallel::threads(4),
        copy_panicked,
        |dst| carry_one(src_root, entries, dst),
    )
}

/// What a copying thread's panic is reported as.
pub(crate) fn copy_panicked() -> WorkspaceError {
    WorkspaceError::Panicked { what: "copying" }
}

fn carry_one(src_root: &Path, entries: &[Carried], dst_root: &Path) -> Result<CarryStats> {
    let src = open_root(src_root)?;
    let dst = open_root(dst_root)?;
    let mut keep = |_: &[u8], _: FileType| Ok(Visit::Copy);
    let mut walker: Walker<'_> = Walker::new(
        Method::CloneOrCopy,
        src_root.to_path_buf(),
        vec![dst_root.to_path_buf()],
        &mut keep,
    );
    for (n, entry) in entries.iter().enumerate() {
        if n == 1 {
            crate::sys::interrupt::pause("carrying");
        }
        if gix::interrupt::is_triggered() {
            return Err(WorkspaceError::Interrupted);
        }
        let comps: Vec<&[u8]> = entry.path.split_str("/").collect();
        let Some((name, parents)) = comps.split_last() else {
            continue;
        };
        // Open (or create) the parent folders on both sides, never through a symlink.
        let mut sdir: Option<OwnedFd> = None;
        let mut ddir: Option<OwnedFd> = None;
        let mut rel: Vec<u8> = Vec::new();
        for comp in parents {
            let s_parent = sdir.as_ref().map(|f| f.as_fd()).unwrap_or(src.as_fd());
            let d_parent = ddir.as_ref().map(|f| f.as_fd()).unwrap_or(dst.as_fd());
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(comp);
            let s = open_dir_at(s_parent, *comp).map_err(|e| walker.src_err(&rel, "open", e))?;
            let mode = rfs::fstat(&s).map(|st| st.st_mode as u32).unwrap_or(0o755);
            let d = ensure_dir_at(d_parent, comp, mode)
                .map_err(|e| walker.dst_err(0, &rel, "create", e))?;
            sdir = Some(s);
            ddir = Some(d);
        }
        let s_parent = sdir.as_ref().map(|f| f.as_fd()).unwrap_or(src.as_fd());
        let d_parent = ddir.as_ref().map(|f| f.as_fd()).unwrap_or(dst.as_fd());
        let kind = match rfs::statat(s_parent, *name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => FileType::from_raw_mode(st.st_mode as _),
            // Gone since the walk: nothing to carry.
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(walker.src_err(&entry.path, "read", e)),
        };
        walker.copy_entry(s_parent, &[d_parent], name, kind, &mut rel)?;
    }
    Ok(walker.stats[0])
}

/// Find the source's ignored entries the policy asks for and carry them
/// into every workspace root (after checkout). Returns what each received.
pub fn carry_ignored(
    repo: &gix::Repository,
    policy: &Policy,
    roots: &[PathBuf],
) -> Result<Vec<CarryStats>> {
    if policy.is_empty() {
        return Ok(vec![CarryStats::default(); roots.len()]);
    }
    let Some(src_root) = repo.workdir() else {
        return Ok(vec![CarryStats::default(); roots.len()]);
    };
    let src_root = crate::sys::fs::canonical(src_root)?;
    let entries = find(repo, policy)?;
    carry(&src_root, &entries, roots)
}
