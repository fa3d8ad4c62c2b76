//! The task's working folder inside its workspace: `<root>/<prefix>`,
//! made where it is missing by a walk from the workspace root through
//! handles (design §3.18), for `workspace.setup` and `run`'s workers.
//!
//! Owns: making that folder, and the words for what a worker put on the way.
//! Never: follows a symlink out of the workspace, or makes anything but
//! the missing folders of the prefix.

use std::path::Path;

/// Make the task's cwd `<root>/<prefix>` where it is missing, walking from
/// the workspace root through handles and never through a symlink (design
/// §3.18): `Ok(false)` when it cannot be made for another reason (the
/// worker then starts at the root), an error naming the symlink or file a
/// worker put on the way.
pub fn make_cwd(root: &Path, prefix: &Path) -> std::result::Result<bool, String> {
    use rustix::fs::{self as rfs, Mode, OFlags};
    use rustix::io::Errno;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(mut dir) = rfs::open(root, flags, Mode::empty()) else {
        return Ok(false);
    };
    let mut at = root.to_path_buf();
    for comp in prefix.components() {
        let std::path::Component::Normal(name) = comp else {
            return Ok(false);
        };
        at.push(name);
        let next = match rfs::openat(&dir, name, flags, Mode::empty()) {
            Err(Errno::NOENT) => match rfs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => rfs::openat(&dir, name, flags, Mode::empty()),
                Err(e) => Err(e),
            },
            other => other,
        };
        dir = match next {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let what = match at.symlink_metadata() {
                    Ok(m) if m.file_type().is_symlink() => "a symbolic link",
                    _ => "not a folder",
                };
                let q = crate::sys::paths::shell_quote(&at.to_string_lossy());
                return Err(format!(
                    "cannot enter the task's folder: {} is {what} now (a worker replaced it), and git-delegate never follows one out of the workspace; remove it (`rm {q}`, then `git -C {} checkout -- .` restores the folder) and run again",
                    at.display(),
                    crate::sys::paths::shell_quote(&root.to_string_lossy())
                ));
            }
            Err(_) => return Ok(false),
        };
    }
    Ok(true)
}
