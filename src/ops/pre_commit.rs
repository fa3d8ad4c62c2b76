//! Installing git-delegate's pre-commit hook (design §3.7) into the
//! repository's hooks folder (`core.hooksPath`, relative to the worktree
//! root like git, else `<common-dir>/hooks`); `commands/hooks.rs` renders
//! what [`install`] did.
//!
//! [`pre_commit`] is the hook's check: it finds the common dir by reading
//! files (git gives hooks `GIT_DIR`; a linked worktree's git dir names the
//! common dir in `commondir`) and stops there when the repository has no
//! batches, without opening the repository or reading any config; the
//! problems it finds are `problems::of_state`'s.
//!
//! Owns: the hook script (`hooks/pre-commit` in the repository), recognising
//! a hook as ours, chaining a foreign one.
//! A pre-commit hook that is not ours is moved beside it as
//! `pre-commit.local`, which our script runs first. Installing twice changes
//! nothing. Never: overwrites or deletes a hook silently; with a foreign hook
//! and an existing `pre-commit.local` it refuses unless `force`, and then
//! the old `pre-commit.local` is kept as `pre-commit.local.bak`; the
//! check changes nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::config::{Config, StaleLeases};
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Entry};

/// The script installed as `pre-commit` (the repository's `hooks/pre-commit`).
pub const PRE_COMMIT: &str = include_str!("../../hooks/pre-commit");

/// The script installed as `pre-push` (the repository's `hooks/pre-push`).
pub const PRE_PUSH: &str = include_str!("../../hooks/pre-push");

/// The line that marks a pre-commit hook as git-delegate's (any version).
const MARKER: &str = "# git-delegate pre-commit hook";
/// The line that marks a pre-push hook as git-delegate's (any version).
const PUSH_MARKER: &str = "# git-delegate pre-push hook";

/// What [`install`] did.
pub struct Installed {
    pub hook: PathBuf,
    /// The foreign hook ours runs first, if any.
    pub chained: Option<PathBuf>,
    /// Whether anything was written.
    pub changed: bool,
    /// A `pre-commit.local` that `--force` moved aside.
    pub backup: Option<PathBuf>,
    /// The pre-push hook (design §3.19), installed the same way.
    pub pre_push: Box<Option<Installed>>,
}

/// Install the hook into `source`'s hooks folder (`force`: see the header).
pub fn install(source: &Source, force: bool) -> Result<Installed> {
    let dir = hooks_dir(source)?;
    let mut done = install_into(&dir, "pre-commit", PRE_COMMIT, MARKER, force)?;
    done.pre_push = Box::new(Some(install_into(
        &dir,
        "pre-push",
        PRE_PUSH,
        PUSH_MARKER,
        force,
    )?));
    Ok(done)
}

/// Where git would run the pre-commit hook from, when that is not
/// git-delegate's hook (any version, executable): `None` when it is
/// installed. A batch prepared with forbid-commit relies on it (design §3.7).
pub fn pre_commit_missing(source: &Source) -> Option<PathBuf> {
    let dir = hooks_dir(source).unwrap_or_else(|_| source.common_dir.join("hooks"));
    let hook = dir.join("pre-commit");
    let ours = std::fs::read(&hook).is_ok_and(|c| String::from_utf8_lossy(&c).contains(MARKER));
    // Git ignores a hook that is not executable.
    let runs = std::fs::metadata(&hook).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    (!(ours && runs)).then_some(hook)
}

/// The hooks folder git uses for this worktree (`side_effects` watches it).
pub fn hooks_dir(source: &Source) -> Result<PathBuf> {
    let configured = source
        .repo
        .config_snapshot()
        .trusted_path("core.hooksPath")
        .map_err(|e| {
            Error::usage(
                Code::Config,
                format!("core.hooksPath cannot be read: {e}"),
                "fix core.hooksPath with `git config core.hooksPath DIR`",
            )
        })?;
    Ok(match configured {
        Some(p) if !p.as_os_str().is_empty() => source.root.join(p),
        _ => source.common_dir.join("hooks"),
    })
}

fn install_into(
    dir: &Path,
    name: &str,
    script: &str,
    marker: &str,
    force: bool,
) -> Result<Installed> {
    let hook = dir.join(name);
    let local = dir.join(format!("{name}.local"));
    let exists = |p: &Path| p.symlink_metadata().is_ok();
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e| Error::io(what, e)
    };
    let mut changed = false;
    let mut backup = None;

    let current = if exists(&hook) {
        Some(std::fs::read(&hook).unwrap_or_default())
    } else {
        None
    };
    let ours = current
        .as_deref()
        .is_some_and(|c| String::from_utf8_lossy(c).contains(marker));
    match current {
        Some(c) if c == script.as_bytes() => {}
        Some(_) if ours => {
            // An older version of our own hook: replace it.
            write_hook(&hook, script)?;
            changed = true;
        }
        Some(_) => {
            if exists(&local) {
                if !force {
                    return Err(Error::usage(
                        Code::HookExists,
                        format!(
                            "{} is not git-delegate's hook, and {} exists too",
                            hook.display(),
                            local.display()
                        ),
                        format!("merge the two hooks into {name}.local yourself, or pass --force (the old {name}.local is kept as {name}.local.bak)"),
                    ));
                }
                let bak = free_name(dir, &format!("{name}.local.bak"));
                std::fs::rename(&local, &bak).map_err(io(&local))?;
                backup = Some(bak);
            }
            std::fs::rename(&hook, &local).map_err(io(&hook))?;
            write_hook(&hook, script)?;
            changed = true;
        }
        None => {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            write_hook(&hook, script)?;
            changed = true;
        }
    }
    // Git ignores a hook that is not executable.
    let meta = std::fs::metadata(&hook).map_err(io(&hook))?;
    if meta.permissions().mode() & 0o111 != 0o111 {
        let mut perm = meta.permissions();
        perm.set_mode(perm.mode() | 0o755);
        std::fs::set_permissions(&hook, perm).map_err(io(&hook))?;
        changed = true;
    }
    Ok(Installed {
        hook,
        chained: exists(&local).then_some(local),
        changed,
        backup,
        pre_push: Box::new(None),
    })
}

/// Write our script to `hook` atomically, executable.
fn write_hook(hook: &Path, script: &str) -> Result<()> {
    crate::sys::fs::write_atomic(hook, script.as_bytes())?;
    let mut perm = std::fs::metadata(hook)
        .map_err(|e| Error::io(hook.display(), e))?
        .permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(hook, perm).map_err(|e| Error::io(hook.display(), e))
}

/// `dir/name`, or `dir/name.1`, `dir/name.2`, ... whichever does not exist yet.
fn free_name(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if first.symlink_metadata().is_err() {
        return first;
    }
    (1..)
        .map(|i| dir.join(format!("{name}.{i}")))
        .find(|p| p.symlink_metadata().is_err())
        .unwrap_or(first)
}

/// What the pre-commit hook found (design §3.7), checked by reading files
/// only: it runs on every commit.
pub enum PreCommit {
    /// Not in a repository, or the repository has no batches: nothing to say.
    Clear,
    /// The batches could not be listed (never refuses a commit).
    Unchecked(Error),
    /// The commit happens inside the workspace of task `task` of a batch
    /// that forbids commits (`config_error`: as for `Checked`).
    Forbidden {
        config_error: Option<Error>,
        batch: String,
        label: Option<String>,
        task: String,
    },
    /// The batches were checked: `problems` (none when
    /// `hooks.stale-leases = "ignore"`), whether they refuse the commit
    /// (`"block"`), and the error that made the config's defaults apply.
    Checked {
        config_error: Option<Error>,
        problems: Vec<crate::ops::problems::Problem>,
        block: bool,
    },
}

/// The pre-commit hook's check in the current folder.
pub fn pre_commit() -> PreCommit {
    let Ok(cwd) = std::env::current_dir() else {
        return PreCommit::Clear;
    };
    let Some(loc) = locate(&cwd) else {
        return PreCommit::Clear;
    };
    let state_dir = crate::git::repo::state_dir(&loc.common_dir);
    let has_batches =
        std::fs::read_dir(batch::batches_dir(&state_dir)).is_ok_and(|mut rd| rd.next().is_some());
    if !has_batches {
        return PreCommit::Clear;
    }
    let entries = match batch::list(&state_dir) {
        Ok(e) => e,
        Err(e) => return PreCommit::Unchecked(e.into()),
    };
    let (config, config_error) = match Config::load(&loc.common_dir.join("delegate.toml")) {
        Ok(c) => (c, None),
        Err(e) => (Config::default(), Some(e.into())),
    };
    if let Some((batch, label, task)) = forbidden(&loc, &cwd, &entries, config.forbid_commit) {
        return PreCommit::Forbidden {
            config_error,
            batch,
            label,
            task,
        };
    }
    let problems = if config.stale_leases == StaleLeases::Ignore {
        Vec::new()
    } else {
        crate::ops::problems::of_state(&state_dir, &entries)
    };
    PreCommit::Checked {
        config_error,
        problems,
        block: config.stale_leases == StaleLeases::Block,
    }
}

/// Where the hook runs: the git dir of the worktree being committed in, and
/// the repository's common dir.
struct Location {
    git_dir: PathBuf,
    common_dir: PathBuf,
}

/// The batch (id, label) and task when the commit happens inside a
/// workspace of a forbid-commit batch.
fn forbidden(
    loc: &Location,
    cwd: &Path,
    entries: &[Entry],
    forbid_all: bool,
) -> Option<(String, Option<String>, String)> {
    let git_dir = std::fs::canonicalize(&loc.git_dir).ok();
    let registrations = std::fs::canonicalize(&loc.common_dir)
        .ok()?
        .join("worktrees");
    for e in entries {
        let Entry::Batch(b) = e else { continue };
        if !(b.forbid_commit || forbid_all) {
            continue;
        }
        for t in b.open_tasks().filter(|t| !t.remote) {
            let inside = git_dir.as_deref() == Some(registrations.join(&t.worktree_id).as_path())
                || std::fs::canonicalize(&t.root).is_ok_and(|r| cwd.starts_with(r));
            if inside {
                return Some((b.id.clone(), b.label.clone(), t.name.clone()));
            }
        }
    }
    None
}

/// Find the git dir and common dir by reading files only (no repository open).
fn locate(cwd: &Path) -> Option<Location> {
    // git gives hooks `GIT_DIR` (and `GIT_INDEX_FILE`); the process took
    // them out of its environment when it started (`repo::isolate_environment`).
    let env = crate::git::repo::git_env();
    let git_dir = match env.get("GIT_DIR") {
        Some(d) => cwd.join(d),
        None => discover(cwd)?,
    };
    let common_dir = match env.get("GIT_COMMON_DIR") {
        Some(d) => cwd.join(d),
        None => match std::fs::read(git_dir.join("commondir")) {
            Ok(text) => git_dir.join(path_from_line(&text)?),
            Err(_) => git_dir.clone(),
        },
    };
    Some(Location {
        git_dir,
        common_dir,
    })
}

/// Walk up from `cwd` to the first `.git` folder or `gitdir:` file.
fn discover(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let dotgit = dir.join(".git");
        let Ok(meta) = std::fs::metadata(&dotgit) else {
            continue;
        };
        if meta.is_dir() {
            return Some(dotgit);
        }
        let text = std::fs::read(&dotgit).ok()?;
        let target = text.strip_prefix(b"gitdir: ")?;
        return Some(dir.join(path_from_line(target)?));
    }
    None
}

/// A path written on one line of a git file (trailing newline and `\r` removed).
fn path_from_line(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let line = bytes.split(|&b| b == b'\n').next()?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    (!line.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(line)))
}
