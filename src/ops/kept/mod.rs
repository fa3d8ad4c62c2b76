//! Landing a kept proposal (design §3.16 "kept"): `git delegate apply --kept
//! REF` merges a proposal that outlived its task (rescued by gc, of a
//! discarded task, of a batch that is gone) into the working tree the
//! command runs in, as apply lands one task: 3-way from the baseline it was
//! made from (the proposal commit's parent) with the source as it is now,
//! written back through the journal; the caller renders the returned
//! apply `Report`.
//!
//! Owns: naming a kept proposal (`name`: `resolve`, its full ref, or
//! `BATCH/TASK` with the batch's id, a unique id prefix or, while the
//! batch exists, its label); the kept ref and patch once its work is
//! written (removed), and the discarded task's record of an open batch
//! (applied).
//! Never: prints; lands a proposal an open task still owns (that is
//! `apply`'s); removes the kept ref or patch unless the work is written (or
//! there was none); writes anything with `--dry-run`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gix::bstr::BString;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::Candidate;
use crate::merge::landing::Side;
use crate::ops::apply::{Outcome, Report};
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch, Entry, TaskState};
use crate::record::kept::Kept;
use crate::{git::commit, git::diff, git::refs, writeback};

mod name;

pub use name::{resolve, short_name};

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The kept proposal: its ref, or `BATCH/TASK`.
    pub reference: String,
    /// `--strict` (or the config's `apply.strict`).
    pub strict: bool,
    /// Change nothing; say what would happen.
    pub dry_run: bool,
}

/// What landing a kept proposal did (or would do).
pub struct Landed {
    /// As apply reports one task: `report.batch` is the proposal's batch
    /// record while it exists, otherwise a one-task stand-in for it.
    pub report: Report,
    /// The kept proposal (as `status` lists it).
    pub kept: Kept,
    /// The working tree it was merged into.
    pub root: PathBuf,
    /// Whether its ref and patch were removed (its work is in the working tree).
    pub removed: bool,
    /// The paths the proposal deletes: `REF:PATH` names nothing there, so
    /// the hint shows what the task started from (design §3.16 "Hints").
    pub deleted: BTreeSet<BString>,
}

/// Merge the kept proposal `opts.reference` names into the working tree
/// around the caller (`here`). Takes the repository lock, recovering
/// interrupted write-backs (told to `observer`), or with `dry_run`
/// refusing when one is left over.
pub fn run(here: Source, opts: &Options, observer: &dyn Observer) -> Result<Landed> {
    let lock = if opts.dry_run {
        crate::ops::apply::lock_and_report(&here)?
    } else {
        let locked = crate::ops::lock::lock_and_recover(&here)?;
        observer.notice(Notice::Recovered(locked.recovery));
        locked.lock
    };
    let mut source = here;
    let state_dir = source.state_dir();
    if !opts.dry_run {
        clear_broken(&state_dir)?;
    }
    let entries = batch::list(&state_dir)?;
    let all = crate::record::kept::kept_proposals(&source, &entries)?;
    let k = resolve(&all, &entries, &opts.reference)?.clone();
    let dry_run = opts.dry_run;
    let strict = opts.strict || source.config.strict;

    let (tree, base) = proposal(&source, &k)?;
    let base_tree = commit::tree_of(&source.repo, &base.to_string())?;
    let over = screened(&source.repo, base_tree, tree)?;

    let (mut b, idx, exists) = batch_of(&source, &entries, &k, base);
    // Only the drivers its batch's prepare recorded run (design §3.18); a
    // batch that is gone recorded none.
    crate::git::drivers::enforce(b.drivers.as_ref(), &mut source.repo)?;

    let mut out = Outcome::new(idx, TaskState::Open);
    out.proposal_ref = Some(k.ref_name.clone());
    out.patch = k.patch.clone();
    let mut w = Wrote::default();
    let deleted = proposed(over, &mut out);
    if out.status == TaskState::Conflict {
        // Refused above: nothing of it is merged.
    } else if out.proposed.is_empty() {
        out.status = TaskState::NoChanges;
    } else {
        let landing = Landing {
            source: &source,
            state_dir: &state_dir,
            k: &k,
            idx,
            tree,
            base_tree,
            strict,
            dry_run,
        };
        w = landing.merge_and_write(&mut out, observer)?;
    }

    // Its work is in the working tree (or there was none): the kept ref and
    // patch go, and a discarded task of an open batch is recorded applied.
    // A failure to record the undo entry is a clean-up warning, as in apply.
    let mut artifacts_error: Option<Error> = w.undo_error;
    let mut removed = false;
    if !dry_run && out.ok() {
        removed = remove_kept(&source, &k, &mut artifacts_error);
        out.proposal_ref = None;
        out.patch = None;
        if exists {
            if let Err(e) = record_applied(&state_dir, &mut b, idx, out.status) {
                artifacts_error.get_or_insert(e.into());
            }
        }
    }
    let batch_open = exists && b.open_tasks().next().is_some();
    drop(lock);
    let mut write_error = w.write_error;
    // A write-back that could not be rolled back leaves the working tree in
    // a state only recovery can fix (exit 3).
    if let Some(e) = write_error.take_if(|e| e.is_rollback_failed()) {
        return Err(e);
    }
    Ok(Landed {
        report: Report {
            batch: b,
            outcomes: vec![out],
            written: w.written,
            batch_open,
            dry_run,
            write_error,
            kept: Vec::new(),
            artifacts_error,
            // A kept proposal has no workspace that could have made any.
            side_effects: Vec::new(),
            workspaces: Vec::new(),
            apply_id: w.apply_id,
            verify: None,
            untrusted: None,
            remote_left: None,
            // A signal once the write-back began, which was finished (design §7 "Signals").
            interrupted: w.wrote && crate::sys::interrupt::interrupted(),
            refreshed: None,
        },
        kept: k,
        root: source.root.clone(),
        removed,
        deleted,
    })
}

/// What the kept proposal `tree` changes against its base, or the path that
/// refuses it: a path bomb is counted, never expanded (design §3.18
/// "Limits"); it is refused as the integration refuses any path git
/// refuses.
fn screened(
    repo: &gix::Repository,
    base_tree: gix::ObjectId,
    tree: gix::ObjectId,
) -> Result<std::result::Result<Vec<diff::PathChange>, crate::git::validate::Invalid>> {
    Ok(
        match crate::git::validate::too_many(repo, Some(base_tree), tree)? {
            Some(over) => Err(over),
            None => match diff::bounded(repo, base_tree, tree) {
                Ok(changes) => Ok(changes),
                Err(diff::DiffError::TooMany { path, .. }) => Err(crate::git::validate::Invalid {
                    path,
                    why: crate::git::validate::TOO_MANY,
                }),
                Err(e) => return Err(e.into()),
            },
        },
    )
}

/// Its batch's record while the batch exists (a discarded task of an open
/// batch), otherwise a one-task stand-in for the document: the batch, the
/// task's index and whether the batch exists.
fn batch_of(
    source: &Source,
    entries: &[Entry],
    k: &Kept,
    base: gix::ObjectId,
) -> (Batch, usize, bool) {
    let existing = entries.iter().find_map(|e| match e {
        Entry::Batch(b) if b.id == k.batch => Some((**b).clone()),
        _ => None,
    });
    match existing {
        Some(b) => match b.tasks.iter().position(|t| t.name == k.task) {
            Some(i) => (b, i, true),
            None => (stand_in(source, k, base), 0, false),
        },
        None => (stand_in(source, k, base), 0, false),
    }
}

/// The proposal's paths into `out` (or the path that refuses it); returns
/// the paths it deletes.
fn proposed(
    over: std::result::Result<Vec<diff::PathChange>, crate::git::validate::Invalid>,
    out: &mut Outcome,
) -> BTreeSet<BString> {
    match over {
        Ok(changes) => {
            let deleted = changes
                .iter()
                .filter(|c| c.new.is_none())
                .map(|c| c.path.clone())
                .collect();
            out.proposed = changes.into_iter().map(|c| c.path).collect();
            deleted
        }
        Err(f) => {
            out.status = TaskState::Conflict;
            out.reason = Some(crate::git::validate::REASON);
            out.conflicts = vec![crate::merge::integrate::PathConflict {
                path: f.path,
                reason: f.why.into(),
            }];
            BTreeSet::new()
        }
    }
}

/// The discarded task `idx` of an open batch recorded applied (`status`).
fn record_applied(
    state_dir: &Path,
    b: &mut Batch,
    idx: usize,
    status: TaskState,
) -> std::result::Result<(), batch::BatchError> {
    let t = &mut b.tasks[idx];
    t.state = status;
    t.reason = None;
    t.proposal_ref = None;
    t.patch = None;
    t.updated_at = Some(crate::sys::time::rfc3339(crate::sys::time::now()));
    batch::save(state_dir, b)
}

/// A batch folder made for an earlier landing's journal and left by a crash
/// (recovery has just dealt with its journal) holds nothing now; while it is
/// there, it would claim the proposal as its batch's. Only an empty folder
/// goes (`remove_dir`).
fn clear_broken(state_dir: &Path) -> Result<()> {
    for e in batch::list(state_dir)? {
        if let Entry::Broken { id, .. } = e {
            let _ = std::fs::remove_dir(batch::batch_dir(state_dir, &id));
        }
    }
    Ok(())
}

/// The proposal's tree and the baseline it was made from (its commit's parent).
fn proposal(source: &Source, k: &Kept) -> Result<(gix::ObjectId, gix::ObjectId)> {
    let missing = |what: String| {
        Error::state(
            Code::MissingObject,
            what,
            "the repository lost objects git-delegate needs; run `git fsck`",
        )
    };
    let id = refs::get(&source.repo, &k.ref_name)?
        .ok_or_else(|| missing(format!("the kept proposal {} is gone", k.ref_name)))?;
    let c = source
        .repo
        .find_commit(id)
        .map_err(|e| missing(format!("the commit {id} of {} is missing: {e}", k.ref_name)))?;
    let tree = c
        .tree_id()
        .map_err(|e| Error::git(format!("cannot read commit {id}"), e))?
        .detach();
    let base = c.parent_ids().next().map(|p| p.detach()).ok_or_else(|| {
        Error::state(
            Code::State,
            format!(
                "{} is not a proposal: its commit {id} has no parent (the baseline it was made from)",
                k.ref_name
            ),
            format!(
                "look at it with `git show --stat {}`; `git update-ref -d {}` removes it",
                k.ref_name, k.ref_name
            ),
        )
    })?;
    Ok((tree, base))
}

/// What merging and writing the proposal gave.
#[derive(Default)]
struct Wrote {
    /// The paths written (all the plan's writes, unless the write failed).
    written: Vec<BString>,
    write_error: Option<Error>,
    apply_id: Option<String>,
    undo_error: Option<Error>,
    /// The write-back went through.
    wrote: bool,
}

/// One kept proposal being landed: what merging and writing it needs.
struct Landing<'a> {
    source: &'a Source,
    state_dir: &'a Path,
    k: &'a Kept,
    idx: usize,
    tree: gix::ObjectId,
    base_tree: gix::ObjectId,
    strict: bool,
    dry_run: bool,
}

impl Landing<'_> {
    /// Merge the proposal with the source as it is (recording in `out` what
    /// applied or was refused) and, unless `dry_run`, write it back.
    /// Interrupted and rolled back is the one error returned.
    fn merge_and_write(&self, out: &mut Outcome, observer: &dyn Observer) -> Result<Wrote> {
        let (source, idx) = (self.source, self.idx);
        let mut w = Wrote::default();
        let merging = observer.step("Merging");
        let mut mem = source.repo.clone().with_object_memory();
        mem.object_cache_size_if_unset(8 << 20);
        let candidate = Candidate {
            task: idx,
            tree: self.tree,
            paths: out.proposed.clone(),
            base: None,
        };
        let plan = crate::merge::landing::plan(
            source,
            &mem,
            self.base_tree,
            &[candidate],
            self.strict,
            !self.dry_run,
        )?;
        if plan.applied.contains(&idx) {
            let to_write: BTreeSet<&BString> = plan.writes.iter().map(|w| &w.path).collect();
            out.applied_by(&to_write);
        } else if let Some(r) = plan.refused.iter().find(|r| r.task == idx) {
            out.refused(r);
        }
        drop(merging);
        // Write back through the journal, in the batch's state folder (made
        // for the write when the batch is gone: recovery scans every
        // folder there, with or without `batch.toml`).
        // An undo entry is recorded as apply records one (design §3.11),
        // before the kept ref goes (the entry keeps the proposal).
        if !self.dry_run && out.status == TaskState::Applied && !plan.writes.is_empty() {
            let _writing = observer.step(&format!("Writing {} paths", plan.writes.len()));
            let result = self.write(&mem, &plan.writes, &mut w);
            match result {
                Ok(()) => {
                    w.wrote = true;
                    if let Some(id) = w
                        .apply_id
                        .take_if(|id| !crate::ops::undo::recorded(self.state_dir, id))
                    {
                        crate::ops::undo::discard_staged(source, &id);
                        w.undo_error = Some(Error::state(
                            Code::WriteFailed,
                            "the undo entry of this apply could not be put in place",
                            "the result stands; `git delegate undo` cannot take this apply back",
                        ));
                    }
                }
                Err(e) => {
                    if let Some(id) = w.apply_id.take() {
                        crate::ops::undo::discard_staged(source, &id);
                    }
                    // Interrupted and rolled back: nothing changed (design §7 "Signals").
                    if e.code == Code::Interrupted {
                        return Err(e);
                    }
                    out.applied.clear();
                    out.fail("write_failed", e.message.clone());
                    w.write_error = Some(e);
                }
            }
        }
        if w.write_error.is_none() {
            w.written = plan.writes.iter().map(|w| w.path.clone()).collect();
        }
        Ok(w)
    }

    /// Persist the merged objects, stage the undo entry (its id or its
    /// error into `w`) and write back through the journal.
    fn write(
        &self,
        mem: &gix::Repository,
        writes: &[writeback::PathWrite],
        w: &mut Wrote,
    ) -> Result<()> {
        let (source, k) = (self.source, self.k);
        let journal_dir = batch::batch_dir(self.state_dir, &k.batch);
        let made = !journal_dir.exists();
        let result = crate::merge::landing::persist(&source.repo, mem, writes, Side::New)
            .map_err(Error::from)
            .and_then(|()| {
                std::fs::create_dir_all(&journal_dir)
                    .map_err(|e| Error::io(format!("cannot create {}", journal_dir.display()), e))
            })
            .and_then(|()| {
                // Its undo entry takes effect with the write-back, at its
                // commit point (design §7 "What recovery finishes").
                let task = [(k.task.clone(), k.ref_name.clone())];
                let then =
                    match crate::ops::undo::stage(source, &k.batch, writes, &task, &journal_dir) {
                        Ok((id, then)) => {
                            w.apply_id = Some(id);
                            vec![then]
                        }
                        Err(e) => {
                            w.undo_error = Some(e);
                            Vec::new()
                        }
                    };
                writeback::write_then(source, &journal_dir, writes, &then).map_err(Error::from)
            });
        if made {
            // Empty unless a rollback left its journal for recovery.
            let _ = std::fs::remove_dir(&journal_dir);
        }
        result
    }
}

/// Remove the kept ref and patch (true when they went; a failure into
/// `artifacts_error`) and the kept folders they leave empty.
fn remove_kept(source: &Source, k: &Kept, artifacts_error: &mut Option<Error>) -> bool {
    let mut removed = false;
    let r = refs::delete(&source.repo, &k.ref_name)
        .map_err(Error::from)
        .and_then(|_| match &k.patch {
            Some(p) => Ok(crate::sys::fs::remove_file(p)?),
            None => Ok(()),
        });
    match r {
        Ok(()) => removed = true,
        Err(e) => {
            artifacts_error.get_or_insert(e);
        }
    }
    let dir = crate::record::kept::kept_dir(&source.state_dir());
    let _ = std::fs::remove_dir(dir.join(&k.batch));
    let _ = std::fs::remove_dir(&dir);
    removed
}

/// A one-task batch record standing in for the kept proposal's batch, which is gone.
fn stand_in(source: &Source, k: &Kept, baseline: gix::ObjectId) -> Batch {
    Batch::stand_in(
        &k.batch,
        &source.root,
        crate::sys::time::rfc3339(k.kept_at),
        baseline.to_string(),
        batch::Task::open(k.task.clone(), PathBuf::new(), String::new()),
    )
}
