//! The gc document (design §6.3; docs/json.md "gc") and the drop documents
//! (docs/json.md "Drop"): what was reclaimed, rescued and left alone.

use super::apply::RemoteWarning;
use super::{document, KeptWorkspace, Text, UnsafeFolder};
use git_delegate::ops::gc::{Report, Rescued};
use git_delegate::workspace::shared_root::Refused;

document! {
    /// The gc document.
    pub struct GcDoc {
        dry_run: bool,
        batches: Vec<String>,
        workspaces_removed: usize,
        registrations_removed: usize,
        rescued: Vec<GcRescued>,
        refs_removed: usize,
        refs_kept: Vec<String>,
        bytes_freed: u64,
        left_alone: Vec<String>,
        unsafe_folders?: Vec<UnsafeFolder>,
        kept_workspaces: Vec<GcKeptWorkspace>,
        skipped: Vec<Skipped>,
        pending_writebacks: Vec<String>,
        incomplete: Vec<String>,
        stashed: Vec<GcStashed>,
        undo_entries_removed: Vec<String>,
        temp_files_removed: Vec<String>,
        idle_workspaces_removed: usize,
        /// Always present in gc's document (an empty list when nothing
        /// was rolled back).
        recovered_writebacks: Vec<String>,
        stopped_processes: Vec<GcStopped>,
        warnings?: Vec<RemoteWarning>,
    }
}

document! {
    /// An entry of `stopped_processes` of the gc document: a setup command
    /// of a killed prepare (design §3.20).
    pub struct GcStopped {
        batch: String,
        pid: u32,
        command: String,
    }
}

document! {
    /// An entry of `stopped_processes` of the drop document.
    pub struct DropStopped {
        pid: u32,
        command: String,
    }
}

impl DropStopped {
    pub fn list(procs: &[git_delegate::sys::quiesce::Proc]) -> Vec<DropStopped> {
        procs
            .iter()
            .map(|p| DropStopped {
                pid: p.pid,
                command: p.command.clone(),
            })
            .collect()
    }
}

document! {
    /// An entry of `rescued` of the gc document.
    pub struct GcRescued {
        batch: String,
        task: String,
        r#ref: String,
        patch?: String,
        changed_paths: usize,
    }
}

document! {
    /// An entry of `skipped` of the gc document.
    pub struct Skipped {
        batch: String,
        message: String,
    }
}

document! {
    /// An entry of `kept_workspaces` of the gc document.
    pub struct GcKeptWorkspace {
        batch: String,
        task: String,
        workspace: String,
        nested_repositories: Vec<String>,
        batches: Vec<String>,
        changed_submodules: Vec<String>,
    }
}

document! {
    /// An entry of `stashed` of the gc document.
    pub struct GcStashed {
        batch: String,
        task: Option<String>,
        stash: String,
    }
}

/// Absolute paths as document strings.
fn path_list(t: &Text, list: &[std::path::PathBuf]) -> Vec<String> {
    list.iter().map(|p| t.path(p)).collect()
}

/// `unsafe_folders`, absent when there were none.
fn unsafe_folders(t: &Text, list: &[Refused]) -> Option<Vec<UnsafeFolder>> {
    (!list.is_empty()).then(|| UnsafeFolder::list(t, list))
}

impl GcDoc {
    /// The gc document of `r`; `rolled_back`: the write-backs this gc
    /// rolled back first; `warnings`: the words of `r.remote_left`.
    pub fn new(
        t: &Text,
        r: &Report,
        rolled_back: &[String],
        warnings: Option<Vec<RemoteWarning>>,
    ) -> GcDoc {
        GcDoc {
            dry_run: r.dry_run,
            batches: r.batches.clone(),
            workspaces_removed: r.workspaces_removed,
            registrations_removed: r.registrations_removed,
            rescued: r
                .rescued
                .iter()
                .map(|x| GcRescued {
                    batch: x.batch.clone(),
                    task: x.task.clone(),
                    r#ref: x.ref_name.clone(),
                    patch: x.patch.as_deref().map(|p| t.path(p)),
                    changed_paths: x.paths,
                })
                .collect(),
            refs_removed: r.refs_removed,
            refs_kept: r.refs_kept.clone(),
            bytes_freed: r.bytes_freed,
            left_alone: path_list(t, &r.left_alone),
            unsafe_folders: unsafe_folders(t, &r.unsafe_folders),
            kept_workspaces: r
                .kept_workspaces
                .iter()
                .map(|k| GcKeptWorkspace {
                    batch: k.batch.clone(),
                    task: k.task.clone(),
                    workspace: t.path(&k.root),
                    nested_repositories: t.paths(&k.nested),
                    batches: k.batches.clone(),
                    changed_submodules: t.paths(&k.changed_submodules),
                })
                .collect(),
            skipped: r
                .skipped
                .iter()
                .map(|s| Skipped {
                    batch: s.batch.clone(),
                    message: s.message.clone(),
                })
                .collect(),
            pending_writebacks: r.pending_writebacks.clone(),
            incomplete: r.incomplete.clone(),
            stashed: r
                .stashed
                .iter()
                .map(|w| GcStashed {
                    batch: w.batch.clone(),
                    task: w.task.clone(),
                    stash: w.stash.clone(),
                })
                .collect(),
            undo_entries_removed: r.undo_entries_removed.clone(),
            temp_files_removed: path_list(t, &r.temp_files_removed),
            idle_workspaces_removed: r.idle_workspaces_removed,
            recovered_writebacks: rolled_back.to_vec(),
            stopped_processes: r
                .stopped
                .iter()
                .map(|s| GcStopped {
                    batch: s.batch.clone(),
                    pid: s.process.pid,
                    command: s.process.command.clone(),
                })
                .collect(),
            warnings,
        }
    }
}

document! {
    /// The document of a batch dropped.
    pub struct DropDoc {
        batch: String,
        dropped: bool,
        workspaces_removed: usize,
        refs_removed: usize,
        left_alone: Vec<String>,
        unsafe_folders?: Vec<UnsafeFolder>,
        corrupt?: bool,
        rescued?: Vec<DropRescued>,
        refs_kept?: Vec<String>,
        kept_workspaces?: Vec<KeptWorkspace>,
        stopped_processes?: Vec<DropStopped>,
        warnings?: Vec<RemoteWarning>,
    }
}

document! {
    /// `drop --pool`: the pool emptied (design §3.20).
    pub struct DropPoolDoc {
        pool: bool,
        idle_workspaces_removed: usize,
        bytes_freed: u64,
    }
}

impl DropPoolDoc {
    pub fn new(removed: usize, bytes: u64) -> DropPoolDoc {
        DropPoolDoc {
            pool: true,
            idle_workspaces_removed: removed,
            bytes_freed: bytes,
        }
    }
}

document! {
    /// An entry of `rescued` of a corrupt batch dropped.
    pub struct DropRescued {
        task: String,
        r#ref: String,
        patch?: String,
        changed_paths: usize,
    }
}

impl DropDoc {
    /// A batch dropped: what was removed and the folders left alone (and
    /// refused, design §3.18); callers add what their kind of drop adds.
    pub fn new(
        t: &Text,
        id: &str,
        workspaces: usize,
        refs: usize,
        left_alone: &[std::path::PathBuf],
        refused: &[Refused],
    ) -> DropDoc {
        DropDoc {
            batch: id.to_string(),
            dropped: true,
            workspaces_removed: workspaces,
            refs_removed: refs,
            left_alone: path_list(t, left_alone),
            unsafe_folders: unsafe_folders(t, refused),
            corrupt: None,
            rescued: None,
            refs_kept: None,
            kept_workspaces: None,
            stopped_processes: None,
            warnings: None,
        }
    }

    /// A corrupt batch dropped: its workspaces' work saved first.
    pub fn rescued(t: &Text, list: &[Rescued]) -> Vec<DropRescued> {
        list.iter()
            .map(|x| DropRescued {
                task: x.task.clone(),
                r#ref: x.ref_name.clone(),
                patch: x.patch.as_deref().map(|p| t.path(p)),
                changed_paths: x.paths,
            })
            .collect()
    }
}

document! {
    /// The document of a drop refused.
    pub struct DropRefused {
        batch: String,
        dropped: bool,
        unapplied: Vec<String>,
        corrupt?: bool,
        hosts_open_batches?: Vec<KeptWorkspace>,
        stashed?: Vec<DropStashed>,
        left_alone?: Vec<String>,
        changed_after_read?: Vec<String>,
    }
}

document! {
    /// An entry of `stashed` of a drop refused: an open task whose work is
    /// in the stash.
    pub struct DropStashed {
        task: String,
        stash: String,
    }
}

impl DropRefused {
    pub fn new(id: &str, unapplied: &[String]) -> DropRefused {
        DropRefused {
            batch: id.to_string(),
            dropped: false,
            unapplied: unapplied.to_vec(),
            corrupt: None,
            hosts_open_batches: None,
            stashed: None,
            left_alone: None,
            changed_after_read: None,
        }
    }

    /// The folders where work may be, left alone (design §3.18); absent
    /// when there are none.
    pub fn left_alone(t: &Text, folders: &[std::path::PathBuf]) -> Option<Vec<String>> {
        (!folders.is_empty()).then(|| path_list(t, folders))
    }

    pub fn stashed(stashed: &[(String, String)]) -> Vec<DropStashed> {
        stashed
            .iter()
            .map(|(task, entry)| DropStashed {
                task: task.clone(),
                stash: entry.clone(),
            })
            .collect()
    }
}
