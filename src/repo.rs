//! Finding the source repository: its canonical common dir, working-tree
//! root, the caller's position in it, its config and state folder, and the
//! states git-delegate refuses to work in (bare, submodules).
//!
//! Owns: opening repositories with the options every engine step relies on.
//! Never: changes anything in the repository.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::{Error, Result};

/// Options for every repository git-delegate opens: compare stat data to the
/// nanosecond, so a file rewritten within the same second as the index is
/// never mistaken for unchanged.
pub fn open_options() -> gix::sec::trust::Mapping<gix::open::Options> {
    let overrides = ["gitoxide.core.useNsec=true", "gitoxide.core.useStdev=false"];
    let mut mapping = gix::sec::trust::Mapping::<gix::open::Options>::default();
    mapping.full = mapping.full.clone().config_overrides(overrides);
    mapping.reduced = mapping.reduced.clone().config_overrides(overrides);
    mapping
}

/// Open the repository whose working tree is exactly `dir` (a workspace).
pub fn open_worktree(dir: &Path) -> Result<gix::Repository> {
    let opts = open_options().full;
    gix::ThreadSafeRepository::open_opts(dir, opts)
        .map(|r| r.to_thread_local())
        .map_err(|e| {
            Error::git(
                format!("cannot open the repository at {}", dir.display()),
                e,
            )
        })
}

/// Canonicalise, tolerating paths git reports through `..` components.
pub fn canonical(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| Error::io(format!("cannot resolve {}", p.display()), e))
}

/// The source: a working tree of a repository, as seen from the caller's cwd.
pub struct Source {
    pub repo: gix::Repository,
    /// Canonical common dir (`.git` of the main worktree).
    pub common_dir: PathBuf,
    /// Canonical root of the working tree the command runs in.
    pub root: PathBuf,
    /// The caller's cwd relative to `root` (empty at the root).
    pub prefix: PathBuf,
    pub config: Config,
}

impl Source {
    /// Discover the repository around `cwd` and load `delegate.toml`.
    pub fn discover(cwd: &Path) -> Result<Source> {
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides_opts(
            cwd,
            Default::default(),
            open_options(),
        )
        .map_err(|_| {
            Error::state(
                "delegate::not_a_repository",
                format!("{} is not inside a git repository", cwd.display()),
                "run git delegate from inside a git working tree, or pass `git -C DIR delegate ...`",
            )
        })?
        .to_thread_local();
        let Some(workdir) = repo.workdir() else {
            return Err(Error::state(
                "delegate::bare_repository",
                format!("{} is a bare repository", repo.git_dir().display()),
                "git delegate needs a working tree to snapshot: run it inside a non-bare clone or a linked worktree",
            ));
        };
        let root = canonical(workdir)?;
        let common_dir = canonical(repo.common_dir())?;
        let cwd = canonical(cwd)?;
        // Inside the git dir (`.git/...`) there is no working-tree position:
        // that counts as the root.
        let git_dir = canonical(repo.git_dir())?;
        let prefix = if cwd.starts_with(&git_dir) || cwd.starts_with(&common_dir) {
            PathBuf::new()
        } else {
            cwd.strip_prefix(&root)
                .map(Path::to_path_buf)
                .unwrap_or_default()
        };
        let config = Config::load(&common_dir.join("delegate.toml"))?;
        Ok(Source {
            repo,
            common_dir,
            root,
            prefix,
            config,
        })
    }

    /// `<common-dir>/delegate`
    pub fn state_dir(&self) -> PathBuf {
        self.common_dir.join("delegate")
    }

    /// Refuse repositories with submodules (SPEC §3.1 step 1).
    pub fn refuse_submodules(&self) -> Result<()> {
        let has_gitmodules = self.root.join(".gitmodules").exists();
        let index = self
            .repo
            .index_or_empty()
            .map_err(|e| Error::git("cannot read the index", e))?;
        let gitlink = index
            .entries()
            .iter()
            .find(|e| e.mode == gix::index::entry::Mode::COMMIT);
        if has_gitmodules || gitlink.is_some() {
            let what = gitlink
                .map(|e| format!("submodule `{}`", e.path(&index)))
                .unwrap_or_else(|| "a .gitmodules file".into());
            return Err(Error::state(
                "delegate::submodules",
                format!("this repository has submodules ({what}), which git delegate does not support yet"),
                "use git delegate in a repository without submodules; support is planned",
            ));
        }
        Ok(())
    }

    /// Folder name of the repository's main working tree (SPEC §2).
    pub fn repo_name(&self) -> String {
        let main = if self.common_dir.file_name().is_some_and(|n| n == ".git") {
            self.common_dir.parent().map(Path::to_path_buf)
        } else {
            None
        };
        main.as_deref()
            .or(Some(self.common_dir.as_path()))
            .and_then(|p| p.file_name())
            .map(|n| {
                let n = n.to_string_lossy();
                safe_name(n.strip_suffix(".git").unwrap_or(&n))
            })
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "repo".into())
    }

    /// The main working tree, when the common dir is an ordinary `.git`
    /// folder inside it (not a bare repository or a separate git dir).
    pub fn main_worktree(&self) -> Option<PathBuf> {
        let parent = self.common_dir.parent()?;
        (self.common_dir.file_name()? == ".git" && !self.repo.is_bare())
            .then(|| parent.to_path_buf())
    }

    /// First 12 hex digits of the SHA-256 of the canonical common dir.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        use std::os::unix::ffi::OsStrExt;
        let digest = sha2::Sha256::digest(self.common_dir.as_os_str().as_bytes());
        hex(&digest)[..12].to_string()
    }

    /// The folder holding this repository's workspaces: `<root>/<repo-name>-<fp>`.
    pub fn workspace_base(&self) -> Result<PathBuf> {
        let root = match &self.config.root {
            Some(r) => r.clone(),
            None => default_workspace_root()?,
        };
        let root = if root.is_absolute() {
            root
        } else {
            self.root.join(root)
        };
        refuse_inside(&root, &self.root)?;
        // A linked-worktree source: the main working tree is a project too.
        if let Some(main) = self.main_worktree() {
            if main != self.root {
                refuse_inside(&root, &main)?;
            }
        }
        Ok(root.join(format!("{}-{}", self.repo_name(), self.fingerprint())))
    }
}

/// A folder name made safe for a workspace path: every character a
/// terminal would act on rather than show (control characters such as ESC
/// and newline, and the Unicode format characters that reorder text)
/// becomes `_`. Ordinary names, Unicode letters included, stay as they are,
/// so existing workspace paths do not move.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| if crate::ui::is_unprintable(c) { '_' } else { c })
        .collect()
}

/// `$XDG_DATA_HOME/git-delegate/worktrees`, else `~/.local/share/...`.
pub fn default_workspace_root() -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Ok(PathBuf::from(x).join("git-delegate/worktrees"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/git-delegate/worktrees")),
        None => Err(Error::usage(
            "delegate::no_workspace_root",
            "neither XDG_DATA_HOME nor HOME is set, so there is no default workspace root",
            "set `workspace.root` in .git/delegate.toml",
        )),
    }
}

/// Resolve the deepest existing ancestor so a not-yet-created root compares
/// correctly against the canonical source root.
fn resolve_lenient(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    out
}

fn refuse_inside(workspace_root: &Path, source_root: &Path) -> Result<()> {
    let resolved = resolve_lenient(workspace_root);
    if resolved.starts_with(source_root) {
        return Err(Error::usage(
            "delegate::workspace_root_inside_source",
            format!(
                "the workspace root {} is inside the source working tree {}",
                resolved.display(),
                source_root.display()
            ),
            "tools such as cargo, npm and eslint search parent folders; set `workspace.root` in .git/delegate.toml to a folder outside the project",
        ));
    }
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
