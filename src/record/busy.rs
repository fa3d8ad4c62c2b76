//! A batch's busy marker (design §3.10): `verifying` in its state folder,
//! naming the process (pid and start time) of the `apply --verify` that runs
//! its verification command now, which holds no repository lock meanwhile.
//!
//! Owns: the marker (`mark`, whose guard removes it), whether it names a
//! live process (a recycled pid does not count), and the refusal of the
//! commands that would change the batch meanwhile (`refuse_if_busy`, which
//! apply, refresh, drop and gc ask, as `BusyError`; `is_busy` for gc's sweep).
//! Never: runs or stops the verification (`ops::verify` does); words a help
//! line or decides an error code (`ops::explain` does).

use std::path::{Path, PathBuf};

use crate::record::batch::{self, Batch};
use crate::sys::fs::FsError;

/// A batch another process verifies now. The message is the `Display`;
/// the code (`delegate::batch_busy`) and help: `ops::explain`.
#[derive(Debug, thiserror::Error)]
#[error(
    "batch {batch} is being verified: `git delegate apply --verify` (pid {pid}) runs its verification command"
)]
pub struct BusyError {
    /// The batch's short id.
    pub batch: String,
    /// The apply that verifies it.
    pub pid: u32,
}

const BUSY: &str = "verifying";

/// The pid of the apply that runs batch `id`'s verification command now
/// (its busy marker names a process that is still that process), if any.
fn busy_pid(state_dir: &Path, id: &str) -> Option<u32> {
    let text = std::fs::read_to_string(batch::batch_dir(state_dir, id).join(BUSY)).ok()?;
    let mut it = text.split_whitespace();
    let pid = it.next().and_then(|p| p.parse::<u32>().ok())?;
    let start = it.next().and_then(|s| s.parse::<u64>().ok());
    let alive = crate::sys::process::process_start(pid).is_some_and(|s| Some(s) == start);
    alive.then_some(pid)
}

/// Refuse to work on a batch whose apply runs its verification command now
/// (it holds no repository lock meanwhile; design §3.10): exit 3.
pub fn refuse_if_busy(state_dir: &Path, b: &Batch) -> Result<(), BusyError> {
    let Some(pid) = busy_pid(state_dir, &b.id) else {
        return Ok(());
    };
    if pid == std::process::id() {
        return Ok(());
    }
    Err(BusyError {
        batch: b.short().to_string(),
        pid,
    })
}

/// Removes the busy marker when dropped.
pub struct Busy(PathBuf);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Mark batch `b` busy for as long as the returned guard lives: this
/// process (its pid and start time) runs its verification command.
pub fn mark(state_dir: &Path, b: &Batch) -> Result<Busy, FsError> {
    let path = batch::batch_dir(state_dir, &b.id).join(BUSY);
    let pid = std::process::id();
    let start = crate::sys::process::process_start(pid).unwrap_or(0);
    crate::sys::fs::write_atomic(&path, format!("{pid} {start}\n").as_bytes())?;
    Ok(Busy(path))
}

/// Whether an apply runs batch `id`'s verification command now (design
/// §3.10: it holds no repository lock meanwhile).
pub fn is_busy(state_dir: &Path, id: &str) -> bool {
    busy_pid(state_dir, id).is_some()
}
