//! `git delegate hooks install [--force]` (SPEC §3.7): put git-delegate's
//! pre-commit hook into the repository's hooks folder (`core.hooksPath`,
//! relative to the worktree root like git, else `<common-dir>/hooks`).
//!
//! A pre-commit hook that is not ours is moved beside it as
//! `pre-commit.local`, which our script runs first. Installing twice changes
//! nothing. Never: overwrites or deletes a hook silently; with a foreign hook
//! and an existing `pre-commit.local` it refuses unless `--force`, and then
//! the old `pre-commit.local` is kept as `pre-commit.local.bak`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cli::{HooksAction, HooksArgs};
use crate::error::{Error, Result};
use crate::ui::Ui;

/// The script installed as `pre-commit` (the repository's `hooks/pre-commit`).
pub const PRE_COMMIT: &str = include_str!("../../hooks/pre-commit");

/// The line that marks a pre-commit hook as git-delegate's (any version).
const MARKER: &str = "# git-delegate pre-commit hook";

pub fn run(ui: &Ui, args: HooksArgs) -> Result<i32> {
    match args.action {
        HooksAction::Install { force, .. } => install(ui, force),
    }
}

struct Installed {
    hook: PathBuf,
    chained: Option<PathBuf>,
    changed: bool,
    /// A `pre-commit.local` that `--force` moved aside.
    backup: Option<PathBuf>,
}

fn install(ui: &Ui, force: bool) -> Result<i32> {
    let source = super::source()?;
    let dir = hooks_dir(&source)?;
    let done = install_into(&dir, force)?;
    if ui.json {
        ui.doc(json!({
            "hook": crate::paths::doc_path(&done.hook),
            "chained": done.chained.as_deref().map(crate::paths::doc_path),
            "changed": done.changed,
            "backup": done.backup.as_deref().map(crate::paths::doc_path),
        }));
    }
    let mut text = if done.changed {
        format!(
            "Installed the pre-commit hook {}\n",
            super::show(&done.hook)
        )
    } else {
        format!(
            "The pre-commit hook {} is already installed; nothing changed\n",
            super::show(&done.hook)
        )
    };
    if let Some(c) = &done.chained {
        text.push_str(&format!(
            "It runs {} first; if that fails, the commit is refused\n",
            super::show(c)
        ));
    }
    if let Some(b) = &done.backup {
        text.push_str(&format!(
            "The previous pre-commit.local was kept as {}\n",
            super::show(b)
        ));
    }
    ui.say(&text);
    Ok(0)
}

/// The hooks folder git uses for this worktree.
fn hooks_dir(source: &crate::repo::Source) -> Result<PathBuf> {
    let configured = source
        .repo
        .config_snapshot()
        .trusted_path("core.hooksPath")
        .map_err(|e| {
            Error::usage(
                "delegate::config",
                format!("core.hooksPath cannot be read: {e}"),
                "fix core.hooksPath with `git config core.hooksPath DIR`",
            )
        })?;
    Ok(match configured {
        Some(p) if !p.as_os_str().is_empty() => source.root.join(p),
        _ => source.common_dir.join("hooks"),
    })
}

fn install_into(dir: &Path, force: bool) -> Result<Installed> {
    let hook = dir.join("pre-commit");
    let local = dir.join("pre-commit.local");
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
        .is_some_and(|c| String::from_utf8_lossy(c).contains(MARKER));
    match current {
        Some(c) if c == PRE_COMMIT.as_bytes() => {}
        Some(_) if ours => {
            // An older version of our own hook: replace it.
            write_hook(&hook)?;
            changed = true;
        }
        Some(_) => {
            if exists(&local) {
                if !force {
                    return Err(Error::usage(
                        "delegate::hook_exists",
                        format!(
                            "{} is not git-delegate's hook, and {} exists too",
                            hook.display(),
                            local.display()
                        ),
                        "merge the two hooks into pre-commit.local yourself, or pass --force (the old pre-commit.local is kept as pre-commit.local.bak)",
                    ));
                }
                let bak = free_name(dir, "pre-commit.local.bak");
                std::fs::rename(&local, &bak).map_err(io(&local))?;
                backup = Some(bak);
            }
            std::fs::rename(&hook, &local).map_err(io(&hook))?;
            write_hook(&hook)?;
            changed = true;
        }
        None => {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            write_hook(&hook)?;
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
    })
}

/// Write our script to `hook` atomically, executable.
fn write_hook(hook: &Path) -> Result<()> {
    crate::fs::write_atomic(hook, PRE_COMMIT.as_bytes())?;
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
