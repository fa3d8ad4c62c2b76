//! Registrations of ours whose folder is gone (design §3.4, §3.3): a
//! `delegate-*` registration whose `gitdir` names a folder that no longer
//! exists, locked by a batch or naming a folder below the repository's
//! workspace folder (anything else named like ours is the user's). What
//! owns one is the caller's question: gc removes those no batch owns, and
//! `status` reports them so before gc.
//!
//! Owns: finding them.
//! Never: removes or changes anything; decides who owns one.

use std::path::{Path, PathBuf};

use crate::git::registration::{self, Registration};

/// A registration of ours whose folder is gone.
#[derive(Debug, Clone)]
pub struct DeadRegistration {
    /// Its name under `<common-dir>/worktrees/`.
    pub id: String,
    /// The registration folder.
    pub path: PathBuf,
    /// The worktree folder it names (gone), when its `gitdir` is readable.
    pub folder: Option<PathBuf>,
}

/// The registrations of ours in `common_dir` whose folder is gone; `base`:
/// the repository's workspace folder, when known.
pub fn dead_registrations(common_dir: &Path, base: Option<&Path>) -> Vec<DeadRegistration> {
    let Ok(rd) = std::fs::read_dir(registration::dir(common_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<DeadRegistration> = rd
        .flatten()
        .filter_map(|entry| {
            let id = entry.file_name().to_str()?.to_string();
            if !id.starts_with("delegate-") {
                return None;
            }
            let registration = Registration::at(entry.path());
            let target = gitdir_of(&registration).map(|t| registration.path().join(t));
            let folder = target.as_deref().and_then(Path::parent);
            if folder.is_some_and(|f| f.symlink_metadata().is_ok()) {
                return None; // its folder is there: a worktree, not a leftover
            }
            let under_base = match (folder, base) {
                (Some(f), Some(base)) => f.starts_with(base),
                _ => false,
            };
            if !(registration.is_locked_by_a_batch() || under_base) {
                return None; // named like ours, but nothing says it is: the user's
            }
            Some(DeadRegistration {
                id,
                folder: folder.map(Path::to_path_buf),
                path: registration.path().to_path_buf(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The path a registration's `gitdir` file names, if readable.
fn gitdir_of(r: &Registration) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let text = std::fs::read(r.gitdir_file()).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    (!text.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(text)))
}
