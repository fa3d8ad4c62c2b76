//! A worktree registration, `<common-dir>/worktrees/<id>` (git's own layout,
//! as `git worktree add` leaves it), and the lock reason prepare writes into
//! its `locked` file: `git-delegate batch <batch-id> task <task>\n`.
//!
//! Owns: the path of a registration and of its files (`gitdir`, `locked`,
//! `index`); the lock-reason text (making it, reading it, recognising it
//! whole for one task or by its prefix for any batch), and that of a
//! verification workspace (`git-delegate batch <batch-id> verify <n>\n`,
//! design §3.10: `verify_lock_reason`, `Registration::verification_of`).
//! Never: creates or removes a registration or a workspace folder, nor
//! decides whether one may go (`workspace` and `gc` do, after proving it).

use std::path::{Path, PathBuf};

/// The folder name of the registrations inside the common dir.
pub const DIR: &str = "worktrees";

/// Every lock reason prepare writes starts with this.
const LOCK_PREFIX: &str = "git-delegate batch ";

/// `<common-dir>/worktrees`: where every registration lives.
pub fn dir(common_dir: &Path) -> PathBuf {
    common_dir.join(DIR)
}

/// The lock reason of task `task` of batch `batch` (the whole `locked` file).
pub fn lock_reason(batch: &str, task: &str) -> String {
    format!("{LOCK_PREFIX}{batch} task {task}\n")
}

/// The lock reason of verification workspace `what` (its number, or
/// `template` for the btrfs template, design §3.17) of batch `batch`.
pub fn verify_lock_reason(batch: &str, what: &str) -> String {
    format!("{LOCK_PREFIX}{batch} verify {what}\n")
}

/// One registration folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    path: PathBuf,
}

impl Registration {
    /// The registration of worktree `id` in `common_dir`.
    pub fn new(common_dir: &Path, id: &str) -> Self {
        Registration {
            path: dir(common_dir).join(id),
        }
    }

    /// The registration at `path` (an entry of [`dir`]).
    pub fn at(path: PathBuf) -> Self {
        Registration { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `gitdir` file: the worktree's `.git` file, as a path.
    pub fn gitdir_file(&self) -> PathBuf {
        self.path.join("gitdir")
    }

    /// The `locked` file (its content is the lock reason).
    pub fn locked_file(&self) -> PathBuf {
        self.path.join("locked")
    }

    /// The worktree's index.
    pub fn index_file(&self) -> PathBuf {
        self.path.join("index")
    }

    /// The lock reason, if the registration is locked and it is readable.
    pub fn read_lock_reason(&self) -> Option<String> {
        std::fs::read_to_string(self.locked_file()).ok()
    }

    /// Is it locked with the reason prepare wrote for task `task` of batch `batch`?
    pub fn is_ours_for(&self, batch: &str, task: &str) -> bool {
        self.read_lock_reason()
            .is_some_and(|r| r == lock_reason(batch, task))
    }

    /// The batch whose verification workspace (or template) it is, when it
    /// is locked as one ([`verify_lock_reason`]); `None` for anything else,
    /// a workspace `apply --keep` released (unlocked) included.
    pub fn verification_of(&self) -> Option<String> {
        let reason = self.read_lock_reason()?;
        let rest = reason.strip_prefix(LOCK_PREFIX)?.strip_suffix('\n')?;
        let (batch, what) = rest.split_once(" verify ")?;
        let word = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        (word(batch) && word(what)).then(|| batch.to_string())
    }

    /// The batch whose task's lock it holds (`git-delegate batch <id>
    /// task <name>`), if it holds one.
    pub fn batch_of(&self) -> Option<String> {
        let reason = self.read_lock_reason()?;
        let rest = reason.strip_prefix(LOCK_PREFIX)?.strip_suffix('\n')?;
        let (batch, task) = rest.split_once(" task ")?;
        let word = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        (word(batch) && !task.is_empty()).then(|| batch.to_string())
    }

    /// Is it locked with a reason prepare wrote (for any batch)?
    pub fn is_locked_by_a_batch(&self) -> bool {
        self.read_lock_reason()
            .is_some_and(|r| r.starts_with(LOCK_PREFIX))
    }
}
