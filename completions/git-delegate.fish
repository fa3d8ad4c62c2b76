# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_git_delegate_global_optspecs
    string join \n color= h/help V/version
end

function __fish_git_delegate_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_git_delegate_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_git_delegate_using_subcommand
    set -l cmd (__fish_git_delegate_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c git-delegate -n "__fish_git_delegate_needs_command" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "prepare" -d 'Snapshot the working tree into a batch with one workspace per task'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "apply" -d 'Merge the tasks\' work back into the working tree'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "undo" -d 'Take an apply\'s result back out of the working tree'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "status" -d 'Show batches, leases and tasks'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "diff" -d 'Show each task\'s changes against its baseline, as `git diff` prints them'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "path" -d 'Print a task\'s working folder'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "branch" -d 'Publish a task\'s work as a branch on HEAD, without touching the working tree'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "gc" -d 'Reclaim what stale batches hold, rescuing unapplied work first'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "drop" -d 'End a batch: remove its workspaces, refs and state'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "renew" -d 'Extend a batch\'s lease'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "config" -d 'Show delegate.toml against the file you confirmed, or confirm it'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "refresh" -d 'Bring task workspaces up to date with the source; conflicts go to the worker'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "run" -d 'Prepare, run a command in every workspace at once, then apply what succeeded'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "exec" -d 'Run one command in a task\'s workspace, contained like a run worker'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "join" -d 'On a worker\'s machine: a workspace of a remote task, from the batch\'s remote'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "submit" -d 'Inside a joined workspace: send its work back to the batch\'s remote'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "hook" -d 'Run a hook\'s work (git\'s pre-commit, Claude Code\'s worktree hooks)'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "hooks" -d 'Install git-delegate\'s git hooks into this repository'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "man" -d 'Print the manual page, or install all pages'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c git-delegate -n "__fish_git_delegate_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l mode -d 'Workspace kind (default: workspace.mode, else worktree)' -r -f -a "worktree\t'A linked git worktree detached at the baseline (`git worktree list` shows it)'
scratch\t'A copy-on-write (reflink) copy of the whole source, .git included'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l copy-ignored -d 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l sparse -d 'Check out only this folder in each workspace, within the source\'s own sparse checkout (repeatable; cone patterns)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -s n -l count -d 'Create N tasks named 1..N' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l label -d 'A name for the batch, usable wherever BATCH is asked for' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l ttl -d 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l owner-pid -d 'The lease is orphaned once this process is gone' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l remote -d 'Make the tasks remote: push the baseline to REMOTE (a remote\'s name or a URL)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l local -d 'With --remote: keep this task local, with a workspace here (repeatable)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l forbid-commit -d 'Make the pre-commit hook refuse commits inside this batch\'s workspaces'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand prepare" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l only -d 'Apply only these tasks; the rest stay open (repeatable)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l discard -d 'Drop these tasks\' work (repeatable)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l verify -d 'Run CMD on the integrated result first; land only tasks that pass it' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l verify-timeout -d 'Kill a verification run (its whole process group) after DURATION; it counts as failed' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l verify-jobs -d 'Verify up to J candidate sets at once, each in its own workspace' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l kept -d 'Land a kept proposal (one `git delegate status` lists under kept) instead of a batch' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l from-undo -d 'Apply again the proposals of an undone apply (its id or a unique prefix)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l dry-run -d 'Report what would happen; change nothing'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -s v -l verbose -d 'List every path each task wrote (or would write), not only the first 20'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l strict -d 'Refuse a task when the source changed since prepare in a path it touches'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l keep -d 'Keep the workspaces of applied tasks (as ordinary unlocked worktrees)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l no-verify -d 'Do not run apply.verify'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l refresh-conflicts -d 'Then refresh every task that ended `conflict`, handing its conflicts to its worker'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand apply" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -l list -d 'List the undo entries (id, batch, time, paths written, undone or not); change nothing'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -l dry-run -d 'Report what undo would write or which paths block it; change nothing'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -l force -d 'Undo even though HEAD moved since the apply (its changes may be committed now)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand undo" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -l check -d 'Print only problems; exit 1 on any (a stale batch, a left-over journal, a workspace left aside or a registration left by a killed command, an unconfirmed delegate.toml, ...), each with the command that clears it'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -l fetch -d 'Ask the remote of batches with remote tasks which of them have submitted'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand status" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l batch -d 'The batch: label, id or unique id prefix (default: the only open batch)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l stat -d 'Per task, the changed paths with counts, as `git diff --stat` prints them'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l name-status -d 'Per task, one `STATUS<TAB>PATH` line per changed path, as `git diff --name-status`'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l source -d 'What apply would change in the working tree now, all selected tasks together'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l binary -d 'Show binary files as patches `git apply` takes (`GIT binary patch`), as `git diff --binary`'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l full-index -d 'Show full object ids in the `index` lines, as `git diff --full-index`'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l no-pager -d 'Never page the output (default on a terminal: the pager git would choose)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand diff" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand path" -l batch -d 'The batch: label, id or unique id prefix (default: the only open batch)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand path" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand path" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand path" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand path" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -l batch -d 'The batch: label, id or unique id prefix (default: the only open batch)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -l onto -d 'The commit the branch starts from (default: the source\'s HEAD)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -s m -l message -d 'The commit message (default: "<task>: work from git delegate batch <label or short id>")' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -l force -d 'Move the branch when it exists already (never the one checked out in a worktree)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand branch" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -l dry-run -d 'Report what would be reclaimed; change nothing'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -l pool -d 'Also remove every idle workspace of the pool (workspace.pool)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand gc" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -l force -d 'Drop even when tasks have changes that were never applied'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -l pool -d 'Remove every idle workspace of the pool (workspace.pool) instead of a batch'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand drop" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -l ttl -d 'New lease duration from now (default: lease.ttl, else 24h)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -l owner-pid -d 'A new owner process for the lease' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand renew" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand config" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand config" -l trust -d 'Confirm delegate.toml as it is now: the commands it names run from now on'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand config" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand config" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand refresh" -l batch -d 'The batch: label, id or unique id prefix (default: the batch of the workspace you are in, else the only open batch)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand refresh" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand refresh" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand refresh" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand refresh" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l mode -d 'Workspace kind (default: workspace.mode, else worktree)' -r -f -a "worktree\t'A linked git worktree detached at the baseline (`git worktree list` shows it)'
scratch\t'A copy-on-write (reflink) copy of the whole source, .git included'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l copy-ignored -d 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l sparse -d 'Check out only this folder in each workspace, within the source\'s own sparse checkout (repeatable; cone patterns)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l remote -d 'Make the tasks remote: push the baseline to REMOTE (a remote\'s name or a URL)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l local -d 'With --remote: keep this task local, with a workspace here (repeatable)' -r
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l tasks -d 'Read the tasks from a TOML file of [[task]] tables (name, command, env, timeout)' -r -F
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -s n -l count -d 'Create N tasks named 1..N' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l label -d 'A name for the batch, usable wherever BATCH is asked for' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l ttl -d 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l owner-pid -d 'The lease is orphaned once this process is gone' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -s j -l jobs -d 'Run at most J workers at once (default: all)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l timeout -d 'Stop a worker still running after DURATION (90s, 30m, 2h): SIGTERM, then SIGKILL' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l verify -d 'Verify the integrated result with CMD before writing (as `apply --verify`)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l verify-timeout -d 'Bound each verification run (as `apply --verify-timeout`)' -r -f
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l forbid-commit -d 'Make the pre-commit hook refuse commits inside this batch\'s workspaces'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l no-verify -d 'Do not run apply.verify'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l no-apply -d 'Stop after the workers: apply nothing, print the apply command'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l no-sandbox -d 'Start the workers unconfined (run.sandbox = "off" for this command)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -l no-network -d 'Deny the workers new TCP connections and listening sockets (run.network = false)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand run" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -l batch -d 'The batch: label, id or unique id prefix (default: the only open batch)' -r -f -a "(__fish_git_delegate_dynamic)"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -l no-sandbox -d 'Start the workers unconfined (run.sandbox = "off" for this command)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -l no-network -d 'Deny the workers new TCP connections and listening sockets (run.network = false)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand exec" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand join" -l repo -d 'Add the workspace to this clone of the project instead of looking for one around the current folder' -r -F
complete -c git-delegate -n "__fish_git_delegate_using_subcommand join" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand join" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand join" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand join" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand submit" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand submit" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand submit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand submit" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -f -a "pre-commit" -d 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -f -a "pre-push" -d 'Refuse a push that would publish the user\'s private files (a baseline\'s snapshot)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -f -a "worktree-create" -d 'Claude Code\'s WorktreeCreate hook: prepare a one-task batch, print its folder'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -f -a "worktree-remove" -d 'Claude Code\'s WorktreeRemove hook: apply the batch behind the worktree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and not __fish_seen_subcommand_from pre-commit pre-push worktree-create worktree-remove help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-commit" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-commit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-commit" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-push" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-push" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from pre-push" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-create" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-create" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-create" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-remove" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-remove" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from worktree-remove" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "pre-commit" -d 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "pre-push" -d 'Refuse a push that would publish the user\'s private files (a baseline\'s snapshot)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "worktree-create" -d 'Claude Code\'s WorktreeCreate hook: prepare a one-task batch, print its folder'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "worktree-remove" -d 'Claude Code\'s WorktreeRemove hook: apply the batch behind the worktree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and not __fish_seen_subcommand_from install help" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and not __fish_seen_subcommand_from install help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and not __fish_seen_subcommand_from install help" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and not __fish_seen_subcommand_from install help" -f -a "install" -d 'Install the pre-commit hook (an existing hook is kept and chained)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and not __fish_seen_subcommand_from install help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -l force -d 'Replace an existing pre-commit.local when a foreign hook is also present'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -l claude -d 'Install Claude Code\'s worktree hooks into .claude/settings.local.json instead'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -l uninstall -d 'With --claude: remove the two hooks again (nothing else)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -l json -d 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from help" -f -a "install" -d 'Install the pre-commit hook (an existing hook is kept and chained)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand hooks; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand man" -l install -d 'Install every page into DIR (default: <exe dir>/../share/man/man1)' -r -F
complete -c git-delegate -n "__fish_git_delegate_using_subcommand man" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand man" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand completions" -l color -d 'When to use colour: auto, always or never' -r -f -a "auto\t'Colour when the output is a terminal, unless NO_COLOR or color.ui say otherwise'
always\t'Always colour'
never\t'Never colour'"
complete -c git-delegate -n "__fish_git_delegate_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand completions" -s V -l version -d 'Print version'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "prepare" -d 'Snapshot the working tree into a batch with one workspace per task'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "apply" -d 'Merge the tasks\' work back into the working tree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "undo" -d 'Take an apply\'s result back out of the working tree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "status" -d 'Show batches, leases and tasks'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "diff" -d 'Show each task\'s changes against its baseline, as `git diff` prints them'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "path" -d 'Print a task\'s working folder'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "branch" -d 'Publish a task\'s work as a branch on HEAD, without touching the working tree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "gc" -d 'Reclaim what stale batches hold, rescuing unapplied work first'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "drop" -d 'End a batch: remove its workspaces, refs and state'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "renew" -d 'Extend a batch\'s lease'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "config" -d 'Show delegate.toml against the file you confirmed, or confirm it'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "refresh" -d 'Bring task workspaces up to date with the source; conflicts go to the worker'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "run" -d 'Prepare, run a command in every workspace at once, then apply what succeeded'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "exec" -d 'Run one command in a task\'s workspace, contained like a run worker'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "join" -d 'On a worker\'s machine: a workspace of a remote task, from the batch\'s remote'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "submit" -d 'Inside a joined workspace: send its work back to the batch\'s remote'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "hook" -d 'Run a hook\'s work (git\'s pre-commit, Claude Code\'s worktree hooks)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "hooks" -d 'Install git-delegate\'s git hooks into this repository'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "man" -d 'Print the manual page, or install all pages'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and not __fish_seen_subcommand_from prepare apply undo status diff path branch gc drop renew config refresh run exec join submit hook hooks man completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "pre-commit" -d 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "pre-push" -d 'Refuse a push that would publish the user\'s private files (a baseline\'s snapshot)'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "worktree-create" -d 'Claude Code\'s WorktreeCreate hook: prepare a one-task batch, print its folder'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "worktree-remove" -d 'Claude Code\'s WorktreeRemove hook: apply the batch behind the worktree'
complete -c git-delegate -n "__fish_git_delegate_using_subcommand help; and __fish_seen_subcommand_from hooks" -f -a "install" -d 'Install the pre-commit hook (an existing hook is kept and chained)'

# Open batches and task names, asked of git-delegate itself (it exits 1
# where the entries above apply).
function __fish_git_delegate_dynamic
	set -l words (commandline -opc)
	set -e words[1]
	set -l cur (commandline -ct)
	set -q cur[1]; or set cur ""
	git-delegate __complete -- $words $cur 2>/dev/null
end
complete -c git-delegate -n "__fish_git_delegate_dynamic >/dev/null" -f -a "(__fish_git_delegate_dynamic)"
