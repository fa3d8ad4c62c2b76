//! `git delegate prepare` (design §3.1): the batch it makes, workspaces
//! cloned, scratch and on btrfs (§3.17), ignored files carried (§3.9),
//! `--forbid-commit` (§3.7), and prepares killed or interrupted.

mod batch;
mod btrfs;
mod carry;
mod clone;
mod forbid_commit;
mod interrupt;
mod scratch;
mod setup;
