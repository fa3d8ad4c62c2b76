//! `git delegate branch TASK [NAME]` (design §3.19): publish a task's work
//! as a branch on REV (`branch::run`, which makes it in memory) and say what
//! was made, or which paths conflict (exit 1).
//! Never: touches the working tree, the index or HEAD (the engine does not either).

use serde::Serialize;

use crate::cli::BranchArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::sys::paths;

/// The `--json` document (docs/json.md "branch").
#[derive(Serialize)]
struct Doc {
    batch: String,
    task: String,
    branch: String,
    /// `null` when the merge conflicted (nothing was made).
    commit: Option<String>,
    parent: String,
    paths: Vec<String>,
    /// The commit the branch pointed to before `--force` moved it.
    previous: Option<String>,
    conflicts: Vec<Conflict>,
}

#[derive(Serialize)]
struct Conflict {
    path: String,
    reason: String,
}

pub fn run(ui: &Ui, args: BranchArgs) -> Result<i32> {
    let source = super::source()?;
    let opts = git_delegate::ops::branch::Options {
        task: args.task,
        name: args.name,
        batch: args.batch,
        onto: args.onto,
        message: args.message,
        force: args.force,
    };
    let r = git_delegate::ops::branch::run(&source, &opts)?;
    let code = if r.commit.is_some() { 0 } else { 1 };
    if ui.json {
        let doc = Doc {
            batch: r.batch.clone(),
            task: r.task.clone(),
            branch: r.branch.clone(),
            commit: r.commit.map(|c| c.to_string()),
            parent: r.parent.to_string(),
            paths: r.paths.iter().map(|p| paths::doc_bytes(p)).collect(),
            previous: r.moved_from.map(|c| c.to_string()),
            conflicts: r
                .conflicts
                .iter()
                .map(|c| Conflict {
                    path: paths::doc_bytes(&c.path),
                    reason: c.reason.clone(),
                })
                .collect(),
        };
        ui.doc(serde_json::to_value(doc).unwrap_or_default());
        return Ok(code);
    }
    let name = r.branch.strip_prefix("refs/heads/").unwrap_or(&r.branch);
    let name = crate::ui::escape_text(name);
    let Some(commit) = r.commit else {
        let mut text = format!(
            "Task {} of batch {} conflicts with {}; no branch was made:\n",
            r.task,
            r.batch_short,
            short(&r.parent.to_string())
        );
        for c in &r.conflicts {
            text.push_str(&format!(
                "  {} ({})\n",
                crate::ui::escape_text(&paths::doc_bytes(&c.path)),
                c.reason
            ));
        }
        text.push_str(&format!(
            "Pass --onto a commit it applies to, or `git delegate apply --batch {} --only {}` and resolve the conflict in your working tree\n",
            r.batch_short, r.task
        ));
        ui.warn(&text);
        return Ok(1);
    };
    let mut text = format!(
        "Made branch {name} at {} (on {}): task {} of batch {}, {} path{}\n",
        short(&commit.to_string()),
        short(&r.parent.to_string()),
        r.task,
        r.batch_short,
        r.paths.len(),
        if r.paths.len() == 1 { "" } else { "s" }
    );
    if let Some(old) = r.moved_from {
        text.push_str(&format!("It was at {} before\n", short(&old.to_string())));
    }
    text.push_str(&format!(
        "Your working tree, index and HEAD are unchanged; the task stays open.\nPublish it: git push -u origin {name}\n"
    ));
    ui.say(&text);
    Ok(0)
}

fn short(hex: &str) -> &str {
    &hex[..hex.len().min(12)]
}
