//! The command line: clap definitions of every subcommand and option, shared
//! by the binary, the man-page generator and the completion generator.
//!
//! Owns: names, help texts and value parsing of the interface.
//! Never: does any work beyond parsing.

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Workflow:
  git delegate prepare -n 4 --json     # snapshot the working tree, one worktree per task
  (workers edit the task folders printed by prepare)
  git delegate status                  # leases, tasks, changed paths
  git delegate apply                   # merge every task back into the working tree
  git delegate drop BATCH --force      # or give the batch up

Run `man git-delegate` (or `git help delegate`) for the whole manual.";

#[derive(Debug, Parser)]
#[command(
    name = "git-delegate",
    bin_name = "git delegate",
    version,
    about = "Hand one exact snapshot of your working tree to parallel workers, and bring their results back safely",
    long_about = "git delegate snapshots the working tree exactly as it is (uncommitted and untracked files \
included, ignored files left out) into a private baseline commit, gives every task its own linked worktree \
of it, and later merges every task's result back into the working tree, 3-way, through a crash-safe \
journal. Your index, HEAD, branches and stash are never changed, and conflicting work is kept, never lost.",
    after_long_help = AFTER_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// When to use colour: auto, always or never
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Worktree,
    Scratch,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Snapshot the working tree into a batch with one workspace per task
    #[command(
        long_about = "Snapshot the working tree exactly as it is (staged, unstaged and untracked files; ignored files \
left out) into a private baseline commit under refs/pi-delegate/, and create one workspace per task: a linked \
worktree detached at the baseline, locked while the batch lives. Your index, HEAD and branches are not touched.",
        after_long_help = "Examples:\n  git delegate prepare -n 4\n  git delegate prepare lint docs tests --label refactor --ttl 2h\n  git delegate prepare -n 2 --owner-pid $$ --json"
    )]
    Prepare(PrepareArgs),
    /// Merge the tasks' work back into the working tree
    #[command(
        long_about = "Turn each task's workspace into a proposal commit, merge the proposals 3-way in task order onto \
the baseline, merge that with what changed in the working tree since prepare, and write the result through a \
crash-safe journal. Conflicting tasks keep their proposal ref, patch and workspace.",
        after_long_help = "Examples:\n  git delegate apply\n  git delegate apply --dry-run --json\n  git delegate apply --only 2 --keep"
    )]
    Apply(ApplyArgs),
    /// Show batches, leases and tasks
    #[command(
        long_about = "Show every batch of the repository (or one): id, label, age, baseline, lease state and expiry, \
owner, and per task its state, workspace and how many paths differ from the baseline. Changes nothing.",
        after_long_help = "Examples:\n  git delegate status\n  git delegate status --check   # exit 1 on stale batches\n  git delegate status --json"
    )]
    Status(StatusArgs),
    /// Reclaim what stale batches hold, rescuing unapplied work first
    Gc(GcArgs),
    /// End a batch: remove its workspaces, refs and state
    #[command(
        long_about = "End a batch on purpose: remove its workspaces, worktree registrations, private refs and state. \
Refuses while a task has changes that were never applied, unless --force. A folder that is no longer the workspace \
prepare made is left alone even with --force."
    )]
    Drop(DropArgs),
    /// Extend a batch's lease
    #[command(
        long_about = "Extend a live or expired lease to now + TTL. An orphaned lease (its owner process is gone) is \
renewed only with a new --owner-pid."
    )]
    Renew(RenewArgs),
    /// Run a git hook's check (pre-commit)
    Hook(HookArgs),
    /// Install git-delegate's git hooks into this repository
    Hooks(HooksArgs),
    /// Print the manual page, or install all pages
    Man(ManArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Plumbing: print the tree id of the working tree's snapshot (for tests and benchmarks)
    #[command(hide = true)]
    Snapshot,
}

#[derive(Debug, Args, Clone, Default)]
pub struct JsonArg {
    /// Print exactly one JSON document (schema git-delegate/v1) on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Task names ([A-Za-z0-9][A-Za-z0-9._-]{0,63}); default: 1..N with -n, else one task `1`
    #[arg(value_name = "TASK")]
    pub tasks: Vec<String>,
    /// Create N tasks named 1..N
    #[arg(short = 'n', long = "count", value_name = "N", conflicts_with = "tasks", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub count: Option<u32>,
    /// Workspace kind (default: workspace.mode, else worktree)
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// A name for the batch, usable wherever BATCH is asked for
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
    /// The lease is orphaned once this process is gone
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,
    /// Make the pre-commit hook refuse commits inside this batch's workspaces
    #[arg(long)]
    pub forbid_commit: bool,
    /// Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)
    #[arg(long, value_name = "PATTERN")]
    pub copy_ignored: Vec<String>,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The batch: label, id or unique id prefix (default: the only open batch)
    pub batch: Option<String>,
    /// Apply only these tasks; the rest stay open (repeatable)
    #[arg(long, value_name = "TASK")]
    pub only: Vec<String>,
    /// Drop these tasks' work (repeatable)
    #[arg(long, value_name = "TASK")]
    pub discard: Vec<String>,
    /// Report what would happen; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Refuse a task when the source changed since prepare in a path it touches
    #[arg(long)]
    pub strict: bool,
    /// Keep the workspaces of applied tasks (as ordinary unlocked worktrees)
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The batch: label, id or unique id prefix (default: all batches)
    pub batch: Option<String>,
    /// Print only problems; exit 1 on a stale batch or a left-over journal
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Report what would be reclaimed; change nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct DropArgs {
    /// The batch: label, id or unique id prefix
    pub batch: String,
    /// Drop even when tasks have changes that were never applied
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct RenewArgs {
    /// The batch: label, id or unique id prefix (default: the only open batch)
    pub batch: Option<String>,
    /// New lease duration from now (default: lease.ttl, else 24h)
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
    /// A new owner process for the lease
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,
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
    PreCommit,
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Install the pre-commit hook (an existing hook is kept and chained)
    Install {
        /// Replace an existing pre-commit.local when a foreign hook is also present
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        json: JsonArg,
    },
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Install every page into DIR (default: <exe dir>/../share/man/man1)
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub install: Option<Option<std::path::PathBuf>>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
