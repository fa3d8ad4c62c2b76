//! git-delegate's synthetic commits (baselines, proposals), all with the
//! fixed identity `git-delegate <git-delegate@localhost>`.
//!
//! Owns: writing commit objects, reading a commit's tree, and their error
//! (`CommitError`, with the git library's error as its cause).
//! Never: moves a ref (see `refs`); words a help line or decides an error
//! code (`ops::explain` does).

use gix::ObjectId;

/// A commit the git library could not write or read. The message is the
/// `Display` (followed by the cause, as `ops::explain` words it, but for
/// `Missing`, which says it).
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("cannot write a commit")]
    Write {
        #[source]
        source: gix::Error,
    },
    #[error("bad commit id {hex}")]
    BadId {
        hex: String,
        #[source]
        source: gix::Error,
    },
    /// The object database has no such commit.
    #[error("the commit {hex} is missing: {source}")]
    Missing {
        hex: String,
        #[source]
        source: gix::Error,
    },
    #[error("cannot read commit {hex}")]
    Read {
        hex: String,
        #[source]
        source: gix::Error,
    },
}

type Result<T, E = CommitError> = std::result::Result<T, E>;

pub fn write(
    repo: &gix::Repository,
    tree: ObjectId,
    parent: Option<ObjectId>,
    message: String,
) -> Result<ObjectId> {
    let sig = gix::actor::Signature {
        name: "git-delegate".into(),
        email: "git-delegate@localhost".into(),
        time: gix::date::Time {
            seconds: crate::sys::time::now(),
            offset: 0,
        },
    };
    let commit = gix::objs::Commit {
        tree,
        parents: parent.into_iter().collect::<Vec<_>>().into(),
        author: sig.clone(),
        committer: sig,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    };
    repo.write_object(&commit)
        .map(|id| id.detach())
        .map_err(|source| CommitError::Write { source })
}

/// The tree of a commit given by its hex id.
pub fn tree_of(repo: &gix::Repository, commit_hex: &str) -> Result<ObjectId> {
    let id = ObjectId::from_hex(commit_hex.as_bytes()).map_err(|source| CommitError::BadId {
        hex: commit_hex.to_string(),
        source,
    })?;
    let commit = repo
        .find_commit(id)
        .map_err(|source| CommitError::Missing {
            hex: commit_hex.to_string(),
            source,
        })?;
    commit
        .tree_id()
        .map(|t| t.detach())
        .map_err(|source| CommitError::Read {
            hex: commit_hex.to_string(),
            source,
        })
}
