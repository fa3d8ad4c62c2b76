//! The shape of `delegate.toml` as serde reads it (design §9): its
//! sections and keys, each optional; an unknown key or section is refused.
//!
//! Owns: the file's sections and the types their keys are read as (a value
//! `read` checks further keeps its span).
//! Never: checks a value or fills in a default (`read`, `Config::default`).

use serde::Deserialize;
use toml::Spanned;

use super::{Mode, OnRemove, PrivateBaselines, Sandbox, Snapshots, StaleLeases, StopProcesses};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct File {
    #[serde(default)]
    pub(super) workspace: WorkspaceSection,
    #[serde(default)]
    pub(super) lease: LeaseSection,
    #[serde(default)]
    pub(super) apply: ApplySection,
    #[serde(default)]
    pub(super) gc: GcSection,
    #[serde(default)]
    pub(super) hooks: HooksSection,
    #[serde(default)]
    pub(super) lock: LockSection,
    #[serde(default)]
    pub(super) undo: UndoSection,
    #[serde(default)]
    pub(super) run: RunSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct WorkspaceSection {
    pub(super) mode: Option<Mode>,
    pub(super) root: Option<Spanned<String>>,
    pub(super) copy_ignored: Option<Vec<String>>,
    pub(super) snapshots: Option<Snapshots>,
    pub(super) setup: Option<String>,
    pub(super) setup_jobs: Option<Spanned<i64>>,
    pub(super) pool: Option<Spanned<i64>>,
    pub(super) pool_ttl: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct LeaseSection {
    pub(super) ttl: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct ApplySection {
    pub(super) stop_processes: Option<StopProcesses>,
    pub(super) strict: Option<bool>,
    pub(super) verify: Option<String>,
    pub(super) verify_timeout: Option<Spanned<String>>,
    pub(super) verify_jobs: Option<Spanned<i64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct GcSection {
    pub(super) keep_failed: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct HooksSection {
    pub(super) stale_leases: Option<StaleLeases>,
    pub(super) forbid_commit: Option<bool>,
    pub(super) private_baselines: Option<PrivateBaselines>,
    pub(super) on_remove: Option<OnRemove>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct UndoSection {
    pub(super) keep: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RunSection {
    pub(super) port_base: Option<Spanned<i64>>,
    pub(super) ports_per_task: Option<Spanned<i64>>,
    pub(super) sandbox: Option<Sandbox>,
    pub(super) network: Option<bool>,
    pub(super) writable: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct LockSection {
    pub(super) timeout: Option<Spanned<String>>,
}
