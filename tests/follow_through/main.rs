//! Issue 23's follow-through: what the user meets after an interruption, a
//! cache that lies, an undo after a commit, a failed worker or a conflict.
#[path = "../common/mod.rs"]
mod common;

mod cache_undo;
