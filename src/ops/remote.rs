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
//! "Bounded work on remote bytes"); the file a joined workspace
//! remembers its remote, batch and task in (`delegate-join.toml` in its own
//! git dir, never the user's config); the lock reason of a joined linked
//! worktree (`git-delegate join <batch> task <task>`, which gc never takes
//! for one of its batches).
//! Never: runs git itself (`transport` does, the one place); writes the
//! source working tree; deletes local state because a remote failed;
//! deletes a remote ref without a lease on the value that was fetched
//! (design §3.14 "Remote refs"), or submits to a batch that ended.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch, Task};
use crate::{git::commit, git::diff, git::refs, git::transport};

/// The file a joined workspace keeps in its own git dir.
pub const JOIN_FILE: &str = "delegate-join.toml";

/// What a joined workspace remembers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Joined {
    pub url: String,
    pub batch: String,
    pub task: String,
    pub baseline: String,
}

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

/// `git delegate join`'s arguments.
#[derive(Debug, Clone)]
pub struct JoinOptions {
    pub url: String,
    pub batch: String,
    pub task: String,
    pub dir: Option<PathBuf>,
    /// `--repo DIR`: the clone to add the workspace to.
    pub repo: Option<PathBuf>,
    /// The caller's folder.
    pub cwd: PathBuf,
}

/// What `join` made.
#[derive(Debug)]
pub struct JoinReport {
    pub joined: Joined,
    pub root: PathBuf,
    /// Added to an existing clone (else cloned).
    pub linked: bool,
}

/// `<repo-name>` of a URL: its last path component without `.git`.
fn repo_name(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let last = trimmed.rsplit(['/', ':']).next().unwrap_or(trimmed);
    let name = crate::git::repo::safe_name(last.strip_suffix(".git").unwrap_or(last));
    if name.is_empty() {
        "repo".into()
    } else {
        name
    }
}

/// A URL compared as git users mean it: without a trailing `/` or `.git`,
/// and `file://` paths as paths.
fn normalise(url: &str) -> String {
    let u = url.trim_end_matches('/');
    let u = u.strip_suffix(".git").unwrap_or(u);
    let u = u.strip_prefix("file://").unwrap_or(u);
    u.trim_end_matches('/').to_string()
}

/// Does `repo` have a remote whose URL is `url`?
fn has_remote(repo: &gix::Repository, url: &str) -> bool {
    let want = normalise(url);
    repo.remote_names().iter().any(|name| {
        repo.find_remote(name.as_ref() as &gix::bstr::BStr)
            .ok()
            .is_some_and(|r| {
                [gix::remote::Direction::Fetch, gix::remote::Direction::Push]
                    .iter()
                    .filter_map(|d| r.url(*d))
                    .any(|u| normalise(&u.to_bstring().to_string()) == want)
            })
    })
}

/// The worktree id and lock reason of a joined linked worktree.
fn join_id(batch: &str, task: &str) -> String {
    format!("delegate-join-{}-{task}", batch::short(batch))
}

fn join_lock_reason(batch: &str, task: &str) -> String {
    format!("git-delegate join {batch} task {task}\n")
}

fn already_joined(root: &Path, task: &str, linked: bool) -> Error {
    let q = crate::sys::paths::shell_quote(&root.to_string_lossy());
    Error::usage(
        Code::AlreadyJoined,
        format!("task {task} is already joined at {}", root.display()),
        if linked {
            format!(
                "work in that folder (`cd {q}`), then `git delegate submit`; to start over, remove it first with `git worktree remove --force --force {q}` (`git worktree prune` when the folder is gone)"
            )
        } else {
            format!(
                "work in that folder (`cd {q}`), then `git delegate submit`; to start over, remove that folder first"
            )
        },
    )
}

/// `git delegate join URL BATCH TASK [DIR]` (design §3.14).
pub fn join(opts: &JoinOptions) -> Result<JoinReport> {
    let id = uuid::Uuid::parse_str(&opts.batch)
        .map_err(|_| {
            Error::usage(
                Code::BadBatchId,
                format!("{:?} is not a batch id", opts.batch),
                "give the full batch id, as the join line prepare printed has it",
            )
        })?
        .hyphenated()
        .to_string();
    batch::check_task_name(&opts.task)?;
    let task = opts.task.as_str();
    let dir = opts.dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "{}-{}-{task}",
            repo_name(&opts.url),
            batch::short(&id)
        ))
    });
    let root = opts.cwd.join(dir);
    let base_ref = refs::baseline(&id);
    let spec = format!("+{base_ref}:{base_ref}");

    // Inside a clone of the same project (or --repo): a linked worktree.
    let clone = match &opts.repo {
        Some(r) => Some(
            crate::git::repo::open_source(&opts.cwd.join(r)).map_err(|e| {
                Error::usage(
                    Code::NotARepository,
                    format!("--repo {}: {}", r.display(), Error::from(e).message),
                    "give the folder of a clone of the project",
                )
            })?,
        ),
        None => crate::git::repo::open_source(&opts.cwd)
            .ok()
            .filter(|repo| has_remote(repo, &opts.url)),
    };
    let joined = |baseline: String| Joined {
        url: opts.url.clone(),
        batch: id.clone(),
        task: task.to_string(),
        baseline,
    };
    if let Some(repo) = clone {
        let common = crate::sys::fs::canonical(repo.common_dir())
            .unwrap_or_else(|_| repo.common_dir().to_path_buf());
        let worktree_id = join_id(&id, task);
        let reg = crate::git::registration::Registration::new(&common, &worktree_id);
        if reg.path().join(JOIN_FILE).exists() {
            let at = std::fs::read_to_string(reg.gitdir_file())
                .ok()
                .and_then(|s| Path::new(s.trim_end()).parent().map(Path::to_path_buf))
                .unwrap_or_else(|| root.clone());
            return Err(already_joined(&at, task, true));
        }
        if root.join(".git").exists()
            && read_joined_at(&root).is_some_and(|j| j.batch == id && j.task == task)
        {
            return Err(already_joined(&root, task, false));
        }
        let plan = crate::workspace::Plan {
            root: root.clone(),
            worktree_id: worktree_id.clone(),
            lock_reason: join_lock_reason(&id, task),
            stat: None,
        };
        crate::workspace::check_free(&common, std::slice::from_ref(&plan))?;
        transport::fetch(&common, &opts.url, std::slice::from_ref(&spec))?;
        let repo = crate::git::repo::open_source(
            &opts
                .cwd
                .join(opts.repo.as_deref().unwrap_or(Path::new("."))),
        )?;
        let baseline = refs::get(&repo, &base_ref)?.ok_or_else(|| no_baseline(&opts.url, &id))?;
        let tree = commit::tree_of(&repo, &baseline.to_string())?;
        crate::workspace::create_all(&common, baseline, tree, std::slice::from_ref(&plan))?;
        let j = joined(baseline.to_string());
        if let Err(e) = write_joined(reg.path(), &j) {
            let _ = crate::workspace::remove_joined(&common, &root, &worktree_id);
            return Err(e);
        }
        return Ok(JoinReport {
            joined: j,
            root,
            linked: true,
        });
    }

    // Elsewhere: a clone of its own.
    if root.symlink_metadata().is_ok() {
        if read_joined_at(&root).is_some_and(|j| j.batch == id && j.task == task) {
            return Err(already_joined(&root, task, false));
        }
        if !crate::sys::fs::is_empty_dir(&root) {
            return Err(Error::usage(
                Code::WorkspaceExists,
                format!("the folder {} already exists", root.display()),
                "give another DIR, or move that folder away, then join again",
            ));
        }
    }
    let existed = root.symlink_metadata().is_ok();
    let made = (|| -> Result<Joined> {
        transport::clone(&opts.cwd, &opts.url, &root, true)?;
        let git_dir = root.join(".git");
        transport::fetch(&git_dir, &opts.url, std::slice::from_ref(&spec))?;
        let repo = crate::git::repo::open_worktree(&root)?;
        let baseline = refs::get(&repo, &base_ref)?.ok_or_else(|| no_baseline(&opts.url, &id))?;
        transport::checkout_detached(&root, &opts.url, &baseline.to_string())?;
        let j = joined(baseline.to_string());
        write_joined(&git_dir, &j)?;
        Ok(j)
    })();
    match made {
        Ok(j) => Ok(JoinReport {
            joined: j,
            root,
            linked: false,
        }),
        Err(e) => {
            // Only what this join made goes: the clone it started.
            if root.join(".git").is_dir() || crate::sys::fs::is_empty_dir(&root) {
                let _ = std::fs::remove_dir_all(&root);
                if existed {
                    let _ = std::fs::create_dir(&root);
                }
            }
            Err(e)
        }
    }
}

fn no_baseline(url: &str, id: &str) -> Error {
    Error::state(
        Code::RemoteFailed,
        format!("the remote {url} has no baseline of batch {id}"),
        "check the URL and the batch id against the join line prepare printed (the batch may have ended)",
    )
}

fn write_joined(git_dir: &Path, j: &Joined) -> Result<()> {
    crate::ops::write_toml(&git_dir.join(JOIN_FILE), j, "the join")
}

/// What the working tree at `root` remembers of its join, if anything.
fn read_joined_at(root: &Path) -> Option<Joined> {
    let repo = crate::git::repo::open_worktree(root).ok()?;
    read_joined(repo.git_dir())
}

fn read_joined(git_dir: &Path) -> Option<Joined> {
    let text = std::fs::read_to_string(git_dir.join(JOIN_FILE)).ok()?;
    toml::from_str(&text).ok()
}

/// What `submit` did.
#[derive(Debug)]
pub struct Submitted {
    pub joined: Joined,
    pub root: PathBuf,
    pub proposal: ObjectId,
    pub ref_name: String,
}

/// `git delegate submit` in the joined workspace around `cwd` (design §3.14).
pub fn submit(cwd: &Path) -> Result<Submitted> {
    let repo = crate::git::repo::open_source(cwd)?;
    let Some(j) = read_joined(repo.git_dir()) else {
        return Err(Error::usage(
            Code::NotJoined,
            format!(
                "{} is not a workspace made by `git delegate join`",
                repo.workdir().unwrap_or(cwd).display()
            ),
            "run submit inside the folder `git delegate join URL BATCH TASK` made",
        ));
    };
    let root = repo.workdir().map(Path::to_path_buf).ok_or_else(|| {
        Error::state(
            Code::BareRepository,
            "the repository has no working tree",
            "run submit inside the joined workspace",
        )
    })?;
    let ws = crate::git::repo::open_worktree(&root)?;
    let snap = crate::snapshot::snapshot_workspace(&ws)?;
    // design §3.18: apply would refuse such a proposal; say so here, and
    // push nothing.
    if !snap.invalid.is_empty() {
        return Err(crate::git::validate::in_working_tree(&root, &snap.invalid).into());
    }
    let baseline = ObjectId::from_hex(j.baseline.as_bytes())
        .map_err(|e| Error::git(format!("bad baseline id {}", j.baseline), e))?;
    let proposal = commit::write(
        &ws,
        snap.tree,
        Some(baseline),
        format!("git-delegate proposal {} task {}\n", j.batch, j.task),
    )?;
    let ref_name = refs::proposal(&j.batch, &j.task);
    // Never to a batch that ended (design §3.14 "Remote refs"): what this
    // repository knows first, then the remote, in the push itself: the
    // baseline is pushed as it is with a lease on it, atomically with the
    // proposal, so the remote takes the proposal only while the baseline
    // is still there (an ended batch's baseline is deleted first).
    if let Some(why) = ended_here(&ws, &j) {
        return Err(batch_ended(&j, &why));
    }
    let base_ref = refs::baseline(&j.batch);
    let pushed = transport::push_leased(
        ws.common_dir(),
        &j.url,
        &[(base_ref.clone(), j.baseline.clone())],
        &[
            format!("{}:{base_ref}", j.baseline),
            format!("+{proposal}:{ref_name}"),
        ],
        true,
    );
    if let Err(e) = pushed {
        // Refused for its lease (the baseline is gone or changed), or the
        // remote failed: the remote tells which.
        return Err(
            match transport::ls_remote(Some(ws.common_dir()), &j.url, &base_ref) {
                Ok(listed)
                    if !listed
                        .iter()
                        .any(|(n, id)| *n == base_ref && *id == j.baseline) =>
                {
                    batch_ended(&j, "its baseline is no longer on the remote")
                }
                _ => e.into(),
            },
        );
    }
    Ok(Submitted {
        joined: j,
        root,
        proposal,
        ref_name,
    })
}

/// Why the repository the joined workspace belongs to says its batch (or
/// task) ended, if it does: its baseline ref, which join fetched, is gone
/// (a join into the batch's own source repository, whose end deleted it),
/// or the batch's record there shows the task closed.
fn ended_here(ws: &gix::Repository, j: &Joined) -> Option<String> {
    if let Ok(None) = refs::get(ws, &refs::baseline(&j.batch)) {
        return Some("its baseline ref is gone from this repository".into());
    }
    let record = batch::batch_dir(&crate::git::repo::state_dir(ws.common_dir()), &j.batch)
        .join("batch.toml");
    let b: Batch = toml::from_str(&std::fs::read_to_string(record).ok()?).ok()?;
    let t = b.task(&j.task)?;
    (!t.state.is_open()).then(|| format!("its task {} is {}", t.name, t.state.as_str()))
}

fn batch_ended(j: &Joined, why: &str) -> Error {
    Error::state(
        Code::BatchEnded,
        format!(
            "batch {} has ended ({why}): task {} was not submitted",
            j.batch, j.task
        ),
        "nothing was pushed and nothing here changed; the batch's work is done, so ask whoever prepared it for the join line of a new batch (keep your files: they are still in this workspace)",
    )
}
