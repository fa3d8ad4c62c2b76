//! The record of idle workspaces (design §3.20): one small TOML file per
//! idle workspace in `<common-dir>/delegate/pool/<id>.toml`, saying where
//! it is, which registration it has, the identity of its folder (device,
//! inode, real path, subvolume: as a task's `[tasks.folder]`), the tree a
//! snapshot of it gave when it went idle (what it must still hold to be
//! reused) and when it went idle.
//!
//! Owns: the file's format, listing, saving (atomically) and removing
//! records; the id of a new idle workspace.
//! Its failures are `PoolError`; `ops::explain` words them.
//! Never: touches a workspace or its registration (`workspace::pool`
//! moves, checks and removes them), or decides whether one is reused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::batch::Folder;
use crate::sys::fs::{FsError, PathError};

/// The folder of the records inside the state folder.
pub const DIR: &str = "pool";

/// The folder name the pool's workspaces live in, below the repository's
/// folder of the workspace root (`<root>/<repo>-<fp>/pool/<id>`), idle or
/// serving a task: no batch's short id (those are hex digits).
pub const FOLDER: &str = "pool";

/// The lock reason of an idle workspace's registration (the whole file).
pub const LOCK_REASON: &str = "git-delegate pool\n";

/// One idle workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Idle {
    /// Its id: the folder's name below `pool/` and, prefixed with
    /// `delegate-pool-`, its registration's.
    pub id: String,
    /// Where it is: `<root>/<repo>-<fp>/pool/<id>`.
    pub root: PathBuf,
    /// The identity of the folder, taken when it went idle.
    pub folder: Folder,
    /// The tree of a snapshot of it then (its index as the stat cache).
    pub tree: String,
    /// The commit its HEAD names (the baseline it was last moved to).
    pub commit: String,
    /// When it went idle (RFC 3339).
    pub idle_since: String,
}

impl Idle {
    /// Its registration's name.
    pub fn worktree_id(&self) -> String {
        worktree_id(&self.id)
    }
}

/// The registration name of idle workspace `id`.
pub fn worktree_id(id: &str) -> String {
    format!("delegate-pool-{id}")
}

/// The slot id of a workspace at `root` registered as `worktree_id`, when
/// it is a slot of the pool: `<root>/<repo>-<fp>/pool/<id>`, registered
/// as `delegate-pool-<id>` (design §3.20).
pub fn slot_of(root: &Path, worktree_id: &str) -> Option<String> {
    let id = root.file_name()?.to_str()?;
    let in_pool = root
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|f| f == FOLDER);
    (is_id(id) && in_pool && worktree_id == self::worktree_id(id)).then(|| id.to_string())
}

/// The stat record of the idle workspace `id` (`record::stat`), beside
/// its `<id>.toml`.
pub fn stat_of(state_dir: &Path, id: &str) -> PathBuf {
    dir(state_dir).join(format!("{id}.{}", super::stat::EXT))
}

/// `<state>/pool`.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join(DIR)
}

/// A new id: 12 hex digits, random.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Every readable record, oldest first (an unreadable one is skipped; gc
/// removes it with [`remove_unreadable`]).
pub fn list(state_dir: &Path) -> Vec<Idle> {
    let Ok(rd) = std::fs::read_dir(dir(state_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Idle> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".toml"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| toml::from_str::<Idle>(&t).ok())
        .filter(|i| is_id(&i.id))
        .collect();
    out.sort_by(|a, b| (&a.idle_since, &a.id).cmp(&(&b.idle_since, &b.id)));
    out
}

/// Is `id` one [`new_id`] makes (so a record cannot name a path elsewhere)?
pub fn is_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Why a record could not be saved or removed.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// An id that is not one of [`new_id`]'s (a bug of the caller).
    #[error("{id:?} is no idle workspace id")]
    BadId { id: String },
    /// A record that TOML cannot hold (a bug: every field is a string).
    #[error("cannot write the pool record: {0}")]
    Toml(toml::ser::Error),
    /// The folder or the file, named by its cause.
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// Save a record (temp file, rename; not fsync'd: after a power loss an
/// idle workspace whose record was lost is an orphan gc removes, design
/// §3.20); its id must be one of [`new_id`]'s.
pub fn save(state_dir: &Path, idle: &Idle) -> Result<(), PoolError> {
    if !is_id(&idle.id) {
        return Err(PoolError::BadId {
            id: idle.id.clone(),
        });
    }
    let d = dir(state_dir);
    std::fs::create_dir_all(&d).map_err(|e| FsError::from(PathError::on("create", &d)(e)))?;
    let text = toml::to_string(idle).map_err(PoolError::Toml)?;
    let path = d.join(format!("{}.toml", idle.id));
    Ok(crate::sys::fs::write_replacing(
        &path,
        text.as_bytes(),
        false,
    )?)
}

/// Remove the record of `id` and its stat record (gone already is fine).
pub fn remove(state_dir: &Path, id: &str) -> Result<(), PoolError> {
    if !is_id(id) {
        return Ok(());
    }
    crate::sys::fs::remove_file(&dir(state_dir).join(format!("{id}.toml")))?;
    Ok(super::stat::remove(&stat_of(state_dir, id))?)
}

/// Remove the files in `<state>/pool` that are no readable record, nor
/// the stat record of one (best effort); returns how many.
pub fn remove_unreadable(state_dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir(state_dir)) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let stat_of = name
            .strip_suffix(&format!(".{}", super::stat::EXT))
            .filter(|id| is_id(id));
        let ok = match stat_of {
            Some(id) => dir(state_dir).join(format!("{id}.toml")).is_file(),
            None => std::fs::read_to_string(e.path())
                .ok()
                .and_then(|t| toml::from_str::<Idle>(&t).ok())
                .is_some_and(|i| is_id(&i.id)),
        };
        let temp = crate::sys::fs::is_temp_name(std::os::unix::ffi::OsStrExt::as_bytes(
            e.file_name().as_os_str(),
        ));
        if !ok && !temp && e.file_type().is_ok_and(|t| t.is_file()) {
            n += usize::from(std::fs::remove_file(e.path()).is_ok());
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(id: &str, since: &str) -> Idle {
        Idle {
            id: id.to_string(),
            root: PathBuf::from(format!("/ws/r-0123456789ab/pool/{id}")),
            folder: Folder {
                dev: 1,
                ino: 2,
                path: PathBuf::from(format!("/ws/r-0123456789ab/pool/{id}")),
                subvolume: None,
            },
            tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904".to_string(),
            commit: String::new(),
            idle_since: since.to_string(),
        }
    }

    #[test]
    fn records_round_trip_oldest_first_and_bad_ones_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path();
        let (a, b) = (new_id(), new_id());
        assert!(is_id(&a) && a != b);
        save(state, &idle(&b, "2026-01-02T00:00:00Z")).unwrap();
        save(state, &idle(&a, "2026-01-01T00:00:00Z")).unwrap();
        // A record naming a path elsewhere, and one that is no TOML.
        assert!(save(state, &idle("../../etc", "2026-01-01T00:00:00Z")).is_err());
        let bad = toml::to_string(&idle("../../etc", "2026-01-01T00:00:00Z")).unwrap();
        std::fs::write(dir(state).join("bad.toml"), bad).unwrap();
        std::fs::write(dir(state).join("junk.toml"), "not [toml").unwrap();
        let ids: Vec<String> = list(state).into_iter().map(|i| i.id).collect();
        assert_eq!(ids, vec![a.clone(), b.clone()]);
        assert_eq!(remove_unreadable(state), 2);
        remove(state, &a).unwrap();
        remove(state, &a).unwrap();
        assert_eq!(list(state), vec![idle(&b, "2026-01-02T00:00:00Z")]);
        assert_eq!(worktree_id(&b), format!("delegate-pool-{b}"));
    }
}
