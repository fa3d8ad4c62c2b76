//! What of the private snapshot is the user's own by now (design §3.19),
//! and which task a pushed ref's work is.
//!
//! A recorded blob stops being private once the user commits it on their
//! own branch: a commit bringing it passes when it was made in one of the
//! user's worktrees (the main worktree and linked worktrees git-delegate
//! did not make: registrations not named `delegate-...`), as that
//! worktree's HEAD reflog records it (`commit`, `merge`, `pull`, `rebase`,
//! `cherry-pick`, `revert`, `am`; never `checkout`, `reset`, a
//! fast-forward or a rebase's `(start)`, which make no commit), or by
//! `git delegate branch` (the pushed branch's reflog), or when the blob is
//! at that path in the commit one of those worktrees has checked out. All of it is read only when a
//! commit brings a recorded blob.
//!
//! Owns: reading those reflogs and HEADs.
//! Never: changes anything; fails the check (what it cannot read counts as
//! not the user's, which refuses more, never less).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::ObjectId;

use crate::record::batch::Batch;

/// The prefix of the worktree registrations git-delegate makes.
const OURS: &str = "delegate-";

/// What is the user's, read once when first asked.
pub struct Mine<'r> {
    repo: &'r gix::Repository,
    common_dir: PathBuf,
    /// Commits made in the user's worktrees.
    made: Option<HashSet<ObjectId>>,
    /// The trees the user's worktrees have checked out.
    heads: Option<Vec<ObjectId>>,
    /// Per pushed branch: the commits `git delegate branch` made on it.
    published: HashMap<String, HashSet<ObjectId>>,
}

impl<'r> Mine<'r> {
    pub fn new(repo: &'r gix::Repository, common_dir: &Path) -> Mine<'r> {
        Mine {
            repo,
            common_dir: common_dir.to_path_buf(),
            made: None,
            heads: None,
            published: HashMap::new(),
        }
    }

    /// The git dirs of the user's worktrees: the common dir (the main
    /// worktree's) and the linked ones git-delegate did not make.
    fn git_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.common_dir.clone()];
        if let Ok(rd) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            for e in rd.flatten() {
                if !e.file_name().to_string_lossy().starts_with(OURS) {
                    dirs.push(e.path());
                }
            }
        }
        dirs
    }

    /// Whether `commit` was made by the user in a worktree of theirs, or by
    /// `git delegate branch` on `local_ref`.
    pub fn made(&mut self, commit: ObjectId, local_ref: &str) -> bool {
        if self.made.is_none() {
            let mut made = HashSet::new();
            for dir in self.git_dirs() {
                made.extend(reflog(&dir.join("logs/HEAD"), makes_a_commit));
            }
            self.made = Some(made);
        }
        if self.made.as_ref().is_some_and(|m| m.contains(&commit)) {
            return true;
        }
        let Some(branch) = local_ref.strip_prefix("refs/heads/") else {
            return false;
        };
        let log = self.common_dir.join("logs/refs/heads").join(branch);
        self.published
            .entry(local_ref.to_string())
            .or_insert_with(|| reflog(&log, |m| m.starts_with(b"git delegate branch:")))
            .contains(&commit)
    }

    /// Whether `blob` is at `path` in the commit a worktree of the user's
    /// has checked out.
    pub fn holds(&mut self, path: &BStr, blob: ObjectId) -> bool {
        if self.heads.is_none() {
            let heads = self
                .git_dirs()
                .iter()
                .filter_map(|d| self.head_tree(d))
                .collect();
            self.heads = Some(heads);
        }
        let repo = self.repo;
        self.heads.iter().flatten().any(|&tree| {
            let Ok(tree) = repo.find_tree(tree) else {
                return false;
            };
            let parts = path.split(|&b| b == b'/').map(|c| c.as_bstr().to_owned());
            matches!(tree.lookup_entry(parts), Ok(Some(e)) if e.object_id() == blob && !e.mode().is_tree())
        })
    }

    /// The tree of the commit the worktree whose git dir is `dir` has
    /// checked out (`None`: unborn, or unreadable).
    fn head_tree(&self, dir: &Path) -> Option<ObjectId> {
        let head = std::fs::read(dir.join("HEAD")).ok()?;
        let head = head.trim_ascii_end();
        let commit = match head.strip_prefix(b"ref: ") {
            Some(name) => self
                .repo
                .find_reference(name.to_str().ok()?)
                .ok()?
                .peel_to_id()
                .ok()?
                .detach(),
            None => ObjectId::from_hex(head).ok()?,
        };
        Some(self.repo.find_commit(commit).ok()?.tree_id().ok()?.detach())
    }
}

/// The new values of the entries of the reflog `file` whose message
/// `keep` accepts (no file: none).
fn reflog(file: &Path, keep: impl Fn(&[u8]) -> bool) -> HashSet<ObjectId> {
    let Ok(text) = std::fs::read(file) else {
        return HashSet::new();
    };
    text.lines()
        .filter_map(|line| {
            let (head, message) = line.split_once_str(b"\t").unwrap_or((line, b""));
            let new = head.split(|&b| b == b' ').nth(1)?;
            keep(message)
                .then(|| ObjectId::from_hex(new).ok())
                .flatten()
        })
        .collect()
}

/// Whether a HEAD reflog message records a commit made there.
fn makes_a_commit(message: &[u8]) -> bool {
    // `<action>: <detail>`. A fast-forward, or a rebase's first step
    // (checking out its upstream), moves HEAD to a commit someone else made.
    let (action, detail) = message.split_once_str(b": ").unwrap_or((message, b""));
    if detail.starts_with(b"Fast-forward") || action.ends_with(b"(start)") {
        return false;
    }
    [
        "commit",
        "rebase",
        "cherry-pick",
        "revert",
        "am",
        "merge ",
        "pull",
    ]
    .iter()
    .any(|p| action.starts_with(p.as_bytes()))
}

/// The task whose work `local_ref` is, among `b`'s open tasks: the one
/// whose workspace the push runs in, else the one that has `local_ref`
/// checked out, else the batch's only open task.
pub fn task_of(
    repo: &gix::Repository,
    common_dir: &Path,
    b: &Batch,
    local_ref: &str,
) -> Option<String> {
    let registrations = common_dir.join("worktrees");
    let here = std::fs::canonicalize(repo.git_dir()).ok();
    let local: Vec<_> = b.open_tasks().filter(|t| !t.remote).collect();
    let reg = |t: &crate::record::batch::Task| registrations.join(&t.worktree_id);
    if let Some(t) = local
        .iter()
        .find(|t| here.is_some() && std::fs::canonicalize(reg(t)).ok() == here)
    {
        return Some(t.name.clone());
    }
    let want = format!("ref: {local_ref}");
    if let Some(t) = local.iter().find(|t| {
        std::fs::read(reg(t).join("HEAD")).is_ok_and(|h| h.trim_ascii_end() == want.as_bytes())
    }) {
        return Some(t.name.clone());
    }
    let mut open = b.open_tasks();
    match (open.next(), open.next()) {
        (Some(t), None) => Some(t.name.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::makes_a_commit;

    #[test]
    fn only_entries_that_make_a_commit_count() {
        for yes in [
            "commit: add it",
            "commit (amend): add it",
            "commit (initial): first",
            "commit (merge): Merge branch 'x'",
            "merge side: Merge made by the 'ort' strategy.",
            "rebase (pick): add it",
            "pull --rebase (pick): add it",
            "rebase -i (finish): returning to refs/heads/x",
            "cherry-pick: add it",
            "revert: Revert \"x\"",
            "am: add it",
            "commit: a fix (start) with Fast-forward in it",
            "pull: Merge made by the 'ort' strategy.",
        ] {
            assert!(makes_a_commit(yes.as_bytes()), "{yes}");
        }
        for no in [
            "checkout: moving from main to agent/x",
            "reset: moving to agent/x",
            "merge agent/x: Fast-forward",
            "pull: Fast-forward",
            "rebase (start): checkout agent/x",
            "pull --rebase (start): checkout origin/main",
            "branch: Created from HEAD",
            "clone: from /somewhere",
        ] {
            assert!(!makes_a_commit(no.as_bytes()), "{no}");
        }
    }
}
