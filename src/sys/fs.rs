//! Generic filesystem helpers the engine shares: durable atomic writes,
//! fsync of a folder, removal that never follows a symlink and accepts
//! "gone already", removing emptied parents, the size of a tree,
//! canonical paths; and, on an opened folder, listing it, reading a small
//! file and creating a new file in it without following a symlink.
//!
//! Owns: these few operations on plain paths, and their error (`FsError`:
//! what was written, removed or resolved, with the OS error as its cause);
//! the shape every path I/O error of the engine has (`PathError`: `cannot
//! <op> <path>`, the OS error its cause).
//! Never: knows what a batch, workspace or repository is (callers decide
//! which paths are theirs to write or remove), or writes below a source's
//! root (that is `writeback`'s symlink-safe job, design §7); words a help
//! line or decides an error code (`ops::explain` does, with `error`'s
//! classification of OS errors).

use std::io::Write;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags};

/// An OS error on one path, worded `cannot <op> <path>` (the OS error is
/// its cause, worded and classified by `error`): the one shape of the
/// engine's path I/O failures, which `FsError`, `ops::lock::LockError` and
/// `workspace::WorkspaceError` embed instead of each spelling it out.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} {}", path.display())]
pub struct PathError {
    /// What was done to `path`: `create`, `remove`, `read`, `write in`, ...
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl PathError {
    /// The error of `op` on `path`, for `map_err`.
    pub fn on<'a>(
        op: &'static str,
        path: &'a Path,
    ) -> impl Fn(std::io::Error) -> PathError + Copy + 'a {
        move |source| PathError {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A failed write, removal or canonicalisation. The message is the
/// `Display` followed by the OS error, as `ops::explain` words it.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// [`write_atomic`] of a file in the folder `dir` (whose filesystem a
    /// full disk names).
    #[error("{io}")]
    Write {
        dir: PathBuf,
        #[source]
        io: PathError,
    },
    /// [`remove_file`] or [`remove_all`] (`remove`), [`canonical`]
    /// (`resolve`).
    #[error(transparent)]
    Path(#[from] PathError),
}

type Result<T, E = FsError> = std::result::Result<T, E>;

fn removing(p: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
    move |source| PathError::on("remove", p)(source).into()
}

/// Write `bytes` to `path` atomically and durably, through a temp file
/// beside it (`.<name>.tmp-<pid>`, [`is_temp_name`]) that no failure leaves
/// behind (a full disk included, design §3.18 "Leftovers"): only a killed
/// process leaves one, which gc removes once it is old.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_replacing(path, bytes, true)
}

/// [`write_atomic`], durable (fsync'd) only when `durable`: for a cache,
/// which a crash may leave missing or stale but never torn in place.
pub fn write_replacing(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}{TEMP_MARK}{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let io = |source| FsError::Write {
        dir: dir.to_path_buf(),
        io: PathError::on("write", path)(source),
    };
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| if durable { f.sync_all() } else { Ok(()) })
        .and_then(|()| {
            drop(f);
            std::fs::rename(&tmp, path)
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    if durable {
        sync_dir(dir);
    }
    Ok(())
}

/// What names a temp file of [`write_atomic`]: `.<name>.tmp-<pid>`.
const TEMP_MARK: &str = ".tmp-";

/// Is `name` a temp file [`write_atomic`] makes (`.<name>.tmp-<pid>`)?
pub fn is_temp_name(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b".") else {
        return false;
    };
    let mark = TEMP_MARK.as_bytes();
    match rest.windows(mark.len()).rposition(|w| w == mark) {
        Some(at) => {
            let pid = &rest[at + mark.len()..];
            at > 0 && !pid.is_empty() && pid.iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

/// The filesystem clock of the folder `dir` now, as (seconds,
/// nanoseconds): the modification time a file made there gets, read from
/// an unnamed file (`O_TMPFILE`: no name ever appears in `dir`), or, where
/// the filesystem makes none, from a temp file beside `dir`'s content
/// removed at once ([`is_temp_name`]). `None` when neither can be made.
pub fn clock_at(dir: &Path) -> Option<(i64, u32)> {
    let mode = Mode::from_raw_mode(0o600);
    let flags = OFlags::WRONLY | OFlags::CLOEXEC;
    let fd = match rfs::open(dir, flags | OFlags::TMPFILE, mode) {
        Ok(fd) => fd,
        Err(_) => {
            let tmp = dir.join(format!(
                ".git-delegate-clock{TEMP_MARK}{}",
                std::process::id()
            ));
            let fd = rfs::open(
                &tmp,
                flags | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
                mode,
            );
            let _ = std::fs::remove_file(&tmp);
            fd.ok()?
        }
    };
    let st = rfs::fstat(&fd).ok()?;
    Some((st.st_mtime as i64, st.st_mtime_nsec as u32))
}

/// Do `a` and `b` lead to the same file or folder (device and inode,
/// symlinks followed)? `false` when either cannot be read.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// fsync a folder so a rename in it is durable (best effort).
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Remove a file or symlink; gone already is fine.
pub fn remove_file(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(removing(p)(e)),
    }
}

/// Remove a file, symlink or folder (never following a symlink); gone already is fine.
pub fn remove_all(p: &Path) -> Result<()> {
    let meta = match p.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(removing(p)(e)),
    };
    let r = if meta.is_dir() {
        // An emptied btrfs subvolume that `rmdir` may not remove goes
        // through the ioctl where permitted (design §3.17).
        std::fs::remove_dir_all(p)
            .or_else(|e| crate::sys::btrfs::remove_empty_dir(p).map_err(|_| e))
    } else {
        std::fs::remove_file(p)
    };
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(removing(p)(e)),
    }
}

/// Remove up to `levels` empty folders above `p` (best effort; stops at
/// the first that is not empty).
pub fn remove_empty_parents(p: &Path, levels: usize) {
    let mut dir = p.parent();
    for _ in 0..levels {
        match dir {
            Some(d) if std::fs::remove_dir(d).is_ok() => dir = d.parent(),
            _ => break,
        }
    }
}

/// Is `p` a real folder (not a symlink to one)?
pub fn is_real_dir(p: &Path) -> bool {
    p.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// Is `p` a real folder (not a symlink to one) with nothing in it?
pub fn is_empty_dir(p: &Path) -> bool {
    is_real_dir(p) && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

/// Sum of the sizes of the files (and symlinks) under `p`, never following a symlink.
pub fn tree_size(p: &Path) -> u64 {
    let Ok(meta) = p.symlink_metadata() else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    let mut total = 0;
    let mut stack = vec![p.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Canonicalise, tolerating paths git reports through `..` components.
pub fn canonical(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|source| PathError::on("resolve", p)(source).into())
}

/// The names in an opened folder (without `.` and `..`), with their types.
pub fn read_names(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<(Vec<u8>, FileType)>> {
    let mut d = rfs::Dir::read_from(dir)?;
    let mut out = Vec::new();
    while let Some(entry) = d.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push((name.to_vec(), entry.file_type()));
    }
    Ok(out)
}

/// At most the first `limit` bytes of the regular file `name` in the
/// opened folder `dir`, read through a handle that never follows a symlink
/// and never waits on a FIFO put in its place (anything but a regular file
/// is `EINVAL`, a failed read `EIO`).
pub fn read_at_most(
    dir: BorrowedFd<'_>,
    name: impl rustix::path::Arg,
    limit: u64,
) -> rustix::io::Result<Vec<u8>> {
    use std::io::Read;
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    if FileType::from_raw_mode(rfs::fstat(&fd)?.st_mode) != FileType::RegularFile {
        return Err(rustix::io::Errno::INVAL);
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|_| rustix::io::Errno::IO)?;
    Ok(bytes)
}

/// Create the new file `name` in the opened folder `dir` for writing, never
/// through a symlink and never over an existing entry (`O_EXCL`).
pub fn create_new_at(dir: BorrowedFd<'_>, name: &[u8], mode: Mode) -> rustix::io::Result<OwnedFd> {
    rfs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_never_follows_a_symlink_and_gone_is_fine() {
        let t = tempfile::tempdir().unwrap();
        let kept = t.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("f"), b"12345").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&kept, &link).unwrap();
        assert!(!is_real_dir(&link));
        assert_eq!(tree_size(&kept), 5);
        remove_all(&link).unwrap();
        assert!(kept.join("f").is_file());
        remove_all(&link).unwrap();
        remove_file(&link).unwrap();
        assert!(!is_empty_dir(&kept));
        remove_file(&kept.join("f")).unwrap();
        assert!(is_empty_dir(&kept));
    }

    /// A small file is read up to its limit; a symlink, a folder or a FIFO
    /// in its place is refused, the FIFO without waiting for a writer.
    #[test]
    fn read_at_most_reads_only_a_regular_file() {
        use std::os::fd::AsFd;
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"gitdir: x\n").unwrap();
        std::os::unix::fs::symlink("f", t.path().join("link")).unwrap();
        std::fs::create_dir(t.path().join("dir")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            t.path().join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let dir = std::fs::File::open(t.path()).unwrap();
        let at = |name, limit| read_at_most(dir.as_fd(), name, limit);
        assert_eq!(at("f", 64).unwrap(), b"gitdir: x\n");
        assert_eq!(at("f", 3).unwrap(), b"git");
        assert_eq!(at("link", 64), Err(rustix::io::Errno::LOOP));
        assert_eq!(at("dir", 64), Err(rustix::io::Errno::INVAL));
        assert_eq!(at("fifo", 64), Err(rustix::io::Errno::INVAL));
        assert_eq!(at("gone", 64), Err(rustix::io::Errno::NOENT));
    }

    #[test]
    fn atomic_write_replaces_whole() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("a.toml");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temp file is left");
    }

    /// A failed write leaves no temp file (design §3.18 "Leftovers"): here
    /// its rename onto a folder fails after the temp file was written.
    #[test]
    fn a_failed_atomic_write_leaves_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("taken");
        std::fs::create_dir(p.join("")).unwrap();
        std::fs::write(p.join("x"), b"").unwrap();
        assert!(write_atomic(&p, b"bytes").is_err());
        let names: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["taken"]);
    }

    #[test]
    fn temp_names_are_those_write_atomic_makes() {
        let pid = std::process::id();
        assert!(is_temp_name(format!(".batch.toml.tmp-{pid}").as_bytes()));
        assert!(is_temp_name(b".1.patch.tmp-7"));
        assert!(is_temp_name(b".a.tmp-b.tmp-12"));
        for no in [
            &b"batch.toml.tmp-7"[..],
            b".tmp-7",
            b".x.tmp-",
            b".x.tmp-7a",
            b".x.tmp7",
        ] {
            assert!(!is_temp_name(no), "{}", String::from_utf8_lossy(no));
        }
    }
}
