//! The arguments of the commands that make a batch, land its work or take
//! it back: prepare, join, submit, apply, run, refresh, undo.
//!
//! Owns: their names, help texts and parsing.
//! Never: does any work beyond parsing.

use clap::Args;

use super::{BatchArg, BatchOpt, JsonArg, ModeArg, BATCH_LOOKUP_HELP};

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Task names (default: 1..N with -n, else one task named 1)
    ///
    /// A task name is 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit. It
    /// names the task's workspace folder and its refs. Duplicates are refused.
    #[arg(value_name = "TASK")]
    pub tasks: Vec<String>,
    /// Create N tasks named 1..N
    #[arg(short = 'n', long = "count", value_name = "N", conflicts_with = "tasks", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub count: Option<u32>,
    /// Workspace kind (default: workspace.mode, else worktree)
    ///
    /// `worktree`: a linked git worktree detached at the baseline, locked while the batch lives.
    /// `scratch`: a reflink copy of the whole source, refused where the filesystem cannot clone files.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// A name for the batch, usable wherever BATCH is asked for
    ///
    /// Labels are unique among the repository's open batches. A label that could be read as a
    /// batch id or id prefix (4 or more characters, all hex digits and hyphens) is refused.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)
    ///
    /// A batch whose lease expired is stale: `status --check` reports it and `gc` reclaims it
    /// (saving unapplied work first). `git delegate renew` extends the lease. A lease must end by
    /// 9999-12-31; a longer duration is refused.
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
    /// The lease is orphaned once this process is gone
    ///
    /// Pass the pid of the orchestrator (for a shell, `$$`). Its start time is recorded, so a
    /// reused pid does not count as alive. A pid that is not running is refused.
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,
    /// Make the pre-commit hook refuse commits inside this batch's workspaces
    ///
    /// Needs the hook: `git delegate hooks install`.
    #[arg(long)]
    pub forbid_commit: bool,
    /// Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)
    #[arg(long, value_name = "PATTERN")]
    pub copy_ignored: Vec<String>,
    /// Check out only this folder in each workspace, within the source's own sparse checkout (repeatable; cone patterns)
    ///
    /// Narrows every workspace further than the source's sparse checkout (a source with none counts as whole), as `git sparse-checkout set --cone FOLDER...` would: the files at the top, every file below FOLDER and the files directly in its parent folders. The rest are skip-worktree entries at the baseline's content. A change outside the source's sparse checkout never reaches the source: apply reports that task as a conflict with reason outside_sparse_checkout.
    #[arg(long, value_name = "FOLDER")]
    pub sparse: Vec<String>,
    /// Make the tasks remote: push the baseline to REMOTE (a remote's name or a URL)
    ///
    /// No local workspace is made for a remote task: the output gives, per task, the
    /// `git delegate join URL BATCH TASK` a worker runs on any machine that reaches REMOTE, and
    /// `git delegate apply` fetches what the workers submitted. A push that fails undoes the
    /// prepare (delegate::remote_failed, exit 3).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// With --remote: keep this task local, with a workspace here (repeatable)
    #[arg(long, value_name = "TASK", requires = "remote")]
    pub local: Vec<String>,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The batch's remote, as the join line gives it
    pub url: String,
    /// The batch's full id
    pub batch: String,
    /// The task to work on
    pub task: String,
    /// Where the workspace goes (default: ./<repo-name>-<batch-short>-<task>)
    pub dir: Option<std::path::PathBuf>,
    /// Add the workspace to this clone of the project instead of looking for one around the current folder
    #[arg(long, value_name = "DIR")]
    pub repo: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
#[command(mut_arg("batch", |a| a.long_help(BATCH_LOOKUP_HELP)))]
pub struct ApplyArgs {
    #[command(flatten)]
    pub batch: BatchArg,
    /// Apply only these tasks; the rest stay open (repeatable)
    ///
    /// A task whose worker failed in `git delegate run` (worker_failed) is applied only when named
    /// here: an apply that does not name it leaves it open and lists it as worker_failed (exit 1),
    /// since its worker may have stopped half-way.
    #[arg(long, value_name = "TASK")]
    pub only: Vec<String>,
    /// Drop these tasks' work (repeatable)
    ///
    /// Their work is not applied, and their workspaces are removed; what a workspace changed is
    /// kept as a proposal ref and patch for gc.keep-failed (default 14 days), listed by
    /// `git delegate status`, so a mistyped name loses nothing: `git delegate apply --kept REF`
    /// brings it back.
    /// A git repository a worker made inside its workspace is never part of a proposal, so such a
    /// workspace is not removed: it stays as an ordinary worktree, and apply names it.
    #[arg(long, value_name = "TASK")]
    pub discard: Vec<String>,
    /// Report what would happen; change nothing
    ///
    /// Nothing changes in the working tree, refs or workspaces. An
    /// interrupted write-back left over is reported (exit 3), never rolled back.
    #[arg(long)]
    pub dry_run: bool,
    /// List every path each task wrote (or would write), not only the first 20
    #[arg(short, long)]
    pub verbose: bool,
    /// Refuse a task when the source changed since prepare in a path it touches
    ///
    /// Without --strict such a task is merged 3-way when that is clean. Default: apply.strict.
    #[arg(long)]
    pub strict: bool,
    /// Keep the workspaces of applied tasks (as ordinary unlocked worktrees)
    ///
    /// They stay registered with git (`git worktree list`) and the batch no longer owns them:
    /// remove them with `git worktree remove`. With --verify, the verification workspaces, their
    /// refs and the logs of passing runs are kept too.
    #[arg(long)]
    pub keep: bool,
    /// Run CMD on the integrated result first; land only tasks that pass it
    ///
    /// CMD runs through `sh -c` in a verification workspace holding the result (the working tree as it
    /// is now plus the tasks), at the folder that mirrors yours, with stdin from /dev/null and
    /// GIT_DELEGATE_BATCH, GIT_DELEGATE_VERIFY=1 and GIT_DELEGATE_TASKS set; its output goes to
    /// <git-common-dir>/delegate/logs/<batch>/verify-<n>.log. Exit 0 lands the set. Otherwise the
    /// working tree alone is verified (failing too: nothing is written, every task ends unverified),
    /// then the task whose addition makes CMD fail is rejected (binary search, in task order), and
    /// the rest is verified again. Default: apply.verify.
    ///
    /// CMD must test the files of the verification workspace: a package installed in editable
    /// mode from your working tree (`pip install -e .`, `npm link`) is imported from there
    /// instead, and CMD would pass on your tree, not on the result. Point it at the workspace,
    /// e.g. `--verify 'PYTHONPATH=src python -m pytest'`, or use an environment made inside
    /// the workspace (`python -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pytest`).
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Do not run apply.verify
    #[arg(long, conflicts_with = "verify")]
    pub no_verify: bool,
    /// Kill a verification run (its whole process group) after DURATION; it counts as failed
    ///
    /// Default: apply.verify-timeout, else 30m.
    #[arg(long, value_name = "DURATION")]
    pub verify_timeout: Option<String>,
    /// Verify up to J candidate sets at once, each in its own workspace
    ///
    /// The outcome is the same as with 1; more runs may be made. Default: apply.verify-jobs, else 1.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub verify_jobs: Option<u16>,
    /// Land a kept proposal (one `git delegate status` lists under kept) instead of a batch
    ///
    /// REF is its ref as status prints it, or BATCH/TASK (the batch's id, a unique id prefix of
    /// at least 4 characters, or its label while the batch exists). Its work is merged into the
    /// working tree you run this in, as apply lands a task: 3-way from the baseline it was made
    /// from with the working tree as it is now, written through the journal. Once written, its
    /// ref and patch are removed; on a conflict nothing is written and it stays kept (exit 1).
    #[arg(long, value_name = "REF", conflicts_with_all = ["batch", "only", "discard", "keep"])]
    pub kept: Option<String>,
    /// Then refresh every task that ended `conflict`, handing its conflicts to its worker
    ///
    /// Right after the apply, in the same command, as `git delegate refresh` does for those
    /// tasks: their workspaces receive the source as it is now, with conflict markers and
    /// unmerged index entries where they conflict. A task already holding unresolved conflicts
    /// is left as it is.
    #[arg(long, conflicts_with = "dry_run")]
    pub refresh_conflicts: bool,
    /// Apply again the proposals of an undone apply (its id or a unique prefix)
    ///
    /// The proposals `git delegate undo` kept are merged into the working tree as it is now, as
    /// a new apply with its own undo entry. Only an undone entry can be applied again (exit 2
    /// otherwise). Takes no BATCH, --only, --discard or --keep.
    #[arg(long, value_name = "APPLY", conflicts_with_all = ["batch", "only", "discard", "keep"])]
    pub from_undo: Option<String>,
    #[command(flatten)]
    pub json: JsonArg,
}

/// `--no-sandbox` and `--no-network`, which `run` and `exec` share (design §3.22).
#[derive(Debug, Args)]
pub struct ContainArgs {
    /// Start the workers unconfined (run.sandbox = "off" for this command)
    ///
    /// Without it, each worker is contained by Landlock where the kernel has it: it can write
    /// only its task's workspace, its worktree's own git folder, a private TMPDIR and the
    /// folders run.writable lists.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Deny the workers new TCP connections and listening sockets (run.network = false)
    ///
    /// Landlock's network rules (Linux 6.7, Landlock ABI 4, or later). UDP, unix sockets and
    /// sockets a worker inherited are not covered.
    #[arg(long)]
    pub no_network: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub prepare: PrepareArgs,
    /// Read the tasks from a TOML file of [[task]] tables (name, command, env, timeout)
    ///
    /// Instead of TASK or -n. Each [[task]] has `name`, and optionally `command` (an array of
    /// strings replacing the command after --), `env` (a table of strings) and `timeout` (such
    /// as "10m"). Errors name the line and column; nothing is prepared then.
    #[arg(long = "tasks", value_name = "FILE", conflicts_with_all = ["tasks", "count"])]
    pub tasks_file: Option<std::path::PathBuf>,
    /// Run at most J workers at once (default: all)
    #[arg(short = 'j', long, value_name = "J", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Stop a worker still running after DURATION (90s, 30m, 2h): SIGTERM, then SIGKILL
    ///
    /// Its status is timed_out and its task worker_failed. A task's own `timeout` in --tasks
    /// wins.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Verify the integrated result with CMD before writing (as `apply --verify`)
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Do not run apply.verify
    #[arg(long, conflicts_with = "verify")]
    pub no_verify: bool,
    /// Bound each verification run (as `apply --verify-timeout`)
    #[arg(long, value_name = "DURATION")]
    pub verify_timeout: Option<String>,
    /// Stop after the workers: apply nothing, print the apply command
    #[arg(long, conflicts_with_all = ["verify", "verify_timeout"])]
    pub no_apply: bool,
    #[command(flatten)]
    pub contain: ContainArgs,
    /// The command to run in every task's workspace, after `--`
    #[arg(last = true, value_name = "COMMAND", allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
// `mut_arg` moves the argument to the end; moving --json after it again keeps
// the order help, man pages and completions list them in.
#[command(
    mut_arg("batch", |a| a.help(
        "The batch: label, id or unique id prefix (default: the batch of the workspace you are in, else the only open batch)"
    )),
    mut_arg("json", |a| a)
)]
pub struct RefreshArgs {
    /// Tasks to refresh (default: the task of the workspace you are in, else every open task)
    pub tasks: Vec<String>,
    #[command(flatten)]
    pub batch: BatchOpt,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The apply to undo: its id or a unique prefix of at least 4 characters (default: the latest
    /// apply not undone yet)
    pub apply: Option<String>,
    /// List the undo entries (id, batch, time, paths written, undone or not); change nothing
    #[arg(long, conflicts_with_all = ["apply", "dry_run"])]
    pub list: bool,
    /// Report what undo would write or which paths block it; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Undo even though HEAD moved since the apply (its changes may be committed now)
    #[arg(long, conflicts_with = "list")]
    pub force: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task to run COMMAND in
    pub task: String,
    #[command(flatten)]
    pub batch: BatchOpt,
    #[command(flatten)]
    pub contain: ContainArgs,
    /// The command, after `--`
    #[arg(
        last = true,
        required = true,
        value_name = "COMMAND",
        allow_hyphen_values = true
    )]
    pub command: Vec<std::ffi::OsString>,
}
