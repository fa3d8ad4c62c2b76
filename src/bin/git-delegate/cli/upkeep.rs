//! The arguments of the commands that end batches, tidy up and install:
//! gc, drop, renew, config, hook, hooks, man, completions.
//!
//! Owns: their names, help texts and parsing.
//! Never: does any work beyond parsing.

use clap::{Args, Subcommand};

use super::{BatchArg, JsonArg};

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Report what would be reclaimed; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove every idle workspace of the pool (workspace.pool)
    #[arg(long)]
    pub pool: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
#[command(mut_arg("batch", |a| a
    .help("The batch: label, id or unique id prefix")
    .long_help(concat!(
        "The batch: label, id or unique id prefix\n\n",
        "The full id is tried first, then a label, then any unique prefix of at least 4 characters. ",
        "Required (dropping ends the batch), but with --pool; left out, the error lists the open batches."
    ))))]
pub struct DropArgs {
    #[command(flatten)]
    pub batch: BatchArg,
    /// Drop even when tasks have changes that were never applied
    ///
    /// Their work is lost. A folder that is no longer the workspace prepare made, or that is the
    /// source of another open batch, is still left alone. A batch whose state file is corrupt is
    /// dropped only with --force; the changes in its workspaces are then saved as proposal refs
    /// and patches first.
    #[arg(long)]
    pub force: bool,
    /// Remove every idle workspace of the pool (workspace.pool) instead of a batch
    #[arg(long, conflicts_with_all = ["batch", "force"])]
    pub pool: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct RenewArgs {
    #[command(flatten)]
    pub batch: BatchArg,
    /// New lease duration from now (default: lease.ttl, else 24h)
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
    /// A new owner process for the lease
    ///
    /// Needed to renew an orphaned lease. A pid that is not running is refused.
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Confirm delegate.toml as it is now: the commands it names run from now on
    ///
    /// Records the file as yours (a copy in <git-common-dir>/delegate/confirmed/). Run it in your
    /// own working tree: a task's workspace, whose worker could run it, is refused.
    #[arg(long)]
    pub trust: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub hook: HookName,
}

#[derive(Debug, Subcommand)]
pub enum HookName {
    /// Refuse commits inside forbid-commit workspaces; warn about stale batches
    ///
    /// Exit 1 refuses the commit (a forbid-commit workspace, or stale batches with
    /// hooks.stale-leases = "block"); otherwise exit 0, silently unless there is a warning.
    PreCommit,
    /// Refuse a push that would publish the user's private files (a baseline's snapshot)
    ///
    /// Reads git's pre-push lines on stdin. A push whose new commits include a git-delegate
    /// baseline that differs from its parent (a worker's branch made in its workspace), or
    /// bring a file's content that was uncommitted or untracked in the working tree at a
    /// prepare (however the commit was re-authored, squashed, cherry-picked or rebased; tags
    /// peeled), is refused (exit 1), naming the ref and the `git delegate branch` command that
    /// publishes the task's work cleanly. What you committed yourself since passes. A check
    /// that cannot be made refuses the push too, naming why; `git push --no-verify` or
    /// hooks.private-baselines = "warn" (or "ignore") let it through.
    PrePush {
        /// The remote's name (as git gives it)
        remote: String,
        /// The remote's URL (as git gives it)
        url: Option<String>,
    },
    /// Claude Code's WorktreeCreate hook: prepare a one-task batch, print its folder
    ///
    /// Reads Claude Code's JSON payload on stdin (`name` or `worktree_name`, `cwd` or
    /// `base_path`), prepares a one-task batch of the repository at that folder (task named
    /// after the worktree: a name that is no valid task name keeps only A-Z a-z 0-9 . _ -,
    /// cut to 55 characters, and gets a hash of itself appended; label claude-<task>; lease
    /// lease.ttl) and prints the task's folder as the only line on stdout. A name whose batch
    /// is still open in this working tree (Claude Code resuming it) gets that task's folder
    /// back, its lease renewed. Any failure: non-zero exit, nothing made.
    WorktreeCreate,
    /// Claude Code's WorktreeRemove hook: apply the batch behind the worktree
    ///
    /// Reads `worktree_path` from the JSON payload on stdin and applies the batch whose task
    /// it is (hooks.on-remove = "apply", the default; "keep" leaves the batch open). A conflict
    /// keeps the work and says so on stderr; a path that is no git-delegate workspace, or
    /// whose batch ended already (your own apply got there first), is left alone (exit 0).
    WorktreeRemove,
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Install the pre-commit hook (an existing hook is kept and chained)
    ///
    /// An existing foreign pre-commit hook is moved to pre-commit.local and run first; if it
    /// fails, the commit is refused. Installing twice changes nothing.
    Install {
        /// Replace an existing pre-commit.local when a foreign hook is also present
        #[arg(long, conflicts_with = "claude")]
        force: bool,
        /// Install Claude Code's worktree hooks into .claude/settings.local.json instead
        ///
        /// Merges the WorktreeCreate and WorktreeRemove hooks (`git delegate hook
        /// worktree-create`, `worktree-remove`) into the working tree's
        /// .claude/settings.local.json, keeping every other setting; twice adds nothing.
        #[arg(long)]
        claude: bool,
        /// With --claude: remove the two hooks again (nothing else)
        #[arg(long, requires = "claude")]
        uninstall: bool,
        #[command(flatten)]
        json: JsonArg,
    },
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Install every page into DIR (default: <exe dir>/../share/man/man1)
    ///
    /// Writes git-delegate.1 and one git-delegate-<command>.1 per command. The default is found
    /// by man through PATH (for `cargo install`: ~/.cargo/share/man/man1).
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub install: Option<Option<std::path::PathBuf>>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
