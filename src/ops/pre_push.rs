//! The pre-push hook's check (design §3.19): a push whose new commits
//! include a git-delegate baseline that differs from its first parent would
//! publish the user's uncommitted and untracked files (a worker's branch made
//! in its workspace sits on the baseline). `commands/hook.rs` words it.
//!
//! Owns: reading git's pre-push lines, walking only the commits the remote
//! does not have (stopping at the remote's old tip and at every ref we know
//! of that remote), and recognising a baseline (author
//! `git-delegate@localhost`, message `git-delegate baseline <id>`, as
//! `prepare` writes it).
//! Never: changes anything; refuses a push for any other reason (a failure
//! of its own is `Unchecked`, which allows the push); looks at pushes to
//! `refs/pi-delegate/` (prepare --remote's own).

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::config::PrivateBaselines;
use crate::error::{Error, Result};
use crate::git::repo::Source;

/// One ref the push would publish a baseline with.
#[derive(Debug, Clone)]
pub struct Found {
    /// The local ref pushed (`refs/heads/agent/x`).
    pub local_ref: String,
    /// The remote ref it goes to.
    pub remote_ref: String,
    /// The baseline commit among the new commits.
    pub baseline: ObjectId,
    /// The batch id the baseline names.
    pub batch: String,
}

/// What the check found.
pub enum PrePush {
    /// Nothing to say.
    Clear,
    /// The check could not be made (the push is allowed).
    Unchecked(Error),
    /// Baselines in the push, and what the config says to do.
    Found {
        found: Vec<Found>,
        mode: PrivateBaselines,
        config_error: Option<Error>,
    },
}

/// Check a push to `remote` whose lines (`<local ref> <local sha> <remote
/// ref> <remote sha>`) are `input`.
pub fn check(remote: &str, input: &str) -> PrePush {
    match check_inner(remote, input) {
        Ok(p) => p,
        Err(e) => PrePush::Unchecked(e),
    }
}

fn check_inner(remote: &str, input: &str) -> Result<PrePush> {
    let pushes: Vec<(&str, &str, &str, &str)> = input
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?, w.next()?, w.next()?))
        })
        .filter(|(_, _, remote_ref, _)| !remote_ref.starts_with(crate::git::refs::PREFIX))
        .filter(|(_, local, _, _)| local.bytes().any(|b| b != b'0'))
        .collect();
    if pushes.is_empty() {
        return Ok(PrePush::Clear);
    }
    let source = Source::discover_here()?;
    let (mode, config_error) =
        match crate::config::Config::load(&source.common_dir.join("delegate.toml")) {
            Ok(c) => (c.private_baselines, None),
            Err(e) => (PrivateBaselines::default(), Some(e.into())),
        };
    if mode == PrivateBaselines::Ignore {
        return Ok(PrePush::Clear);
    }
    let repo = &source.repo;
    // What the remote has, as far as we know: its remote-tracking refs.
    let mut known: Vec<ObjectId> = Vec::new();
    if let Ok(platform) = repo.references() {
        if let Ok(iter) = platform.prefixed(format!("refs/remotes/{remote}/").as_str()) {
            for mut r in iter.flatten() {
                if let Ok(id) = r.peel_to_id() {
                    known.push(id.detach());
                }
            }
        }
    }
    let mut found = Vec::new();
    for (local_ref, local, remote_ref, old) in pushes {
        let tip = ObjectId::from_hex(local.as_bytes())
            .map_err(|e| Error::git(format!("bad object id {local}"), e))?;
        let mut hidden = known.clone();
        if let Ok(old) = ObjectId::from_hex(old.as_bytes()) {
            if !old.is_null() && repo.has_object(old) {
                hidden.push(old);
            }
        }
        let walk = repo
            .rev_walk([tip])
            .with_hidden(hidden)
            .all()
            .map_err(|e| Error::git("cannot walk the pushed commits", e))?;
        for info in walk {
            let info = info.map_err(|e| Error::git("cannot walk the pushed commits", e))?;
            let commit = repo
                .find_commit(info.id)
                .map_err(|e| Error::git(format!("cannot read commit {}", info.id), e))?;
            let Some(batch) = baseline_batch(&commit) else {
                continue;
            };
            let tree = commit
                .tree_id()
                .map_err(|e| Error::git("cannot read a tree", e))?
                .detach();
            let parent_tree = match commit.parent_ids().next() {
                Some(p) => Some(
                    repo.find_commit(p)
                        .map_err(|e| Error::git("cannot read a commit", e))?
                        .tree_id()
                        .map_err(|e| Error::git("cannot read a tree", e))?
                        .detach(),
                ),
                None => None,
            };
            let differs = match parent_tree {
                Some(t) => t != tree,
                None => tree != ObjectId::empty_tree(repo.object_hash()),
            };
            if differs {
                found.push(Found {
                    local_ref: local_ref.to_string(),
                    remote_ref: remote_ref.to_string(),
                    baseline: info.id,
                    batch,
                });
                break;
            }
        }
    }
    if found.is_empty() {
        return Ok(PrePush::Clear);
    }
    Ok(PrePush::Found {
        found,
        mode,
        config_error,
    })
}

/// The batch id a git-delegate baseline commit names, or `None` for any
/// other commit.
fn baseline_batch(commit: &gix::Commit<'_>) -> Option<String> {
    let c = commit.decode().ok()?;
    if c.author().ok()?.email != "git-delegate@localhost" {
        return None;
    }
    let rest = c.message.strip_prefix(b"git-delegate baseline ")?;
    let id = rest.lines().next()?.to_str().ok()?.trim().to_string();
    (!id.is_empty()).then_some(id)
}
