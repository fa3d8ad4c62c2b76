//! The blobs a commit brings (design §3.19): its tree against its first
//! parent's, as a tree diff walks them, looking only at the recorded ones.
//!
//! Owns: the walk. Folders whose ids are equal are skipped, and each pair
//! of folders (before, after) is visited once, so a tree repeating one
//! folder under many names (a path bomb) costs one visit of it; nesting
//! deeper than git's own limit fails the check.
//! Never: reads a blob; follows a gitlink; changes anything.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

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
    trees: &mut Trees,
    old: Option<ObjectId>,
    new: ObjectId,
    record: &Record,
    hit: &mut dyn FnMut(&BStr, ObjectId) -> bool,
) -> Result<(), String> {
    trees.next_commit();
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
        let after = trees.get(repo, new, false)?;
        let before = match old {
            Some(o) => Some(trees.get(repo, o, true)?),
            None => None,
        };
        let mut before = Entries::new(before.as_deref(), old);
        for entry in Entries::new(Some(&after), Some(new)) {
            let (name, kind, id) = entry?;
            let path = || {
                let mut p = prefix.clone();
                if !p.is_empty() {
                    p.push_byte(b'/');
                }
                p.push_str(name);
                p
            };
            // The entry of the same name and kind before, if any: both
            // trees are in git's order, so a merge walk finds it.
            let was = before.find(name, kind == EntryKind::Tree)?;
            match kind {
                EntryKind::Tree => {
                    let old = was.filter(|(k, _)| *k == EntryKind::Tree).map(|(_, i)| i);
                    todo.push((old, id, path(), depth + 1));
                }
                EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                    let same = was.is_some_and(|(_, i)| i == id);
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

/// The trees a walk of commits reads, each read once where it can: the
/// trees a commit's parent side needed are, walking from the newest, the
/// trees its parent's new side needs next.
#[derive(Default)]
pub struct Trees {
    /// The parent side of the commit scanned last.
    last: HashMap<ObjectId, Rc<[u8]>>,
    /// The parent side of the commit being scanned.
    this: HashMap<ObjectId, Rc<[u8]>>,
}

impl Trees {
    fn next_commit(&mut self) {
        self.last = std::mem::take(&mut self.this);
    }

    /// The bytes of tree `id` (`parent_side`: kept for the next commit).
    fn get(
        &mut self,
        repo: &gix::Repository,
        id: ObjectId,
        parent_side: bool,
    ) -> Result<Rc<[u8]>, String> {
        let data = match self.last.get(&id).or_else(|| self.this.get(&id)) {
            Some(d) => d.clone(),
            None => {
                let obj = repo
                    .find_object(id)
                    .map_err(|e| format!("cannot read the tree {id}: {e}"))?;
                if obj.kind != gix::object::Kind::Tree {
                    return Err(format!("{id} is a {}, where a tree was expected", obj.kind));
                }
                Rc::from(obj.data.as_slice())
            }
        };
        if parent_side {
            self.this.insert(id, data.clone());
        }
        Ok(data)
    }
}

/// A tree's entries in order, read in place: name, kind, id.
struct Entries<'a> {
    iter: Option<gix::objs::TreeRefIter<'a>>,
    id: Option<ObjectId>,
    /// The entry read ahead by [`Entries::find`], not yet passed.
    ahead: Option<(&'a BStr, EntryKind, ObjectId)>,
}

type Entry<'a> = Result<(&'a BStr, EntryKind, ObjectId), String>;

impl<'a> Entries<'a> {
    fn new(data: Option<&'a [u8]>, id: Option<ObjectId>) -> Entries<'a> {
        let kind = id.map_or(gix::hash::Kind::Sha1, |i| i.kind());
        Entries {
            iter: data.map(|d| gix::objs::TreeRefIter::from_bytes(d, kind)),
            id,
            ahead: None,
        }
    }

    /// The entry named `name` (a tree or not, as `tree` says), skipping
    /// those that sort before it; `None` when there is none.
    fn find(&mut self, name: &BStr, tree: bool) -> Result<Option<(EntryKind, ObjectId)>, String> {
        let want = (name, tree);
        loop {
            let next = match self.ahead.take() {
                Some(e) => Some(e),
                None => self.next().transpose()?,
            };
            let Some((n, k, i)) = next else {
                return Ok(None);
            };
            match git_order((n, k == EntryKind::Tree), want) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return Ok(Some((k, i))),
                std::cmp::Ordering::Greater => {
                    self.ahead = Some((n, k, i));
                    return Ok(None);
                }
            }
        }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        let e = self.iter.as_mut()?.next()?;
        Some(
            e.map(|e| (e.filename, e.mode.kind(), e.oid.to_owned()))
                .map_err(|e| match self.id {
                    Some(id) => format!("cannot read the tree {id}: {e}"),
                    None => format!("cannot read a tree: {e}"),
                }),
        )
    }
}

/// git's order of tree entries: by name, a tree's name as if it ended in `/`.
fn git_order((a, a_tree): (&BStr, bool), (b, b_tree): (&BStr, bool)) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| {
        // A name holds no `/`: past the common part, the next byte (or the
        // `/` a tree's name ends in, or nothing) decides.
        let next = |name: &BStr, tree: bool| name.get(n).copied().or(tree.then_some(b'/'));
        next(a, a_tree).cmp(&next(b, b_tree))
    })
}

#[cfg(test)]
mod tests {
    use super::git_order;
    use gix::bstr::ByteSlice;
    use std::cmp::Ordering;

    #[test]
    fn trees_sort_as_if_they_ended_in_a_slash() {
        fn e(n: &str, t: bool) -> (&gix::bstr::BStr, bool) {
            (n.as_bytes().as_bstr(), t)
        }
        assert_eq!(git_order(e("a", false), e("a", true)), Ordering::Less);
        assert_eq!(git_order(e("a.b", false), e("a", true)), Ordering::Less);
        assert_eq!(git_order(e("a", true), e("a0", false)), Ordering::Less);
        assert_eq!(git_order(e("a", true), e("a", true)), Ordering::Equal);
        assert_eq!(git_order(e("a", false), e("a", false)), Ordering::Equal);
        assert_eq!(git_order(e("ab", false), e("a", false)), Ordering::Greater);
        assert_eq!(git_order(e("a-", false), e("a", true)), Ordering::Less);
    }
}
