//! The blobs a commit brings (design §3.19): its tree against its first
//! parent's, as a tree diff walks them, looking only at the recorded ones.
//!
//! Owns: the walk. Folders whose ids are equal are skipped, and each pair
//! of folders (before, after) is visited once, so a tree repeating one
//! folder under many names (a path bomb) costs one visit of it; nesting
//! deeper than git's own limit fails the check.
//! Never: reads a blob; follows a gitlink; changes anything.

use std::collections::{HashMap, HashSet};

use gix::bstr::{BStr, BString, ByteVec};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::record::private::Record;

/// git's `core.maxTreeDepth` default: deeper trees fail the check.
const MAX_DEPTH: usize = 4096;

/// Walk `new` against `old` (`None`: nothing before, every blob is new),
/// calling `hit(path, blob)` for each file or symlink whose blob the
/// record holds and that `old` did not hold at that path; `hit` returns
/// whether to go on.
pub fn introduced(
    repo: &gix::Repository,
    old: Option<ObjectId>,
    new: ObjectId,
    record: &Record,
    hit: &mut dyn FnMut(&BStr, ObjectId) -> bool,
) -> Result<(), String> {
    let mut seen: HashSet<(Option<ObjectId>, ObjectId)> = HashSet::new();
    let mut todo: Vec<(Option<ObjectId>, ObjectId, BString, usize)> =
        vec![(old, new, BString::default(), 0)];
    while let Some((old, new, prefix, depth)) = todo.pop() {
        if old == Some(new) || !seen.insert((old, new)) {
            continue;
        }
        if depth > MAX_DEPTH {
            return Err(format!(
                "the tree {new} at {prefix} is nested deeper than {MAX_DEPTH} folders"
            ));
        }
        let before: HashMap<BString, (EntryKind, ObjectId)> = match old {
            Some(o) => entries(repo, o)?
                .into_iter()
                .map(|(name, kind, id)| (name, (kind, id)))
                .collect(),
            None => HashMap::new(),
        };
        for (name, kind, id) in entries(repo, new)? {
            let was = before.get(&name);
            let path = || {
                let mut p = prefix.clone();
                if !p.is_empty() {
                    p.push_byte(b'/');
                }
                p.push_str(&name);
                p
            };
            match kind {
                EntryKind::Tree => {
                    let old = was.filter(|(k, _)| *k == EntryKind::Tree).map(|(_, i)| *i);
                    todo.push((old, id, path(), depth + 1));
                }
                EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                    let same = was.is_some_and(|(k, i)| *i == id && *k != EntryKind::Tree);
                    if !same && record.blobs.contains_key(&id) && !hit(path().as_ref(), id) {
                        return Ok(());
                    }
                }
                EntryKind::Commit => {}
            }
        }
    }
    Ok(())
}

/// A tree's entries: name, kind, id.
fn entries(
    repo: &gix::Repository,
    id: ObjectId,
) -> Result<Vec<(BString, EntryKind, ObjectId)>, String> {
    let obj = repo
        .find_object(id)
        .map_err(|e| format!("cannot read the tree {id}: {e}"))?;
    if obj.kind != gix::object::Kind::Tree {
        return Err(format!("{id} is a {}, where a tree was expected", obj.kind));
    }
    gix::objs::TreeRefIter::from_bytes(&obj.data, id.kind())
        .map(|e| {
            e.map(|e| (e.filename.to_owned(), e.mode.kind(), e.oid.to_owned()))
                .map_err(|e| format!("cannot read the tree {id}: {e}"))
        })
        .collect()
}
