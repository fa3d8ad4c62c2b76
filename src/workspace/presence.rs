//! The two answers about a task's workspace, for either kind (worktree or
//! scratch copy): what is at its path now ([`Health`]) and what a removal
//! did ([`Removal`]). A leaf, so `workspace` (the facade) and `scratch`
//! (one kind behind it) share the words without importing each other.
//!
//! Owns: these two enums.
//! Never: looks at the disk.

/// What a task's workspace path leads to now, compared with what prepare made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// The folder (or scratch copy) prepare made.
    Ours,
    /// Nothing is there.
    Missing,
    /// Something else is there: never read, quiesced, rescued nor removed.
    Foreign,
}

/// What became of a workspace on removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// The folder was gone already; the registration was removed.
    Missing,
    /// The folder is no longer ours: left alone.
    Foreign,
}
