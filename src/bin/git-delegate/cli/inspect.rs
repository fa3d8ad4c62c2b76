//! The arguments of the commands that look at a batch without changing
//! it: diff, path, branch, status.
//!
//! Owns: their names, help texts and parsing.
//! Never: does any work beyond parsing.

use clap::Args;

use super::{BatchArg, BatchOpt, JsonArg};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Tasks to show (default: every open task of the batch)
    pub tasks: Vec<String>,
    #[command(flatten)]
    pub batch: BatchOpt,
    /// Per task, the changed paths with counts, as `git diff --stat` prints them
    #[arg(long, conflicts_with = "name_status")]
    pub stat: bool,
    /// Per task, one `STATUS<TAB>PATH` line per changed path, as `git diff --name-status`
    #[arg(long)]
    pub name_status: bool,
    /// What apply would change in the working tree now, all selected tasks together
    #[arg(long)]
    pub source: bool,
    /// Show binary files as patches `git apply` takes (`GIT binary patch`), as `git diff --binary`
    ///
    /// A binary patch's `index` line has full ids, as git writes it. Without it a binary file's
    /// change is git's `Binary files a/X and b/X differ` line. With --source, this is the form
    /// `git apply` takes for binary files.
    #[arg(long)]
    pub binary: bool,
    /// Show full object ids in the `index` lines, as `git diff --full-index`
    #[arg(long)]
    pub full_index: bool,
    /// Never page the output (default on a terminal: the pager git would choose)
    #[arg(long)]
    pub no_pager: bool,
    /// Only these paths and what is under them (relative to the current folder)
    #[arg(last = true, value_name = "PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct PathArgs {
    /// The task (default: the task whose workspace holds the current folder)
    pub task: Option<String>,
    #[command(flatten)]
    pub batch: BatchOpt,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
pub struct BranchArgs {
    /// The task whose work the branch holds
    pub task: String,
    /// The branch name (default: delegate/<label or short id>/<task>)
    pub name: Option<String>,
    #[command(flatten)]
    pub batch: BatchOpt,
    /// The commit the branch starts from (default: the source's HEAD)
    #[arg(long, value_name = "REV")]
    pub onto: Option<String>,
    /// The commit message (default: "<task>: work from git delegate batch <label or short id>")
    #[arg(short = 'm', long, value_name = "MESSAGE")]
    pub message: Option<String>,
    /// Move the branch when it exists already (never the one checked out in a worktree)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

#[derive(Debug, Args)]
#[command(mut_arg("batch", |a| a.help("The batch: label, id or unique id prefix (default: all batches)")))]
pub struct StatusArgs {
    #[command(flatten)]
    pub batch: BatchArg,
    /// Print only problems; exit 1 on any (a stale batch, a left-over journal, a workspace left aside or a registration left by a killed command, an unconfirmed delegate.toml, ...), each with the command that clears it
    #[arg(long)]
    pub check: bool,
    /// Ask the remote of batches with remote tasks which of them have submitted
    #[arg(long)]
    pub fetch: bool,
    #[command(flatten)]
    pub json: JsonArg,
}
