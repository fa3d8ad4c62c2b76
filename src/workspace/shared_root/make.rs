//! Making the folders a prepare works in below the workspace root (design
//! §3.18 "Shared workspace roots"): the root checked safe (no folder on
//! the way another user could change), then the repository folder and the
//! batch folder made `0700` and ours, each through the handle of the one
//! above.
//!
//! Owns: `check` (before anything is made), `make_batch_dir` and the root's check.
//! Never: follows a symlink below the root, or takes a folder of another user.

use super::*;

/// Check, before anything is made, that a prepare may work in the
/// repository folder `base`: the root (as far as it exists) is safe and
/// the repository folder, if it is there, is a folder of ours.
pub fn check(base: &Path) -> Result<()> {
    let Some((root, _)) = split(base) else {
        return Ok(());
    };
    check_root(root)?;
    match open_base(base)? {
        Opened::Refused(r) => Err(r.error()),
        _ => Ok(()),
    }
}

/// Make (or take) the batch folder `<base>/<short>` for workspaces: the
/// root (folders it lacks made `0700`), checked safe, then the repository
/// folder and the batch folder, each through the handle of the one above,
/// `0700` and ours. Returns the batch folder held open.
pub fn make_batch_dir(base: &Path, short: impl AsRef<OsStr>) -> Result<Dir> {
    let Some((root, name)) = split(base) else {
        return Err(WorkspaceError::NoRoot {
            base: base.to_path_buf(),
        });
    };
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)
            .map_err(WorkspaceError::at("create", root, (root, IN_ROOT)))?;
    }
    check_root(root)?;
    let rootfd = crate::workspace::carry::open_root(root)?;
    let base = make_child_at(rootfd.as_fd(), root, name)?;
    base.make_child(short.as_ref())
}

/// [`make_batch_dir`] for the batch folder `batch` (`<base>/<short>`).
pub fn make_batch_dir_at(batch: &Path) -> Result<Dir> {
    match split(batch) {
        Some((base, short)) => make_batch_dir(base, short),
        None => make_batch_dir(batch, "."),
    }
}

/// The workspace root is safe when no folder on the way to it (itself
/// included, symlinks resolved) belongs to another user than this one or
/// root, or is writable by everyone without the sticky bit, and no symlink
/// on the way (as written) belongs to another user: then only this user
/// and root can change what its path leads to. A folder writable by its
/// group is taken as the group's choice (as git takes it for
/// `safe.directory`). The parts of `root` not made yet are not asked.
fn check_root(root: &Path) -> Result<()> {
    let mine = |uid: u32| uid == me() || uid == 0;
    let mut existing = PathBuf::new();
    for part in root.components() {
        let next = existing.join(part);
        match rfs::lstat(&next) {
            Ok(st) => {
                let kind = FileType::from_raw_mode(st.st_mode as _);
                if kind == FileType::Symlink && !mine(st.st_uid as u32) {
                    return Err(Refused {
                        path: next,
                        owner: st.st_uid as u32,
                        reason: Reason::Symlink,
                    }
                    .error());
                }
            }
            Err(_) => break,
        }
        existing = next;
    }
    if existing.as_os_str().is_empty() {
        return Ok(());
    }
    let Ok(real) = std::fs::canonicalize(&existing) else {
        return Ok(());
    };
    let mut on_the_way = Some(real.as_path());
    while let Some(dir) = on_the_way {
        if let Ok(st) = rfs::stat(dir) {
            let mode = st.st_mode as u32;
            let reason = if !mine(st.st_uid as u32) {
                Some(Reason::OtherOwner)
            } else if mode & 0o002 != 0 && mode & 0o1000 == 0 {
                Some(Reason::WritableByOthers)
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(Refused {
                    path: dir.to_path_buf(),
                    owner: st.st_uid as u32,
                    reason,
                }
                .error());
            }
        }
        on_the_way = dir.parent();
    }
    Ok(())
}
