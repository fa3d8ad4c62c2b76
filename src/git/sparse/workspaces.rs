//! What every workspace of a batch gets of a sparse checkout: the
//! source's configuration narrowed by `--sparse` folders, the
//! skip-worktree bits of a workspace's index, and its own sparse files
//! (the registration's `info/sparse-checkout`, and `config.worktree` only
//! where the repository already has `extensions.worktreeConfig`).
//!
//! Owns: `Workspaces` and the cone file it writes.
//! Never: writes the source's sparse-checkout file or `.git/config`.

use super::matcher::{escape, lines};
use super::*;

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
pub(super) fn cone_file(dirs: &[BString]) -> Vec<u8> {
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
