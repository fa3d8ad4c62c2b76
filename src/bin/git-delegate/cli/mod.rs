//! The command line: clap definitions of every subcommand and option, shared
//! by the binary, the man-page generator and the completion generator.
//! This file holds the top level (`Cli`, `command`, the `Command` enum with
//! each subcommand's help); each subcommand's arguments are in the files
//! below, by group, all re-exported here (`cli::ApplyArgs`).
//!
//! Owns: names, help texts and value parsing of the interface.
//! Never: does any work beyond parsing.

use clap::{Parser, Subcommand, ValueEnum};

mod common;
mod inspect;
mod lifecycle;
mod upkeep;

pub use common::*;
pub use inspect::*;
pub use lifecycle::*;
pub use upkeep::*;

const AFTER_HELP: &str = "\
Run `git delegate help <COMMAND>` for a command's details, `git help delegate` for the manual.";

const AFTER_LONG_HELP: &str = "\
Workflow:
  git delegate prepare -n 4            # snapshot the working tree, one worktree per task
  (each worker edits its own task folder, printed by prepare)
  git delegate status                  # leases, tasks, how many paths each task changed
  git delegate apply                   # merge every task back into the working tree
  git delegate undo                    # changed your mind: take that apply back out
  git delegate drop BATCH --force      # or give the batch up

Exit status (every command):
  0  success
  1  the command ran but reports a problem (a conflict, a stale batch, a refused commit)
  2  bad usage or bad input; nothing changed
  3  the repository is in a state the command cannot work in; nothing changed

Run `git delegate help <COMMAND>` for a command's details and examples,
`git help delegate` (or `man git-delegate`) for the whole manual.";

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
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// When to use colour: auto, always or never
    ///
    /// `auto` (the default) colours output meant for a terminal. `NO_COLOR` (set and not empty)
    /// turns colour off unless --color says otherwise, and so does git's `color.ui = false`.
    /// Precedence: --color, then NO_COLOR, then color.ui, then whether the output is a terminal.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

/// The command line as parsed: `--color`, a global option every subcommand
/// takes, is shown once, in the top-level help, not as the same block in
/// every subcommand's help (each subcommand gets a hidden copy, which clap's
/// propagation of global options then leaves alone).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    fn hidden(cmd: clap::Command, color: &clap::Arg) -> clap::Command {
        cmd.mut_subcommands(|sub| hidden(sub.arg(color.clone()), color))
    }
    let cmd = Cli::command();
    let color = cmd
        .get_arguments()
        .find(|a| a.get_id() == "color")
        .map(|a| a.clone().hide(true));
    match color {
        Some(color) => hidden(cmd, &color),
        None => cmd,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise
    Auto,
    /// Always colour
    Always,
    /// Never colour
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// A linked git worktree detached at the baseline (`git worktree list` shows it)
    Worktree,
    /// A copy-on-write (reflink) copy of the whole source, .git included
    Scratch,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Snapshot the working tree into a batch with one workspace per task
    #[command(
        long_about = "Snapshot the working tree exactly as it is (staged, unstaged and untracked files; ignored files \
left out) into a private baseline commit under refs/pi-delegate/, and create one workspace per task: a linked \
worktree detached at the baseline, locked while the batch lives. Your index, HEAD and branches are not touched.

Tasks are the TASK names given, or 1..N with -n N; with neither, one task named 1. Each task's working folder \
mirrors where you ran prepare: run it from src/ and every task's cwd is <workspace>/src. The batch holds a lease \
(--ttl, --owner-pid); `git delegate status` shows it and `git delegate gc` reclaims stale batches.

Submodules are read-only: each workspace gets every initialized submodule (nested ones too) at the commit the \
baseline records, as a linked worktree of the submodule's own repository (no fetch, no network). A dirty \
submodule (its HEAD is not the commit the superproject records, or its tracked files are modified; untracked \
files inside it do not count) is refused with exit 3, naming it.

In a sparse checkout (cone or not), files outside it are kept at their index content, and every workspace gets the \
same sparse-checkout patterns (`git sparse-checkout list` prints the same there) and holds only what you have; \
--sparse FOLDER narrows every workspace further, to one corner of a large repository.

On any failure, and on Ctrl-C (SIGINT, once or more), SIGTERM or SIGHUP, everything this prepare made is undone. \
A prepare killed outright (SIGKILL) leaves a batch marked incomplete: apply refuses it, and gc or drop removes it \
whole. With --json the batch document (schema git-delegate/v1) \
is printed on stdout: read tasks[].cwd to find where each worker runs.",
        after_long_help = "Examples:
  git delegate prepare                          # one task named 1
  git delegate prepare -n 4                     # four tasks named 1..4
  git delegate prepare lint docs tests --label refactor --ttl 2h
  git delegate prepare -n 4 --sparse services/billing  # workspaces hold one folder
  git delegate prepare -n 2 --owner-pid $$ --json
                                                # lease ends when this shell exits
  git config alias.fan 'delegate prepare -n 4'  # then: git fan"
    )]
    Prepare(PrepareArgs),
    /// Merge the tasks' work back into the working tree
    #[command(
        long_about = "Turn each task's workspace into a proposal commit, merge the proposals 3-way in task order onto \
the baseline, merge that with what changed in the working tree since prepare, and write the result through a \
crash-safe journal. Conflicting tasks keep their proposal ref, patch and workspace.

Only the files on disk in a workspace count: commits a worker made there do not matter, and neither do the \
assume-unchanged and skip-worktree flags of its index (a skip-worktree file absent from disk keeps its content). A \
git repository a worker made inside its workspace (git init, git clone, cargo new) is never dropped: the task ends \
conflict with reason nested_repository, none of its paths is applied, and its workspace is kept (remove or move \
the repository, then apply again). A task whose work holds a path git refuses to check out (.git in any letter \
case or an alias of it such as git~1 or .git., a . or .. component, a symlinked .gitmodules, .gitattributes, \
.gitignore or .mailmap), local or submitted by a remote worker, ends conflict with reason invalid_path, naming \
those paths: nothing of it is merged or written, its work is kept, and the other tasks land. A task that changed anything in a submodule (its files or its commit) ends \
conflict with reason submodule_changed, its workspace kept; apply never writes into the submodules of the working \
tree. A task that changes a path outside your sparse checkout is a conflict with \
reason outside_sparse_checkout, and nothing of it is written (`git sparse-checkout add FOLDER`, then apply again, \
lands it). Processes still running inside a workspace are stopped first and reported; one attached to a terminal (a shell, \
an editor) is never stopped by default: its task fails with reason processes_running (apply.stop-processes). Edits you made in the working tree since prepare \
never block a task unless they touch the same paths (or --strict is given). Your index, HEAD, branches and stash \
are never changed.

A workspace is used only while it is the folder prepare made (same device, inode and real path): one replaced by a \
symlink or by another folder is never read, its processes are never stopped, and it is never removed; its task \
fails with reason workspace_missing. A workspace that is the source of another open batch (a batch prepared inside \
it) is not removed when its task is done: it stays as an ordinary worktree, so that batch can still be applied. \
A done task's workspace is removed only once proven unchanged since apply read it (moved aside, so a write by its \
path fails, then compared): one its worker still wrote into is kept, and the task stays open with reason \
changed_after_read (exit 1) until the next apply lands the rest.

The result is written into the working tree prepare ran in, wherever apply is run from. If that working tree was \
moved (or another repository now sits at its path), apply refuses (delegate::source_moved, exit 3) and changes \
nothing: move it back and apply there, or give the batch up with `git delegate drop BATCH --force`.

With --verify CMD (or apply.verify), CMD runs on the integrated result in a verification workspace before \
anything is written, and only a set of tasks that passes it lands: when it fails, the tasks whose addition makes it \
fail are found by binary search and rejected (VERIFIED INTEGRATION in `man git-delegate-apply`).

Task statuses: applied, no_changes, discarded, conflict, failed, rejected, unverified. Exit status 1 when any task \
ended conflict, failed, rejected or unverified; its work is kept, and the batch stays open for it.",
        after_long_help = "Examples:
  git delegate apply                            # the only open batch, every task
  git delegate apply --dry-run --json           # what would happen, as JSON
  git delegate apply refactor --only 2 --keep   # batch labelled refactor, task 2, keep its worktree
  git delegate apply --discard 3                # apply the others, throw task 3 away
  git delegate apply --verify 'cargo test'      # land only what passes the tests"
    )]
    Apply(ApplyArgs),
    /// Take an apply's result back out of the working tree
    #[command(
        long_about = "Take back what an apply wrote: every apply that wrote paths leaves an undo entry (its \
`apply_id`), and `undo` brings each path it wrote back to what it was before that apply. Without APPLY, the \
latest apply of the repository that is not undone yet. It writes into the working tree that apply \
wrote into (a linked worktree of the repository included), wherever it is run from.

It merges, it does not overwrite: for each path, merge3(base = what the apply wrote, ours = the path now, theirs \
= what it was before), so edits you made after the apply, in other lines or other files, survive. If any path \
conflicts (you rewrote what the apply wrote), undo writes nothing, lists the paths and exits 1. With nothing to \
undo it exits 2. It writes through the same crash-safe journal as apply (kept in <git-dir>/delegate/undo/<id>/, \
rolled back by the next command after a crash). The index, HEAD and branches are never touched.

Undo refuses (exit 3, delegate::head_moved) when HEAD is no longer the commit it was at when the apply wrote: \
the applied changes may be committed now, and undoing them would take committed lines back out as uncommitted \
changes. --force undoes anyway. An entry recorded before HEAD was kept is undone without that check.

The undone proposals stay under refs/pi-delegate/undo/<id>/tasks/<task>, and `git delegate apply --from-undo \
APPLY` applies them again as a new apply. The entry's commit refs/pi-delegate/undo/<id>/entry holds the paths \
the apply wrote as it wrote them, and its parent the same paths as they were before: `git diff \
refs/pi-delegate/undo/<id>/entry^ refs/pi-delegate/undo/<id>/entry` shows what the apply did. gc removes an \
entry once it is beyond the newest undo.keep (default 20) and older than gc.keep-failed (default 14 days).",
        after_long_help = "Examples:
  git delegate undo                   # the latest apply not undone yet
  git delegate undo --dry-run         # what it would write, or which paths block it
  git delegate undo --list --json     # {\"entries\": [{\"apply_id\", \"batch\", \"applied_at\", \"paths\", \"undone\"}]}
  git delegate undo 3f2a              # one apply, by id prefix
  git delegate undo --force           # even though HEAD moved since the apply
  git delegate apply --from-undo 3f2a # land the undone work again"
    )]
    Undo(UndoArgs),
    /// Show batches, leases and tasks
    #[command(
        long_about = "Show every batch of the repository (or one): id, label, age, baseline, lease state and expiry, \
owner, and per task its state, workspace and how many paths differ from the baseline. Changes nothing and holds \
no lock.

A batch is stale when its lease expired or its owner process is gone; `--check` prints only such problems (and \
interrupted write-backs, batches whose prepare was killed, batches whose state file cannot be read, and removed \
workspaces waiting in the trash that no background deleter works on, with the reason, which `git delegate gc` \
deletes; a workspace a killed command left aside in the trash and a registration of git-delegate whose folder is \
gone, which `git delegate gc` puts back or removes; commands in delegate.toml you have not confirmed, which \
`git delegate config --trust` confirms) and exits 1 when there are any, for hooks and scripts. Proposals kept after their task ended (rescued by gc, of discarded \
tasks, or of batches that are gone) are listed until gc.keep-failed passes, with their age and expiry; \
`git delegate apply --kept REF` lands one.",
        after_long_help = "Examples:
  git delegate status
  git delegate status refactor       # one batch, by label or id prefix
  git delegate status --check        # exit 1 on stale batches
  git delegate status --json         # {\"batches\": [...], \"problems\": [...]}"
    )]
    Status(StatusArgs),
    /// Show each task's changes against its baseline, as `git diff` prints them
    #[command(
        long_about = "Show each selected task's changes (default: every open task of the batch) against the \
baseline it was prepared from, as `git diff --no-renames <baseline> <workspace>` prints them (abbreviated `index` \
lines as core.abbrev says, a binary file as a `Binary files ... differ` line; --binary and --full-index as in git), the \
workspace taken as it is now (staged, unstaged and untracked files, as `git add -A` would take them). With several \
tasks, each task's output follows a `# task NAME` line. It records nothing and changes nothing: the workspace's tree is \
computed in memory (no objects, refs or index written), reading the workspace with its stat cache. \
--stat prints what `git diff --stat` prints into a pipe (80 columns; long names are not shortened), --name-status what `git diff --name-status` prints. \
Paths after `--` keep only those paths and what is under them (relative to the current folder, as with git).

--source shows instead what `git delegate apply` would change in the working tree now, for the selected tasks \
together: apply's own integration (the proposals merged in task order, then with the working tree as it is), \
against the working tree, as `git diff` prints a change of it (`git apply` takes it). A task apply would leave out \
(a conflict with another task or with your edits, processes it would not stop, a missing workspace) is left out \
here too, and a `note:` line on stderr says which and why. Nothing is locked or recorded.

On a terminal the patch is coloured as `git diff` colours it (--color, NO_COLOR, color.diff, then color.ui decide) \
and shown through the pager git would choose (GIT_PAGER, core.pager, PAGER, then `less`, with LESS=FRX and \
LV=-c unless set; `pager.diff = false` or --no-pager turn it off). Piped, or with --json, neither.",
        after_long_help = "Examples:
  git delegate diff                   # every open task of the only batch
  git delegate diff 2 --name-status   # task 2: one `STATUS<TAB>PATH` line per path
  git delegate diff --batch refactor -- src/
  git delegate diff --source          # what apply would change in the working tree now
  git delegate diff --json            # {\"batch\", \"tasks\": [{\"name\", \"paths\": [{\"path\", \"status\"}]}]}"
    )]
    Diff(DiffArgs),
    /// Print a task's working folder
    #[command(
        long_about = "Print the folder a task's worker works in (its `cwd`: the workspace root plus the folder \
prepare was run from), one line, raw, for `cd \"$(git delegate path 2)\"` and scripts. Without TASK, inside a \
workspace, the task of that workspace. Exit 2 for an unknown task.",
        after_long_help = "Examples:
  cd \"$(git delegate path 2)\"
  git delegate path --batch refactor lint
  git delegate path                   # inside a workspace: its own folder"
    )]
    Path(PathArgs),
    /// Publish a task's work as a branch on HEAD, without touching the working tree
    #[command(
        long_about = "Make branch NAME (default delegate/<label or short id>/<task>) at a new commit whose parent is REV \
(default: the source's HEAD, wherever it runs, a task's own folder included) and whose tree is REV's tree with the \
task's changes merged in 3-way: the task's work as a cherry-pick onto REV, made in memory. The user's uncommitted \
edits and untracked files, which the batch's baseline holds, stay out, so the branch can be pushed for a pull \
request; a REV that is the baseline or built on it is refused (exit 2). Without --batch, in a task's folder: its \
batch. A local task's workspace is recorded as a proposal first. \
Nothing else changes: the working tree, the index, HEAD and the task (it stays open; `apply` lands it). \
A conflict with REV makes nothing and names the paths (exit 1); an existing branch is moved only with --force \
(exit 2 without); the branch checked out in any worktree never (exit 3). Author and committer come from git's \
configuration.",
        after_long_help = "Examples:
  git delegate branch 2                          # delegate/<label>/2 on HEAD
  git delegate branch lint agent/lint --onto main
  git delegate branch lint agent/lint && git push -u origin agent/lint && gh pr create --head agent/lint
  git delegate branch 2 --json   # {\"batch\", \"task\", \"branch\", \"commit\", \"parent\", \"paths\"}"
    )]
    Branch(BranchArgs),
    /// Reclaim what stale batches hold, rescuing unapplied work first
    #[command(
        long_about = "Reclaim what stale batches hold (lease expired, or owner process gone), never losing work: \
changes in a stale task's workspace that have no proposal yet are first saved as a proposal ref and patch \
(rescued). StagedState workspaces, worktree registrations and state of stale batches are removed, each workspace only \
once proven to hold what was rescued (moved aside, then compared: one a worker still writes into is kept, and its \
batch with it); rescued and failed proposal refs are kept for gc.keep-failed (default 14 days). A workspace that holds a git repository its worker \
made is never removed: the rest of its work is rescued, and it stays as an ordinary worktree (kept_workspaces).

Leftovers of this repository are reclaimed too: registrations of git-delegate workspaces whose folder is gone, \
empty folders under the repository's workspace root that no batch owns, and old refs under refs/pi-delegate/ that \
no batch owns. Any other folder there (a task folder renamed, a batch folder moved aside, one no batch records) is \
left and reported (left_alone), never deleted, and a stale batch whose workspace was moved so is left whole. A batch whose prepare was killed before it completed is removed whole, at any age, with nothing \
rescued (no worker was given it), once the setup commands it started that still run are stopped (each named, \
as PID and command). `--dry-run` says what gc would then remove, count for count. Live batches are never touched, nor the user's own worktrees. A batch whose \
state file cannot be read is reported (exit 1) and left alone: `git delegate drop ID --force` removes it.",
        after_long_help = "Examples:
  git delegate gc --dry-run          # what would be reclaimed
  git delegate gc --json"
    )]
    Gc(GcArgs),
    /// End a batch: remove its workspaces, refs and state
    #[command(
        long_about = "End a batch on purpose: remove its workspaces, worktree registrations, private refs and state. \
Refuses (exit 1) while a task has changes that were never applied (or may have: its workspace moved elsewhere in \
the workspace root, or its batch folder gone), or while a task's workspace is the source of another open batch (one \
prepared inside it), unless --force; the message names them. Without --force a workspace is removed only once proven \
unchanged since drop read it: one a worker still writes into is kept, and the batch with it (exit 1). A folder that is no longer the \
workspace prepare made (a symlink, or another folder, now at its path) is left alone even with --force, and so is a \
workspace that is the source of another open batch: it stays as an ordinary worktree. A batch whose prepare was \
killed before it completed holds no work and is removed with or without --force.",
        after_long_help = "Examples:
  git delegate drop 1a2b             # by id prefix (at least 4 characters)
  git delegate drop refactor --force # by label, throwing unapplied work away"
    )]
    Drop(DropArgs),
    /// Extend a batch's lease
    #[command(
        long_about = "Extend a live or expired lease to now + TTL (default: lease.ttl, else 24h). An orphaned lease \
(its owner process is gone) is renewed only with a new --owner-pid. Prints the batch.",
        after_long_help = "Examples:
  git delegate renew                 # the only open batch, default TTL
  git delegate renew refactor --ttl 7d
  git delegate renew --owner-pid $$  # adopt an orphaned batch from this shell"
    )]
    Renew(RenewArgs),
    /// Show delegate.toml against the file you confirmed, or confirm it
    #[command(
        long_about = "Show <git-common-dir>/delegate.toml against the file you confirmed, key by key, or with --trust \
confirm it as it is now. A task's workspace is a linked worktree sharing that file, so a worker can write it; \
git-delegate therefore runs a command it names (apply.verify, workspace.setup) only as the file you confirmed \
has it. The file as it is when no batch is open is yours (recorded the first time a command looks at it: \
prepare, or this command); a change made while any batch is open is not, even after that batch ends, until you \
confirm it. Until then apply leaves a changed apply.verify out (the one you confirmed runs in its place; exit 1, \
the tasks landed) and prepare refuses a changed workspace.setup (delegate::untrusted_config, exit 3, nothing made); \
--verify CMD on apply's command line is yours and runs. Exit 1 when the file is not the one you confirmed. \
--trust is refused in a task's workspace: run it in your own working tree (the command apply and prepare print \
names it with -C).",
        after_long_help = "Examples:
  git delegate config                 # what changed since you confirmed the file
  git delegate config --trust         # you wrote it: its commands run from now on
  git delegate config --json          # {\"path\", \"confirmed\", \"changes\": [{\"key\", \"confirmed\", \"now\", \"command\"}], ...}"
    )]
    Config(ConfigArgs),
    /// Bring task workspaces up to date with the source; conflicts go to the worker
    #[command(
        long_about = "Bring task workspaces up to date with the source as it is now (results of tasks applied \
meanwhile and your own edits included), so a task that conflicts is resolved by its worker, in its own workspace. \
For each task: its workspace is first recorded as a proposal (ref and patch), so nothing its worker did can be lost; \
the source's snapshot becomes the task's own base (ref refs/pi-delegate/batches/<uuid>/tasks/<task>/base); the \
workspace receives merge3(old base, workspace, new base), written through the same journal, symlink-safe and \
temp-then-rename, as apply's write-back; its HEAD (detached) and index move to the new base, so `git diff` inside it \
shows exactly the worker's own changes. A conflicting file gets markers as merge.conflictStyle = diff3 writes them, \
labelled task, base and source, and stays unmerged in the workspace's index (stages 1, 2, 3): `git status` there says \
`both modified`. The task is then `conflicted` (status lists its files) until the worker resolves them as after \
`git merge`: edit, then `git add`. Apply refuses a task with unmerged entries, or with a marker line `<<<<<<< task` or \
`>>>>>>> source` left in a listed file (conflict, reason unresolved_conflicts), and merges a refreshed task from its \
own base. Processes running in a workspace are not stopped. A task whose earlier conflicts are unresolved is left as \
it is (reported `unresolved`). Without TASK: inside a task's workspace, that task; elsewhere every open task. \
Without --batch: the batch of the workspace you are in, else the only open batch. If a file in the workspace changed \
while it was read, or an untracked or ignored file stands where the source's version goes, that task is refused \
(delegate::refresh_blocked) with nothing changed in its workspace.",
        after_long_help = "Examples:
  git delegate refresh               # inside a workspace: catch that task up; in the source: every open task
  git delegate refresh 2 --batch refactor
  git delegate apply --refresh-conflicts   # apply, then hand each conflicting task back to its worker
  git delegate refresh --json        # {\"batch\", \"tasks\": [{\"name\", \"base\", \"conflicted_paths\", \"state\"}]}"
    )]
    Refresh(RefreshArgs),
    /// Prepare, run a command in every workspace at once, then apply what succeeded
    #[command(
        long_about = "Prepare a batch (the options of `git delegate prepare`), start COMMAND once per task in the \
task's cwd (in its own process group, stdin from /dev/null, at most --jobs at once), wait for every worker, then \
apply the tasks whose worker exited 0 (with --verify as `apply --verify`). Everything after -- is COMMAND, \
passed to the workers as it is: run's own options go before the --. In COMMAND's arguments {task}, {index} \
(0-based: the first task's is 0) and {workspace} (the task's root) are replaced, and {{ and }} stand for literal \
braces; any other brace is left as it is. Arguments are passed as they are, never through a shell (write \
`sh -c '...'` for one). Workers get GIT_DELEGATE_BATCH, GIT_DELEGATE_TASK, GIT_DELEGATE_TASK_INDEX (the same \
0-based index), GIT_DELEGATE_WORKSPACE (the task's root), \
GIT_DELEGATE_SOURCE and GIT_DELEGATE_PORT (run.port-base + index x run.ports-per-task: the first of the task's \
run.ports-per-task ports, default 41000 and 10), and never the GIT_DIR-like variables that locate this repository.

Each worker's stdout and stderr go to <git-common-dir>/delegate/logs/<batch>/<task>.log, kept after the batch \
ends until gc.keep-failed; on a terminal (not with --json) they are also shown live, each line prefixed with the \
task name, with a status line when a worker starts and ends. A worker that outlives --timeout (or its task's \
timeout) is sent SIGTERM, its whole process group SIGKILL after a grace, and counts as failed (timed_out). When a \
worker ends, whatever it left running in its process group is killed. A task whose worker failed is not applied: \
its status is worker_failed and its work stays in the open batch; a later `git delegate apply` leaves it out too, \
until it is named (`git delegate apply BATCH --only TASK`), or it is given up (`--discard TASK`, or `drop`). If \
another command applies or drops the batch while the workers run, run says so after the workers' lines, applies \
nothing and exits 1.

Ctrl-C (SIGINT) or SIGTERM stops every worker the same way, applies nothing and prints how to apply or drop the \
batch. While workers run, run holds no repository lock (a worker may call `git delegate refresh` or `renew`); the \
batch's lease is owned by run, and becomes a plain TTL lease (or one owned by --owner-pid) if run ends with the \
batch still open.

--tasks FILE gives the tasks in a TOML file instead of TASK or -n: [[task]] tables with `name`, and optionally \
`command` (an array of strings, instead of the command after --), `env` (a table of strings added to that \
worker's environment) and `timeout` (a duration such as \"10m\"); tasks run in file order. An unknown key, a \
wrong type, a bad name or duration is an error that names the line and column, and nothing is prepared.",
        after_long_help = "Examples:
  git delegate run -n 4 -- my-agent --task {task}         # four workers, then apply
  git delegate run lint docs -- sh -c 'make $GIT_DELEGATE_TASK'
  git delegate run -n 8 --jobs 2 --timeout 30m --verify 'cargo test' -- agent
  git delegate run --tasks tasks.toml --no-apply --json -- agent
  git config alias.fan 'delegate run -n 4'   # then: git fan --timeout 30m -- my-agent {task}

Exit status: 0 when every worker exited 0 and every task applied or had no changes (with --no-apply: when \
every worker exited 0); 1 otherwise (a worker failed or timed out, a task did not apply, or run was interrupted); \
2 and 3 as for every command, with nothing prepared."
    )]
    Run(RunArgs),
    /// Run one command in a task's workspace, contained like a run worker
    #[command(
        long_about = "Run COMMAND once in task TASK's cwd (of --batch BATCH, else of the only open batch), as \
`git delegate run` runs a worker: with the same environment (GIT_DELEGATE_BATCH, GIT_DELEGATE_TASK, \
GIT_DELEGATE_TASK_INDEX, GIT_DELEGATE_WORKSPACE, GIT_DELEGATE_SOURCE, GIT_DELEGATE_PORT; never the GIT_DIR-like \
variables that locate this repository) and the same containment, but with your stdin, stdout and stderr and in \
your terminal's process group, so an interactive agent works as if started directly. It exits with COMMAND's \
exit status (killed by a signal: 128 + its number; not found: 127; not executable: 126).

Containment (Linux Landlock, where the kernel has it; run.sandbox = \"auto\" by default): the command and \
everything it starts can write only the task's workspace, its worktree's own git folder \
(<git-common-dir>/worktrees/<id>: HEAD, index, logs, per-worktree refs), its own object folder there (its git \
commits work: GIT_OBJECT_DIRECTORY points there, with the repository's objects as an alternate, and apply takes \
the objects in), a private TMPDIR (removed when it ends), the folders run.writable lists, /dev/null, the \
terminal devices and /dev/shm. It reads everything it could read before. It cannot write, rename or delete \
anything else: the source working tree, other tasks' workspaces, the repository's config, hooks, refs and \
objects, git-delegate's state. So `git branch NAME` fails there (use a per-worktree ref, `git update-ref \
refs/worktree/NAME HEAD`, or publish the task from the source with `git delegate branch`), and so do git-delegate \
commands that change the batch (refresh, renew, apply: run them from the source). run.sandbox = \"on\" refuses to \
start without Landlock (delegate::sandbox_unavailable, exit 3); --no-sandbox (or run.sandbox = \"off\") runs it \
unconfined. --no-network (or run.network = false) also denies it new TCP connections and listening sockets \
(Landlock ABI 4, Linux 6.7, or later; UDP and unix sockets are not covered).

Refusals, before COMMAND runs: an unknown batch or task, or a task that is not open (exit 2); a remote task \
(exit 2); a workspace that is missing or no longer the folder prepare made (delegate::workspace_missing, exit 3).",
        after_long_help = "Examples:
  git delegate prepare -n 2 && git delegate exec 1 -- claude     # an agent, by hand, in task 1
  git delegate exec 2 --no-network -- sh -c 'make test'
  git delegate exec --batch refactor lint -- npm run lint

Exit status: COMMAND's (128 + N when signal N ended it, 127 not found, 126 not executable); 2 and 3 as for \
every command when it refuses before COMMAND runs."
    )]
    Exec(ExecArgs),
    /// On a worker's machine: a workspace of a remote task, from the batch's remote
    #[command(
        long_about = "Make DIR (default ./<repo-name>-<batch-short>-<task>, <repo-name> from the URL's last path \
component without .git) a working tree holding exactly the baseline of task TASK of batch BATCH, as \
`git delegate prepare --remote` printed it for that task. Inside a clone of the same project (a remote with the \
same URL, compared without a trailing / or .git), or with --repo DIR, only the baseline ref is fetched into it and \
the workspace is a linked worktree detached at the baseline, registered and locked as prepare makes them; \
elsewhere the URL is cloned (a partial clone, --filter=blob:none, where the server allows it; git falls back to a \
full one) and the baseline checked out detached. The workspace remembers its remote, batch and task in its own git \
dir (never in your configuration); joining the same task into the same place again is refused \
(delegate::already_joined). Transport is the git command, with your own configuration and credentials; it never \
prompts (GIT_TERMINAL_PROMPT=0), and a failure names the remote and the failing git command \
(delegate::remote_failed, exit 3). When done, run `git delegate submit` inside the workspace.",
        after_long_help = "Examples:
  git delegate join https://git.example.com/project.git 01936f6e-0000-7000-8000-000000000000 2
  git delegate join ssh://host/srv/project.git BATCH lint --repo ~/src/project
  git delegate join URL BATCH 2 --json   # {\"batch\", \"task\", \"root\", \"remote\", \"proposal\": null}"
    )]
    Join(JoinArgs),
    /// Inside a joined workspace: send its work back to the batch's remote
    #[command(
        long_about = "Record the joined workspace around the current folder as a proposal commit (its parent is \
the baseline: only the files count, as for apply, never the commits a worker made) and push it to \
refs/pi-delegate/batches/<batch>/tasks/<task>/proposal on the remote it was joined from, replacing what an \
earlier submit of the task pushed. The batch's `git delegate apply` fetches it and lands it like a local task's \
work. Outside a joined workspace it refuses (delegate::not_joined); to a batch that has ended (its baseline is \
gone from the remote, or this repository's record of the batch says so) it refuses and pushes nothing \
(delegate::batch_ended, exit 3).",
        after_long_help = "Examples:
  git delegate submit
  git delegate submit --json   # {\"batch\", \"task\", \"root\", \"remote\", \"proposal\": COMMIT}"
    )]
    Submit(SubmitArgs),
    /// Run a hook's work (git's pre-commit, Claude Code's worktree hooks)
    #[command(
        long_about = "Run the check behind a git hook. The pre-commit hook installed by `git delegate hooks install` \
calls `git delegate hook pre-commit`, which refuses commits inside workspaces of batches prepared with \
--forbid-commit (or hooks.forbid-commit = true), and warns about (hooks.stale-leases = \"warn\"), refuses \
(\"block\") or ignores (\"ignore\") stale batches. Otherwise it exits 0 silently. \
`hook worktree-create` and `hook worktree-remove` are Claude Code's WorktreeCreate and WorktreeRemove hooks \
(installed by `git delegate hooks install --claude`): each subagent gets a one-task batch holding the \
uncommitted work, applied back when Claude Code removes the worktree.",
        after_long_help = "Examples:
  git delegate hook pre-commit       # what .git/hooks/pre-commit runs
  git delegate hook worktree-create < payload.json   # what Claude Code runs: prints the folder"
    )]
    Hook(HookArgs),
    /// Install git-delegate's git hooks into this repository
    #[command(
        long_about = "Install git-delegate's pre-commit hook into the repository's hooks folder (core.hooksPath is \
honoured). An existing pre-commit hook is moved beside it as pre-commit.local and still runs first; installing \
twice changes nothing. The hook does nothing where git-delegate is not installed. With --claude, install \
Claude Code's WorktreeCreate and WorktreeRemove hooks into .claude/settings.local.json instead (every other \
setting kept); --claude --uninstall removes them.",
        after_long_help = "Examples:
  git delegate hooks install
  git delegate hooks install --json
  git delegate hooks install --claude             # subagents work on the dirty tree, their work lands back
  git delegate hooks install --claude --uninstall"
    )]
    Hooks(HooksArgs),
    /// Print the manual page, or install all pages
    #[command(
        long_about = "Print the main manual page (roff) on stdout, or with --install write every page \
(git-delegate.1 and git-delegate-<command>.1) into DIR. The default DIR is <directory of the executable>/../share/man/man1, \
which man finds through PATH: for `cargo install` that is ~/.cargo/share/man/man1. StagedState `git help delegate` and \
`man git-delegate-prepare` work.",
        after_long_help = "Examples:
  git delegate man --install                     # next to the executable
  git delegate man --install ~/.local/share/man/man1
  git delegate man | man -l -                    # read it without installing"
    )]
    Man(ManArgs),
    /// Print a shell completion script
    #[command(
        long_about = "Print the completion script for SHELL on stdout. The bash script completes both \
`git-delegate` and, through git's own bash completion, `git delegate` (it defines _git_delegate). The bash, \
zsh and fish scripts also complete open batches (labels and ids) and task names, asking the installed git-delegate; \
values that are not files (--ttl, --label) offer no file names.",
        after_long_help = "Examples:
  git delegate completions bash > ~/.local/share/bash-completion/completions/git-delegate
  git delegate completions zsh > ~/.zfunc/_git-delegate      # with fpath+=(~/.zfunc)
  git delegate completions fish > ~/.config/fish/completions/git-delegate.fish"
    )]
    Completions(CompletionsArgs),
    /// Plumbing: print the tree id of the working tree's snapshot (for tests and benchmarks)
    #[command(hide = true)]
    Snapshot,
    /// Internal: completion candidates for the word being completed (called by the completion scripts)
    #[command(hide = true, name = "__complete")]
    Complete {
        /// The words after the program name; the last is the one being completed
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        words: Vec<String>,
    },
    /// Internal: delete the removed workspaces waiting in a `.trash` folder (started in the background by apply)
    #[command(hide = true, name = "purge-trash")]
    PurgeTrash {
        /// The `.trash` folder
        dir: std::path::PathBuf,
        /// The repository's state folder (its lock guards the folder above the trash)
        state_dir: Option<std::path::PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand and every option says what it is for, in one line
    /// (`-h`), and the commands people start from teach with examples.
    #[test]
    fn every_command_and_option_has_help() {
        let mut root = Cli::command();
        root.build();
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            if cmd.get_about().is_none() && !path.is_empty() {
                missing.push(format!("command `{path}` has no summary"));
            }
            for arg in cmd.get_arguments() {
                if arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("`{path} {}` has no help", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let p = format!("{path} {}", sub.get_name()).trim().to_string();
                walk(sub, &p, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&root, "", &mut missing);
        assert!(missing.is_empty(), "{}", missing.join("\n"));

        for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let examples = sub
                .get_after_long_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                examples.starts_with("Examples:\n"),
                "`{}` has no examples in its long help",
                sub.get_name()
            );
            let summary = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            assert!(
                !summary.contains('\n') && summary.len() <= 80,
                "the summary of `{}` is not one short line: {summary:?}",
                sub.get_name()
            );
        }
    }
}
