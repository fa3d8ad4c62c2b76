//! The pre-push hook's check (design §3.19): a push that would publish the
//! user's private snapshot (the uncommitted and untracked files a baseline
//! holds, which a worker's own branch made in its workspace sits on) is
//! refused. `commands/hook.rs` words it.
//!
//! The snapshot is known two ways. By identity: a git-delegate baseline (or
//! a refresh's new base, as `git::commit::baseline_batch` recognises them)
//! whose tree differs from its first parent's. By content: a commit that
//! brings, against its first parent (a root commit: its whole tree), a blob
//! prepare recorded as one of the user's private files (`record::private`),
//! however it was re-authored, amended, squashed, cherry-picked or rebased;
//! less what the user has since committed themselves (`mine`). A pushed tag
//! is peeled (annotated, nested; a tag of a tree or a blob is checked as
//! that).
//!
//! Cost: a walk of the commits the remote does not have (stopping at the
//! remote's old tip and at every ref we know of that remote), as `git
//! rev-list` walks them, and for each a tree diff against its first parent
//! that visits only the folders that differ, each pair of folders once (a
//! tree repeating one folder many times costs one visit), and only when the
//! record holds any blob. The user's own commits are looked up only when a
//! commit holds a recorded blob.
//!
//! Owns: reading git's pre-push lines, the walk and what it found.
//! Never: changes anything; looks at pushes to `refs/pi-delegate/`
//! (prepare --remote's own); lets a push through when the check itself
//! fails (`Failed`: the caller refuses it, or warns under
//! `hooks.private-baselines = "warn"`).

mod mine;
mod scan;

use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::ObjectId;

use crate::config::PrivateBaselines;
use crate::error::Error;
use crate::git::repo::Source;
use crate::record::private::Record;

/// How many of a commit's private paths are named.
pub const NAMED: usize = 5;

/// One ref the push would publish the private snapshot with.
#[derive(Debug, Clone)]
pub struct Found {
    /// The local ref pushed (`refs/heads/agent/x`, `refs/tags/v1`, `HEAD`).
    pub local_ref: String,
    /// The remote ref it goes to.
    pub remote_ref: String,
    /// The pushed commit that holds it (for a tag of a tree or a blob: that object).
    pub commit: ObjectId,
    pub holds: Holds,
    /// What publishes the task's work instead.
    pub hint: Hint,
}

/// What a refused commit holds.
#[derive(Debug, Clone)]
pub enum Holds {
    /// A git-delegate baseline (or refresh base) whose tree differs from its parent's.
    Baseline,
    /// Content of the user's private files: the first paths ([`NAMED`] at
    /// most) and how many more there are.
    Private { paths: Vec<BString>, more: usize },
}

/// The way out the refusal names.
#[derive(Debug, Clone)]
pub enum Hint {
    /// `git delegate branch TASK --batch SHORT` for the task in `tasks`
    /// (one when the pushed work's task is known or the batch has one open
    /// task; else every open task of the batch, to pick from).
    Branch { batch: String, tasks: Vec<String> },
    /// The batch (when known) is no longer open: `branch` cannot publish it.
    Ended { batch: Option<String> },
}

/// What the check found.
pub enum PrePush {
    /// Nothing to say.
    Clear,
    /// The check itself failed (`reason`): refused unless `mode` is `Warn`.
    Failed {
        reason: String,
        mode: PrivateBaselines,
        config_error: Option<Error>,
        /// The repository's `delegate.toml`, when it was found.
        config: Option<PathBuf>,
        /// The command that confirms a change of it (design §3.18), where
        /// there is a working tree.
        confirm: Option<String>,
    },
    /// Refs that would publish the private snapshot, and what the config
    /// says to do.
    Found {
        found: Vec<Found>,
        mode: PrivateBaselines,
        config_error: Option<Error>,
        /// The repository's `delegate.toml`.
        config: PathBuf,
        /// A `hooks.private-baselines` the user has not confirmed, left
        /// out (design §3.18): what to say.
        left_out: Option<String>,
        /// The command that confirms a change of it, where there is a
        /// working tree.
        confirm: Option<String>,
    },
}

/// One line of git's pre-push input that needs a look.
struct Push<'a> {
    local_ref: &'a str,
    local: &'a str,
    remote_ref: &'a str,
    old: &'a str,
}

/// Check a push to `remote` whose lines (`<local ref> <local sha> <remote
/// ref> <remote sha>`) are `input`, from the process's current folder.
pub fn check(remote: &str, input: &str) -> PrePush {
    let pushes = parse(input);
    if matches!(&pushes, Ok(p) if p.is_empty()) {
        return PrePush::Clear;
    }
    let failed = |reason: String, mode, config_error, config, confirm| PrePush::Failed {
        reason,
        mode,
        config_error,
        config,
        confirm,
    };
    let block = PrivateBaselines::default();
    let here = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            let why = format!("cannot read the current folder: {e}");
            return failed(why, block, None, None, None);
        }
    };
    let repo = match crate::git::repo::open_source(&here) {
        Ok(r) => r,
        Err(e) => return failed(Error::from(e).message, block, None, None, None),
    };
    let common_dir = std::fs::canonicalize(repo.common_dir())
        .unwrap_or_else(|_| repo.common_dir().to_path_buf());
    let config = common_dir.join("delegate.toml");
    let (mode, config_error, left_out, confirm) = guard_mode(&config);
    if mode == PrivateBaselines::Ignore {
        return PrePush::Clear;
    }
    let found = pushes.and_then(|pushes| {
        // Trees a walk reads twice are kept by `scan::Trees`, commits by
        // `Check::parent`; gix's delta base cache does the rest.
        Check::new(&repo, &common_dir).run(remote, &pushes)
    });
    match found {
        Err(reason) => failed(reason, mode, config_error, Some(config), confirm),
        Ok(found) if found.is_empty() => PrePush::Clear,
        Ok(found) => PrePush::Found {
            found,
            mode,
            config_error,
            config,
            left_out,
            confirm,
        },
    }
}

/// `hooks.private-baselines` as the user confirmed it (design §3.18: a
/// worker can write `delegate.toml`, and "ignore" would let its branch
/// out), the file's error if it cannot be read (the default then holds),
/// and the words for a value left out. A check of it that fails holds the
/// default, "block".
/// Also the command that confirms a change of the file (for the way out
/// the refusal names), where there is a working tree.
fn guard_mode(
    config: &Path,
) -> (
    PrivateBaselines,
    Option<Error>,
    Option<String>,
    Option<String>,
) {
    let loaded = match crate::config::Config::load(config) {
        Ok(c) => c.private_baselines,
        Err(e) => return (PrivateBaselines::default(), Some(e.into()), None, None),
    };
    // A repository without a working tree has no batch, hence no worker.
    let Ok(mut source) = Source::discover_here() else {
        return (loaded, None, None, None);
    };
    let confirm = Some(crate::ops::trust::confirm_command_for(&source));
    match crate::ops::trust::gate_guard(&mut source) {
        Ok(None) => (loaded, None, None, confirm),
        Ok(Some(u)) => (
            source.config.private_baselines,
            None,
            Some(u.guard_warning()),
            confirm,
        ),
        Err(e) => (PrivateBaselines::default(), Some(e), None, confirm),
    }
}

/// The lines that need a look: not deletions, not `refs/pi-delegate/`.
fn parse(input: &str) -> Result<Vec<Push<'_>>, String> {
    let mut out = Vec::new();
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [local_ref, local, remote_ref, old] = w[..] else {
            return Err(format!("git gave a pre-push line that is not `<local ref> <local object> <remote ref> <remote object>`: {line:?}"));
        };
        if remote_ref.starts_with(crate::git::refs::PREFIX) || local.bytes().all(|b| b == b'0') {
            continue;
        }
        out.push(Push {
            local_ref,
            local,
            remote_ref,
            old,
        });
    }
    Ok(out)
}

/// The check's state: the repository, the record, what is the user's.
struct Check<'r> {
    repo: &'r gix::Repository,
    common_dir: &'r Path,
    state_dir: PathBuf,
    record: Record,
    mine: mine::Mine<'r>,
    /// Trees read for the last commit, which the next one needs.
    trees: scan::Trees,
    /// The last parent read: the next commit the walk gives.
    parent: Option<(ObjectId, CommitInfo)>,
}

/// A commit's tree, first parent and, for a git-delegate baseline, its batch id.
type CommitInfo = (ObjectId, Option<ObjectId>, Option<String>);

type Checked<T> = Result<T, String>;

impl<'r> Check<'r> {
    fn new(repo: &'r gix::Repository, common_dir: &'r Path) -> Check<'r> {
        Check {
            repo,
            common_dir,
            state_dir: crate::git::repo::state_dir(common_dir),
            record: Record::default(),
            mine: mine::Mine::new(repo, common_dir),
            trees: scan::Trees::default(),
            parent: None,
        }
    }

    fn run(mut self, remote: &str, pushes: &[Push<'_>]) -> Checked<Vec<Found>> {
        self.record = crate::record::private::load(&self.state_dir).map_err(|e| e.to_string())?;
        let known = known_refs(self.repo, remote);
        let mut found = Vec::new();
        for p in pushes {
            let tip = ObjectId::from_hex(p.local.as_bytes()).map_err(|_| {
                format!(
                    "git gave {:?} as the object pushed to {}",
                    p.local, p.remote_ref
                )
            })?;
            let hit = match self.peel(tip)? {
                (gix::object::Kind::Commit, id) => {
                    let mut hidden = known.clone();
                    if let Ok(old) = ObjectId::from_hex(p.old.as_bytes()) {
                        if !old.is_null() && self.repo.has_object(old) {
                            hidden.push(old);
                        }
                    }
                    self.walk(id, hidden, p.local_ref)?
                }
                (gix::object::Kind::Tree, id) => self.content(id, None, id, p.local_ref)?,
                (_, id) => self.record.blobs.get(&id).map(|e| {
                    let holds = Holds::Private {
                        paths: Vec::new(),
                        more: 0,
                    };
                    (id, holds, Some(e.batch.clone()))
                }),
            };
            if let Some((commit, holds, batch)) = hit {
                let hint = self.hint(batch.as_deref(), p.local_ref);
                found.push(Found {
                    local_ref: p.local_ref.to_string(),
                    remote_ref: p.remote_ref.to_string(),
                    commit,
                    holds,
                    hint,
                });
            }
        }
        Ok(found)
    }

    /// The object a pushed id names, tags peeled (nested ones too): its
    /// kind and id.
    fn peel(&self, id: ObjectId) -> Checked<(gix::object::Kind, ObjectId)> {
        let mut id = id;
        // Tags cannot form a cycle (each names an existing object by its
        // hash); the bound is for a corrupt store.
        for _ in 0..1000 {
            let obj = self
                .repo
                .find_object(id)
                .map_err(|e| format!("cannot read the pushed object {id}: {e}"))?;
            if obj.kind != gix::object::Kind::Tag {
                return Ok((obj.kind, id));
            }
            let tag = gix::objs::TagRef::from_bytes(&obj.data, id.kind())
                .map_err(|e| format!("cannot read the tag {id}: {e}"))?;
            id = tag.target();
        }
        Err(format!("the tag {id} names tags more than 1000 deep"))
    }

    /// Walk the commits from `tip` the remote does not have: the first
    /// that publishes the private snapshot.
    fn walk(
        &mut self,
        tip: ObjectId,
        hidden: Vec<ObjectId>,
        local_ref: &str,
    ) -> Checked<Option<(ObjectId, Holds, Option<String>)>> {
        let walking = |e: &dyn std::fmt::Display| format!("cannot walk the pushed commits: {e}");
        let walk = self
            .repo
            .rev_walk([tip])
            .with_hidden(hidden)
            .all()
            .map_err(|e| walking(&e))?;
        for info in walk {
            let id = info.map_err(|e| walking(&e))?.id;
            let (tree, parent, batch) = match self.parent.take() {
                Some((p, info)) if p == id => info,
                _ => self.commit(id)?,
            };
            // Without a recorded blob only a baseline needs its parent.
            if batch.is_none() && self.record.blobs.is_empty() {
                continue;
            }
            let parent_tree = match parent {
                Some(p) => {
                    let info = self.commit(p)?;
                    let t = info.0;
                    self.parent = Some((p, info));
                    Some(t)
                }
                None => None,
            };
            if let Some(batch) = batch {
                let empty = ObjectId::empty_tree(self.repo.object_hash());
                if parent_tree.unwrap_or(empty) != tree {
                    return Ok(Some((id, Holds::Baseline, Some(batch))));
                }
                continue;
            }
            if let Some(hit) = self.content(id, parent_tree, tree, local_ref)? {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// A commit's tree, first parent and, for a git-delegate baseline,
    /// its batch id.
    fn commit(&self, id: ObjectId) -> Checked<CommitInfo> {
        let reading = |e: &dyn std::fmt::Display| format!("cannot read the commit {id}: {e}");
        let obj = self.repo.find_object(id).map_err(|e| reading(&e))?;
        let c = gix::objs::CommitRef::from_bytes(&obj.data, id.kind()).map_err(|e| reading(&e))?;
        let parent = c.parents().next();
        Ok((c.tree(), parent, crate::git::commit::baseline_batch(&c)))
    }

    /// The private blobs `commit` brings (its tree `tree` against
    /// `parent`'s, `None`: none), less the user's own: the commit, what it
    /// holds, the batch that recorded the first.
    fn content(
        &mut self,
        commit: ObjectId,
        parent: Option<ObjectId>,
        tree: ObjectId,
        local_ref: &str,
    ) -> Checked<Option<(ObjectId, Holds, Option<String>)>> {
        if self.record.blobs.is_empty() {
            return Ok(None);
        }
        let mut hits: Vec<(BString, ObjectId)> = Vec::new();
        let mut more = 0;
        let mut made_by_user: Option<bool> = None;
        let mine = &mut self.mine;
        let trees = &mut self.trees;
        scan::introduced(
            self.repo,
            trees,
            parent,
            tree,
            &self.record,
            &mut |path, blob| {
                // The user's own commit brings no private content (looked up
                // once, at the first hit).
                let made = match made_by_user {
                    Some(m) => m,
                    None => {
                        let m = mine.made(commit, local_ref);
                        made_by_user = Some(m);
                        m
                    }
                };
                if made {
                    return false;
                }
                if !mine.holds(path, blob) {
                    if hits.len() < NAMED {
                        hits.push((path.to_owned(), blob));
                    } else {
                        more += 1;
                    }
                }
                true
            },
        )?;
        let Some((_, first)) = hits.first() else {
            return Ok(None);
        };
        let batch = self.record.blobs.get(first).map(|e| e.batch.clone());
        let paths = hits.into_iter().map(|(p, _)| p).collect();
        Ok(Some((commit, Holds::Private { paths, more }, batch)))
    }

    /// The way out for work of batch `batch` pushed from `local_ref`.
    fn hint(&self, batch: Option<&str>, local_ref: &str) -> Hint {
        let open = batch.and_then(|id| {
            crate::record::batch::list_ok(&self.state_dir)
                .ok()?
                .into_iter()
                .find(|b| b.id == id)
        });
        let Some(b) = open else {
            return Hint::Ended {
                batch: batch.map(str::to_string),
            };
        };
        let tasks = match mine::task_of(self.repo, self.common_dir, &b, local_ref) {
            Some(t) => vec![t],
            None => b.open_tasks().map(|t| t.name.clone()).collect(),
        };
        Hint::Branch {
            batch: b.id.clone(),
            tasks,
        }
    }
}

/// What the remote has, as far as we know: its remote-tracking refs (a ref
/// that cannot be read only widens the walk).
fn known_refs(repo: &gix::Repository, remote: &str) -> Vec<ObjectId> {
    let mut known = Vec::new();
    if let Ok(platform) = repo.references() {
        if let Ok(iter) = platform.prefixed(format!("refs/remotes/{remote}/").as_str()) {
            for mut r in iter.flatten() {
                if let Ok(id) = r.peel_to_id() {
                    known.push(id.detach());
                }
            }
        }
    }
    known
}
