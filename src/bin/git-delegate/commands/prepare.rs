//! `git delegate prepare` (design §3.1): parse the arguments, run the
//! transaction (`git_delegate::ops::prepare::run`: snapshot, baseline, marker,
//! workspaces, carry, complete; undone whole on failure or Ctrl-C), and
//! render what it made.
//!
//! Owns: the prepare command's arguments, human text and JSON document.
//! Never: does git, filesystem or process work (the engine's `prepare` does).

use crate::cli::{ModeArg, PrepareArgs};
use crate::ui::Ui;
use git_delegate::config::Mode;
use git_delegate::error::Result;
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: PrepareArgs, recovered: &mut Recovery) -> Result<i32> {
    // Everything about the arguments is checked before anything is made.
    let names: Vec<String> = match (args.count, args.tasks.is_empty()) {
        (Some(n), _) => (1..=n).map(|i| i.to_string()).collect(),
        (None, true) => vec!["1".to_string()],
        (None, false) => args.tasks.clone(),
    };
    let opts = options(&args, names)?;
    let source = super::source()?;
    let shown = super::Shown::new(ui);
    let report = git_delegate::ops::prepare::run(&source, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    let batch = &report.batch;
    let short = batch.short();
    // forbid-commit is the pre-commit hook's to enforce: without it the
    // batch's workspaces accept commits (design §3.7).
    let hook_missing = batch
        .forbid_commit
        .then(|| git_delegate::ops::hooks::pre_commit_missing(&source))
        .flatten();
    let warning = hook_missing.as_ref().map(|hook| {
        (
            format!(
                "commits in this batch's workspaces will not be refused: forbid-commit needs git-delegate's pre-commit hook, which is not installed at {}",
                super::show(hook)
            ),
            "run `git delegate hooks install` (the hook then refuses commits in this batch's workspaces too)",
        )
    });

    if ui.json {
        use crate::render::batch::{BatchDoc, HookWarning};
        let t = crate::render::Text::default();
        let mut doc = BatchDoc::new(&t, &source, batch, Default::default());
        doc.warnings = warning.as_ref().map(|(message, help)| {
            vec![HookWarning {
                code: "hook_not_installed",
                message: message.clone(),
                help: help.to_string(),
            }]
        });
        ui.doc_after(t.doc(doc), recovered);
    }
    if let Some((message, help)) = &warning {
        ui.warn(&format!("git-delegate: warning: {message}\n  {help}\n"));
    }
    let head_text = match report.head {
        Some(h) => format!("HEAD {}", &h.to_string()[..7]),
        None => "an unborn branch".to_string(),
    };
    let changes = match report.changes {
        0 => String::new(),
        1 => " + 1 uncommitted change".into(),
        n => format!(" + {n} uncommitted changes"),
    };
    let mut text = format!(
        "Prepared batch {}{} from {head_text}{changes}\n",
        ui.bold(short),
        batch
            .label
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    );
    let mut local = 0;
    for t in batch.tasks.iter() {
        // design §3.14: a remote task's line is the command its worker runs.
        if let Some(join) = t
            .remote
            .then(|| git_delegate::ops::remote::join_command(batch, &t.name))
            .flatten()
        {
            text.push_str(&format!("  task {:<8} remote: {join}\n", t.name));
            continue;
        }
        let i = local;
        local += 1;
        text.push_str(&format!(
            "  task {:<8} {}\n",
            t.name,
            super::show(&t.cwd(&batch.prefix))
        ));
        if let Some(c) = report.carried.get(i).filter(|c| c.files > 0) {
            let what = if batch.mode == Mode::Scratch {
                "scratch copy"
            } else {
                "carried ignored"
            };
            text.push_str(&format!("           {what}: {}\n", carried(c)));
        }
    }
    // design §3.15: what the workspaces hold of the tree.
    if let Some(sparse) = &batch.sparse {
        text.push_str(&format!(
            "Sparse workspaces: {}\n",
            crate::ui::escape_text(&sparse.join(" "))
        ));
    }
    // The hint names this batch and no other, ever: the full id resolves
    // before labels and prefixes, and is never reused (a prefix could match
    // another batch once this one is gone).
    text.push_str(&format!(
        "Lease expires {}. When the tasks are done: git delegate apply {}\n",
        batch.lease.expires_at, batch.id
    ));
    ui.say(&text);
    Ok(0)
}

/// prepare's options from its arguments, `names` checked (`run` shares them).
pub(super) fn options(
    args: &PrepareArgs,
    names: Vec<String>,
) -> Result<git_delegate::ops::prepare::Options> {
    git_delegate::ops::prepare::check(&names, args.label.as_deref())?;
    let owner = args.owner_pid.map(super::owner).transpose()?;
    let ttl_secs = super::parse_ttl_opt(args.ttl.as_deref())?;
    Ok(git_delegate::ops::prepare::Options {
        names,
        label: args.label.clone(),
        ttl_secs,
        owner,
        mode: args.mode.map(|m| match m {
            ModeArg::Worktree => Mode::Worktree,
            ModeArg::Scratch => Mode::Scratch,
        }),
        copy_ignored: args.copy_ignored.clone(),
        forbid_commit: args.forbid_commit,
        remote: args.remote.clone(),
        local: args.local.clone(),
        sparse: args.sparse.clone(),
    })
}

/// `1234 files, 5.6 MiB (1200 cloned, 30 copied, 4 symlinks)`
fn carried(c: &git_delegate::record::batch::CarryStats) -> String {
    let mut how = Vec::new();
    if c.cloned > 0 || c.copied == 0 {
        how.push(format!("{} cloned", c.cloned));
    }
    if c.copied > 0 {
        how.push(format!("{} copied", c.copied));
    }
    if c.symlinks > 0 {
        how.push(format!(
            "{} symlink{}",
            c.symlinks,
            if c.symlinks == 1 { "" } else { "s" }
        ));
    }
    format!(
        "{} file{}, {} ({})",
        c.files,
        if c.files == 1 { "" } else { "s" },
        super::human_bytes(c.bytes, "B"),
        how.join(", ")
    )
}
