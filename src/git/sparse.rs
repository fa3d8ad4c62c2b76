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
//! Its failures are `SparseError` (the file or index, and the cause);
//! `ops::explain` words them.
//! Never: writes `.git/config`, the source's index or its sparse-checkout
//! file, or any working-tree file.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Flags;

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

/// Which paths a sparse-checkout file takes in.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Cone mode: files at the top, every file below a recursive folder, and
    /// the files directly in a parent folder.
    Cone {
        recursive: std::collections::BTreeSet<BString>,
        parents: std::collections::BTreeSet<BString>,
    },
    /// Non-cone mode: gitignore-style patterns, the last match deciding.
    Patterns(Vec<gix::glob::Pattern>),
}

impl Matcher {
    /// Parse a sparse-checkout file; `cone`: `core.sparseCheckoutCone`. A
    /// cone-mode file git would not read as a cone is read as patterns, as
    /// git does.
    pub fn parse(text: &[u8], cone: bool) -> Matcher {
        if cone {
            if let Some(m) = parse_cone(text) {
                return m;
            }
        }
        Matcher::Patterns(
            lines(text)
                .filter_map(|l| gix::glob::parse(l.as_bytes()))
                .collect(),
        )
    }

    /// A cone of these folders (`/`-separated, no leading or trailing slash).
    pub fn cone(dirs: &[BString]) -> Matcher {
        let mut recursive = std::collections::BTreeSet::new();
        let mut parents = std::collections::BTreeSet::new();
        for d in dirs {
            recursive.insert(d.clone());
            let mut at = d.as_slice();
            while let Some(slash) = at.rfind_byte(b'/') {
                at = &at[..slash];
                parents.insert(BString::from(at));
            }
        }
        Matcher::Cone { recursive, parents }
    }

    /// Is the file at `path` inside the sparse checkout?
    pub fn includes(&self, path: &BStr) -> bool {
        match self {
            Matcher::Cone { recursive, parents } => {
                let parent = match path.rfind_byte(b'/') {
                    None => return true,
                    Some(i) => &path[..i],
                };
                if parents.contains(parent.as_bstr()) || recursive.contains(parent.as_bstr()) {
                    return true;
                }
                let mut at = parent;
                while let Some(i) = at.rfind_byte(b'/') {
                    at = &at[..i];
                    if recursive.contains(at.as_bstr()) {
                        return true;
                    }
                }
                false
            }
            Matcher::Patterns(patterns) => {
                // git's `path_in_sparse_checkout`: the path as a file, then
                // each of its folders, until one level is decided.
                let mut end = path.len();
                let mut is_dir = false;
                loop {
                    let p = &path[..end];
                    let base = p.rfind_byte(b'/').map(|i| i + 1);
                    let hit = patterns.iter().rev().find(|pat| {
                        pat.matches_repo_relative_path(
                            p.as_bstr(),
                            base,
                            Some(is_dir),
                            gix::glob::pattern::Case::Sensitive,
                            gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
                        )
                    });
                    if let Some(pat) = hit {
                        return !pat.is_negative();
                    }
                    match p.rfind_byte(b'/') {
                        Some(i) => {
                            end = i;
                            is_dir = true;
                        }
                        None => return false,
                    }
                }
            }
        }
    }
}

/// The lines of a sparse-checkout file (comments and blank lines left out).
fn lines(text: &[u8]) -> impl Iterator<Item = &BStr> {
    text.lines()
        .map(|l| l.trim_end().as_bstr())
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
}

/// A cone-mode file as git writes it: `/*`, `!/*/`, then for each parent
/// `/P/` + `!/P/*/`, and each recursive folder `/R/`. `None`: not a cone.
fn parse_cone(text: &[u8]) -> Option<Matcher> {
    let mut positive = std::collections::BTreeSet::new();
    let mut negative = std::collections::BTreeSet::new();
    for l in lines(text) {
        let l: &[u8] = l.as_ref();
        if l == b"/*" || l == b"!/*/" {
            continue;
        }
        if let Some(rest) = l.strip_prefix(b"!/") {
            let dir = rest.strip_suffix(b"/*/")?;
            negative.insert(unescape(dir));
        } else if let Some(rest) = l.strip_prefix(b"/") {
            let dir = rest
                .strip_suffix(b"/*")
                .or_else(|| rest.strip_suffix(b"/"))?;
            if dir.is_empty() || dir.contains(&b'*') && !dir.contains(&b'\\') {
                return None;
            }
            positive.insert(unescape(dir));
        } else {
            return None;
        }
    }
    let parents: std::collections::BTreeSet<BString> =
        positive.intersection(&negative).cloned().collect();
    let recursive = positive.difference(&negative).cloned().collect();
    Some(Matcher::Cone { recursive, parents })
}

fn unescape(s: &[u8]) -> BString {
    let mut out = Vec::with_capacity(s.len());
    let mut esc = false;
    for &b in s {
        if b == b'\\' && !esc {
            esc = true;
            continue;
        }
        esc = false;
        out.push(b);
    }
    out.into()
}

fn escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\' | b'!' | b'#') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

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

/// What every workspace of a batch gets.
#[derive(Debug, Clone)]
pub struct Workspaces {
    /// The sparse-checkout file written into each workspace's registration.
    pub config: Config,
    /// A path is checked out only where every one of these takes it in.
    matchers: Vec<Matcher>,
    /// The source's skip-worktree entries (sorted): outside whatever the
    /// patterns say, as in the source.
    skipped: Vec<BString>,
    /// What `git sparse-checkout list` prints in a workspace.
    pub list: Vec<String>,
}

impl Workspaces {
    /// The workspaces' configuration for a source `repo` and the
    /// `--sparse` folders `narrow` (checked); `None`: full workspaces.
    pub fn plan(repo: &gix::Repository, narrow: &[BString]) -> Result<Option<Workspaces>> {
        let source = Config::of(repo)?;
        if source.is_none() && narrow.is_empty() {
            return Ok(None);
        }
        let mut matchers = Vec::new();
        let mut skipped = Vec::new();
        if let Some(src) = &source {
            matchers.push(src.matcher());
            if let Some(cs) = Checkout::of(repo)? {
                let paths = cs.index.path_backing();
                skipped = cs
                    .index
                    .entries()
                    .iter()
                    .filter(|e| e.flags.contains(Flags::SKIP_WORKTREE))
                    .map(|e| e.path_in(paths).to_owned())
                    .collect();
            }
        }
        let config = match (&source, narrow.is_empty()) {
            (Some(src), true) => src.clone(),
            (src, _) => {
                // The cone of the `--sparse` folders, within the source's
                // cone where it has one.
                let dirs: Vec<BString> = match src.as_ref().map(Config::matcher) {
                    Some(Matcher::Cone { recursive, .. }) => {
                        let mut dirs = Vec::new();
                        for d in narrow {
                            let inside =
                                recursive.iter().any(|r| is_under(d.as_bstr(), r.as_bstr()));
                            if inside {
                                dirs.push(d.clone());
                            }
                            dirs.extend(
                                recursive
                                    .iter()
                                    .filter(|r| is_under(r.as_bstr(), d.as_bstr()) && *r != d)
                                    .cloned(),
                            );
                        }
                        dirs.sort();
                        dirs.dedup();
                        dirs
                    }
                    _ => narrow.to_vec(),
                };
                matchers.push(Matcher::cone(narrow));
                Config {
                    cone: true,
                    index_sparse: src.as_ref().and_then(|s| s.index_sparse),
                    file: cone_file(&dirs),
                }
            }
        };
        let list = match config.matcher() {
            Matcher::Cone { recursive, .. } => recursive
                .iter()
                .map(|d| String::from_utf8_lossy(d).into_owned())
                .collect(),
            Matcher::Patterns(_) => lines(&config.file)
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
        };
        Ok(Some(Workspaces {
            config,
            matchers,
            skipped,
            list,
        }))
    }

    /// Is `path` checked out in the workspaces?
    pub fn includes(&self, path: &BStr) -> bool {
        self.skipped
            .binary_search_by(|p| p.as_bstr().cmp(path))
            .is_err()
            && self.matchers.iter().all(|m| m.includes(path))
    }

    /// Mark the entries of a workspace's fresh index that are not checked
    /// out skip-worktree (the checkout then leaves them out), as git does.
    pub fn mark(&self, index: &mut gix::index::State) {
        let (entries, paths) = index.entries_mut_and_pathbacking();
        for e in entries.iter_mut() {
            if !self.includes(e.path_in(paths)) {
                e.flags.insert(Flags::SKIP_WORKTREE);
                // git needs the extended flags for the bit to be stored.
                e.flags.insert(Flags::EXTENDED);
            }
        }
    }

    /// Write a workspace's own sparse configuration into its registration
    /// folder `reg`: `info/sparse-checkout`, and `config.worktree` where
    /// the repository `common_dir` reads per-worktree configuration (never
    /// `.git/config`: without that extension the workspace has the
    /// skip-worktree bits and this file only, design §3.15).
    pub fn write(&self, common_dir: &Path, reg: &Path) -> Result<()> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| SparseError::Write { path: p, source }
        };
        let info = reg.join("info");
        std::fs::create_dir_all(&info).map_err(io(&info))?;
        let file = info.join("sparse-checkout");
        std::fs::write(&file, &self.config.file).map_err(io(&file))?;
        if worktree_config(common_dir) {
            let mut text = format!(
                "[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = {}\n",
                self.config.cone
            );
            if let Some(s) = self.config.index_sparse {
                text.push_str(&format!("[index]\n\tsparse = {s}\n"));
            }
            let cfg = reg.join("config.worktree");
            std::fs::write(&cfg, text).map_err(io(&cfg))?;
        }
        Ok(())
    }
}

/// Is `a` the folder `b` or below it?
fn is_under(a: &BStr, b: &BStr) -> bool {
    a == b || (a.starts_with(b.as_bytes()) && a.get(b.len()) == Some(&b'/'))
}

/// Does the repository read per-worktree configuration
/// (`extensions.worktreeConfig`)? Read from `config` itself: the
/// extension lives there.
fn worktree_config(common_dir: &Path) -> bool {
    let Ok(file) = gix::config::File::from_path_no_includes(
        common_dir.join("config"),
        gix::config::Source::Local,
    ) else {
        return false;
    };
    matches!(file.boolean("extensions.worktreeConfig"), Ok(Some(true)))
}

/// A cone-mode file as `git sparse-checkout set --cone DIRS` writes it.
fn cone_file(dirs: &[BString]) -> Vec<u8> {
    let Matcher::Cone { recursive, parents } = Matcher::cone(dirs) else {
        return Vec::new();
    };
    // A folder below another recursive one adds nothing.
    let recursive: Vec<&BString> = recursive
        .iter()
        .filter(|d| {
            !recursive
                .iter()
                .any(|r| r != *d && is_under(d.as_bstr(), r.as_bstr()))
        })
        .collect();
    let mut out = b"/*\n!/*/\n".to_vec();
    for p in parents.iter().filter(|p| !recursive.contains(p)) {
        let e = escape(p);
        out.extend_from_slice(b"/");
        out.extend_from_slice(&e);
        out.extend_from_slice(b"/\n!/");
        out.extend_from_slice(&e);
        out.extend_from_slice(b"/*/\n");
    }
    for r in recursive {
        out.extend_from_slice(b"/");
        out.extend_from_slice(&escape(r));
        out.extend_from_slice(b"/\n");
    }
    out
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
