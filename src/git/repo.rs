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
//! ([`diff_pager`]: the binary starts it).
//! Never: changes anything in the repository.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::config::Config;
use crate::error::{Code, Error, Result};
use crate::sys::fs::canonical;
use crate::sys::paths::is_unprintable;

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
        .map_err(|e| {
            Error::git(
                format!("cannot open the repository at {}", dir.display()),
                e,
            )
        })?;
    if repo.workdir() != Some(dir) {
        repo.set_workdir(Some(dir.to_path_buf())).map_err(|e| {
            Error::git(format!("cannot open the working tree {}", dir.display()), e)
        })?;
    }
    // Only the drivers the batch recorded run in it (design §3.18).
    crate::git::drivers::restrict(&mut repo)?;
    Ok(repo)
}

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

use crate::git::discovery::{not_a_repository, path_from_line};

fn unsupported_environment(var: &str, value: &Path, what: String, help: String) -> Error {
    Error::state(
        Code::UnsupportedEnvironment,
        format!("{var}={} {what}", value.display()),
        help,
    )
}

/// The command that lists `dir` in `objects`' `info/alternates` (git reads
/// an absolute path there as it is).
fn list_as_alternate(dir: &Path, objects: &Path) -> String {
    let q = |p: &Path| crate::sys::paths::shell_quote(&p.to_string_lossy());
    format!("echo {} >> {}", q(dir), q(&objects.join("info/alternates")))
}

/// Why discovery around `cwd` failed, as git would say it, or by the real
/// cause where git would have stopped at (or skipped) a `.git`
/// (`discovery::diagnose`, design §3.15).
fn discovery_error(cwd: &Path, err: gix::Error) -> Error {
    use gix::discover::upwards::Error as Up;
    // A `.git` above a ceiling or filesystem boundary is not git's
    // business; a broken one below it is named before the boundary is.
    let limit: Option<PathBuf> = match err.downcast_any_ref::<Up>() {
        Some(Up::NoGitRepositoryWithinFs { limit, .. }) => Some(limit.clone()),
        Some(Up::NoGitRepositoryWithinCeiling { .. }) => Some(git_ceiling(cwd).unwrap_or_default()),
        _ => None,
    };
    if let Some(e) = crate::git::discovery::diagnose(cwd, limit.as_deref()) {
        return e.into();
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
        Some(gd) => {
            let git_dir = cwd.join(gd);
            if let Some(format) = crate::git::discovery::unreadable_object_format(&git_dir) {
                return Err(
                    crate::git::discovery::unsupported_object_format(&git_dir, &format).into(),
                );
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
            repo
        }
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
                    )));
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
            .map_err(|e| Error::git(format!("cannot open {}", cwd.display()), e))?
            .to_thread_local();
        set_workdir(&mut repo, workdir)?;
    }
    Ok(repo)
}

fn set_workdir(repo: &mut gix::Repository, workdir: Option<PathBuf>) -> Result<()> {
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
    })
}

/// Refuse `GIT_COMMON_DIR`, `GIT_OBJECT_DIRECTORY` and
/// `GIT_ALTERNATE_OBJECT_DIRECTORIES` that name other folders than the
/// repository's own: git would read and write objects there, which the
/// workspaces (and the git library) would not see.
fn refuse_foreign_object_dirs(cwd: &Path, root: &Path, common_dir: &Path) -> Result<()> {
    let env = git_env();
    let same = |p: &Path, q: &Path| {
        std::fs::canonicalize(p).is_ok_and(|p| std::fs::canonicalize(q).is_ok_and(|q| p == q))
    };
    if let Some(cd) = env.get("GIT_COMMON_DIR") {
        let cd = cwd.join(cd);
        if !same(&cd, common_dir) {
            return Err(unsupported_environment(
                "GIT_COMMON_DIR",
                &cd,
                format!(
                    "is not the common dir {} of this working tree, and the git library git delegate uses cannot follow it",
                    common_dir.display()
                ),
                format!(
                    "run it without that variable (`unset GIT_COMMON_DIR`, then the command again): git delegate then works in the repository of this working tree, {}",
                    common_dir.display()
                ),
            ));
        }
    }
    let objects = common_dir.join("objects");
    if let Some(od) = env.get("GIT_OBJECT_DIRECTORY") {
        let od = root.join(od);
        if !same(&od, &objects) {
            return Err(unsupported_environment(
                "GIT_OBJECT_DIRECTORY",
                &od,
                format!(
                    "is not the repository's object folder {}",
                    objects.display()
                ),
                // Its workspaces (linked worktrees, which do not see the
                // variable) read objects in `objects` only: the variable
                // goes, and what git wrote there stays readable as an
                // alternate.
                if od.is_dir() {
                    format!(
                        "make the objects there readable from the repository (`{}`), then run the command again without the variable (`unset GIT_OBJECT_DIRECTORY`)",
                        list_as_alternate(&od, &objects)
                    )
                } else {
                    "run the command again without that variable (`unset GIT_OBJECT_DIRECTORY`)"
                        .into()
                },
            ));
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
                return Err(unsupported_environment(
                    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                    &dir,
                    format!(
                        "is not an object folder of the repository (not listed in {})",
                        objects.join("info/alternates").display()
                    ),
                    format!(
                        "list it there (`{}`), so that the workspaces read it too, then run the command again; or run it without the variable (`unset GIT_ALTERNATE_OBJECT_DIRECTORIES`)",
                        list_as_alternate(&dir, &objects)
                    ),
                ));
            }
        }
    }
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
        Self::from_repo(repo, cwd, true)
    }

    /// [`Source::discover`] around the process's current directory.
    pub fn discover_here() -> Result<Source> {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?;
        Self::discover(&cwd)
    }

    /// The working tree `root` recorded by a batch of `here`'s repository
    /// (the batch's `source`), opened by its path: it must still be a
    /// working tree of the same repository, not a folder that moved away or
    /// another repository that took its place.
    pub fn open_recorded(here: &Source, root: &Path, batch: &str) -> Result<Source> {
        let moved = |why: String| {
            Error::state(
                Code::SourceMoved,
                format!(
                    "batch {batch} was prepared in {}, which {why}",
                    root.display()
                ),
                format!(
                    "a batch writes back into the working tree it was prepared in: if you moved it, move it back to {} and run `git delegate apply {batch}` there; to give the batch up, `git delegate drop {batch} --force`",
                    root.display()
                ),
            )
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
        Self::from_repo(repo, root, false)
    }

    /// `located`: `repo` is the repository the environment's variables
    /// describe (they were checked against it).
    fn from_repo(repo: gix::Repository, cwd: &Path, located: bool) -> Result<Source> {
        let Some(workdir) = repo.workdir() else {
            return Err(Error::state(
                Code::BareRepository,
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
        if located {
            refuse_foreign_object_dirs(&cwd, &root, &common_dir)?;
        }
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
        None => Err(Error::usage(
            Code::NoWorkspaceRoot,
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
            Code::WorkspaceRootInsideSource,
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

/// git's `color.ui`, as git reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorUi {
    Never,
    Auto,
    Always,
}

/// git's `color.ui` (`git -c`, repository, global and system config), when
/// set, for the binary's colour decision (design §3: `--color` and `NO_COLOR`
/// come first; the binary asks only when they leave it open).
pub fn color_ui() -> Option<ColorUi> {
    color_setting("color.ui")
}

/// A colour setting of git's (`color.ui`, `color.diff`, ...) read as
/// [`color_ui`] reads `color.ui`; `None` when unset or not understood.
pub fn color_setting(key: &str) -> Option<ColorUi> {
    let value = git_setting(key)?;
    match value.to_ascii_lowercase().as_str() {
        "false" | "never" | "no" | "off" | "0" => Some(ColorUi::Never),
        "always" => Some(ColorUi::Always),
        "true" | "yes" | "on" | "1" | "auto" | "" => Some(ColorUi::Auto),
        _ => None,
    }
}

/// The last value of `key` in git's `GIT_CONFIG_PARAMETERS` (how `git -c
/// key=value delegate` passes its settings on; gix does not read it): a
/// list of shell single-quoted words, `'key'='value'` or the older
/// `'key=value'`; a key without a value is `true` (returned as "").
fn from_config_parameters(params: &str, key: &str) -> Option<String> {
    // Split into single-quoted words, remembering whether `=` joins two.
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut chars = params.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut word = String::new();
        loop {
            match chars.next() {
                Some('\'') => {
                    // `'\''` inside a word is a quote.
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                        chars.next();
                        word.push('\'');
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                            continue;
                        }
                    }
                    break;
                }
                Some(ch) => word.push(ch),
                None => return None,
            }
        }
        let joined = chars.peek() == Some(&'=');
        if joined {
            chars.next();
        }
        words.push((word, joined));
    }
    let mut found = None;
    let mut i = 0;
    while i < words.len() {
        let (word, joined) = &words[i];
        let (k, v) = if *joined {
            let v = words.get(i + 1).map(|w| w.0.clone()).unwrap_or_default();
            i += 2;
            (word.clone(), v)
        } else {
            i += 1;
            match word.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (word.clone(), String::new()),
            }
        };
        if k.eq_ignore_ascii_case(key) {
            found = Some(v);
        }
    }
    found
}

/// The value of git's setting `key`: `git -c` first, then the
/// repository's (or, outside one, the user's) config files.
fn git_setting(key: &str) -> Option<String> {
    match std::env::var("GIT_CONFIG_PARAMETERS")
        .ok()
        .and_then(|p| from_config_parameters(&p, key))
    {
        Some(v) => Some(v),
        None => config_value(key),
    }
}

/// The pager git would page `git diff` through (design §3.16), or `None`
/// for none, as git's `git_pager` chooses it: `pager.diff` false is none;
/// else `GIT_PAGER`, then `pager.diff` when it is a command, then
/// `core.pager`, `PAGER`, and `less`; an empty command or `cat` is none.
pub fn diff_pager() -> Option<String> {
    let per_command = match git_setting("pager.diff") {
        Some(v)
            if matches!(
                v.to_ascii_lowercase().as_str(),
                "false" | "no" | "off" | "0"
            ) =>
        {
            return None
        }
        Some(v)
            if !matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "yes" | "on" | "1" | ""
            ) =>
        {
            Some(v)
        }
        _ => None,
    };
    let chosen = std::env::var("GIT_PAGER")
        .ok()
        .or(per_command)
        .or_else(|| git_setting("core.pager"))
        .or_else(|| std::env::var("PAGER").ok())
        .unwrap_or_else(|| "less".to_string());
    let trimmed = chosen.trim();
    if trimmed.is_empty() || trimmed == "cat" {
        return None;
    }
    Some(chosen)
}

/// `key` from the repository's (or, outside one, the user's) config files.
fn config_value(key: &str) -> Option<String> {
    // The source as the commands find it (`GIT_DIR` and friends included).
    let repo = std::env::current_dir()
        .ok()
        .and_then(|cwd| open_source(&cwd).ok());
    let value = match &repo {
        Some(repo) => repo.config_snapshot().string(key)?.to_string(),
        None => {
            // Outside a repository only the user's and the system's config apply.
            let mut cmd = std::process::Command::new("git");
            cmd.args(["config", "--get", key])
                .stderr(std::process::Stdio::null());
            crate::sys::process::without_hooks(&mut cmd);
            let out = cmd.output().ok()?;
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    Some(value).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parameters_as_git_passes_them() {
        let p = "'core.editor'='vi' 'color.ui'='never'";
        assert_eq!(
            from_config_parameters(p, "color.ui").as_deref(),
            Some("never")
        );
        assert_eq!(
            from_config_parameters("'color.ui=always'", "color.ui").as_deref(),
            Some("always")
        );
        assert_eq!(
            from_config_parameters("'Color.UI'", "color.ui").as_deref(),
            Some("")
        );
        assert_eq!(
            from_config_parameters("'a.b'='it'\\''s' 'color.ui'='false'", "color.ui").as_deref(),
            Some("false")
        );
        assert_eq!(from_config_parameters("'a.b'='x'", "color.ui"), None);
        assert_eq!(from_config_parameters("'broken", "color.ui"), None);
    }
}
