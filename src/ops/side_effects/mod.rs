//! Work that hides in the repository's shared refs (design §3.16): linked
//! worktrees share branches, tags and the stash with the user's repository,
//! so a worker's `git checkout -b`, `git tag` or `git stash` lands there.
//! Prepare records the refs under `refs/heads/` and `refs/tags/` and the
//! stash's entries (name and object id only, in `shared-refs` beside
//! `batch.toml`); apply, its dry run and `drop` compare them with the
//! repository now and name each branch, tag and stash entry made or moved
//! since, with the task whose workspace made it where that can be told.
//! The shared config and hooks are watched the same way (`git_dir`,
//! `find_git_dir`, recorded by `record` too; design §3.16 "The shared git
//! dir").
//!
//! Owns: the `shared-refs` record (its format and file), which refs count
//! as the batch's (their commit descends from the baseline, or a
//! workspace's HEAD names them), attributing them to a task, and which
//! tasks hold work in the stash (`stashed`).
//! Never: creates, moves or deletes a ref, a reflog entry or a stash entry
//! (the user's refs are reported, never touched); prints.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::error::{Error, Result};
use crate::record::batch::{self, Batch};

mod git_dir;
use crate::git::registration::Registration;
use crate::git::repo::Source;
pub use git_dir::{delegate_at_prepare, find as find_git_dir};

/// The record's file name in the batch's state folder.
pub const FILE: &str = "shared-refs";
/// The record's first line.
const HEADER: &str = "# git-delegate shared refs v1";
/// Who made what, as apply found it (`remember`): a workspace removed since
/// can no longer tell.
pub const SEEN_FILE: &str = "side-effects";
const SEEN_HEADER: &str = "# git-delegate side effects v1";
/// The prefixes recorded and compared.
const PREFIXES: [&str; 2] = ["refs/heads/", "refs/tags/"];
const STASH: &str = "refs/stash";
/// At most this many commits are read to tell whether a ref's commit
/// descends from the baseline (a ref beyond it counts as the user's).
const MAX_WALK: usize = 10_000;

/// The shared refs at one moment: refs under `refs/heads/` and
/// `refs/tags/` (their direct target), and the stash's entries, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shared {
    pub refs: BTreeMap<String, ObjectId>,
    pub stash: Vec<ObjectId>,
}

/// What kind of shared ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Branch,
    Tag,
    Stash,
    /// A key of `<common-dir>/config` (design §3.16 "The shared git dir").
    Config,
    /// An entry of a hooks folder (`<common-dir>/hooks`, `core.hooksPath`).
    Hook,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Branch => "branch",
            Kind::Tag => "tag",
            Kind::Stash => "stash",
            Kind::Config => "config",
            Kind::Hook => "hook",
        }
    }
}

/// What happened to it since prepare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A branch or tag that did not exist.
    Created,
    /// A branch or tag that pointed elsewhere.
    Moved,
    /// A branch or tag that is gone (who removed it cannot be told).
    Deleted,
    /// A stash entry pushed since.
    Added,
    /// A stash entry of prepare's time that is gone (popped or dropped).
    Removed,
    /// A config key whose values, or a hook whose content (or kind, or
    /// exec bit), differ.
    Changed,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Moved => "moved",
            Change::Deleted => "deleted",
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
        }
    }
}

/// One branch, tag or stash entry made from (or changed since) the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideEffect {
    /// The task whose workspace made it (index into the batch's tasks);
    /// `None` when it cannot be told.
    pub task: Option<usize>,
    pub kind: Kind,
    pub change: Change,
    /// The full ref name (`refs/heads/x`, `refs/tags/t`, `refs/stash`).
    pub name: String,
    /// What it pointed to at prepare.
    pub old: Option<ObjectId>,
    /// What it points to now.
    pub new: Option<ObjectId>,
    /// A stash entry's position now (`stash@{N}`).
    pub stash_index: Option<usize>,
    /// A stash entry's message (`WIP on (no branch): ...`).
    pub message: Option<String>,
    /// A config key's or hook's file (`<common-dir>/config`, a hooks
    /// folder's entry); `None` for refs.
    pub path: Option<PathBuf>,
    /// The config key (`core.fsmonitor`) or hook name; `None` for refs.
    pub detail: Option<String>,
    /// A config key's value now (its last); `None` otherwise.
    pub value: Option<String>,
}

impl SideEffect {
    /// What it pointed to at prepare, in full hex.
    pub fn old_hex(&self) -> Option<String> {
        self.old.map(|id| id.to_string())
    }

    /// What it points to now, in full hex.
    pub fn new_hex(&self) -> Option<String> {
        self.new.map(|id| id.to_string())
    }

    /// `old_hex`, abbreviated to 7 digits (empty when none).
    pub fn old_short(&self) -> String {
        self.old
            .map(|id| id.to_hex_with_len(7).to_string())
            .unwrap_or_default()
    }

    /// `new_hex`, abbreviated to 7 digits (empty when none).
    pub fn new_short(&self) -> String {
        self.new
            .map(|id| id.to_hex_with_len(7).to_string())
            .unwrap_or_default()
    }

    /// `stash@{N}` for a stash entry still in the stash, else the ref's
    /// short name (`x`, `t`).
    pub fn display_name(&self) -> String {
        match (self.kind, self.stash_index) {
            (Kind::Stash, Some(n)) => format!("stash@{{{n}}}"),
            (Kind::Stash, None) => "stash".into(),
            (Kind::Branch, _) => self.name.trim_start_matches("refs/heads/").into(),
            (Kind::Tag, _) => self.name.trim_start_matches("refs/tags/").into(),
            (Kind::Config | Kind::Hook, _) => self.detail.clone().unwrap_or_default(),
        }
    }
}

/// Read the shared refs of `repo` now.
pub fn read(repo: &gix::Repository) -> Result<Shared> {
    let mut shared = Shared::default();
    let platform = repo
        .references()
        .map_err(|e| Error::git("cannot list the repository's refs", e))?;
    for prefix in PREFIXES {
        let iter = platform
            .prefixed(prefix)
            .map_err(|e| Error::git("cannot list the repository's refs", e))?;
        for r in iter {
            // A ref that cannot be read is left out (reporting never
            // blocks apply); git itself complains about it.
            let Ok(r) = r else { continue };
            let name = r.name().as_bstr().to_str_lossy().into_owned();
            match r.target().try_id() {
                Some(id) => {
                    shared.refs.insert(name, id.to_owned());
                }
                None => continue, // a symbolic ref under refs/heads: not a branch of its own
            }
        }
    }
    shared.stash = stash_entries(repo)?.into_iter().map(|e| e.commit).collect();
    Ok(shared)
}

/// One stash entry, as its reflog line says.
struct StashEntry {
    commit: ObjectId,
    seconds: i64,
    message: String,
}

/// The stash's entries, oldest first (the last is `stash@{0}`).
fn stash_entries(repo: &gix::Repository) -> Result<Vec<StashEntry>> {
    let Some(r) = repo
        .try_find_reference(STASH)
        .map_err(|e| Error::git("cannot read refs/stash", e))?
    else {
        return Ok(Vec::new());
    };
    let mut platform = r.log_iter();
    let Some(lines) = platform
        .all()
        .map_err(|e| Error::io("cannot read the stash's reflog", e))?
    else {
        // A stash ref without a reflog is one entry.
        return Ok(r
            .target()
            .try_id()
            .map(|id| StashEntry {
                commit: id.to_owned(),
                seconds: 0,
                message: String::new(),
            })
            .into_iter()
            .collect());
    };
    let mut out = Vec::new();
    for line in lines {
        let line = line.map_err(|e| Error::git("cannot read the stash's reflog", e))?;
        let owned = line.to_owned();
        if owned.new_oid.is_null() {
            continue;
        }
        out.push(StashEntry {
            commit: owned.new_oid,
            seconds: owned.signature.time.seconds,
            message: owned.message.to_str_lossy().into_owned(),
        });
    }
    Ok(out)
}

/// The record's text: `<oid> <ref>` per ref, `<oid> stash` per stash entry.
fn to_text(shared: &Shared) -> String {
    let mut text = format!("{HEADER}\n");
    for (name, id) in &shared.refs {
        text.push_str(&format!("{id} {name}\n"));
    }
    for id in &shared.stash {
        text.push_str(&format!("{id} stash\n"));
    }
    text
}

fn from_text(text: &str) -> Option<Shared> {
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let mut shared = Shared::default();
    for line in lines {
        let (id, name) = line.split_once(' ')?;
        let id = ObjectId::from_hex(id.as_bytes()).ok()?;
        if name == "stash" {
            shared.stash.push(id);
        } else {
            shared.refs.insert(name.to_string(), id);
        }
    }
    Some(shared)
}

/// Record the shared refs of `source` in `batch_dir` (prepare, design
/// §3.16), and its shared git dir (config and hooks, `find_git_dir`): each
/// written temp-then-rename.
pub fn record(source: &Source, batch_dir: &Path) -> Result<()> {
    let shared = read(&source.repo)?;
    crate::sys::fs::write_atomic(&batch_dir.join(FILE), to_text(&shared).as_bytes())?;
    git_dir::record(source, batch_dir)
}

/// What prepare recorded for batch `b`; `None` for a batch recorded before
/// this existed, or a record that cannot be read (nothing is reported then).
pub fn recorded(source: &Source, b: &Batch) -> Option<Shared> {
    let path = batch::batch_dir(&source.state_dir(), &b.id).join(FILE);
    let text = std::fs::read_to_string(path).ok()?;
    from_text(&text)
}

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

/// The attributions apply found before, keyed by (ref, what it points to).
fn seen(source: &Source, b: &Batch) -> BTreeMap<(String, ObjectId), String> {
    let path = batch::batch_dir(&source.state_dir(), &b.id).join(SEEN_FILE);
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    let mut lines = text.lines();
    if lines.next() != Some(SEEN_HEADER) {
        return BTreeMap::new();
    }
    lines
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            let id = ObjectId::from_hex(parts.next()?.as_bytes()).ok()?;
            let task = parts.next()?.to_string();
            let name = parts.next()?.to_string();
            Some(((name, id), task))
        })
        .collect()
}

/// Keep who made what (apply, not its dry run), so a later apply still
/// names the task once its workspace is gone. Written temp-then-rename.
pub fn remember(source: &Source, b: &Batch, effects: &[SideEffect]) -> Result<()> {
    let mut known = seen(source, b);
    for e in effects {
        if let (Some(t), Some(id)) = (e.task.and_then(|t| b.tasks.get(t)), e.new) {
            known.insert((e.name.clone(), id), t.name.clone());
        }
    }
    if known.is_empty() {
        return Ok(());
    }
    let mut text = format!("{SEEN_HEADER}\n");
    for ((name, id), task) in &known {
        text.push_str(&format!("{id} {task} {name}\n"));
    }
    let path = batch::batch_dir(&source.state_dir(), &b.id).join(SEEN_FILE);
    Ok(crate::sys::fs::write_atomic(&path, text.as_bytes())?)
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
fn stash_branch(message: &str) -> Option<&str> {
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

/// For each task, the stash entries its workspace added that are still in
/// the stash: its unapplied work there (design §3.16).
pub fn stashed(effects: &[SideEffect]) -> BTreeMap<usize, Vec<&SideEffect>> {
    let mut map: BTreeMap<usize, Vec<&SideEffect>> = BTreeMap::new();
    for e in effects {
        if let (Kind::Stash, Change::Added, Some(t)) = (e.kind, e.change, e.task) {
            map.entry(t).or_default().push(e);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_text_round_trips() {
        let mut s = Shared::default();
        let a = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let b = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        s.refs.insert("refs/heads/main".into(), a);
        s.refs.insert("refs/tags/v1".into(), b);
        s.stash = vec![b, a];
        assert_eq!(from_text(&to_text(&s)), Some(s));
        assert_eq!(from_text("garbage\n"), None);
    }

    #[test]
    fn stash_messages_name_their_branch() {
        assert_eq!(stash_branch("WIP on (no branch): 1234 msg"), None);
        assert_eq!(stash_branch("WIP on x: 1234 msg"), Some("x"));
        assert_eq!(stash_branch("On feature/y: keep"), Some("feature/y"));
        assert_eq!(stash_branch("something else"), None);
    }
}
