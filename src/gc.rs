//! Garbage collection (SPEC §3.4): reclaiming what stale batches and
//! leftovers hold, rescuing unapplied work first.
//!
//! Owns: deciding what is stale or left over, and reclaiming it.
//! Never: touches a live batch, a user's own worktree, or another repository's folders.
