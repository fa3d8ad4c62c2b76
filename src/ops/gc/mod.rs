//! Garbage collection (design §3.4): reclaiming what stale batches and
//! leftovers hold, rescuing unapplied work first; trimming the pool of idle
//! workspaces (design §3.20: `workspace::pool::trim`, `--pool` and `drop
//! --pool` empty it).
//!
//! For every stale batch (lease expired or orphaned): each open task's
//! workspace that is still ours is snapshotted into its proposal ref and
//! patch (`proposal::record`), then workspaces, their registrations, the
//! baseline ref and the state folder go. A workspace holding a git
//! repository the worker made (which no proposal can hold) is kept instead,
//! as an ordinary unlocked worktree, and reported (`kept_workspaces`). Proposal refs that hold work
//! (rescued, conflict, failed) are kept, with their patches moved to
//! `<state>/kept/<batch>/`, until their commit is older than
//! `gc.keep-failed`: the commit's committer time is the clock, so a kept
//! ref's commit is re-dated when its batch is reclaimed. Leftovers of this
//! repository (registrations of ours whose folder is gone, empty folders
//! under `<root>/<repo-name>-<fp>/` no batch owns, refs under
//! `refs/pi-delegate` no batch owns) are reclaimed too, and so is the trash of workspaces apply
//! removed (`<root>/<repo-name>-<fp>/.trash`, see `trash`) that a killed
//! background deleter left; they count as removed workspaces, and so do
//! the verification workspaces an `apply --verify` that was killed left
//! (of any batch no apply verifies now, a batch that is gone included;
//! left in place and reported while a process runs inside). So are the
//! hidden folders a killed prepare or batch removal leaves in the state
//! folder (`.<id>.new`, `.<id>.removed-<pid>`), and the temporary files a
//! killed command left there once they are older than an hour (design
//! §3.18 "Leftovers").
//!
//! A stale batch is left alone while a process is inside one of its
//! workspaces (`quiesce::find_users`, whose header says why the caller's
//! own shell counts), or while an open task's workspace is not at its
//! place but a folder in the workspace folder names it (a task folder
//! renamed, a batch folder moved aside: design §3.18 "Never delete what is
//! not proven ours and empty of work"); the dry run predicts the rescue
//! with `proposal::preview`, as `apply --dry-run` does. A workspace goes
//! only once proven to hold what the rescue read (design §3.18 "Before
//! removing a workspace, prove it"); one written into since is kept, and
//! what is left of its batch with it (`skipped`).
//!
//! A batch whose `batch.toml` cannot be read is never reclaimed here (its
//! lease is unknown): it is reported in `skipped`, and everything that could
//! be its own is left alone. `drop BATCH --force` removes it through
//! [`remove_corrupt`], which rescues its workspaces first as gc does.
//!
//! A batch whose prepare was killed (still marked as being prepared, its
//! process gone; see `preparing`) is removed whole at any age, with nothing
//! rescued: no worker was ever given its workspaces (design §3.15).
//!
//! Owns: deciding what is stale or left over, and reclaiming it.
//! Never: touches a live batch, a user's own worktree, a folder git has
//! registered as a worktree, another repository's folders, a nested git
//! repository inside a workspace, a batch whose work could not be
//! rescued, or any non-empty folder no batch records (left and reported:
//! nothing proves its files are no work); reads, rescues from, looks for processes in or removes a folder
//! that is not the workspace prepare made (`workspace::identify`); removes a
//! workspace that is the source of another open batch (it is released as an
//! ordinary worktree); with `dry_run` it changes nothing at all.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::refs;
use crate::git::registration::Registration;
use crate::git::repo::Source;
use crate::record::batch::{self, discard_kept, Batch, Entry};

mod corrupt;
mod leftovers;
mod reclaim;
mod rescue;

pub use corrupt::{remove_corrupt, CorruptRemoval};

/// Work saved from a stale task's workspace into a proposal ref.
#[derive(Debug, Clone)]
pub struct Rescued {
    pub batch: String,
    pub task: String,
    pub ref_name: String,
    /// Where the patch is kept (after the batch's state folder is gone);
    /// `None` when none was written: a remote proposal over the bound of
    /// paths (a path bomb, design §3.18 "Limits"), or one that could not be
    /// read, is kept as its ref alone.
    pub patch: Option<PathBuf>,
    /// Paths that differ from the baseline.
    pub paths: usize,
}

/// A stale task's workspace gc kept when it reclaimed the batch, left as an
/// ordinary, unlocked worktree: it holds git repositories the worker made,
/// which gc never deletes (design §3.2 `nested_repository`), or other open
/// batches were prepared in it and write back into it.
#[derive(Debug, Clone)]
pub struct KeptWorkspace {
    pub batch: String,
    pub task: String,
    pub root: PathBuf,
    /// The nested repositories, relative to the workspace root.
    pub nested: Vec<gix::bstr::BString>,
    /// The open batches whose source it is.
    pub batches: Vec<String>,
    /// The submodules the task changed (design §3.15: their work cannot be
    /// saved in a proposal), relative to the workspace root.
    pub changed_submodules: Vec<gix::bstr::BString>,
}

/// A stale batch gc did not reclaim, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub batch: String,
    pub message: String,
}

/// What gc did (or, with `dry_run`, would do).
#[derive(Debug, Default)]
pub struct Report {
    pub dry_run: bool,
    /// Stale batches reclaimed.
    pub batches: Vec<String>,
    /// Workspace folders removed: of stale batches, and leftovers.
    pub workspaces_removed: usize,
    /// Leftover worktree registrations removed (their folder was gone).
    pub registrations_removed: usize,
    pub rescued: Vec<Rescued>,
    pub refs_removed: usize,
    /// Proposal refs kept for `gc.keep-failed`.
    pub refs_kept: Vec<String>,
    /// Sum of the sizes of the files removed.
    pub bytes_freed: u64,
    /// Folders not ours any more (a stale task's folder replaced by the
    /// user), and the workspaces kept for nested repositories: left alone.
    pub left_alone: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
    /// Batches whose state folder holds a write-back journal (dry run: not rolled back).
    pub pending_writebacks: Vec<String>,
    /// Workspaces of reclaimed batches kept (released: ordinary worktrees
    /// now) for the nested repositories in them or because they are the
    /// source of open batches.
    pub kept_workspaces: Vec<KeptWorkspace>,
    /// Batches whose prepare was killed before they were complete (design
    /// §3.15): removed whole, nothing rescued; they are in `batches` too.
    pub incomplete: Vec<String>,
    /// Stash entries the workspaces of reclaimed batches pushed, still in
    /// the stash: reported, never touched (design §3.16).
    pub stashed: Vec<StashedWork>,
    /// Undo entries removed: beyond the newest `undo.keep` and older than
    /// `gc.keep-failed` (design §3.11); their refs count in `refs_removed`.
    pub undo_entries_removed: Vec<String>,
    /// Idle workspaces of the pool removed (design §3.20): older than
    /// `workspace.pool-ttl`, beyond `workspace.pool`, or all with `--pool`;
    /// their sizes count in `bytes_freed`.
    pub idle_workspaces_removed: usize,
    /// Temporary files older than an hour that killed commands left in
    /// the state folder, removed (design §3.18 "Leftovers"); their sizes
    /// count in `bytes_freed`.
    pub temp_files_removed: Vec<PathBuf>,
    /// Reclaimed batches whose refs on their remote could not be deleted
    /// (design §3.14): reported, the refs listed for later.
    pub remote_left: Vec<crate::ops::remote_workers::Left>,
    /// Folders below the workspace root refused (design §3.18): another
    /// user's, or a symlink where a folder of ours was expected; never
    /// entered, read or removed.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
    /// The setup commands of killed prepares stopped before their batch
    /// was removed (with `dry_run`: that would be stopped; design §3.20).
    pub stopped: Vec<Stopped>,
}

/// A process gc stopped (or would stop): a setup command of a batch whose
/// prepare was killed.
#[derive(Debug, Clone)]
pub struct Stopped {
    pub batch: String,
    pub process: crate::sys::quiesce::Proc,
}

/// A stash entry a stale batch's workspace pushed (design §3.16).
#[derive(Debug, Clone)]
pub struct StashedWork {
    pub batch: String,
    /// `None` when which workspace made it cannot be told.
    pub task: Option<String>,
    /// `stash@{N}`.
    pub stash: String,
}

/// Reclaim what stale batches and leftovers hold, and trim the pool of idle
/// workspaces (design §3.20; `empty_pool`: `gc --pool`, all of them). The
/// caller holds the repository lock (and has recovered interrupted
/// write-backs), unless `dry_run`.
pub fn run(source: &Source, dry_run: bool, empty_pool: bool) -> Result<Report> {
    let mut gc = Gc {
        source,
        dry_run,
        state_dir: source.state_dir(),
        report: Report {
            dry_run,
            ..Report::default()
        },
        handled_refs: HashSet::new(),
        handled_regs: HashSet::new(),
        handled_roots: HashSet::new(),
        restored: Vec::new(),
    };
    // What the lock's recovery puts back before the real gc runs (design
    // §3.18): the dry run counts those workspaces where they will be.
    if dry_run {
        if let Ok(base) = source.workspace_base() {
            gc.restored =
                crate::workspace::aside::would_restore(&source.common_dir, &base, &gc.state_dir);
        }
    }
    let entries = batch::list(&gc.state_dir)?;
    let all: Vec<Batch> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(b.as_ref().clone()),
            Entry::Broken { .. } => None,
        })
        .collect();
    let mut remaining: Vec<&Batch> = Vec::new();
    let mut broken_shorts: Vec<String> = Vec::new();
    for e in &entries {
        match e {
            Entry::Batch(b) => {
                if !gc.reclaimed(b, &all) {
                    remaining.push(b);
                }
            }
            Entry::Broken { id, problem } => {
                // Its lease cannot be read, so it is never reclaimed
                // automatically: reported, with the command that removes it.
                gc.report.skipped.push(Skipped {
                    batch: id.clone(),
                    message: format!(
                        "batch {}: its state is corrupt ({problem}), so its lease cannot be read and gc leaves it alone; remove it with `git delegate drop {id} --force` (the changes in its workspaces are saved as proposal refs first)",
                        batch::short(id)
                    ),
                });
                broken_shorts.push(batch::short(id).to_string())
            }
        }
    }
    let owners = Owners {
        batches: remaining,
        broken_ids: entries
            .iter()
            .filter_map(|e| match e {
                Entry::Broken { id, .. } => Some(id.clone()),
                Entry::Batch(_) => None,
            })
            .collect(),
        broken_shorts,
    };
    gc.leftover_verifications(&owners.broken_ids);
    gc.trim_pool(empty_pool)?;
    gc.leftover_registrations(&owners)?;
    gc.leftover_folders(&owners)?;
    let (undone, refs) = crate::ops::undo::prune(source, dry_run)?;
    gc.report.undo_entries_removed = undone;
    gc.report.refs_removed += refs;
    gc.leftover_refs(&owners)?;
    gc.leftover_patches()?;
    gc.leftover_hidden_state();
    gc.leftover_temp_files();
    // Failing verification logs of ended batches, after gc.keep-failed (design §3.10).
    let ids: Vec<String> = entries
        .iter()
        .map(|e| match e {
            Entry::Batch(b) => b.id.clone(),
            Entry::Broken { id, .. } => id.clone(),
        })
        .collect();
    crate::ops::verify::prune_logs(&gc.state_dir, &ids, source.config.keep_failed_secs, dry_run);
    // The pre-push guard's record of private blobs: entries of batches gone
    // for 90 days (design §3.19); best effort, an unreadable one is left.
    let open: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let now = crate::sys::time::now();
    let _ = crate::record::private::trim(&gc.state_dir, &open, now, dry_run);
    Ok(gc.report)
}

/// `drop --pool` (design §3.20): every idle workspace removed. The caller
/// holds the repository lock.
pub fn empty_pool(source: &Source) -> Result<crate::workspace::pool::Trimmed> {
    Ok(crate::workspace::pool::trim(
        &source.common_dir,
        &source.state_dir(),
        0,
        None,
        false,
    )?)
}

impl Gc<'_> {
    /// The pool (design §3.20): idle workspaces older than
    /// `workspace.pool-ttl` and beyond `workspace.pool`, or all of them
    /// with `--pool` (`empty`).
    fn trim_pool(&mut self, empty: bool) -> Result<()> {
        let config = &self.source.config;
        let (keep, cutoff) = match empty {
            true => (0, None),
            false => (
                config.pool,
                Some(crate::sys::time::now().saturating_sub(config.pool_ttl_secs)),
            ),
        };
        let common = &self.source.common_dir;
        let trimmed =
            crate::workspace::pool::trim(common, &self.state_dir, keep, cutoff, self.dry_run)?;
        self.report.idle_workspaces_removed = trimmed.removed;
        self.report.bytes_freed += trimmed.bytes;
        Ok(())
    }
}

/// What the batches that stay (live, skipped, unreadable) own.
struct Owners<'a> {
    batches: Vec<&'a Batch>,
    /// Ids of batch folders whose `batch.toml` cannot be read: everything
    /// that could be theirs is left alone.
    broken_ids: Vec<String>,
    broken_shorts: Vec<String>,
}

impl Owners<'_> {
    fn owns_registration(&self, id: &str) -> bool {
        self.batches
            .iter()
            .any(|b| b.tasks.iter().any(|t| t.worktree_id == id))
            || self
                .broken_shorts
                .iter()
                .any(|s| id.starts_with(&format!("delegate-{s}-")))
    }

    fn owns_short(&self, short: &str) -> bool {
        self.broken_shorts.iter().any(|s| s == short)
    }

    fn owns_root(&self, root: &Path) -> bool {
        self.batches
            .iter()
            .any(|b| b.tasks.iter().any(|t| same_path(&t.root, root)))
    }

    fn owns_ref(&self, name: &str) -> bool {
        let owned_by = |id: &str| name.starts_with(&format!("{}batches/{id}/", refs::PREFIX));
        self.batches
            .iter()
            .any(|b| owned_by(&b.id) && !discard_kept(b, name))
            || self.broken_ids.iter().any(|id| owned_by(id))
    }
}

struct Gc<'a> {
    source: &'a Source,
    dry_run: bool,
    state_dir: PathBuf,
    report: Report,
    /// Refs this run removed or kept (a dry run leaves them in place).
    handled_refs: HashSet<String>,
    /// Registrations this run removed.
    handled_regs: HashSet<String>,
    /// Workspace folders this run removed.
    handled_roots: HashSet<PathBuf>,
    /// With `dry_run`: the workspaces a killed command left aside that the
    /// real run's lock puts back first, as (place, where it waits).
    restored: Vec<(PathBuf, PathBuf)>,
}

impl Gc<'_> {
    /// With `dry_run`: where the workspace whose place is `root` waits
    /// aside, to be put back before a real run.
    fn waiting_aside(&self, root: &Path) -> Option<&Path> {
        self.restored
            .iter()
            .find(|(place, _)| place == root)
            .map(|(_, aside)| aside.as_path())
    }
}

/// The path a worktree registration's `gitdir` file names, if readable.
fn read_gitdir_file(path: &Path) -> Option<PathBuf> {
    let text = std::fs::read(path).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    use std::os::unix::ffi::OsStrExt;
    (!text.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(text)))
}

/// A registration that names `root`'s `.git`, or a folder that is gone, or nothing readable.
fn registration_is_dead(reg: &Path, root: &Path) -> bool {
    match read_gitdir_file(&Registration::at(reg.to_path_buf()).gitdir_file()).map(|t| reg.join(t))
    {
        Some(target) => {
            same_path(&target, &root.join(".git"))
                || target
                    .parent()
                    .is_none_or(|f| f.symlink_metadata().is_err())
        }
        None => true,
    }
}

/// Does git have `root` registered as a worktree (of any repository)? Its
/// `.git` file names a registration whose `gitdir` names it back. A folder
/// holding a `.git` folder is a repository of its own: also never ours to remove.
fn is_registered_worktree(root: &Path) -> bool {
    let dotgit = root.join(".git");
    let Ok(meta) = dotgit.symlink_metadata() else {
        return false;
    };
    if !meta.is_file() {
        return true;
    }
    if std::fs::read(&dotgit).is_err() {
        return true; // unreadable: do not guess
    }
    let Some(target) = read_dotgit(root) else {
        return false;
    };
    match read_gitdir_file(&Registration::at(target.clone()).gitdir_file()) {
        Some(back) => same_path(&target.join(back), &dotgit),
        None => false,
    }
}

/// The registration a worktree folder's `.git` file names (made absolute).
fn read_dotgit(root: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let text = std::fs::read(root.join(".git")).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let target = text.strip_prefix(b"gitdir: ")?;
    Some(root.join(std::ffi::OsStr::from_bytes(target)))
}

fn same_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
