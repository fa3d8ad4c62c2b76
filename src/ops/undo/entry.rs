//! The undo entries themselves (design §3.11): their refs and files, how
//! an apply stages one at its write-back's commit point, naming one, and
//! pruning them (`prune`, for gc).
//!
//! Owns: an entry's refs (`entry_ref`, `task_ref`) and file (`Entry`,
//! written temp-then-rename; what makes the entry exist).
//! Never: writes into the working tree (the undo and re-apply transactions
//! do, through the journal).

use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use serde::{Deserialize, Serialize};

use super::head_of;
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::writeback::PathWrite;
use crate::{git::commit, git::refs, record::batch, writeback};

/// The entry file in `<state>/undo/<id>/`.
pub const ENTRY_FILE: &str = "entry.json";

/// The default of `undo.keep`.
pub const DEFAULT_KEEP: usize = 20;

/// The commit of an entry (`F`, parent `S`).
pub fn entry_ref(id: &str) -> String {
    format!("{}undo/{id}/entry", refs::PREFIX)
}

/// An applied proposal an entry keeps.
pub fn task_ref(id: &str, task: &str) -> String {
    format!("{}undo/{id}/tasks/{task}", refs::PREFIX)
}

pub(super) fn entry_dir(state_dir: &Path, id: &str) -> PathBuf {
    batch::undo_dir(state_dir).join(id)
}

/// One undo entry, as its file records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub apply_id: String,
    pub batch: String,
    /// The working tree the apply wrote into.
    pub source: PathBuf,
    /// RFC 3339 UTC.
    pub applied_at: String,
    /// Nanoseconds since the epoch: orders entries made in one second.
    pub applied_ns: u64,
    /// How many paths the apply wrote.
    pub paths: usize,
    /// The proposals the apply applied, in task order.
    pub tasks: Vec<String>,
    pub undone: bool,
    #[serde(default)]
    pub undone_at: Option<String>,
    /// The apply that re-applied this entry (`apply --from-undo`).
    #[serde(default)]
    pub reapplied_as: Option<String>,
    /// The entry this apply re-applied.
    #[serde(default)]
    pub from_undo: Option<String>,
    /// The commit HEAD was at when the apply wrote (the null id: an unborn
    /// branch); absent in entries recorded before it was kept, which undo
    /// takes back without the HEAD check (design §3.11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The drivers its batch's prepare recorded (design §3.18): the only
    /// ones undo and `apply --from-undo` run; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drivers: Option<crate::git::drivers::Drivers>,
}

impl Entry {
    pub fn short(&self) -> &str {
        batch::short(&self.apply_id)
    }
}

pub(super) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub(super) fn save(state_dir: &Path, e: &Entry) -> Result<()> {
    let dir = entry_dir(state_dir, &e.apply_id);
    std::fs::create_dir_all(&dir)
        .map_err(|err| Error::io(format!("cannot create {}", dir.display()), err))?;
    save_at(&dir.join(ENTRY_FILE), e)
}

/// An entry's file written at `file` (its place, or a staged name).
pub(super) fn save_at(file: &Path, e: &Entry) -> Result<()> {
    let text = serde_json::to_vec_pretty(e).map_err(|err| {
        Error::state(
            Code::Internal,
            format!("cannot encode the undo entry: {err}"),
            "report this bug",
        )
    })?;
    Ok(crate::sys::fs::write_atomic(file, &text)?)
}

/// Every readable entry of the repository, newest first.
pub fn list(state_dir: &Path) -> Vec<Entry> {
    let Ok(rd) = std::fs::read_dir(batch::undo_dir(state_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Entry> = rd
        .flatten()
        .filter_map(|d| std::fs::read(d.path().join(ENTRY_FILE)).ok())
        .filter_map(|t| serde_json::from_slice::<Entry>(&t).ok())
        .collect();
    out.sort_by_key(|e| std::cmp::Reverse(e.applied_ns));
    out
}

/// How many undo entries the repository holds (for `status`).
pub fn count(state_dir: &Path) -> usize {
    list(state_dir).len()
}

/// A tree holding exactly `entries` (paths relative to the root).
pub(super) fn tree_of_paths<'a>(
    repo: &gix::Repository,
    entries: impl Iterator<Item = (&'a BString, (EntryKind, ObjectId))>,
) -> Result<ObjectId> {
    let git = |e: gix::Error| Error::git("cannot write an undo tree", e);
    let empty = repo
        .write_object(gix::objs::Tree::empty())
        .map_err(|e| Error::git("cannot write an undo tree", e))?
        .detach();
    let mut editor = repo.edit_tree(empty).map_err(git)?;
    for (path, (kind, id)) in entries {
        editor.upsert(path.as_bstr(), kind, id).map_err(git)?;
    }
    Ok(editor.write().map_err(git)?.detach())
}

/// The name an entry file is staged under, in the folder of the write-back
/// journal whose commit puts it in place.
pub(super) const STAGED: &str = "undo-entry.json.staged";

/// Stage the undo entry of an apply about to write `writes` (each path's
/// `S` and `F` entries, objects already in the object store) into `source`
/// for `batch_id`, keeping the proposals `tasks` (task name, proposal ref)
/// it applies: its refs are written now, its file under a staged name in
/// `dir` (the folder of the write-back's journal), which the write-back
/// puts in place at its commit point (by this process, or by the recovery
/// that finishes it: design §7 "What recovery finishes"). Returns the new
/// apply id and that file. Call with the repository lock held; on a
/// write-back that fails, [`discard_staged`].
pub fn stage(
    source: &Source,
    batch_id: &str,
    writes: &[PathWrite],
    tasks: &[(String, String)],
    dir: &Path,
) -> Result<(String, writeback::StagedState)> {
    let id = uuid::Uuid::new_v4().to_string();
    let mut kept: Vec<(String, ObjectId)> = Vec::new();
    for (task, name) in tasks {
        if let Some(c) = refs::get(&source.repo, name)? {
            kept.push((task.clone(), c));
        }
    }
    let staged = dir.join(STAGED);
    record_as(source, &id, batch_id, writes, &kept, None, Some(&staged))?;
    let to = entry_dir(&source.state_dir(), &id).join(ENTRY_FILE);
    Ok((id, writeback::StagedState { staged, to }))
}

/// The refs of a staged entry whose write-back did not happen (best
/// effort: gc removes refs no entry owns).
pub fn discard_staged(source: &Source, id: &str) {
    let prefix = format!("{}undo/{id}/", refs::PREFIX);
    if let Ok(all) = refs::list(&source.repo) {
        for (name, _) in all.into_iter().filter(|(n, _)| n.starts_with(&prefix)) {
            let _ = refs::delete(&source.repo, &name);
        }
    }
}

/// Whether the entry `id` exists (its file is in place).
pub fn recorded(state_dir: &Path, id: &str) -> bool {
    entry_dir(state_dir, id).join(ENTRY_FILE).is_file()
}

pub(super) fn record_as(
    source: &Source,
    id: &str,
    batch_id: &str,
    writes: &[PathWrite],
    tasks: &[(String, ObjectId)],
    from_undo: Option<&str>,
    staged: Option<&Path>,
) -> Result<()> {
    let repo = &source.repo;
    let s_tree = tree_of_paths(repo, writes.iter().filter_map(|w| Some((&w.path, w.old?))))?;
    let f_tree = tree_of_paths(repo, writes.iter().filter_map(|w| Some((&w.path, w.new?))))?;
    let s = commit::write(
        repo,
        s_tree,
        None,
        format!("git-delegate undo entry {id}: the paths before the apply\n"),
    )?;
    let f = commit::write(
        repo,
        f_tree,
        Some(s),
        format!(
            "git-delegate apply {id} of batch {batch_id}: the paths it wrote\n\n`git diff {}^ {}` shows what it wrote.\n",
            entry_ref(id),
            entry_ref(id)
        ),
    )?;
    refs::set(repo, &entry_ref(id), f, true)?;
    for (task, c) in tasks {
        refs::set(repo, &task_ref(id, task), *c, false)?;
    }
    let ns = now_ns();
    let entry = Entry {
        apply_id: id.to_string(),
        batch: batch_id.to_string(),
        source: source.root.clone(),
        applied_at: crate::sys::time::rfc3339((ns / 1_000_000_000) as i64),
        applied_ns: ns,
        paths: writes.len(),
        tasks: tasks.iter().map(|(t, _)| t.clone()).collect(),
        undone: false,
        undone_at: None,
        reapplied_as: None,
        from_undo: from_undo.map(str::to_string),
        // Unreadable, HEAD is not checked by undo (design §3.11).
        head: head_of(repo).ok(),
        drivers: crate::git::drivers::recorded(),
    };
    match staged {
        Some(file) => save_at(file, &entry),
        None => save(&source.state_dir(), &entry),
    }
}

/// Name an entry: its full id, or a unique prefix of at least 4 characters.
pub fn select(entries: &[Entry], arg: &str) -> Result<Entry> {
    let want = arg.to_ascii_lowercase();
    if let Some(e) = entries.iter().find(|e| e.apply_id == want) {
        return Ok(e.clone());
    }
    if want.len() < 4 {
        return Err(Error::usage(
            Code::UnknownApply,
            format!("{arg:?} is too short to name an apply: give at least 4 characters of its id"),
            "list the applies with `git delegate undo --list`",
        ));
    }
    let found: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.apply_id.starts_with(&want))
        .collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Error::usage(
            Code::UnknownApply,
            format!("no apply of this repository has an id starting with {arg:?}"),
            "list the applies with `git delegate undo --list`",
        )),
        many => Err(Error::usage(
            Code::AmbiguousApply,
            format!(
                "{arg:?} names several applies: {}",
                many.iter()
                    .map(|e| e.apply_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "give more characters of the id (`git delegate undo --list` shows them)",
        )),
    }
}

/// Entries gc removes: beyond the newest `undo.keep` and older than
/// `gc.keep-failed` (design §3.11). Removes them unless `dry_run`; returns
/// their ids and how many refs went.
pub fn prune(source: &Source, dry_run: bool) -> Result<(Vec<String>, usize)> {
    let state_dir = source.state_dir();
    let now = crate::sys::time::now();
    let keep_secs = source.config.keep_failed_secs;
    let mut gone = Vec::new();
    let mut refs_removed = 0;
    for e in list(&state_dir).into_iter().skip(source.config.undo_keep) {
        let age = now.saturating_sub((e.applied_ns / 1_000_000_000) as i64);
        let dir = entry_dir(&state_dir, &e.apply_id);
        if age < keep_secs || dir.join(batch::JOURNAL_FILE).exists() {
            continue;
        }
        let prefix = format!("{}undo/{}/", refs::PREFIX, e.apply_id);
        for (name, _) in refs::list(&source.repo)? {
            if name.starts_with(&prefix) {
                if !dry_run {
                    refs::delete(&source.repo, &name)?;
                }
                refs_removed += 1;
            }
        }
        if !dry_run {
            crate::sys::fs::remove_all(&dir)?;
        }
        gone.push(e.apply_id);
    }
    Ok((gone, refs_removed))
}

/// Whether `name` is a ref of an undo entry that still exists (gc leaves
/// those to `prune`).
pub fn owns_ref(state_dir: &Path, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(&format!("{}undo/", refs::PREFIX)) else {
        return false;
    };
    let id = rest.split('/').next().unwrap_or("");
    !id.is_empty() && entry_dir(state_dir, id).join(ENTRY_FILE).is_file()
}
