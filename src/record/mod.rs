//! What git-delegate keeps under `<common-dir>/delegate` (design §2): the
//! batch record (`batch`: `batch.toml`, its `[preparing]` marker, how a
//! `BATCH` argument names one, where each batch's files lie), the leases
//! in it (`lease`), the proposals kept after their task ended (`kept`: their
//! refs, patches and keep-failed clock) and the busy marker of a batch whose
//! verification command runs (`busy`), the idle workspaces of the pool
//! (`pool`, design §3.20), git-delegate's own stat records of workspaces
//! (`stat`, design §3.20: never the worktree's index), the `delegate.toml`
//! the user confirmed (`trust`, design §3.18), and the blobs of the user's
//! private files the baselines held (`private`, design §3.19), which the
//! pre-push guard reads.
//!
//! Owns: nothing beyond its files, each saying what it owns, and the one
//! way a small TOML file of git-delegate's is written ([`write_toml`]).
//! Never: imports a module above it (only `git/`, `sys/`, `error` and
//! `config`); creates a workspace or decides a batch's fate (the layers
//! above read the record and act).

pub mod batch;
pub mod busy;
pub mod kept;
pub mod lease;
pub mod pool;
pub mod private;
pub mod stat;
pub mod trust;

/// Why [`write_toml`] failed.
#[derive(Debug, thiserror::Error)]
pub enum TomlError {
    /// A value TOML cannot hold (a bug of its type: its caller words it).
    #[error("{0}")]
    Serialize(toml::ser::Error),
    /// The file, named by its cause (with the filesystem of its folder).
    #[error(transparent)]
    Fs(#[from] crate::sys::fs::FsError),
}

/// Write `value` as TOML at `path`: temp file, fsync, rename
/// (`sys::fs::write_atomic`), so a reader sees the old file or the new
/// one, and no failure leaves a temp file.
pub fn write_toml(path: &std::path::Path, value: &impl serde::Serialize) -> Result<(), TomlError> {
    let text = toml::to_string(value).map_err(TomlError::Serialize)?;
    Ok(crate::sys::fs::write_atomic(path, text.as_bytes())?)
}
