//! `git delegate hook pre-push REMOTE URL` (design §3.19): words what the
//! engine's check (`ops::pre_push`) found, on stderr, where git shows it.
//!
//! Exit 1 refuses the push: a ref that would publish the private snapshot
//! under `hooks.private-baselines = "block"`, and any failure of the check
//! itself (fail closed), each with the way out. Under `"warn"` the same
//! words are shown and the push goes on.
//! Never: changes anything; lets a push through in silence when the check
//! could not be made.

use std::path::Path;

use crate::ui::{escape_text, Ui};
use git_delegate::config::PrivateBaselines;
use git_delegate::ops::pre_push::{Found, Hint, Holds, PrePush};
use git_delegate::record::batch::short;
use git_delegate::sys::paths;

const TAG: &str = "git-delegate: ";

pub fn run(ui: &Ui, remote: &str) -> i32 {
    use std::io::Read;
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        let reason = format!("cannot read the pushed refs git gave the hook ({e})");
        return failed(ui, &reason, PrivateBaselines::default(), None, None);
    }
    match git_delegate::ops::pre_push::check(remote, &input) {
        PrePush::Clear => 0,
        PrePush::Failed {
            reason,
            mode,
            config_error,
            config,
            confirm,
        } => {
            config_warning(ui, config_error);
            failed(ui, &reason, mode, config.as_deref(), confirm.as_deref())
        }
        PrePush::Found {
            found,
            mode,
            config_error,
            config,
            left_out,
            confirm,
        } => {
            config_warning(ui, config_error);
            if let Some(words) = left_out {
                ui.warn(&format!("{TAG}{}\n", escape_text(&words)));
            }
            let mut text: String = found.iter().map(words).collect();
            if mode == PrivateBaselines::Warn {
                text.push_str(&format!(
                    "{TAG}pushed anyway (hooks.private-baselines = \"warn\" in {})\n",
                    super::show(&config)
                ));
                ui.warn(&text);
                return 0;
            }
            text.push_str(&format!(
                "{TAG}push refused. If you mean to publish these files: `git push --no-verify` (this push only), or {}\n",
                relax(&super::show(&config), confirm.as_deref())
            ));
            ui.warn(&text);
            1
        }
    }
}

fn config_warning(ui: &Ui, e: Option<git_delegate::error::Error>) {
    if let Some(e) = e {
        ui.warn(&format!(
            "{TAG}{} (using the defaults)\n",
            escape_text(&e.message)
        ));
    }
}

/// The lasting way out: "warn" in the file, confirmed (design §3.18: a
/// change made while a batch is open holds only once confirmed, and
/// confirming a file no batch saw change does no harm).
fn relax(file: &str, confirm: Option<&str>) -> String {
    match confirm {
        Some(cmd) => format!(
            "hooks.private-baselines = \"warn\" in {file}, confirmed with `{}`",
            escape_text(cmd)
        ),
        None => format!("hooks.private-baselines = \"warn\" in {file}"),
    }
}

/// The check itself failed: refused (fail closed) unless `warn`.
fn failed(
    ui: &Ui,
    reason: &str,
    mode: PrivateBaselines,
    config: Option<&Path>,
    confirm: Option<&str>,
) -> i32 {
    let file = config
        .map(super::show)
        .unwrap_or_else(|| ".git/delegate.toml".to_string());
    let mut text = format!(
        "{TAG}cannot check the push for your private files (the uncommitted and untracked files a git-delegate baseline holds): {}\n",
        escape_text(reason)
    );
    if mode == PrivateBaselines::Warn {
        text.push_str(&format!(
            "{TAG}pushed unchecked (hooks.private-baselines = \"warn\" in {file})\n"
        ));
        ui.warn(&text);
        return 0;
    }
    text.push_str(&format!(
        "{TAG}push refused, since it could not be checked. Fix the cause above, or push without the check: `git push --no-verify` (this push only), or {}\n",
        relax(&file, confirm)
    ));
    ui.warn(&text);
    1
}

/// What one ref would publish, and the way out.
fn words(f: &Found) -> String {
    let local = escape_text(&f.local_ref);
    let remote = escape_text(&f.remote_ref);
    let commit = &f.commit.to_string()[..12];
    let batch = match &f.hint {
        Hint::Branch { batch, .. } => Some(batch.as_str()),
        Hint::Ended { batch } => batch.as_deref(),
    };
    let of_batch = batch
        .map(|b| format!(" of batch {}", short(b)))
        .unwrap_or_default();
    let mut text = match &f.holds {
        Holds::Baseline => format!(
            "{TAG}{local} holds the git-delegate baseline {commit}{of_batch}: the snapshot of your uncommitted and untracked files a worker's branch is made on; pushing it to {remote} would publish them.\n"
        ),
        Holds::Private { paths, more } => {
            let mut named: Vec<String> = paths
                .iter()
                .map(|p| escape_text(&paths::doc_bytes(p)))
                .collect();
            if *more > 0 {
                named.push(format!("and {more} more"));
            }
            let when = batch
                .map(|b| format!("when batch {} was prepared", short(b)))
                .unwrap_or_else(|| "at a prepare".to_string());
            let what = if named.is_empty() {
                "it names the content one of them had".to_string()
            } else {
                format!(
                    "commit {commit} brings {} with the content they had",
                    named.join(", ")
                )
            };
            format!(
                "{TAG}{local} holds your private files: {what}, uncommitted or untracked, in your working tree {when}; pushing it to {remote} would publish them.\n"
            )
        }
    };
    text.push_str(&hint(&f.hint));
    text
}

fn hint(h: &Hint) -> String {
    match h {
        Hint::Branch { batch, tasks } => {
            let b = short(batch);
            let commands: Vec<String> = tasks
                .iter()
                .map(|t| format!("`git delegate branch {t} --batch {b}`"))
                .collect();
            let which = match commands.len() {
                1 => commands.join(""),
                _ => format!("one of {}", commands.join(", ")),
            };
            format!(
                "{TAG}publish the task's work alone with {which} (a branch on your HEAD with the task's changes only; it works from the task's folder too), and push that branch instead\n"
            )
        }
        Hint::Ended { batch } => format!(
            "{TAG}{} is no longer open, so `git delegate branch` cannot publish its work: commit the work you mean to publish on a branch made from your HEAD, and push that\n",
            batch
                .as_deref()
                .map(|b| format!("batch {}", short(b)))
                .unwrap_or_else(|| "its batch".to_string())
        ),
    }
}
