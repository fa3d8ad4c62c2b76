//! Locating the source as git would: the repository-locating environment
//! (`GIT_DIR`, `GIT_WORK_TREE`, ...; `process::LOCATING`), taken out of the
//! process first thing ([`isolate_environment`]) and applied to the source
//! alone ([`open_source`]), with git's discovery rules (ceilings, crossing
//! filesystems) and the states refused (object folders it cannot follow,
//! variables it cannot honour).
//! Never: changes anything in the repository, or lets a workspace (or any
//! other worktree) be opened through those variables.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{
    open_options, open_options_with, refusing_untrusted, resolve_lenient, RepoError, Result,
};
use crate::git::discovery::{not_a_repository, path_from_line, DiscoveryError};

/// The repository-locating variables this process was started with.
#[derive(Debug, Default)]
pub struct GitEnv {
    vars: Vec<(&'static str, OsString)>,
}

impl GitEnv {
    fn capture() -> GitEnv {
        GitEnv {
            vars: crate::sys::process::LOCATING
                .iter()
                .filter_map(|k| Some((*k, std::env::var_os(k).filter(|v| !v.is_empty())?)))
                .collect(),
        }
    }

    /// The value of one of [`crate::sys::process::LOCATING`], when it was set and not empty.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_os_str())
    }
}

static GIT_ENV: OnceLock<GitEnv> = OnceLock::new();

/// Take the repository-locating variables out of the process environment,
/// keeping them for the source alone ([`git_env`]). Called first in `main`,
/// before any thread exists: from then on no repository opened for a
/// workspace, and no process started in one (filters, `git`), inherits them.
pub fn isolate_environment() {
    let _ = GIT_ENV.set(GitEnv::capture());
    for k in crate::sys::process::LOCATING {
        std::env::remove_var(k);
    }
}

/// The source's repository-locating variables (see [`isolate_environment`]).
pub fn git_env() -> &'static GitEnv {
    GIT_ENV.get_or_init(GitEnv::capture)
}

/// Why discovery around `cwd` failed, as git would say it, or by the real
/// cause where git would have stopped at (or skipped) a `.git`
/// (`discovery::diagnose`, design §3.15).
fn discovery_error(cwd: &Path, err: gix::Error) -> DiscoveryError {
    use gix::discover::upwards::Error as Up;
    // A `.git` above a ceiling or filesystem boundary is not git's
    // business; a broken one below it is named before the boundary is.
    let limit: Option<PathBuf> = match err.downcast_any_ref::<Up>() {
        Some(Up::NoGitRepositoryWithinFs { limit, .. }) => Some(limit.clone()),
        Some(Up::NoGitRepositoryWithinCeiling { .. }) => Some(git_ceiling(cwd).unwrap_or_default()),
        _ => None,
    };
    if let Some(e) = crate::git::discovery::diagnose(cwd, limit.as_deref()) {
        return e;
    }
    match err.downcast_any_ref::<Up>() {
        Some(Up::NoGitRepository { .. }) => {
            not_a_repository(format!("{} is not inside a git repository", cwd.display()))
        }
        Some(Up::NoGitRepositoryWithinCeiling { .. }) => not_a_repository(format!(
            "{} is not inside a git repository below the GIT_CEILING_DIRECTORIES",
            cwd.display()
        )),
        Some(Up::NoGitRepositoryWithinFs { limit, .. }) => not_a_repository(format!(
            "{} is not inside a git repository on its filesystem (the search stopped at {}; GIT_DISCOVERY_ACROSS_FILESYSTEM=1 lets it go on)",
            cwd.display(),
            limit.display()
        )),
        _ => not_a_repository(format!(
            "cannot find the git repository around {}: {}",
            cwd.display(),
            err.probable_cause()
        )),
    }
}

/// The `GIT_CEILING_DIRECTORIES` entry git stops below when it searches
/// upwards from `cwd`: the longest absolute entry that is a proper ancestor
/// of the (physical) cwd; entries are resolved through symlinks until an
/// empty entry, as git does. Others are ignored, as git ignores them.
fn git_ceiling(cwd: &Path) -> Option<PathBuf> {
    let value = std::env::var_os("GIT_CEILING_DIRECTORIES")?;
    let cwd = std::fs::canonicalize(cwd).ok()?;
    let mut resolve = true;
    let mut best: Option<PathBuf> = None;
    for entry in std::env::split_paths(&value) {
        if entry.as_os_str().is_empty() {
            resolve = false;
            continue;
        }
        if !entry.is_absolute() {
            continue;
        }
        let entry = if resolve {
            std::fs::canonicalize(&entry).unwrap_or(entry)
        } else {
            entry
        };
        if cwd.starts_with(&entry)
            && cwd != entry
            && best
                .as_ref()
                .is_none_or(|b| entry.as_os_str().len() > b.as_os_str().len())
        {
            best = Some(entry);
        }
    }
    best
}

/// Whether a git boolean (`GIT_DISCOVERY_ACROSS_FILESYSTEM`) is true.
fn env_bool(name: &str) -> bool {
    std::env::var_os(name)
        .map(|v| gix::bstr::BString::from(v.into_encoded_bytes()))
        .and_then(|v| gix::config::Boolean::try_from(v).ok())
        .is_some_and(|b| b.0)
}

/// Open the source as git would from `cwd`, honouring the variables of
/// [`git_env`]: an explicit `GIT_DIR` (its work tree `GIT_WORK_TREE`, else
/// `core.worktree`, else none for a bare one, else the cwd), or discovery
/// upwards (`GIT_CEILING_DIRECTORIES` entries that are not above the cwd
/// are ignored, as git ignores them) with `GIT_WORK_TREE` overriding the
/// work tree; `GIT_INDEX_FILE` (relative to the top of the work tree, as
/// for git) as its index.
pub fn open_source(cwd: &Path) -> Result<gix::Repository> {
    let env = git_env();
    let mut repo = match env.get("GIT_DIR") {
        Some(gd) => open_git_dir(cwd, gd, env)?,
        None => {
            let options = || {
                let mut options = gix::discover::upwards::Options {
                    match_ceiling_dir_or_error: false,
                    ..Default::default()
                }
                .apply_environment();
                options.cross_fs = env_bool("GIT_DISCOVERY_ACROSS_FILESYSTEM");
                options
            };
            // git never enters a ceiling directory; the library looks into
            // it too. Where the library found the repository in (or above)
            // git's ceiling, git finds none.
            if let Some(ceiling) = git_ceiling(cwd) {
                let (found, _) = gix::discover::upwards_opts(cwd, options())
                    .map_err(|e| discovery_error(cwd, e))?;
                let dir = match &found {
                    gix::discover::repository::Path::WorkTree(d)
                    | gix::discover::repository::Path::LinkedWorkTree { work_dir: d, .. } => {
                        d.clone()
                    }
                    gix::discover::repository::Path::Repository(d) => {
                        if d.file_name().is_some_and(|n| n == ".git") {
                            d.parent()
                                .map(Path::to_path_buf)
                                .unwrap_or_else(|| d.clone())
                        } else {
                            d.clone()
                        }
                    }
                };
                let dir = std::fs::canonicalize(cwd.join(&dir)).unwrap_or(dir);
                if !(dir.starts_with(&ceiling) && dir != ceiling) {
                    return Err(not_a_repository(format!(
                        "{} is not inside a git repository below the GIT_CEILING_DIRECTORIES entry {}",
                        cwd.display(),
                        ceiling.display()
                    ))
                    .into());
                }
            }
            let mut repo =
                gix::ThreadSafeRepository::discover_opts(cwd, options(), refusing_untrusted())
                    .map_err(|e| discovery_error(cwd, e))?
                    .to_thread_local();
            if let Some(wt) = env.get("GIT_WORK_TREE") {
                set_workdir(&mut repo, Some(cwd.join(wt)))?;
            }
            repo
        }
    };
    if let Some(e) = crate::git::discovery::unsupported_ref_format(&repo) {
        return Err(e.into());
    }
    if let Some(index) = env.get("GIT_INDEX_FILE") {
        let top = repo.workdir().unwrap_or(cwd).to_path_buf();
        let index = resolve_lenient(&top.join(index));
        let workdir = repo.workdir().map(Path::to_path_buf);
        let mut key = gix::bstr::BString::from("gitoxide.core.indexFile=");
        key.extend_from_slice(index.as_os_str().as_encoded_bytes());
        let opts = open_options_with(vec![key]).full;
        repo = gix::ThreadSafeRepository::open_opts(repo.git_dir(), opts)
            .map_err(|source| RepoError::Reopen {
                dir: cwd.to_path_buf(),
                source,
            })?
            .to_thread_local();
        set_workdir(&mut repo, workdir)?;
    }
    Ok(repo)
}

/// [`open_source`] with an explicit `GIT_DIR` (`gd`): its work tree
/// `GIT_WORK_TREE`, else `core.worktree`, else none for a bare one, else
/// the cwd.
fn open_git_dir(cwd: &Path, gd: &std::ffi::OsStr, env: &GitEnv) -> Result<gix::Repository> {
    let git_dir = cwd.join(gd);
    if let Some(format) = crate::git::discovery::unreadable_object_format(&git_dir) {
        return Err(crate::git::discovery::unsupported_object_format(&git_dir, &format).into());
    }
    // As git: GIT_DIR names the git dir itself (a working tree holding
    // a `.git` is not one).
    let opts = open_options().full.open_path_as_is(true);
    let mut repo = gix::ThreadSafeRepository::open_opts(&git_dir, opts)
        .map_err(|e| {
            not_a_repository(format!(
                "GIT_DIR={} is not a git repository ({})",
                git_dir.display(),
                e.probable_cause()
            ))
        })?
        .to_thread_local();
    let configured = repo.config_snapshot().string("core.worktree").is_some();
    let implicit = env.get("GIT_IMPLICIT_WORK_TREE").is_none_or(|v| v != "0");
    let bare = repo.config_snapshot().boolean("core.bare") == Some(true);
    let workdir = match env.get("GIT_WORK_TREE") {
        Some(wt) => Some(cwd.join(wt)),
        None if configured => repo.workdir().map(Path::to_path_buf),
        None if bare || !implicit => None,
        None => Some(cwd.to_path_buf()),
    };
    set_workdir(&mut repo, workdir)?;
    Ok(repo)
}

pub(super) fn set_workdir(repo: &mut gix::Repository, workdir: Option<PathBuf>) -> Result<()> {
    if repo.workdir() == workdir.as_deref() {
        return Ok(());
    }
    let shown = workdir.clone();
    repo.set_workdir(workdir).map(|_| ()).map_err(|e| {
        not_a_repository(format!(
            "the work tree {} cannot be read ({})",
            shown.as_deref().unwrap_or(Path::new("")).display(),
            e.probable_cause()
        ))
        .into()
    })
}

/// Refuse `GIT_COMMON_DIR`, `GIT_OBJECT_DIRECTORY` and
/// `GIT_ALTERNATE_OBJECT_DIRECTORIES` that name other folders than the
/// repository's own: git would read and write objects there, which the
/// workspaces (and the git library) would not see. A contained worker's
/// own object folder is the repository's (design §3.22).
pub(super) fn refuse_foreign_object_dirs(cwd: &Path, root: &Path, common_dir: &Path) -> Result<()> {
    let env = git_env();
    let same = |p: &Path, q: &Path| {
        std::fs::canonicalize(p).is_ok_and(|p| std::fs::canonicalize(q).is_ok_and(|q| p == q))
    };
    if let Some(cd) = env.get("GIT_COMMON_DIR") {
        let cd = cwd.join(cd);
        if !same(&cd, common_dir) {
            return Err(RepoError::CommonDir {
                dir: cd,
                common_dir: common_dir.to_path_buf(),
            });
        }
    }
    let objects = common_dir.join("objects");
    if let Some(od) = env.get("GIT_OBJECT_DIRECTORY") {
        let od = root.join(od);
        // A contained worker's git writes its objects to its own folder
        // (design §3.22); git-delegate reads the repository's store.
        if !same(&od, &objects) && !crate::git::private_objects::is_private_dir(common_dir, &od) {
            return Err(RepoError::ObjectDir {
                is_dir: od.is_dir(),
                dir: od,
                objects,
            });
        }
    }
    if let Some(alt) = env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES") {
        let listed = std::fs::read(objects.join("info/alternates")).unwrap_or_default();
        let listed: Vec<PathBuf> = listed
            .split(|&b| b == b'\n')
            .filter_map(path_from_line)
            .map(|p| objects.join(p))
            .collect();
        for dir in std::env::split_paths(alt).filter(|d| !d.as_os_str().is_empty()) {
            let dir = root.join(dir);
            if !same(&dir, &objects) && !listed.iter().any(|l| same(l, &dir)) {
                return Err(RepoError::Alternate { dir, objects });
            }
        }
    }
    Ok(())
}
