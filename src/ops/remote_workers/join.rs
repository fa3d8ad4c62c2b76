//! The worker's side of a remote batch (design §3.14): `join` (a linked
//! worktree of an existing clone, or a clone of its own, detached at the
//! baseline) and `submit` (the workspace's files as a proposal commit on
//! the baseline, pushed to the task's proposal ref).
//!
//! Owns: the file a joined workspace remembers its remote, batch and task
//! in (`delegate-join.toml` in its own git dir, never the user's config);
//! the lock reason of a joined linked worktree (`git-delegate join <batch>
//! task <task>`, which gc never takes for one of its batches).
//! Never: runs git itself (`transport` does); submits to a batch that
//! ended.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::record::batch::{self, Batch};
use crate::{git::commit, git::refs, git::transport};

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
    let to = Joining {
        opts,
        spec: format!("+{base_ref}:{base_ref}"),
        base_ref,
        id,
        root,
    };

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
    match clone {
        Some(repo) => to.linked(&repo),
        // Elsewhere: a clone of its own.
        None => to.cloned(),
    }
}

/// One `join` under way: the batch's full id, the workspace's folder, the
/// baseline's ref and the refspec that fetches it.
struct Joining<'o> {
    opts: &'o JoinOptions,
    id: String,
    root: PathBuf,
    base_ref: String,
    spec: String,
}

impl Joining<'_> {
    fn joined(&self, baseline: String) -> Joined {
        Joined {
            url: self.opts.url.clone(),
            batch: self.id.clone(),
            task: self.opts.task.clone(),
            baseline,
        }
    }

    /// A linked worktree of `repo`, a clone of the project.
    fn linked(self, repo: &gix::Repository) -> Result<JoinReport> {
        let (opts, id, task, root) = (self.opts, &self.id, self.opts.task.as_str(), &self.root);
        let common = crate::sys::fs::canonical(repo.common_dir())
            .unwrap_or_else(|_| repo.common_dir().to_path_buf());
        let worktree_id = join_id(id, task);
        let reg = crate::git::registration::Registration::new(&common, &worktree_id);
        if reg.path().join(JOIN_FILE).exists() {
            let at = std::fs::read_to_string(reg.gitdir_file())
                .ok()
                .and_then(|s| Path::new(s.trim_end()).parent().map(Path::to_path_buf))
                .unwrap_or_else(|| root.clone());
            return Err(already_joined(&at, task, true));
        }
        if root.join(".git").exists()
            && read_joined_at(root).is_some_and(|j| j.batch == *id && j.task == task)
        {
            return Err(already_joined(root, task, false));
        }
        let plan = crate::workspace::Plan {
            root: root.clone(),
            worktree_id: worktree_id.clone(),
            lock_reason: join_lock_reason(id, task),
            stat: None,
        };
        crate::workspace::check_free(&common, std::slice::from_ref(&plan))?;
        transport::fetch(&common, &opts.url, std::slice::from_ref(&self.spec))?;
        let repo = crate::git::repo::open_source(
            &opts
                .cwd
                .join(opts.repo.as_deref().unwrap_or(Path::new("."))),
        )?;
        let baseline =
            refs::get(&repo, &self.base_ref)?.ok_or_else(|| no_baseline(&opts.url, id))?;
        let tree = commit::tree_of(&repo, &baseline.to_string())?;
        crate::workspace::create_all(&common, baseline, tree, std::slice::from_ref(&plan))?;
        let j = self.joined(baseline.to_string());
        if let Err(e) = write_joined(reg.path(), &j) {
            let _ = crate::workspace::remove_joined(&common, root, &worktree_id);
            return Err(e);
        }
        Ok(JoinReport {
            joined: j,
            root: self.root,
            linked: true,
        })
    }

    /// A clone of its own at the workspace's folder.
    fn cloned(self) -> Result<JoinReport> {
        let (opts, id, task, root) = (self.opts, &self.id, self.opts.task.as_str(), &self.root);
        if root.symlink_metadata().is_ok() {
            if read_joined_at(root).is_some_and(|j| j.batch == *id && j.task == task) {
                return Err(already_joined(root, task, false));
            }
            if !crate::sys::fs::is_empty_dir(root) {
                return Err(Error::usage(
                    Code::WorkspaceExists,
                    format!("the folder {} already exists", root.display()),
                    "give another DIR, or move that folder away, then join again",
                ));
            }
        }
        let existed = root.symlink_metadata().is_ok();
        let made = (|| -> Result<Joined> {
            transport::clone(&opts.cwd, &opts.url, root, true)?;
            let git_dir = root.join(".git");
            transport::fetch(&git_dir, &opts.url, std::slice::from_ref(&self.spec))?;
            let repo = crate::git::repo::open_worktree(root)?;
            let baseline =
                refs::get(&repo, &self.base_ref)?.ok_or_else(|| no_baseline(&opts.url, id))?;
            transport::checkout_detached(root, &opts.url, &baseline.to_string())?;
            let j = self.joined(baseline.to_string());
            write_joined(&git_dir, &j)?;
            Ok(j)
        })();
        match made {
            Ok(j) => Ok(JoinReport {
                joined: j,
                root: self.root,
                linked: false,
            }),
            Err(e) => {
                // Only what this join made goes: the clone it started.
                if root.join(".git").is_dir() || crate::sys::fs::is_empty_dir(root) {
                    let _ = std::fs::remove_dir_all(root);
                    if existed {
                        let _ = std::fs::create_dir(root);
                    }
                }
                Err(e)
            }
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
