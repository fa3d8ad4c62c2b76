//! The private refs under `refs/pi-delegate/` (design §2) that keep baselines
//! and proposals reachable.
//!
//! Owns: names of, and atomic creation, update and deletion of, private refs.
//! Never: touches `refs/heads`, `refs/tags`, HEAD or any other ref.

use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

use crate::error::{Error, Result};

pub const PREFIX: &str = "refs/pi-delegate/";

pub fn baseline(batch: &str) -> String {
    format!("{PREFIX}batches/{batch}/baseline")
}

pub fn proposal(batch: &str, task: &str) -> String {
    format!("{PREFIX}batches/{batch}/tasks/{task}/proposal")
}

/// A refreshed task's own base (design §3.12).
pub fn task_base(batch: &str, task: &str) -> String {
    format!("{PREFIX}batches/{batch}/tasks/{task}/base")
}

fn full_name(name: &str) -> Result<gix::refs::FullName> {
    name.try_into()
        .map_err(|e| Error::git(format!("invalid ref name {name}"), e))
}

/// Remove a lock file left on one of our private refs by a git-delegate
/// process that was killed while editing it. Only git-delegate writes refs
/// under `refs/pi-delegate/`, and every caller holds the repository lock, so
/// such a lock can only be stale.
fn clear_stale_lock(repo: &gix::Repository, name: &str) {
    if name.starts_with(PREFIX) && !name.contains("..") {
        let _ = std::fs::remove_file(repo.common_dir().join(format!("{name}.lock")));
    }
}

/// Point `name` at `id`, creating it (it must not exist) or moving it.
pub fn set(repo: &gix::Repository, name: &str, id: ObjectId, must_not_exist: bool) -> Result<()> {
    let edit = RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: "git-delegate".into(),
            },
            expected: if must_not_exist {
                PreviousValue::MustNotExist
            } else {
                PreviousValue::Any
            },
            new: Target::Object(id),
        },
        name: full_name(name)?,
        deref: false,
    };
    clear_stale_lock(repo, name);
    repo.edit_references([edit])
        .map(|_| ())
        .map_err(|e| Error::git(format!("cannot write ref {name}"), e))
}

/// The object `name` points to, if it exists.
pub fn get(repo: &gix::Repository, name: &str) -> Result<Option<ObjectId>> {
    match repo.try_find_reference(name) {
        Ok(Some(mut r)) => match r.peel_to_id() {
            Ok(id) => Ok(Some(id.detach())),
            Err(e) => Err(Error::git(format!("cannot read ref {name}"), e)),
        },
        Ok(None) => Ok(None),
        Err(e) => Err(Error::git(format!("cannot read ref {name}"), e)),
    }
}

/// Delete `name` if it exists; returns whether it did.
pub fn delete(repo: &gix::Repository, name: &str) -> Result<bool> {
    if get(repo, name)?.is_none() {
        return Ok(false);
    }
    let edit = RefEdit {
        change: Change::Delete {
            expected: PreviousValue::Any,
            log: RefLog::AndReference,
        },
        name: full_name(name)?,
        deref: false,
    };
    clear_stale_lock(repo, name);
    repo.edit_references([edit])
        .map(|_| true)
        .map_err(|e| Error::git(format!("cannot delete ref {name}"), e))
}

/// Every private ref, as (name, target).
pub fn list(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>> {
    let err = |e: gix::Error| Error::git("cannot list refs/pi-delegate", e);
    let platform = repo.references().map_err(err)?;
    let mut out = Vec::new();
    for r in platform.prefixed(PREFIX).map_err(err)? {
        let mut r = r.map_err(|e| Error::git("cannot list refs/pi-delegate", e))?;
        let name = r.name().as_bstr().to_string();
        if let Ok(id) = r.peel_to_id() {
            out.push((name, id.detach()));
        }
    }
    Ok(out)
}

/// Every private ref of one batch.
pub fn list_batch(repo: &gix::Repository, batch: &str) -> Result<Vec<String>> {
    let prefix = format!("{PREFIX}batches/{batch}/");
    Ok(list(repo)?
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.starts_with(&prefix))
        .collect())
}
