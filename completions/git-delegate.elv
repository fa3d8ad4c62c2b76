
use builtin;
use str;

set edit:completion:arg-completer[git-delegate] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'git-delegate'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'git-delegate'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand prepare 'Snapshot the working tree into a batch with one workspace per task'
            cand apply 'Merge the tasks'' work back into the working tree'
            cand undo 'Take an apply''s result back out of the working tree'
            cand status 'Show batches, leases and tasks'
            cand diff 'Show each task''s changes against its baseline, as `git diff` prints them'
            cand path 'Print a task''s working folder'
            cand branch 'Publish a task''s work as a branch on HEAD, without touching the working tree'
            cand gc 'Reclaim what stale batches hold, rescuing unapplied work first'
            cand drop 'End a batch: remove its workspaces, refs and state'
            cand renew 'Extend a batch''s lease'
            cand config 'Show delegate.toml against the file you confirmed, or confirm it'
            cand refresh 'Bring task workspaces up to date with the source; conflicts go to the worker'
            cand run 'Prepare, run a command in every workspace at once, then apply what succeeded'
            cand exec 'Run one command in a task''s workspace, contained like a run worker'
            cand join 'On a worker''s machine: a workspace of a remote task, from the batch''s remote'
            cand submit 'Inside a joined workspace: send its work back to the batch''s remote'
            cand hook 'Run a hook''s work (git''s pre-commit, Claude Code''s worktree hooks)'
            cand hooks 'Install git-delegate''s git hooks into this repository'
            cand man 'Print the manual page, or install all pages'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;prepare'= {
            cand -n 'Create N tasks named 1..N'
            cand --count 'Create N tasks named 1..N'
            cand --mode 'Workspace kind (default: workspace.mode, else worktree)'
            cand --label 'A name for the batch, usable wherever BATCH is asked for'
            cand --ttl 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)'
            cand --owner-pid 'The lease is orphaned once this process is gone'
            cand --copy-ignored 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)'
            cand --sparse 'Check out only this folder in each workspace, within the source''s own sparse checkout (repeatable; cone patterns)'
            cand --remote 'Make the tasks remote: push the baseline to REMOTE (a remote''s name or a URL)'
            cand --local 'With --remote: keep this task local, with a workspace here (repeatable)'
            cand --color 'When to use colour: auto, always or never'
            cand --forbid-commit 'Make the pre-commit hook refuse commits inside this batch''s workspaces'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;apply'= {
            cand --only 'Apply only these tasks; the rest stay open (repeatable)'
            cand --discard 'Drop these tasks'' work (repeatable)'
            cand --verify 'Run CMD on the integrated result first; land only tasks that pass it'
            cand --verify-timeout 'Kill a verification run (its whole process group) after DURATION; it counts as failed'
            cand --verify-jobs 'Verify up to J candidate sets at once, each in its own workspace'
            cand --kept 'Land a kept proposal (one `git delegate status` lists under kept) instead of a batch'
            cand --from-undo 'Apply again the proposals of an undone apply (its id or a unique prefix)'
            cand --color 'When to use colour: auto, always or never'
            cand --dry-run 'Report what would happen; change nothing'
            cand -v 'List every path each task wrote (or would write), not only the first 20'
            cand --verbose 'List every path each task wrote (or would write), not only the first 20'
            cand --strict 'Refuse a task when the source changed since prepare in a path it touches'
            cand --keep 'Keep the workspaces of applied tasks (as ordinary unlocked worktrees)'
            cand --no-verify 'Do not run apply.verify'
            cand --refresh-conflicts 'Then refresh every task that ended `conflict`, handing its conflicts to its worker'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;undo'= {
            cand --color 'When to use colour: auto, always or never'
            cand --list 'List the undo entries (id, batch, time, paths written, undone or not); change nothing'
            cand --dry-run 'Report what undo would write or which paths block it; change nothing'
            cand --force 'Undo even though HEAD moved since the apply (its changes may be committed now)'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;status'= {
            cand --color 'When to use colour: auto, always or never'
            cand --check 'Print only problems; exit 1 on any (a stale batch, a left-over journal, a workspace left aside or a registration left by a killed command, an unconfirmed delegate.toml, ...), each with the command that clears it'
            cand --fetch 'Ask the remote of batches with remote tasks which of them have submitted'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;diff'= {
            cand --batch 'The batch: label, id or unique id prefix (default: the only open batch)'
            cand --color 'When to use colour: auto, always or never'
            cand --stat 'Per task, the changed paths with counts, as `git diff --stat` prints them'
            cand --name-status 'Per task, one `STATUS<TAB>PATH` line per changed path, as `git diff --name-status`'
            cand --source 'What apply would change in the working tree now, all selected tasks together'
            cand --binary 'Show binary files as patches `git apply` takes (`GIT binary patch`), as `git diff --binary`'
            cand --full-index 'Show full object ids in the `index` lines, as `git diff --full-index`'
            cand --no-pager 'Never page the output (default on a terminal: the pager git would choose)'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;path'= {
            cand --batch 'The batch: label, id or unique id prefix (default: the only open batch)'
            cand --color 'When to use colour: auto, always or never'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;branch'= {
            cand --batch 'The batch: label, id or unique id prefix (default: the only open batch)'
            cand --onto 'The commit the branch starts from (default: the source''s HEAD)'
            cand -m 'The commit message (default: "<task>: work from git delegate batch <label or short id>")'
            cand --message 'The commit message (default: "<task>: work from git delegate batch <label or short id>")'
            cand --color 'When to use colour: auto, always or never'
            cand --force 'Move the branch when it exists already (never the one checked out in a worktree)'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;gc'= {
            cand --color 'When to use colour: auto, always or never'
            cand --dry-run 'Report what would be reclaimed; change nothing'
            cand --pool 'Also remove every idle workspace of the pool (workspace.pool)'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;drop'= {
            cand --color 'When to use colour: auto, always or never'
            cand --force 'Drop even when tasks have changes that were never applied'
            cand --pool 'Remove every idle workspace of the pool (workspace.pool) instead of a batch'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;renew'= {
            cand --ttl 'New lease duration from now (default: lease.ttl, else 24h)'
            cand --owner-pid 'A new owner process for the lease'
            cand --color 'When to use colour: auto, always or never'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;config'= {
            cand --color 'When to use colour: auto, always or never'
            cand --trust 'Confirm delegate.toml as it is now: the commands it names run from now on'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;refresh'= {
            cand --batch 'The batch: label, id or unique id prefix (default: the batch of the workspace you are in, else the only open batch)'
            cand --color 'When to use colour: auto, always or never'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;run'= {
            cand -n 'Create N tasks named 1..N'
            cand --count 'Create N tasks named 1..N'
            cand --mode 'Workspace kind (default: workspace.mode, else worktree)'
            cand --label 'A name for the batch, usable wherever BATCH is asked for'
            cand --ttl 'Lease duration such as 90s, 30m, 2h, 7d (default: lease.ttl, else 24h)'
            cand --owner-pid 'The lease is orphaned once this process is gone'
            cand --copy-ignored 'Carry ignored files matching this gitignore-style pattern into each worktree (repeatable; adds to workspace.copy-ignored and .worktreeinclude)'
            cand --sparse 'Check out only this folder in each workspace, within the source''s own sparse checkout (repeatable; cone patterns)'
            cand --remote 'Make the tasks remote: push the baseline to REMOTE (a remote''s name or a URL)'
            cand --local 'With --remote: keep this task local, with a workspace here (repeatable)'
            cand --tasks 'Read the tasks from a TOML file of [[task]] tables (name, command, env, timeout)'
            cand -j 'Run at most J workers at once (default: all)'
            cand --jobs 'Run at most J workers at once (default: all)'
            cand --timeout 'Stop a worker still running after DURATION (90s, 30m, 2h): SIGTERM, then SIGKILL'
            cand --verify 'Verify the integrated result with CMD before writing (as `apply --verify`)'
            cand --verify-timeout 'Bound each verification run (as `apply --verify-timeout`)'
            cand --color 'When to use colour: auto, always or never'
            cand --forbid-commit 'Make the pre-commit hook refuse commits inside this batch''s workspaces'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand --no-verify 'Do not run apply.verify'
            cand --no-apply 'Stop after the workers: apply nothing, print the apply command'
            cand --no-sandbox 'Start the workers unconfined (run.sandbox = "off" for this command)'
            cand --no-network 'Deny the workers new TCP connections and listening sockets (run.network = false)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;exec'= {
            cand --batch 'The batch: label, id or unique id prefix (default: the only open batch)'
            cand --color 'When to use colour: auto, always or never'
            cand --no-sandbox 'Start the workers unconfined (run.sandbox = "off" for this command)'
            cand --no-network 'Deny the workers new TCP connections and listening sockets (run.network = false)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;join'= {
            cand --repo 'Add the workspace to this clone of the project instead of looking for one around the current folder'
            cand --color 'When to use colour: auto, always or never'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;submit'= {
            cand --color 'When to use colour: auto, always or never'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hook'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand pre-commit 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
            cand pre-push 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)'
            cand worktree-create 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder'
            cand worktree-remove 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;hook;pre-commit'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hook;pre-push'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hook;worktree-create'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hook;worktree-remove'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hook;help'= {
            cand pre-commit 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
            cand pre-push 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)'
            cand worktree-create 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder'
            cand worktree-remove 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;hook;help;pre-commit'= {
        }
        &'git-delegate;hook;help;pre-push'= {
        }
        &'git-delegate;hook;help;worktree-create'= {
        }
        &'git-delegate;hook;help;worktree-remove'= {
        }
        &'git-delegate;hook;help;help'= {
        }
        &'git-delegate;hooks'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand install 'Install the pre-commit hook (an existing hook is kept and chained)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;hooks;install'= {
            cand --color 'When to use colour: auto, always or never'
            cand --force 'Replace an existing pre-commit.local when a foreign hook is also present'
            cand --claude 'Install Claude Code''s worktree hooks into .claude/settings.local.json instead'
            cand --uninstall 'With --claude: remove the two hooks again (nothing else)'
            cand --json 'Print exactly one JSON document (schema git-delegate/v1) on stdout'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;hooks;help'= {
            cand install 'Install the pre-commit hook (an existing hook is kept and chained)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;hooks;help;install'= {
        }
        &'git-delegate;hooks;help;help'= {
        }
        &'git-delegate;man'= {
            cand --install 'Install every page into DIR (default: <exe dir>/../share/man/man1)'
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;completions'= {
            cand --color 'When to use colour: auto, always or never'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'git-delegate;help'= {
            cand prepare 'Snapshot the working tree into a batch with one workspace per task'
            cand apply 'Merge the tasks'' work back into the working tree'
            cand undo 'Take an apply''s result back out of the working tree'
            cand status 'Show batches, leases and tasks'
            cand diff 'Show each task''s changes against its baseline, as `git diff` prints them'
            cand path 'Print a task''s working folder'
            cand branch 'Publish a task''s work as a branch on HEAD, without touching the working tree'
            cand gc 'Reclaim what stale batches hold, rescuing unapplied work first'
            cand drop 'End a batch: remove its workspaces, refs and state'
            cand renew 'Extend a batch''s lease'
            cand config 'Show delegate.toml against the file you confirmed, or confirm it'
            cand refresh 'Bring task workspaces up to date with the source; conflicts go to the worker'
            cand run 'Prepare, run a command in every workspace at once, then apply what succeeded'
            cand exec 'Run one command in a task''s workspace, contained like a run worker'
            cand join 'On a worker''s machine: a workspace of a remote task, from the batch''s remote'
            cand submit 'Inside a joined workspace: send its work back to the batch''s remote'
            cand hook 'Run a hook''s work (git''s pre-commit, Claude Code''s worktree hooks)'
            cand hooks 'Install git-delegate''s git hooks into this repository'
            cand man 'Print the manual page, or install all pages'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'git-delegate;help;prepare'= {
        }
        &'git-delegate;help;apply'= {
        }
        &'git-delegate;help;undo'= {
        }
        &'git-delegate;help;status'= {
        }
        &'git-delegate;help;diff'= {
        }
        &'git-delegate;help;path'= {
        }
        &'git-delegate;help;branch'= {
        }
        &'git-delegate;help;gc'= {
        }
        &'git-delegate;help;drop'= {
        }
        &'git-delegate;help;renew'= {
        }
        &'git-delegate;help;config'= {
        }
        &'git-delegate;help;refresh'= {
        }
        &'git-delegate;help;run'= {
        }
        &'git-delegate;help;exec'= {
        }
        &'git-delegate;help;join'= {
        }
        &'git-delegate;help;submit'= {
        }
        &'git-delegate;help;hook'= {
            cand pre-commit 'Refuse commits inside forbid-commit workspaces; warn about stale batches'
            cand pre-push 'Refuse a push that would publish the user''s private files (a baseline''s snapshot)'
            cand worktree-create 'Claude Code''s WorktreeCreate hook: prepare a one-task batch, print its folder'
            cand worktree-remove 'Claude Code''s WorktreeRemove hook: apply the batch behind the worktree'
        }
        &'git-delegate;help;hook;pre-commit'= {
        }
        &'git-delegate;help;hook;pre-push'= {
        }
        &'git-delegate;help;hook;worktree-create'= {
        }
        &'git-delegate;help;hook;worktree-remove'= {
        }
        &'git-delegate;help;hooks'= {
            cand install 'Install the pre-commit hook (an existing hook is kept and chained)'
        }
        &'git-delegate;help;hooks;install'= {
        }
        &'git-delegate;help;man'= {
        }
        &'git-delegate;help;completions'= {
        }
        &'git-delegate;help;help'= {
        }
    ]
    $completions[$command]
}
