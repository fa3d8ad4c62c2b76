//! The repository lock (`<common-dir>/delegate/lock`) that serialises the
//! mutating commands of one repository.
//!
//! Owns: taking the lock (flock, waiting up to `lock.timeout`) and naming the
//! holder when it cannot be had.
//! Never: breaks a lock another process holds.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

use crate::error::{Error, Result};

/// Held until dropped.
pub struct RepoLock {
    _file: std::fs::File,
}

pub fn acquire(state_dir: &Path, timeout_secs: i64) -> Result<RepoLock> {
    std::fs::create_dir_all(state_dir)
        .map_err(|e| Error::io(format!("cannot create {}", state_dir.display()), e))?;
    let path = state_dir.join("lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
    let deadline = Instant::now() + Duration::from_secs(timeout_secs.max(0) as u64);
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::state(
                    "delegate::locked",
                    format!(
                        "another git-delegate command (pid {}) holds the repository lock {}",
                        if holder.is_empty() { "unknown" } else { holder },
                        path.display()
                    ),
                    "wait for it to finish, or raise `lock.timeout` in .git/delegate.toml",
                ));
            }
            Err(e) => {
                return Err(Error::io(
                    format!("cannot lock {}", path.display()),
                    e.into(),
                ))
            }
        }
    }
    // Record the holder for anyone who has to wait.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(RepoLock { _file: file })
}
