//! `git delegate hook pre-commit` (design §3.7): refuse commits inside the
//! workspaces of a forbid-commit batch; warn about (or refuse commits
//! while there are) stale batches; otherwise exit 0 silently.
//!
//! The check is the engine's (`hooks::pre_commit`, fast: it reads files
//! only); this module words what it found.
//! Never: changes anything; a failure of its own never refuses a commit
//! (only a forbid-commit workspace or `hooks.stale-leases = "block"` does).
//! `hook pre-push` is worded in `pre_push.rs`.

use crate::cli::{HookArgs, HookName};
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::pre_commit::PreCommit;
use git_delegate::ops::problems::{Fact, Problem};

pub fn run(ui: &Ui, args: HookArgs) -> Result<i32> {
    match args.hook {
        HookName::PreCommit => Ok(pre_commit(ui)),
        HookName::WorktreeCreate => worktree_create(),
        HookName::WorktreeRemove => worktree_remove(),
        HookName::PrePush { remote, .. } => Ok(super::pre_push::run(ui, &remote)),
    }
}

/// Human text of Claude Code's hooks: stderr only (stdout is the folder).
fn stderr_ui() -> Ui {
    Ui {
        json: true,
        color: false,
    }
}

fn payload() -> Result<(Vec<u8>, std::path::PathBuf)> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).map_err(|e| {
        git_delegate::error::Error::io("cannot read the hook's payload on stdin", e)
    })?;
    let here = std::env::current_dir()
        .map_err(|e| git_delegate::error::Error::io("cannot read the current directory", e))?;
    Ok((bytes, here))
}

/// A worktree name as stderr shows it: escaped, and cut to 60 characters.
fn shown_name(name: &str) -> String {
    let mut cut: String = name.chars().take(60).collect();
    if cut.len() < name.len() {
        cut.push_str("...");
    }
    format!("{:?}", crate::ui::escape_text(&cut))
}

/// design §3.21: `WorktreeCreate`: a one-task batch, its folder on stdout;
/// the open batch of the same name handed back when Claude Code resumes it.
fn worktree_create() -> Result<i32> {
    use git_delegate::error::{Code, Error};
    use git_delegate::ops::claude;
    let (bytes, here) = payload()?;
    let p = claude::parse_create(&bytes, &here)?;
    let names = claude::names(&p.name);
    let opts = git_delegate::ops::prepare::Options {
        names: vec![names.task.clone()],
        label: Some(names.label.clone()),
        ttl_secs: None,
        owner: None,
        mode: None,
        copy_ignored: Vec::new(),
        forbid_commit: false,
        remote: None,
        local: Vec::new(),
        sparse: Vec::new(),
    };
    git_delegate::ops::prepare::check(&opts.names, opts.label.as_deref())?;
    let source = git_delegate::git::repo::Source::discover(&p.cwd)?;
    let ui = stderr_ui();
    if let Some(r) = claude::resume(&source, &names)? {
        ui.warn(&format!(
            "git-delegate: resumed batch {} ({}) for Claude Code's worktree {}: its task {} was still open (lease renewed)\n",
            r.batch.short(),
            names.label,
            super::show(&r.cwd),
            names.task
        ));
        crate::ui::stdout(&format!("{}\n", r.cwd.display()));
        return Ok(0);
    }
    if names.changed {
        ui.warn(&format!(
            "git-delegate: the worktree name {} is made the task name {} (label {}): only A-Z a-z 0-9 . _ - are kept, and a hash of the name keeps it apart\n",
            shown_name(&p.name),
            names.task,
            names.label
        ));
    }
    let shown = super::CommandObserver::new(&ui);
    let report = git_delegate::ops::prepare::run(&source, &opts, &shown)?;
    let b = &report.batch;
    let Some(t) = b.tasks.first() else {
        return Err(Error::state(
            Code::Usage,
            "prepare made no task",
            "run `git delegate status`",
        ));
    };
    let cwd = t.cwd(&b.prefix);
    ui.warn(&format!(
        "git-delegate: batch {} ({}) for Claude Code's worktree {}; its work is applied back when Claude Code removes it\n",
        b.short(),
        b.label.as_deref().unwrap_or_default(),
        super::show(&cwd)
    ));
    crate::ui::stdout(&format!("{}\n", cwd.display()));
    Ok(0)
}

/// design §3.21: `WorktreeRemove`: apply the batch behind the worktree. A
/// batch that ended meanwhile (the user's own apply got there first) is
/// no failure: the work is where that apply put it.
fn worktree_remove() -> Result<i32> {
    use git_delegate::config::OnRemove;
    use git_delegate::error::Code;
    use git_delegate::ops::claude;
    let (bytes, here) = payload()?;
    let p = claude::parse_remove(&bytes, &here)?;
    let mut also: Vec<&std::path::Path> = Vec::new();
    if let Some(c) = &p.cwd {
        also.push(c);
    }
    also.push(&here);
    let ui = stderr_ui();
    let Some((b, task)) = claude::find_workspace(&p.worktree_path, &also) else {
        ui.warn(&format!(
            "git-delegate: {} is not a git-delegate workspace of an open batch (one whose batch was applied or dropped already is not); left alone\n",
            super::show(&p.worktree_path)
        ));
        return Ok(0);
    };
    let source = git_delegate::git::repo::Source::discover(&b.source)?;
    if source.config.on_remove == OnRemove::Keep {
        ui.warn(&format!(
            "git-delegate: batch {} (task {task}) stays open (hooks.on-remove = \"keep\"): `git delegate apply {}` lands its work\n",
            b.short(),
            b.id
        ));
        return Ok(0);
    }
    let state_dir = source.state_dir();
    let opts = git_delegate::ops::apply::Options {
        batch: Some(b.id.clone()),
        ..Default::default()
    };
    let shown = super::CommandObserver::new(&ui);
    let report = match git_delegate::ops::apply::run(source, &opts, &shown) {
        Ok(report) => report,
        Err(e) if matches!(e.code, Code::UnknownBatch | Code::NoBatch) => {
            let Some(how) = claude::ended(&state_dir, &b.id) else {
                return Err(e);
            };
            ui.warn(&format!(
                "git-delegate: batch {} (task {task}) ended before this hook could apply it: {}; nothing left to do\n",
                b.short(),
                match how {
                    Some(apply) => format!(
                        "another git-delegate command applied it (apply {}; `git delegate undo --list` shows it)",
                        git_delegate::record::batch::short(&apply)
                    ),
                    None => "another git-delegate command applied or dropped it".to_string(),
                }
            ));
            return Ok(0);
        }
        Err(e) => return Err(e),
    };
    super::apply::say(&ui, &report, false, false);
    if !report.all_ok() {
        ui.warn(&format!(
            "git-delegate: the work of task {task} did not land whole; it is kept: `git delegate status` shows it, `git delegate apply {}` tries again\n",
            b.id
        ));
        return Ok(1);
    }
    Ok(0)
}

fn pre_commit(ui: &Ui) -> i32 {
    let warn = |m: &str| ui.warn(&format!("git-delegate: {m}\n"));
    let config_warning = |e: Option<git_delegate::error::Error>| {
        if let Some(e) = e {
            warn(&format!(
                "{} (using the defaults)",
                crate::ui::escape_text(&e.message)
            ));
        }
    };
    let (problems, block) = match git_delegate::ops::pre_commit::pre_commit() {
        PreCommit::Clear => return 0,
        PreCommit::Unchecked(e) => {
            warn(&format!(
                "cannot check batches: {}",
                crate::ui::escape_text(&e.message)
            ));
            return 0;
        }
        PreCommit::Forbidden {
            config_error,
            batch,
            label,
            task,
        } => {
            config_warning(config_error);
            let short = git_delegate::record::batch::short(&batch);
            let label = label.map(|l| format!(" ({l})")).unwrap_or_default();
            ui.warn(&format!(
                "git-delegate: commit refused: this is the workspace of task {task} of batch {short}{label}, \
which forbids commits (prepare --forbid-commit or hooks.forbid-commit).\n\
git-delegate: leave the changes as files: `git delegate apply {short}` in the source working tree brings them back.\n"
            ));
            return 1;
        }
        PreCommit::Checked {
            config_error,
            problems,
            block,
        } => {
            config_warning(config_error);
            (problems, block)
        }
    };
    if problems.is_empty() {
        return 0;
    }
    let mut text = String::new();
    for p in &problems {
        text.push_str(&format!("git-delegate: {}\n", message(p)));
    }
    if block {
        text.push_str(
            "git-delegate: commit refused (hooks.stale-leases = \"block\" in .git/delegate.toml); \
resolve the batches above, or commit with --no-verify\n",
        );
        ui.warn(&text);
        return 1;
    }
    ui.warn(&text);
    0
}

/// A problem in the hook's words: one line naming the batch and what
/// resolves it. The hook shows only what `problems::of_state` finds.
fn message(p: &Problem) -> String {
    let short = p.short();
    match &p.fact {
        Fact::Stale(state) => format!(
            "batch {short} is stale (lease {}): apply it (`git delegate apply {short}`), extend it (`{}`), or reclaim it (`git delegate gc`)",
            state.as_str(),
            git_delegate::ops::renew::command(short, *state)
        ),
        Fact::Journal { finishes, .. } => format!(
            "batch {short} has an interrupted write-back: run `git delegate status`; the next `git delegate gc` (or apply) {}",
            if *finishes {
                "finishes it (it had written its whole result)"
            } else {
                "rolls it back"
            }
        ),
        Fact::BrokenState { problem } => format!(
            "the state of batch {short} cannot be read ({problem}): run `git delegate status`"
        ),
        // Never found by `of_state`; worded as `status` would, shortly.
        _ => format!("batch {short} has a problem: run `git delegate status`"),
    }
}
