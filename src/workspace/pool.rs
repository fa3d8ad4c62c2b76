//! The workspace pool (design §3.20): a finished task's workspace kept idle
//! instead of removed (`park`), and taken by a later prepare (`take`),
//! moved to the new baseline by writing only the paths that differ.
//!
//! An idle workspace is a registered, locked (`git-delegate pool`),
//! detached linked worktree at `<root>/<repo>-<fp>/pool/<id>`, registered
//! as `delegate-pool-<id>`, its ignored files in place; its record
//! (`record::pool`) keeps its folder's identity and the tree a snapshot of
//! it gave when it went idle. Before one is reused, it is proven to be
//! that folder (reached through handles of our own folders, device, inode,
//! real path and `.git`, as a task's workspace is: `identity`), and a
//! snapshot of it (its index as the stat cache, so only files whose stat
//! data changed are read) must give that same tree with no nested
//! repository: a workspace swapped, or written into while idle, is removed
//! (only while it is ours), never reused. Then its registration and folder
//! are renamed to the task's, the paths that differ between its tree and
//! the baseline are removed through the folder's handle (never following a
//! symlink) and the baseline's entries there checked out (exclusive
//! creation: an ignored file in the way makes the reuse fail, and the task
//! gets a fresh workspace), and its index is the baseline with the stat
//! data it had for the unchanged paths and fresh ones for the others,
//! settled as a checkout's. Where the paths that differ touch a
//! `.gitattributes`, `.gitignore` or `.gitmodules` (what is ignored, or
//! how files are written, would change for unchanged paths), the idle
//! workspace is removed instead.
//!
//! Owns: parking, proving, moving and removing idle workspaces, trimming
//! the pool.
//! Never: reuses a workspace whose identity or content cannot be proven;
//! removes a folder that is not the one it parked; follows a symlink
//! inside a workspace; decides which tasks' workspaces may be pooled
//! (`ops` does: only those of tasks that ended applied, no_changes or
//! discarded, holding no work).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;

use gix::bstr::{BStr, ByteSlice};

use super::identity::{identify, identify_at, Identity, Reach};
use super::*;
use crate::record::pool::{self as record, Idle};

/// Where the idle workspace `id` lives below the repository folder `base`.
fn place(base: &Path, id: &str) -> PathBuf {
    base.join(record::FOLDER).join(id)
}

/// Is the record's folder where parking puts one (a record is in the
/// shared git dir, where a worker can edit it)?
fn in_place(rec: &Idle) -> bool {
    record::is_id(&rec.id)
        && rec.root.file_name() == Some(OsStr::new(&rec.id))
        && rec
            .root
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|f| f == OsStr::new(record::FOLDER))
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

/// The idle workspaces, oldest first.
pub fn list(state_dir: &Path) -> Vec<Idle> {
    record::list(state_dir)
}

/// Make the workspace of `task` (a task of a batch whose workspaces are
/// below `base`) idle: proven ours, snapshotted (no nested repository, no
/// path git refuses), its registration and folder renamed into the pool,
/// its record saved. `known`: the tree the caller's own snapshot of it
/// read just now (apply's, holding neither), so it is not read again: a
/// write since then makes the reuse's proof fail, never pass. `false`:
/// nothing was changed (the caller removes it as usual).
pub fn park(
    common_dir: &Path,
    state_dir: &Path,
    base: &Path,
    task: &crate::record::batch::Task,
    read: &crate::snapshot::Vouched,
) -> Result<bool, WorkspaceError> {
    let Identity::Ours {
        fd: Some(fd),
        parents: Some(parents),
        ..
    } = identify(common_dir, task)
    else {
        return Ok(false);
    };
    let (Some(name), Some(short)) = (
        task.root.file_name(),
        task.root.parent().and_then(Path::file_name),
    ) else {
        return Ok(false);
    };
    if !plain_registration(common_dir, &task.worktree_id) {
        return Ok(false);
    }
    let repo = crate::git::repo::open_worktree_of(&task.root, common_dir)?;
    let tree = read.tree;
    let commit = repo
        .head_id()
        .map(|id| id.detach().to_string())
        .unwrap_or_default();
    drop(repo);
    let pool_dir = shared_root::make_batch_dir(base, record::FOLDER)?;
    let id = record::new_id();
    let plan = Plan {
        root: place(base, &id),
        worktree_id: record::worktree_id(&id),
        lock_reason: record::LOCK_REASON.to_string(),
        stat: None,
    };
    move_registration(common_dir, &task.worktree_id, &plan, None)?;
    crate::sys::interrupt::pause("pool-park-registered");
    let moved =
        rename_beneath(parents.batch.fd(), name, pool_dir.fd(), OsStr::new(&id)).and_then(|()| {
            crate::sys::interrupt::pause("pool-park-moved");
            write_dotgit(fd.as_fd(), common_dir, &plan)
        });
    if let Err(e) = moved {
        // Back where it was, as far as it goes; the caller removes it.
        let back = Plan {
            root: task.root.clone(),
            worktree_id: task.worktree_id.clone(),
            lock_reason: String::new(),
            stat: None,
        };
        let _ = rename_beneath(pool_dir.fd(), OsStr::new(&id), parents.batch.fd(), name);
        let _ = std::fs::rename(
            registration(common_dir, &plan.worktree_id),
            registration(common_dir, &back.worktree_id),
        );
        let _ = write_dotgit(fd.as_fd(), common_dir, &back);
        return Err(e);
    }
    parents.base.dir.remove_child_if_empty(short);
    crate::sys::interrupt::pause("pool-park-unrecorded");
    let Some(folder) = folder_of(&plan.root) else {
        let _ = remove(common_dir, &plan.root, &plan.worktree_id);
        return Ok(true);
    };
    // Its stat record first: a record never stands without it.
    crate::record::stat::save(&crate::record::stat::of_idle(state_dir, &id), &read.index)?;
    record::save(
        state_dir,
        &Idle {
            id,
            root: plan.root.clone(),
            folder,
            tree: tree.to_string(),
            commit,
            idle_since: crate::sys::time::rfc3339(crate::sys::time::now()),
        },
    )?;
    Ok(true)
}

/// Give the workspaces of `plans` (in order, as many as the pool holds)
/// from the pool, each moved to `commit` (tree `tree`): per plan, whether
/// it was. The newest idle workspaces go first; one that cannot be proven
/// or moved is removed (only while it is ours) and the next one tried.
/// Every record taken is gone afterwards.
pub fn take(
    common_dir: &Path,
    state_dir: &Path,
    base: &Path,
    plans: &[Plan],
    commit: ObjectId,
    tree: ObjectId,
) -> Result<Vec<bool>, WorkspaceError> {
    let mut idle = record::list(state_dir);
    let mut out = Vec::with_capacity(plans.len());
    // The baseline's index, read from `tree` by the first reuse, copied by the others.
    let mut baseline = None;
    for p in plans {
        let mut done = false;
        while let Some(rec) = idle.pop() {
            if crate::sys::interrupt::interrupted() {
                return Err(WorkspaceError::Interrupted);
            }
            if hosting(state_dir, &rec) {
                continue;
            }
            // git-delegate's own stat record of it (design §3.20).
            let stat = crate::record::stat::read(
                &crate::record::stat::of_idle(state_dir, &rec.id),
                commit.kind(),
            );
            record::remove(state_dir, &rec.id)?;
            // Only this repository's pool folder is ever taken from.
            if rec.root != place(base, &rec.id) {
                continue;
            }
            match reuse(common_dir, stat, &rec, p, (commit, tree), &mut baseline) {
                Ok(true) => {
                    done = true;
                    break;
                }
                Ok(false) => {}
                Err(e) => {
                    // Whatever was moved goes; the task gets a fresh workspace.
                    let _ = super::remove(common_dir, &p.root, &p.worktree_id);
                    if matches!(e, WorkspaceError::Interrupted) {
                        return Err(e);
                    }
                }
            }
        }
        out.push(done);
        if idle.is_empty() && !done {
            break;
        }
    }
    out.resize(plans.len(), false);
    if let Ok(shared_root::Opened::Ours(base)) = shared_root::open_base(base) {
        base.dir.remove_child_if_empty(OsStr::new(record::FOLDER));
    }
    Ok(out)
}

/// Reuse the idle workspace `rec` for `p`: `false` when it could not be
/// proven (it is removed then, when it is ours). `baseline`: the index of
/// `tree`, once a reuse has read it.
fn reuse(
    common_dir: &Path,
    stat: Option<gix::index::State>,
    rec: &Idle,
    p: &Plan,
    (commit, tree): (ObjectId, ObjectId),
    baseline: &mut Option<gix::index::State>,
) -> Result<bool, WorkspaceError> {
    if !in_place(rec) {
        return Ok(false);
    }
    let id = rec.worktree_id();
    let Identity::Ours {
        fd: Some(fd),
        parents: Some(parents),
        ..
    } = identify_at(
        common_dir,
        &rec.root,
        &id,
        Some(&rec.folder),
        Reach::Beneath,
    )
    else {
        remove_idle(common_dir, rec)?;
        return Ok(false);
    };
    if !plain_registration(common_dir, &id) {
        drop(fd);
        remove_idle(common_dir, rec)?;
        return Ok(false);
    }
    // Proven against git-delegate's own stat record alone, by its fixed
    // stat rules; the worktree's index (its worker's to write) is never read.
    let proven = match stat {
        Some(record) => {
            let repo =
                crate::git::repo::open_worktree_of(&rec.root, common_dir)?.with_object_memory();
            crate::snapshot::prove(&repo, &record)?
        }
        None => None,
    };
    let changes = match (proven, rec.tree.parse::<ObjectId>()) {
        (Some(old), Ok(was)) => {
            let repo = crate::git::repo::open_worktree_of(&rec.root, common_dir)?;
            let changes = crate::git::diff::trees(&repo, was, tree)?;
            (!changes.iter().any(|c| rules_file(c.path.as_ref()))).then_some((changes, old))
        }
        _ => None,
    };
    let Some((changes, old)) = changes else {
        drop(fd);
        remove_idle(common_dir, rec)?;
        return Ok(false);
    };
    // To the task's place: registration, folder, `.git`.
    let (Some(batch), Some(name)) = (p.root.parent(), p.root.file_name()) else {
        return Ok(false);
    };
    let batch = shared_root::make_batch_dir_at(batch)?;
    move_registration(common_dir, &id, p, Some(commit))?;
    rename_beneath(parents.batch.fd(), OsStr::new(&rec.id), batch.fd(), name)?;
    write_dotgit(fd.as_fd(), common_dir, p)?;
    crate::sys::interrupt::pause("pool-moved");
    move_to(common_dir, fd.as_fd(), p, &changes, &old, tree, baseline)?;
    Ok(true)
}

/// Write the baseline `tree` into the workspace `p` (held open as `dir`)
/// where `changes` say it differs, and its index: the baseline (a copy of
/// `baseline`, read from `tree` first when it is `None`), with the stat
/// data of `old` for unchanged entries and fresh ones for the others.
fn move_to(
    common_dir: &Path,
    dir: BorrowedFd<'_>,
    p: &Plan,
    changes: &[crate::git::diff::PathChange],
    old: &gix::index::State,
    tree: ObjectId,
    baseline: &mut Option<gix::index::State>,
) -> Result<(), WorkspaceError> {
    use gix::objs::tree::EntryKind;
    // The old side of every path that differs, deepest first, then the
    // folders that leaves empty.
    for c in changes.iter().rev() {
        if let Some((kind, _)) = c.old {
            unlink_beneath(dir, c.path.as_ref(), kind == EntryKind::Commit, &p.root)?;
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
    let repo = crate::git::repo::open_worktree(&p.root)?;
    let git = |source: gix::Error| WorkspaceError::Checkout {
        root: p.root.clone(),
        source,
    };
    let mut index = match baseline {
        Some(index) => index.clone(),
        None => baseline
            .insert(repo.index_from_tree(&tree).map_err(git)?.into())
            .clone(),
    };
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
    let stats: HashMap<&BStr, &gix::index::Entry> =
        old.entries().iter().map(|e| (e.path(old), e)).collect();
    let commit_mode = gix::index::entry::Mode::COMMIT;
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for (e, k) in entries.iter_mut().zip(&keep) {
        if !*k || e.mode == commit_mode {
            continue;
        }
        let path = e.path_in(paths);
        e.stat = match stats.get(path) {
            Some(o) if o.id == e.id && o.mode == e.mode && o.stat.mtime.secs != 0 => o.stat,
            _ => {
                let st = rustix::fs::statat(
                    dir,
                    OsStr::from_bytes(path),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .map_err(|e| WorkspaceError::at("read", &p.root, (&p.root, false))(e.into()))?;
                super::fill::stat_of(&st)
            }
        };
    }
    drop(stats);
    settle(
        &[p.root.as_path()],
        std::slice::from_mut(&mut index),
        cores(),
    )?;
    super::derived::write_index(common_dir, p, index)
}

/// Remove `rel` below `dir` (a file or link, never followed; a gitlink's
/// empty folder), reaching its folder one name at a time without
/// following a symlink. Gone already is fine.
fn unlink_beneath(
    dir: BorrowedFd<'_>,
    rel: &BStr,
    gitlink: bool,
    root: &Path,
) -> Result<(), WorkspaceError> {
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
    let mut held: Option<std::os::fd::OwnedFd> = None;
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
    let flags = if gitlink {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    match rustix::fs::unlinkat(at, OsStr::from_bytes(leaf), flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Rename the registration `from` to `p`'s, locked with `p`'s reason and
/// pointing at `p`'s folder (HEAD at `head`, when given). Refuses when
/// `p`'s registration exists.
fn move_registration(
    common_dir: &Path,
    from: &str,
    p: &Plan,
    head: Option<ObjectId>,
) -> Result<(), WorkspaceError> {
    let old = registration(common_dir, from);
    let new = registration(common_dir, &p.worktree_id);
    if new.symlink_metadata().is_ok() {
        return Err(WorkspaceError::Registered {
            id: p.worktree_id.clone(),
            path: new,
        });
    }
    std::fs::rename(&old, &new).map_err(WorkspaceError::at("rename", &old, (&old, false)))?;
    crate::sys::interrupt::pause("pool-registration-renamed");
    let files = Registration::at(new.clone());
    let line = [p.root.join(".git").as_os_str().as_bytes(), b"\n"].concat();
    crate::sys::fs::write_atomic(&files.locked_file(), p.lock_reason.as_bytes())?;
    crate::sys::fs::write_atomic(&files.gitdir_file(), &line)?;
    if let Some(h) = head {
        crate::sys::fs::write_atomic(&new.join("HEAD"), format!("{h}\n").as_bytes())?;
    }
    Ok(())
}

/// Rename the folder `name` of `from` to `to` in `into`, never over anything.
fn rename_beneath(
    from: BorrowedFd<'_>,
    name: &OsStr,
    into: BorrowedFd<'_>,
    to: &OsStr,
) -> Result<(), WorkspaceError> {
    rustix::fs::renameat_with(from, name, into, to, rustix::fs::RenameFlags::NOREPLACE)
        .map_err(|e| WorkspaceError::io("move the workspace", Path::new(name))(e.into()))
}

/// Write the `.git` file of `p` into the folder held open as `dir` (a
/// temp file made exclusively, renamed over it: never through a symlink).
fn write_dotgit(dir: BorrowedFd<'_>, common_dir: &Path, p: &Plan) -> Result<(), WorkspaceError> {
    use rustix::fs::{AtFlags, Mode};
    use std::io::Write;
    const TEMP: &str = ".git.delegate-pool";
    let dotgit = p.root.join(".git");
    let io = WorkspaceError::at("write", &dotgit, (&p.root, false));
    let _ = rustix::fs::unlinkat(dir, TEMP, AtFlags::empty());
    let f = crate::sys::fs::create_new_at(dir, TEMP.as_bytes(), Mode::from_raw_mode(0o644))
        .map_err(|e| io(e.into()))?;
    std::fs::File::from(f)
        .write_all(&dotgit_line(common_dir, p))
        .map_err(io)?;
    rustix::fs::renameat(dir, TEMP, dir, ".git").map_err(|e| io(e.into()))
}

/// Remove an idle workspace (only while it is the folder parked, its
/// registration in any case) and its record.
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
/// `keep`; with `dry_run`, only count them.
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
        if !(old || n - i > keep) || hosting(state_dir, rec) {
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
    // Idle workspaces no record names (a park or reuse killed half-way).
    let known: HashSet<String> = record::list(state_dir)
        .iter()
        .map(Idle::worktree_id)
        .collect();
    for (id, root, whole) in orphans(common_dir) {
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

/// The registrations `delegate-pool-<id>` with the folder they name:
/// locked `git-delegate pool`, naming the folder where parking puts one
/// (`true`), or still locked as a task's (`false`: a park killed between
/// renaming the task's registration and rewriting it; the task's folder,
/// whose `.git` names the old registration, is never removed through it).
fn orphans(common_dir: &Path) -> Vec<(String, PathBuf, bool)> {
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
        let rec = Idle {
            id: short.to_string(),
            root: root.clone(),
            folder: crate::record::batch::Folder {
                dev: 0,
                ino: 0,
                path: root.clone(),
                subvolume: None,
            },
            tree: String::new(),
            commit: String::new(),
            idle_since: String::new(),
        };
        if !pooled || in_place(&rec) {
            out.push((name, root, pooled));
        }
    }
    out
}
