//! What is wrong with a repository's batches, as facts: one rule per
//! condition (a stale lease, a left-over write-back journal, unreadable
//! batch state, a prepare that was killed, a baseline ref moved or deleted,
//! a workspace missing, replaced or unreadable, an orphan scratch copy), for
//! every renderer: `status` (design §3.3), the pre-commit hook (design §3.7) and
//! `drop`'s unapplied check (design §3.5) word them, each in its own way.
//!
//! Owns: detecting those conditions and how many paths each task's
//! workspace changed ([`changed_counts`]).
//! Never: words a problem (the commands do); changes anything (workspace
//! snapshots are kept in memory); reads a folder that is not the workspace
//! prepare made (`workspace::identify`); opens the repository in
//! [`of_state`], which the pre-commit hook runs on every commit.

use std::path::{Path, PathBuf};

use crate::batch::{self, Batch, Entry};
use crate::lease;
use crate::repo::Source;
use crate::writeback::LeftPath;
use crate::{diff, snapshot, workspace};

/// One problem of one batch (`batch` is its full id).
#[derive(Debug, Clone)]
pub struct Problem {
    pub batch: String,
    pub fact: Fact,
}

/// What is wrong.
#[derive(Debug, Clone)]
pub enum Fact {
    /// Its prepare was killed and no longer runs (design §3.15).
    InterruptedPrepare,
    /// Its lease is expired or orphaned.
    Stale(lease::State),
    /// A write-back journal is left in its state folder; `left` are the
    /// paths its last rollback left to the user (empty when none, or when
    /// they were not looked for: [`of_state`]).
    Journal { left: Vec<LeftPath> },
    /// An undo's (or `apply --from-undo`'s) write-back journal is left in
    /// its undo entry's folder (design §3.11); the problem's `batch` is the
    /// apply id.
    UndoJournal { left: Vec<LeftPath> },
    /// The baseline ref `name` points at `to`, not at the baseline.
    RefMoved {
        name: String,
        to: gix::ObjectId,
        baseline: String,
    },
    /// The baseline ref `name` is gone; `present` when the baseline commit
    /// is still in the object database.
    RefMissing {
        name: String,
        baseline: String,
        present: bool,
    },
    /// An open task's workspace is gone.
    WorkspaceMissing { task: String, root: PathBuf },
    /// An open task's workspace is no longer the folder prepare made.
    WorkspaceReplaced {
        task: String,
        root: PathBuf,
        why: String,
    },
    /// An open task's workspace could not be read: its changes are unknown.
    WorkspaceUnreadable { task: String, root: PathBuf },
    /// Its `batch.toml` cannot be read (`problem` says why).
    BrokenState { problem: String },
    /// A scratch copy of this repository that no batch owns.
    ScratchOrphan { message: String },
}

impl Problem {
    fn new(batch: &str, fact: Fact) -> Problem {
        Problem {
            batch: batch.to_string(),
            fact,
        }
    }

    /// The batch's short name.
    pub fn short(&self) -> &str {
        batch::short(&self.batch)
    }

    /// The kind `status --json` reports (design §6).
    pub fn kind(&self) -> &'static str {
        match &self.fact {
            Fact::InterruptedPrepare => "interrupted_prepare",
            Fact::Stale(state) => state.as_str(),
            Fact::Journal { .. } | Fact::UndoJournal { .. } => "journal",
            Fact::RefMoved { .. } => "ref_moved",
            Fact::RefMissing { .. } => "ref_missing",
            Fact::WorkspaceMissing { .. } => "workspace_missing",
            Fact::WorkspaceReplaced { .. } => "workspace_replaced",
            Fact::WorkspaceUnreadable { .. } => "workspace_unreadable",
            Fact::BrokenState { .. } => "broken_state",
            Fact::ScratchOrphan { .. } => "scratch_orphan",
        }
    }
}

/// A stale lease, if `b`'s is.
fn stale(b: &Batch) -> Option<Problem> {
    let state = b.lease.state();
    state
        .is_stale()
        .then(|| Problem::new(&b.id, Fact::Stale(state)))
}

/// A left-over write-back journal, if `b` has one; the paths its rollback
/// left to the user are read only when `left` is asked for.
fn journal(state_dir: &Path, b: &Batch, left: bool) -> Option<Problem> {
    let dir = batch::batch_dir(state_dir, &b.id);
    if !dir.join(batch::JOURNAL_FILE).exists() {
        return None;
    }
    let left = if left {
        crate::writeback::left_paths(&dir)
    } else {
        Vec::new()
    };
    Some(Problem::new(&b.id, Fact::Journal { left }))
}

fn broken(id: &str, problem: &str) -> Problem {
    Problem::new(
        id,
        Fact::BrokenState {
            problem: problem.to_string(),
        },
    )
}

/// The problems the state folder alone shows, without opening the
/// repository (for the pre-commit hook): stale leases, left-over journals
/// (`left` not read), unreadable batch state; every batch, complete or not.
pub fn of_state(state_dir: &Path, entries: &[Entry]) -> Vec<Problem> {
    let mut out = Vec::new();
    for e in entries {
        match e {
            Entry::Batch(b) => {
                out.extend(stale(b));
                out.extend(journal(state_dir, b, false));
            }
            Entry::Broken { id, problem } => out.push(broken(id, problem)),
        }
    }
    out
}

/// Every problem of a repository's batches but unreadable workspaces (see
/// [`unreadable`]), in the order `status` shows them: per batch, a killed
/// prepare (and nothing else about that batch: its workspaces and refs may
/// be half-made; a batch still being prepared shows nothing), a stale lease,
/// a left-over journal, the baseline ref, each open task's workspace; then
/// orphan scratch copies.
pub fn of_batches(source: &Source, entries: &[Entry]) -> Vec<Problem> {
    let state_dir = source.state_dir();
    let mut out = Vec::new();
    for e in entries {
        match e {
            Entry::Batch(b) => {
                match crate::preparing::progress(b) {
                    Some(crate::preparing::Progress::Interrupted) => {
                        out.push(Problem::new(&b.id, Fact::InterruptedPrepare));
                        continue;
                    }
                    Some(crate::preparing::Progress::Preparing) => continue,
                    None => {}
                }
                out.extend(stale(b));
                out.extend(journal(&state_dir, b, true));
                out.extend(baseline(source, b));
                for t in b.open_tasks().filter(|t| !t.remote) {
                    let fact = match workspace::identify(&source.common_dir, t) {
                        workspace::Identity::Ours { .. } => continue,
                        workspace::Identity::Missing => Fact::WorkspaceMissing {
                            task: t.name.clone(),
                            root: t.root.clone(),
                        },
                        workspace::Identity::Replaced(why) => Fact::WorkspaceReplaced {
                            task: t.name.clone(),
                            root: t.root.clone(),
                            why: why.to_string(),
                        },
                    };
                    out.push(Problem::new(&b.id, fact));
                }
            }
            Entry::Broken { id, problem } => out.push(broken(id, problem)),
        }
    }
    // Undo entries' journals (design §3.11).
    if let Ok(rd) = std::fs::read_dir(batch::undo_dir(&state_dir)) {
        let mut found: Vec<(String, PathBuf)> = rd
            .flatten()
            .filter(|d| d.path().join(batch::JOURNAL_FILE).exists())
            .map(|d| (d.file_name().to_string_lossy().into_owned(), d.path()))
            .collect();
        found.sort();
        for (id, dir) in found {
            let left = crate::writeback::left_paths(&dir);
            out.push(Problem::new(&id, Fact::UndoJournal { left }));
        }
    }
    for (batch, message) in crate::scratch::orphan_messages(source) {
        out.push(Problem::new(&batch, Fact::ScratchOrphan { message }));
    }
    out
}

/// A baseline ref deleted (or moved) by someone else, or a baseline commit
/// that is gone.
fn baseline(source: &Source, b: &Batch) -> Option<Problem> {
    let name = crate::refs::baseline(&b.id);
    let fact = match crate::refs::get(&source.repo, &name) {
        Ok(Some(id)) if gix::ObjectId::from_hex(b.baseline.as_bytes()).ok() == Some(id) => {
            return None
        }
        Ok(Some(to)) => Fact::RefMoved {
            name,
            to,
            baseline: b.baseline.clone(),
        },
        Ok(None) | Err(_) => Fact::RefMissing {
            name,
            baseline: b.baseline.clone(),
            present: gix::ObjectId::from_hex(b.baseline.as_bytes())
                .ok()
                .is_some_and(|id| source.repo.find_commit(id).is_ok()),
        },
    };
    Some(Problem::new(&b.id, fact))
}

/// How many paths of each task's workspace differ from its base (the
/// baseline, or its own once refreshed) (a
/// nested repository the worker made counts as one path): `Some(0)`
/// for tasks that are not open or whose workspace is missing or not ours,
/// `None` where the workspace could not be read (the count is unknown).
pub fn changed_counts(source: &Source, b: &Batch) -> Vec<Option<usize>> {
    let baseline_tree = gix::ObjectId::from_hex(b.baseline.as_bytes())
        .ok()
        .and_then(|c| source.repo.find_commit(c).ok())
        .and_then(|c| c.tree_id().ok())
        .map(|t| t.detach());
    b.tasks
        .iter()
        .map(|t| {
            if !t.state.is_open() {
                return Some(0);
            }
            // Only the folder prepare made is read, at its real path.
            let workspace::Identity::Ours { real, .. } = workspace::identify(&source.common_dir, t)
            else {
                return Some(0);
            };
            // A refreshed task counts from its own base (design §3.12).
            let base = match &t.base {
                Some(own) => crate::commit::tree_of(&source.repo, own).ok()?,
                None => baseline_tree?,
            };
            let repo = crate::repo::open_worktree(&real).ok()?;
            // Keep the snapshot's objects in memory: nothing is changed.
            let mut repo = repo.with_object_memory();
            let snap = snapshot::snapshot_workspace(&repo).ok()?;
            // Compared in the source's handle: a diff in the workspace's
            // would read its index, which may be unusable (design §3.2
            // step 1: the snapshot did without it).
            let mut view = source.repo.clone().with_object_memory();
            view.objects
                .set_object_memory(repo.objects.take_object_memory().unwrap_or_default());
            // A nested repository the worker made counts as one changed
            // path: it is work apply cannot take (design §3.2).
            diff::trees(&view, base, snap.tree)
                .map(|d| d.len() + snap.nested_repos.len())
                .ok()
        })
        .collect()
}

/// The workspaces `changed_counts` could not read.
pub fn unreadable(b: &Batch, counts: &[Option<usize>]) -> Vec<Problem> {
    b.tasks
        .iter()
        .zip(counts)
        .filter(|(_, c)| c.is_none())
        .map(|(t, _)| {
            Problem::new(
                &b.id,
                Fact::WorkspaceUnreadable {
                    task: t.name.clone(),
                    root: t.root.clone(),
                },
            )
        })
        .collect()
}
