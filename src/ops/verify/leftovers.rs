//! What verification leaves behind and its removal: the log folders of
//! ended batches (`prune_logs`, after `gc.keep-failed`), and the
//! verification workspaces, templates and `verify/<n>` refs that an apply
//! killed while verifying left (`remove_leftovers`, design §3.10).
//! Never: touches a workspace `apply --keep` released (an ordinary
//! worktree); signals anyone with `Processes::Leave` (gc).

use std::path::{Path, PathBuf};

use crate::git::repo::Source;

/// The file in a batch's log folder that starts its keep-failed clock.
const ENDED: &str = ".ended";

/// Remove the log folders (`<state>/logs/<id>/`) of batches that ended more
/// than `keep_secs` ago (design §3.10: failing logs are kept like worker
/// logs, until `gc.keep-failed` after the batch ends). The first gc that
/// finds a folder whose batch is gone (`ids`: every batch there is) starts
/// its clock (a `.ended` file), so it is never removed earlier. Returns how
/// many folders went (or, with `dry_run`, would go).
pub fn prune_logs(state_dir: &Path, ids: &[String], keep_secs: i64, dry_run: bool) -> usize {
    let Ok(rd) = std::fs::read_dir(state_dir.join("logs")) else {
        return 0;
    };
    let now = crate::sys::time::now();
    let mut removed = 0;
    for e in rd.flatten() {
        let dir = e.path();
        let name = e.file_name();
        if ids.iter().any(|id| name.to_str() == Some(id)) || !crate::sys::fs::is_real_dir(&dir) {
            continue;
        }
        let ended = dir.join(ENDED);
        let since = std::fs::read_to_string(&ended)
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok());
        match since {
            None if !dry_run => {
                let _ = crate::sys::fs::write_atomic(&ended, format!("{now}\n").as_bytes());
            }
            Some(t) if now >= t.saturating_add(keep_secs) => {
                removed += 1;
                if !dry_run {
                    let _ = crate::sys::fs::remove_all(&dir);
                }
            }
            _ => {}
        }
    }
    removed
}

// ---------------------------------------------------------------------------
// What an apply killed while verifying leaves.

/// What to do about processes still inside a leftover verification workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    /// Stop them (SIGTERM, a grace, SIGKILL; never this process or its
    /// parents), then remove the workspace: whatever ends the batch
    /// (apply, drop) and the next verification of it. They are what the
    /// killed apply's CMD left running: nobody else is meant to be there
    /// (`--keep` is how verification workspaces are kept).
    Stop,
    /// Leave the workspace where they are, and say so (gc, which never
    /// signals anyone).
    Leave,
}

/// What [`remove_leftovers`] did (or, with `dry_run`, would do).
#[derive(Debug, Default)]
pub struct Swept {
    /// Verification workspaces (and templates) removed.
    pub removed: Vec<PathBuf>,
    /// Their size (counted only with `Processes::Leave`, for gc's report).
    pub bytes: u64,
    /// Left in place because processes still run inside: (batch, folder, pids).
    pub in_use: Vec<(String, PathBuf, Vec<u32>)>,
    /// Registrations removed whose folder was gone already.
    pub registrations: usize,
    /// Their `verify/<n>` refs removed with them.
    pub refs: Vec<String>,
}

/// Remove the verification workspaces, templates and their `verify/<n>`
/// refs that an apply killed while verifying left (design §3.10) of the
/// batches `of` accepts (by id; their batch may be gone). The caller holds
/// the repository lock and knows that no apply verifies those batches
/// now (`record::busy::refuse_if_busy`; gc asks `record::busy::is_busy`). A workspace `apply --keep`
/// released is an ordinary worktree: never touched.
pub fn remove_leftovers(
    source: &Source,
    of: &dyn Fn(&str) -> bool,
    processes: Processes,
    dry_run: bool,
) -> Swept {
    let common = &source.common_dir;
    let mut out = Swept::default();
    for v in crate::workspace::verifications(common) {
        if !of(&v.batch) {
            continue;
        }
        if let Some(real) = &v.real {
            let inside = match processes {
                Processes::Leave => crate::sys::quiesce::find_users(std::slice::from_ref(real))
                    .into_iter()
                    .next()
                    .unwrap_or_default(),
                Processes::Stop if dry_run => Vec::new(),
                Processes::Stop => {
                    match crate::sys::quiesce::stop_all(
                        std::slice::from_ref(real),
                        crate::sys::quiesce::GRACE,
                        false,
                    )
                    .into_iter()
                    .next()
                    {
                        Some(crate::sys::quiesce::Outcome::Running(procs)) => {
                            procs.iter().map(|p| p.pid).collect()
                        }
                        _ => Vec::new(),
                    }
                }
            };
            if !inside.is_empty() {
                out.in_use.push((v.batch.clone(), v.root.clone(), inside));
                continue;
            }
            if processes == Processes::Leave {
                out.bytes += crate::sys::fs::tree_size(real);
            }
        }
        let gone = dry_run
            || crate::workspace::remove_verification(common, &v)
                .is_ok_and(|r| r != crate::workspace::Removal::Foreign);
        if !gone {
            continue;
        }
        if v.real.is_some() {
            out.removed.push(v.root.clone());
        } else if v.root.symlink_metadata().is_err() {
            out.registrations += 1;
        }
        if let Some(n) = v
            .worktree_id
            .rsplit("--verify-")
            .next()
            .filter(|_| !v.template)
        {
            let name = format!("{}batches/{}/verify/{n}", crate::git::refs::PREFIX, v.batch);
            let exists = crate::git::refs::get(&source.repo, &name)
                .ok()
                .flatten()
                .is_some();
            if exists && (dry_run || crate::git::refs::delete(&source.repo, &name).unwrap_or(false))
            {
                out.refs.push(name);
            }
        }
    }
    out
}
