//! The repository lock (`<common-dir>/delegate/lock`) that serialises the
//! mutating commands of one repository.
//!
//! Owns: taking the lock (flock, waiting up to `lock.timeout`) and naming the
//! holder when it cannot be had (`LockError`); `lock_and_recover`, the first
//! step of every mutating command, which returns what it recovered (never
//! stores it).
//! Never: breaks a lock another process holds; words a help line or decides
//! an error code (`ops::explain` does).

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

use crate::error::Result;
use crate::sys::fs::PathError;

/// Why the repository lock could not be taken. The message is the
/// `Display`; the code and help: `ops::explain`.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The state folder that holds the lock file cannot be made
    /// (`create`), the lock file opened or made (`open`), or `flock` failed
    /// for another reason than the lock being held (`lock`).
    #[error(transparent)]
    Io(#[from] PathError),
    /// Someone held it for all of `lock.timeout`: `holder` is the pid it
    /// recorded, when that process still runs.
    #[error(
        "{} holds the repository lock {}",
        match holder {
            Some(pid) => format!("another git-delegate command (pid {pid})"),
            None => "another process".to_string(),
        },
        path.display()
    )]
    Held { path: PathBuf, holder: Option<u32> },
    /// A signal (Ctrl-C) came while waiting for it: the command's one
    /// interrupted error (`Error::interrupted`).
    #[error("interrupted while waiting for the repository lock")]
    Interrupted,
}

/// Held until dropped.
pub struct RepoLock {
    file: std::fs::File,
}

impl Drop for RepoLock {
    /// Forget the recorded pid while still holding the lock; closing the
    /// file then releases it.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

pub fn acquire(state_dir: &Path, timeout_secs: i64) -> Result<RepoLock, LockError> {
    std::fs::create_dir_all(state_dir).map_err(PathError::on("create", state_dir))?;
    let path = state_dir.join("lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(PathError::on("open", &path))?;
    let deadline = Instant::now() + Duration::from_secs(timeout_secs.max(0) as u64);
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            // Ctrl-C while waiting (where a command installed the handler).
            Err(rustix::io::Errno::WOULDBLOCK) if gix::interrupt::is_triggered() => {
                return Err(LockError::Interrupted);
            }
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                // The pid a holder recorded, if that process is still running.
                let holder = text
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&pid| crate::sys::process::process_start(pid).is_some());
                return Err(LockError::Held { path, holder });
            }
            Err(e) => return Err(PathError::on("lock", &path)(e.into()).into()),
        }
    }
    // Record the holder for anyone who has to wait.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(RepoLock { file })
}

/// The repository lock and what was recovered under it.
pub struct Locked {
    pub lock: RepoLock,
    /// Interrupted write-backs rolled back or completed (design §7).
    pub recovery: crate::writeback::Recovery,
}

/// Take the repository lock and roll back write-backs interrupted by a
/// crash (design §7): every mutating command starts here. Also puts back
/// the workspaces a command killed while proving them left aside (design
/// §3.18), and starts the deletion of removed workspaces a killed
/// background deleter left behind.
pub fn lock_and_recover(source: &crate::git::repo::Source) -> Result<Locked> {
    let lock = acquire(&source.state_dir(), source.config.lock_timeout_secs)?;
    let recovery = crate::writeback::recover_all_detailed(source)?;
    if let Ok(base) = source.workspace_base() {
        crate::workspace::aside::restore_all(&source.common_dir, &base, &source.state_dir());
    }
    if let Ok(base) = source.workspace_base() {
        crate::workspace::trash::sweep_later(
            &base.join(crate::workspace::trash::TRASH),
            &source.state_dir(),
        );
    }
    Ok(Locked { lock, recovery })
}
