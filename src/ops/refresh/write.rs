//! Writing a refreshed task's merge into its workspace (design §3.12): the
//! merged files through the write-back's journal (diff3-style markers
//! labelled `task`, `base` and `source` for conflicts), the workspace's
//! index (the new base, conflicted files as stages 1-3) and its detached
//! HEAD moved to the new base.
//!
//! Owns: those three writes, in that order.
//! Never: writes a workspace path whose content is not what its snapshot
//! read (the write-back's check), or anything outside the workspace.

use std::collections::HashMap;

use gix::bstr::BStr;
use gix::merge::tree::TreatAsUnresolved;

use super::*;
use crate::writeback;

/// Step 3: write into the workspace `real` what differs between its tree
/// and the merge's (`trees`: workspace, merge), moving the task's base ref
/// to `new_base` (back again when the write-back rolled back). Returns the
/// workspace as a source to write to, and its sparse checkout (design
/// §3.15: what it leaves out stays out).
pub(super) fn write_merge(
    source: &Source,
    b: &Batch,
    task: &batch::Task,
    real: &Path,
    (w_tree, m_tree): (ObjectId, ObjectId),
    new_base: ObjectId,
) -> Result<(Source, Option<crate::git::sparse::Checkout>)> {
    let ws_repo = crate::git::repo::open_worktree(real)?;
    let ws = Source {
        repo: ws_repo,
        common_dir: source.common_dir.clone(),
        root: real.to_path_buf(),
        prefix: PathBuf::new(),
        config: source.config.clone(),
    };
    let sparse = crate::git::sparse::Checkout::of_workspace(&ws.repo)?;
    let mut writes = writeback::writes_between(&source.repo, w_tree, m_tree)?;
    if let Some(s) = &sparse {
        writes.retain(|w| s.includes(w.path.as_bstr()));
    }
    let blocked = writeback::check(&ws, &writes)?;
    if !blocked.is_empty() {
        let list: Vec<String> = blocked
            .iter()
            .map(|k| crate::sys::paths::quote(k.path.as_bstr()).to_string())
            .collect();
        return Err(Error::state(
            Code::RefreshBlocked,
            format!(
                "cannot refresh task {}: in its workspace {}, {} changed while it was read, or an untracked or ignored file stands where the source's version goes; nothing was changed there",
                task.name,
                real.display(),
                list.join(", ")
            ),
            format!(
                "move those files out of the way in the workspace (its work is saved as {}), then run `git delegate refresh {} --batch {}` again",
                refs::proposal(&b.id, &task.name),
                task.name,
                b.short()
            ),
        ));
    }
    let base_ref = refs::task_base(&b.id, &task.name);
    let old_base = refs::get(&source.repo, &base_ref)?;
    refs::set(&source.repo, &base_ref, new_base, false)?;
    if let Err(e) = writeback::write(&ws, &batch::batch_dir(&source.state_dir(), &b.id), &writes) {
        // Rolled back (a failure, or a signal: design §7 "Signals"): the
        // workspace is on its old base, and so is its ref.
        if !e.is_rollback_failed() {
            let _ = match old_base {
                Some(id) => refs::set(&source.repo, &base_ref, id, false),
                None => refs::delete(&source.repo, &base_ref).map(|_| ()),
            };
        }
        return Err(e.into());
    }
    Ok((ws, sparse))
}

/// One unmerged index entry: path, stage, mode, blob.
pub(super) type Staged = (
    BString,
    gix::index::entry::Stage,
    gix::index::entry::Mode,
    ObjectId,
);

/// `merge3(base, ours = task, theirs = source)` with conflicts kept in the
/// files (diff3 style, labels `task`, `base`, `source`), written to the
/// object store: the merged tree and the unmerged index entries git would
/// leave (sorted by path).
pub(super) fn merge_keep(
    repo: &gix::Repository,
    base: ObjectId,
    ours: ObjectId,
    theirs: ObjectId,
) -> Result<(ObjectId, Vec<Staged>)> {
    use gix::merge::blob::builtin_driver::text::{Conflict, ConflictStyle, Labels};
    use gix::merge::plumbing::tree::apply_index_entries::RemovalMode;
    if theirs == base || ours == theirs {
        return Ok((ours, Vec::new()));
    }
    if ours == base {
        return Ok((theirs, Vec::new()));
    }
    let err = |e: gix::Error| Error::git("cannot merge the workspace with the source", e);
    let mut inner: gix::merge::plumbing::tree::Options =
        repo.tree_merge_options().map_err(err)?.into();
    inner.blob_merge.text.conflict = Conflict::Keep {
        style: ConflictStyle::Diff3,
        marker_size: std::num::NonZeroU8::new(Conflict::DEFAULT_MARKER_SIZE)
            .unwrap_or(std::num::NonZeroU8::MIN),
    };
    let labels = Labels {
        ancestor: Some("base".into()),
        current: Some("task".into()),
        other: Some("source".into()),
    };
    let mut outcome = repo
        .merge_trees(base, ours, theirs, labels, inner.into())
        .map_err(err)?;
    let tree = outcome.tree.write().map_err(err)?.detach();
    let how = TreatAsUnresolved::git();
    if !outcome.has_unresolved_conflicts(how) {
        return Ok((tree, Vec::new()));
    }
    let mut index: gix::index::State = repo.index_from_tree(&tree).map_err(err)?.into();
    gix::merge::tree::apply_index_entries(&outcome.conflicts, how, &mut index, RemovalMode::Prune);
    let mut staged: Vec<Staged> = index
        .entries()
        .iter()
        .filter(|e| e.stage_raw() != 0)
        .map(|e| (e.path(&index).to_owned(), e.stage(), e.mode, e.id))
        .collect();
    staged.sort_by(|a, b| (&a.0, a.1 as u32).cmp(&(&b.0, b.1 as u32)));
    Ok((tree, staged))
}

/// The workspace's index at `tree`, with `staged` in place of the entries
/// at their paths; stat data kept from the old index where an entry is the
/// same blob with the same mode (so `git status` need not read those files).
pub(super) fn write_index(
    ws: &gix::Repository,
    tree: ObjectId,
    staged: &[Staged],
    sparse: Option<&crate::git::sparse::Checkout>,
) -> Result<()> {
    let err = |e: gix::Error| Error::git("cannot write the workspace's index", e);
    let mut file = ws.index_from_tree(&tree).map_err(err)?;
    // An old index that cannot be read gives no stat data (design §3.2
    // step 1: the index is a cache).
    let read = ws.index_or_empty();
    let none = gix::index::State::new(ws.object_hash());
    let old: &gix::index::State = match &read {
        Ok(index) => index,
        Err(_) => &none,
    };
    let known: HashMap<&BStr, &gix::index::Entry> = old
        .entries()
        .iter()
        .filter(|e| e.stage_raw() == 0)
        .map(|e| (e.path(old), e))
        .collect();
    let conflicted: std::collections::HashSet<&BStr> =
        staged.iter().map(|s| s.0.as_bstr()).collect();
    {
        let state: &mut gix::index::State = &mut file;
        let (entries, paths) = state.entries_mut_and_pathbacking();
        for e in entries.iter_mut() {
            let path = e.path_in(paths);
            if let Some(o) = known.get(path) {
                if o.id == e.id && o.mode == e.mode {
                    e.stat = o.stat;
                }
            }
        }
        state.remove_entries(|_, path, _| conflicted.contains(path));
        for (path, stage, mode, id) in staged {
            state.dangerously_push_entry(
                gix::index::entry::Stat::default(),
                *id,
                gix::index::entry::Flags::from_stage(*stage),
                *mode,
                path.as_bstr(),
            );
        }
        state.sort_entries();
        if let Some(s) = sparse {
            s.mark(state);
        }
    }
    file.write(gix::index::write::Options::default())
        .map_err(|e| Error::git("cannot write the workspace's index", e))
}

/// Point the workspace's HEAD (detached) at `commit`.
pub(super) fn move_head(ws: &gix::Repository, commit: ObjectId) -> Result<()> {
    use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
    let name: gix::refs::FullName = "HEAD"
        .try_into()
        .map_err(|e| Error::git("invalid ref name HEAD", e))?;
    ws.edit_reference(RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: "git-delegate refresh: the task's new base".into(),
            },
            expected: PreviousValue::Any,
            new: gix::refs::Target::Object(commit),
        },
        name,
        deref: false,
    })
    .map(|_| ())
    .map_err(|e| Error::git("cannot move the workspace's HEAD", e))
}
