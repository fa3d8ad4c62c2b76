//! Workers are untrusted (design §3.14, §3.16): what a worker can reach besides its workspace.
#[path = "../common/mod.rs"]
mod common;

mod git_dir;
mod remote_refs;
