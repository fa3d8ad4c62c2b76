//! The state folder's layout: where a batch's record, logs and undo
//! entries live under `<common-dir>/delegate/` (design §3), and writing,
//! staging and removing a batch's `batch.toml`.
//!
//! Owns: the paths of the state folder and the atomic write of a batch
//! record (`fs::write_atomic`); its removal, whole, under a hidden name.
//! Never: reads or chooses a batch (see `select`); creates workspaces or
//! refs.

use std::path::{Path, PathBuf};

use super::{Batch, BatchError, Result};

/// The write-back journal's file name inside a batch folder (design §7).
pub const JOURNAL_FILE: &str = "writeback.journal";

/// Where a batch's logs go (`<state>/logs/<uuid>/`): its workers' (design
/// §3.13) and its verification runs' (design §3.10).
pub fn logs_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("logs").join(id)
}

/// The log of task `task`'s worker in `run` (design §3.13).
pub fn worker_log(state_dir: &Path, id: &str, task: &str) -> PathBuf {
    logs_dir(state_dir, id).join(format!("{task}.log"))
}

/// Where batches live in a state dir.
pub fn batches_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("batches")
}

/// Where undo entries live in a state dir (design §3.11): one folder per
/// apply id, holding its entry file and, while an undo writes, its journal.
pub fn undo_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("undo")
}

pub fn batch_dir(state_dir: &Path, id: &str) -> PathBuf {
    batches_dir(state_dir).join(id)
}

/// The text of a batch's `batch.toml`.
pub fn to_toml(batch: &Batch) -> Result<String> {
    toml::to_string_pretty(batch).map_err(|source| BatchError::Record {
        id: batch.id.clone(),
        source,
    })
}

pub fn save(state_dir: &Path, batch: &Batch) -> Result<()> {
    let dir = batch_dir(state_dir, &batch.id);
    if let Err(source) = std::fs::create_dir_all(&dir) {
        return Err(BatchError::CreateDir { dir, source });
    }
    Ok(crate::sys::fs::write_atomic(
        &dir.join("batch.toml"),
        to_toml(batch)?.as_bytes(),
    )?)
}

/// Write `batch` as it will be once a write-back commits: under a staged
/// name next to its `batch.toml`, which the write-back renames over it at
/// its commit point (`writeback::StagedState`, design §7 "What recovery
/// finishes"). Returns (staged, final) paths.
pub fn stage(state_dir: &Path, batch: &Batch) -> Result<(PathBuf, PathBuf)> {
    let dir = batch_dir(state_dir, &batch.id);
    let staged = dir.join("batch.toml.staged");
    crate::sys::fs::write_atomic(&staged, to_toml(batch)?.as_bytes())?;
    Ok((staged, dir.join("batch.toml")))
}

/// Remove a batch's state folder, once everything else of the batch is
/// gone: first renamed to a hidden name (`.<id>.removed-<pid>`, which no
/// command reads as a batch) in one step and the parent fsync'd, so the
/// batch disappears whole, never as a folder without a readable
/// `batch.toml` (reported as corrupt). Gone already is fine. A
/// `delegate.toml` changed while the batch was open stays unconfirmed
/// after it (`trust::batch_ended`, design §3.18).
pub fn remove_state(state_dir: &Path, id: &str) -> Result<()> {
    crate::record::trust::batch_ended(state_dir);
    let dir = batch_dir(state_dir, id);
    let parent = batches_dir(state_dir);
    let hidden = parent.join(format!(".{id}.removed-{}", std::process::id()));
    match std::fs::rename(&dir, &hidden) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(BatchError::Remove { dir, source }),
    }
    crate::sys::fs::sync_dir(&parent);
    // What a failure here leaves is hidden and holds nothing of value.
    let _ = std::fs::remove_dir_all(&hidden);
    Ok(())
}
