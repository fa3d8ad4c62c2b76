//! Write-back of a merge result into the source working tree through a
//! crash-safe journal (SPEC §3.2 step 4, §7).
//!
//! Owns: the journal file in a batch's state folder, writing and removing
//! working-tree paths (temp file + fsync + rename, symlink-safe parents,
//! exec bits, symlinks, smudge filters), rollback, and recovery of journals
//! left by dead processes.
//! Never: writes a path whose current content is not the expected `S`
//! state, follows a symlink out of the source root, or touches the index,
//! HEAD or refs.

use gix::bstr::BString;
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::Result;
use crate::repo::Source;

/// One path to change: its entry in the source snapshot `S` and in the result `F`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWrite {
    pub path: BString,
    pub old: Option<(EntryKind, ObjectId)>,
    pub new: Option<(EntryKind, ObjectId)>,
}

/// Why a path cannot be written without losing something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    /// An untracked or ignored file (not in `S`) stands where the result puts a file.
    UntrackedInTheWay,
    /// A folder with content not in `S` stands where the result puts a file.
    FolderInTheWay,
    /// The path's content no longer matches `S` (the user changed it just now).
    ChangedSinceSnapshot,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub path: BString,
    pub reason: BlockReason,
}

/// Check every write against the disk without changing anything.
pub fn check(_source: &Source, _writes: &[PathWrite]) -> Result<Vec<Blocked>> {
    Ok(Vec::new())
}

/// Write every path through the journal in `batch_dir`; any failure rolls
/// every written path back to `S` and returns the error.
pub fn write(_source: &Source, _batch_dir: &std::path::Path, _writes: &[PathWrite]) -> Result<()> {
    Err(crate::error::Error::state(
        "delegate::not_implemented",
        "write-back is not implemented yet",
        "wait for the next version",
    ))
}

/// Roll back every journal left by a dead process in this repository's
/// batches; returns the batch ids rolled back. Call with the repository lock held.
pub fn recover_all(_source: &Source) -> Result<Vec<String>> {
    Ok(Vec::new())
}
