
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'git-delegate' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'git-delegate'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'git-delegate' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('prepare', 'prepare', [CompletionResultType]::ParameterValue, 'Snapshot the working tree into a batch with one workspace per task')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Merge the tasks'' work back into the working tree')
            [CompletionResult]::new('undo', 'undo', [CompletionResultType]::ParameterValue, 'Take an apply''s result back out of the working tree')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show batches, leases and tasks')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show each task''s changes against its baseline, as `git diff` prints them')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print a task''s working folder')
            [CompletionResult]::new('branch', 'branch', [CompletionResultType]::ParameterValue, 'Publish a task''s work as a branch on HEAD, without touching the working tree')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Reclaim what stale batches hold, rescuing unapplied work first')
            [CompletionResult]::new('drop', 'drop', [CompletionResultType]::ParameterValue, 'End a batch: remove its workspaces, refs and state')
            [CompletionResult]::new('renew', 'renew', [CompletionResultType]::ParameterValue, 'Extend a batch''s lease')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show delegate.toml against the file you confirmed, or confirm it')
            [CompletionResult]::new('refresh', 'refresh', [CompletionResultType]::ParameterValue, 'Bring task workspaces up to date with the source; conflicts go to the worker')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Prepare, run a command in every workspace at once, then apply what succeeded')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run one command in a task''s workspace, contained like a run worker')
            [CompletionResult]::new('join', 'join', [CompletionResultType]::ParameterValue, 'On a worker''s machine: a workspace of a remote task, from the batch''s remote')
            [CompletionResult]::new('submit', 'submit', [CompletionResultType]::ParameterValue, 'Inside a joined workspace: send its work back to the batch''s remote')
            [CompletionResult]::new('hook', 'hook', [CompletionResultType]::ParameterValue, 'Run a hook''s work (git''s pre-commit, Claude Code''s worktree hooks)')
            [CompletionResult]::new('hooks', 'hooks', [CompletionResultType]::ParameterValue, 'Install git-delegate''s git hooks into this repository')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the manual page, or install all pages')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;prepare' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Create N tasks named 1..N')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Create N tasks named 1..N')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Workspace kind (default: workspace.mode, else worktree)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'A name for the batch, usable wherever BATCH is asked for')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)')
            [CompletionResult]::new('--owner-pid', '--owner-pid', [CompletionResultType]::ParameterName, 'The lease is orphaned once this process is gone')
            [CompletionResult]::new('--copy-ignored', '--copy-ignored', [CompletionResultType]::ParameterName, 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)')
            [CompletionResult]::new('--sparse', '--sparse', [CompletionResultType]::ParameterName, 'Check out only this folder in each workspace, within the source''s own sparse checkout (repeatable; cone patterns)')
            [CompletionResult]::new('--remote', '--remote', [CompletionResultType]::ParameterName, 'Make the tasks remote: push the baseline to REMOTE (a remote''s name or a URL)')
            [CompletionResult]::new('--local', '--local', [CompletionResultType]::ParameterName, 'With --remote: keep this task local, with a workspace here (repeatable)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--forbid-commit', '--forbid-commit', [CompletionResultType]::ParameterName, 'Make the pre-commit hook refuse commits inside this batch''s workspaces')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;apply' {
            [CompletionResult]::new('--only', '--only', [CompletionResultType]::ParameterName, 'Apply only these tasks; the rest stay open (repeatable)')
            [CompletionResult]::new('--discard', '--discard', [CompletionResultType]::ParameterName, 'Drop these tasks'' work (repeatable)')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'Run CMD on the integrated result first; land only tasks that pass it')
            [CompletionResult]::new('--verify-timeout', '--verify-timeout', [CompletionResultType]::ParameterName, 'Kill a verification run (its whole process group) after DURATION; it counts as failed')
            [CompletionResult]::new('--verify-jobs', '--verify-jobs', [CompletionResultType]::ParameterName, 'Verify up to J candidate sets at once, each in its own workspace')
            [CompletionResult]::new('--kept', '--kept', [CompletionResultType]::ParameterName, 'Land a kept proposal (one `git delegate status` lists under kept) instead of a batch')
            [CompletionResult]::new('--from-undo', '--from-undo', [CompletionResultType]::ParameterName, 'Apply again the proposals of an undone apply (its id or a unique prefix)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what would happen; change nothing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'List every path each task wrote (or would write), not only the first 20')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'List every path each task wrote (or would write), not only the first 20')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Refuse a task when the source changed since prepare in a path it touches')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Keep the workspaces of applied tasks (as ordinary unlocked worktrees)')
            [CompletionResult]::new('--no-verify', '--no-verify', [CompletionResultType]::ParameterName, 'Do not run apply.verify')
            [CompletionResult]::new('--refresh-conflicts', '--refresh-conflicts', [CompletionResultType]::ParameterName, 'Then refresh every task that ended `conflict`, handing its conflicts to its worker')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;undo' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'List the undo entries (id, batch, time, paths written, undone or not); change nothing')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what undo would write or which paths block it; change nothing')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Undo even though HEAD moved since the apply (its changes may be committed now)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;status' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Print only problems; exit 1 on any (a stale batch, a left-over journal, a workspace left aside or a registration left by a killed command, an unconfirmed delegate.toml, ...), each with the command that clears it')
            [CompletionResult]::new('--fetch', '--fetch', [CompletionResultType]::ParameterName, 'Ask the remote of batches with remote tasks which of them have submitted')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;diff' {
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'The batch: label, id or unique id prefix (default: the only open batch)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--stat', '--stat', [CompletionResultType]::ParameterName, 'Per task, the changed paths with counts, as `git diff --stat` prints them')
            [CompletionResult]::new('--name-status', '--name-status', [CompletionResultType]::ParameterName, 'Per task, one `STATUS<TAB>PATH` line per changed path, as `git diff --name-status`')
            [CompletionResult]::new('--source', '--source', [CompletionResultType]::ParameterName, 'What apply would change in the working tree now, all selected tasks together')
            [CompletionResult]::new('--binary', '--binary', [CompletionResultType]::ParameterName, 'Show binary files as patches `git apply` takes (`GIT binary patch`), as `git diff --binary`')
            [CompletionResult]::new('--full-index', '--full-index', [CompletionResultType]::ParameterName, 'Show full object ids in the `index` lines, as `git diff --full-index`')
            [CompletionResult]::new('--no-pager', '--no-pager', [CompletionResultType]::ParameterName, 'Never page the output (default on a terminal: the pager git would choose)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;path' {
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'The batch: label, id or unique id prefix (default: the only open batch)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;branch' {
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'The batch: label, id or unique id prefix (default: the only open batch)')
            [CompletionResult]::new('--onto', '--onto', [CompletionResultType]::ParameterName, 'The commit the branch starts from (default: the source''s HEAD)')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'The commit message (default: "<task>: work from git delegate batch <label or short id>")')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'The commit message (default: "<task>: work from git delegate batch <label or short id>")')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Move the branch when it exists already (never the one checked out in a worktree)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;gc' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what would be reclaimed; change nothing')
            [CompletionResult]::new('--pool', '--pool', [CompletionResultType]::ParameterName, 'Also remove every idle workspace of the pool (workspace.pool)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;drop' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Drop even when tasks have changes that were never applied')
            [CompletionResult]::new('--pool', '--pool', [CompletionResultType]::ParameterName, 'Remove every idle workspace of the pool (workspace.pool) instead of a batch')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;renew' {
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'New lease duration from now (default: lease.ttl, else 24h)')
            [CompletionResult]::new('--owner-pid', '--owner-pid', [CompletionResultType]::ParameterName, 'A new owner process for the lease')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;config' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--trust', '--trust', [CompletionResultType]::ParameterName, 'Confirm delegate.toml as it is now: the commands it names run from now on')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;refresh' {
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'The batch: label, id or unique id prefix (default: the batch of the workspace you are in, else the only open batch)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;run' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Create N tasks named 1..N')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Create N tasks named 1..N')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Workspace kind (default: workspace.mode, else worktree)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'A name for the batch, usable wherever BATCH is asked for')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)')
            [CompletionResult]::new('--owner-pid', '--owner-pid', [CompletionResultType]::ParameterName, 'The lease is orphaned once this process is gone')
            [CompletionResult]::new('--copy-ignored', '--copy-ignored', [CompletionResultType]::ParameterName, 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)')
            [CompletionResult]::new('--sparse', '--sparse', [CompletionResultType]::ParameterName, 'Check out only this folder in each workspace, within the source''s own sparse checkout (repeatable; cone patterns)')
            [CompletionResult]::new('--remote', '--remote', [CompletionResultType]::ParameterName, 'Make the tasks remote: push the baseline to REMOTE (a remote''s name or a URL)')
            [CompletionResult]::new('--local', '--local', [CompletionResultType]::ParameterName, 'With --remote: keep this task local, with a workspace here (repeatable)')
            [CompletionResult]::new('--tasks', '--tasks', [CompletionResultType]::ParameterName, 'Read the tasks from a TOML file of [[task]] tables (name, command, env, timeout)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Run at most J workers at once (default: all)')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Run at most J workers at once (default: all)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop a worker still running after DURATION (90s, 30m, 2h): SIGTERM, then SIGKILL')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'Verify the integrated result with CMD before writing (as `apply --verify`)')
            [CompletionResult]::new('--verify-timeout', '--verify-timeout', [CompletionResultType]::ParameterName, 'Bound each verification run (as `apply --verify-timeout`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--forbid-commit', '--forbid-commit', [CompletionResultType]::ParameterName, 'Make the pre-commit hook refuse commits inside this batch''s workspaces')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('--no-verify', '--no-verify', [CompletionResultType]::ParameterName, 'Do not run apply.verify')
            [CompletionResult]::new('--no-apply', '--no-apply', [CompletionResultType]::ParameterName, 'Stop after the workers: apply nothing, print the apply command')
            [CompletionResult]::new('--no-sandbox', '--no-sandbox', [CompletionResultType]::ParameterName, 'Start the workers unconfined (run.sandbox = "off" for this command)')
            [CompletionResult]::new('--no-network', '--no-network', [CompletionResultType]::ParameterName, 'Deny the workers new TCP connections and listening sockets (run.network = false)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;exec' {
            [CompletionResult]::new('--batch', '--batch', [CompletionResultType]::ParameterName, 'The batch: label, id or unique id prefix (default: the only open batch)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--no-sandbox', '--no-sandbox', [CompletionResultType]::ParameterName, 'Start the workers unconfined (run.sandbox = "off" for this command)')
            [CompletionResult]::new('--no-network', '--no-network', [CompletionResultType]::ParameterName, 'Deny the workers new TCP connections and listening sockets (run.network = false)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;join' {
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Add the workspace to this clone of the project instead of looking for one around the current folder')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;submit' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hook' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('pre-commit', 'pre-commit', [CompletionResultType]::ParameterValue, 'Refuse commits inside forbid-commit workspaces; warn about stale batches')
            [CompletionResult]::new('pre-push', 'pre-push', [CompletionResultType]::ParameterValue, 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)')
            [CompletionResult]::new('worktree-create', 'worktree-create', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder')
            [CompletionResult]::new('worktree-remove', 'worktree-remove', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;hook;pre-commit' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hook;pre-push' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hook;worktree-create' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hook;worktree-remove' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hook;help' {
            [CompletionResult]::new('pre-commit', 'pre-commit', [CompletionResultType]::ParameterValue, 'Refuse commits inside forbid-commit workspaces; warn about stale batches')
            [CompletionResult]::new('pre-push', 'pre-push', [CompletionResultType]::ParameterValue, 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)')
            [CompletionResult]::new('worktree-create', 'worktree-create', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder')
            [CompletionResult]::new('worktree-remove', 'worktree-remove', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;hook;help;pre-commit' {
            break
        }
        'git-delegate;hook;help;pre-push' {
            break
        }
        'git-delegate;hook;help;worktree-create' {
            break
        }
        'git-delegate;hook;help;worktree-remove' {
            break
        }
        'git-delegate;hook;help;help' {
            break
        }
        'git-delegate;hooks' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Install the pre-commit hook (an existing hook is kept and chained)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;hooks;install' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace an existing pre-commit.local when a foreign hook is also present')
            [CompletionResult]::new('--claude', '--claude', [CompletionResultType]::ParameterName, 'Install Claude Code''s worktree hooks into .claude/settings.local.json instead')
            [CompletionResult]::new('--uninstall', '--uninstall', [CompletionResultType]::ParameterName, 'With --claude: remove the two hooks again (nothing else)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document (schema git-delegate/v1) on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;hooks;help' {
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Install the pre-commit hook (an existing hook is kept and chained)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;hooks;help;install' {
            break
        }
        'git-delegate;hooks;help;help' {
            break
        }
        'git-delegate;man' {
            [CompletionResult]::new('--install', '--install', [CompletionResultType]::ParameterName, 'Install every page into DIR (default: <exe dir>/../share/man/man1)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;completions' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour: auto, always or never')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'git-delegate;help' {
            [CompletionResult]::new('prepare', 'prepare', [CompletionResultType]::ParameterValue, 'Snapshot the working tree into a batch with one workspace per task')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Merge the tasks'' work back into the working tree')
            [CompletionResult]::new('undo', 'undo', [CompletionResultType]::ParameterValue, 'Take an apply''s result back out of the working tree')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show batches, leases and tasks')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show each task''s changes against its baseline, as `git diff` prints them')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print a task''s working folder')
            [CompletionResult]::new('branch', 'branch', [CompletionResultType]::ParameterValue, 'Publish a task''s work as a branch on HEAD, without touching the working tree')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Reclaim what stale batches hold, rescuing unapplied work first')
            [CompletionResult]::new('drop', 'drop', [CompletionResultType]::ParameterValue, 'End a batch: remove its workspaces, refs and state')
            [CompletionResult]::new('renew', 'renew', [CompletionResultType]::ParameterValue, 'Extend a batch''s lease')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show delegate.toml against the file you confirmed, or confirm it')
            [CompletionResult]::new('refresh', 'refresh', [CompletionResultType]::ParameterValue, 'Bring task workspaces up to date with the source; conflicts go to the worker')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Prepare, run a command in every workspace at once, then apply what succeeded')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run one command in a task''s workspace, contained like a run worker')
            [CompletionResult]::new('join', 'join', [CompletionResultType]::ParameterValue, 'On a worker''s machine: a workspace of a remote task, from the batch''s remote')
            [CompletionResult]::new('submit', 'submit', [CompletionResultType]::ParameterValue, 'Inside a joined workspace: send its work back to the batch''s remote')
            [CompletionResult]::new('hook', 'hook', [CompletionResultType]::ParameterValue, 'Run a hook''s work (git''s pre-commit, Claude Code''s worktree hooks)')
            [CompletionResult]::new('hooks', 'hooks', [CompletionResultType]::ParameterValue, 'Install git-delegate''s git hooks into this repository')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the manual page, or install all pages')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'git-delegate;help;prepare' {
            break
        }
        'git-delegate;help;apply' {
            break
        }
        'git-delegate;help;undo' {
            break
        }
        'git-delegate;help;status' {
            break
        }
        'git-delegate;help;diff' {
            break
        }
        'git-delegate;help;path' {
            break
        }
        'git-delegate;help;branch' {
            break
        }
        'git-delegate;help;gc' {
            break
        }
        'git-delegate;help;drop' {
            break
        }
        'git-delegate;help;renew' {
            break
        }
        'git-delegate;help;config' {
            break
        }
        'git-delegate;help;refresh' {
            break
        }
        'git-delegate;help;run' {
            break
        }
        'git-delegate;help;exec' {
            break
        }
        'git-delegate;help;join' {
            break
        }
        'git-delegate;help;submit' {
            break
        }
        'git-delegate;help;hook' {
            [CompletionResult]::new('pre-commit', 'pre-commit', [CompletionResultType]::ParameterValue, 'Refuse commits inside forbid-commit workspaces; warn about stale batches')
            [CompletionResult]::new('pre-push', 'pre-push', [CompletionResultType]::ParameterValue, 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)')
            [CompletionResult]::new('worktree-create', 'worktree-create', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder')
            [CompletionResult]::new('worktree-remove', 'worktree-remove', [CompletionResultType]::ParameterValue, 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree')
            break
        }
        'git-delegate;help;hook;pre-commit' {
            break
        }
        'git-delegate;help;hook;pre-push' {
            break
        }
        'git-delegate;help;hook;worktree-create' {
            break
        }
        'git-delegate;help;hook;worktree-remove' {
            break
        }
        'git-delegate;help;hooks' {
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Install the pre-commit hook (an existing hook is kept and chained)')
            break
        }
        'git-delegate;help;hooks;install' {
            break
        }
        'git-delegate;help;man' {
            break
        }
        'git-delegate;help;completions' {
            break
        }
        'git-delegate;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
