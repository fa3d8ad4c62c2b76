//! Integration (design §3.2 steps 2-3): 3-way merges of trees in memory, the
//! proposals in task order onto the baseline, then the result onto the
//! source as it is now.
//!
//! Owns: deciding which tasks merge cleanly and the final tree `F`.
//! Never: writes the working tree, refs or the index.
//!
//! Semantics (where the design is silent):
//! - Tasks are taken in task order. For each proposal `P`:
//!   `I' = merge3(baseline, I, P)`; an unresolved conflict makes the task
//!   `merge_conflict`. Otherwise `F' = merge3(baseline, S, I')`; an
//!   unresolved conflict makes the task `source_changed`. Only when both
//!   merges are clean does the task join (`I = I'`, `F = F'`). This is the
//!   same `F = merge3(baseline, S, I)` as the design's "redo without it" loop,
//!   with the conflict blamed exactly on the task that brings it in, and
//!   every later task still tried.
//! - A proposal holding a path git refuses to check out (design §3.18) is
//!   `invalid_path` before any merge (`screen`).
//! - `--strict`: a task whose proposal touches a path (or a folder above or
//!   below one) that differs between baseline and `S` is `source_changed`
//!   before any merge.
//! - The write-back check (untracked files, ignored symlinks or folders in
//!   the way, paths changed since `S`, folders that refuse writing) takes
//!   out the tasks that touch a blocked path (or write in a blocked folder)
//!   and the integration is redone without them. A task touches a path its
//!   proposal changes, or a path of `F` its merge changes (where a rename
//!   in the source took its edit; `Plan::changed`). It writes in the top
//!   folder when one of those paths is there or under a folder `S` lacks
//!   there (the write makes it), as the check finds it. A blocked path no
//!   applied task touches takes out no task: it is an internal error, and
//!   nothing is written.
//! - Conflict reasons use `git status`' words, seen from each merge:
//!   "us" is the integration so far (`merge_conflict`) or the working tree
//!   (`source_changed`), "them" is the task. Each path gets the word for
//!   the stages git would leave at that path (gix's conflicts applied to an
//!   in-memory index; a rename/delete keeps its base stage at the new name,
//!   as in git). A rename's old name, where git leaves no stage, gets the
//!   word of its new name; any other path git leaves no stage at gets the
//!   word for what base, ours and theirs have there.

use std::collections::{BTreeMap, BTreeSet};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::merge::tree::TreatAsUnresolved;
use gix::ObjectId;

use crate::git::diff::{self, PathChange};
use crate::merge::MergeError;
use crate::writeback::{BlockReason, Blocked, PathWrite};

type Result<T, E = MergeError> = std::result::Result<T, E>;

/// One proposal to integrate.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The task's index in the batch.
    pub task: usize,
    pub tree: ObjectId,
    /// Paths that differ between the task's base and its proposal.
    pub paths: Vec<BString>,
    /// A refreshed task's own base tree (design §3.12); `None`: the baseline.
    pub base: Option<ObjectId>,
}

/// One conflicting path, with git's word for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathConflict {
    pub path: BString,
    pub reason: String,
}

/// Why a task was taken out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    MergeConflict,
    SourceChanged,
    WouldOverwriteUntracked,
    /// A folder the task writes in refuses writing: the task is `failed`
    /// with reason `write_failed` (its per-path entry names the folder and
    /// the OS error), and the others are integrated without it.
    NotWritable,
    /// A path outside the source's sparse checkout (design §3.15).
    OutsideSparseCheckout,
    /// A path git refuses to check out (design §3.18 "Paths").
    InvalidPath,
    /// A gitlink (submodule entry) added, changed or removed by the
    /// proposal: submodules are read-only (design §3.15, §3.18 limits).
    SubmoduleChanged,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::MergeConflict => "merge_conflict",
            Refusal::SourceChanged => "source_changed",
            Refusal::WouldOverwriteUntracked => "would_overwrite_untracked",
            Refusal::NotWritable => "write_failed",
            Refusal::OutsideSparseCheckout => "outside_sparse_checkout",
            Refusal::InvalidPath => crate::git::validate::REASON,
            Refusal::SubmoduleChanged => "submodule_changed",
        }
    }
}

/// A task that does not apply, and the paths that stopped it.
#[derive(Debug, Clone)]
pub struct Refused {
    pub task: usize,
    pub reason: Refusal,
    pub conflicts: Vec<PathConflict>,
}

/// The result of integration.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Every path where `F` differs from `S`, sorted.
    pub writes: Vec<PathWrite>,
    /// Tasks that apply, in task order.
    pub applied: Vec<usize>,
    /// Tasks that do not, in task order.
    pub refused: Vec<Refused>,
    /// For each applied task, the paths of `F` its merge changed (sorted):
    /// where `F` differs before and after the task joins. Unlike the
    /// task's own `paths`, this names where a rename in the source took its
    /// edits. A later task may change such a path back, so intersect with
    /// `writes` for what is written on the task's behalf.
    pub changed: BTreeMap<usize, Vec<BString>>,
    /// The result `F` (design §3.10 verifies it as a commit).
    pub f_tree: ObjectId,
}

/// The outcome of one 3-way merge.
pub enum Merge {
    Clean(ObjectId),
    Conflicts(Vec<PathConflict>),
}

/// `merge3(base, ours, theirs)` in `repo` (give it object memory to keep the
/// merged blobs and trees out of the object store).
pub fn merge3(
    repo: &gix::Repository,
    base: ObjectId,
    ours: ObjectId,
    theirs: ObjectId,
) -> Result<Merge> {
    if ours == theirs || theirs == base {
        return Ok(Merge::Clean(ours));
    }
    if ours == base {
        return Ok(Merge::Clean(theirs));
    }
    let err = |source: gix::Error| MergeError::Git {
        what: "cannot merge trees",
        source,
    };
    let opts = repo.tree_merge_options().map_err(err)?;
    let labels = gix::merge::blob::builtin_driver::text::Labels {
        ancestor: Some("baseline".into()),
        current: Some("ours".into()),
        other: Some("theirs".into()),
    };
    let mut outcome = repo
        .merge_trees(base, ours, theirs, labels, opts)
        .map_err(err)?;
    let how = TreatAsUnresolved::git();
    // Every location of every unresolved conflict: where it is on each side,
    // and where a rename took it from.
    let mut locations: Vec<BString> = Vec::new();
    for c in outcome.conflicts.iter().filter(|c| c.is_unresolved(how)) {
        for at in [
            c.ours.location(),
            c.ours.source_location(),
            c.theirs.location(),
            c.theirs.source_location(),
        ] {
            if !locations.iter().any(|k| k == at) {
                locations.push(at.to_owned());
            }
        }
    }
    if !locations.is_empty() {
        let mut stages = git_stages(repo, &mut outcome, how)?;
        // Where a rename took each conflicted path from (destination -> source).
        let mut renamed_to: Vec<(BString, BString)> = Vec::new();
        for c in outcome.conflicts.iter().filter(|c| c.is_unresolved(how)) {
            for side in [&c.ours, &c.theirs] {
                let (to, from) = (side.location(), side.source_location());
                if to == from {
                    continue;
                }
                renamed_to.push((from.to_owned(), to.to_owned()));
                // gix leaves out the base stage of a rename/delete; git
                // keeps the renamed file's base version at the destination
                // ("deleted by them"/"deleted by us").
                if matches!(
                    c.resolution,
                    Err(gix::merge::tree::ResolutionFailure::OursDeletedTheirsRenamed)
                ) {
                    if let Some(s) = stages.get_mut(to) {
                        s[0] = true;
                    }
                }
            }
        }
        let find = |t: ObjectId| repo.find_tree(t).map_err(err);
        let trees = [find(base)?, find(ours)?, find(theirs)?];
        let mut conflicts: Vec<PathConflict> = Vec::with_capacity(locations.len());
        for path in locations {
            let staged = stages.get(&path).or_else(|| {
                // A rename's source, where git leaves no stage: the
                // conflict as git names it at the destination.
                renamed_to
                    .iter()
                    .filter(|(from, _)| *from == path)
                    .find_map(|(_, to)| stages.get(to))
            });
            let [b, o, t] = match staged {
                Some(s) => *s,
                None => {
                    // git leaves no stage here (a file under a folder the
                    // other side made a file, a file git moves aside): say
                    // what each side has here.
                    let mut has = [false; 3];
                    for (h, tree) in has.iter_mut().zip(&trees) {
                        *h = tree
                            .lookup_entry(path.split_str("/"))
                            .map_err(err)?
                            .is_some_and(|e| e.mode().is_no_tree());
                    }
                    has
                }
            };
            conflicts.push(PathConflict {
                path,
                reason: both_changed_reason(b, o, t).to_string(),
            });
        }
        conflicts.sort_by(|a, b| a.path.cmp(&b.path));
        return Ok(Merge::Conflicts(conflicts));
    }
    let tree = outcome.tree.write().map_err(|source| MergeError::Git {
        what: "cannot write a merged tree",
        source,
    })?;
    Ok(Merge::Clean(tree.detach()))
}

/// The stages git leaves in the index for each conflicted path
/// (base, ours, theirs present), as `git merge-tree --write-tree` or
/// `git merge` would: gix's conflicts applied to an index of the merged
/// tree, in memory.
fn git_stages(
    repo: &gix::Repository,
    outcome: &mut gix::merge::tree::Outcome<'_>,
    how: TreatAsUnresolved,
) -> Result<BTreeMap<BString, [bool; 3]>> {
    use gix::merge::plumbing::tree::apply_index_entries::RemovalMode;
    let err = |source: gix::Error| MergeError::Git {
        what: "cannot list the stages of a merge conflict",
        source,
    };
    let tree = outcome.tree.write().map_err(err)?.detach();
    let mut index: gix::index::State = repo.index_from_tree(&tree).map_err(err)?.into();
    gix::merge::tree::apply_index_entries(&outcome.conflicts, how, &mut index, RemovalMode::Prune);
    let mut stages: BTreeMap<BString, [bool; 3]> = BTreeMap::new();
    for e in index.entries() {
        let slot = match e.stage() {
            gix::index::entry::Stage::Base => 0,
            gix::index::entry::Stage::Ours => 1,
            gix::index::entry::Stage::Theirs => 2,
            gix::index::entry::Stage::Unconflicted => continue,
        };
        stages.entry(e.path(&index).to_owned()).or_default()[slot] = true;
    }
    Ok(stages)
}

/// Whether two paths are the same, or one is a folder above the other.
pub fn overlaps(a: &BStr, b: &BStr) -> bool {
    let under = |long: &BStr, short: &BStr| {
        long.len() > short.len() && long.starts_with(short) && long[short.len()] == b'/'
    };
    a == b || under(a, b) || under(b, a)
}

fn touches(paths: &[BString], p: &BStr) -> bool {
    paths.iter().any(|q| overlaps(q.as_bstr(), p))
}

/// git's word for a path changed on both sides, from the entries in
/// base, ours and theirs.
fn both_changed_reason(base: bool, ours: bool, theirs: bool) -> &'static str {
    match (base, ours, theirs) {
        (true, true, true) => "both modified",
        (false, true, true) => "both added",
        (true, false, true) => "deleted by us",
        (true, true, false) => "deleted by them",
        (true, false, false) => "both deleted",
        (false, true, false) => "added by us",
        (false, false, true) => "added by them",
        (false, false, false) => "conflict",
    }
}

/// The candidates whose proposals hold paths git refuses to check out
/// (design §3.18 "Paths"), each refused naming the first of them: found in
/// each proposal's own tree, where it differs from its base, before any
/// merge or snapshot reads it. Every caller that lands work (and
/// [`integrate`] itself) asks this first.
pub fn screen(
    repo: &gix::Repository,
    baseline: ObjectId,
    candidates: &[Candidate],
) -> Result<Vec<Refused>> {
    let mut refused = Vec::new();
    for c in candidates {
        let base = c.base.unwrap_or(baseline);
        let found = crate::git::validate::tree(repo, Some(base), c.tree)?;
        if found.is_empty() {
            let links = crate::git::validate::gitlinks(repo, base, c.tree)?;
            if !links.is_empty() {
                refused.push(Refused {
                    task: c.task,
                    reason: Refusal::SubmoduleChanged,
                    conflicts: links
                        .into_iter()
                        .map(|path| PathConflict {
                            path,
                            reason: "submodule changed".into(),
                        })
                        .collect(),
                });
            }
            continue;
        }
        refused.push(Refused {
            task: c.task,
            reason: Refusal::InvalidPath,
            conflicts: found
                .into_iter()
                .map(|f| PathConflict {
                    path: f.path,
                    reason: f.why.into(),
                })
                .collect(),
        });
    }
    Ok(refused)
}

/// The write-back check a caller gives the integration: the writes that
/// would lose something, found on the disk without changing anything; its
/// error is the caller's (`E`).
pub type Check<'c, E> = dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>, E> + 'c;

/// Integrate `candidates` (in task order) onto `baseline`, then onto the
/// source snapshot `s_tree`. `check` looks at the disk for writes that
/// would lose something (without changing anything); its error is the
/// caller's (`E`), which the integration's own failures become.
pub fn integrate<E: From<MergeError>>(
    repo: &gix::Repository,
    baseline: ObjectId,
    s_tree: ObjectId,
    candidates: &[Candidate],
    strict: bool,
    check: &mut Check<'_, E>,
) -> Result<Plan, E> {
    let screened = screen(repo, baseline, candidates)?;
    integrate_screened(repo, baseline, s_tree, candidates, screened, strict, check)
}

/// [`integrate`] with `screened`, what [`screen`] found in `candidates`,
/// given (a caller that screened them already, `landing::plan`).
pub fn integrate_screened<E: From<MergeError>>(
    repo: &gix::Repository,
    baseline: ObjectId,
    s_tree: ObjectId,
    candidates: &[Candidate],
    screened: Vec<Refused>,
    strict: bool,
    check: &mut Check<'_, E>,
) -> Result<Plan, E> {
    let Before {
        mut refused,
        mut out_for_good,
        s_top_folders,
    } = refuse_before_merging(repo, (baseline, s_tree), candidates, screened, strict)?;
    loop {
        let Round {
            refused: round_refused,
            applied,
            changed,
            f_tree,
        } = merge_round(repo, baseline, s_tree, candidates, &out_for_good)?;

        let writes =
            crate::writeback::writes_between(repo, s_tree, f_tree).map_err(MergeError::from)?;
        let blocked = if writes.is_empty() {
            Vec::new()
        } else {
            check(&writes)?
        };
        if blocked.is_empty() {
            refused.extend(round_refused);
            refused.sort_by_key(|r| r.task);
            return Ok(Plan {
                writes,
                applied,
                refused,
                changed,
                f_tree,
            });
        }

        // Take out every applied task that touches a blocked path (in its
        // proposal, or in `F`: a rename in the source takes a task's edit
        // to a path its proposal does not name), then redo.
        let culprits = culprits(
            candidates,
            &applied,
            &changed,
            &blocked,
            &s_top_folders,
            &mut refused,
        );
        if culprits.is_empty() {
            // Every write is some applied task's change of `F`, so a blocked
            // path no task touches is not one of the writes: refuse to guess
            // (taking out a task that did not write it), change nothing.
            return Err(MergeError::UnknownBlocked.into());
        }
        out_for_good.extend(culprits);
    }
}

/// What [`refuse_before_merging`] found: the tasks refused before any
/// merge (`refused`, and their indices in `out_for_good`) and the folders
/// at the top of `S`, for the top folder's write check.
struct Before {
    refused: Vec<Refused>,
    out_for_good: BTreeSet<usize>,
    s_top_folders: BTreeSet<BString>,
}

/// The refusals before any merge: `screened` (design §3.18: a proposal
/// holding a path git refuses is never merged), the paths outside the
/// sparse checkout and, with `strict`, the paths the source changed.
fn refuse_before_merging(
    repo: &gix::Repository,
    (baseline, s_tree): (ObjectId, ObjectId),
    candidates: &[Candidate],
    screened: Vec<Refused>,
    strict: bool,
) -> Result<Before> {
    let mut refused: Vec<Refused> = Vec::new();
    // Bounded: a kept proposal's base is its commit's parent, which a
    // worker sharing the repository could have made (design §3.18 "Limits").
    let source_changes: Vec<PathChange> = diff::bounded(repo, baseline, s_tree)?;
    let mut out_for_good: BTreeSet<usize> = BTreeSet::new();
    let s_top_folders = top_folders(repo, s_tree)?;
    for r in screened {
        out_for_good.insert(r.task);
        refused.push(r);
    }
    refuse_outside_sparse(repo, candidates, &mut out_for_good, &mut refused)?;
    if strict {
        refuse_strict(
            repo,
            (baseline, s_tree),
            candidates,
            &source_changes,
            &mut out_for_good,
            &mut refused,
        )?;
    }
    Ok(Before {
        refused,
        out_for_good,
        s_top_folders,
    })
}

/// The names of the folders at the top of `s_tree`.
fn top_folders(repo: &gix::Repository, s_tree: ObjectId) -> Result<BTreeSet<BString>> {
    let err = |source: gix::Error| MergeError::Git {
        what: "cannot read the source tree",
        source,
    };
    let tree = repo.find_tree(s_tree).map_err(err)?;
    let mut names = BTreeSet::new();
    for e in tree.iter() {
        let e = e.map_err(err)?;
        if e.mode().is_tree() {
            names.insert(e.filename().to_owned());
        }
    }
    Ok(names)
}

/// design §3.15: the source's working tree never gets a path outside
/// its sparse checkout.
fn refuse_outside_sparse(
    repo: &gix::Repository,
    candidates: &[Candidate],
    out_for_good: &mut BTreeSet<usize>,
    refused: &mut Vec<Refused>,
) -> Result<()> {
    let tasks = candidates
        .iter()
        .filter(|c| !out_for_good.contains(&c.task))
        .map(|c| (c.task, c.paths.as_slice()));
    for (task, paths) in crate::git::sparse::outside(repo, tasks)? {
        out_for_good.insert(task);
        refused.push(Refused {
            task,
            reason: Refusal::OutsideSparseCheckout,
            conflicts: paths
                .into_iter()
                .map(|path| PathConflict {
                    path,
                    reason: "outside the sparse checkout".into(),
                })
                .collect(),
        });
    }
    Ok(())
}

/// `--strict`: a task whose proposal touches a path (or a folder above or
/// below one) that differs between baseline and `S` is `source_changed`
/// before any merge.
fn refuse_strict(
    repo: &gix::Repository,
    (baseline, s_tree): (ObjectId, ObjectId),
    candidates: &[Candidate],
    source_changes: &[PathChange],
    out_for_good: &mut BTreeSet<usize>,
    refused: &mut Vec<Refused>,
) -> Result<()> {
    for c in candidates {
        if out_for_good.contains(&c.task) {
            continue;
        }
        let props = diff::trees(repo, c.base.unwrap_or(baseline), c.tree)?;
        // A refreshed task: what the source changed since its own base.
        let own_changes = match c.base {
            Some(own) => Some(diff::trees(repo, own, s_tree)?),
            None => None,
        };
        let mut conflicts = Vec::new();
        for sc in own_changes.as_deref().unwrap_or(source_changes) {
            for pc in props
                .iter()
                .filter(|pc| overlaps(pc.path.as_bstr(), sc.path.as_bstr()))
            {
                if conflicts.iter().any(|k: &PathConflict| k.path == pc.path) {
                    continue;
                }
                let reason = if pc.path == sc.path {
                    both_changed_reason(sc.old.is_some(), sc.new.is_some(), pc.new.is_some())
                } else {
                    "changed in the working tree"
                };
                conflicts.push(PathConflict {
                    path: pc.path.clone(),
                    reason: reason.into(),
                });
            }
        }
        if !conflicts.is_empty() {
            conflicts.sort_by(|a, b| a.path.cmp(&b.path));
            out_for_good.insert(c.task);
            refused.push(Refused {
                task: c.task,
                reason: Refusal::SourceChanged,
                conflicts,
            });
        }
    }
    Ok(())
}

/// The clean tree of a merge; a conflict refuses `task` as
/// `merge_conflict` into `refused` (`None`).
fn clean_or_refused(m: Merge, task: usize, refused: &mut Vec<Refused>) -> Option<ObjectId> {
    match m {
        Merge::Clean(t) => Some(t),
        Merge::Conflicts(conflicts) => {
            refused.push(Refused {
                task,
                reason: Refusal::MergeConflict,
                conflicts,
            });
            None
        }
    }
}

/// The paths that differ from tree `from` to tree `to`, sorted.
fn changed_paths(repo: &gix::Repository, from: ObjectId, to: ObjectId) -> Result<Vec<BString>> {
    let mut paths: Vec<BString> = diff::trees(repo, from, to)?
        .into_iter()
        .map(|k| k.path)
        .collect();
    paths.sort();
    Ok(paths)
}

/// One round of the integration: every task not out for good merged in
/// task order (design §3.2 steps 2-3).
struct Round {
    refused: Vec<Refused>,
    applied: Vec<usize>,
    changed: BTreeMap<usize, Vec<BString>>,
    f_tree: ObjectId,
}

fn merge_round(
    repo: &gix::Repository,
    baseline: ObjectId,
    s_tree: ObjectId,
    candidates: &[Candidate],
    out_for_good: &BTreeSet<usize>,
) -> Result<Round> {
    let mut round_refused: Vec<Refused> = Vec::new();
    let mut applied: Vec<usize> = Vec::new();
    let mut changed: BTreeMap<usize, Vec<BString>> = BTreeMap::new();
    let mut i_tree = baseline;
    let mut f_tree = s_tree;
    // `F` as the baseline-based tasks alone make it: it differs from
    // `f_tree` only once a refreshed task joined (design §3.12).
    let mut f_plain = s_tree;
    for c in candidates
        .iter()
        .filter(|c| !out_for_good.contains(&c.task))
    {
        if let Some(own) = c.base {
            // A refreshed task: its changes (own base -> proposal) go
            // straight onto the result so far.
            match merge3(repo, own, f_tree, c.tree)? {
                Merge::Clean(f_next) => {
                    changed.insert(c.task, changed_paths(repo, f_tree, f_next)?);
                    f_tree = f_next;
                    applied.push(c.task);
                }
                Merge::Conflicts(conflicts) => round_refused.push(Refused {
                    task: c.task,
                    reason: Refusal::SourceChanged,
                    conflicts,
                }),
            }
            continue;
        }
        let Some(i_next) = clean_or_refused(
            merge3(repo, baseline, i_tree, c.tree)?,
            c.task,
            &mut round_refused,
        ) else {
            continue;
        };
        let f_next = match merge3(repo, baseline, s_tree, i_next)? {
            Merge::Clean(t) => t,
            Merge::Conflicts(conflicts) => {
                let mine: Vec<PathConflict> = conflicts
                    .iter()
                    .filter(|k| touches(&c.paths, k.path.as_bstr()))
                    .cloned()
                    .collect();
                round_refused.push(Refused {
                    task: c.task,
                    reason: Refusal::SourceChanged,
                    conflicts: if mine.is_empty() { conflicts } else { mine },
                });
                continue;
            }
        };
        // Onto the refreshed tasks' changes, when any joined before.
        let Some(f_all) = clean_or_refused(
            merge3(repo, f_plain, f_tree, f_next)?,
            c.task,
            &mut round_refused,
        ) else {
            continue;
        };
        changed.insert(c.task, changed_paths(repo, f_tree, f_all)?);
        i_tree = i_next;
        f_plain = f_next;
        f_tree = f_all;
        applied.push(c.task);
    }
    Ok(Round {
        refused: round_refused,
        applied,
        changed,
        f_tree,
    })
}

/// The applied tasks that touch a blocked path (each refused, into
/// `refused`), in task order.
fn culprits(
    candidates: &[Candidate],
    applied: &[usize],
    changed: &BTreeMap<usize, Vec<BString>>,
    blocked: &[Blocked],
    s_top_folders: &BTreeSet<BString>,
    refused: &mut Vec<Refused>,
) -> Vec<usize> {
    let mut culprits: Vec<usize> = Vec::new();
    for &t in applied {
        let Some(c) = candidates.iter().find(|c| c.task == t) else {
            continue;
        };
        let in_f = changed.get(&t).map_or(&[][..], |v| v.as_slice());
        // Whether the task writes in the top folder: a path there, or
        // under a folder `S` lacks there (the write makes it), as the
        // write-back check finds the folder a write changes.
        let in_top = c.paths.iter().chain(in_f).any(|p| match p.find_byte(b'/') {
            None => true,
            Some(i) => !s_top_folders.contains(p[..i].as_bstr()),
        });
        let mine: Vec<&Blocked> = blocked
            .iter()
            .filter(|b| {
                touches(&c.paths, b.path.as_bstr())
                    || touches(in_f, b.path.as_bstr())
                    || (b.path.is_empty()
                        && matches!(b.reason, BlockReason::NotWritable(_))
                        && in_top)
            })
            .collect();
        if !mine.is_empty() {
            culprits.push(t);
            refused.push(blocked_refusal(t, &mine));
        }
    }
    culprits
}

fn blocked_refusal(task: usize, blocked: &[&Blocked]) -> Refused {
    let untracked = blocked.iter().any(|b| {
        matches!(
            b.reason,
            BlockReason::UntrackedInTheWay
                | BlockReason::FolderInTheWay
                | BlockReason::SymlinkInTheWay
        )
    });
    let mut conflicts: Vec<PathConflict> = blocked
        .iter()
        .map(|b| PathConflict {
            path: b.path.clone(),
            reason: match b.reason {
                BlockReason::UntrackedInTheWay => "untracked file in the way".into(),
                BlockReason::FolderInTheWay => "folder in the way".into(),
                BlockReason::ChangedSinceSnapshot => "changed during apply".into(),
                BlockReason::SymlinkInTheWay => "ignored symlink in the way".into(),
                BlockReason::NotWritable(errno) => format!(
                    "folder not writable: {}",
                    crate::error::describe(&std::io::Error::from_raw_os_error(errno))
                ),
            },
        })
        .collect();
    conflicts.sort_by(|a, b| a.path.cmp(&b.path));
    conflicts.dedup_by(|a, b| a.path == b.path);
    let denied = blocked
        .iter()
        .any(|b| matches!(b.reason, BlockReason::NotWritable(_)));
    Refused {
        task,
        reason: if denied {
            Refusal::NotWritable
        } else if untracked {
            Refusal::WouldOverwriteUntracked
        } else {
            Refusal::SourceChanged
        },
        conflicts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_folder_aware() {
        let o = |a: &str, b: &str| overlaps(a.into(), b.into());
        assert!(o("a", "a"));
        assert!(o("a", "a/b"));
        assert!(o("a/b/c", "a"));
        assert!(!o("a", "ab"));
        assert!(!o("a/b", "a/c"));
        assert!(!o("ab/c", "a"));
    }
}
