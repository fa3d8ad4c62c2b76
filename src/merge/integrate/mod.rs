//! Integration (design §3.2 steps 2-3): 3-way merges of trees in memory, the
//! proposals in task order onto the baseline, then the result onto the
//! source as it is now.
//!
//! Owns: deciding which tasks merge cleanly and the final tree `F`; one
//! tree merge and its conflicts' words are `merge3`'s, the refusals that
//! are no conflict `refuse`'s.
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
use gix::ObjectId;

use crate::git::diff;
use crate::merge::MergeError;
use crate::writeback::{Blocked, PathWrite};

mod merge3;
mod refuse;

pub use merge3::{merge3, Merge};
use refuse::{culprits, refuse_before_merging, Before};

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
