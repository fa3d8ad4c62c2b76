//! Filling a workspace: the parallel checkout of the first one at the
//! baseline, the index whose stat data make the first snapshot hash nothing
//! (`settle`, `date`), and the fd-relative walk that makes the files of the
//! others from it (`replicate`: cloned with FICLONE where the filesystem
//! shares extents and the file is big, otherwise read once and written to
//! each).
//! Its failures are `WorkspaceError` (the workspace, the file and the cause);
//! `ops::explain` words them.
//! Never: follows a symlink, writes outside the workspaces it is given.

use std::path::Path;

use super::{Cause, Plan};
use crate::workspace::error::IN_ROOT;
use crate::workspace::WorkspaceError;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

mod replicate;
pub(super) use replicate::{replicate, Method};

/// Check out `index` into the empty folder `root` with `threads` workers
/// (entries marked `SKIP_WORKTREE` are left out); the entries receive the
/// stat data of the files written. Anything already at a path is never
/// overwritten: a collision is an error.
pub(super) fn checkout(
    repo: &gix::Repository,
    index: &mut gix::index::State,
    root: &Path,
    threads: usize,
) -> Result<()> {
    let git = |source: gix::Error| WorkspaceError::Checkout {
        root: root.to_path_buf(),
        source,
    };
    let mut opts = repo
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(git)?;
    opts.destination_is_initially_empty = true;
    // Never over anything in the way (a carried ignored file, in a
    // verification snapshot): that is a collision, reported below.
    opts.overwrite_existing = false;
    opts.thread_limit = Some(threads);
    let objects = repo
        .objects
        .clone()
        .into_arc()
        .map_err(|e| WorkspaceError::Objects { source: e.into() })?;
    let outcome = run_checkout(index, root, objects, opts)
        .map_err(|e| checkout_failed(Some((repo, &*index)), root, e.into()))?;
    if gix::interrupt::is_triggered() {
        return Err(WorkspaceError::Interrupted);
    }
    if let Some(first) = outcome.errors.into_iter().next() {
        let file = crate::sys::paths::quote(first.path.as_ref());
        let source: Cause = first.error.into();
        // A full disk and the like first (`ops::explain` names them), then
        // a filter driver's failure.
        if crate::error::Error::fs_cause("", Some(root), &*source).is_none() {
            if let Some(err) = crate::git::blob::checkout_filter(repo, index, root, &*source) {
                return Err(err.into());
            }
        }
        return Err(WorkspaceError::WriteFile {
            file,
            root: root.to_path_buf(),
            source,
        });
    }
    if let Some(first) = outcome.collisions.first() {
        return Err(WorkspaceError::InTheWay {
            file: crate::sys::paths::quote(first.path.as_ref()),
            root: root.to_path_buf(),
        });
    }
    // gix writes `ident` its own way; git's bytes (design §3.15).
    Ok(crate::git::ident::fix_checkout(repo, index, root)?)
}

/// gix's checkout of `index` into `root` with `objects` (shared with its
/// threads), without progress; Ctrl-C stops it.
pub(super) fn run_checkout(
    index: &mut gix::index::State,
    root: &Path,
    objects: impl gix::objs::Find + Send + Clone,
    opts: gix::worktree::state::checkout::Options,
) -> std::result::Result<gix::worktree::state::checkout::Outcome, gix::Error> {
    gix::worktree::state::checkout(
        index,
        root,
        objects,
        &gix::progress::Discard,
        &gix::progress::Discard,
        &gix::interrupt::IS_INTERRUPTED,
        opts,
    )
}

/// The filesystem clock under `dir` as (seconds, nanoseconds), probed with a
/// file, since that clock can lag the system clock by a tick.
fn fs_clock(dir: &Path) -> Result<(i64, u32)> {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join(".git-delegate-clock");
    let now = std::fs::write(&probe, b"")
        .and_then(|_| std::fs::symlink_metadata(&probe))
        .map_err(WorkspaceError::io("write in", dir));
    let _ = std::fs::remove_file(&probe);
    let md = now?;
    Ok((md.mtime(), md.mtime_nsec() as u32))
}

/// Rough cost of dating one file (utimensat + lstat), to weigh against a wait.
const DATE_COST: std::time::Duration = std::time::Duration::from_micros(12);

/// Make fresh indexes stat caches that neither git nor gix must second-guess.
///
/// git compares whole seconds and treats an entry whose mtime is not older
/// than the index file as "racily clean" (re-hashed on every status), and a
/// same-size edit within the second a file was written would look clean to
/// it. Files written in an earlier second than the filesystem clock's
/// current one are neither, once the index is written (nobody edits a
/// workspace before prepare hands it out). For the files of the current
/// second there are two ways out, whichever is cheaper: wait until the clock
/// enters the next second, or date those files one whole second back and
/// take their stat data again.
pub(super) fn settle(
    roots: &[&Path],
    indexes: &mut [gix::index::State],
    cores: usize,
) -> Result<()> {
    let Some(first) = roots.first() else {
        return Ok(());
    };
    let (now, nsecs) = fs_clock(first)?;
    let racy = |e: &gix::index::Entry| {
        i64::from(e.stat.mtime.secs) >= now && e.mode != gix::index::entry::Mode::COMMIT
    };
    let in_future = |e: &gix::index::Entry| i64::from(e.stat.mtime.secs) > now;
    let count: usize = indexes
        .iter()
        .map(|i| i.entries().iter().filter(|e| racy(e)).count())
        .sum();
    let future = indexes.iter().any(|i| i.entries().iter().any(&in_future));
    let wait = std::time::Duration::from_nanos(u64::from(1_000_000_000u32.saturating_sub(nsecs)));
    let dating = DATE_COST * u32::try_from(count / cores.max(1)).unwrap_or(u32::MAX);
    if count == 0 {
        return Ok(());
    }
    if !future && wait < dating {
        // Sleep into the next second of the filesystem clock.
        std::thread::sleep(wait);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while fs_clock(first)?.0 <= now && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if fs_clock(first)?.0 > now {
            return Ok(());
        }
    }
    let stamp = rustix::fs::Timespec {
        tv_sec: now - 1,
        tv_nsec: 0,
    };
    for (root, index) in roots.iter().zip(indexes.iter_mut()) {
        date(root, index, &racy, stamp, cores)?;
    }
    Ok(())
}

/// Date the entries `which` picks to `stamp` and take their stat data again.
fn date(
    root: &Path,
    index: &mut gix::index::State,
    which: &(dyn Fn(&gix::index::Entry) -> bool + Sync),
    stamp: rustix::fs::Timespec,
    threads: usize,
) -> Result<()> {
    let times = rustix::fs::Timestamps {
        last_access: stamp,
        last_modification: stamp,
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    let chunk = entries.len().div_ceil(threads.max(1)).max(1);
    let date = |entries: &mut [gix::index::Entry]| -> Result<()> {
        for e in entries {
            if !which(e) {
                continue;
            }
            let path = root.join(crate::sys::paths::to_os(e.path_in(paths)));
            let io = |source: std::io::Error| WorkspaceError::io("date", &path)(source);
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &path,
                &times,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|err| io(err.into()))?;
            let st = rustix::fs::lstat(&path).map_err(|err| io(err.into()))?;
            e.stat = stat_of(&st);
        }
        Ok(())
    };
    let chunks: Vec<_> = entries.chunks_mut(chunk).collect();
    let threads = chunks.len();
    crate::sys::parallel::try_map(chunks, threads, checkout_panicked, date)?;
    Ok(())
}

/// Can files under `a` be cloned into `b` (FICLONE)? Probed with a
/// one-byte file; any failure means no.
pub(super) fn can_clone(a: &Path, b: &Path) -> bool {
    use rustix::fs::{self as rfs, Mode, OFlags};
    let src = a.join(".git-delegate-clone-probe");
    let dst = b.join(".git-delegate-clone-probe");
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let ok = (|| -> rustix::io::Result<()> {
        let s = rfs::open(&src, flags, Mode::from_raw_mode(0o600))?;
        rustix::io::write(&s, b"x")?;
        let d = rfs::open(&dst, flags, Mode::from_raw_mode(0o600))?;
        rfs::ioctl_ficlone(&d, &s)
    })()
    .is_ok();
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&dst);
    ok
}

/// Index stat data from a `stat` result, as `gix::index::entry::Stat::from_fs` makes them.
#[allow(clippy::unnecessary_cast)]
pub(super) fn stat_of(st: &rustix::fs::Stat) -> gix::index::entry::Stat {
    crate::git::stat::index_stat(
        (st.st_mtime as i64, st.st_mtime_nsec as i64),
        (st.st_ctime as i64, st.st_ctime_nsec as i64),
        st.st_dev as u64,
        st.st_ino as u64,
        (st.st_uid as u32, st.st_gid as u32),
        st.st_size as u64,
    )
}

/// The longest path the kernel takes (Linux `PATH_MAX`, terminator included).
pub(super) const PATH_MAX: usize = 4096;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// What a checkout thread's panic is reported as.
pub(super) fn checkout_panicked() -> WorkspaceError {
    WorkspaceError::Panicked { what: "checkout" }
}

/// A checkout (or writing its index) that failed with `e`: a filter
/// driver's failure where `repo` and its index are at hand (after a full
/// disk and the like, which `ops::explain` names), otherwise the checkout's
/// own error.
pub(super) fn checkout_failed(
    repo: Option<(&gix::Repository, &gix::index::State)>,
    root: &Path,
    e: Cause,
) -> WorkspaceError {
    if crate::error::Error::fs_cause("", Some(root), &*e).is_none() {
        if let Some(err) =
            repo.and_then(|(r, i)| crate::git::blob::checkout_filter(r, i, root, &*e))
        {
            return err.into();
        }
    }
    WorkspaceError::CheckoutFiles {
        root: root.to_path_buf(),
        source: e,
    }
}
