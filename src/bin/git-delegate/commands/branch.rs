//! `git delegate branch TASK [NAME]` (design §3.19): publish a task's work
//! as a branch on REV (`branch::run`, which makes it in memory) and say what
//! was made, or which paths conflict (exit 1).
//! Never: touches the working tree, the index or HEAD (the engine does not either).

use crate::cli::BranchArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::sys::paths;

pub fn run(ui: &Ui, args: BranchArgs) -> Result<i32> {
    let source = super::source()?;
    let opts = git_delegate::ops::branch::Options {
        task: args.task,
        name: args.name,
        batch: args.batch.batch,
        onto: args.onto,
        message: args.message,
        force: args.force,
    };
    let r = git_delegate::ops::branch::run(&source, &opts)?;
    let code = if r.commit.is_some() { 0 } else { 1 };
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::hooks::BranchDoc {
            batch: r.batch.clone(),
            task: r.task.clone(),
            branch: r.branch.clone(),
            commit: r.commit.map(|c| c.to_string()),
            parent: r.parent.to_string(),
            paths: r.paths.iter().map(|p| t.bytes(p)).collect(),
            previous: r.moved_from.map(|c| c.to_string()),
            conflicts: crate::render::apply::Conflict::list(&t, &r.conflicts),
        };
        ui.doc(t.doc(doc));
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
