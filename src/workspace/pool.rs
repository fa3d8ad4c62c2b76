//! The workspace pool (design §3.20). A workspace made with
//! `workspace.pool` on lives at a slot of the pool,
//! `<root>/<repo>-<fp>/pool/<id>` (registered as `delegate-pool-<id>`), for
//! its whole life: every task it serves runs there and nothing moves it,
//! because the caches the pool keeps warm (a virtual environment's
//! scripts, rustc's incremental cache, absolute symlinks) are keyed by
//! absolute path. It serves a task while its registration is locked with
//! that task's lock reason; a finished task's workspace goes idle
//! (`park`: its record saved, then its lock becomes `git-delegate pool`)
//! instead of being removed, and a later prepare proves it (`prove`),
//! checks it fits the new baseline (`fit`), claims it for a task
//! (`claim`: record removed, then the task's lock) and moves it to the
//! baseline by writing only the paths that differ (`move_to`).
//!
//! An idle workspace's record (`record::pool`) keeps its folder's identity
//! and git-delegate's own stat record of it (`record::stat`): the entries
//! of the tree apply read in it when it went idle, with the stat data
//! git-delegate took itself. Before one is reused it is proven to be that
//! folder (reached through handles of our own folders, device, inode, real
//! path, `.git` and a registration leading back to this repository, as a
//! task's workspace is: `identity`) holding exactly the record's files
//! (`snapshot::prove`: by fixed stat rules, else by content; nothing
//! deleted, no untracked file that is not ignored, no nested repository);
//! its worktree index, which its worker could write, is never read. One
//! that fails, or whose paths that differ from the baseline touch a
//! `.gitattributes`, `.gitignore` or `.gitmodules` (what is ignored, or
//! how an unchanged file is written, would change), is removed (only while
//! it is ours), never reused.
//!
//! Owns: parking, proving, claiming, moving, giving back and removing
//! idle workspaces, trimming the pool.
//! Never: moves a workspace folder; reuses a workspace whose identity or
//! content cannot be proven; removes a folder that is not the one it
//! parked; follows a symlink inside a workspace; decides which tasks'
//! workspaces may be pooled (`ops` does: only those of tasks that ended
//! applied, no_changes or discarded, holding no work).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Mode;

use super::identity::{identify, identify_at, Identity, Reach};
use super::*;
use crate::record::pool::{self as record, Idle};

/// Where the slot `id` lives below the repository folder `base`.
pub fn place(base: &Path, id: &str) -> PathBuf {
    base.join(record::FOLDER).join(id)
}

/// A new slot of the pool for a task (`lock_reason`: the task's), with
/// git-delegate's own stat record of it at `stat`.
pub fn new_plan(base: &Path, lock_reason: String, stat: PathBuf) -> Plan {
    let id = record::new_id();
    Plan {
        root: place(base, &id),
        worktree_id: record::worktree_id(&id),
        lock_reason,
        stat: Some(stat),
    }
}

/// Is the record's folder a slot of the pool (a record is in the shared
/// git dir, where a worker can edit it)?
fn in_place(rec: &Idle) -> bool {
    record::slot_of(&rec.root, &rec.worktree_id()).as_deref() == Some(rec.id.as_str())
        && shared_root::is_beneath_shape(&rec.root)
}

/// A path whose change makes unchanged paths differ too.
fn rules_file(path: &BStr) -> bool {
    let name = path.rsplit_str("/").next().unwrap_or(path);
    matches!(name, b".gitattributes" | b".gitignore" | b".gitmodules")
}

/// The files a registration may hold besides what `register` writes for
/// its workspace to go idle or be reused: what ordinary git use leaves
/// (reflogs, `ORIG_HEAD`, ...). Anything else (a merge, rebase, bisect or
/// cherry-pick under way, per-worktree refs or config, a sparse checkout)
/// is state of the worker's: such a workspace is never pooled.
const REGISTRATION_FILES: &[&str] = &[
    "commondir",
    "gitdir",
    "locked",
    "HEAD",
    "index",
    "logs",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "COMMIT_EDITMSG",
    "AUTO_MERGE",
    // A contained worker's own object folder (design §3.22): apply took
    // its objects into the store when it recorded the task.
    "objects",
];

/// Does the registration `id` hold only [`REGISTRATION_FILES`]?
fn plain_registration(common_dir: &Path, id: &str) -> bool {
    let Ok(rd) = std::fs::read_dir(registration(common_dir, id)) else {
        return false;
    };
    rd.into_iter().all(|e| {
        e.is_ok_and(|e| {
            REGISTRATION_FILES
                .iter()
                .any(|f| e.file_name() == OsStr::new(f))
        })
    })
}

/// Is the idle workspace `rec` the source of a batch (someone ran `git
/// delegate prepare` inside it while it was idle)? Then it is neither
/// reused nor removed: that batch writes back into it (as a task's
/// workspace hosting a batch is kept, design §3.2 step 5). Unknown counts
/// as yes.
fn hosting(state_dir: &Path, rec: &Idle) -> bool {
    hosts(state_dir, &[&rec.root, &rec.folder.path])
}

/// Is any of `roots` (one folder's names) a batch's source or above it?
fn hosts(state_dir: &Path, roots: &[&Path]) -> bool {
    let Ok(batches) = crate::record::batch::list_ok(state_dir) else {
        return true;
    };
    batches.iter().any(|b| {
        let canon = std::fs::canonicalize(&b.source).ok();
        roots
            .iter()
            .any(|r| b.source.starts_with(r) || canon.as_deref().is_some_and(|c| c.starts_with(r)))
    })
}

/// The lock its registration holds now: is it idle, a task's (a park or a
/// claim under way, or killed half-way: the batch's own commands finish
/// it), or something else?
fn lock_of(common_dir: &Path, rec: &Idle) -> Option<String> {
    Registration::new(common_dir, &rec.worktree_id()).read_lock_reason()
}

/// The idle workspaces, oldest first.
pub fn list(state_dir: &Path) -> Vec<Idle> {
    record::list(state_dir)
}

/// Make the workspace of `task` idle: proven ours (a slot of the pool,
/// serving this task), with a registration holding nothing of its
/// worker's; its record saved from `read` (what apply's snapshot read in
/// it, as git-delegate vouches for it), then its lock made the pool's. It
/// stays where it is. `false`: nothing was changed (the caller removes it
/// as usual; a workspace outside the pool's slots never goes idle).
pub fn park(
    common_dir: &Path,
    state_dir: &Path,
    task: &crate::record::batch::Task,
    read: &crate::snapshot::Vouched,
) -> Result<bool, WorkspaceError> {
    let Some(id) = record::slot_of(&task.root, &task.worktree_id) else {
        return Ok(false);
    };
    let Identity::Ours { fd: Some(fd), .. } = identify(common_dir, task) else {
        return Ok(false);
    };
    if !plain_registration(common_dir, &task.worktree_id) {
        return Ok(false);
    }
    let Some(folder) = task.folder.clone().or_else(|| folder_of(&task.root)) else {
        return Ok(false);
    };
    drop(fd);
    let reg = Registration::new(common_dir, &task.worktree_id);
    let commit = std::fs::read_to_string(reg.path().join("HEAD"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    // Its stat record first: a record never stands without it.
    crate::record::stat::save(&record::stat_of(state_dir, &id), &read.index)?;
    record::save(
        state_dir,
        &Idle {
            id,
            root: task.root.clone(),
            folder,
            tree: read.tree.to_string(),
            commit,
            idle_since: crate::sys::time::rfc3339(crate::sys::time::now()),
        },
    )?;
    crate::sys::interrupt::pause("pool-park-recorded");
    // Not fsync'd: a lock lost in a power loss leaves the workspace the
    // task's, which the batch's next apply parks again.
    crate::sys::fs::write_replacing(&reg.locked_file(), record::LOCK_REASON.as_bytes(), false)?;
    Ok(true)
}

/// Give a workspace this prepare claimed for `task` back to the pool (its
/// setup failed elsewhere, design §3.20): idle again with the baseline
/// (`commit`, tree `tree`) git-delegate wrote into it and the stat record
/// written with it (`stat`). The next proof decides what it holds.
pub fn give_back(
    common_dir: &Path,
    state_dir: &Path,
    task: &crate::record::batch::Task,
    stat: &Path,
    (commit, tree): (ObjectId, ObjectId),
) -> Result<bool, WorkspaceError> {
    let Some(id) = record::slot_of(&task.root, &task.worktree_id) else {
        return Ok(false);
    };
    let (Some(folder), Some(index)) = (
        task.folder.clone().or_else(|| folder_of(&task.root)),
        crate::record::stat::read(stat, commit.kind()),
    ) else {
        return Ok(false);
    };
    crate::record::stat::save(&record::stat_of(state_dir, &id), &index)?;
    record::save(
        state_dir,
        &Idle {
            id,
            root: task.root.clone(),
            folder,
            tree: tree.to_string(),
            commit: commit.to_string(),
            idle_since: crate::sys::time::rfc3339(crate::sys::time::now()),
        },
    )?;
    let reg = Registration::new(common_dir, &task.worktree_id);
    crate::sys::fs::write_atomic(&reg.locked_file(), record::LOCK_REASON.as_bytes())?;
    Ok(true)
}

/// An idle workspace proven to hold exactly its record's files.
pub struct Proven {
    pub rec: Idle,
    /// The folder, held open.
    fd: OwnedFd,
    /// Its stat record, with fresh stat data where files had to be read.
    record: gix::index::State,
}

/// Prove up to `want` idle workspaces, newest first, for a prepare of
/// `source` (on a thread of its own, beside the source's snapshot: it
/// changes nothing but removing the idle workspaces that fail, only while
/// they are ours). One hosting a batch or holding `source` (a prepare run
/// inside it), or whose lock is a task's (a park or claim not finished:
/// the batch's own commands finish it), is left alone.
pub fn prove(
    common_dir: &Path,
    state_dir: &Path,
    (base, source): (&Path, &Path),
    want: usize,
    hash: gix::hash::Kind,
) -> Vec<Proven> {
    let mut idle = record::list(state_dir);
    let mut out = Vec::new();
    // Rounds of as many as are still wanted, proven side by side (each is
    // a stat walk of its own); those that fail are replaced by older ones.
    while out.len() < want && !idle.is_empty() {
        if crate::sys::interrupt::interrupted() {
            break;
        }
        let mut round = Vec::new();
        while round.len() < want - out.len() {
            let Some(rec) = idle.pop() else { break };
            let task_lock =
                Registration::new(common_dir, &rec.worktree_id()).is_locked_by_a_batch();
            let inside = source.starts_with(&rec.root) || source.starts_with(&rec.folder.path);
            if !(inside || task_lock || hosting(state_dir, &rec)) {
                round.push(rec);
            }
        }
        let threads = crate::sys::parallel::threads(round.len());
        let proofs = crate::sys::parallel::map(
            round.iter(),
            threads,
            || (),
            |rec| {
                let idle = lock_of(common_dir, rec).as_deref() == Some(record::LOCK_REASON);
                let stat = crate::record::stat::read(&record::stat_of(state_dir, &rec.id), hash);
                Ok(match stat {
                    Some(stat) if idle && rec.root == place(base, &rec.id) => {
                        prove_one(common_dir, rec, stat)
                    }
                    _ => None,
                })
            },
        );
        for (rec, proven) in round.into_iter().zip(proofs) {
            match proven {
                Ok(Some((fd, record))) => out.push(Proven { rec, fd, record }),
                _ => {
                    // Whatever it holds, it is not reused: removed while ours.
                    let _ = remove_idle(common_dir, &rec);
                    let _ = record::remove(state_dir, &rec.id);
                }
            }
        }
    }
    out
}

/// Prove the idle workspace `rec` against its stat record `stat`: the
/// folder held open and the record refreshed, or `None`.
fn prove_one(
    common_dir: &Path,
    rec: &Idle,
    stat: gix::index::State,
) -> Option<(OwnedFd, gix::index::State)> {
    if !in_place(rec) {
        return None;
    }
    let id = rec.worktree_id();
    let Identity::Ours { fd: Some(fd), .. } = identify_at(
        common_dir,
        &rec.root,
        &id,
        Some(&rec.folder),
        Reach::Beneath,
    ) else {
        return None;
    };
    if !plain_registration(common_dir, &id) {
        return None;
    }
    let repo = crate::git::repo::open_worktree_of(&rec.root, common_dir).ok()?;
    let record = crate::snapshot::prove(&repo.with_object_memory(), &stat).ok()??;
    Some((fd, record))
}

/// One path whose entry differs between an idle workspace's record and
/// the baseline: its mode and blob on either side (`None`: absent).
pub struct Change {
    pub path: BString,
    pub old: Option<(Mode, ObjectId)>,
    pub new: Option<(Mode, ObjectId)>,
}

/// A proven idle workspace that fits a baseline: the paths to change.
pub struct Fit {
    pub proven: Proven,
    changes: Vec<Change>,
}

impl Fit {
    /// Its slot's folder and registration.
    pub fn root(&self) -> &Path {
        &self.proven.rec.root
    }

    pub fn worktree_id(&self) -> String {
        self.proven.rec.worktree_id()
    }

    /// How many paths its move to the baseline writes or removes.
    pub fn changes(&self) -> usize {
        self.changes.len()
    }
}

/// The entries that differ between two indexes of plain stage-0 entries,
/// both sorted by path: what moving a workspace from `old` to `new`
/// changes.
fn changes_between(old: &gix::index::State, new: &gix::index::State) -> Vec<Change> {
    let (a, ap) = (old.entries(), old.path_backing());
    let (b, bp) = (new.entries(), new.path_backing());
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    let side = |e: &gix::index::Entry| Some((e.mode, e.id));
    while i < a.len() || j < b.len() {
        let pa = a.get(i).map(|e| e.path_in(ap));
        let pb = b.get(j).map(|e| e.path_in(bp));
        match (pa, pb) {
            (Some(x), Some(y)) if x == y => {
                if (a[i].mode, a[i].id) != (b[j].mode, b[j].id) {
                    out.push(Change {
                        path: x.to_owned(),
                        old: side(&a[i]),
                        new: side(&b[j]),
                    });
                }
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                out.push(Change {
                    path: x.to_owned(),
                    old: side(&a[i]),
                    new: None,
                });
                i += 1;
            }
            (Some(x), None) => {
                out.push(Change {
                    path: x.to_owned(),
                    old: side(&a[i]),
                    new: None,
                });
                i += 1;
            }
            (_, Some(y)) => {
                out.push(Change {
                    path: y.to_owned(),
                    old: None,
                    new: side(&b[j]),
                });
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// Does the proven idle workspace fit the baseline whose index is
/// `baseline`: its paths that differ from it touch no `.gitattributes`,
/// `.gitignore` nor `.gitmodules`, and the baseline holds only what a
/// checkout writes (no submodule)? One that does not is removed (only
/// while ours) and its record with it.
pub fn fit(
    common_dir: &Path,
    state_dir: &Path,
    proven: Proven,
    baseline: &gix::index::State,
) -> Option<Fit> {
    let changes = changes_between(&proven.record, baseline);
    let plain = changes.iter().all(|c| {
        !rules_file(c.path.as_ref())
            && c.new.is_none_or(|(m, _)| {
                matches!(m, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
            })
    });
    if plain {
        return Some(Fit { proven, changes });
    }
    let rec = proven.rec;
    drop(proven.fd);
    let _ = remove_idle(common_dir, &rec);
    let _ = record::remove(state_dir, &rec.id);
    None
}

/// Claim the idle workspace of `fit` for the task of `p` (`p.root` is its
/// slot): its record removed (a kill now leaves an idle registration no
/// record names: gc's), then its lock made the task's and its HEAD
/// `commit`.
pub fn claim(
    common_dir: &Path,
    state_dir: &Path,
    fit: &Fit,
    p: &Plan,
    commit: ObjectId,
) -> Result<(), WorkspaceError> {
    record::remove(state_dir, &fit.proven.rec.id)?;
    crate::sys::interrupt::pause("pool-claimed");
    let reg = Registration::new(common_dir, &p.worktree_id);
    crate::sys::fs::write_atomic(&reg.locked_file(), p.lock_reason.as_bytes())?;
    crate::sys::fs::write_atomic(&reg.path().join("HEAD"), format!("{commit}\n").as_bytes())?;
    Ok(())
}

/// Move the claimed workspace of `fit` (at `p.root`) to the baseline
/// whose index is `baseline`: the old side of every path that differs
/// removed through the folder's handle, deepest first, never following a
/// symlink, the folders that leaves empty removed, the new side checked
/// out (exclusive creation: an ignored file in the way fails the move);
/// its index the baseline with the stat data the proof vouched for (none
/// where it could not: git reads those files once) and fresh ones for
/// the written paths, settled as a checkout's; written with its stat
/// record.
pub fn move_to(
    common_dir: &Path,
    fit: Fit,
    p: &Plan,
    baseline: &gix::index::State,
) -> Result<(), WorkspaceError> {
    let Fit { proven, changes } = fit;
    let dir = proven.fd.as_fd();
    for c in changes.iter().rev() {
        if c.old.is_some() {
            unlink_beneath(dir, c.path.as_ref(), &p.root)?;
        }
    }
    for c in changes.iter().rev().filter(|c| c.old.is_some()) {
        let mut path: &[u8] = c.path.as_ref();
        while let Some(cut) = path.rfind_byte(b'/') {
            path = &path[..cut];
            if rustix::fs::unlinkat(dir, OsStr::from_bytes(path), rustix::fs::AtFlags::REMOVEDIR)
                .is_err()
            {
                break;
            }
        }
    }
    let repo = crate::git::repo::open_worktree_of(&p.root, common_dir)?;
    let mut index = baseline.clone();
    let written: HashSet<&BStr> = changes
        .iter()
        .filter(|c| c.new.is_some())
        .map(|c| c.path.as_ref())
        .collect();
    let keep: Vec<bool> = index
        .entries()
        .iter()
        .map(|e| !written.contains(e.path(&index)))
        .collect();
    let skip = gix::index::entry::Flags::SKIP_WORKTREE;
    for (e, k) in index.entries_mut().iter_mut().zip(&keep) {
        if *k {
            e.flags.insert(skip);
        }
    }
    let out = checkout(&repo, &mut index, &p.root, 1);
    for e in index.entries_mut() {
        e.flags.remove(skip);
    }
    out?;
    // The unchanged entries take the proof's stat data (same path, mode
    // and blob: both indexes are sorted by path).
    let (old, old_paths) = (proven.record.entries(), proven.record.path_backing());
    let mut oi = 0;
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for (e, k) in entries.iter_mut().zip(&keep) {
        if !*k {
            continue;
        }
        let path = e.path_in(paths);
        while oi < old.len() && old[oi].path_in(old_paths) < path {
            oi += 1;
        }
        e.stat = old
            .get(oi)
            .filter(|o| o.path_in(old_paths) == path && (o.id, o.mode) == (e.id, e.mode))
            .map(|o| o.stat)
            .unwrap_or_default();
    }
    drop(proven);
    crate::sys::interrupt::pause("pool-moved");
    settle(
        &[p.root.as_path()],
        std::slice::from_mut(&mut index),
        cores(),
    )?;
    super::derived::write_index(common_dir, p, index)
}

/// Remove `rel` below `dir` (a file or link, never followed), reaching its
/// folder one name at a time without following a symlink. Gone already
/// is fine.
fn unlink_beneath(dir: BorrowedFd<'_>, rel: &BStr, root: &Path) -> Result<(), WorkspaceError> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    let io = |e: Errno| WorkspaceError::RemoveIn {
        file: crate::sys::paths::quote(rel),
        root: root.to_path_buf(),
        source: e.into(),
    };
    let mut parts: Vec<&[u8]> = rel.split_str("/").collect();
    let Some(leaf) = parts.pop() else {
        return Ok(());
    };
    let mut held: Option<OwnedFd> = None;
    for part in parts {
        let at = held.as_ref().map_or(dir, |f| f.as_fd());
        match rustix::fs::openat(
            at,
            OsStr::from_bytes(part),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(f) => held = Some(f),
            // Not there, or no folder (a symlink included): nothing of it below.
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(()),
            Err(e) => return Err(io(e)),
        }
    }
    let at = held.as_ref().map_or(dir, |f| f.as_fd());
    match rustix::fs::unlinkat(at, OsStr::from_bytes(leaf), AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Remove an idle workspace (only while it is the folder parked, its
/// registration in any case).
pub fn remove_idle(common_dir: &Path, rec: &Idle) -> Result<Removal, WorkspaceError> {
    let removal = if in_place(rec) {
        super::remove::remove_at(
            common_dir,
            &rec.root,
            &rec.worktree_id(),
            Some(&rec.folder),
            Reach::Beneath,
        )?
    } else {
        Removal::Foreign
    };
    Ok(removal)
}

/// What trimming the pool removed (or, dry, would).
#[derive(Debug, Default, Clone, Copy)]
pub struct Trimmed {
    pub removed: usize,
    pub bytes: u64,
}

/// Remove the idle workspaces that went idle before `cutoff` (seconds
/// since the epoch; `None`: none for their age), then the oldest beyond
/// `keep`; with `dry_run`, only count them. A record whose registration
/// a task's lock holds (a park or claim under way or killed half-way) is
/// the batch's to finish, and left.
pub fn trim(
    common_dir: &Path,
    state_dir: &Path,
    keep: usize,
    cutoff: Option<i64>,
    dry_run: bool,
) -> Result<Trimmed, WorkspaceError> {
    let idle = record::list(state_dir);
    let n = idle.len();
    let mut t = Trimmed::default();
    for (i, rec) in idle.iter().enumerate() {
        let old = cutoff.is_some_and(|c| {
            crate::sys::time::parse_rfc3339(&rec.idle_since).is_none_or(|at| at < c)
        });
        let a_task_s = Registration::new(common_dir, &rec.worktree_id()).is_locked_by_a_batch();
        if !(old || n - i > keep) || hosting(state_dir, rec) || a_task_s {
            continue;
        }
        if in_place(rec) {
            t.bytes += shared_root::tree_size(&rec.root);
        }
        t.removed += 1;
        if !dry_run {
            remove_idle(common_dir, rec)?;
            record::remove(state_dir, &rec.id)?;
        }
    }
    if !dry_run {
        record::remove_unreadable(state_dir);
    }
    // Idle workspaces no record names (a park or claim killed half-way).
    let known: HashSet<String> = record::list(state_dir)
        .iter()
        .map(Idle::worktree_id)
        .collect();
    for (id, root, whole) in orphans(common_dir, state_dir) {
        if known.contains(&id) || hosts(state_dir, &[&root]) {
            continue;
        }
        if whole {
            t.bytes += shared_root::tree_size(&root);
        }
        t.removed += 1;
        if !dry_run {
            super::remove(common_dir, &root, &id)?;
        }
    }
    Ok(t)
}

/// The registrations `delegate-pool-<id>` no batch and no record may
/// still need, with the folder they name: locked `git-delegate pool`
/// naming their slot (`true`); locked by a batch that is gone, naming
/// their slot (`true`); or locked by a batch naming another folder
/// (`false`: a park of an earlier version killed between renaming a
/// task's registration and rewriting it; that folder, whose `.git` names
/// the old registration, is never removed through it). One locked by a
/// live batch is that batch's task's.
fn orphans(common_dir: &Path, state_dir: &Path) -> Vec<(String, PathBuf, bool)> {
    let Ok(rd) = std::fs::read_dir(crate::git::registration::dir(common_dir)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(short) = name.strip_prefix("delegate-pool-") else {
            continue;
        };
        let reg = Registration::at(e.path());
        let pooled = reg.read_lock_reason().as_deref() == Some(record::LOCK_REASON);
        if !record::is_id(short) || !(pooled || reg.is_locked_by_a_batch()) {
            continue;
        }
        let Some(root) = super::identity::registered_location(common_dir, &name) else {
            continue;
        };
        let slot = record::slot_of(&root, &name).is_some() && shared_root::is_beneath_shape(&root);
        let gone = reg
            .batch_of()
            .is_some_and(|b| !crate::record::batch::batch_dir(state_dir, &b).exists());
        match (pooled, slot) {
            (true, true) => out.push((name, root, true)),
            (false, true) if gone => out.push((name, root, true)),
            (false, false) => out.push((name, root, false)),
            _ => {}
        }
    }
    out
}
