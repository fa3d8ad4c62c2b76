//! What is wrong with a repository's batches, as facts: one rule per
//! condition (a stale lease, a left-over write-back journal, unreadable
//! batch state, a prepare that was killed, a baseline ref moved or deleted,
//! a workspace missing, replaced or unreadable, an orphan scratch copy, a
//! temporary file a killed command left in the state folder, removed
//! workspaces in the trash that no deleter works on, a workspace a killed
//! command left aside in the trash, a registration of ours whose folder is
//! gone and that no batch owns, commands in `delegate.toml` the user has
//! not confirmed), for
//! every renderer: `status` (design §3.3), the pre-commit hook (design §3.7) and
//! `drop`'s unapplied check (design §3.5) word them, each in its own way.
//!
//! Owns: detecting those conditions and how many paths each task's
//! workspace changed ([`changed_counts`]); which files of the state folder
//! are git-delegate's temporary files, and when one is old enough to be a
//! leftover ([`old_temp_files`], which gc removes).
//! Never: words a problem (the commands do); changes anything (workspace
//! snapshots are kept in memory); reads a folder that is not the workspace
//! prepare made (`workspace::identify`); opens the repository in
//! [`of_state`], which the pre-commit hook runs on every commit.

use std::path::{Path, PathBuf};

use crate::git::repo::Source;
use crate::record::batch::{self, Batch, Entry};
use crate::record::lease;
use crate::writeback::LeftPath;
use crate::{git::diff, snapshot, workspace};

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
    /// they were not looked for: [`of_state`]); `finishes`: it is past its
    /// commit point, so recovery finishes it instead of rolling it back
    /// (design §7).
    Journal { left: Vec<LeftPath>, finishes: bool },
    /// An undo's (or `apply --from-undo`'s) write-back journal is left in
    /// its undo entry's folder (design §3.11); the problem's `batch` is the
    /// apply id.
    UndoJournal { left: Vec<LeftPath>, finishes: bool },
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
    /// A temporary file older than an hour in the state folder (design
    /// §3.18 "Leftovers"); the problem's `batch` is the id of the batch or
    /// undo entry whose folder holds it, empty elsewhere.
    TempFile(TempFile),
    /// Removed workspaces wait in the trash and no background deleter
    /// works on them (design §3.3): it could not start (`why`), or was
    /// killed or gave up. The problem's `batch` is empty.
    UnattendedTrash(workspace::trash::Unattended),
    /// A task's workspace a killed command left aside in the trash (design
    /// §3.18 "Before removing a workspace, prove it"), at `path`; `back`:
    /// the next command that takes the lock puts it back at its place
    /// (otherwise its batch is gone or its place is taken: it stays, and
    /// nothing deletes it). The problem's `batch` is the batch's id (its
    /// short name when no batch has it).
    LeftAside {
        task: String,
        path: PathBuf,
        back: bool,
    },
    /// A registration of ours (`<common-dir>/worktrees/<id>`, at `path`)
    /// whose folder (`folder`) is gone and that no batch owns: gc removes
    /// it. The problem's `batch` is empty.
    DeadRegistration {
        id: String,
        path: PathBuf,
        folder: Option<PathBuf>,
    },
    /// `delegate.toml` names commands that differ from the file the user
    /// confirmed (design §3.18 "Commands from the shared git dir"): they do
    /// not run until `git delegate config --trust`. The problem's `batch`
    /// is empty.
    /// Found by `status` (`ops::trust::check`), which words it: the file,
    /// the keys and values left out (`named`), and the help that confirms
    /// the file or puts the confirmed one back.
    UntrustedConfig {
        file: PathBuf,
        named: String,
        help: String,
    },
}

/// A temporary file git-delegate made in its state folder and a killed
/// command left there.
#[derive(Debug, Clone)]
pub struct TempFile {
    pub path: PathBuf,
    pub bytes: u64,
    /// Seconds since it was last written.
    pub age_secs: u64,
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

    /// What recovery will do with a left-over journal (`status --json`'s
    /// `recovery`): "finish" past its commit point, else "roll_back".
    pub fn recovery(&self) -> Option<&'static str> {
        match &self.fact {
            Fact::Journal { finishes, .. } | Fact::UndoJournal { finishes, .. } => {
                Some(if *finishes { "finish" } else { "roll_back" })
            }
            _ => None,
        }
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
            Fact::TempFile(_) => "temp_file",
            Fact::UnattendedTrash(_) => "unattended_trash",
            Fact::LeftAside { .. } => "workspace_aside",
            Fact::DeadRegistration { .. } => "dead_registration",
            Fact::UntrustedConfig { .. } => "untrusted_config",
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
    let finishes = crate::writeback::committed(&dir);
    Some(Problem::new(&b.id, Fact::Journal { left, finishes }))
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
                match crate::ops::preparing::progress(b) {
                    Some(crate::ops::preparing::Progress::Interrupted) => {
                        out.push(Problem::new(&b.id, Fact::InterruptedPrepare));
                        continue;
                    }
                    Some(crate::ops::preparing::Progress::Preparing) => continue,
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
                        // Too many files open to tell: its changes are unknown.
                        workspace::Identity::TooManyOpenFiles(_) => Fact::WorkspaceUnreadable {
                            task: t.name.clone(),
                            root: t.root.clone(),
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
            let finishes = crate::writeback::committed(&dir);
            out.push(Problem::new(&id, Fact::UndoJournal { left, finishes }));
        }
    }
    for (batch, message) in crate::workspace::scratch::orphan_messages(source) {
        out.push(Problem::new(&batch, Fact::ScratchOrphan { message }));
    }
    for (owner, t) in old_temp_files(&state_dir) {
        out.push(Problem::new(&owner, Fact::TempFile(t)));
    }
    if let Ok(base) = source.workspace_base() {
        let trash = base.join(workspace::trash::TRASH);
        if let Some(u) = workspace::trash::unattended(&trash, &state_dir) {
            out.push(Problem::new("", Fact::UnattendedTrash(u)));
        }
        out.extend(left_aside(source, &base, entries));
    }
    out.extend(dead_registrations(source));
    out
}

/// The problem of commands in `delegate.toml` the user has not confirmed
/// (`ops::trust::check` finds them: `file`, `named`, `help`).
pub fn untrusted_config(file: PathBuf, named: String, help: String) -> Problem {
    Problem::new("", Fact::UntrustedConfig { file, named, help })
}

/// The workspaces killed commands left aside in the trash of `base`
/// (design §3.18), each under the batch `entries` names by its short name.
fn left_aside(source: &Source, base: &Path, entries: &[Entry]) -> Vec<Problem> {
    let left = workspace::aside::left_aside(base);
    if left.is_empty() {
        return Vec::new();
    }
    let back = workspace::aside::would_restore(&source.common_dir, base, &source.state_dir());
    left.into_iter()
        .map(|l| {
            let batch = entries
                .iter()
                .find_map(|e| match e {
                    Entry::Batch(b) if b.short() == l.short => Some(b.id.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| l.short.clone());
            let back = back.iter().any(|(_, a)| a == &l.path);
            Problem::new(
                &batch,
                Fact::LeftAside {
                    task: l.task,
                    path: l.path,
                    back,
                },
            )
        })
        .collect()
}

/// The registrations of ours whose folder is gone and that no batch owns
/// (every batch of the repository, whatever `status` was asked about).
fn dead_registrations(source: &Source) -> Vec<Problem> {
    let base = source.workspace_base().ok();
    let dead = workspace::leftover::dead_registrations(&source.common_dir, base.as_deref());
    if dead.is_empty() {
        return Vec::new();
    }
    let entries = batch::list(&source.state_dir()).unwrap_or_default();
    let owned = |id: &str| {
        entries.iter().any(|e| match e {
            Entry::Batch(b) => b.tasks.iter().any(|t| t.worktree_id == id),
            Entry::Broken { id: broken, .. } => {
                id.starts_with(&format!("delegate-{}-", batch::short(broken)))
            }
        })
    };
    dead.into_iter()
        .filter(|d| !owned(&d.id))
        .map(|d| {
            Problem::new(
                "",
                Fact::DeadRegistration {
                    id: d.id,
                    path: d.path,
                    folder: d.folder,
                },
            )
        })
        .collect()
}

/// How old a temporary file must be to count as left over (design §3.18
/// "Leftovers"): a command still writing one wrote it more recently.
pub const TEMP_FILE_AGE_SECS: u64 = 3600;

/// Is `name` one of the temporary files git-delegate makes in its state
/// folder: `fs::write_atomic`'s `.<name>.tmp-<pid>`, the write-back
/// journal's `writeback.journal.tmp` (design §7), the stat cache's
/// `source-index.<pid>-<nanos>.tmp` (`snapshot`)?
fn is_temp_name(name: &[u8]) -> bool {
    let cache = format!("{}.", snapshot::CACHE_FILE);
    crate::sys::fs::is_temp_name(name)
        || name == format!("{}.tmp", batch::JOURNAL_FILE).as_bytes()
        || (name.starts_with(cache.as_bytes()) && name.ends_with(b".tmp"))
}

/// The temporary files of git-delegate below `state_dir` that were last
/// written more than [`TEMP_FILE_AGE_SECS`] ago, each with the id of the
/// batch or undo entry whose folder holds it (empty for other folders).
/// Only the killed command that made one could still want it; symlinks are
/// never followed (a symlink is never one of them).
pub fn old_temp_files(state_dir: &Path) -> Vec<(String, TempFile)> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut stack = vec![(state_dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() {
                // batches/<id>/, undo/<id>/, kept/<batch>/ and a little below.
                if depth < 4 {
                    stack.push((path, depth + 1));
                }
                continue;
            }
            if !ft.is_file() || !is_temp_name(e.file_name().as_bytes()) {
                continue;
            }
            let Ok(md) = e.metadata() else { continue };
            let age_secs = md
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .map_or(0, |d| d.as_secs());
            if age_secs <= TEMP_FILE_AGE_SECS {
                continue;
            }
            out.push((
                temp_owner(state_dir, &path),
                TempFile {
                    path,
                    bytes: md.len(),
                    age_secs,
                },
            ));
        }
    }
    out.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    out
}

/// The id of the batch or undo entry whose folder holds `path`: the folder
/// below `batches/`, `undo/` or `kept/` (a hidden `.<id>.new` or
/// `.<id>.removed-<pid>` named by its id); empty for any other place.
fn temp_owner(state_dir: &Path, path: &Path) -> String {
    let Ok(rel) = path.strip_prefix(state_dir) else {
        return String::new();
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [top, id, _, ..] if ["batches", "undo", "kept"].contains(&top.as_str()) => {
            let id = id.strip_prefix('.').unwrap_or(id);
            let id = id.strip_suffix(".new").unwrap_or(id);
            id.split(".removed-").next().unwrap_or(id).to_string()
        }
        _ => String::new(),
    }
}

/// A baseline ref deleted (or moved) by someone else, or a baseline commit
/// that is gone.
fn baseline(source: &Source, b: &Batch) -> Option<Problem> {
    let name = crate::git::refs::baseline(&b.id);
    let fact = match crate::git::refs::get(&source.repo, &name) {
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
    // Only the drivers its prepare recorded run (design §3.18).
    crate::git::drivers::allow(b.drivers.as_ref());
    let baseline_tree = gix::ObjectId::from_hex(b.baseline.as_bytes())
        .ok()
        .and_then(|c| source.repo.find_commit(c).ok())
        .and_then(|c| c.tree_id().ok())
        .map(|t| t.detach());
    let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
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
                Some(own) => crate::git::commit::tree_of(&source.repo, own).ok()?,
                None => baseline_tree?,
            };
            let repo = crate::git::repo::open_worktree_of(&real, &source.common_dir).ok()?;
            // Keep the snapshot's objects in memory: nothing is changed.
            let mut repo = repo.with_object_memory();
            // Read with git-delegate's own stat record (design §3.20), as apply reads it.
            let record = crate::record::stat::read(
                &crate::record::stat::of_task(&batch_dir, &t.name),
                repo.object_hash(),
            );
            let (snap, _, _) = snapshot::snapshot_task(&repo, record.as_ref(), false).ok()?;
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
