//! The human text of the commands (design §3): what each says on stdout
//! and stderr, worded from an engine report, beside the JSON documents of
//! `render`.
//!
//! Owns: the words and layout of the human output, and the small helpers
//! they share (paths, sizes, batch ids for people).
//! Never: prints (`ui::Ui` does, from the command), decides what happened
//! (the engine does), or does git work.

use std::path::Path;

pub mod apply;
pub mod diff;
pub mod drop;
pub mod hints;
pub mod prepare;
pub mod recovery;
pub mod run;
pub mod status;
pub mod verify;

/// The human lines for workspaces kept because open batches were prepared in them.
pub fn kept_text(kept: &[git_delegate::ops::apply::Kept]) -> String {
    kept.iter()
        .map(|(task, root, batches)| {
            format!(
                "Kept the workspace of task {task}, {root}: open batch {} was prepared in it and writes back into it.\n\
                 It stays as an ordinary worktree; once that batch is applied or dropped, remove it with `git worktree remove {root}`.\n",
                shorts(batches),
                root = show(root),
            )
        })
        .collect()
}

/// One line per process: `pid command` (with "(terminal)" for one that has
/// a controlling terminal), indented under a task.
pub fn procs_text(procs: &[git_delegate::sys::quiesce::Proc], indent: &str) -> String {
    procs
        .iter()
        .map(|p| {
            format!(
                "{indent}{} {}{}\n",
                p.pid,
                crate::render::style::escape_text(&p.command),
                if p.terminal { " (terminal)" } else { "" }
            )
        })
        .collect()
}

/// A size for human text: `1.2 MiB`, or `{n} {byte}` below a KiB.
pub fn human_bytes(n: u64, byte: &str) -> String {
    const UNITS: [&str; 5] = ["", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} {byte}")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Batch ids for human text: their short forms, comma-separated.
pub fn shorts(ids: &[String]) -> String {
    let list: Vec<&str> = ids
        .iter()
        .map(|b| git_delegate::record::batch::short(b))
        .collect();
    list.join(", ")
}

/// A path for human text.
pub fn show(p: &Path) -> String {
    crate::render::style::show_path(p)
}

/// A line per folder left alone (`why`: what it was not), then the
/// folders below the workspace root refused and never entered (gc, drop).
pub fn left_alone_text<'a>(
    why: &str,
    left_alone: impl IntoIterator<Item = &'a std::path::PathBuf>,
    refused: &[git_delegate::workspace::shared_root::Refused],
) -> String {
    let mut text: String = left_alone
        .into_iter()
        .map(|k| format!("Left alone ({why}): {}\n", show(k)))
        .collect();
    text.push_str(&unsafe_text(refused));
    text
}

/// One line per refused folder below the workspace root, for people.
pub fn unsafe_text(list: &[git_delegate::workspace::shared_root::Refused]) -> String {
    list.iter()
        .map(|r| {
            format!(
                "Left alone, never entered: {} {} (git delegate works only in folders of yours below the workspace root).\n",
                show(&r.path),
                crate::render::style::escape_text(&r.describe())
            )
        })
        .collect()
}
