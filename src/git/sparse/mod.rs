//! Sparse checkouts (design §3.15): a source that holds only part of its
//! tree, and workspaces that hold only that part (or less, with `prepare
//! --sparse`).
//!
//! Owns: reading a worktree's sparse-checkout configuration
//! (`core.sparseCheckout`, `core.sparseCheckoutCone`, `index.sparse` and
//! `<git-dir>/info/sparse-checkout`); deciding, as git does, whether a path
//! is inside it (cone rules: top-level files, recursive folders and the
//! files directly in their parents; non-cone rules: gitignore-style
//! patterns, the last match deciding, a folder's match covering what is
//! below it); what is the source's checkout (`Checkout`: a tracked path by
//! its index entry's skip-worktree bit, any other by the patterns); the
//! workspaces' configuration (`Workspaces`: the source's, narrowed by
//! `--sparse` folders), the skip-worktree bits of a workspace's index
//! (`Workspaces::mark`; `mark_workspace` for one rebuilt from a tree, by
//! the workspace's own patterns) and its own sparse files (`Workspaces::write`: the
//! registration's `info/sparse-checkout`, and `config.worktree` only where
//! the repository already has `extensions.worktreeConfig`); the paths of a
//! proposal outside the source's checkout (`outside`, apply's
//! `outside_sparse_checkout`).
//! The patterns' rules are `matcher`'s, the workspaces' configuration
//! `workspaces`'. Its failures are `SparseError` (the file or index, and the cause);
//! `ops::explain` words them.
//! Never: writes `.git/config`, the source's index or its sparse-checkout
//! file, or any working-tree file.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Flags;

mod matcher;
mod workspaces;

pub use matcher::Matcher;
#[cfg(test)]
use workspaces::cone_file;
pub use workspaces::Workspaces;

/// Why a sparse checkout could not be read, expanded or written.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A worktree's `info/sparse-checkout` that exists but cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The index of a sparse worktree.
    #[error("cannot read the index {}", path.display())]
    Index {
        path: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// A folder entry of a sparse index whose tree cannot be read.
    #[error("cannot read a folder of the sparse index")]
    Expand {
        #[source]
        source: gix::Error,
    },
    /// A `--sparse` folder that is no folder path of the repository.
    #[error("--sparse {pattern:?} is not a folder of the repository")]
    BadPattern { pattern: String },
    /// A workspace's own sparse files in its registration folder.
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

type Result<T, E = SparseError> = std::result::Result<T, E>;

/// A worktree's sparse-checkout configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `core.sparseCheckoutCone` (git's default: true).
    pub cone: bool,
    /// `index.sparse`, where set.
    pub index_sparse: Option<bool>,
    /// The sparse-checkout file as it is.
    pub file: Vec<u8>,
}

impl Config {
    /// The configuration of `repo`'s worktree; `None` where
    /// `core.sparseCheckout` is not true.
    pub fn of(repo: &gix::Repository) -> Result<Option<Config>> {
        let config = repo.config_snapshot();
        if config.boolean("core.sparseCheckout") != Some(true) {
            return Ok(None);
        }
        let cone = config.boolean("core.sparseCheckoutCone").unwrap_or(true);
        let index_sparse = config.boolean("index.sparse");
        let path = repo.git_dir().join("info").join("sparse-checkout");
        let file = match std::fs::read(&path) {
            Ok(f) => f,
            // git reads a missing file as "nothing but the top folder's files"
            // in cone mode and as "nothing" otherwise.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(SparseError::Read { path, source }),
        };
        Ok(Some(Config {
            cone,
            index_sparse,
            file,
        }))
    }

    pub fn matcher(&self) -> Matcher {
        Matcher::parse(&self.file, self.cone)
    }
}

/// The source's sparse checkout, as apply must respect it: a tracked path
/// is in it unless its index entry is skip-worktree (git keeps a modified
/// file outside the patterns on disk), any other path by the patterns.
pub struct Checkout {
    matcher: Matcher,
    index: gix::index::State,
    /// A workspace's root: a skip-worktree file on disk there counts as
    /// checked out (the worker made it).
    root: Option<std::path::PathBuf>,
}

impl Checkout {
    /// `None` where `repo`'s worktree is not sparse.
    pub fn of(repo: &gix::Repository) -> Result<Option<Checkout>> {
        let Some(config) = Config::of(repo)? else {
            return Ok(None);
        };
        Ok(Some(Checkout {
            matcher: config.matcher(),
            index: read_index(repo)?,
            root: None,
        }))
    }

    /// A task's workspace's sparse checkout, as refresh keeps it (its own
    /// `info/sparse-checkout`, which it has even where per-worktree
    /// configuration is off); `None`: the workspace is whole.
    pub fn of_workspace(repo: &gix::Repository) -> Result<Option<Checkout>> {
        let Some(matcher) = workspace_matcher(repo)? else {
            return Ok(None);
        };
        Ok(Some(Checkout {
            matcher,
            index: read_index(repo)?,
            root: repo.workdir().map(Path::to_path_buf),
        }))
    }

    pub fn includes(&self, path: &BStr) -> bool {
        match self.index.entry_by_path(path) {
            Some(e) if e.flags.contains(Flags::SKIP_WORKTREE) => {
                self.root.as_ref().is_some_and(|r| {
                    r.join(crate::sys::paths::to_os(path))
                        .symlink_metadata()
                        .is_ok()
                })
            }
            Some(_) => true,
            None => self.matcher.includes(path),
        }
    }

    /// Mark the entries of `index` (a workspace's new index) that are not
    /// checked out skip-worktree.
    pub fn mark(&self, index: &mut gix::index::State) {
        let (entries, paths) = index.entries_mut_and_pathbacking();
        for e in entries.iter_mut() {
            if e.stage_raw() == 0 && !self.includes(e.path_in(paths)) {
                e.flags.insert(Flags::SKIP_WORKTREE | Flags::EXTENDED);
            }
        }
    }
}

/// A task's workspace's own sparse-checkout patterns (its
/// `info/sparse-checkout`, read as `core.sparseCheckoutCone` says);
/// `None`: the workspace is whole.
fn workspace_matcher(repo: &gix::Repository) -> Result<Option<Matcher>> {
    let path = repo.git_dir().join("info").join("sparse-checkout");
    let file = match std::fs::read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SparseError::Read { path, source }),
    };
    let cone = repo
        .config_snapshot()
        .boolean("core.sparseCheckoutCone")
        .unwrap_or(true);
    Ok(Some(Matcher::parse(&file, cone)))
}

/// Mark skip-worktree the entries of `index`, a task's workspace's index
/// made anew from a tree because its own could not be read (design §3.2
/// step 1), that the workspace's sparse-checkout patterns leave out: its
/// own files say what prepare marked, the unreadable index cannot.
pub fn mark_workspace(repo: &gix::Repository, index: &mut gix::index::State) -> Result<()> {
    let Some(matcher) = workspace_matcher(repo)? else {
        return Ok(());
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for e in entries.iter_mut() {
        if e.stage_raw() == 0 && !matcher.includes(e.path_in(paths)) {
            e.flags.insert(Flags::SKIP_WORKTREE | Flags::EXTENDED);
        }
    }
    Ok(())
}

/// Expand a sparse index (design §3.15): each folder entry (a skip-worktree
/// entry that names a tree) becomes one skip-worktree entry per file of
/// that tree, as git expands it for commands that need every path. The
/// result is an ordinary index (the snapshot's HEAD-to-index diff refuses
/// a sparse one, and a workspace's files made below such a folder must be
/// compared like any other: design §3.2 step 1). The cache tree is left out.
pub fn unsparse(repo: &gix::Repository, index: &mut gix::index::State) -> Result<()> {
    use gix::index::entry::Mode;
    use gix::objs::tree::EntryKind;
    if !index.is_sparse() {
        return Ok(());
    }
    let err = |e: gix::Error| SparseError::Expand { source: e };
    let mut full = gix::index::State::new(repo.object_hash());
    full.set_timestamp(index.timestamp());
    let paths = index.path_backing();
    for e in index.entries() {
        let path = e.path_in(paths);
        if e.mode != Mode::DIR {
            full.dangerously_push_entry(e.stat, e.id, e.flags, e.mode, path);
            continue;
        }
        let tree = repo.find_tree(e.id).map_err(err)?;
        let mut rec = gix::traverse::tree::Recorder::default();
        tree.traverse().breadthfirst(&mut rec).map_err(err)?;
        let mut dir = path.to_owned();
        if !dir.ends_with(b"/") {
            dir.push(b'/');
        }
        for r in rec.records {
            let mode = match r.mode.kind() {
                EntryKind::Blob => Mode::FILE,
                EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
                EntryKind::Link => Mode::SYMLINK,
                EntryKind::Commit => Mode::COMMIT,
                EntryKind::Tree => continue,
            };
            let mut p = dir.clone();
            p.extend_from_slice(&r.filepath);
            full.dangerously_push_entry(
                gix::index::entry::Stat::default(),
                r.oid,
                Flags::SKIP_WORKTREE | Flags::EXTENDED,
                mode,
                p.as_bstr(),
            );
        }
    }
    full.sort_entries();
    *index = full;
    Ok(())
}

fn read_index(repo: &gix::Repository) -> Result<gix::index::State> {
    let path = repo.index_path();
    match gix::index::File::at(&path, repo.object_hash(), true, Default::default()) {
        Ok(f) => Ok(f.into()),
        Err(_) if !path.exists() => Ok(gix::index::State::new(repo.object_hash())),
        Err(source) => Err(SparseError::Index { path, source }),
    }
}

/// For each `(task, paths)`, the paths outside the sparse checkout of the
/// working tree of `repo` (design §3.15 `outside_sparse_checkout`); tasks
/// with none are left out. Nothing to read where the tree is not sparse.
pub fn outside<'a>(
    repo: &gix::Repository,
    tasks: impl IntoIterator<Item = (usize, &'a [BString])>,
) -> Result<Vec<(usize, Vec<BString>)>> {
    let Some(checkout) = Checkout::of(repo)? else {
        return Ok(Vec::new());
    };
    Ok(tasks
        .into_iter()
        .filter_map(|(task, paths)| {
            let out: Vec<BString> = paths
                .iter()
                .filter(|p| !checkout.includes(p.as_bstr()))
                .cloned()
                .collect();
            (!out.is_empty()).then_some((task, out))
        })
        .collect())
}

/// Check `prepare --sparse` folders (cone patterns): relative folder paths,
/// `/`-separated, no glob characters; given back without slashes at either
/// end.
pub fn check_patterns(patterns: &[String]) -> Result<Vec<BString>> {
    let mut out = Vec::new();
    for p in patterns {
        let trimmed = p.trim_matches('/');
        let bad = trimmed.is_empty()
            || trimmed
                .chars()
                .any(|c| matches!(c, '*' | '?' | '[' | '\\' | '!') || c.is_control())
            || trimmed
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == ".." || c == ".git");
        if bad {
            return Err(SparseError::BadPattern { pattern: p.clone() });
        }
        let b = BString::from(trimmed);
        if !out.contains(&b) {
            out.push(b);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(m: &Matcher, p: &str) -> bool {
        m.includes(p.into())
    }

    #[test]
    fn cone_rules_match_git() {
        let m = Matcher::parse(b"/*\n!/*/\n/a/\n!/a/*/\n/a/b/\n", true);
        assert!(inc(&m, "top"));
        assert!(inc(&m, "a/file"));
        assert!(inc(&m, "a/b/c/d"));
        assert!(!inc(&m, "a/x/y"));
        assert!(!inc(&m, "b/2"));
        let gen = cone_file(&["a/b".into()]);
        assert_eq!(gen, b"/*\n!/*/\n/a/\n!/a/*/\n/a/b/\n");
    }

    #[test]
    fn patterns_last_match_wins_and_folders_cover() {
        let m = Matcher::parse(b"/*\n!/b/\n/b/keep/\n", false);
        assert!(inc(&m, "top"));
        assert!(inc(&m, "a/1"));
        assert!(!inc(&m, "b/2"));
        assert!(inc(&m, "b/keep/x"));
        let none = Matcher::parse(b"", false);
        assert!(!inc(&none, "top"));
    }
}
