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
//! Owns: the `shared-refs` record (its format and file), the side effects'
//! model, and which tasks hold work in the stash (`stashed`); which refs
//! count as the batch's (their commit descends from the baseline, or a
//! workspace's HEAD names them) and attributing them to a task is
//! `find`'s.
//! Never: creates, moves or deletes a ref, a reflog entry or a stash entry
//! (the user's refs are reported, never touched); prints.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::error::{Error, Result};
use crate::record::batch::{self, Batch};

mod find;
mod git_dir;
use crate::git::registration::Registration;
use crate::git::repo::Source;
pub use find::find;
#[cfg(test)]
use find::stash_branch;
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
