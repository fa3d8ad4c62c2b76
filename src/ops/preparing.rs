//! A prepare under way (design §3.15 "Killed commands"): the marker prepare
//! records in `batch.toml` before it makes any ref or folder, deciding
//! whether a batch so marked is still being prepared or was killed, and
//! removing such a batch whole. (The signal handling that makes Ctrl-C
//! undo a prepare instead of ending it half-way is `interrupt`.)
//!
//! A batch whose `batch.toml` carries a `[preparing]` table is incomplete:
//! its workspaces were never handed to a worker. It is never applied,
//! refreshed, renewed or rescued; `gc` and `drop` remove it whole once its
//! process is gone. Prepare writes the table (fsync'd) before it makes
//! anything, and writes `batch.toml` again without it (temp file, fsync,
//! rename, fsync of the folder) only when every workspace is complete.
//!
//! Owns: the marker (recording a new batch's state folder whole, in one
//! rename) and removal of an incomplete batch.
//! Never: removes a folder that is not one prepare made (checked through
//! `workspace::identify`, no symlink followed: its `.git` must point back
//! at our registration, or it is a real folder that is still empty), nor
//! anything of a complete batch.

use std::path::{Path, PathBuf};

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch};

// The marker and its reading are part of the batch record (`batch`, a
// leaf the workspace code reads too); this module gives them their meaning.
pub use crate::record::batch::{progress, Marker, Progress};

/// The refusal of `apply`, `refresh` and `renew` for an incomplete batch (exit 3).
pub fn refuse(b: &Batch, p: Progress) -> Error {
    match p {
        Progress::Preparing => Error::state(
            Code::IncompleteBatch,
            format!(
                "batch {} is still being prepared (prepare still running, pid {})",
                b.short(),
                b.preparing.as_ref().map(|m| m.pid).unwrap_or_default()
            ),
            format!(
                "wait for that prepare to finish; if it hangs, stop it, then remove the batch with `git delegate drop {} --force` or `git delegate gc`",
                b.short()
            ),
        ),
        Progress::Interrupted => Error::state(
            Code::IncompleteBatch,
            format!(
                "batch {} was never completely prepared (its prepare was killed); its workspaces were never handed out and hold no work",
                b.short()
            ),
            format!(
                "remove it with `git delegate drop {} --force` or `git delegate gc`, then prepare again",
                b.short()
            ),
        ),
    }
}

/// Record a new batch, marked as being prepared, so that its folder
/// appears whole or not at all: `batch.toml` is written (fsync'd) into a
/// hidden folder (`batches/.<id>.new`, which no command reads as a batch),
/// which is then renamed into place and its parent fsync'd. A prepare
/// killed before the rename leaves only that hidden folder behind.
pub fn record(state_dir: &Path, b: &Batch) -> Result<()> {
    let parent = batch::batches_dir(state_dir);
    std::fs::create_dir_all(&parent)
        .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let tmp = parent.join(format!(".{}.new", b.id));
    let dir = batch::batch_dir(state_dir, &b.id);
    // Left by a prepare of the same id killed before its rename (the
    // repository lock is held: nobody else is making it).
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| {
        std::fs::create_dir(&tmp)
            .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
        crate::sys::fs::write_atomic(&tmp.join("batch.toml"), batch::to_toml(b)?.as_bytes())?;
        std::fs::rename(&tmp, &dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        crate::sys::fs::sync_dir(&parent);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

// ---------------------------------------------------------------------------
// Removal

/// The variable every command started for a batch carries (design §3.13).
const BATCH_VAR: &str = "GIT_DELEGATE_BATCH";

/// A killed prepare's setup commands that could not be stopped: nothing
/// of its batch is removed while they run.
fn still_running(b: &Batch, left: &[crate::sys::quiesce::Proc]) -> Error {
    let named: Vec<String> = left
        .iter()
        .map(|p| format!("{} ({})", p.pid, p.command))
        .collect();
    Error::state(
        Code::IncompleteBatch,
        format!(
            "the setup commands of batch {}'s killed prepare still run and could not be stopped: {}",
            b.short(),
            named.join(", ")
        ),
        "stop those processes (`kill PID`), then run the command again",
    )
}

impl Removed {
    /// The task's workspace is left alone: named, with what refused it.
    fn left_alone(&mut self, t: &crate::record::batch::Task) {
        self.left_alone.push(t.root.clone());
        if let Some(r) = crate::workspace::refusal(t) {
            crate::workspace::shared_root::note(&mut self.unsafe_folders, r);
        }
    }
}

/// What removing an incomplete batch removed.
#[derive(Debug, Default)]
pub struct Removed {
    pub workspaces: usize,
    /// Registrations removed whose folder was gone (the workspace's own
    /// goes with it, counted in `workspaces`).
    pub registrations: usize,
    pub refs: usize,
    /// Bytes of the files removed (workspaces, registrations, state).
    pub bytes: u64,
    /// Folders at a task's place that are not what prepare made: left alone.
    pub left_alone: Vec<PathBuf>,
    /// Folders below the workspace root refused (design §3.18), among
    /// those above the workspaces left alone.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
    /// The killed prepare's setup commands still running (design §3.20),
    /// stopped before anything was removed (with `dry_run`: found).
    pub stopped: Vec<crate::sys::quiesce::Proc>,
}

/// Remove everything a prepare of `b` made or may have made: workspace
/// folders (ours, or still empty) and their registrations, scratch copies,
/// every ref of the batch, and last its state folder (so a removal killed
/// or failing half-way leaves the marker for the next try: the state goes
/// only when everything else did). With `dry_run`, only count. Every part
/// is tried; the first failure is returned.
pub fn remove_whole(source: &Source, b: &Batch, dry_run: bool) -> Result<Removed> {
    let mut out = Removed::default();
    let mut first_err: Option<Error> = None;
    // Setup commands outlive a prepare killed with SIGKILL and go on
    // writing into its workspaces: they carry the batch in their
    // environment (`GIT_DELEGATE_BATCH`), and stop first.
    use crate::sys::quiesce;
    if dry_run {
        out.stopped = quiesce::find_marked(BATCH_VAR, &b.id)
            .into_iter()
            .map(quiesce::describe)
            .filter(|p| !p.command.is_empty())
            .collect();
    } else {
        match quiesce::stop_marked(BATCH_VAR, &b.id, quiesce::GRACE) {
            quiesce::Outcome::Clear { stopped } => out.stopped = stopped,
            quiesce::Outcome::Running(left) => return Err(still_running(b, &left)),
        }
    }
    for t in &b.tasks {
        let reg = crate::git::registration::Registration::new(&source.common_dir, &t.worktree_id);
        // A workspace of the pool this prepare did not claim yet (or gave
        // back) is idle, not this batch's (design §3.20).
        if let Some(lock) = &t.lock {
            if reg.path().symlink_metadata().is_ok()
                && reg.read_lock_reason().as_deref() != Some(lock.as_str())
            {
                continue;
            }
        }
        out.bytes += crate::sys::fs::tree_size(reg.path());
        let registered = reg.path().symlink_metadata().is_ok();
        let scratch = t.kind() == crate::config::Mode::Scratch;
        // What will go, and what is left alone (a folder that is not one
        // prepare made is never counted, nor its bytes).
        let will = if scratch {
            if t.root.symlink_metadata().is_ok() {
                crate::workspace::Removal::Removed
            } else {
                crate::workspace::Removal::Missing
            }
        } else {
            crate::workspace::unfinished_removal(&source.common_dir, &t.root, &t.worktree_id)
        };
        if will == crate::workspace::Removal::Removed {
            // Below the workspace root through handles (design §3.18).
            out.bytes += if scratch {
                crate::sys::fs::tree_size(&t.root)
            } else {
                crate::workspace::shared_root::tree_size(&t.root)
            };
        }
        if dry_run {
            match will {
                crate::workspace::Removal::Removed => out.workspaces += 1,
                crate::workspace::Removal::Missing if registered && !scratch => {
                    out.registrations += 1
                }
                crate::workspace::Removal::Missing => {}
                crate::workspace::Removal::Foreign => out.left_alone(t),
            }
            continue;
        }
        let removal = if scratch {
            let r =
                crate::workspace::scratch::remove(&source.common_dir, &t.root).map_err(Error::from);
            // A container whose marker was never written holds nothing: rmdir only.
            if let Some(c) = t.root.parent() {
                let _ = std::fs::remove_dir(&t.root);
                let _ = std::fs::remove_file(
                    c.join(format!("{}.tmp", crate::workspace::scratch::MARKER)),
                );
                let _ = std::fs::remove_dir(c);
            }
            r
        } else {
            crate::workspace::remove_unfinished(&source.common_dir, &t.root, &t.worktree_id)
                .map_err(Error::from)
        };
        match removal {
            Ok(crate::workspace::Removal::Removed) => out.workspaces += 1,
            Ok(crate::workspace::Removal::Missing) => {
                if registered && !scratch && reg.path().symlink_metadata().is_err() {
                    out.registrations += 1
                }
            }
            Ok(crate::workspace::Removal::Foreign) => out.left_alone(t),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match crate::git::refs::list_batch(&source.repo, &b.id) {
        Ok(names) => {
            for name in names {
                if dry_run {
                    out.refs += 1;
                    continue;
                }
                match crate::git::refs::delete(&source.repo, &name) {
                    Ok(true) => out.refs += 1,
                    Ok(false) => {}
                    Err(e) => {
                        first_err.get_or_insert(e.into());
                    }
                }
            }
        }
        Err(e) => {
            first_err.get_or_insert(e.into());
        }
    }
    let dir = batch::batch_dir(&source.state_dir(), &b.id);
    out.bytes += crate::sys::fs::tree_size(&dir);
    if let Some(e) = first_err {
        return Err(e);
    }
    if !dry_run {
        batch::remove_state(&source.state_dir(), &b.id)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(marker: Option<Marker>, ttl: i64) -> Batch {
        Batch {
            id: "0badc0de-0000-4000-8000-000000000002".into(),
            label: None,
            created_at: crate::sys::time::rfc3339(crate::sys::time::now()),
            source: PathBuf::from("/src"),
            prefix: PathBuf::new(),
            source_head: None,
            baseline: "0".repeat(40),
            mode: crate::config::Mode::Worktree,
            forbid_commit: false,
            sparse: None,
            drivers: None,
            lease: crate::record::lease::Lease::new(ttl, None),
            tasks: Vec::new(),
            preparing: marker,
            remote: None,
        }
    }

    #[test]
    fn a_marked_batch_is_preparing_while_its_process_runs() {
        assert_eq!(progress(&batch(None, 3600)), None);
        assert_eq!(
            progress(&batch(Some(Marker::mine()), 3600)),
            Some(Progress::Preparing)
        );
    }

    #[test]
    fn a_marked_batch_whose_process_is_gone_is_interrupted_whatever_its_lease() {
        // A recycled pid: the same pid with another start time.
        let mut m = Marker::mine();
        m.start = m.start.map(|s| s + 1);
        assert_eq!(progress(&batch(Some(m), 3600)), Some(Progress::Interrupted));
        // A pid that is not running.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let mut m = Marker::mine();
        m.pid = pid;
        assert_eq!(progress(&batch(Some(m), 3600)), Some(Progress::Interrupted));
    }

    #[test]
    fn on_another_host_only_the_lease_counts() {
        let mut m = Marker::mine();
        m.host = "elsewhere.invalid".into();
        assert_eq!(
            progress(&batch(Some(m.clone()), 3600)),
            Some(Progress::Preparing)
        );
        assert_eq!(progress(&batch(Some(m), -10)), Some(Progress::Interrupted));
    }

    #[test]
    fn old_batch_files_without_the_marker_read_as_complete() {
        let text = toml::to_string_pretty(&batch(None, 60)).unwrap();
        assert!(!text.contains("preparing"));
        let b: Batch = toml::from_str(&text).unwrap();
        assert!(b.preparing.is_none());
        let marked = toml::to_string_pretty(&batch(Some(Marker::mine()), 60)).unwrap();
        let b: Batch = toml::from_str(&marked).unwrap();
        assert_eq!(
            b.preparing,
            Some(Marker::mine()).map(|mut m| {
                m.started_at = b.preparing.as_ref().unwrap().started_at.clone();
                m
            })
        );
    }
}
