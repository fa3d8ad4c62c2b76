//! git's concepts, each in its own file, over gix (and, in `transport`
//! alone, the git command): opening the source and every other worktree
//! (`repo`, with `discovery` for why one cannot be opened), git-delegate's
//! commits and private refs (`commit`, `refs`), trees compared path by path
//! (`diff`), big blobs streamed (`blob`), the paths git refuses to check out
//! (`validate`), sparse checkouts (`sparse`), the `ident` attribute
//! (`ident`), the filter and merge drivers a batch lets run (`drivers`), index stat data (`stat`), worktree registrations
//! (`registration`), a contained worker's own object folder in its
//! registration (`private_objects`) and the git command for remotes
//! (`transport`).
//!
//! Owns: nothing beyond its files; each says what it owns.
//! Never: imports a module above it (only `sys/`, `error` and `config`, the
//! source's `delegate.toml`, which `repo` reads when it opens one); reads
//! the batch record (`record/`), which sits above it: `repo` knows only where
//! the tool's state folder lies in a common dir (`repo::state_dir`).

pub mod blob;
pub mod commit;
pub mod diff;
pub mod discovery;
pub mod drivers;
pub mod ident;
pub mod private_objects;
pub mod refs;
pub mod registration;
pub mod repo;
pub mod sparse;
pub mod stat;
pub mod transport;
pub mod validate;
