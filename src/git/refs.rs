//! The private refs under `refs/pi-delegate/` (design §2) that keep baselines
//! and proposals reachable.
//!
//! Owns: names of, and atomic creation, update and deletion of, private refs,
//! and their error (`RefError`: which ref, what was done to it, the git
//! library's error as its cause).
//! Never: touches `refs/heads`, `refs/tags`, HEAD or any other ref; words a
//! help line or decides an error code (`ops::explain` does).

use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

/// A private ref the git library could not name, write, read, delete or
/// list. The message is the `Display` followed by the cause, as
/// `ops::explain` words it.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    #[error("invalid ref name {name}")]
    Name {
        name: String,
        #[source]
        source: gix::validate::reference::name::Error,
    },
    #[error("cannot write ref {name}")]
    Write {
        name: String,
        #[source]
        source: gix::Error,
    },
    #[error("cannot read ref {name}")]
    Read {
        name: String,
        #[source]
        source: gix::Error,
    },
    #[error("cannot delete ref {name}")]
    Delete {
        name: String,
        #[source]
        source: gix::Error,
    },
    #[error("cannot list refs/pi-delegate")]
    List {
        #[source]
        source: gix::Error,
    },
}

type Result<T, E = RefError> = std::result::Result<T, E>;

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
    name.try_into().map_err(|source| RefError::Name {
        name: name.to_string(),
        source,
    })
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
        .map_err(|source| RefError::Write {
            name: name.to_string(),
            source,
        })
}

/// The object `name` points to, if it exists.
pub fn get(repo: &gix::Repository, name: &str) -> Result<Option<ObjectId>> {
    match repo.try_find_reference(name) {
        Ok(Some(mut r)) => match r.peel_to_id() {
            Ok(id) => Ok(Some(id.detach())),
            Err(source) => Err(RefError::Read {
                name: name.to_string(),
                source,
            }),
        },
        Ok(None) => Ok(None),
        Err(source) => Err(RefError::Read {
            name: name.to_string(),
            source,
        }),
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
        .map_err(|source| RefError::Delete {
            name: name.to_string(),
            source,
        })
}

/// Every private ref, as (name, target).
pub fn list(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>> {
    list_under(repo, PREFIX)
}

/// The private refs whose names start with `prefix` (which starts with
/// [`PREFIX`]), as [`list`] gives them: the others are not read (a
/// repository keeps the refs of every undo entry there).
fn list_under(repo: &gix::Repository, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
    let err = |source: gix::Error| RefError::List { source };
    let platform = repo.references().map_err(err)?;
    let mut out = Vec::new();
    for r in platform.prefixed(prefix).map_err(err)? {
        let mut r = r.map_err(err)?;
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
    Ok(list_under(repo, &prefix)?
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.starts_with(&prefix))
        .collect())
}
