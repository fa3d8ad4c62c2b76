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
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::prepare::run(&source, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    let batch = &report.batch;
    // forbid-commit is the pre-commit hook's to enforce: without it the
    // batch's workspaces accept commits (design §3.7).
    let hook_missing = batch
        .forbid_commit
        .then(|| git_delegate::ops::pre_commit::pre_commit_missing(&source))
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
    ui.say(&crate::render::human::prepare::prepared_text(ui, &report));
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
