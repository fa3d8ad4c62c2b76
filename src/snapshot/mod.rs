//! The snapshot of a working tree: everything on disk that `git add -A` would
//! take (tracked changes, deletions, untracked non-ignored files, modes,
//! symlinks), written as a git tree. The folder holds its two companions:
//! the source read only at the paths the proposals touch (`touched`) and
//! the index a workspace's snapshot found unusable, written again
//! (`reindex`). Above `git/` and `record/` (the stat cache is a batch's), below
//! everything that records or lands work.
//!
//! Owns: turning a working tree into a tree id, using the worktree's own index
//! only as a stat cache: only files whose stat data differ are hashed, through
//! the same clean filters as `git add`; and the source's private stat cache
//! (`source-index` in a batch's state folder): a copy of the user's index with
//! refreshed stat data, so that a stat-dirty user index (every file touched)
//! costs one re-hash per batch, not one per snapshot. A source is read as git
//! reads it (`assume-unchanged` and `skip-worktree` entries count at their
//! index content); a task's workspace (`snapshot_workspace`, design §3.2
//! step 1) by what is on disk only, and the untracked nested repositories
//! of either are named, never part of the tree. A workspace's index is a
//! cache too: one that is missing, cannot be decoded or fails its checksum
//! is read as its HEAD's tree with no stat data (every file hashed, as git
//! would after `rm .git/index && git reset`), and the index that should
//! stand there is handed back (`snapshot_workspace_rebuilding`, `Rebuilt`)
//! for the caller holding the repository lock to write (`reindex`).
//! Never: writes the worktree's index, a ref or a working-tree file; the index
//! it reads stays byte-for-byte unchanged. The private cache is only ever
//! written to a batch's state folder, by temp file and rename. Never lists
//! batches itself: which batches are the source's is `batch::of_source`.
//!
//! # The stat cache and racy entries
//!
//! An index entry says "a file with exactly this stat data had exactly this
//! content". That holds only if the file cannot have changed within the same
//! timestamp tick after its stat data were taken. git's answer (racy-git) is
//! to distrust entries not older than the index file. The cache does better:
//! before a snapshot starts it creates its temp file and reads that file's
//! mtime from the filesystem clock (the probe); an entry is recorded as
//! trusted only when its mtime and ctime are strictly older than the probe,
//! so any later change to the file (even one that restores the mtime) gives
//! it a newer ctime and is seen. Every other refreshed entry is stored
//! smudged (mtime zero): the next snapshot reads that file.
//!
//! When a snapshot uses the cache, the effective index is the user's index in
//! which an entry may take the cache's `(mode, id, stat)` for the same path:
//! only where the cache's entry is trusted and saw a later state of the file
//! than the user's entry (a later ctime, then mtime: any change to a file
//! moves its ctime). Any trusted `(stat -> content)` pair gives the same tree
//! (a file whose stat data differ is hashed), so the choice only decides how
//! much is read. The tracked set (which paths are in the index, conflicts,
//! intent-to-add, skip-worktree) always comes from the user's index.

pub mod reindex;
pub mod touched;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
use gix::status::plumbing::index_as_worktree_with_renames::{Entry as WtEntry, VisitEntry};
use gix::ObjectId;

use crate::error::{Code, Error, Result};

/// The file name of the source's stat cache inside a batch's state folder.
pub const CACHE_FILE: &str = "source-index";

/// A working tree written as a tree.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree of the working tree.
    pub tree: ObjectId,
    /// The tree of `HEAD` (the empty tree on an unborn branch).
    pub head_tree: ObjectId,
    /// Paths whose content differs from `HEAD` (staged, unstaged, untracked).
    pub changes: usize,
    /// Untracked git repositories inside the working tree: left out (git
    /// would record them as embedded repositories without content). For a
    /// source, prepare warns; for a workspace, the task cannot apply (design
    /// §3.2 `nested_repository`).
    pub nested_repos: Vec<BString>,
    /// Files that had to be read (their stat data differed from the index,
    /// or they are new): the cost the index as a stat cache did not save.
    pub hashed: usize,
    /// A workspace's paths git refuses to add or check out (design §3.18
    /// "Paths"): left out of the tree, so that the task alone is refused
    /// (`invalid_path`) with the rest of its work recorded. A source
    /// holding such paths is an error that names them instead.
    pub invalid: Vec<crate::git::validate::Invalid>,
}

type Edit = Option<(EntryKind, ObjectId)>;

/// Snapshot the working tree of `repo`. Blobs and trees are written to the
/// repository's object store (or to memory, if `repo` keeps objects there).
///
/// When the working tree is the source of open batches, the newest stat
/// cache among them is used, and refreshed in place when this snapshot had to
/// read many files whose content had not changed.
pub fn snapshot(repo: &gix::Repository) -> Result<Snapshot> {
    let Some(slot) = find_cache(repo) else {
        return run(repo, None, None, Side::Source).map(|(s, _, _)| s);
    };
    let probe = Probe::new(&slot.dir);
    let (snap, refreshed, _) = run(repo, slot.read.as_deref(), probe.as_ref(), Side::Source)?;
    match (refreshed, probe) {
        (Refresh::Write(state), Some(probe)) => {
            // Best effort: a cache that cannot be written costs time, never correctness.
            let _ = probe.commit(*state, &slot.write);
        }
        (Refresh::Useless, _) => {
            if let Some(read) = &slot.read {
                let _ = std::fs::remove_file(read);
            }
        }
        _ => {}
    }
    Ok(snap)
}

/// Snapshot a task's workspace (design §3.2 step 1): only the files on disk
/// count. Unlike a source snapshot, the workspace's own index flags hide
/// nothing: `assume-unchanged` is ignored, and a `skip-worktree` entry counts
/// at its index content only while its file is absent from disk. Untracked
/// nested repositories are reported in [`Snapshot::nested_repos`] (the caller
/// decides: they are never part of the tree). No stat cache is used.
///
/// A workspace's index that cannot be used (missing, not decodable, a
/// checksum that does not match) lies about nothing: the snapshot reads
/// the workspace as if its index held its HEAD's tree without stat data
/// (see [`snapshot_workspace_rebuilding`]).
pub fn snapshot_workspace(repo: &gix::Repository) -> Result<Snapshot> {
    snapshot_workspace_rebuilding(repo).map(|(s, _)| s)
}

/// A workspace's index made anew by a snapshot that could not use the one
/// on disk (design §3.2 step 1, "a workspace's index is a cache").
pub struct Rebuilt {
    /// Why the index on disk could not be used.
    pub cause: String,
    /// The index that should stand there: the workspace's HEAD tree (the
    /// task's base, unless its worker moved HEAD), skip-worktree where its
    /// sparse checkout leaves a path out and nothing is on disk there, and
    /// the stat data of every file whose content HEAD holds (the others
    /// have none, so git reads them). No intent-to-add entries, no unmerged
    /// stages, no extensions: the caller adds what it knows (`reindex`).
    pub index: gix::index::State,
}

/// [`snapshot_workspace`], also handing back the index to write when the
/// workspace's own could not be used. The tree is the same either way:
/// every file on disk, as `git add -A` would record it given an index
/// equal to the workspace's HEAD tree.
pub fn snapshot_workspace_rebuilding(
    repo: &gix::Repository,
) -> Result<(Snapshot, Option<Rebuilt>)> {
    run(repo, None, None, Side::Workspace).map(|(s, _, r)| (s, r))
}

/// Whose working tree a snapshot reads, which decides what the index flags mean.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The user's working tree: the index is read as git reads it, so an
    /// `assume-unchanged` or `skip-worktree` entry counts at its index content
    /// (git does not look at those files; design §3.1 "exactly the files
    /// `git status` would look at"; §3.15 sparse checkouts).
    Source,
    /// A task's workspace: see [`snapshot_workspace`].
    Workspace,
}

/// Make a workspace's index flags hide nothing (design §3.2 step 1): clear
/// `assume-unchanged` everywhere, and `skip-worktree` where something is on
/// disk at the entry's path, so that the status compares those files like
/// any other (stat first, then content). A `skip-worktree` entry whose path
/// is absent keeps its flag: it counts at its index content.
fn unflag_for_workspace(repo: &gix::Repository, index: &mut gix::index::State) {
    let Some(root) = repo.workdir().map(Path::to_path_buf) else {
        return;
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for e in entries.iter_mut() {
        if !e
            .flags
            .intersects(Flags::ASSUME_VALID | Flags::SKIP_WORKTREE)
        {
            continue;
        }
        e.flags.remove(Flags::ASSUME_VALID);
        // A sparse index's folder entry (design §3.15) stands for the
        // tree it names; files made below it are untracked ones.
        if e.flags.contains(Flags::SKIP_WORKTREE) && e.mode != Mode::DIR {
            let rela = e.path_in(paths);
            let rela = std::os::unix::ffi::OsStrExt::from_bytes(rela.as_bytes());
            let on_disk = root
                .join::<&std::ffi::OsStr>(rela)
                .symlink_metadata()
                .is_ok();
            if on_disk {
                e.flags.remove(Flags::SKIP_WORKTREE);
            }
        }
    }
}

/// A refreshed stat cache waiting for the state folder of the batch being
/// prepared. Dropping it removes its temp file.
pub struct PendingCache {
    probe: Probe,
    state: gix::index::State,
}

impl PendingCache {
    /// Move the cache into `batch_dir` (best effort).
    pub fn keep(self, batch_dir: &Path) {
        let _ = self.probe.commit(self.state, &batch_dir.join(CACHE_FILE));
    }
}

/// The snapshot `prepare` takes of the source: like [`snapshot`], but a
/// refreshed cache is handed back to be kept in the new batch's folder
/// (`state_dir` must exist; the temp file lives there until then).
pub fn snapshot_for_prepare(
    repo: &gix::Repository,
    state_dir: &Path,
) -> Result<(Snapshot, Option<PendingCache>)> {
    let slot = find_cache(repo);
    let probe = Probe::new(state_dir);
    let read = slot.as_ref().and_then(|s| s.read.as_deref());
    let (snap, refreshed, _) = run(repo, read, probe.as_ref(), Side::Source)?;
    let pending = match (refreshed, probe) {
        (Refresh::Write(state), Some(probe)) => Some(PendingCache {
            probe,
            state: *state,
        }),
        _ => None,
    };
    Ok((snap, pending))
}

/// Where a worktree's stat cache is read from and written to.
struct Slot {
    /// The newest existing cache of a batch of this worktree.
    read: Option<PathBuf>,
    /// Where a refreshed cache goes.
    write: PathBuf,
    /// The folder of `write` (for the temp file).
    dir: PathBuf,
}

/// The stat cache of the open batches whose source is `repo`'s working tree.
fn find_cache(repo: &gix::Repository) -> Option<Slot> {
    let root = std::fs::canonicalize(repo.workdir()?).ok()?;
    let common = std::fs::canonicalize(repo.common_dir()).ok()?;
    let state_dir = crate::git::repo::state_dir(&common);
    // The batches of this working tree, oldest first (`batch` owns the listing).
    let mine = crate::record::batch::of_source(&state_dir, &root).ok()?;
    if mine.is_empty() {
        return None;
    }
    let newest_cache = mine
        .iter()
        .filter_map(|b| {
            let p = crate::record::batch::batch_dir(&state_dir, &b.id).join(CACHE_FILE);
            let mtime = p.metadata().and_then(|m| m.modified()).ok()?;
            Some((mtime, p))
        })
        .max_by_key(|(mtime, _)| *mtime)
        .map(|(_, p)| p);
    let write = match &newest_cache {
        Some(p) => p.clone(),
        None => crate::record::batch::batch_dir(&state_dir, &mine.last()?.id).join(CACHE_FILE),
    };
    let dir = write.parent()?.to_path_buf();
    Some(Slot {
        read: newest_cache,
        write,
        dir,
    })
}

/// The cache's temp file, created before a snapshot starts: its mtime is the
/// filesystem clock at that moment (see the module header).
struct Probe {
    path: PathBuf,
    file: std::fs::File,
    secs: i64,
    nsecs: u32,
}

impl Probe {
    fn new(dir: &Path) -> Option<Probe> {
        use std::os::unix::fs::MetadataExt;
        sweep_stale_temps(dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = dir.join(format!("{CACHE_FILE}.{}-{nanos}.tmp", std::process::id()));
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        match file.metadata() {
            Ok(md) => Some(Probe {
                path,
                file,
                secs: md.mtime(),
                nsecs: md.mtime_nsec() as u32,
            }),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Were these stat data (content and inode change times) taken from a
    /// file last changed before the probe, so that any later change to it
    /// gives it different ones?
    fn predates(&self, stat: &Stat) -> bool {
        let older = |t: gix::index::entry::stat::Time| {
            (i64::from(t.secs), t.nsecs) < (self.secs, self.nsecs)
        };
        older(stat.mtime) && older(stat.ctime)
    }

    /// Write `state` into the temp file and rename it to `dest`.
    fn commit(self, state: gix::index::State, dest: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let file = gix::index::File::from_state(state, dest);
        let mut out = std::io::BufWriter::with_capacity(1 << 16, &self.file);
        file.write_to(
            &mut out,
            gix::index::write::Options {
                extensions: gix::index::write::Extensions::None,
                skip_hash: false,
            },
        )
        .map_err(std::io::Error::other)?;
        out.flush()?;
        drop(out);
        std::fs::rename(&self.path, dest)
    }
}

/// Remove temp files of snapshots that died (killed) more than an hour ago.
fn sweep_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(&format!("{CACHE_FILE}.")) && name.ends_with(".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > hour);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // After a successful rename the temp name is gone already.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What became of the stat cache in one snapshot.
enum Refresh {
    /// Nothing worth writing.
    Keep,
    /// The cache gave nothing the user's index did not: remove it.
    Useless,
    /// Write this refreshed index as the cache.
    Write(Box<gix::index::State>),
}

/// Read the worktree's index (empty when there is none). Like git, and
/// unlike gix's default, the trailing checksum is not verified on read (it
/// costs a SHA-1 pass over the whole file); the entries are still decoded
/// and checked for structure.
fn user_index(repo: &gix::Repository) -> Result<gix::index::State> {
    let git = |e: gix::Error| Error::git(format!("snapshot of {}", display_root(repo)), e);
    let path = repo.index_path();
    if path.exists() {
        match gix::index::File::at(&path, repo.object_hash(), true, Default::default()) {
            Ok(f) => return Ok(f.into()),
            // Removed in between: treat as missing, like `index_or_empty`.
            Err(_) if !path.exists() => {}
            Err(e) => return Err(git(e)),
        }
    }
    Ok(gix::index::State::new(repo.object_hash()))
}

/// Read a workspace's index, checksum verified (a workspace's index is
/// small next to the files it describes, and one that lies must not be
/// trusted as a stat cache); `Err` with the cause when it is missing or
/// cannot be used.
fn workspace_index(repo: &gix::Repository) -> std::result::Result<gix::index::State, String> {
    let path = repo.index_path();
    match gix::index::File::at(&path, repo.object_hash(), false, Default::default()) {
        Ok(f) => Ok(f.into()),
        Err(_) if !path.exists() => Err(format!("{} is missing", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The index a workspace whose own cannot be used is read with: its HEAD
/// tree, no stat data, skip-worktree where its sparse checkout leaves a
/// path out (design §3.15).
fn head_index(repo: &gix::Repository, head_tree: ObjectId) -> Result<gix::index::State> {
    let mut index: gix::index::State = repo
        .index_from_tree(&head_tree)
        .map_err(|e| {
            Error::git(
                format!(
                    "snapshot of {}: cannot read HEAD's tree",
                    display_root(repo)
                ),
                e,
            )
        })?
        .into();
    crate::git::sparse::mark_workspace(repo, &mut index)?;
    Ok(index)
}

/// Does the index's cache tree (git's TREE extension) say the index holds
/// exactly `head_tree`? git keeps it valid only while no entry differs from
/// the tree it names; the entry count is checked as well, as a guard against
/// a stale extension written by another tool.
fn index_is_head(index: &gix::index::State, head_tree: ObjectId) -> bool {
    let Some(root) = index.tree() else {
        return false;
    };
    let entries = index
        .entries()
        .iter()
        .filter(|e| e.stage_raw() == 0 && !e.flags.contains(Flags::INTENT_TO_ADD))
        .count();
    let all_plain = index.entries().iter().all(|e| e.stage_raw() == 0);
    all_plain
        && root.id == head_tree
        && root.num_entries.and_then(|n| usize::try_from(n).ok()) == Some(entries)
}

/// The index entries of `tree` (as `index_from_tree` makes them), kept for
/// the next snapshot of a working tree with the same HEAD: apply snapshots
/// its workspaces in parallel, every one on the batch's baseline.
fn head_entries(repo: &gix::Repository, tree: ObjectId) -> Option<Arc<gix::index::State>> {
    static LAST: Mutex<Option<(ObjectId, Arc<gix::index::State>)>> = Mutex::new(None);
    // Held while the first one is built: the others would build the same.
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, state)) = last.as_ref().filter(|(id, _)| *id == tree) {
        return Some(Arc::clone(state));
    }
    let state: Arc<gix::index::State> = Arc::new(repo.index_from_tree(&tree).ok()?.into());
    *last = Some((tree, Arc::clone(&state)));
    Some(state)
}

/// Whether `index` holds exactly the entries of `head` (same paths, modes
/// and ids, all merged, none intent-to-add): then the HEAD -> index diff
/// (`tree_index_status`, which compares exactly those) is empty.
fn holds_exactly(index: &gix::index::State, head: &gix::index::State) -> bool {
    index.entries().len() == head.entries().len()
        && index.entries().iter().zip(head.entries()).all(|(e, h)| {
            e.stage_raw() == 0
                && !e.flags.contains(Flags::INTENT_TO_ADD)
                && e.mode == h.mode
                && e.id == h.id
                && e.path(index) == h.path(head)
        })
}

/// Entries whose stat data may stand in for reading the file.
fn plain(e: &gix::index::Entry) -> bool {
    e.stage_raw() == 0
        && !e.flags.intersects(
            Flags::INTENT_TO_ADD
                | Flags::SKIP_WORKTREE
                | Flags::ASSUME_VALID
                | Flags::REMOVE
                | Flags::UPTODATE
                | Flags::FSMONITOR_VALID,
        )
        && matches!(e.mode, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
}

/// Can this entry's stat data be trusted relative to the index file it came
/// from (written at `ts`)? Smudged entries (mtime zero, or git's size zero
/// for a non-empty blob) and racily clean ones cannot.
fn trusted(
    e: &gix::index::Entry,
    ts_secs: i64,
    ts_nsecs: u32,
    opts: gix::index::entry::stat::Options,
) -> bool {
    let m = e.stat.mtime;
    if m.secs == 0 && m.nsecs == 0 {
        return false;
    }
    if e.stat.size == 0 && !e.id.is_empty_blob() {
        return false;
    }
    // gix's own racy rule (`Stat::is_racy`), against the index's timestamp.
    match ts_secs.cmp(&i64::from(m.secs)) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal if opts.use_nsec && opts.check_stat => ts_nsecs > m.nsecs,
        std::cmp::Ordering::Equal => false,
        std::cmp::Ordering::Greater => true,
    }
}

fn smudge(e: &mut gix::index::Entry) {
    e.stat.mtime = gix::index::entry::stat::Time { secs: 0, nsecs: 0 };
}

/// What merging the cache did.
#[derive(Default)]
struct Merged {
    /// Entries that took the cache's data.
    used: usize,
    /// Of those, the ones whose content or mode differ from the user's entry.
    changed: Vec<(BString, Edit)>,
}

/// Merge the cache into the user's index (see the module header).
fn merge_cache(
    index: &mut gix::index::State,
    cache: &gix::index::State,
    opts: gix::index::entry::stat::Options,
) -> Merged {
    let uts = index.timestamp();
    let (u_secs, u_nsecs) = (uts.unix_seconds(), uts.nanoseconds());
    let cts = cache.timestamp();
    let (c_secs, c_nsecs) = (cts.unix_seconds(), cts.nanoseconds());
    let newest = if cts > uts { cts } else { uts };
    let (centries, cpaths) = (cache.entries(), cache.path_backing());
    let mut merged = Merged::default();
    let mut ci = 0;
    {
        let (entries, paths) = index.entries_mut_and_pathbacking();
        for e in entries.iter_mut() {
            if !plain(e) {
                continue;
            }
            let path = e.path_in(paths);
            while ci < centries.len() && centries[ci].path_in(cpaths) < path {
                ci += 1;
            }
            let user_ok = trusted(e, u_secs, u_nsecs, opts);
            let cached = centries.get(ci).filter(|c| {
                c.path_in(cpaths) == path
                    && plain(c)
                    && trusted(c, c_secs, c_nsecs, opts)
                    && (c.stat.ctime, c.stat.mtime) > (e.stat.ctime, e.stat.mtime)
            });
            match cached {
                Some(c) => {
                    if (c.id, c.mode) != (e.id, e.mode) {
                        merged
                            .changed
                            .push((path.to_owned(), tree_kind(c.mode).map(|k| (k, c.id))));
                    }
                    e.id = c.id;
                    e.mode = c.mode;
                    e.stat = c.stat;
                    merged.used += 1;
                }
                None if !user_ok => smudge(e),
                None => {}
            }
        }
    }
    // Every entry kept is trusted against its own index file, hence against
    // the newer of the two timestamps; the rest are smudged.
    index.set_timestamp(newest);
    merged
}

/// What a worktree file became, as the index-worktree status saw it.
enum OnDisk {
    Gone,
    /// A tracked stage-0 file whose content may differ: its index entry.
    Tracked(usize),
    /// Untracked, conflicted, intent-to-add, or changed type.
    Other,
}

#[derive(Default)]
struct Collect {
    on_disk: BTreeMap<BString, OnDisk>,
    /// Entries whose content is unchanged but whose stat data were refreshed.
    refreshed: Vec<(usize, Stat)>,
    nested_repos: Vec<BString>,
    rewrite: bool,
}

/// A submodule counts at its gitlink in the index: a source's dirty
/// submodules are refused before a snapshot (design §3.15), and a task's
/// changes in a workspace's submodules are found by `submodules::changed`.
/// No submodule status is computed here (gix's builtin one would read
/// `.gitmodules`, or the whole index again when that file is missing).
#[derive(Clone, Copy)]
struct NoSubmodules;

impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for NoSubmodules {
    type Output = ();

    fn status(&mut self, _entry: &gix::index::Entry, _rela_path: &BStr) -> gix::Result<Option<()>> {
        Ok(None)
    }
}

impl<'index> VisitEntry<'index> for Collect {
    type ContentChange = ();
    type SubmoduleStatus = ();

    fn visit_entry(&mut self, entry: WtEntry<'index, (), ()>) {
        match entry {
            WtEntry::Modification {
                entry_index,
                rela_path,
                status,
                ..
            } => match status {
                EntryStatus::NeedsUpdate(stat) => self.refreshed.push((entry_index, stat)),
                EntryStatus::Change(Change::Removed) => {
                    self.on_disk.insert(rela_path.to_owned(), OnDisk::Gone);
                }
                EntryStatus::Change(Change::SubmoduleModification(_)) => {}
                EntryStatus::Change(Change::Modification { .. }) => {
                    self.on_disk
                        .insert(rela_path.to_owned(), OnDisk::Tracked(entry_index));
                }
                EntryStatus::Change(Change::Type { .. })
                | EntryStatus::IntentToAdd
                | EntryStatus::Conflict { .. } => {
                    self.on_disk.insert(rela_path.to_owned(), OnDisk::Other);
                }
            },
            WtEntry::DirectoryContents { entry, .. } => {
                // A `.git` below the root that the walk met inside a tracked
                // folder (only emitted for workspaces): a repository made in a
                // folder git tracks, whose history git would leave out.
                if entry.property == Some(gix::dir::entry::Property::DotGit) {
                    if let Some(slash) = entry.rela_path.rfind_byte(b'/') {
                        let folder = BString::from(&entry.rela_path[..slash]);
                        if !self.nested_repos.contains(&folder) {
                            self.nested_repos.push(folder);
                        }
                    }
                    return;
                }
                if entry.status != gix::dir::entry::Status::Untracked {
                    return;
                }
                match entry.disk_kind {
                    Some(gix::dir::entry::Kind::Repository) => {
                        self.nested_repos.push(entry.rela_path)
                    }
                    Some(gix::dir::entry::Kind::File) | Some(gix::dir::entry::Kind::Symlink) => {
                        self.on_disk.insert(entry.rela_path, OnDisk::Other);
                    }
                    _ => {}
                }
            }
            WtEntry::Rewrite { .. } => self.rewrite = true,
        }
    }
}

/// The snapshot proper. `cache`: a stat cache to merge into the user's
/// index; `probe`: given when a refreshed cache may be written.
fn run(
    repo: &gix::Repository,
    cache: Option<&Path>,
    probe: Option<&Probe>,
    side: Side,
) -> Result<(Snapshot, Refresh, Option<Rebuilt>)> {
    let git = |what: &str| {
        let what = what.to_string();
        move |e: gix::Error| {
            // A filter process that cannot start (git-lfs not installed).
            let root = display_root(repo);
            crate::git::blob::process_start_failed(repo, &e, &root)
                .unwrap_or_else(|| Error::git(format!("snapshot of {root}: {what}"), e))
        }
    };
    let head_tree = repo
        .head_tree_id_or_empty()
        .map_err(git("cannot read HEAD"))?
        .detach();
    let stat_opts = repo
        .stat_options()
        .map_err(git("cannot read the stat options"))?;
    let (mut index, unusable) = match side {
        Side::Source => (user_index(repo)?, None),
        Side::Workspace => match workspace_index(repo) {
            Ok(index) => (index, None),
            Err(cause) => (head_index(repo, head_tree)?, Some(cause)),
        },
    };
    // design §3.15: a sparse index is expanded where the snapshot needs
    // every path (the HEAD -> index diff, a workspace's files on disk).
    if index.is_sparse() && (side == Side::Workspace || !index_is_head(&index, head_tree)) {
        crate::git::sparse::unsparse(repo, &mut index)?;
    }
    let cache_state = cache.and_then(|p| {
        gix::index::File::at(p, repo.object_hash(), false, Default::default())
            .ok()
            .map(gix::index::State::from)
    });
    // Without a cache, gix applies the racy rule against the user's index timestamp itself.
    let merged = match &cache_state {
        Some(c) => merge_cache(&mut index, c, stat_opts),
        None => Merged::default(),
    };
    let used = merged.used;
    drop(cache_state);
    if side == Side::Workspace {
        unflag_for_workspace(repo, &mut index);
    }
    // HEAD -> index costs reading every tree of HEAD. git's cache tree can
    // tell that the user's index holds HEAD's tree; then the only entries
    // that differ from HEAD are those the stat cache gave other content.
    let from_cache: Option<BTreeMap<BString, Edit>> =
        index_is_head(&index, head_tree).then(|| merged.changed.into_iter().collect());

    // HEAD -> index (staged changes) in one thread, index -> worktree and
    // the walk for untracked files in others.
    let sync = repo.clone().into_sync();
    let never = AtomicBool::new(false);
    let mut collect = Collect::default();
    let (staged, outcome) = std::thread::scope(|s| {
        let index = &index;
        let staged = s.spawn(move || -> Result<BTreeMap<BString, Edit>> {
            if let Some(staged) = from_cache {
                return Ok(staged);
            }
            let repo = sync.to_thread_local();
            // A workspace's index holds no cache tree (prepare writes none):
            // one whose entries are exactly its HEAD's stages nothing, and
            // the parallel snapshots of one apply share that HEAD
            // (`head_entries`; where it cannot be read, the diff below says
            // why). Here, beside the walk, as the diff was.
            if side == Side::Workspace
                && head_entries(&repo, head_tree).is_some_and(|h| holds_exactly(index, &h))
            {
                return Ok(BTreeMap::new());
            }
            let mut staged = BTreeMap::new();
            // The whole tree, wherever the command runs: gix's default
            // pathspec (`None`) matches only below the caller's folder.
            let mut everything = repo
                .pathspec(
                    false,
                    None::<&str>,
                    false,
                    &gix::index::State::new(repo.object_hash()),
                    gix::worktree::stack::state::attributes::Source::IdMapping,
                )
                .map_err(|e| Error::git(format!("snapshot of {}", display_root(&repo)), e))?;
            repo.tree_index_status(
                &head_tree,
                index,
                Some(&mut everything),
                gix::status::tree_index::TrackRenames::Disabled,
                |change, _, _| {
                    record_staged(&mut staged, change);
                    Ok(std::ops::ControlFlow::Continue(()))
                },
            )
            .map_err(|e| Error::git(format!("snapshot of {}", display_root(&repo)), e))?;
            Ok(staged)
        });
        let outcome = (|| -> Result<_> {
            let dirwalk = repo
                .dirwalk_options()
                .map_err(git("cannot set up the directory walk"))?
                .emit_untracked(gix::dir::walk::EmissionMode::Matching)
                // Workspaces: also what the walk prunes, for the `.git` of a
                // repository made inside a tracked folder (design §3.2).
                .emit_pruned(side == Side::Workspace);
            repo.index_worktree_status(
                index,
                Vec::<BString>::new(),
                &mut collect,
                gix::status::plumbing::index_as_worktree::traits::FastEq,
                NoSubmodules,
                &mut gix::progress::Discard,
                &never,
                gix::status::index_worktree::Options {
                    sorting: None,
                    dirwalk_options: Some(dirwalk),
                    rewrites: None,
                    thread_limit: None,
                },
            )
            .map_err(git("status failed"))
        })();
        let staged = staged.join().unwrap_or_else(|_| {
            Err(Error::state(
                Code::Internal,
                "a snapshot thread panicked",
                "report this bug",
            ))
        });
        (staged, outcome)
    });
    let staged = staged?;
    let outcome = outcome?;
    if collect.rewrite {
        return Err(Error::git(
            format!("snapshot of {}", display_root(repo)),
            "unexpected rename record from status",
        ));
    }

    // Files status itself had to read (stat data differed, or racily clean).
    let mut hashed = outcome.tracked_file_modification.worktree_files_read;
    // Hash what changed on disk through the clean filters.
    let mut edits: BTreeMap<BString, Edit> = staged;
    let mut recorded: Vec<(usize, EntryKind, ObjectId, Stat)> = Vec::new();
    // `core.symlinks = false` (design §3.15): a plain file where the index
    // has a symlink stands in for it, holding its target; it stays a link.
    let symlinks = repo
        .filesystem_options()
        .map_err(git("cannot read core.symlinks"))?
        .symlink;
    if !collect.on_disk.is_empty() {
        // The filters see the same index as the status did (gix's
        // `filter_pipeline` would read the user's index once more).
        let mut pipeline = crate::git::blob::add_pipeline(repo, &index)?;
        for (path, what) in std::mem::take(&mut collect.on_disk) {
            let edit = match what {
                OnDisk::Gone => None,
                OnDisk::Tracked(_) | OnDisk::Other => {
                    hashed += 1;
                    let (mut edit, stat) = hash_file(repo, &mut pipeline, path.as_bstr(), &index)?;
                    if let (OnDisk::Tracked(idx), Some((kind, _))) = (&what, &mut edit) {
                        let stand_in = !symlinks
                            && matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable)
                            && index.entries().get(*idx).map(|e| e.mode) == Some(Mode::SYMLINK);
                        if stand_in {
                            *kind = EntryKind::Link;
                        }
                    }
                    if let (OnDisk::Tracked(idx), Some((kind, id)), Some(stat)) =
                        (&what, edit, stat)
                    {
                        recorded.push((*idx, kind, id, stat));
                    }
                    edit
                }
            };
            edits.insert(path, edit);
        }
    }

    // design §3.18: a path git refuses never enters a tree. A workspace's
    // are left out and named (its task is refused alone); a source's stop
    // the command with a diagnostic naming them.
    let mut invalid: Vec<crate::git::validate::Invalid> = Vec::new();
    edits.retain(|path, edit| {
        let Some((kind, _)) = edit else {
            return true;
        };
        match crate::git::validate::path(path.as_bstr(), *kind) {
            Some(why) => {
                invalid.push(crate::git::validate::Invalid {
                    path: path.clone(),
                    why,
                });
                false
            }
            None => true,
        }
    });
    if side == Side::Source && !invalid.is_empty() {
        let root = repo.workdir().unwrap_or(repo.git_dir());
        return Err(crate::git::validate::in_working_tree(root, &invalid));
    }
    let changes = edits.len();
    let tree = if edits.is_empty() {
        head_tree
    } else {
        let mut editor = repo
            .edit_tree(head_tree)
            .map_err(git("cannot edit the tree"))?;
        // Removals first: a file that became a folder is removed, then its children added.
        for (path, edit) in &edits {
            if edit.is_none() {
                editor
                    .remove(path.as_bstr())
                    .map_err(git("cannot edit the tree"))?;
            }
        }
        for (path, edit) in &edits {
            if let Some((kind, id)) = edit {
                editor
                    .upsert(path.as_bstr(), *kind, *id)
                    .map_err(git("cannot edit the tree"))?;
            }
        }
        editor
            .write()
            .map_err(git("cannot write the tree"))?
            .detach()
    };

    let rebuilt = unusable.map(|cause| {
        // Stat data for the files whose content is the entry's; the others
        // keep none (git reads them).
        let mut index = index.clone();
        let entries = index.entries_mut();
        for (idx, stat) in &collect.refreshed {
            if let Some(e) = entries.get_mut(*idx) {
                e.stat = *stat;
            }
        }
        Rebuilt { cause, index }
    });
    let refresh = match probe {
        Some(probe) => refreshed_cache(
            index,
            probe,
            &collect.refreshed,
            &recorded,
            cache.is_some(),
            used,
        ),
        None => Refresh::Keep,
    };
    Ok((
        Snapshot {
            tree,
            head_tree,
            changes,
            nested_repos: collect.nested_repos,
            hashed,
            invalid,
        },
        refresh,
        rebuilt,
    ))
}

/// Decide whether the refreshed index is worth keeping as the stat cache,
/// and make it: refreshed entries are trusted only when they predate the probe.
fn refreshed_cache(
    mut index: gix::index::State,
    probe: &Probe,
    refreshed: &[(usize, Stat)],
    recorded: &[(usize, EntryKind, ObjectId, Stat)],
    had_cache: bool,
    used: usize,
) -> Refresh {
    let count = refreshed.len() + recorded.len();
    // Reading and merging a cache costs about as much as hashing a few
    // hundred small files: keep one only where it saves more than that.
    let worth = count >= (index.entries().len() / 64).max(100);
    if !worth {
        return if had_cache && used == 0 {
            Refresh::Useless
        } else {
            Refresh::Keep
        };
    }
    let entries = index.entries_mut();
    for (idx, stat) in refreshed {
        if let Some(e) = entries.get_mut(*idx) {
            e.stat = *stat;
            if !probe.predates(stat) {
                smudge(e);
            }
        }
    }
    for (idx, kind, id, stat) in recorded {
        let Some(e) = entries.get_mut(*idx) else {
            continue;
        };
        let mode = match kind {
            EntryKind::Blob => Mode::FILE,
            EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
            EntryKind::Link => Mode::SYMLINK,
            _ => continue,
        };
        e.id = *id;
        e.mode = mode;
        e.stat = *stat;
        if !probe.predates(stat) {
            smudge(e);
        }
    }
    // The cache is read for its entries only: no extensions carried over.
    let _ = index.remove_tree();
    let _ = index.remove_resolve_undo();
    Refresh::Write(Box::new(index))
}

fn record_staged(
    staged: &mut BTreeMap<BString, Edit>,
    change: gix::diff::index::ChangeRef<'_, '_>,
) {
    use gix::diff::index::ChangeRef;
    match change {
        ChangeRef::Addition {
            location,
            entry_mode,
            id,
            ..
        }
        | ChangeRef::Modification {
            location,
            entry_mode,
            id,
            ..
        } => {
            staged.insert(
                location.into_owned(),
                tree_kind(entry_mode).map(|k| (k, id.into_owned())),
            );
        }
        ChangeRef::Deletion { location, .. } => {
            staged.insert(location.into_owned(), None);
        }
        ChangeRef::Rewrite {
            source_location,
            location,
            entry_mode,
            id,
            copy,
            ..
        } => {
            if !copy {
                staged.insert(source_location.into_owned(), None);
            }
            staged.insert(
                location.into_owned(),
                tree_kind(entry_mode).map(|k| (k, id.into_owned())),
            );
        }
    }
}

/// Hash one worktree file; `None` if it vanished or cannot be tracked. Also
/// returns its stat data, taken before the file was read.
fn hash_file(
    repo: &gix::Repository,
    pipeline: &mut gix::filter::Pipeline<'_>,
    path: &BStr,
    index: &gix::index::State,
) -> Result<(Edit, Option<Stat>)> {
    // Big files are streamed (never whole in memory) into the object store
    // itself, even when `repo` keeps new objects in memory.
    match crate::git::blob::worktree_file_to_object(repo, pipeline, path, index) {
        Ok(Some((id, kind, md))) => Ok(match kind {
            EntryKind::Commit | EntryKind::Tree => (None, None),
            k => (Some((k, id)), Some(crate::git::stat::of_metadata(&md))),
        }),
        Ok(None) => Ok((None, None)),
        Err(e) => Err(crate::git::blob::store_failure(
            repo,
            Path::new(&display_root(repo)),
            path,
            &e,
        )),
    }
}

fn tree_kind(mode: gix::index::entry::Mode) -> Option<EntryKind> {
    mode.to_tree_entry_mode().map(|m| m.kind())
}

fn display_root(repo: &gix::Repository) -> String {
    repo.workdir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| repo.git_dir().display().to_string())
}
