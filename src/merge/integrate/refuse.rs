//! The refusals of the integration that are not merge conflicts: before
//! any merge (a path git refuses, outside the sparse checkout, with
//! `--strict` a path the source changed) and after the write-back check
//! (the tasks that touch a blocked path; see `integrate`'s semantics).
//!
//! Owns: deciding which tasks those take out, and the paths named.
//! Never: merges (`merge3`); looks at the disk (the caller's check does).

use std::collections::{BTreeMap, BTreeSet};

use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

use super::merge3::both_changed_reason;
use super::{overlaps, touches, Candidate, PathConflict, Refusal, Refused, Result};
use crate::git::diff::{self, PathChange};
use crate::merge::MergeError;
use crate::writeback::{BlockReason, Blocked};

/// What [`refuse_before_merging`] found: the tasks refused before any
/// merge (`refused`, and their indices in `out_for_good`) and the folders
/// at the top of `S`, for the top folder's write check.
pub(super) struct Before {
    pub(super) refused: Vec<Refused>,
    pub(super) out_for_good: BTreeSet<usize>,
    pub(super) s_top_folders: BTreeSet<BString>,
}

/// The refusals before any merge: `screened` (design §3.18: a proposal
/// holding a path git refuses is never merged), the paths outside the
/// sparse checkout and, with `strict`, the paths the source changed.
pub(super) fn refuse_before_merging(
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

/// The applied tasks that touch a blocked path (each refused, into
/// `refused`), in task order.
pub(super) fn culprits(
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
