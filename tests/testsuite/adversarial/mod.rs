//! The adversarial environment, kept fixed: every command run
//! with the source's `GIT_*` variables exported (`env`), with a workspace
//! swapped for a symlink (`swap`), on a full disk (`disk`) and out of file
//! descriptors (`limits`). Each case
//! asserts on bytes on disk, refs, exit codes and JSON fields.

mod disk;
mod env;
mod limits;
mod swap;
