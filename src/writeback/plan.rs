//! Planning a write-back (step 1 of `writeback`'s "Order of operations"):
//! per path its `S` and `F` entries, its temp and aside names, the folders
//! it creates, and folders standing where `F` puts a file (moved aside
//! whole). Reads the disk only.
//!
//! Owns: `make_plan`, which turns the writes into a journal's [`Plan`].
//! Never: changes the disk, or writes the journal (`journal` does).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;

use super::dirs::{Dirs, Disk};
use super::failure::{Failure, PathProblem};
use super::journal::{Item, Plan};
use super::paths::{depth, join, parents, split};
use super::PathWrite;

/// The plan of writing `writes` below `root` (open as `dirs`); `token`
/// makes the temp and aside names (`.gd-<token>-<n>.tmp`, `.orig`).
pub(super) fn make_plan(
    dirs: &mut Dirs,
    writes: &[PathWrite],
    root: &Path,
    token: &str,
) -> Result<Plan, Failure> {
    let mut sorted: Vec<&PathWrite> = writes
        .iter()
        .filter(|w| w.old.is_some() || w.new.is_some())
        .collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    refuse_unplannable(&sorted)?;
    let mut items = asides_for_folders(dirs, &sorted, token);
    let mkdirs = place(dirs, &mut items, token);
    Ok(Plan::new(root, token, items, mkdirs))
}

/// The write-back's own name for the `n`th item's temp or aside file.
fn name(token: &str, n: usize, ext: &str) -> String {
    format!(".gd-{token}-{n}.{ext}")
}

/// A folder or submodule entry, or a path that is no relative path: no
/// caller plans one (nothing was changed).
fn refuse_unplannable(sorted: &[&PathWrite]) -> Result<(), Failure> {
    for w in sorted {
        for (kind, _) in w.old.iter().chain(w.new.iter()) {
            if matches!(kind, EntryKind::Tree | EntryKind::Commit) {
                return Err(Failure::path(w.path.as_bstr(), PathProblem::NotAFile));
            }
        }
        if w.path.is_empty()
            || w.path
                .split_str("/")
                .any(|c| c.is_empty() || c == b"." || c == b"..")
        {
            return Err(Failure::path(w.path.as_bstr(), PathProblem::Invalid));
        }
    }
    Ok(())
}

/// One item per write; a folder standing where `F` puts a file (and `S`
/// has none) is moved aside whole.
fn asides_for_folders(dirs: &mut Dirs, sorted: &[&PathWrite], token: &str) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::with_capacity(sorted.len());
    for (n, w) in sorted.iter().enumerate() {
        let mut it = Item {
            path: w.path.clone(),
            old: w.old,
            new: w.new,
            temp: None,
            aside: None,
            aside_folder: false,
            covered: false,
            early: false,
            wrote: None,
        };
        let (parent, _) = split(w.path.as_bstr());
        if w.old.is_none() && w.new.is_some() && dirs.lstat_lenient(w.path.as_bstr()) == Disk::Dir {
            it.aside = Some(join(parent, name(token, n, "orig").as_bytes().as_bstr()));
            it.aside_folder = true;
        }
        items.push(it);
    }
    items
}

/// Each item's aside name (an original that goes away, unless a folder
/// above it is moved aside whole) and temp name (in the target folder, or
/// where a file still stands on the way, in the deepest existing folder);
/// the folders to create, shallowest first.
fn place(dirs: &mut Dirs, items: &mut [Item], token: &str) -> Vec<BString> {
    let folder_asides: HashSet<BString> = items
        .iter()
        .filter(|it| it.aside_folder)
        .map(|it| it.path.clone())
        .collect();
    let mut mkdirs: BTreeSet<BString> = BTreeSet::new();
    for (n, it) in items.iter_mut().enumerate() {
        let (parent, _) = split(it.path.as_bstr());
        if it.old.is_some() {
            it.covered = parents(it.path.as_bstr()).any(|p| folder_asides.contains(p));
            if !it.covered {
                it.aside = Some(join(parent, name(token, n, "orig").as_bytes().as_bstr()));
            }
        }
        if it.new.is_some() {
            let (temp_dir, blocked) = temp_folder(dirs, it.path.as_bstr(), &mut mkdirs);
            it.early = !blocked;
            let dir = if blocked { temp_dir.as_bstr() } else { parent };
            it.temp = Some(join(dir, name(token, n, "tmp").as_bytes().as_bstr()));
        }
    }
    let mut mkdirs: Vec<BString> = mkdirs.into_iter().collect();
    mkdirs.sort_by_key(|p| (depth(p.as_bstr()), p.clone()));
    mkdirs
}

/// The deepest existing folder above `path`, and whether a file (or
/// anything but a folder) stands on the way; every folder above `path`
/// from the first missing or blocked one on goes into `mkdirs`.
fn temp_folder(dirs: &mut Dirs, path: &BStr, mkdirs: &mut BTreeSet<BString>) -> (BString, bool) {
    let mut temp_dir: BString = BString::default();
    let mut blocked = false;
    let mut missing = false;
    for p in parents(path) {
        if blocked || missing {
            mkdirs.insert(p.into());
            continue;
        }
        match dirs.lstat_lenient(p) {
            Disk::Dir => temp_dir = p.into(),
            Disk::Absent => {
                missing = true;
                mkdirs.insert(p.into());
            }
            _ => {
                blocked = true;
                mkdirs.insert(p.into());
            }
        }
    }
    (temp_dir, blocked)
}
