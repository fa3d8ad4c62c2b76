//! Workers on other machines through a git remote (design §3.14): the
//! baseline pushed by `prepare --remote`, a worker's `join` (a linked
//! worktree of an existing clone, or a clone of its own, detached at the
//! baseline), its `submit` (the workspace's files as a proposal commit on
//! the baseline, pushed to the task's proposal ref), the proposals `apply`
//! and `status --fetch` fetch, and the batch's remote refs deleted when it
//! ends.
//!
//! Owns: which refs travel and where they land (a proposal git will not
//! fetch is its task's alone: `Fetched::unfetchable`; a received tree is
//! counted before anything walks it: `Received::TooMany`, design §3.18
//! "Bounded work on remote bytes"). The worker's side (`join`, `submit`,
//! the file a joined workspace remembers its batch in) is `join`'s.
//! Never: runs git itself (`transport` does, the one place); writes the
//! source working tree; deletes local state because a remote failed;
//! deletes a remote ref without a lease on the value that was fetched
//! (design §3.14 "Remote refs"), or submits to a batch that ended.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch, Task};
use crate::{git::diff, git::refs, git::transport};

mod join;

pub use join::*;

/// A ref left on a remote, with the value a later deletion may take there
/// (`None`: never fetched here).
pub type LeftRef = (String, Option<ObjectId>);

/// The remote refs a batch's end left on its remote (design §3.14 "Remote
/// refs"), for its `remote_refs_left` warnings.
#[derive(Debug)]
pub struct Left {
    /// The remote's URL.
    pub remote: String,
    /// Refs the remote could not be asked to delete, and why (`git
    /// ls-remote` or `git push` failed): each with the value a later
    /// deletion may take (what this command fetched there, or listed for a
    /// ref no task owns; `None`: a proposal never fetched here, its worker's
    /// work, which no printed command deletes).
    pub failed: Option<(Error, Vec<LeftRef>)>,
    /// Newer submissions: refs that hold something this command never
    /// fetched (they moved since, or were pushed after it looked), each with
    /// what it holds now; never deleted.
    pub newer: Vec<(String, ObjectId)>,
}

/// The prefix of every ref of batch `id`.
fn batch_prefix(id: &str) -> String {
    format!("refs/pi-delegate/batches/{id}/")
}

/// `REMOTE` of `prepare --remote`: a remote of the source by name, or a URL
/// (or a path, made absolute) as given.
pub fn resolve(source: &Source, remote: &str) -> Result<batch::Remote> {
    if let Some(Ok(r)) = source.repo.try_find_remote(remote) {
        if let Some(url) = r
            .url(gix::remote::Direction::Push)
            .or_else(|| r.url(gix::remote::Direction::Fetch))
        {
            return Ok(batch::Remote {
                name: remote.to_string(),
                url: url.to_bstring().to_string(),
            });
        }
    }
    if remote.contains(':') || remote.contains('/') {
        let url = if !remote.contains("://") && Path::new(remote).exists() {
            crate::sys::fs::canonical(Path::new(remote))
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| remote.to_string())
        } else {
            remote.to_string()
        };
        return Ok(batch::Remote {
            name: remote.to_string(),
            url,
        });
    }
    Err(Error::usage(
        Code::UnknownRemote,
        format!("the repository has no remote named {remote:?}"),
        "name one of the remotes `git remote -v` lists, or give a URL",
    ))
}

/// What git is told to talk to: the remote's name while the source still
/// has it (its own push and fetch URLs, credentials and options), else its URL.
fn target(source: &Source, r: &batch::Remote) -> String {
    match source.repo.try_find_remote(r.name.as_str()) {
        Some(Ok(_)) => r.name.clone(),
        _ => r.url.clone(),
    }
}

/// Push the batch's baseline to its remote under the same ref name.
pub fn push_baseline(source: &Source, b: &Batch) -> Result<()> {
    let Some(r) = &b.remote else { return Ok(()) };
    let name = refs::baseline(&b.id);
    Ok(transport::push(
        &source.common_dir,
        &target(source, r),
        &[format!("+{}:{name}", b.baseline)],
    )?)
}

/// The command a worker runs to join task `task` of `b`.
pub fn join_command(b: &Batch, task: &str) -> Option<String> {
    let r = b.remote.as_ref()?;
    Some(format!(
        "git delegate join {} {} {}",
        crate::sys::paths::shell_quote(&r.url),
        b.id,
        crate::sys::paths::shell_quote(task)
    ))
}

/// The submitted proposals of the batch on its remote (task name ->
/// commit), asked with `git ls-remote`.
pub fn submitted(source: &Source, b: &Batch) -> Result<HashMap<String, ObjectId>> {
    let Some(r) = &b.remote else {
        return Ok(HashMap::new());
    };
    let prefix = format!("{}tasks/", batch_prefix(&b.id));
    let listed = transport::ls_remote(
        Some(&source.common_dir),
        &target(source, r),
        &format!("{prefix}*"),
    )?;
    Ok(listed
        .into_iter()
        .filter_map(|(name, id)| {
            let task = name.strip_prefix(&prefix)?.strip_suffix("/proposal")?;
            let id = ObjectId::from_hex(id.as_bytes()).ok()?;
            Some((task.to_string(), id))
        })
        .collect())
}

/// What [`fetch_proposals`] brought.
#[derive(Debug, Default)]
pub struct Fetched {
    /// Each task whose submitted proposal was fetched, with its commit.
    pub found: HashMap<String, ObjectId>,
    /// Each task whose submitted proposal git would not fetch although the
    /// remote answered (design §3.18 "Bounded work on remote bytes"): its
    /// objects are broken or the remote's upload-pack refuses them (a tree
    /// entry with an empty name, trees nested deeper than git's maximum
    /// depth). Only that task fails; none of its objects are here.
    pub unfetchable: BTreeMap<String, Unfetchable>,
}

/// A submitted proposal git would not fetch.
#[derive(Debug)]
pub struct Unfetchable {
    /// The commit the remote lists for it.
    pub listed: ObjectId,
    /// The fetch that failed, as the user would type it, and git's words.
    pub error: transport::TransportError,
}

impl Unfetchable {
    /// For people: the proposal, and what git said when asked for it alone
    /// (never "unreachable": the remote answered).
    pub fn why(&self) -> String {
        let said = match &self.error {
            transport::TransportError::Failed { said, .. } => said.clone(),
            other => other.to_string(),
        };
        format!(
            "git refuses to fetch its submitted proposal {} (git said: {said})",
            self.listed.to_hex_with_len(12)
        )
    }
}

impl Fetched {
    /// [`Fetched::found`], or the `delegate::invalid_path` error of the
    /// first proposal git would not fetch (for a command about one task).
    pub fn or_first_unfetchable(self) -> Result<HashMap<String, ObjectId>> {
        match self.unfetchable.into_iter().next() {
            None => Ok(self.found),
            Some((task, u)) => Err(Error::state(
                Code::InvalidPath,
                format!("task {task}: {}", u.why()),
                "the remote answered, but git will not send these objects; have the task's worker submit again (`git delegate submit` in its workspace)",
            )),
        }
    }
}

/// Fetch the submitted proposals of `tasks` (remote tasks of `b`) into
/// their proposal refs (with `write_refs`; a dry run fetches the objects
/// only). Returns the tasks that have one, with its commit, and those git
/// would not fetch. One fetch brings them all; when it fails while the
/// remote can be listed, each proposal is fetched alone, so that one git
/// refuses fails its own task only (design §3.18). A remote that cannot be
/// listed (before, or again after every fetch failed) is an error
/// (`delegate::remote_failed`).
pub fn fetch_proposals(
    source: &Source,
    b: &Batch,
    tasks: &[&str],
    write_refs: bool,
) -> Result<Fetched> {
    let Some(r) = &b.remote else {
        return Ok(Fetched::default());
    };
    let mut found = submitted(source, b)?;
    found.retain(|t, _| tasks.contains(&t.as_str()));
    let spec = |t: &str| {
        let name = refs::proposal(&b.id, t);
        if write_refs {
            format!("+{name}:{name}")
        } else {
            name
        }
    };
    let specs: Vec<String> = found.keys().map(|t| spec(t)).collect();
    let remote = target(source, r);
    let mut unfetchable = BTreeMap::new();
    if let Err(all) = transport::fetch(&source.common_dir, &remote, &specs) {
        // One at a time: the ones git refuses are their tasks' alone.
        let mut any = false;
        for (t, &listed) in &found {
            match transport::fetch(&source.common_dir, &remote, &[spec(t)]) {
                Ok(()) => any = true,
                Err(error) => {
                    unfetchable.insert(t.clone(), Unfetchable { listed, error });
                }
            }
        }
        // Not one came: unless the remote still answers, it is the remote.
        if !any && submitted(source, b).is_err() {
            return Err(all.into());
        }
        found.retain(|t, _| !unfetchable.contains_key(t));
    }
    if write_refs {
        // What was fetched is what the ref holds now: a submission that
        // came between the listing and the fetch is the one fetched (and
        // the one the batch's end may delete, design §3.14 "Remote refs").
        for (t, id) in found.iter_mut() {
            if let Some(now) = refs::get(&source.repo, &refs::proposal(&b.id, t))? {
                *id = now;
            }
        }
    }
    Ok(Fetched { found, unfetchable })
}

/// A fetched proposal of a remote task, as [`received`] finds it.
#[derive(Debug)]
pub enum Received {
    /// It changes nothing against the task's base.
    Nothing,
    /// Its tree, and the paths it changes.
    Changes(ObjectId, Vec<diff::PathChange>),
    /// Its tree, which brings more changed paths than any task may (design
    /// §3.18 "Limits"), and where the bound was passed: refused before
    /// anything walks it further.
    TooMany(ObjectId, crate::git::validate::Invalid),
}

/// A fetched proposal of a remote task, checked: its parent must be the
/// task's base, and its tree within the bound of design §3.18 "Limits"
/// (counted first, at the cost of its distinct trees, so a path bomb is
/// never expanded: [`Received::TooMany`]). The paths it changes.
pub fn received(
    repo: &gix::Repository,
    b: &Batch,
    task: &Task,
    commit: ObjectId,
    base_tree: ObjectId,
) -> Result<Received> {
    let c = repo.find_commit(commit).map_err(|e| {
        Error::state(
            Code::MissingObject,
            format!(
                "the submitted proposal {commit} of task {} was not fetched: {e}",
                task.name
            ),
            "apply again; if it persists, run `git fsck`",
        )
    })?;
    let base = task.base_or(&b.baseline);
    let parents: Vec<String> = c.parent_ids().map(|p| p.to_string()).collect();
    if parents != [base.to_string()] {
        return Err(Error::state(
            Code::State,
            format!(
                "the proposal task {} submitted is not a commit on its base {base}",
                task.name
            ),
            format!(
                "have the worker join again (`{}`) and submit",
                join_command(b, &task.name).unwrap_or_default()
            ),
        ));
    }
    let tree = c
        .tree_id()
        .map_err(|e| Error::git(format!("cannot read the proposal {commit}"), e))?
        .detach();
    if let Some(over) = crate::git::validate::too_many(repo, Some(base_tree), tree)? {
        return Ok(Received::TooMany(tree, over));
    }
    match diff::bounded(repo, base_tree, tree) {
        Ok(paths) if paths.is_empty() => Ok(Received::Nothing),
        Ok(paths) => Ok(Received::Changes(tree, paths)),
        Err(diff::DiffError::TooMany { path, .. }) => Ok(Received::TooMany(
            tree,
            crate::git::validate::Invalid {
                path,
                why: crate::git::validate::TOO_MANY,
            },
        )),
        Err(e) => Err(e.into()),
    }
}

/// When a batch ends: delete its refs on its remote, each only while it
/// holds what this command fetched there (design §3.14 "Remote refs"): the
/// baseline prepare pushed; a remote task's proposal as `seen` has it (what
/// the calling command fetched or listed now), else as the task's record
/// says an earlier apply fetched it (`Task::fetched`); a ref under the
/// batch's prefix that no remote task owns (a submission for a name the
/// batch does not have, never fetched by anything) as listed. A ref that
/// holds anything else is a newer submission: left there and reported.
/// `None` when nothing was left (or the batch has no remote). Never fails:
/// local state goes on regardless.
pub fn end(source: &Source, b: &Batch, seen: &HashMap<String, ObjectId>) -> Option<Left> {
    let r = b.remote.as_ref()?;
    let target = target(source, r);
    let prefix = batch_prefix(&b.id);
    let mut known: BTreeMap<String, Option<ObjectId>> = BTreeMap::new();
    known.insert(
        refs::baseline(&b.id),
        ObjectId::from_hex(b.baseline.as_bytes()).ok(),
    );
    for t in b.tasks.iter().filter(|t| t.remote) {
        let fetched = seen.get(&t.name).copied().or_else(|| {
            t.fetched
                .as_deref()
                .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok())
        });
        known.insert(refs::proposal(&b.id, &t.name), fetched);
    }
    let mut left = Left {
        remote: r.url.clone(),
        failed: None,
        newer: Vec::new(),
    };
    let list = || -> Result<BTreeMap<String, ObjectId>> {
        Ok(
            transport::ls_remote(Some(&source.common_dir), &target, &format!("{prefix}*"))?
                .into_iter()
                .filter(|(n, _)| n.starts_with(&prefix))
                .filter_map(|(n, id)| Some((n, ObjectId::from_hex(id.as_bytes()).ok()?)))
                .collect(),
        )
    };
    let listed = match list() {
        Ok(l) => l,
        Err(error) => {
            left.failed = Some((error, known.into_iter().collect()));
            return Some(left);
        }
    };
    let mut delete: Vec<(String, ObjectId)> = Vec::new();
    for (name, now) in listed {
        match known.get(&name) {
            Some(Some(expected)) if *expected == now => delete.push((name, now)),
            Some(_) => left.newer.push((name, now)),
            None => delete.push((name, now)),
        }
    }
    if !delete.is_empty() {
        let leases: Vec<(String, String)> = delete
            .iter()
            .map(|(n, id)| (n.clone(), id.to_string()))
            .collect();
        let specs: Vec<String> = delete.iter().map(|(n, _)| format!(":{n}")).collect();
        if let Err(error) =
            transport::push_leased(&source.common_dir, &target, &leases, &specs, false)
        {
            // What is there now tells a ref that moved meanwhile (the
            // remote refused to delete it: a newer submission) from one the
            // remote would not delete.
            let now = list().ok();
            let mut failed = Vec::new();
            for (name, expected) in delete {
                match now.as_ref().map(|l| l.get(&name)) {
                    Some(None) => {}
                    Some(Some(id)) if *id != expected => left.newer.push((name, *id)),
                    _ => failed.push((name, Some(expected))),
                }
            }
            if !failed.is_empty() {
                left.failed = Some((error.into(), failed));
            }
        }
    }
    (left.failed.is_some() || !left.newer.is_empty()).then_some(left)
}
