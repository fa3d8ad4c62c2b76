//! Finding the batch's side effects (design §3.16): the shared refs and
//! stash entries made or moved since prepare, each attributed to the task
//! whose workspace made it where that can be told (its HEAD names the ref,
//! its commit descends from a workspace's, a stash entry's files changed
//! there).
//!
//! Owns: the scene a search looks at (`Scene`: the workspaces' heads, the
//! record) and the attribution rules.
//! Never: touches a ref or the stash; writes the record (`mod.rs` does).

use super::*;

/// A task's workspace as its registration shows it.
struct Head {
    /// `refs/heads/x` when the workspace is on a branch.
    branch: Option<String>,
    /// The commit its HEAD resolves to.
    commit: Option<ObjectId>,
    /// When its index was last written (nanoseconds since the epoch).
    index_written: Option<i128>,
}

fn head_of(repo: &gix::Repository, common_dir: &Path, task: &batch::Task) -> Option<Head> {
    let reg = Registration::new(common_dir, &task.worktree_id);
    let text = std::fs::read_to_string(reg.path().join("HEAD")).ok()?;
    let text = text.trim();
    let (branch, commit) = match text.strip_prefix("ref: ") {
        Some(name) => {
            let commit = crate::git::refs::get(repo, name).ok().flatten();
            (Some(name.to_string()), commit)
        }
        None => (None, ObjectId::from_hex(text.as_bytes()).ok()),
    };
    let index_written = mtime_nanos(&reg.index_file());
    Some(Head {
        branch,
        commit,
        index_written,
    })
}

/// Whether `tip` (peeled to its commit) is one of `bases` or descends from
/// one. The walk stops at commits that existed before prepare (`known`: the
/// recorded branch and tag tips, the source's HEAD), which cannot descend
/// from a baseline made after them, and after `MAX_WALK` commits (a ref
/// beyond that counts as the user's).
fn descends(
    repo: &gix::Repository,
    tip: ObjectId,
    bases: &HashSet<ObjectId>,
    known: &HashSet<ObjectId>,
) -> bool {
    let Some(start) = peel_commit(repo, tip) else {
        return false;
    };
    let mut seen: HashSet<ObjectId> = HashSet::new();
    let mut todo = vec![start];
    while let Some(id) = todo.pop() {
        if bases.contains(&id) {
            return true;
        }
        if known.contains(&id) || !seen.insert(id) || seen.len() > MAX_WALK {
            continue;
        }
        let Ok(commit) = repo.find_commit(id) else {
            continue;
        };
        todo.extend(commit.parent_ids().map(|p| p.detach()));
    }
    false
}

/// The commit an object (a commit or an annotated tag) leads to.
fn peel_commit(repo: &gix::Repository, id: ObjectId) -> Option<ObjectId> {
    let obj = repo.find_object(id).ok()?;
    obj.peel_to_commit().ok().map(|c| c.id)
}

/// What `find` compares against: the batch, its bases, the commits known
/// before prepare and its workspaces' heads.
struct Scene<'a> {
    repo: &'a gix::Repository,
    b: &'a Batch,
    /// The baseline, and each refreshed task's own base (design §3.12).
    bases: HashSet<ObjectId>,
    /// Commits that existed before prepare (see [`descends`]).
    known: HashSet<ObjectId>,
    heads: Vec<Option<Head>>,
}

/// The branches, tags and stash entries made from batch `b`'s workspaces
/// (or changed) since prepare, in the order branches, tags, stash (design
/// §3.16). Empty for a batch prepare recorded nothing for (scratch mode,
/// or older batches).
pub fn find(source: &Source, b: &Batch) -> Result<Vec<SideEffect>> {
    let Some(before) = recorded(source, b) else {
        return Ok(Vec::new());
    };
    let repo = &source.repo;
    let now = read(repo)?;
    let Ok(baseline) = ObjectId::from_hex(b.baseline.as_bytes()) else {
        return Ok(Vec::new());
    };
    // A refreshed task's workspace sits on its own base (design §3.12).
    let bases: HashSet<ObjectId> = std::iter::once(baseline)
        .chain(
            b.tasks
                .iter()
                .filter_map(|t| t.base.as_deref())
                .filter_map(|hex| ObjectId::from_hex(hex.as_bytes()).ok()),
        )
        .collect();
    let mut known: HashSet<ObjectId> = before.refs.values().copied().collect();
    known.extend(
        b.source_head
            .as_deref()
            .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()),
    );
    let heads: Vec<Option<Head>> = b
        .tasks
        .iter()
        .map(|t| head_of(repo, &source.common_dir, t))
        .collect();
    let scene = Scene {
        repo,
        b,
        bases,
        known,
        heads,
    };
    let mut out = scene.refs(&before, &now);
    // Stash entries: a stash commit's first parent is the HEAD of the
    // worktree it was made in.
    let entries = stash_entries(repo)?;
    // When the stash was last written: the newest entry's time, to the
    // nanosecond (its reflog's mtime), which the workspace's index, rewritten
    // by `git stash` right after, cannot predate.
    let log_written = mtime_nanos(&source.common_dir.join("logs").join(STASH));
    out.extend(scene.stash_added(&before, &entries, log_written));
    // What an earlier apply could tell and this one cannot (its workspace
    // is gone since).
    let known = seen(source, b);
    for e in out.iter_mut().filter(|e| e.task.is_none()) {
        if let Some(id) = e.new {
            if let Some(name) = known.get(&(e.name.clone(), id)) {
                e.task = b.tasks.iter().position(|t| &t.name == name);
            }
        }
    }
    let still: BTreeSet<ObjectId> = entries.iter().map(|e| e.commit).collect();
    for id in &before.stash {
        if !still.contains(id) {
            out.push(SideEffect::of_ref(
                None,
                Kind::Stash,
                Change::Removed,
                STASH.into(),
                Some(*id),
                None,
            ));
        }
    }
    Ok(out)
}

impl SideEffect {
    /// A branch, tag or stash effect: no config or hook fields, and for the
    /// stash no entry position or message.
    fn of_ref(
        task: Option<usize>,
        kind: Kind,
        change: Change,
        name: String,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
    ) -> SideEffect {
        SideEffect {
            task,
            kind,
            change,
            name,
            old,
            new,
            stash_index: None,
            message: None,
            path: None,
            detail: None,
            value: None,
        }
    }
}

/// A branch's or tag's kind by its name.
fn ref_kind(name: &str) -> Kind {
    if name.starts_with("refs/heads/") {
        Kind::Branch
    } else {
        Kind::Tag
    }
}

/// When the file at `path` was last modified (nanoseconds since the epoch).
fn mtime_nanos(path: &Path) -> Option<i128> {
    std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
}

impl Scene<'_> {
    /// The tasks whose workspace head matches `pred`, in task order.
    fn heads_where(&self, pred: impl Fn(&Head) -> bool) -> Vec<usize> {
        self.heads
            .iter()
            .enumerate()
            .filter(|(_, h)| h.as_ref().is_some_and(&pred))
            .map(|(i, _)| i)
            .collect()
    }

    /// Branches and tags made or moved onto the batch's work, then those
    /// gone since prepare (whoever removed them, the old commit is named so
    /// they can be restored).
    fn refs(&self, before: &Shared, now: &Shared) -> Vec<SideEffect> {
        let mut out = Vec::new();
        for (name, &id) in &now.refs {
            let old = before.refs.get(name).copied();
            if old == Some(id) {
                continue;
            }
            let on_head = self.heads_where(|h| h.branch.as_deref() == Some(name.as_str()));
            if on_head.is_empty() && !descends(self.repo, id, &self.bases, &self.known) {
                continue; // the user's own (its commit is not the batch's)
            }
            let task = if on_head.len() == 1 {
                Some(on_head[0])
            } else {
                let commit = peel_commit(self.repo, id);
                commit
                    .and_then(|c| unique(self.heads_where(|h| h.commit == Some(c)).into_iter()))
                    .or_else(|| only_task(self.b))
            };
            let change = if old.is_some() {
                Change::Moved
            } else {
                Change::Created
            };
            out.push(SideEffect::of_ref(
                task,
                ref_kind(name),
                change,
                name.clone(),
                old,
                Some(id),
            ));
        }
        for (name, &id) in &before.refs {
            if !now.refs.contains_key(name) {
                out.push(SideEffect::of_ref(
                    None,
                    ref_kind(name),
                    Change::Deleted,
                    name.clone(),
                    Some(id),
                    None,
                ));
            }
        }
        out
    }

    /// The stash entries pushed since prepare from the batch's work.
    fn stash_added(
        &self,
        before: &Shared,
        entries: &[StashEntry],
        log_written: Option<i128>,
    ) -> Vec<SideEffect> {
        let had: BTreeSet<ObjectId> = before.stash.iter().copied().collect();
        let count = entries.len();
        let mut out = Vec::new();
        for (pos, e) in entries.iter().enumerate() {
            if had.contains(&e.commit) {
                continue;
            }
            let Some(parent) = self
                .repo
                .find_commit(e.commit)
                .ok()
                .and_then(|c| c.parent_ids().next().map(|p| p.detach()))
            else {
                continue;
            };
            let on_branch = stash_branch(&e.message).map(|b| format!("refs/heads/{b}"));
            let by_branch = match &on_branch {
                Some(on) => self.heads_where(|h| h.branch.as_ref() == Some(on)),
                None => Vec::new(),
            };
            if by_branch.is_empty() && !descends(self.repo, parent, &self.bases, &self.known) {
                continue; // stashed elsewhere (the user's)
            }
            let index = count - 1 - pos;
            let task = if by_branch.len() == 1 {
                Some(by_branch[0])
            } else {
                // When `git stash` stored the entry.
                let since: i128 = if index == 0 {
                    log_written.unwrap_or(e.seconds as i128 * 1_000_000_000)
                } else {
                    e.seconds as i128 * 1_000_000_000
                };
                self.stasher(parent, e.commit, since)
            };
            let mut effect = SideEffect::of_ref(
                task,
                Kind::Stash,
                Change::Added,
                STASH.into(),
                None,
                Some(e.commit),
            );
            effect.stash_index = Some(index);
            effect.message = Some(e.message.clone());
            out.push(effect);
        }
        out
    }

    /// The task whose workspace made the stash entry `stash` on `parent`,
    /// stored at `since` (nanoseconds), when it can be told.
    fn stasher(&self, parent: ObjectId, stash: ObjectId, since: i128) -> Option<usize> {
        let at_parent = self.heads_where(|h| h.commit == Some(parent));
        match at_parent.len() {
            1 => Some(at_parent[0]),
            0 => only_task(self.b),
            _ => {
                // Several workspaces sit at that commit: `git stash`
                // rewrites the index of the one it ran in, after it
                // stored the entry.
                let by_index: Vec<usize> = at_parent
                    .iter()
                    .copied()
                    .filter(|&i| {
                        self.heads[i]
                            .as_ref()
                            .and_then(|h| h.index_written)
                            .is_some_and(|w| w >= since)
                    })
                    .collect();
                if by_index.len() == 1 {
                    Some(by_index[0])
                } else {
                    // Still several (another workspace's index was
                    // written since, by a `git status` there): the files
                    // `git stash` put back were rewritten in its own.
                    let pool = if by_index.is_empty() {
                        at_parent
                    } else {
                        by_index
                    };
                    let put_back = put_back_paths(self.repo, parent, stash);
                    unique(pool.into_iter().filter(|&i| {
                        !put_back.is_empty()
                            && put_back
                                .iter()
                                .all(|p| changed_since(&self.b.tasks[i].root.join(p), since))
                    }))
                }
            }
        }
    }
}

/// The paths a stash entry took out of its worktree that `git stash` then
/// put back as they are in `parent` (changed there, not added).
fn put_back_paths(repo: &gix::Repository, parent: ObjectId, stash: ObjectId) -> Vec<PathBuf> {
    let tree = |id: ObjectId| {
        repo.find_commit(id)
            .ok()
            .and_then(|c| c.tree_id().ok())
            .map(|t| t.detach())
    };
    let (Some(old), Some(new)) = (tree(parent), tree(stash)) else {
        return Vec::new();
    };
    crate::git::diff::bounded(repo, old, new)
        .map(|changes| {
            changes
                .into_iter()
                .filter(|c| c.old.is_some())
                .map(|c| crate::sys::paths::to_os(c.path.as_ref()))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the inode at `path` (not followed) changed at or after `since`
/// (nanoseconds since the epoch).
fn changed_since(path: &Path, since: i128) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .map(|m| i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()) >= since)
        .unwrap_or(false)
}

/// The branch a stash message names (`WIP on x: ...`, `On x: ...`), if any.
pub(super) fn stash_branch(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("WIP on ")
        .or_else(|| message.strip_prefix("On "))?;
    let (branch, _) = rest.split_once(": ")?;
    (branch != "(no branch)").then_some(branch)
}

fn unique(mut it: impl Iterator<Item = usize>) -> Option<usize> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// The batch's only task, if it has one.
fn only_task(b: &Batch) -> Option<usize> {
    (b.tasks.len() == 1).then_some(0)
}
