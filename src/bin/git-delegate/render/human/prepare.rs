//! The human text of `git delegate prepare` (design §3.1): the batch made,
//! a line per task (its workspace, or for a remote task the command its
//! worker runs), what was carried into each workspace, and the hint that
//! applies it.
//!
//! Owns: those words, laid out.
//! Never: prints (`commands::prepare` does), or does git work.

use super::{human_bytes, show};
use crate::render::style::Ui;
use git_delegate::config::Mode;

/// What prepare made, for people.
pub fn prepared_text(ui: &Ui, report: &git_delegate::ops::prepare::Report) -> String {
    let batch = &report.batch;
    let short = batch.short();
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
            .then(|| git_delegate::ops::remote_workers::join_command(batch, &t.name))
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
            show(&t.cwd(&batch.prefix))
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
            crate::render::style::escape_text(&sparse.join(" "))
        ));
    }
    // The hint names this batch and no other, ever: the full id resolves
    // before labels and prefixes, and is never reused (a prefix could match
    // another batch once this one is gone).
    text.push_str(&format!(
        "Lease expires {}. When the tasks are done: git delegate apply {}\n",
        batch.lease.expires_at, batch.id
    ));
    text
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
        human_bytes(c.bytes, "B"),
        how.join(", ")
    )
}
