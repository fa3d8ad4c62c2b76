//! Finding the source repository: its canonical common dir, working-tree
//! root, the caller's position in it, its config and state folder, and the
//! states git-delegate refuses to work in (bare, object formats
//! the git library cannot read, repository variables it cannot honour).
//!
//! Owns: the repository-locating environment (`GIT_DIR`, `GIT_WORK_TREE`,
//! `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_COMMON_DIR`, ...; the list
//! is `process::LOCATING`, which no command started for the user inherits
//! either): taken out of the process environment when it starts ([`isolate_environment`]) and
//! applied to the source alone, as git applies them; discovery as git's
//! (`GIT_CEILING_DIRECTORIES`, `GIT_DISCOVERY_ACROSS_FILESYSTEM`); opening
//! repositories with the options every engine step relies on, a workspace
//! (or any other worktree) always by its path, never through those variables;
//! git's `color.ui` (and `color.diff`) as the source (or, outside one, the
//! user's config) sets it, for the binary's colour decision ([`color_ui`],
//! [`color_setting`]), and the pager git would choose for a diff
//! ([`diff_pager`]: the binary starts it); the system config file the
//! user's git reads (`system`), for every repository opened.
//! Its own refusals and failures are `RepoError` (the paths, variables and
//! causes); `ops::explain` words them.
//! Never: changes anything in the repository; words a help line or decides
//! an error code (`ops::explain` does).
//!
//! The folder holds the concerns apart: locating the source through the
//! environment and git's discovery (`locate`), the colour and pager
//! settings (`color`), and which system config file git reads (`system`);
//! this file opens repositories and holds `Source`.

mod color;
mod locate;
mod system;

use std::path::{Path, PathBuf};

pub use self::color::{color_setting, color_ui, diff_pager, ColorUi};
pub use self::locate::{git_env, isolate_environment, open_source, GitEnv};
use self::locate::{refuse_foreign_object_dirs, set_workdir};

use crate::config::{Config, ConfigError};
use crate::error::{lower_from, Lower};
use crate::git::discovery::DiscoveryError;
use crate::git::drivers::DriversError;
use crate::sys::fs::{canonical, FsError};
use crate::sys::paths::is_unprintable;

/// Why the source or a workspace could not be opened, or a setting that
/// depends on where it is cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// What a lower module failed with, its own words: no repository
    /// around the cwd, or one git-delegate cannot read (`discovery` says
    /// which), or a work tree that cannot be read; the source's
    /// `delegate.toml`; restricting a workspace's filter drivers to the
    /// recorded ones; resolving the source's folders to their real paths.
    #[error(transparent)]
    Lower(#[from] Lower),
    /// A workspace's repository at `dir`.
    #[error("cannot open the repository at {}", dir.display())]
    Open {
        dir: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// A workspace's working tree pinned to `dir`.
    #[error("cannot open the working tree {}", dir.display())]
    Workdir {
        dir: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// The source reopened at `dir` with its `GIT_INDEX_FILE`.
    #[error("cannot open {}", dir.display())]
    Reopen {
        dir: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// The process's current directory.
    #[error("cannot read the current directory")]
    Cwd {
        #[source]
        source: std::io::Error,
    },
    /// The working tree `root` a batch recorded, which `why`.
    #[error("batch {batch} was prepared in {}, which {why}", root.display())]
    Moved {
        batch: String,
        root: PathBuf,
        why: String,
    },
    /// A workspace at `dir` whose repository is not `common_dir` (its
    /// registration's `commondir` leads to `found`): never written through.
    #[error("the workspace {} no longer belongs to this repository: its git dir leads to {}, not {}", dir.display(), found.display(), common_dir.display())]
    Foreign {
        dir: PathBuf,
        common_dir: PathBuf,
        found: PathBuf,
    },
    /// A repository without a working tree.
    #[error("{} is a bare repository", git_dir.display())]
    Bare { git_dir: PathBuf },
    /// Neither `XDG_DATA_HOME` nor `HOME`.
    #[error("neither XDG_DATA_HOME nor HOME is set, so there is no default workspace root")]
    NoWorkspaceRoot,
    /// A workspace root (`root`, resolved) inside the source's `source_root`.
    #[error("the workspace root {} is inside the source working tree {}", root.display(), source_root.display())]
    RootInsideSource { root: PathBuf, source_root: PathBuf },
    /// `GIT_COMMON_DIR` naming `dir`, not this working tree's `common_dir`.
    #[error("GIT_COMMON_DIR={} is not the common dir {} of this working tree, and the git library git delegate uses cannot follow it", dir.display(), common_dir.display())]
    CommonDir { dir: PathBuf, common_dir: PathBuf },
    /// `GIT_OBJECT_DIRECTORY` naming `dir` (a folder there: `is_dir`), not
    /// the repository's `objects`.
    #[error("GIT_OBJECT_DIRECTORY={} is not the repository's object folder {}", dir.display(), objects.display())]
    ObjectDir {
        dir: PathBuf,
        objects: PathBuf,
        is_dir: bool,
    },
    /// A `GIT_ALTERNATE_OBJECT_DIRECTORIES` folder `dir` that `objects`'
    /// `info/alternates` does not list.
    #[error("GIT_ALTERNATE_OBJECT_DIRECTORIES={} is not an object folder of the repository (not listed in {})", dir.display(), objects.join("info/alternates").display())]
    Alternate { dir: PathBuf, objects: PathBuf },
}

lower_from!(RepoError: DiscoveryError, ConfigError, DriversError, FsError);

type Result<T, E = RepoError> = std::result::Result<T, E>;

/// Options for every repository git-delegate opens: compare stat data to the
/// nanosecond, so a file rewritten within the same second as the index is
/// never mistaken for unchanged.
pub fn open_options() -> gix::sec::trust::Mapping<gix::open::Options> {
    open_options_with(Vec::new())
}

fn open_options_with(
    extra: Vec<gix::bstr::BString>,
) -> gix::sec::trust::Mapping<gix::open::Options> {
    let mut overrides: Vec<gix::bstr::BString> = vec![
        "gitoxide.core.useNsec=true".into(),
        "gitoxide.core.useStdev=false".into(),
    ];
    overrides.extend(extra);
    let mut mapping = gix::sec::trust::Mapping::<gix::open::Options>::default();
    mapping.full = mapping.full.clone().config_overrides(overrides.clone());
    mapping.reduced = mapping.reduced.clone().config_overrides(overrides);
    // The system config file the user's git reads, not the library's
    // `/etc/gitconfig` (`system`).
    if let Some(path) = system::config_path() {
        mapping.full = mapping.full.clone().system_config_path(path);
        mapping.reduced = mapping.reduced.clone().system_config_path(path);
    }
    mapping
}

/// [`open_options`] refusing, as git does, a discovered repository that
/// someone else owns unless `safe.directory` lists it (the library checks
/// that setting as git does; `discovery` names the refusal).
fn refusing_untrusted() -> gix::sec::trust::Mapping<gix::open::Options> {
    let mut mapping = open_options();
    mapping.full = mapping.full.clone().bail_if_untrusted(true);
    mapping.reduced = mapping.reduced.clone().bail_if_untrusted(true);
    mapping
}

/// Open the repository whose working tree is exactly `dir` (a workspace):
/// by its path, with its own git dir and index. The source's `GIT_*`
/// variables are no longer in the environment ([`isolate_environment`]),
/// and the working tree is pinned to `dir` whatever a variable said.
pub fn open_worktree(dir: &Path) -> Result<gix::Repository> {
    let opts = open_options().full;
    let mut repo = gix::ThreadSafeRepository::open_opts(dir, opts)
        .map(|r| r.to_thread_local())
        .map_err(|source| RepoError::Open {
            dir: dir.to_path_buf(),
            source,
        })?;
    if repo.workdir() != Some(dir) {
        repo.set_workdir(Some(dir.to_path_buf()))
            .map_err(|source| RepoError::Workdir {
                dir: dir.to_path_buf(),
                source,
            })?;
    }
    // Only the drivers the batch recorded run in it (design §3.18).
    crate::git::drivers::restrict(&mut repo)?;
    fixed_stat_rules(&mut repo, dir)?;
    Ok(repo)
}

/// [`open_worktree`] of a task's workspace at `dir`, only when its
/// repository is `common_dir` (design §3.18): a registration whose
/// `commondir` a worker redirected (to a copy of the git dir) is refused
/// before anything is read or written through it.
pub fn open_worktree_of(dir: &Path, common_dir: &Path) -> Result<gix::Repository> {
    let repo = open_worktree(dir)?;
    if !crate::sys::fs::same_file(repo.common_dir(), common_dir) {
        return Err(RepoError::Foreign {
            dir: dir.to_path_buf(),
            common_dir: common_dir.to_path_buf(),
            found: repo.common_dir().to_path_buf(),
        });
    }
    Ok(repo)
}

/// A workspace's stat data are compared by git-delegate's own fixed rules
/// (design §3.20): ctime, inode, size and mtime, to the nanosecond, never
/// weakened by `core.trustctime` or `core.checkStat`, which a worker can
/// set in the shared config (the device number is left out: it changes
/// across remounts while the inode does not).
fn fixed_stat_rules(repo: &mut gix::Repository, dir: &Path) -> Result<()> {
    use gix::config::tree::{gitoxide, Core};
    let failed = |source: gix::Error| RepoError::Open {
        dir: dir.to_path_buf(),
        source,
    };
    let mut snap = repo.config_snapshot_mut();
    snap.set_value(&Core::TRUST_C_TIME, "true")
        .map_err(failed)?;
    snap.set_value(&Core::CHECK_STAT, "default")
        .map_err(failed)?;
    snap.set_value(&gitoxide::Core::USE_NSEC, "true")
        .map_err(failed)?;
    snap.commit().map_err(failed)?;
    Ok(())
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

/// git-delegate's state dir in a repository's common dir (`<common>/delegate`),
/// where the batch record (`batch`) and everything else the tool keeps live.
pub fn state_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("delegate")
}

impl Source {
    /// Find the repository around `cwd` as git would (see [`open_source`])
    /// and load `delegate.toml`.
    pub fn discover(cwd: &Path) -> Result<Source> {
        let repo = open_source(cwd)?;
        Self::from_repo(repo, cwd, true, None)
    }

    /// [`Source::discover`] keeping `config`, the settings a command read
    /// when it began, whatever `delegate.toml` holds now (a worker may have
    /// changed it, or broken it, meanwhile: design §3.18).
    pub fn discover_with_config(cwd: &Path, config: Config) -> Result<Source> {
        let repo = open_source(cwd)?;
        Self::from_repo(repo, cwd, true, Some(config))
    }

    /// [`Source::discover`] around the process's current directory.
    pub fn discover_here() -> Result<Source> {
        let cwd = std::env::current_dir().map_err(|source| RepoError::Cwd { source })?;
        Self::discover(&cwd)
    }

    /// The working tree `root` recorded by a batch of `here`'s repository
    /// (the batch's `source`), opened by its path: it must still be a
    /// working tree of the same repository, not a folder that moved away or
    /// another repository that took its place.
    pub fn open_recorded(here: &Source, root: &Path, batch: &str) -> Result<Source> {
        let moved = |why: String| RepoError::Moved {
            batch: batch.to_string(),
            root: root.to_path_buf(),
            why,
        };
        if !root.is_dir() {
            return Err(moved("no longer exists (moved or removed?)".into()));
        }
        let repo = if root.join(".git").exists() {
            match gix::ThreadSafeRepository::open_opts(root, open_options().full) {
                Ok(r) => r.to_thread_local(),
                Err(_) => return Err(moved("is no longer a git working tree".into())),
            }
        } else {
            // No `.git` there: the work tree of a repository whose git dir is
            // elsewhere (`core.worktree`, or a bare repository used with
            // `GIT_WORK_TREE`, as dotfiles are): its main git dir.
            let mut repo =
                match gix::ThreadSafeRepository::open_opts(&here.common_dir, open_options().full) {
                    Ok(r) => r.to_thread_local(),
                    Err(_) => return Err(moved("is no longer a git working tree".into())),
                };
            if repo.workdir().is_none() {
                set_workdir(&mut repo, Some(root.to_path_buf()))?;
            }
            repo
        };
        let same_common =
            std::fs::canonicalize(repo.common_dir()).is_ok_and(|c| c == here.common_dir);
        let same_root = repo
            .workdir()
            .and_then(|w| std::fs::canonicalize(w).ok())
            .is_some_and(|w| w == root);
        if !same_common || !same_root {
            return Err(moved(format!(
                "is no longer a working tree of the repository {} (it was moved, or another repository is there now)",
                here.common_dir.display()
            )));
        }
        Self::from_repo(repo, root, false, None)
    }

    /// `located`: `repo` is the repository the environment's variables
    /// describe (they were checked against it).
    /// `config`: the settings to keep (`None`: load `delegate.toml`).
    fn from_repo(
        repo: gix::Repository,
        cwd: &Path,
        located: bool,
        config: Option<Config>,
    ) -> Result<Source> {
        let Some(workdir) = repo.workdir() else {
            return Err(RepoError::Bare {
                git_dir: repo.git_dir().to_path_buf(),
            });
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
        if located {
            refuse_foreign_object_dirs(&cwd, &root, &common_dir)?;
        }
        let config = match config {
            Some(c) => c,
            None => Config::load(&common_dir.join("delegate.toml"))?,
        };
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
        state_dir(&self.common_dir)
    }

    /// Folder name of the repository's main working tree (design §2).
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
        fingerprint_of(&self.common_dir)
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

/// The fingerprint of the repository whose canonical common dir is
/// `common_dir`: the `<fp>` of its workspace folder `<repo-name>-<fp>`.
pub fn fingerprint_of(common_dir: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let digest = sha2::Sha256::digest(common_dir.as_os_str().as_bytes());
    hex(&digest)[..12].to_string()
}

/// A folder name made safe for a workspace path: every character a
/// terminal would act on rather than show (control characters such as ESC
/// and newline, and the Unicode format characters that reorder text)
/// becomes `_`. Ordinary names, Unicode letters included, stay as they are,
/// so existing workspace paths do not move.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| if is_unprintable(c) { '_' } else { c })
        .collect()
}

/// `$XDG_DATA_HOME/git-delegate/worktrees`, else `~/.local/share/...`.
pub fn default_workspace_root() -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Ok(PathBuf::from(x).join("git-delegate/worktrees"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/git-delegate/worktrees")),
        None => Err(RepoError::NoWorkspaceRoot),
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
        return Err(RepoError::RootInsideSource {
            root: resolved,
            source_root: source_root.to_path_buf(),
        });
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
