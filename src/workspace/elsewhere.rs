//! Where a task's work may be when its workspace is not at its place
//! (design §3.18 "Never delete what is not proven ours and empty of
//! work"): a task folder renamed inside its batch folder (`<batch>/1` to
//! `<batch>/renamed`), a batch folder moved aside (`zz-<batch>`), or a
//! workspace a killed command left aside in the trash. Such a folder still
//! holds the worker's files and a `.git` file naming the task's
//! registration; gc and drop must neither take the missing workspace for
//! "no work" nor delete the folder as a leftover.
//!
//! Owns: finding those folders below the repository's workspace folder.
//! Never: changes anything; follows a symlink (every folder is reached
//! through the handle of the one above, only when it is the user's own,
//! `shared_root`); reads more than a `.git` file of each.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::workspace::shared_root::Opened;

/// The folders two levels below the repository folder above `task`'s
/// workspace (`<root>/<repo>-<fp>/<any>/<any>`), other than its place,
/// whose `.git` file names the task's registration. Empty for a remote
/// task or a scratch copy.
pub fn copies(common_dir: &Path, task: &crate::record::batch::Task) -> Vec<PathBuf> {
    if task.remote || !crate::workspace::Kind::of_task(task).registered() {
        return Vec::new();
    }
    let Some(base) = task.root.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let Ok(Opened::Ours(base)) = crate::workspace::shared_root::open_base(base) else {
        return Vec::new();
    };
    let reg = crate::workspace::registration(common_dir, &task.worktree_id);
    let mut found = Vec::new();
    for top in base.dir.names() {
        let Ok(Opened::Ours(dir)) = base.dir.child(&top) else {
            continue;
        };
        for name in dir.names() {
            let path = dir.path().join(&name);
            if path == task.root {
                continue;
            }
            let Ok(Opened::Ours(ws)) = dir.child(&name) else {
                continue;
            };
            if crate::workspace::identity::dotgit_names(ws.fd(), &reg) {
                found.push(path);
            }
        }
    }
    found
}

/// Is the batch folder `task`'s workspace belongs in gone (nothing is at
/// its name)? A batch folder moved aside leaves its tasks' work wherever
/// it went. (Something else at its name, such as another user's symlink,
/// is refused and reported as such, design §3.18 "Shared workspace
/// roots".)
pub fn batch_folder_gone(task: &crate::record::batch::Task) -> bool {
    if task.remote || !crate::workspace::Kind::of_task(task).registered() {
        return false;
    }
    let (Some(batch), Some(base)) = (
        task.root.parent(),
        task.root.parent().and_then(Path::parent),
    ) else {
        return false;
    };
    let Some(short) = batch.file_name() else {
        return false;
    };
    match crate::workspace::shared_root::open_base(base) {
        Ok(Opened::Ours(base)) => matches!(base.dir.child(OsStr::new(short)), Ok(Opened::Missing)),
        Ok(Opened::Missing) => true,
        _ => false,
    }
}
