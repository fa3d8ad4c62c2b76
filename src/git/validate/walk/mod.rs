//! Walking a tree where it differs from its base (design §3.18 "Paths",
//! "Limits"): what breaks git's rules in it (`tree`), whether it brings
//! more changed paths than any task may (`too_many`, which only counts),
//! and the gitlinks it changes (`links`: `gitlinks`).
//!
//! Owns: the walk (depth first, on a stack of its own, never the thread's;
//! each distinct (tree, base) pair read once, its counts remembered for its
//! other names), the bound on changed paths and folders, and the order
//! and duplicate checks of a tree's entries.
//! Never: reads or writes a working tree.

use std::collections::{HashMap, HashSet};

use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use super::{name, target, Invalid, Result, ValidateError, BELOW_BUDGET, NAMED, TARGET_MAX};

mod links;

pub use links::gitlinks;

/// The paths of `tree` that git refuses (the first [`NAMED`]), looking
/// only where `tree` differs from `base` (trusted: a baseline, or a task's
/// own base, made from a checked source). Below an offending entry the
/// files are named (or the entry, when it holds none). A tree object that
/// cannot be decoded is named as such: a hostile proposal fails alone.
pub fn tree(
    repo: &gix::Repository,
    base: Option<ObjectId>,
    tree: ObjectId,
) -> Result<Vec<Invalid>> {
    let mut walk = Walk::new(repo, max_changed(), true);
    walk.differing(base, tree, &mut BString::default())?;
    Ok(walk.found)
}

/// Whether `tree` brings more changed paths than design §3.18 "Limits"
/// allows against `base` (each counted under every name it appears at, and
/// as many changed folders): the [`TOO_MANY`] entry naming where the bound
/// was passed, or `None`. Only counts, so it costs one read of each
/// distinct (tree, base) pair, however many paths the tree expands to:
/// the check every command runs on a tree from elsewhere before anything
/// else walks it.
pub fn too_many(
    repo: &gix::Repository,
    base: Option<ObjectId>,
    tree: ObjectId,
) -> Result<Option<Invalid>> {
    let mut walk = Walk::new(repo, max_changed(), false);
    walk.differing(base, tree, &mut BString::default())?;
    Ok(walk.found.into_iter().find(|f| f.why == TOO_MANY))
}

struct Walk<'r> {
    repo: &'r gix::Repository,
    found: Vec<Invalid>,
    /// (tree, base) pairs walked already: a tree repeating one subtree
    /// under many names costs one walk of it.
    /// With the changed files and folders found below each (counted once
    /// per name it appears under, for the bound).
    seen: HashMap<(ObjectId, Option<ObjectId>), Counts>,
    /// Changed files (added or changed non-folder entries) and changed
    /// folders (each walked because it differs from its base) seen so far.
    changed: Counts,
    /// The bound on each: past it the tree is refused.
    max: u64,
    /// Check names, symlink targets and entry order (else only count).
    check: bool,
}

/// Changed files and changed folders.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    files: u64,
    folders: u64,
}

impl Counts {
    fn plus(self, o: Counts) -> Counts {
        Counts {
            files: self.files.saturating_add(o.files),
            folders: self.folders.saturating_add(o.folders),
        }
    }

    fn minus(self, o: Counts) -> Counts {
        Counts {
            files: self.files.saturating_sub(o.files),
            folders: self.folders.saturating_sub(o.folders),
        }
    }
}

/// The most changed paths a task may bring (design §3.18, limits): past it
/// the task is refused as `invalid_path`, naming [`TOO_MANY`].
pub const MAX_CHANGED: u64 = 1_000_000;

/// The reason a task over [`MAX_CHANGED`] is refused with.
pub const TOO_MANY: &str = "too many changed paths (more than 1000000)";

/// [`MAX_CHANGED`], or `GIT_DELEGATE_TEST_MAX_CHANGED_PATHS` when set (a
/// test's cheaper bound; documented as for tests only).
pub fn max_changed() -> u64 {
    std::env::var("GIT_DELEGATE_TEST_MAX_CHANGED_PATHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_CHANGED)
}

/// A decoded tree's entries: name, kind, id.
type Entries = Vec<(BString, EntryKind, ObjectId)>;

/// A tree being walked (`Walk::differing`): what is left of its entries,
/// its base's entries by name, the counts before it, and the length of its
/// path.
struct Frame {
    base: Option<ObjectId>,
    id: ObjectId,
    entries: std::vec::IntoIter<(BString, EntryKind, ObjectId)>,
    base_entries: HashMap<BString, (EntryKind, ObjectId)>,
    before: Counts,
    at: usize,
}

impl<'r> Walk<'r> {
    fn new(repo: &'r gix::Repository, max: u64, check: bool) -> Walk<'r> {
        Walk {
            repo,
            found: Vec::new(),
            seen: HashMap::new(),
            changed: Counts::default(),
            max,
            check,
        }
    }

    fn over(&self) -> bool {
        self.changed.files > self.max || self.changed.folders > self.max
    }

    fn full(&self) -> bool {
        self.found.len() >= NAMED || self.over()
    }

    /// Count `n` more changed files and folders; past the bound the task is
    /// refused, naming the folder where it was passed.
    fn count(&mut self, n: Counts, at: &BString) {
        let was = self.over();
        self.changed = self.changed.plus(n);
        if self.over() && !was {
            let path = if at.is_empty() {
                BString::from(".")
            } else {
                at.clone()
            };
            self.found.push(Invalid {
                path,
                why: TOO_MANY,
            });
        }
    }

    /// The entries of the tree `id`, or `None` when it cannot be decoded.
    fn entries(&self, id: ObjectId) -> Result<Option<Entries>> {
        let tree = self
            .repo
            .find_tree(id)
            .map_err(|source| ValidateError::Tree { id, source })?;
        let Ok(decoded) = tree.decode() else {
            return Ok(None);
        };
        Ok(Some(
            decoded
                .entries
                .iter()
                .map(|e| (e.filename.to_owned(), e.mode.kind(), e.oid.to_owned()))
                .collect(),
        ))
    }

    /// Walk the tree `id` where it differs from `base`, at `at`: depth
    /// first, with a stack of its own (never the thread's: a tree may be
    /// nested as deep as its bytes allow).
    fn differing(&mut self, base: Option<ObjectId>, id: ObjectId, at: &mut BString) -> Result<()> {
        let mut stack: Vec<Frame> = Vec::new();
        self.enter(base, id, at, &mut stack)?;
        while let Some(top) = stack.last_mut() {
            let next = if self.full() {
                None
            } else {
                top.entries.next()
            };
            let Some((n, kind, oid)) = next else {
                // Done (or full): its counts are remembered for its other names.
                let done = stack.pop().unwrap_or_else(|| unreachable!());
                let n = self.changed.minus(done.before);
                self.seen.insert((done.id, done.base), n);
                continue;
            };
            let base_entry = top.base_entries.get(&n).copied();
            at.truncate(top.at);
            if !at.is_empty() {
                at.push(b'/');
            }
            at.extend_from_slice(&n);
            self.entry((&n, kind, oid), base_entry, at, &mut stack)?;
        }
        Ok(())
    }

    /// Start walking the tree `id` at `at` (pushed on `stack`), unless it
    /// is its base, was walked already (its counts count again under this
    /// name) or cannot be walked (named).
    fn enter(
        &mut self,
        base: Option<ObjectId>,
        id: ObjectId,
        at: &BString,
        stack: &mut Vec<Frame>,
    ) -> Result<()> {
        if self.full() || Some(id) == base {
            return Ok(());
        }
        if let Some(&n) = self.seen.get(&(id, base)) {
            self.count(n, at);
            return Ok(());
        }
        let before = self.changed;
        self.seen.insert((id, base), Counts::default());
        // This folder differs from its base: it counts itself.
        self.count(
            Counts {
                files: 0,
                folders: 1,
            },
            at,
        );
        let entries = match self.full() {
            true => None,
            false => self.entries(id)?,
        };
        let walkable = match &entries {
            None if !self.full() => {
                self.push(at.clone(), "malformed tree object");
                false
            }
            None => false,
            // Which of two entries git would check out is not defined: the
            // tree is refused, naming the entry (design §3.18, limits).
            Some(e) => match disorder(e).filter(|_| self.check) {
                Some((n, why)) => {
                    let mut p = at.clone();
                    if !p.is_empty() {
                        p.push(b'/');
                    }
                    p.extend_from_slice(&n);
                    self.push(p, why);
                    false
                }
                None => true,
            },
        };
        let (Some(entries), true) = (entries, walkable) else {
            let n = self.changed.minus(before);
            self.seen.insert((id, base), n);
            return Ok(());
        };
        let base_entries: HashMap<BString, (EntryKind, ObjectId)> = match base {
            Some(b) => self
                .entries(b)?
                .unwrap_or_default()
                .into_iter()
                .map(|(n, k, i)| (n, (k, i)))
                .collect(),
            None => HashMap::new(),
        };
        stack.push(Frame {
            base,
            id,
            entries: entries.into_iter(),
            base_entries,
            before,
            at: at.len(),
        });
        Ok(())
    }

    /// One entry of a tree being walked, at `at`, with its base's entry of
    /// the same name: counted, checked, and a folder that differs entered.
    fn entry(
        &mut self,
        (n, kind, oid): (&BString, EntryKind, ObjectId),
        base_entry: Option<(EntryKind, ObjectId)>,
        at: &mut BString,
        stack: &mut Vec<Frame>,
    ) -> Result<()> {
        if kind != EntryKind::Tree && base_entry != Some((kind, oid)) {
            self.count(
                Counts {
                    files: 1,
                    folders: 0,
                },
                at,
            );
            if self.full() {
                return Ok(());
            }
        }
        if self.check && at.len() > TARGET_MAX {
            // No system call takes it (`PATH_MAX`): git cannot check it
            // out either, and nothing below it is walked.
            self.push(at.clone(), "path longer than 4095 bytes");
            return Ok(());
        }
        let why = match self.check {
            true => name(n.as_bstr(), kind),
            false => None,
        };
        if let Some(why) = why {
            self.below(kind, oid, at, why)?;
        } else if kind == EntryKind::Link {
            if self.check && base_entry != Some((kind, oid)) {
                if let Some(why) = self.link(oid)? {
                    self.push(at.clone(), why);
                }
            }
        } else if kind == EntryKind::Tree {
            let sub_base = match base_entry {
                Some((EntryKind::Tree, b)) => Some(b),
                _ => None,
            };
            if sub_base != Some(oid) {
                self.enter(sub_base, oid, at, stack)?;
            }
        }
        Ok(())
    }

    /// Why the symlink blob `id` is refused as a target, if it is.
    fn link(&self, id: ObjectId) -> Result<Option<&'static str>> {
        let Ok(blob) = self.repo.find_object(id) else {
            return Ok(Some("missing symlink target"));
        };
        Ok(target(&blob.data))
    }

    /// Name what is at and below the offending entry at `at`: its files,
    /// or itself.
    fn below(
        &mut self,
        kind: EntryKind,
        id: ObjectId,
        at: &mut BString,
        why: &'static str,
    ) -> Result<()> {
        let before = self.found.len();
        if kind == EntryKind::Tree {
            let mut budget = BELOW_BUDGET;
            self.leaves(id, at, why, &mut budget)?;
        }
        if self.found.len() == before {
            self.push(at.clone(), why);
        }
        Ok(())
    }

    fn leaves(
        &mut self,
        id: ObjectId,
        at: &mut BString,
        why: &'static str,
        budget: &mut usize,
    ) -> Result<()> {
        let Some(entries) = self.entries(id)? else {
            return Ok(());
        };
        for (n, kind, oid) in entries {
            if self.full() || *budget == 0 {
                return Ok(());
            }
            *budget -= 1;
            let len = at.len();
            at.push(b'/');
            at.extend_from_slice(&n);
            if kind == EntryKind::Tree {
                self.leaves(oid, at, why, budget)?;
            } else {
                self.push(at.clone(), why);
            }
            at.truncate(len);
        }
        Ok(())
    }

    fn push(&mut self, path: BString, why: &'static str) {
        if !self.full() && !self.found.iter().any(|f| f.path == path) {
            self.found.push(Invalid { path, why });
        }
    }
}

/// The first entry of a tree that repeats a name or comes out of git's
/// order (names compared as bytes, a folder's with a `/` after it), and
/// which: git's fsck flags both (`duplicateEntries`, `treeNotSorted`).
fn disorder(entries: &Entries) -> Option<(BString, &'static str)> {
    let key = |n: &BString, k: EntryKind| {
        let mut v = n.to_vec();
        if k == EntryKind::Tree {
            v.push(b'/');
        }
        v
    };
    let mut names: HashSet<&BString> = HashSet::new();
    let mut last: Option<Vec<u8>> = None;
    for (n, k, _) in entries {
        if !names.insert(n) {
            return Some((n.clone(), "duplicate tree entry"));
        }
        let this = key(n, *k);
        if last.as_ref().is_some_and(|l| *l >= this) {
            return Some((n.clone(), "tree entries out of order"));
        }
        last = Some(this);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_and_unsorted_entries_are_found() {
        let e = |n: &str, k| (BString::from(n), k, ObjectId::null(gix::hash::Kind::Sha1));
        let ok = [
            e("a", EntryKind::Blob),
            e("a-b", EntryKind::Blob),
            e("a", EntryKind::Tree),
        ];
        // "a-b" < "a/" : a folder sorts as if its name ended in `/`.
        assert_eq!(disorder(&vec![ok[0].clone(), ok[1].clone()]), None);
        assert_eq!(disorder(&vec![ok[1].clone(), ok[2].clone()]), None);
        assert_eq!(
            disorder(&vec![e("a", EntryKind::Blob), e("a", EntryKind::Blob)]).map(|d| d.1),
            Some("duplicate tree entry")
        );
        assert_eq!(
            disorder(&vec![e("b", EntryKind::Blob), e("a", EntryKind::Blob)]).map(|d| d.1),
            Some("tree entries out of order")
        );
    }
}
