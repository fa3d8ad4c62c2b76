//! One transaction per command, and the steps they share (cargo's `ops`):
//! each command of the binary is a thin wrapper around one of these, which
//! works on the repository and returns a report (`prepare::run(source,
//! &Options, &dyn Observer) -> Report`, `apply::run`, ...) or an error.
//! The transactions: `prepare`, `apply` (with `kept`: `apply --kept`,
//! `verify`: `apply --verify`, `undo`: undo and `apply --from-undo`),
//! `branch` (publishing a task as a branch), `refresh`, `run`, `exec` (one
//! contained command in a task), `gc`, `status`, `renew`, `remote_workers` (`join`, `submit`,
//! the refs that travel), `look` (`diff`, `path`), `pre_commit` (the
//! pre-commit hook), `claude` (Claude Code's worktree hooks), `mandir` (`man --install`). The steps they share:
//! `lock` (the repository lock and the recovery every mutating command
//! starts with), `observe` (what a transaction tells its caller while it
//! works), `preparing` (a prepare under way, and an incomplete batch removed
//! whole), `pool` (prepare's side of the workspace pool), `problems` (what is wrong with a repository's batches, as facts),
//! `side_effects` (work that hides in shared refs and the shared git dir),
//! `contain` (what `run`'s and `exec`'s workers may write, design §3.22),
//! `teardown` (a batch's workspaces, refs and state folder removed),
//! `explain` (the code, exit status and help of the engine's typed errors).
//!
//! Owns: `write_toml` (a small state file a transaction keeps, as TOML,
//! temp-then-rename); the rest is its files', each says what it owns.
//! Never: prints, reads the command line or exits (the binary does); a
//! transaction may use another's steps, never in a circle.

pub mod apply;
pub mod branch;
pub mod claude;
pub mod contain;
pub mod exec;
pub mod explain;
pub mod gc;
pub mod kept;
pub mod lock;
pub mod look;
pub mod mandir;
pub mod observe;
pub mod pool;
pub mod pre_commit;
pub mod pre_push;
pub mod prepare;
pub mod preparing;
pub mod problems;
pub mod refresh;
pub mod remote_workers;
pub mod renew;
pub mod run;
pub mod setup;
pub mod side_effects;
pub mod status;
pub mod teardown;
pub mod trust;
pub mod undo;
pub mod verify;

/// Write `value` as TOML at `path` (`record::write_toml`: temp file,
/// fsync, rename); `what` names it in the error a value TOML cannot hold
/// makes (a bug).
pub(crate) fn write_toml(
    path: &std::path::Path,
    value: &impl serde::Serialize,
    what: &str,
) -> crate::error::Result<()> {
    use crate::record::TomlError;
    crate::record::write_toml(path, value).map_err(|e| match e {
        TomlError::Serialize(e) => crate::error::Error::state(
            crate::error::Code::Internal,
            format!("cannot record {what}: {e}"),
            "report this bug",
        ),
        TomlError::Fs(e) => e.into(),
    })
}
