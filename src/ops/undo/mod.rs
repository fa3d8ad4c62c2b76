//! Undo entries (design §3.11): what every apply that wrote paths leaves
//! behind so its result can be taken back, taking it back (`undo`), and
//! landing undone work again (`apply --from-undo`).
//!
//! An entry is two things. The commit `refs/pi-delegate/undo/<id>/entry`
//! (`F`: its tree holds every path the apply wrote, as the apply left it;
//! an absent path was deleted) whose one parent (`S`, a root commit) holds
//! the same paths as they were before, so `git diff entry^ entry` shows
//! exactly what the apply wrote, and every object stays reachable; plus
//! the proposals the apply applied (`.../tasks/<task>`). And the file
//! `<state>/undo/<id>/entry.json` (batch, source, time, number of paths,
//! the undone flag; written temp-then-rename), which is what makes the
//! entry exist: the refs are written first.
//!
//! `undo` restores each written path by `merge3(base = F, ours = now,
//! theirs = S)` on trees that hold only those paths, and writes the result
//! through the write-back journal (`writeback::write`) kept in
//! `<state>/undo/<id>/`, which recovery scans like a batch's (design §7).
//! Any conflict, or any path the write-back check refuses, writes nothing.
//!
//! Owns: the undo and re-apply transactions; the entries' refs and files,
//! and pruning them (`prune`, for gc), are `entry`'s.
//! Never: prints; touches the index, HEAD or branches; writes a path other
//! than those the entry's apply wrote, or one git refuses (design §3.18); writes anything when a path
//! conflicts or with `dry_run`.

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
pub use crate::merge::integrate::PathConflict;
use crate::merge::integrate::{self, Merge};
use crate::merge::landing::Side;
use crate::ops::observe::{Notice, Observer};
use crate::writeback::PathWrite;
use crate::{
    git::commit, git::diff, git::refs, record::batch, snapshot, snapshot::touched, writeback,
};

mod entry;
mod reapply;

pub use entry::{
    count, discard_staged, entry_ref, list, owns_ref, prune, recorded, select, stage, task_ref,
    Entry, DEFAULT_KEEP, ENTRY_FILE,
};
use entry::{entry_dir, record_as, save, save_at, tree_of_paths, STAGED};

pub use reapply::{reapply, Landed, Reapply};

fn nothing_to_undo(message: String) -> Error {
    Error::usage(
        Code::NothingToUndo,
        message,
        "list the applies with `git delegate undo --list`; `git delegate apply --from-undo APPLY` lands undone work again",
    )
}

/// What `undo` did (or, with `dry_run`, would do).
pub struct Report {
    pub entry: Entry,
    pub dry_run: bool,
    /// Whether the entry is undone now (false with `dry_run` or conflicts).
    pub undone: bool,
    /// Paths written (or that would be).
    pub paths: Vec<BString>,
    /// Paths that block the undo (nothing was written).
    pub conflicts: Vec<PathConflict>,
    /// The proposals the entry keeps: (task, ref).
    pub kept: Vec<(String, String)>,
    /// A signal arrived during the write-back, past its commit point: it
    /// was finished (design §7 "Signals"); the command exits 1.
    pub interrupted: bool,
}

/// The entry's kept proposals: (task, ref name, commit).
fn kept_tasks(repo: &gix::Repository, e: &Entry) -> Result<Vec<(String, String, ObjectId)>> {
    let mut out = Vec::new();
    for t in &e.tasks {
        let name = task_ref(&e.apply_id, t);
        if let Some(c) = refs::get(repo, &name)? {
            out.push((t.clone(), name, c));
        }
    }
    Ok(out)
}

/// Take the lock: recovering interrupted write-backs, or (`dry_run`)
/// refusing while one is left over (design §7).
fn lock(
    here: &Source,
    dry_run: bool,
    observer: &dyn Observer,
) -> Result<crate::ops::lock::RepoLock> {
    if dry_run {
        let lock = crate::ops::lock::acquire(&here.state_dir(), here.config.lock_timeout_secs)?;
        let pending = writeback::pending(here)?;
        if !pending.is_empty() {
            return Err(Error::state(
                Code::WritebackPending,
                format!(
                    "an interrupted write-back ({}) is left over: the working tree may hold part of its result, so a dry run cannot say what undo would do (it changed nothing)",
                    pending.join(", ")
                ),
                "run `git delegate gc`: it rolls it back (or finishes it, past its commit point) first; `git delegate status` shows it",
            ));
        }
        Ok(lock)
    } else {
        let locked = crate::ops::lock::lock_and_recover(here)?;
        observer.notice(Notice::Recovered(locked.recovery));
        Ok(locked.lock)
    }
}

/// The commit `repo`'s HEAD is at, as an undo entry records it: the null
/// id for an unborn branch.
fn head_of(repo: &gix::Repository) -> Result<String> {
    let head = repo.head().map_err(|e| Error::git("cannot read HEAD", e))?;
    Ok(match head.id() {
        Some(id) => id.to_string(),
        None => ObjectId::null(repo.object_hash()).to_string(),
    })
}

/// Refuse to undo `e` when HEAD moved since its apply (design §3.11): the
/// applied changes may be committed now, and undoing them would take
/// committed lines back out as uncommitted changes. An entry that did not
/// record HEAD is not checked.
fn refuse_if_head_moved(repo: &gix::Repository, e: &Entry) -> Result<()> {
    let Some(then) = &e.head else {
        return Ok(());
    };
    let now = head_of(repo)?;
    if &now == then {
        return Ok(());
    }
    let name = |id: &str| {
        if id.bytes().all(|b| b == b'0') {
            "unborn".to_string()
        } else {
            format!("at {}", &id[..id.len().min(7)])
        }
    };
    let mut details = serde_json::Map::new();
    let doc = |id: &str| match id.bytes().all(|b| b == b'0') {
        true => serde_json::Value::Null,
        false => serde_json::Value::String(id.to_string()),
    };
    details.insert("apply_head".into(), doc(then));
    details.insert("head".into(), doc(&now));
    let look = if then.bytes().all(|b| b == b'0') || now.bytes().all(|b| b == b'0') {
        "look at `git log`".to_string()
    } else {
        format!("look at `git log {}..{}`", &then[..7], &now[..7])
    };
    Err(Error::state(
        Code::HeadMoved,
        format!(
            "HEAD moved since apply {}: it was {} when the apply wrote and is {} now, so the applied changes may be committed now; undoing would take them back out as uncommitted changes, and nothing was changed",
            e.short(),
            name(then),
            name(&now)
        ),
        format!(
            "{look} to see what was committed since; to undo anyway, run `git delegate undo {} --force`",
            e.short()
        ),
    )
    .with_details(details))
}

/// The working tree an entry's apply wrote into.
fn entry_source(here: Source, e: &Entry) -> Result<Source> {
    let mut source = if here.root == e.source {
        here
    } else {
        Source::open_recorded(&here, &e.source, batch::short(&e.batch))?
    };
    // Only the drivers its batch's prepare recorded run (design §3.18).
    crate::git::drivers::enforce(e.drivers.as_ref(), &mut source.repo)?;
    Ok(source)
}

/// The `S` and `F` trees of an entry (only the paths its apply wrote).
fn entry_trees(
    repo: &gix::Repository,
    state_dir: &Path,
    e: &Entry,
) -> Result<(ObjectId, ObjectId)> {
    let name = entry_ref(&e.apply_id);
    let missing = || {
        Error::state(
            Code::MissingObject,
            format!("the undo entry's ref {name} was deleted or is unreadable"),
            format!(
                "the apply {} cannot be undone without it; remove the entry with `rm -r {}`",
                e.short(),
                entry_dir(state_dir, &e.apply_id).display()
            ),
        )
    };
    let f = refs::get(repo, &name)?.ok_or_else(missing)?;
    let commit = repo.find_commit(f).map_err(|_| missing())?;
    let f_tree = commit.tree_id().map_err(|_| missing())?.detach();
    let s = commit.parent_ids().next().ok_or_else(missing)?.detach();
    let s_tree = commit::tree_of(repo, &s.to_string())?;
    Ok((s_tree, f_tree))
}

/// `entries` as they stand in `full` (a whole tree), as a tree of their own.
fn restrict(repo: &gix::Repository, full: ObjectId, paths: &BTreeSet<BString>) -> Result<ObjectId> {
    let tree = repo
        .find_tree(full)
        .map_err(|e| Error::git("cannot read the snapshot", e))?;
    let mut found: Vec<(&BString, (EntryKind, ObjectId))> = Vec::new();
    for p in paths {
        if let Some(e) = tree
            .lookup_entry_by_path(crate::sys::paths::to_os(p.as_bstr()))
            .map_err(|e| Error::git("cannot read the snapshot", e))?
        {
            let kind = e.mode().kind();
            if !matches!(kind, EntryKind::Tree | EntryKind::Commit) {
                found.push((p, (kind, e.object_id())));
            }
        }
    }
    tree_of_paths(repo, found.into_iter())
}

/// The working tree now, at `paths` only, as a tree.
fn now_tree(
    mem: &gix::Repository,
    f_tree: ObjectId,
    paths: &BTreeSet<BString>,
) -> Result<ObjectId> {
    match touched::snapshot(mem, f_tree, paths)? {
        Some(t) => Ok(t),
        None => {
            let full = snapshot::snapshot(mem)?.tree;
            restrict(mem, full, paths)
        }
    }
}

/// Copy the objects of `writes` (both sides) that only `mem` holds into
/// the object store of `disk`.
fn persist(disk: &gix::Repository, mem: &gix::Repository, writes: &[PathWrite]) -> Result<()> {
    crate::merge::landing::persist(disk, mem, writes, Side::Old)?;
    Ok(crate::merge::landing::persist(
        disk,
        mem,
        writes,
        Side::New,
    )?)
}

/// The words for a path the write-back check refuses.
fn blocked_reason(r: writeback::BlockReason) -> String {
    use writeback::BlockReason::*;
    match r {
        UntrackedInTheWay => "untracked file in the way".into(),
        FolderInTheWay => "folder in the way".into(),
        ChangedSinceSnapshot => "changed just now".into(),
        SymlinkInTheWay => "symlink in the way".into(),
        NotWritable(errno) => format!(
            "folder not writable ({})",
            std::io::Error::from_raw_os_error(errno)
        ),
    }
}

/// An entry whose trees name paths git refuses to check out (design
/// §3.18) was not made by an apply (no apply writes such a path: its ref
/// was moved): it is never undone, and nothing of it is read in the
/// working tree.
fn refuse_invalid(
    repo: &gix::Repository,
    state_dir: &Path,
    e: &Entry,
    s_tree: ObjectId,
    f_tree: ObjectId,
) -> Result<()> {
    let mut found = crate::git::validate::tree(repo, Some(s_tree), f_tree)?;
    for f in crate::git::validate::tree(repo, Some(f_tree), s_tree)? {
        if !found.iter().any(|k| k.path == f.path) {
            found.push(f);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::state(
        Code::InvalidPath,
        format!(
            "the undo entry of apply {} names paths git refuses to check out, which no apply writes (its ref {} was moved): {}; nothing was changed",
            e.short(),
            entry_ref(&e.apply_id),
            crate::git::validate::list(&found)
        ),
        format!(
            "it cannot be undone; remove the entry with `rm -r {}`",
            crate::sys::paths::shell_quote(&entry_dir(state_dir, &e.apply_id).to_string_lossy())
        ),
    ))
}

/// The entry `undo` names: `apply` (id or prefix), refused if undone
/// already; `None`: the latest one not undone.
fn to_undo(entries: Vec<Entry>, apply: Option<&str>) -> Result<Entry> {
    match apply {
        Some(arg) => {
            let e = select(&entries, arg)?;
            if e.undone {
                return Err(nothing_to_undo(format!(
                    "the apply {} was undone already{}",
                    e.short(),
                    e.undone_at
                        .as_deref()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default()
                )));
            }
            Ok(e)
        }
        None => entries
            .into_iter()
            .find(|e| !e.undone)
            .ok_or_else(|| nothing_to_undo("no apply of this repository is left to undo".into())),
    }
}

/// The step `undo` and `apply --from-undo` open with: the lock taken
/// (recovery first, see [`lock`]), the entry `pick` chooses from the list,
/// and the source it was applied in.
fn open(
    here: Source,
    dry_run: bool,
    observer: &dyn Observer,
    pick: impl FnOnce(Vec<Entry>) -> Result<Entry>,
) -> Result<(crate::ops::lock::RepoLock, Source, Entry)> {
    let lock = lock(&here, dry_run, observer)?;
    let entry = pick(list(&here.state_dir()))?;
    let source = entry_source(here, &entry)?;
    Ok((lock, source, entry))
}

/// Undo an apply (design §3.11): `apply` names it (id or prefix), `None`
/// the latest one not undone; refused when HEAD moved since that apply,
/// unless `force`.
pub fn undo(
    here: Source,
    apply: Option<&str>,
    dry_run: bool,
    force: bool,
    observer: &dyn Observer,
) -> Result<Report> {
    let (_lock, source, entry) = open(here, dry_run, observer, |entries| to_undo(entries, apply))?;
    let state_dir = source.state_dir();
    let repo = &source.repo;
    if !force {
        refuse_if_head_moved(repo, &entry)?;
    }
    let kept: Vec<(String, String)> = kept_tasks(repo, &entry)?
        .into_iter()
        .map(|(t, n, _)| (t, n))
        .collect();
    let (s_tree, f_tree) = entry_trees(repo, &state_dir, &entry)?;
    refuse_invalid(repo, &state_dir, &entry, s_tree, f_tree)?;
    // Bounded as every walk over trees a worker could have made (design
    // §3.18 "Limits"; the check above counted both ways already).
    let paths: BTreeSet<BString> = diff::bounded(repo, s_tree, f_tree)?
        .into_iter()
        .map(|c| c.path)
        .collect();
    let mut mem = repo.clone().with_object_memory();
    mem.object_cache_size_if_unset(8 << 20);
    let merging = observer.step("Merging");
    let now = now_tree(&mem, f_tree, &paths)?;
    let mut report = Report {
        entry,
        dry_run,
        undone: false,
        paths: Vec::new(),
        conflicts: Vec::new(),
        kept,
        interrupted: false,
    };
    let result = match integrate::merge3(&mem, f_tree, now, s_tree)? {
        Merge::Clean(t) => t,
        Merge::Conflicts(c) => {
            report.conflicts = c;
            return Ok(report);
        }
    };
    let writes = crate::writeback::writes_between(&mem, now, result)?;
    drop(merging);
    if !dry_run {
        persist(repo, &mem, &writes)?;
    }
    let blocked = writeback::check(&source, &writes)?;
    if !blocked.is_empty() {
        report.conflicts = blocked
            .into_iter()
            .map(|b| PathConflict {
                path: b.path,
                reason: blocked_reason(b.reason),
            })
            .collect();
        return Ok(report);
    }
    report.paths = writes.iter().map(|w| w.path.clone()).collect();
    if dry_run {
        return Ok(report);
    }
    crate::sys::interrupt::pause("undo-before-write");
    report.entry.undone = true;
    report.entry.undone_at = Some(crate::sys::time::rfc3339(crate::sys::time::now()));
    if writes.is_empty() {
        save(&state_dir, &report.entry)?;
    } else {
        // The entry marked undone takes effect with the write-back, at its
        // commit point (design §7 "What recovery finishes").
        let dir = entry_dir(&state_dir, &report.entry.apply_id);
        let staged = dir.join(STAGED);
        save_at(&staged, &report.entry)?;
        let then = writeback::StagedState {
            staged,
            to: dir.join(ENTRY_FILE),
        };
        let _writing = observer.step(&format!("Writing {} paths", writes.len()));
        writeback::write_then(&source, &dir, &writes, &[then])?;
        report.interrupted = crate::sys::interrupt::interrupted();
    }
    report.undone = true;
    Ok(report)
}
