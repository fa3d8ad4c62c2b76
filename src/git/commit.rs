//! git-delegate's synthetic commits (baselines, proposals), all with the
//! fixed identity `git-delegate <git-delegate@localhost>`.
//!
//! Owns: writing commit objects.
//! Never: moves a ref (see `refs`).

use gix::ObjectId;

use crate::error::{Code, Error, Result};

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
        .map_err(|e| Error::git("cannot write a commit", e))
}

/// The tree of a commit given by its hex id.
pub fn tree_of(repo: &gix::Repository, commit_hex: &str) -> Result<ObjectId> {
    let id = ObjectId::from_hex(commit_hex.as_bytes())
        .map_err(|e| Error::git(format!("bad commit id {commit_hex}"), e))?;
    let commit = repo.find_commit(id).map_err(|e| {
        Error::state(
            Code::MissingObject,
            format!("the commit {commit_hex} is missing: {e}"),
            "the repository lost objects git-delegate needs; run `git fsck`",
        )
    })?;
    commit
        .tree_id()
        .map(|t| t.detach())
        .map_err(|e| Error::git(format!("cannot read commit {commit_hex}"), e))
}
