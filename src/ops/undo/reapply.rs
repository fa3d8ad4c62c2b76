//! Landing undone work again (`apply --from-undo`, design §3.11): the
//! proposals an undone entry kept, integrated with the source as it is now
//! and written back through the journal, as apply lands them.
//! Never: prints; lands an entry that was not undone; writes anything when
//! a path conflicts or with `dry_run`.

use std::collections::BTreeSet;

use gix::bstr::BString;
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::merge::integrate::Candidate;
use crate::merge::integrate::{PathConflict, Plan};
use crate::ops::observe::Observer;
use crate::{git::commit, git::diff, record::batch, writeback};

use super::{
    discard_staged, entry_dir, entry_trees, kept_tasks, list, open, persist, record_as, save_at,
    select, Entry, ENTRY_FILE, STAGED,
};

/// One task of a re-apply.
pub struct Landed {
    pub task: String,
    pub applied: bool,
    pub reason: Option<&'static str>,
    pub conflicts: Vec<PathConflict>,
    pub proposed: Vec<BString>,
    pub applied_paths: Vec<BString>,
}

/// What `apply --from-undo` did.
pub struct Reapply {
    /// The undone entry re-applied.
    pub from: Entry,
    pub dry_run: bool,
    /// The new apply's id (`None` when nothing was written).
    pub apply_id: Option<String>,
    pub tasks: Vec<Landed>,
    pub written: Vec<BString>,
    /// A signal arrived during the write-back, past its commit point: it
    /// was finished (design §7 "Signals"); the command exits 1.
    pub interrupted: bool,
    /// When a task conflicts: the undone applies (ids, oldest first) made
    /// earlier in the same working tree that wrote a conflicting path.
    /// `from` was made on top of their work, which undoing them took out:
    /// they are to be applied again first.
    pub first: Vec<String>,
}

impl Reapply {
    pub fn all_ok(&self) -> bool {
        self.tasks.iter().all(|t| t.applied)
    }
}

/// `apply --from-undo APPLY` (design §3.11): integrate an undone entry's
/// proposals onto their baseline and into the source as it is now, like
/// apply's steps 2-4, as a new apply with a new entry.
pub fn reapply(
    here: Source,
    apply: &str,
    strict: bool,
    dry_run: bool,
    observer: &dyn Observer,
) -> Result<Reapply> {
    let (_lock, source, from) = open(here, dry_run, observer, |entries| {
        let from = select(&entries, apply)?;
        refuse_not_undone(&from)?;
        Ok(from)
    })?;
    let strict = strict || source.config.strict;
    let repo = &source.repo;
    let kept = kept_tasks(repo, &from)?;
    let mut report = Reapply {
        from,
        dry_run,
        apply_id: None,
        tasks: Vec::new(),
        written: Vec::new(),
        interrupted: false,
        first: Vec::new(),
    };
    let Some((_, _, first)) = kept.first() else {
        return Ok(report);
    };
    let baseline = repo
        .find_commit(*first)
        .map_err(|e| Error::git("cannot read a kept proposal", e))?
        .parent_ids()
        .next()
        .map(|p| p.detach())
        .ok_or_else(|| {
            Error::state(
                Code::MissingObject,
                "a kept proposal has no baseline parent",
                "report this bug; nothing was changed",
            )
        })?;
    let baseline_tree = commit::tree_of(repo, &baseline.to_string())?;
    let candidates = candidates(repo, &kept, baseline, baseline_tree, &mut report)?;
    let mut mem = repo.clone().with_object_memory();
    mem.object_cache_size_if_unset(8 << 20);
    let merging = observer.step("Merging");
    // Apply's one integration (design §3.2 steps 2-3); nothing persisted here.
    let plan =
        crate::merge::landing::plan(&source, &mem, baseline_tree, &candidates, strict, false)?;
    drop(merging);
    let to_write: BTreeSet<&BString> = plan.writes.iter().map(|w| &w.path).collect();
    for (i, t) in report.tasks.iter_mut().enumerate() {
        if plan.applied.contains(&i) {
            t.applied = true;
            t.applied_paths = t
                .proposed
                .iter()
                .filter(|p| to_write.contains(p))
                .cloned()
                .collect();
        } else if let Some(r) = plan.refused.iter().find(|r| r.task == i) {
            t.reason = Some(r.reason.as_str());
            t.conflicts = r.conflicts.clone();
        }
    }
    if !report.all_ok() {
        report.first = undone_before(&source, &report.from, &report.tasks);
    }
    if dry_run {
        report.written = plan.writes.iter().map(|w| w.path.clone()).collect();
        return Ok(report);
    }
    if !plan.writes.is_empty() {
        write(&source, &mem, &plan, &kept, &mut report, observer)?;
    }
    Ok(report)
}

/// The undone applies, not applied again, made before `from` in the same
/// working tree, that wrote a path the tasks of `from` conflict at (or a
/// folder above or below one), oldest first: `from`'s batch was prepared
/// on top of their work, which undoing them took out again, so its
/// proposals conflict until those are re-applied first (design §3.11).
/// Only a hint: an entry that cannot be read is left out.
fn undone_before(source: &Source, from: &Entry, tasks: &[Landed]) -> Vec<String> {
    let conflicts: Vec<&BString> = tasks
        .iter()
        .flat_map(|t| t.conflicts.iter().map(|c| &c.path))
        .collect();
    let state_dir = source.state_dir();
    let mut out = Vec::new();
    // `list` is newest first.
    for e in list(&state_dir).iter().rev() {
        let earlier = e.applied_ns < from.applied_ns && e.apply_id != from.apply_id;
        if !earlier || !e.undone || e.reapplied_as.is_some() || e.source != from.source {
            continue;
        }
        let Ok((s_tree, f_tree)) = entry_trees(&source.repo, &state_dir, e) else {
            continue;
        };
        let Ok(wrote) = diff::trees(&source.repo, s_tree, f_tree) else {
            continue;
        };
        let hit = wrote.iter().any(|w| {
            conflicts
                .iter()
                .any(|c| crate::merge::integrate::overlaps(w.path.as_ref(), c.as_slice().into()))
        });
        if hit {
            out.push(e.apply_id.clone());
        }
    }
    out
}

/// Refuse an entry that was not undone, or was applied again already.
fn refuse_not_undone(from: &Entry) -> Result<()> {
    if !from.undone {
        return Err(Error::usage(
            Code::NotUndone,
            format!(
                "the apply {} is not undone: its work is in the working tree already",
                from.short()
            ),
            format!(
                "`git delegate apply --from-undo` lands undone work again; undo it first with `git delegate undo {}` if that is what you want",
                from.short()
            ),
        ));
    }
    if let Some(again) = &from.reapplied_as {
        return Err(Error::usage(
            Code::NotUndone,
            format!(
                "the apply {} was applied again already, as {}",
                from.short(),
                batch::short(again)
            ),
            format!(
                "undo that one with `git delegate undo {}`",
                batch::short(again)
            ),
        ));
    }
    Ok(())
}

/// One candidate per kept proposal (in their order), each also entered in
/// `report.tasks` with the paths it proposes.
fn candidates(
    repo: &gix::Repository,
    kept: &[(String, String, ObjectId)],
    baseline: ObjectId,
    baseline_tree: ObjectId,
    report: &mut Reapply,
) -> Result<Vec<Candidate>> {
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, (task, _, c)) in kept.iter().enumerate() {
        let tree = commit::tree_of(repo, &c.to_string())?;
        // A refreshed task's proposal has its own base as parent (design
        // §3.12): its paths and merge are from there, as apply merged it.
        let parent = repo
            .find_commit(*c)
            .map_err(|e| Error::git("cannot read a kept proposal", e))?
            .parent_ids()
            .next()
            .map(|p| p.detach());
        let base = match parent {
            Some(p) if p != baseline => Some(commit::tree_of(repo, &p.to_string())?),
            _ => None,
        };
        // A path bomb (the entry's ref moved) is counted, never expanded,
        // and refused alone (design §3.18 "Limits").
        let from = base.unwrap_or(baseline_tree);
        let over = match crate::git::validate::too_many(repo, Some(from), tree)? {
            Some(over) => Some(over.path),
            None => match diff::bounded(repo, from, tree) {
                Err(diff::DiffError::TooMany { path, .. }) => Some(path),
                Err(e) => return Err(e.into()),
                Ok(changes) => {
                    let paths: Vec<BString> = changes.into_iter().map(|c| c.path).collect();
                    push(report, &mut candidates, (i, task), tree, paths, base);
                    None
                }
            },
        };
        if let Some(path) = over {
            report.tasks.push(Landed {
                task: task.clone(),
                applied: false,
                reason: Some(crate::git::validate::REASON),
                conflicts: vec![PathConflict {
                    path,
                    reason: crate::git::validate::TOO_MANY.into(),
                }],
                proposed: Vec::new(),
                applied_paths: Vec::new(),
            });
        }
    }
    Ok(candidates)
}

/// Enter task `i` in `report.tasks` with the `paths` it proposes, and its
/// candidate.
fn push(
    report: &mut Reapply,
    candidates: &mut Vec<Candidate>,
    (i, task): (usize, &str),
    tree: ObjectId,
    paths: Vec<BString>,
    base: Option<ObjectId>,
) {
    report.tasks.push(Landed {
        task: task.to_string(),
        applied: false,
        reason: None,
        conflicts: Vec::new(),
        proposed: paths.clone(),
        applied_paths: Vec::new(),
    });
    candidates.push(Candidate {
        task: i,
        tree,
        paths,
        base,
    });
}

/// Write `plan` back through the journal as a new apply with its own undo
/// entry, the undone one naming it when every task landed.
fn write(
    source: &Source,
    mem: &gix::Repository,
    plan: &Plan,
    kept: &[(String, String, ObjectId)],
    report: &mut Reapply,
    observer: &dyn Observer,
) -> Result<()> {
    persist(&source.repo, mem, &plan.writes)?;
    let id = uuid::Uuid::new_v4().to_string();
    let dir = entry_dir(&source.state_dir(), &id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let applied: Vec<(String, ObjectId)> = kept
        .iter()
        .enumerate()
        .filter(|(i, _)| plan.applied.contains(i))
        .map(|(_, (t, _, c))| (t.clone(), *c))
        .collect();
    // The new entry, and (every task landing) the undone one naming it,
    // take effect with the write-back (design §7 "What recovery finishes").
    let staged = dir.join(STAGED);
    let staging = || -> Result<Vec<writeback::StagedState>> {
        record_as(
            source,
            &id,
            &report.from.batch,
            &plan.writes,
            &applied,
            Some(&report.from.apply_id),
            Some(&staged),
        )?;
        let mut then = vec![writeback::StagedState {
            staged: staged.clone(),
            to: dir.join(ENTRY_FILE),
        }];
        if report.all_ok() {
            let mut from = report.from.clone();
            from.reapplied_as = Some(id.clone());
            let staged = dir.join(format!("from-{STAGED}"));
            save_at(&staged, &from)?;
            then.push(writeback::StagedState {
                staged,
                to: entry_dir(&source.state_dir(), &from.apply_id).join(ENTRY_FILE),
            });
        }
        Ok(then)
    };
    let then = staging().inspect_err(|_| {
        discard_staged(source, &id);
        let _ = crate::sys::fs::remove_all(&dir);
    })?;
    let _writing = observer.step(&format!("Writing {} paths", plan.writes.len()));
    if let Err(e) = writeback::write_then(source, &dir, &plan.writes, &then) {
        discard_staged(source, &id);
        if !dir.join(batch::JOURNAL_FILE).exists() {
            let _ = crate::sys::fs::remove_all(&dir);
        }
        return Err(e.into());
    }
    report.interrupted = crate::sys::interrupt::interrupted();
    if report.all_ok() {
        report.from.reapplied_as = Some(id.clone());
    }
    report.written = plan.writes.iter().map(|w| w.path.clone()).collect();
    report.apply_id = Some(id);
    Ok(())
}
