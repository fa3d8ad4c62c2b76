//! Workers are untrusted (design §3.18): what a worker, or another user of
//! the machine, can do to git-delegate, each case asserting on bytes on
//! disk, refs, modes, exit codes and JSON fields.
#[path = "../common/mod.rs"]
mod common;

mod roots;
