//! `git delegate join` and `git delegate submit` (design §3.14): parse,
//! call the engine's `remote_workers`, render the document of design §6.4
//! (`{"batch", "task", "root", "remote", "proposal"}`) or a few lines.
//!
//! Owns: those two commands' text and JSON.
//! Never: does git, filesystem or transport work (the engine's `remote` does).

use crate::render::apply::RemoteWarning;
use crate::render::hooks::JoinDoc;

use crate::cli::{JoinArgs, SubmitArgs};
use crate::ui::Ui;
use git_delegate::error::{Error, Result};

pub fn join(ui: &Ui, args: JoinArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let report =
        git_delegate::ops::remote_workers::join(&git_delegate::ops::remote_workers::JoinOptions {
            url: args.url,
            batch: args.batch,
            task: args.task,
            dir: args.dir,
            repo: args.repo,
            cwd,
        })?;
    let j = &report.joined;
    if ui.json {
        show_doc(ui, j, &report.root, None);
    } else {
        ui.say(&format!(
            "Joined task {} of batch {} ({}) at {}\n  baseline {}\nWork there, then run: git delegate submit\n",
            j.task,
            git_delegate::record::batch::short(&j.batch),
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
    let s = git_delegate::ops::remote_workers::submit(&cwd)?;
    let j = &s.joined;
    if ui.json {
        show_doc(ui, j, &s.root, Some(s.proposal.to_string()));
    } else {
        ui.say(&format!(
            "Submitted task {} of batch {}: proposal {} pushed to {} ({})\n",
            j.task,
            git_delegate::record::batch::short(&j.batch),
            &s.proposal.to_string()[..12],
            j.url,
            s.ref_name
        ));
    }
    Ok(0)
}

/// The document of design §6.4 for the task `j` joined at `root`, with
/// the proposal `submit` pushed.
fn show_doc(
    ui: &Ui,
    j: &git_delegate::ops::remote_workers::Joined,
    root: &std::path::Path,
    proposal: Option<String>,
) {
    let t = crate::render::Text::default();
    let doc = JoinDoc {
        batch: j.batch.clone(),
        task: j.task.clone(),
        root: t.path(root),
        remote: j.url.clone(),
        proposal,
    };
    ui.doc(t.doc(doc));
}

/// The warnings of a batch that ended with refs left on its remote (design
/// §3.14 "Remote refs"): one per reason, as JSON (`warnings` entries) and as
/// text for stderr. Every command printed deletes a ref only with a lease on
/// the value this command fetched there, and none deletes a newer submission.
pub fn left_docs(left: &git_delegate::ops::remote_workers::Left) -> Vec<RemoteWarning> {
    warnings(left)
        .into_iter()
        .map(|w| RemoteWarning {
            code: "remote_refs_left",
            reason: w.reason,
            message: w.message,
            help: w.help,
            remote: left.remote.clone(),
            refs: w.refs,
        })
        .collect()
}

pub fn warn_left(ui: &Ui, left: &git_delegate::ops::remote_workers::Left) {
    for w in warnings(left) {
        ui.warn(&format!(
            "git-delegate: warning: {}\n  {}\n",
            crate::ui::escape_text(&w.message),
            crate::ui::escape_text(&w.help)
        ));
    }
}

struct Warning {
    reason: &'static str,
    message: String,
    help: String,
    refs: Vec<String>,
}

fn warnings(left: &git_delegate::ops::remote_workers::Left) -> Vec<Warning> {
    let remote = git_delegate::sys::paths::shell_quote(&left.remote);
    let mut out = Vec::new();
    if let Some((error, refs)) = &left.failed {
        let leased: Vec<(&str, String)> = refs
            .iter()
            .filter_map(|(n, id)| Some((n.as_str(), id.as_ref()?.to_string())))
            .collect();
        let unfetched: Vec<&str> = refs
            .iter()
            .filter(|(_, id)| id.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        let mut help = String::from("nothing local was lost");
        if !leased.is_empty() {
            let leases: Vec<String> = leased
                .iter()
                .map(|(n, id)| format!("--force-with-lease={n}:{id}"))
                .collect();
            let specs: Vec<String> = leased.iter().map(|(n, _)| format!(":{n}")).collect();
            help.push_str(&format!(
                "; once the remote is reachable, delete them with `git push {} {remote} {}` (each only while it still holds what was fetched: a newer submission stays)",
                leases.join(" "),
                specs.join(" ")
            ));
        }
        if !unfetched.is_empty() {
            help.push_str(&format!(
                "; {} never fetched here: what is there is its worker's work, left on the remote",
                unfetched.join(", ")
            ));
        }
        out.push(Warning {
            reason: "remote_failed",
            message: format!(
                "the batch's refs on the remote {} could not be deleted: {}",
                left.remote, error.message
            ),
            help,
            refs: refs.iter().map(|(n, _)| n.clone()).collect(),
        });
    }
    if !left.newer.is_empty() {
        let held: Vec<String> = left
            .newer
            .iter()
            .map(|(n, id)| format!("{n} ({})", id.to_hex_with_len(12)))
            .collect();
        let fetch: Vec<String> = left
            .newer
            .iter()
            .map(|(n, _)| format!("`git fetch {remote} {n}`"))
            .collect();
        out.push(Warning {
            reason: "newer_submission",
            message: format!(
                "the remote {} holds a newer submission than the one this command saw there, so it was not deleted: {}",
                left.remote,
                held.join(", ")
            ),
            help: format!(
                "it is its worker's work and was never applied: {} brings it here (then `git diff FETCH_HEAD^ FETCH_HEAD` shows it); delete it on the remote once you no longer want it",
                fetch.join(", ")
            ),
            refs: left.newer.iter().map(|(n, _)| n.clone()).collect(),
        });
    }
    out
}
