//! Workers are untrusted (design §3.18): what a hostile or confused worker
//! produces, or changes beside its workspace, reaches the user's repository
//! only through the checks; and a shared workspace root cannot be raced.

mod config;
mod drivers;
mod git_dir;
mod holes;
mod late_writes;
mod modes;
mod paths;
mod pool;
mod remote_refs;
mod roots;
mod transport;
mod unproven;
