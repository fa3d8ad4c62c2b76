//! A workspace's submodule registrations after it was made: whether a task
//! changed a submodule (`changed`, apply's `submodule_changed`), and
//! finding and removing (or unlocking) those registrations with their
//! workspace.
//!
//! Owns: those checks and removals.
//! Never: removes a registration it cannot prove it made (locked with a
//! git-delegate lock reason, under the workspace id, its `gitdir` file
//! pointing inside the workspace being removed).

use super::*;

/// The submodules a task changed in its workspace at `root` (a linked
/// worktree whose index holds the baseline's gitlinks): any whose folder is
/// gone or replaced, whose HEAD moved off the recorded commit, whose files
/// differ from it (untracked files count: the worker made them), or, for
/// one not initialized, whose empty folder got content. Nested submodules
/// are looked into through their parents. A repository without submodule
/// repositories (`<common-dir>/modules`) whose workspace has no
/// `.gitmodules` costs two `stat`s: no index is read.
pub fn changed(common_dir: &Path, root: &Path) -> Result<Vec<BString>> {
    // Without submodule repositories nor a `.gitmodules`, no gitlink can
    // hold anything: the index is not read.
    if !common_dir.join("modules").exists() && !root.join(".gitmodules").exists() {
        return Ok(Vec::new());
    }
    let repo = crate::git::repo::open_worktree(root)?;
    let mut out = Vec::new();
    walk(&repo, root, b"", 0, &mut |link| {
        let dir = &link.dir;
        let changed = match dir.symlink_metadata() {
            Ok(md) if md.is_dir() => match dir.join(".git").symlink_metadata() {
                // Not initialized: changed once its empty folder got content.
                Err(_) => {
                    if !crate::sys::fs::is_empty_dir(dir) {
                        out.push(link.full);
                    }
                    return Ok(None);
                }
                Ok(md) => !md.is_file(),
            },
            _ => true,
        };
        let sub = match changed {
            true => None,
            false => crate::git::repo::open_worktree(dir).ok(),
        };
        match sub {
            Some(sub)
                if sub.head_id().ok().map(|h| h.detach()) == Some(link.commit)
                    && first_change(&sub, true)?.is_none() =>
            {
                Ok(Some(sub))
            }
            _ => {
                out.push(link.full);
                Ok(None)
            }
        }
    })?;
    Ok(out)
}

/// The registrations named `worktree_id` in the submodule repositories
/// under `common_dir` (`modules/`, nested ones included) that this
/// workspace's submodules use: locked by git-delegate and with a `gitdir`
/// file pointing inside `root`.
fn registrations(common_dir: &Path, root: &Path, worktree_id: &str) -> Vec<Registration> {
    let mut found = Vec::new();
    let mut stack = vec![(common_dir.join("modules"), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        if depth > 64 || !crate::sys::fs::is_real_dir(&dir) {
            continue;
        }
        let is_repo = dir.join("HEAD").is_file() && dir.join("objects").is_dir();
        if is_repo {
            let reg = Registration::new(&dir, worktree_id);
            if reg.is_locked_by_a_batch() && points_inside(&reg, root) {
                found.push(reg);
            }
            stack.push((dir.join("modules"), depth + 1));
            continue;
        }
        // A folder of a submodule name with slashes (`modules/libs/a`).
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    found
}

/// Does the registration's `gitdir` file name a `.git` strictly inside `root`?
fn points_inside(reg: &Registration, root: &Path) -> bool {
    let Ok(text) = std::fs::read(reg.gitdir_file()) else {
        return false;
    };
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let dotgit = crate::sys::paths::to_os(text.as_bstr());
    dotgit.file_name().is_some_and(|n| n == ".git")
        && dotgit
            .parent()
            .is_some_and(|p| p != root && p.starts_with(root))
}

/// Remove the submodule registrations of the workspace `worktree_id` at
/// `root` (see [`registrations`]). A workspace without submodules costs one
/// failed `stat` of `<common-dir>/modules`.
pub fn unregister(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<()> {
    for reg in registrations(common_dir, root, worktree_id) {
        match std::fs::remove_dir_all(reg.path()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(WorkspaceError::io("remove", reg.path())(source)),
        }
    }
    Ok(())
}

/// Unlock the submodule registrations of a workspace handed over as an
/// ordinary worktree (`apply --keep`, a workspace hosting a batch).
pub fn release(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<()> {
    for reg in registrations(common_dir, root, worktree_id) {
        match std::fs::remove_file(reg.locked_file()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(WorkspaceError::io("unlock", &reg.locked_file())(source)),
        }
    }
    Ok(())
}
