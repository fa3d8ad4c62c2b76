//! One 3-way merge of trees in memory (`merge3`), its conflicts worded as
//! `git status` words them: the stages git would leave at each path, a
//! rename's old name taking its new name's word (see `integrate`'s
//! semantics).
//!
//! Owns: the tree merge and the words of its conflicts.
//! Never: decides which task is taken out (`integrate` does); writes a ref,
//! the index or the working tree.

use std::collections::BTreeMap;

use gix::bstr::{BString, ByteSlice};
use gix::merge::tree::TreatAsUnresolved;
use gix::ObjectId;

use super::{PathConflict, Result};
use crate::merge::MergeError;

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
    let locations = unresolved_locations(&outcome, how);
    if !locations.is_empty() {
        let conflicts = conflicts(repo, &mut outcome, how, [base, ours, theirs], locations)?;
        return Ok(Merge::Conflicts(conflicts));
    }
    let tree = outcome.tree.write().map_err(|source| MergeError::Git {
        what: "cannot write a merged tree",
        source,
    })?;
    Ok(Merge::Clean(tree.detach()))
}

/// Every location of every unresolved conflict: where it is on each side,
/// and where a rename took it from.
fn unresolved_locations(
    outcome: &gix::merge::tree::Outcome<'_>,
    how: TreatAsUnresolved,
) -> Vec<BString> {
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
    locations
}

/// Each of `locations` with git's word for it, sorted by path.
fn conflicts(
    repo: &gix::Repository,
    outcome: &mut gix::merge::tree::Outcome<'_>,
    how: TreatAsUnresolved,
    [base, ours, theirs]: [ObjectId; 3],
    locations: Vec<BString>,
) -> Result<Vec<PathConflict>> {
    let err = |source: gix::Error| MergeError::Git {
        what: "cannot merge trees",
        source,
    };
    let mut stages = git_stages(repo, outcome, how)?;
    let renamed_to = renames(outcome, how, &mut stages);
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
    Ok(conflicts)
}

/// Where a rename took each conflicted path from (destination -> source);
/// the base stage git keeps at a rename/delete's destination is added to
/// `stages`.
fn renames(
    outcome: &gix::merge::tree::Outcome<'_>,
    how: TreatAsUnresolved,
    stages: &mut BTreeMap<BString, [bool; 3]>,
) -> Vec<(BString, BString)> {
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
    renamed_to
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

/// git's word for a path changed on both sides, from the entries in
/// base, ours and theirs.
pub(super) fn both_changed_reason(base: bool, ours: bool, theirs: bool) -> &'static str {
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
