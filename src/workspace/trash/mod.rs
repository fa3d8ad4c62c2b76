//! The trash: removed workspaces wait in `<root>/<repo-name>-<fp>/.trash/`
//! until a background process deletes them.
//!
//! Deleting a checked-out tree of 100k files costs tens of seconds of
//! kernel time on ext4 (inode and journal work; `rm -rf` is no faster), so
//! `apply` does not wait for it: a workspace that is ours is moved into the
//! trash with one `rename` (same filesystem: the trash sits beside the batch
//! folders), its registration goes, and a detached child of this binary
//! (`git-delegate purge-trash DIR`: own session, stdio on /dev/null, nice 19,
//! which also lowers its I/O priority under the CFQ/BFQ schedulers) deletes
//! it. An entry the deleter cannot delete at once (a subvolume btrfs will
//! not delete for the moment) is tried again after pauses of up to about a
//! minute in all. A trash left behind by a killed deleter, or one that gave
//! up, is swept by the next mutating command (in the background) and by
//! `gc` (in the foreground).
//!
//! An entry is deleted only when it is a real folder named
//! `<batch-short>-<task>-<random>` whose `.git` file names a `delegate-*`
//! worktree registration (or, once that `.git` file went last, an empty
//! folder): nothing but workspaces that were ours ever gets there, and the
//! ownership check happens before the rename. A workspace moved into the
//! trash to be proven before removal (`aside`, design §3.18) is named
//! `<batch-short>-<task>-<random>.aside` until it is: no deleter takes it. One deleter at a time works
//! on a trash folder (`flock` on it); later ones wait for it and then take
//! what is left.
//!
//! The trash sits below the workspace root, which may be shared (design
//! §3.18): the repository folder, the trash (made `0700`) and every entry
//! are reached through the handle of the folder above (`shared_root`),
//! never through a symlink and only when ours; the rename into the trash
//! goes from the batch folder's handle to the trash's, and an entry is
//! deleted through the handle that was checked.
//!
//! Owns: moving workspaces into the trash, deleting trash entries, starting
//! the background deleter.
//! Never: deletes anything outside a `.trash` folder, an entry that does not
//! look like one of our workspaces, or follows a symlink while deleting.

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, flock, AtFlags, FileType, FlockOperation};
use rustix::io::Errno;

use crate::workspace::shared_root::{Dir, Opened, Parents};

/// The trash folder's name, beside the batch folders of a repository.
pub const TRASH: &str = ".trash";

/// Move the workspace folder `root` into its trash folder (one rename,
/// from the batch folder `parents` holds open to the trash's handle). The
/// caller has checked that it is ours and holds it open: `held` is its
/// (device, inode). What the rename moved is checked against it, and moved
/// back when it is not that folder (swapped in between). `None` when it
/// could not be moved (the caller then removes it in place).
pub fn put(parents: &Parents, root: &Path, held: (u64, u64)) -> Option<PathBuf> {
    let name = root.file_name()?;
    let task = name.to_str()?;
    let short = parents.batch.path().file_name()?.to_str()?;
    let from = parents.batch.fd();
    // A deleter may remove the trash folder when it finds it empty just
    // after we made it: one retry.
    for _ in 0..2 {
        let trash = parents.base.dir.make_child(OsStr::new(TRASH)).ok()?;
        let random = uuid::Uuid::new_v4().simple().to_string();
        let to = format!("{short}-{task}-{}", &random[..8]);
        match rfs::renameat_with(from, name, trash.fd(), &to, rfs::RenameFlags::NOREPLACE) {
            Ok(()) => {
                let moved = rfs::statat(trash.fd(), &to, AtFlags::SYMLINK_NOFOLLOW).ok();
                if moved.is_some_and(|m| {
                    FileType::from_raw_mode(m.st_mode as _) == FileType::Directory
                        && (m.st_dev as u64, m.st_ino as u64) == held
                }) {
                    return Some(trash.path().to_path_buf());
                }
                // Not the folder we checked: put it back where it was.
                let _ =
                    rfs::renameat_with(trash.fd(), &to, from, name, rfs::RenameFlags::NOREPLACE);
                return None;
            }
            Err(Errno::NOENT) if rfs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() => {
                continue
            }
            Err(_) => return None,
        }
    }
    None
}

/// The repository folder holding `trash` and the trash itself, held open
/// (never through a symlink, only when ours), if `trash` is a `.trash`.
fn open_trash(trash: &Path) -> Option<(crate::workspace::shared_root::Base, Dir)> {
    if trash.file_name().is_none_or(|n| n != TRASH) {
        return None;
    }
    let Ok(Opened::Ours(base)) = crate::workspace::shared_root::open_base(trash.parent()?) else {
        return None;
    };
    let Ok(Opened::Ours(dir)) = base.dir.child(OsStr::new(TRASH)) else {
        return None;
    };
    Some((base, dir))
}

/// Start a detached background deleter for `trash`. Best effort: when it
/// cannot start, the trash waits for the next command or `gc`, and why it
/// could not start is recorded in the state folder ([`DELETER_FAILED`]) for
/// `status` to name ([`unattended`]); a deleter that starts clears that
/// record. With the repository's state folder, the deleter also removes the
/// repository's folder under the workspace root once it is empty, if it can
/// take the repository lock (so it never races a command making a
/// workspace there).
pub fn spawn_purger(trash: &Path, state_dir: &Path) {
    let record = state_dir.join(DELETER_FAILED);
    match start_purger(trash, state_dir) {
        Ok(()) => {
            let _ = std::fs::remove_file(&record);
        }
        Err(why) => {
            let _ = crate::sys::fs::write_atomic(&record, format!("{why}\n").as_bytes());
        }
    }
}

/// Start the deleter; the error says why it could not start (its program
/// is this one's, which the user may not be able to run: a binary in a
/// folder only another user may enter, or one replaced since).
fn start_purger(trash: &Path, state_dir: &Path) -> std::result::Result<(), String> {
    use std::os::unix::process::CommandExt;
    crate::sys::interrupt::pause("purger-spawn");
    let exe = std::env::current_exe()
        .map_err(|e| format!("git-delegate cannot find its own program ({e})"))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("purge-trash")
        .arg(trash)
        .arg(state_dir)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    // Not waited for: when this process exits, init (or the nearest
    // subreaper) reaps it. A program that cannot be run fails here (the
    // child's exec error comes back to `spawn`).
    cmd.spawn().map(drop).map_err(|e| {
        format!(
            "the background deleter could not start: cannot run {}: {e}",
            exe.display()
        )
    })
}

/// The file in the state folder that records why the last background
/// deleter could not start (one line); removed when one starts.
pub const DELETER_FAILED: &str = "trash-deleter-failed";

/// How long a trash entry may wait without a deleter before `status`
/// reports it, when no failure to start one was recorded: the time between
/// a command letting go of the repository lock and the deleter it starts
/// taking its own lock (a fork and an exec), on a loaded machine, with
/// room to spare.
pub const UNATTENDED_AFTER_SECS: u64 = 10;

/// Removed workspaces waiting in a trash folder that no deleter works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unattended {
    pub trash: PathBuf,
    /// How many entries (removed workspaces) wait there.
    pub entries: usize,
    /// Seconds since the oldest of them was moved there.
    pub age_secs: u64,
    /// Why no deleter works on them, when a failed start was recorded
    /// after the oldest was moved there; `None`: the deleter was killed,
    /// or gave up on an entry it could not delete.
    pub why: Option<String>,
}

/// The trash `trash` when removed workspaces wait there and no deleter
/// works on them (design §3.3): no background deleter is alive (each holds
/// a shared lock on the repository's folder for its life, see
/// [`purge_in_background`]), no purge is at work (gc's holds the trash's
/// lock), no command holds the repository lock (one that moved workspaces
/// into the trash starts their deleter when it is done), and either a
/// failed start was recorded after the oldest entry was moved there, or
/// the oldest was moved there more than [`UNATTENDED_AFTER_SECS`] ago.
/// Reads only; each lock is tried shared where it can be and let go at
/// once, so a command deciding whether to start a deleter (which tries
/// the exclusive lock) is not misled by this look.
pub fn unattended(trash: &Path, state_dir: &Path) -> Option<Unattended> {
    let (base, dir) = open_trash(trash)?;
    let free = |fd: BorrowedFd<'_>, how: FlockOperation| {
        let got = flock(fd, how).is_ok();
        if got {
            let _ = flock(fd, FlockOperation::Unlock);
        }
        got
    };
    let lock = std::fs::File::open(state_dir.join("lock")).ok();
    if !free(dir.fd(), FlockOperation::NonBlockingLockShared)
        || !free(base.dir.fd(), FlockOperation::NonBlockingLockExclusive)
        || lock
            .as_ref()
            .is_some_and(|l| !free(l.as_fd(), FlockOperation::NonBlockingLockShared))
    {
        return None;
    }
    let now = crate::sys::time::now();
    let mut entries = 0;
    let mut oldest: Option<i64> = None;
    for name in dir.names() {
        let Ok(Opened::Ours(entry)) = dir.child(&name) else {
            continue;
        };
        if !is_entry(&name, &entry) {
            continue;
        }
        let Ok(st) = rfs::fstat(entry.fd()) else {
            continue;
        };
        entries += 1;
        let moved = st.st_ctime as i64;
        oldest = Some(oldest.map_or(moved, |o| o.min(moved)));
    }
    let oldest = oldest?;
    let age_secs = (now - oldest).max(0) as u64;
    let why = failed_start(state_dir).filter(|(at, _)| *at >= oldest);
    let why = why.map(|(_, why)| why);
    if why.is_none() && age_secs <= UNATTENDED_AFTER_SECS {
        return None;
    }
    Some(Unattended {
        trash: trash.to_path_buf(),
        entries,
        age_secs,
        why,
    })
}

/// Start a background deleter if `trash` holds anything and no deleter is
/// at work on it (a deleter was killed, or could not start). Cheap when
/// there is no trash: one failed `open`.
pub fn sweep_later(trash: &Path, state_dir: &Path) {
    let Some((_, dir)) = open_trash(trash) else {
        return;
    };
    if flock(dir.fd(), FlockOperation::NonBlockingLockExclusive).is_err() {
        return; // a deleter holds it, and looks again before it ends
    }
    let busy = !dir.is_empty();
    drop(dir);
    if busy {
        spawn_purger(trash, state_dir);
    }
}

/// What a purge removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub entries: usize,
    pub bytes: u64,
    /// Entries that are ours but could not be deleted this time (a busy or
    /// not yet deletable subvolume, a full filesystem's metadata).
    pub failed: usize,
}

/// Delete every entry of `trash` that is one of our workspaces, until none
/// is left; then the trash folder itself if it is empty. One deleter at a
/// time works on a trash folder (an exclusive `flock` on it, held
/// throughout): with `wait`, this waits for the one at work (it then finds
/// what is left), otherwise it returns `None` at once. With `count_bytes`,
/// the sizes of the files are summed first (for gc's report); `dry_run`
/// deletes nothing (and takes no lock).
pub fn purge(trash: &Path, count_bytes: bool, dry_run: bool, wait: bool) -> Option<Purged> {
    let mut out = Purged::default();
    let Some((base, dir)) = open_trash(trash) else {
        return Some(out);
    };
    if !dry_run {
        let how = if wait {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        if flock(dir.fd(), how).is_err() {
            return None;
        }
    }
    let mut seen: Vec<OsString> = Vec::new();
    loop {
        let mut progress = false;
        for name in dir.names() {
            if seen.contains(&name) {
                continue;
            }
            let entry = match dir.child(&name) {
                Ok(Opened::Ours(e)) if is_entry(&name, &e) => e,
                _ => {
                    seen.push(name);
                    continue;
                }
            };
            let bytes = if count_bytes { entry.size() } else { 0 };
            let done = dry_run || delete_entry(&dir, &name, entry).is_ok();
            if done {
                out.entries += 1;
                out.bytes += bytes;
                progress = true;
            } else if !dry_run {
                out.failed += 1;
            }
            if dry_run || !done {
                // Not looked at again in this run.
                seen.push(name);
            }
        }
        if !progress {
            break;
        }
    }
    if !dry_run {
        base.dir.remove_child_if_empty(OsStr::new(TRASH));
    }
    drop(dir);
    Some(out)
}

/// The pauses (ms) of the background deleter between tries at entries it
/// could not delete: about a minute in all.
const PURGE_RETRY_PAUSES: [u64; 7] = [500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000];

/// Body of the hidden `purge-trash DIR [STATE-DIR]` subcommand (the
/// background deleter): purge, then remove the folder holding the trash if
/// it is empty and the repository lock (`STATE-DIR/lock`) is free.
pub fn purge_in_background(trash: &Path, state_dir: Option<&Path>) {
    let _ = rustix::process::nice(19);
    // Alive: a shared lock on the repository's folder for the deleter's
    // whole life, pauses included (`unattended` looks for it).
    let _alive = alive(trash);
    // An entry that could not be deleted is tried again after a pause, a
    // few times, before the trash is left to the next command or gc: a
    // deletion can fail for a moment (btrfs refuses to delete a subvolume
    // while it cannot reserve metadata on a filesystem that is full for
    // the moment), and a trash that nobody empties is a leak.
    let mut pauses = PURGE_RETRY_PAUSES.iter();
    loop {
        let failed = purge(trash, false, false, true).is_some_and(|p| p.failed > 0);
        match pauses.next() {
            Some(&ms) if failed => std::thread::sleep(std::time::Duration::from_millis(ms)),
            _ => break,
        }
    }
    let (Some(state_dir), Some(base)) = (state_dir, trash.parent()) else {
        return;
    };
    let Ok(Opened::Ours(base)) = crate::workspace::shared_root::open_base(base) else {
        return;
    };
    if !base.dir.is_empty() {
        return;
    }
    let Ok(lock) = std::fs::File::open(state_dir.join("lock")) else {
        return;
    };
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok() {
        base.remove_if_empty();
    }
}

/// The recorded failure to start a deleter ([`DELETER_FAILED`]): when it
/// was recorded (seconds since the epoch) and its line, control characters
/// dropped (the state folder is shared with workers).
fn failed_start(state_dir: &Path) -> Option<(i64, String)> {
    let dir = rfs::open(
        state_dir,
        rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC,
        rfs::Mode::empty(),
    )
    .ok()?;
    let st = rfs::statat(&dir, DELETER_FAILED, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let text = crate::sys::fs::read_at_most(dir.as_fd(), DELETER_FAILED, 4096).ok()?;
    let line: String = String::from_utf8_lossy(&text)
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    (!line.trim().is_empty()).then(|| (st.st_mtime as i64, line.trim().to_string()))
}

/// The repository folder holding `trash`, held open with a shared lock.
fn alive(trash: &Path) -> Option<crate::workspace::shared_root::Base> {
    let Ok(Opened::Ours(base)) = crate::workspace::shared_root::open_base(trash.parent()?) else {
        return None;
    };
    flock(base.dir.fd(), FlockOperation::LockShared).ok()?;
    Some(base)
}

/// A trash entry we may delete: a real folder of ours (`entry`, held open)
/// named `<8 hex>-<task>-<8 hex>` holding our `.git` file, or empty.
fn is_entry(name: &OsStr, entry: &Dir) -> bool {
    let name = name.as_bytes();
    let hex8 = |s: &[u8]| s.len() == 8 && s.iter().all(|c| c.is_ascii_hexdigit());
    let named = name.len() >= 19
        && hex8(&name[..8])
        && name[8] == b'-'
        && name[name.len() - 9] == b'-'
        && hex8(&name[name.len() - 8..]);
    if !named {
        return false;
    }
    match read_dotgit(entry.fd()) {
        Ok(text) => {
            let text = text.strip_suffix(b"\n").unwrap_or(&text);
            let Some(target) = text.strip_prefix(b"gitdir: ") else {
                return false;
            };
            let target = Path::new(std::ffi::OsStr::from_bytes(target));
            target
                .file_name()
                .is_some_and(|n| n.as_bytes().starts_with(b"delegate-"))
                && target
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == crate::git::registration::DIR)
        }
        Err(Errno::NOENT) => entry.is_empty(),
        Err(_) => false,
    }
}

/// The `.git` file in the opened folder (never through a symlink, at most 64 KiB).
fn read_dotgit(dir: BorrowedFd<'_>) -> rustix::io::Result<Vec<u8>> {
    crate::sys::fs::read_at_most(dir, ".git", 64 * 1024)
}

/// Delete one entry of `trash`, `name`, held open as `entry`: everything
/// but `.git` (through the handle, never following a symlink nor crossing
/// into another filesystem), then `.git`, then the folder, only while
/// `name` still is that folder, so an interrupted deletion still leaves a
/// recognisable entry.
fn delete_entry(trash: &Dir, name: &OsStr, entry: Dir) -> rustix::io::Result<()> {
    let (dev, ino) = entry.id();
    let fd = entry.fd();
    for (child, _) in crate::sys::fs::read_names(fd)? {
        if child == b".git" {
            continue;
        }
        let st = match rfs::statat(fd, child.as_slice(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e),
        };
        if FileType::from_raw_mode(st.st_mode as _) == FileType::Directory {
            crate::workspace::scratch::remove_dir_at(fd, child.as_slice(), &st, dev)?;
        } else {
            match rfs::unlinkat(fd, child.as_slice(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(e),
            }
        }
    }
    match rfs::unlinkat(fd, ".git", AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => {}
        Err(e) => return Err(e),
    }
    drop(entry);
    match rfs::statat(trash.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
        // A workspace made as a btrfs subvolume goes like a folder (design §3.17).
        Ok(now) if (now.st_dev as u64, now.st_ino as u64) == (dev, ino) => {
            crate::sys::btrfs::remove_empty_dir_at(trash.fd(), name.as_bytes())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
