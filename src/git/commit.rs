//! git-delegate's synthetic commits (baselines, proposals), all with the
//! fixed identity `git-delegate <git-delegate@localhost>`.
//!
//! Owns: writing commit objects, reading a commit's tree, and their error
//! (`CommitError`, with the git library's error as its cause); the identity
//! of a git-delegate baseline (its author and the messages
//! `git-delegate baseline <id>` and `git-delegate base <id> (refresh)`),
//! written here and recognised here (`baseline_batch`), nowhere else.
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

/// The author and committer of every commit git-delegate writes.
const NAME: &str = "git-delegate";
const EMAIL: &str = "git-delegate@localhost";
/// The first words of a batch's baseline commit, followed by its id.
const BASELINE: &str = "git-delegate baseline ";
/// The first words of a refresh's new base, followed by the batch id.
const BASE: &str = "git-delegate base ";

/// The message of batch `id`'s baseline commit.
pub fn baseline_message(id: &str) -> String {
    format!("{BASELINE}{id}\n")
}

/// The message of the new base a refresh of batch `id` writes.
pub fn refresh_base_message(id: &str) -> String {
    format!("{BASE}{id} (refresh)\n")
}

/// The batch id a git-delegate baseline (or refresh base) commit names, or
/// `None` for any other commit.
pub fn baseline_batch(c: &gix::objs::CommitRef<'_>) -> Option<String> {
    use gix::bstr::ByteSlice;
    if c.author().ok()?.email != EMAIL {
        return None;
    }
    let rest = c
        .message
        .strip_prefix(BASELINE.as_bytes())
        .or_else(|| c.message.strip_prefix(BASE.as_bytes()))?;
    let id = rest.lines().next()?.to_str().ok()?;
    let id = id.split_whitespace().next()?.to_string();
    (!id.is_empty()).then_some(id)
}

pub fn write(
    repo: &gix::Repository,
    tree: ObjectId,
    parent: Option<ObjectId>,
    message: String,
) -> Result<ObjectId> {
    let sig = gix::actor::Signature {
        name: NAME.into(),
        email: EMAIL.into(),
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
