//! What follows an apply when asked (design §3.12): `--refresh-conflicts`
//! refreshes every task the apply left `conflict`, right after it, as its
//! own transaction (it takes the lock again).
//!
//! Owns: which tasks that refresh takes.
//! Never: runs before the apply's lock is given up; prints.

use crate::error::{Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{Batch, TaskState};

use super::Outcome;

/// Refresh every task this apply left `conflict` (not those whose
/// refreshed conflicts are still unresolved). `None` when there is none.
pub(super) fn refresh_conflicts(
    b: &Batch,
    outcomes: &[Outcome],
) -> Option<Result<crate::ops::refresh::Report>> {
    let tasks: Vec<String> = outcomes
        .iter()
        .filter(|o| {
            o.status == TaskState::Conflict && o.reason != Some(crate::ops::refresh::UNRESOLVED)
        })
        .map(|o| b.tasks[o.idx].name.clone())
        .collect();
    if tasks.is_empty() {
        return None;
    }
    let run = || -> Result<crate::ops::refresh::Report> {
        let here = Source::discover_here()?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?;
        let opts = crate::ops::refresh::Options {
            batch: Some(b.id.clone()),
            tasks,
            cwd,
        };
        crate::ops::refresh::run(here, &opts, &crate::ops::observe::Silent)
    };
    Some(run())
}
