//! Moving a proven idle workspace of the pool to a new baseline (design
//! §3.20): the paths whose entries differ between its record and the
//! baseline (`fit`, refusing one whose differences touch a
//! `.gitattributes`, `.gitignore` or `.gitmodules`) and writing only those
//! (`move_to`), through handles below the workspace.
//!
//! Owns: the differences and the writes that make them.
//! Never: follows a symlink inside a workspace, or writes a path that is
//! not among the differences.

use super::*;

/// One path whose entry differs between an idle workspace's record and
/// the baseline: its mode and blob on either side (`None`: absent).
pub struct Change {
    pub path: BString,
    pub old: Option<(Mode, ObjectId)>,
    pub new: Option<(Mode, ObjectId)>,
}

/// A proven idle workspace that fits a baseline: the paths to change.
pub struct Fit {
    pub proven: Proven,
    changes: Vec<Change>,
}

impl Fit {
    /// Its slot's folder and registration.
    pub fn root(&self) -> &Path {
        &self.proven.rec.root
    }

    pub fn worktree_id(&self) -> String {
        self.proven.rec.worktree_id()
    }

    /// How many paths its move to the baseline writes or removes.
    pub fn changes(&self) -> usize {
        self.changes.len()
    }
}

/// The entries that differ between two indexes of plain stage-0 entries,
/// both sorted by path: what moving a workspace from `old` to `new`
/// changes.
fn changes_between(old: &gix::index::State, new: &gix::index::State) -> Vec<Change> {
    let (a, ap) = (old.entries(), old.path_backing());
    let (b, bp) = (new.entries(), new.path_backing());
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    let side = |e: &gix::index::Entry| Some((e.mode, e.id));
    while i < a.len() || j < b.len() {
        let pa = a.get(i).map(|e| e.path_in(ap));
        let pb = b.get(j).map(|e| e.path_in(bp));
        match (pa, pb) {
            (Some(x), Some(y)) if x == y => {
                if (a[i].mode, a[i].id) != (b[j].mode, b[j].id) {
                    out.push(Change {
                        path: x.to_owned(),
                        old: side(&a[i]),
                        new: side(&b[j]),
                    });
                }
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                out.push(Change {
                    path: x.to_owned(),
                    old: side(&a[i]),
                    new: None,
                });
                i += 1;
            }
            (Some(x), None) => {
                out.push(Change {
                    path: x.to_owned(),
                    old: side(&a[i]),
                    new: None,
                });
                i += 1;
            }
            (_, Some(y)) => {
                out.push(Change {
                    path: y.to_owned(),
                    old: None,
                    new: side(&b[j]),
                });
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// Does the proven idle workspace fit the baseline whose index is
/// `baseline`: its paths that differ from it touch no `.gitattributes`,
/// `.gitignore` nor `.gitmodules`, and the baseline holds only what a
/// checkout writes (no submodule)? One that does not is removed (only
/// while ours) and its record with it.
pub fn fit(
    common_dir: &Path,
    state_dir: &Path,
    proven: Proven,
    baseline: &gix::index::State,
) -> Option<Fit> {
    let changes = changes_between(&proven.record, baseline);
    let plain = changes.iter().all(|c| {
        !rules_file(c.path.as_ref())
            && c.new.is_none_or(|(m, _)| {
                matches!(m, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
            })
    });
    if plain {
        return Some(Fit { proven, changes });
    }
    let rec = proven.rec;
    drop(proven.fd);
    let _ = remove_idle(common_dir, &rec);
    let _ = record::remove(state_dir, &rec.id);
    None
}

/// Move the claimed workspace of `fit` (at `p.root`) to the baseline
/// whose index is `baseline`: the old side of every path that differs
/// removed through the folder's handle, deepest first, never following a
/// symlink, the folders that leaves empty removed, the new side checked
/// out (exclusive creation: an ignored file in the way fails the move);
/// its index the baseline with the stat data the proof vouched for (none
/// where it could not: git reads those files once) and fresh ones for
/// the written paths, settled as a checkout's; written with its stat
/// record.
pub fn move_to(
    common_dir: &Path,
    fit: Fit,
    p: &Plan,
    baseline: &gix::index::State,
) -> Result<(), WorkspaceError> {
    let Fit { proven, changes } = fit;
    let dir = proven.fd.as_fd();
    for c in changes.iter().rev() {
        if c.old.is_some() {
            unlink_beneath(dir, c.path.as_ref(), &p.root)?;
        }
    }
    for c in changes.iter().rev().filter(|c| c.old.is_some()) {
        let mut path: &[u8] = c.path.as_ref();
        while let Some(cut) = path.rfind_byte(b'/') {
            path = &path[..cut];
            if rustix::fs::unlinkat(dir, OsStr::from_bytes(path), rustix::fs::AtFlags::REMOVEDIR)
                .is_err()
            {
                break;
            }
        }
    }
    let repo = crate::git::repo::open_worktree_of(&p.root, common_dir)?;
    let mut index = baseline.clone();
    let written: HashSet<&BStr> = changes
        .iter()
        .filter(|c| c.new.is_some())
        .map(|c| c.path.as_ref())
        .collect();
    let keep: Vec<bool> = index
        .entries()
        .iter()
        .map(|e| !written.contains(e.path(&index)))
        .collect();
    let skip = gix::index::entry::Flags::SKIP_WORKTREE;
    for (e, k) in index.entries_mut().iter_mut().zip(&keep) {
        if *k {
            e.flags.insert(skip);
        }
    }
    let out = checkout(&repo, &mut index, &p.root, 1);
    for e in index.entries_mut() {
        e.flags.remove(skip);
    }
    out?;
    // The unchanged entries take the proof's stat data (same path, mode
    // and blob: both indexes are sorted by path).
    let (old, old_paths) = (proven.record.entries(), proven.record.path_backing());
    let mut oi = 0;
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for (e, k) in entries.iter_mut().zip(&keep) {
        if !*k {
            continue;
        }
        let path = e.path_in(paths);
        while oi < old.len() && old[oi].path_in(old_paths) < path {
            oi += 1;
        }
        e.stat = old
            .get(oi)
            .filter(|o| o.path_in(old_paths) == path && (o.id, o.mode) == (e.id, e.mode))
            .map(|o| o.stat)
            .unwrap_or_default();
    }
    drop(proven);
    crate::sys::interrupt::pause("pool-moved");
    settle(
        &[p.root.as_path()],
        std::slice::from_mut(&mut index),
        cores(),
    )?;
    super::verification::write_index(common_dir, p, index)
}

/// Remove `rel` below `dir` (a file or link, never followed), reaching its
/// folder one name at a time without following a symlink. Gone already
/// is fine.
fn unlink_beneath(dir: BorrowedFd<'_>, rel: &BStr, root: &Path) -> Result<(), WorkspaceError> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    let io = |e: Errno| WorkspaceError::RemoveIn {
        file: crate::sys::paths::quote(rel),
        root: root.to_path_buf(),
        source: e.into(),
    };
    let mut parts: Vec<&[u8]> = rel.split_str("/").collect();
    let Some(leaf) = parts.pop() else {
        return Ok(());
    };
    let mut held: Option<OwnedFd> = None;
    for part in parts {
        let at = held.as_ref().map_or(dir, |f| f.as_fd());
        match rustix::fs::openat(
            at,
            OsStr::from_bytes(part),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(f) => held = Some(f),
            // Not there, or no folder (a symlink included): nothing of it below.
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(()),
            Err(e) => return Err(io(e)),
        }
    }
    let at = held.as_ref().map_or(dir, |f| f.as_fd());
    match rustix::fs::unlinkat(at, OsStr::from_bytes(leaf), AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(io(e)),
    }
}
