//! What git-delegate keeps under `<common-dir>/delegate` (design §2): the
//! batch record (`batch`: `batch.toml`, its `[preparing]` marker, how a
//! `BATCH` argument names one, where each batch's files lie), the leases
//! in it (`lease`), the proposals kept after their task ended (`kept`: their
//! refs, patches and keep-failed clock) and the busy marker of a batch whose
//! verification command runs (`busy`), and the idle workspaces of the pool
//! (`pool`, design §3.20).
//!
//! Owns: nothing beyond its files; each says what it owns.
//! Never: imports a module above it (only `git/`, `sys/`, `error` and
//! `config`); creates a workspace or decides a batch's fate (the layers
//! above read the record and act).

pub mod batch;
pub mod busy;
pub mod kept;
pub mod lease;
pub mod pool;
