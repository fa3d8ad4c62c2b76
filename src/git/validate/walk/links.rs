//! The gitlinks (submodule entries) a tree adds, changes or removes
//! against its base (design §3.15, §3.18 limits: submodules are
//! read-only), found with `walk`'s reader where the two differ.
//!
//! Owns: `gitlinks`.
//! Never: reads or writes a working tree.

use gix::bstr::BString;
use gix::ObjectId;

use super::*;

/// The gitlinks (submodule entries) `tree` adds, changes or removes
/// against `base` (the first [`NAMED`]), walking only where they differ.
pub fn gitlinks(repo: &gix::Repository, base: ObjectId, tree: ObjectId) -> Result<Vec<BString>> {
    let walk = Walk::new(repo, u64::MAX, true);
    let mut out = Vec::new();
    links_below(
        &walk,
        Some(base),
        Some(tree),
        &mut BString::default(),
        &mut out,
    )?;
    Ok(out)
}

fn links_below(
    walk: &Walk<'_>,
    base: Option<ObjectId>,
    tree: Option<ObjectId>,
    at: &mut BString,
    out: &mut Vec<BString>,
) -> Result<()> {
    if base == tree || out.len() >= NAMED {
        return Ok(());
    }
    let read = |id: Option<ObjectId>| -> Result<HashMap<BString, (EntryKind, ObjectId)>> {
        Ok(match id {
            Some(i) => walk
                .entries(i)?
                .unwrap_or_default()
                .into_iter()
                .map(|(n, k, o)| (n, (k, o)))
                .collect(),
            None => HashMap::new(),
        })
    };
    let (old, new) = (read(base)?, read(tree)?);
    let mut names: Vec<&BString> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let (o, w) = (old.get(n).copied(), new.get(n).copied());
        if o == w || out.len() >= NAMED {
            continue;
        }
        let len = at.len();
        if !at.is_empty() {
            at.push(b'/');
        }
        at.extend_from_slice(n);
        let is = |e: Option<(EntryKind, ObjectId)>, k| e.is_some_and(|e| e.0 == k);
        if is(o, EntryKind::Commit) || is(w, EntryKind::Commit) {
            out.push(at.clone());
        } else {
            let sub = |e: Option<(EntryKind, ObjectId)>| {
                e.filter(|e| e.0 == EntryKind::Tree).map(|e| e.1)
            };
            if sub(o).is_some() || sub(w).is_some() {
                links_below(walk, sub(o), sub(w), at, out)?;
            }
        }
        at.truncate(len);
    }
    Ok(())
}
