//! Design §3.2 steps 2-3 as every command that lands work runs them:
//! snapshot the source as it is now (only where the proposals touch it, or
//! whole where that is not exact: `touched`), integrate the candidates in
//! task order onto their bases and that snapshot (`integrate`), and take out
//! the tasks the write-back check blocks (`checker`, the one
//! persist-then-check every landing runs); and copying the objects a write
//! needs from object memory into the object store (`persist`). Shared by
//! `apply` (and its dry run), `apply --kept` (`kept`), `diff --source`
//! (`look`), `undo`'s re-apply and `verify`, so that all of them land
//! exactly what apply would.
//!
//! Owns: the choice between a partial and a whole snapshot of the source
//! (and the test-only `GIT_DELEGATE_FULL_SOURCE_SNAPSHOT`, which forces the
//! whole one).
//! Never: writes into the working tree, takes a lock, or writes an object
//! that is not one side of a checked write.

use std::collections::BTreeSet;

use gix::bstr::BString;

use crate::git::repo::Source;
use crate::merge::integrate::{self, Candidate};
use crate::merge::MergeError;
use crate::writeback::{self, PathWrite};
use crate::{snapshot, snapshot::touched};

type Result<T, E = MergeError> = std::result::Result<T, E>;

/// Test-only: always snapshot the whole source (the tests compare both ways).
const FULL_SOURCE_SNAPSHOT: &str = "GIT_DELEGATE_FULL_SOURCE_SNAPSHOT";

/// Steps 2-3 (design §3.2): snapshot the source as it is now into `mem`
/// (only where the proposals touch it, or whole where that is not exact;
/// see `touched`), integrate `candidates` (in task order) onto the baseline
/// and that snapshot, and take out the tasks the write-back check blocks.
/// The one integration of apply, its dry run and `diff --source` (design
/// §3.16). `persist_old`: copy the old side of each checked write into the
/// object store first (a real apply); without it nothing is written.
pub fn plan(
    source: &Source,
    mem: &gix::Repository,
    baseline_tree: gix::ObjectId,
    candidates: &[Candidate],
    strict: bool,
    persist_old: bool,
) -> Result<integrate::Plan> {
    let screened = integrate::screen(mem, baseline_tree, candidates)?;
    let s_tree = source_tree_screened(mem, baseline_tree, candidates, &screened)?;
    let mut check = checker(source, mem, persist_old);
    integrate::integrate_screened(
        mem,
        baseline_tree,
        s_tree,
        candidates,
        screened,
        strict,
        &mut check,
    )
}

/// The write-back check every landing runs on a plan's writes (design
/// §3.2 step 3): with `persist_old` (a real apply), the old side of each
/// write is copied into the object store first, so that the journal can
/// always restore it; then which writes the working tree blocks.
pub fn checker<'a>(
    source: &'a Source,
    mem: &'a gix::Repository,
    persist_old: bool,
) -> impl FnMut(&[PathWrite]) -> Result<Vec<writeback::Blocked>> + 'a {
    move |writes: &[PathWrite]| {
        if persist_old {
            persist(&source.repo, mem, writes, Side::Old)?;
        }
        Ok(writeback::check(source, writes)?)
    }
}

/// The source as it is now, as `candidates`' merges need it (into `mem`):
/// read only at the paths they touch, or whole where that is not exact
/// (see `touched`), and always whole when a refreshed task is among them
/// (its base holds changes at paths it does not touch: design §3.12). The
/// paths of a proposal `integrate::screen` refuses are not read.
pub fn source_tree(
    mem: &gix::Repository,
    baseline_tree: gix::ObjectId,
    candidates: &[Candidate],
) -> Result<gix::ObjectId> {
    let screened = integrate::screen(mem, baseline_tree, candidates)?;
    source_tree_screened(mem, baseline_tree, candidates, &screened)
}

/// [`source_tree`] with what `integrate::screen` found in `candidates`.
fn source_tree_screened(
    mem: &gix::Repository,
    baseline_tree: gix::ObjectId,
    candidates: &[Candidate],
    screened: &[integrate::Refused],
) -> Result<gix::ObjectId> {
    // A proposal holding paths git refuses (design §3.18) is refused
    // before its paths are read anywhere: none of them is looked at in the
    // source (`..`, `.git/...`).
    let refused: BTreeSet<usize> = screened.iter().map(|r| r.task).collect();
    let candidates: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| !refused.contains(&c.task))
        .collect();
    let touched: BTreeSet<BString> = candidates
        .iter()
        .flat_map(|c| c.paths.iter().cloned())
        .collect();
    // Test-only: always the whole source (the tests compare both ways).
    let full = std::env::var_os(FULL_SOURCE_SNAPSHOT).is_some()
        || candidates.iter().any(|c| c.base.is_some());
    let partial = if full {
        None
    } else {
        touched::snapshot(mem, baseline_tree, &touched)?
    };
    Ok(match partial {
        Some(tree) => tree,
        None => snapshot::snapshot(mem)?.tree,
    })
}

/// Which side of a write: what the path held (`Old`) or will hold (`New`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Old,
    New,
}

/// Copy the objects of one side of `writes` that only `mem` holds into the
/// object store of `disk`.
pub fn persist(
    disk: &gix::Repository,
    mem: &gix::Repository,
    writes: &[PathWrite],
    side: Side,
) -> Result<()> {
    for w in writes {
        let entry = match side {
            Side::Old => w.old,
            Side::New => w.new,
        };
        let Some((_, id)) = entry else { continue };
        if disk.has_object(id) {
            continue;
        }
        let obj = mem
            .find_object(id)
            .map_err(|source| MergeError::ReadObject { id, source })?;
        let written = gix::objs::Write::write_buf(disk, obj.kind, &obj.data)
            .map_err(|source| MergeError::WriteObject { id, source })?;
        if written != id {
            return Err(MergeError::Misstored { id, written });
        }
    }
    Ok(())
}
