//! `git delegate hook pre-commit` (SPEC §3.7): refuse commits inside the
//! workspaces of a forbid-commit batch; warn about (or refuse commits
//! while there are) stale batches; otherwise exit 0 silently.
//!
//! It runs on every commit, so it must be fast: it finds the common dir by
//! reading files (git gives hooks `GIT_DIR`; a linked worktree's git dir
//! names the common dir in `commondir`) and stops there when the repository
//! has no batches, without opening the repository or reading any config.
//! Never: changes anything; a failure of its own never refuses a commit
//! (only a forbid-commit workspace or `hooks.stale-leases = "block"` does).

use std::path::{Path, PathBuf};

use crate::batch::{self, Entry};
use crate::cli::{HookArgs, HookName};
use crate::config::{Config, StaleLeases};
use crate::error::Result;
use crate::problems::{Fact, Problem};
use crate::ui::Ui;

pub fn run(ui: &Ui, args: HookArgs) -> Result<i32> {
    match args.hook {
        HookName::PreCommit => Ok(pre_commit(ui)),
    }
}

/// Where the hook runs: the git dir of the worktree being committed in, and
/// the repository's common dir.
struct Location {
    git_dir: PathBuf,
    common_dir: PathBuf,
}

fn pre_commit(ui: &Ui) -> i32 {
    let Ok(cwd) = std::env::current_dir() else {
        return 0;
    };
    let Some(loc) = locate(&cwd) else {
        return 0;
    };
    let state_dir = loc.common_dir.join("delegate");
    let has_batches =
        std::fs::read_dir(batch::batches_dir(&state_dir)).is_ok_and(|mut rd| rd.next().is_some());
    if !has_batches {
        return 0;
    }
    let warn = |m: &str| ui.warn(&format!("git-delegate: {m}\n"));
    let entries = match batch::list(&state_dir) {
        Ok(e) => e,
        Err(e) => {
            warn(&format!(
                "cannot check batches: {}",
                crate::ui::escape_text(&e.message)
            ));
            return 0;
        }
    };
    let config = match Config::load(&loc.common_dir.join("delegate.toml")) {
        Ok(c) => c,
        Err(e) => {
            warn(&format!(
                "{} (using the defaults)",
                crate::ui::escape_text(&e.message)
            ));
            Config::default()
        }
    };

    if let Some(text) = forbidden(&loc, &cwd, &entries, config.forbid_commit) {
        ui.warn(&text);
        return 1;
    }

    if config.stale_leases == StaleLeases::Ignore {
        return 0;
    }
    let problems = crate::problems::of_state(&state_dir, &entries);
    if problems.is_empty() {
        return 0;
    }
    let mut text = String::new();
    for p in &problems {
        text.push_str(&format!("git-delegate: {}\n", message(p)));
    }
    if config.stale_leases == StaleLeases::Block {
        text.push_str(
            "git-delegate: commit refused (hooks.stale-leases = \"block\" in .git/delegate.toml); \
resolve the batches above, or commit with --no-verify\n",
        );
        ui.warn(&text);
        return 1;
    }
    ui.warn(&text);
    0
}

/// The refusal text when the commit happens inside a workspace of a
/// forbid-commit batch.
fn forbidden(loc: &Location, cwd: &Path, entries: &[Entry], forbid_all: bool) -> Option<String> {
    let git_dir = std::fs::canonicalize(&loc.git_dir).ok();
    let registrations = std::fs::canonicalize(&loc.common_dir)
        .ok()?
        .join("worktrees");
    for e in entries {
        let Entry::Batch(b) = e else { continue };
        if !(b.forbid_commit || forbid_all) {
            continue;
        }
        for t in b.open_tasks() {
            let inside = git_dir.as_deref() == Some(registrations.join(&t.worktree_id).as_path())
                || std::fs::canonicalize(&t.root).is_ok_and(|r| cwd.starts_with(r));
            if inside {
                let label = b
                    .label
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                return Some(format!(
                    "git-delegate: commit refused: this is the workspace of task {} of batch {}{label}, \
which forbids commits (prepare --forbid-commit or hooks.forbid-commit).\n\
git-delegate: leave the changes as files: `git delegate apply {}` in the source working tree brings them back.\n",
                    t.name,
                    b.short(),
                    b.short()
                ));
            }
        }
    }
    None
}

/// A problem in the hook's words: one line naming the batch and what
/// resolves it. The hook shows only what `problems::of_state` finds.
fn message(p: &Problem) -> String {
    let short = p.short();
    match &p.fact {
        Fact::Stale(state) => format!(
            "batch {short} is stale (lease {}): apply it (`git delegate apply {short}`), extend it (`git delegate renew {short}`), or reclaim it (`git delegate gc`)",
            state.as_str()
        ),
        Fact::Journal { .. } => format!(
            "batch {short} has an interrupted write-back: run `git delegate status`; the next `git delegate gc` (or apply) rolls it back"
        ),
        Fact::BrokenState { problem } => format!(
            "the state of batch {short} cannot be read ({problem}): run `git delegate status`"
        ),
        // Never found by `of_state`; worded as `status` would, shortly.
        _ => format!("batch {short} has a problem: run `git delegate status`"),
    }
}

/// Find the git dir and common dir by reading files only (no repository open).
fn locate(cwd: &Path) -> Option<Location> {
    // git gives hooks `GIT_DIR` (and `GIT_INDEX_FILE`); the process took
    // them out of its environment when it started (`repo::isolate_environment`).
    let env = crate::repo::git_env();
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
