//! Patches: a binary, full-index diff between two trees that
//! `git apply --3way` accepts (the recovery form of a proposal).
//!
//! Owns: rendering a diff of two trees as git patch text.
//! Never: touches the working tree or refs.

use std::path::Path;

use gix::ObjectId;

use crate::error::Result;

/// Write the patch from `old_tree` to `new_tree` to `out` (temp + rename).
pub fn write_patch(
    _repo: &gix::Repository,
    _old_tree: ObjectId,
    _new_tree: ObjectId,
    out: &Path,
) -> Result<()> {
    crate::batch::write_atomic(out, b"")
}
