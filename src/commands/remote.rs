//! `git delegate join` and `git delegate submit` (design §3.14): parse,
//! call the engine's `remote`, render the document of design §6.4
//! (`{"batch", "task", "root", "remote", "proposal"}`) or a few lines.
//!
//! Owns: those two commands' text and JSON.
//! Never: does git, filesystem or transport work (the engine's `remote` does).

use serde_json::json;

use crate::cli::{JoinArgs, SubmitArgs};
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn join(ui: &Ui, args: JoinArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let report = crate::remote::join(&crate::remote::JoinOptions {
        url: args.url,
        batch: args.batch,
        task: args.task,
        dir: args.dir,
        repo: args.repo,
        cwd,
    })?;
    let j = &report.joined;
    if ui.json {
        ui.doc(json!({
            "batch": j.batch,
            "task": j.task,
            "root": crate::paths::doc_path(&report.root),
            "remote": j.url,
            "proposal": null,
        }));
    } else {
        ui.say(&format!(
            "Joined task {} of batch {} ({}) at {}\n  baseline {}\nWork there, then run: git delegate submit\n",
            j.task,
            crate::batch::short(&j.batch),
            if report.linked {
                "a linked worktree of this clone"
            } else {
                "a new clone"
            },
            super::show(&report.root),
            j.baseline,
        ));
    }
    Ok(0)
}

pub fn submit(ui: &Ui, _args: SubmitArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let s = crate::remote::submit(&cwd)?;
    let j = &s.joined;
    if ui.json {
        ui.doc(json!({
            "batch": j.batch,
            "task": j.task,
            "root": crate::paths::doc_path(&s.root),
            "remote": j.url,
            "proposal": s.proposal.to_string(),
        }));
    } else {
        ui.say(&format!(
            "Submitted task {} of batch {}: proposal {} pushed to {} ({})\n",
            j.task,
            crate::batch::short(&j.batch),
            &s.proposal.to_string()[..12],
            j.url,
            s.ref_name
        ));
    }
    Ok(0)
}

/// The warning of a batch that ended with refs left on its remote (design
/// §3.14): JSON (a `warnings` entry) and the text for stderr.
pub fn left_doc(left: &crate::remote::Left) -> serde_json::Value {
    json!({
        "code": "remote_refs_left",
        "message": left_message(left),
        "help": left_help(left),
        "remote": left.remote,
        "refs": left.refs,
    })
}

fn left_message(left: &crate::remote::Left) -> String {
    format!(
        "the batch's refs on the remote {} could not be deleted: {}",
        left.remote, left.error.message
    )
}

fn left_help(left: &crate::remote::Left) -> String {
    let specs: Vec<String> = left.refs.iter().map(|r| format!(":{r}")).collect();
    format!(
        "nothing local was lost; once the remote is reachable, delete them with `git push {} {}`",
        crate::paths::shell_quote(&left.remote),
        specs.join(" ")
    )
}

pub fn warn_left(ui: &Ui, left: &crate::remote::Left) {
    ui.warn(&format!(
        "git-delegate: warning: {}\n  {}\n",
        left_message(left),
        left_help(left)
    ));
}
