//! The floor: what git-delegate needs from the operating system, knowing
//! nothing of git, batches or workspaces. Durable writes and removals that
//! never follow a symlink (`fs`), byte paths and how they are shown
//! (`paths`), RFC 3339 times and durations (`time`), the one bounded thread
//! pool (`parallel`), signals and test pause points (`interrupt`), commands
//! started for the user and the facts that tell a live process from a
//! recycled pid (`process`), the processes whose current folder is inside
//! one (`quiesce`), btrfs's subvolume ioctls (`btrfs`), and the Landlock
//! containment of a started command (`sandbox`).
//!
//! Owns: nothing beyond its files; each says what it owns.
//! Never: imports a module outside `sys/` but `error` (the error type every
//! layer returns); decides which paths are whose (its callers do).

pub mod btrfs;
pub mod fs;
pub mod interrupt;
pub mod parallel;
pub mod paths;
pub mod process;
pub mod quiesce;
pub mod sandbox;
pub mod time;
