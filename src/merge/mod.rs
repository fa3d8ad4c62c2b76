//! Landing work, in memory (design §3.2 steps 1-3): a workspace as a
//! proposal (`proposal`: commit, ref, and its `git apply --3way`-able patch,
//! `patch`), the 3-way integration of the proposals with the source as it is
//! now (`integrate`), and those steps as every command that lands work runs
//! them (`landing`: the source snapshot, partial or whole, the integration,
//! the write-back check, and the objects persisted).
//!
//! Owns: nothing beyond its files; each says what it owns.
//! Never: imports a module above it (`ops/`, the binary); writes the
//! source's working tree (that is `writeback`, which a caller runs with
//! what `landing` planned).

pub mod integrate;
pub mod landing;
pub mod patch;
pub mod proposal;
