//! Kept proposals (design §3.16): proposal refs no readable batch owns any
//! more (gc rescued them, their task was discarded, or their batch is
//! gone), with their patches under `<common-dir>/delegate/kept/<batch>/`,
//! kept until their commit is older than `gc.keep-failed`.
//!
//! Owns: where kept patches live (`kept_dir`), listing the kept proposals
//! (`kept_proposals`: status, `apply --kept`, completion), and their clock:
//! a kept ref's commit time, which `redate` starts again when its batch is
//! reclaimed or its task discarded (`commit_time`).
//! Its errors are those of the refs and commits it reads and writes
//! (`KeptError`).
//! Never: removes a kept proposal (gc does, once it expired) or lands one
//! (`ops::kept` does); words a help line or decides an error code
//! (`ops::explain` does).

use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::error::{lower_from, Lower};
use crate::git::commit::{self, CommitError};
use crate::git::refs::{self, RefError};
use crate::git::repo::Source;
use crate::record::batch::{discard_kept, Entry};

/// Why a kept proposal could not be listed or redated: its ref or its
/// commit. The message is the `Display` (the cause's own for `Ref` and
/// `Commit`).
#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    /// Its ref or its commit, in their own words.
    #[error(transparent)]
    Lower(#[from] Lower),
    /// The kept commit's tree or message cannot be read.
    #[error("cannot read commit {id}")]
    Read {
        id: ObjectId,
        #[source]
        source: gix::Error,
    },
}

lower_from!(KeptError: RefError, CommitError);

type Result<T, E = KeptError> = std::result::Result<T, E>;

/// Where kept patches live once their batch's state folder is gone.
pub fn kept_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("kept")
}

/// A proposal kept after its task ended (design §3.16): rescued by gc, of a
/// discarded task, or of a batch that is gone.
#[derive(Debug, Clone)]
pub struct Kept {
    pub ref_name: String,
    pub batch: String,
    pub task: String,
    /// The kept patch, when it is there.
    pub patch: Option<PathBuf>,
    /// When its keep-failed clock started: its commit's time (redated
    /// when its batch was reclaimed or its task discarded).
    pub kept_at: i64,
    /// When gc may remove it: its commit's time plus `gc.keep-failed`.
    pub expires_at: i64,
}

/// Every kept proposal: proposal refs no readable batch owns (their batch is
/// gone, or their task was discarded). Refs of a batch whose state cannot
/// be read are its own, not listed.
pub fn kept_proposals(source: &Source, entries: &[Entry]) -> Result<Vec<Kept>> {
    let refs = refs::list(&source.repo)?;
    let batches_prefix = format!("{}batches/", refs::PREFIX);
    let kept = kept_dir(&source.state_dir());
    let keep = source.config.keep_failed_secs;
    let mut out = Vec::new();
    for (name, id) in refs {
        let Some(rest) = name.strip_prefix(&batches_prefix) else {
            continue;
        };
        let Some((batch_id, rest)) = rest.split_once("/tasks/") else {
            continue;
        };
        let Some(task) = rest.strip_suffix("/proposal") else {
            continue;
        };
        let owned = entries.iter().any(|e| match e {
            Entry::Batch(b) => b.id == batch_id && !discard_kept(b, &name),
            Entry::Broken { id, .. } => id == batch_id,
        });
        if owned {
            continue;
        }
        let patch = kept.join(batch_id).join(format!("{task}.patch"));
        let when = commit_time(&source.repo, id).unwrap_or_else(crate::sys::time::now);
        out.push(Kept {
            ref_name: name.clone(),
            batch: batch_id.to_string(),
            task: task.to_string(),
            patch: patch.is_file().then_some(patch),
            kept_at: when,
            expires_at: crate::sys::time::deadline(when, keep)
                .unwrap_or(crate::sys::time::MAX_SECS),
        });
    }
    Ok(out)
}

/// Give the commit a ref points to a fresh committer time (same tree,
/// parents, message), so the keep-failed clock starts when its batch is reclaimed.
pub fn redate(repo: &gix::Repository, name: &str) -> Result<()> {
    let Some(id) = refs::get(repo, name)? else {
        return Ok(());
    };
    let Ok(c) = repo.find_commit(id) else {
        return Ok(()); // not a commit: left as it is
    };
    if c.time().is_ok_and(|t| t.seconds >= crate::sys::time::now()) {
        return Ok(());
    }
    let err = |source: gix::Error| KeptError::Read { id, source };
    let tree = c.tree_id().map_err(err)?.detach();
    let parent = c.parent_ids().next().map(|p| p.detach());
    let message = c.message_raw().map_err(err)?.to_string();
    let new = commit::write(repo, tree, parent, message)?;
    Ok(refs::set(repo, name, new, false)?)
}

/// When a commit was made (its committer time), if it can be read.
pub fn commit_time(repo: &gix::Repository, id: ObjectId) -> Option<i64> {
    repo.find_commit(id).ok()?.time().ok().map(|t| t.seconds)
}
