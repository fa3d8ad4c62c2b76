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
//! ownership check happens before the rename. One deleter at a time works
//! on a trash folder (`flock` on it); later ones wait for it and then take
//! what is left.
//!
//! Owns: moving workspaces into the trash, deleting trash entries, starting
//! the background deleter.
//! Never: deletes anything outside a `.trash` folder, an entry that does not
//! look like one of our workspaces, or follows a symlink while deleting.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

/// The trash folder's name, beside the batch folders of a repository.
pub const TRASH: &str = ".trash";

/// The trash folder that serves a workspace `<base>/<batch-short>/<task>`.
pub fn dir_for(root: &Path) -> Option<PathBuf> {
    Some(root.parent()?.parent()?.join(TRASH))
}

/// Move the workspace folder `root` into its trash folder (one rename).
/// The caller has checked that it is ours and holds it open: `held` is its
/// (device, inode). What the rename moved is checked against it, and moved
/// back when it is not that folder (swapped in between). `None` when it
/// could not be moved (the caller then removes it in place).
pub fn put(root: &Path, held: (u64, u64)) -> Option<PathBuf> {
    let trash = dir_for(root)?;
    let task = root.file_name()?.to_str()?;
    let short = root.parent()?.file_name()?.to_str()?;
    // A deleter may remove the trash folder when it finds it empty just
    // after we made it: one retry.
    for _ in 0..2 {
        match std::fs::create_dir(&trash) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        if !crate::fs::is_real_dir(&trash) {
            return None;
        }
        let random = uuid::Uuid::new_v4().simple().to_string();
        let to = trash.join(format!("{short}-{task}-{}", &random[..8]));
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            root,
            rustix::fs::CWD,
            &to,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                use std::os::unix::fs::MetadataExt;
                let moved = to.symlink_metadata().ok();
                if moved.is_some_and(|m| m.is_dir() && (m.dev(), m.ino()) == held) {
                    return Some(trash);
                }
                // Not the folder we checked: put it back where it was.
                let _ = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &to,
                    rustix::fs::CWD,
                    root,
                    rustix::fs::RenameFlags::NOREPLACE,
                );
                return None;
            }
            Err(rustix::io::Errno::NOENT) if root.symlink_metadata().is_ok() => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Start a detached background deleter for `trash`. Best effort: when it
/// cannot start, the trash waits for the next command or `gc`. With the
/// repository's state folder, the deleter also removes the repository's
/// folder under the workspace root once it is empty, if it can take the
/// repository lock (so it never races a command making a workspace there).
pub fn spawn_purger(trash: &Path, state_dir: &Path) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut cmd = std::process::Command::new(exe);
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
    // subreaper) reaps it.
    let _ = cmd.spawn();
}

/// Start a background deleter if `trash` holds anything and no deleter is
/// at work on it (a deleter was killed, or could not start). Cheap when
/// there is no trash: one failed `open`.
pub fn sweep_later(trash: &Path, state_dir: &Path) {
    let Ok(dir) = std::fs::File::open(trash) else {
        return;
    };
    if flock(&dir, FlockOperation::NonBlockingLockExclusive).is_err() {
        return; // a deleter holds it, and looks again before it ends
    }
    let busy = std::fs::read_dir(trash).is_ok_and(|mut d| d.next().is_some());
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
    if trash.file_name().is_none_or(|n| n != TRASH) || !crate::fs::is_real_dir(trash) {
        return Some(out);
    }
    let Ok(lock) = std::fs::File::open(trash) else {
        return Some(out);
    };
    if !dry_run {
        let how = if wait {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        if flock(&lock, how).is_err() {
            return None;
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    loop {
        let Ok(rd) = std::fs::read_dir(trash) else {
            break;
        };
        let mut progress = false;
        for entry in rd.flatten() {
            let path = entry.path();
            if seen.contains(&path) || !is_entry(&path) {
                continue;
            }
            let bytes = if count_bytes {
                crate::fs::tree_size(&path)
            } else {
                0
            };
            let done = dry_run || delete_entry(&path).is_ok();
            if done {
                out.entries += 1;
                out.bytes += bytes;
                progress = true;
            } else if path.symlink_metadata().is_ok() {
                out.failed += 1;
            }
            if dry_run || !done {
                // Not looked at again in this run.
                seen.push(path);
            }
        }
        if !progress {
            break;
        }
    }
    if !dry_run {
        let _ = std::fs::remove_dir(trash);
    }
    drop(lock);
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
    if trash.symlink_metadata().is_ok() {
        return;
    }
    let Ok(lock) = std::fs::File::open(state_dir.join("lock")) else {
        return;
    };
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok() {
        let _ = std::fs::remove_dir(base);
    }
}

/// A trash entry we may delete: a real folder named
/// `<8 hex>-<task>-<8 hex>` holding our `.git` file, or empty.
fn is_entry(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.as_bytes()) else {
        return false;
    };
    let hex8 = |s: &[u8]| s.len() == 8 && s.iter().all(|c| c.is_ascii_hexdigit());
    let named = name.len() >= 19
        && hex8(&name[..8])
        && name[8] == b'-'
        && name[name.len() - 9] == b'-'
        && hex8(&name[name.len() - 8..]);
    if !named || !crate::fs::is_real_dir(path) {
        return false;
    }
    match std::fs::read(path.join(".git")) {
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
                    .is_some_and(|n| n == crate::registration::DIR)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
        }
        Err(_) => false,
    }
}

/// Delete one entry: everything but `.git` (never following a symlink),
/// then `.git`, then the folder, so an interrupted deletion still leaves a
/// recognisable entry.
fn delete_entry(path: &Path) -> std::io::Result<()> {
    for child in std::fs::read_dir(path)? {
        let child = child?;
        if child.file_name() == ".git" {
            continue;
        }
        let p = child.path();
        let r = if child.file_type()?.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    match std::fs::remove_file(path.join(".git")) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // A workspace made as a btrfs subvolume goes like a folder (design §3.17).
    crate::btrfs::remove_empty_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_and_markers() {
        let tmp = std::env::temp_dir().join(format!("gd-trash-unit-{}", std::process::id()));
        let trash = tmp.join(TRASH);
        std::fs::create_dir_all(&trash).unwrap();
        let ours = trash.join("0123abcd-1-89abcdef");
        std::fs::create_dir_all(ours.join("sub")).unwrap();
        std::fs::write(ours.join("sub/file"), "x").unwrap();
        std::fs::write(
            ours.join(".git"),
            "gitdir: /r/.git/worktrees/delegate-0123abcd-1\n",
        )
        .unwrap();
        let badly_named = trash.join("notours");
        std::fs::create_dir_all(&badly_named).unwrap();
        let foreign = trash.join("0123abcd-2-89abcdef");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join(".git"), "gitdir: /r/.git/worktrees/mine\n").unwrap();
        std::fs::write(foreign.join("keep"), "x").unwrap();
        let empty = trash.join("0123abcd-3-89abcdef");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(is_entry(&ours) && is_entry(&empty));
        assert!(!is_entry(&badly_named) && !is_entry(&foreign));
        let got = purge(&trash, true, false, true).unwrap();
        assert_eq!(got.entries, 2);
        assert!(!ours.exists() && !empty.exists());
        assert!(badly_named.exists() && foreign.join("keep").exists());
        // An entry of ours that cannot be deleted (an immutable folder,
        // where the filesystem and our privileges allow making one) is
        // counted as failed, so the background deleter tries it again.
        let stuck = trash.join("0123abcd-4-89abcdef");
        std::fs::create_dir_all(&stuck).unwrap();
        std::fs::write(stuck.join("f"), "x").unwrap();
        std::fs::write(
            stuck.join(".git"),
            "gitdir: /r/.git/worktrees/delegate-0123abcd-4\n",
        )
        .unwrap();
        let chattr = |flag: &str| {
            std::process::Command::new("chattr")
                .arg(flag)
                .arg(&stuck)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if chattr("+i") {
            let got = purge(&trash, false, false, true).unwrap();
            assert!(chattr("-i"));
            assert_eq!((got.entries, got.failed), (0, 1));
            let got = purge(&trash, false, false, true).unwrap();
            assert_eq!((got.entries, got.failed), (1, 0));
        } else {
            std::fs::remove_dir_all(&stuck).unwrap();
        }
        // A folder not named .trash is never purged.
        assert_eq!(purge(&foreign, false, false, true), Some(Purged::default()));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
