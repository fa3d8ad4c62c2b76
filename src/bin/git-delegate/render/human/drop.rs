//! The human text of `git delegate drop` (design §3.5): why it refused
//! (unapplied work, a workspace hosting an open batch, a workspace moved
//! away or written into after drop read it), and what to do.
//!
//! Owns: those words, laid out.
//! Never: prints (`commands::drop` does), decides (the engine's teardown
//! does), or does git work.

use super::{shorts, show};
use git_delegate::record::batch::Batch;

/// Why `drop` refused `b` without `--force`, and what to do.
pub fn refused_text(
    b: &Batch,
    unapplied: &[String],
    hosting: &[git_delegate::ops::teardown::Kept],
    stashed: &[(String, String)],
    moved: &[(String, Vec<std::path::PathBuf>)],
) -> String {
    let (noun, verb) = if unapplied.len() == 1 {
        ("task", "has")
    } else {
        ("tasks", "have")
    };
    let mut text = String::new();
    if !unapplied.is_empty() {
        text.push_str(&format!(
            "Not dropping batch {}: {noun} {} {verb} changes that were never applied.\n\
             Apply them with `git delegate apply {}`, or drop anyway with `git delegate drop {} --force`.\n",
            b.short(),
            unapplied.join(", "),
            b.short(),
            b.short()
        ));
    }
    text.push_str(&moved_text(b, moved));
    for (task, entry) in stashed {
        text.push_str(&format!(
            "The work of task {task} is in your stash, {entry} (a worker ran `git stash` in its workspace); it stays there even with --force.\n"
        ));
    }
    for (task, root, batches) in hosting {
        text.push_str(&format!(
            "Not dropping batch {}: the workspace of task {task}, {}, is the source of open batch {}.\n\
             Apply or drop that batch first, or drop anyway with `git delegate drop {} --force` (that workspace is then kept as an ordinary worktree).\n",
            b.short(),
            show(root),
            shorts(batches),
            b.short()
        ));
    }
    text
}

/// The lines for open tasks whose workspace is not at its place while their
/// work may be elsewhere (design §3.18).
pub fn moved_text(b: &Batch, moved: &[(String, Vec<std::path::PathBuf>)]) -> String {
    let mut text = String::new();
    for (task, found) in moved {
        let root = b
            .tasks
            .iter()
            .find(|t| &t.name == task)
            .map(|t| t.root.clone())
            .unwrap_or_default();
        if found.is_empty() {
            text.push_str(&format!(
                "The workspace of task {task} is not at {}, and its batch folder is gone: if it was moved, its work went with it. Move it back to apply it; if you removed it, drop anyway with `git delegate drop {} --force`.\n",
                show(&root),
                b.short()
            ));
        } else {
            let list: Vec<String> = found.iter().map(|f| show(f)).collect();
            text.push_str(&format!(
                "The workspace of task {task} is not at {}, but {} holds a workspace of it, with its work: move it back (`mv {} {}`) and apply it; `git delegate drop {} --force` leaves {} alone.\n",
                show(&root),
                list.join(", "),
                git_delegate::sys::paths::shell_quote(&found[0].to_string_lossy()),
                git_delegate::sys::paths::shell_quote(&root.to_string_lossy()),
                b.short(),
                if found.len() == 1 { "it" } else { "them" },
            ));
        }
    }
    text
}

/// Drop stopped: workspaces written into after drop read them were kept
/// with the batch (design §3.18).
pub fn changed_text(
    b: &Batch,
    names: &[String],
    changed: &[(String, Option<std::path::PathBuf>)],
) -> String {
    let mut text = format!(
        "Not dropping batch {}: {} {} written into after drop read {} (a worker still writes there), so {} kept with the batch.\n",
        b.short(),
        if names.len() == 1 { "the workspace of task" } else { "the workspaces of tasks" },
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 { "it is" } else { "they are" },
    );
    for (task, aside) in changed {
        if let Some(p) = aside {
            text.push_str(&format!(
                "The workspace of task {task} could not go back to its place (something is there now) and waits at {}: move what is there out of the way; the next git delegate command puts it back.\n",
                show(p)
            ));
        }
    }
    text.push_str(&format!(
        "Once nothing writes there any more, apply the work with `git delegate apply {}`, or drop anyway with `git delegate drop {} --force`.\n",
        b.short(),
        b.short()
    ));
    text
}

/// A corrupt batch dropped: what was removed, and the work saved.
pub fn corrupt_text(short: &str, r: &git_delegate::ops::gc::CorruptRemoval) -> String {
    let mut text = format!(
        "Dropped batch {short} (its state was corrupt): {} workspace(s) and {} ref(s) removed.\n",
        r.workspaces_removed, r.refs_removed
    );
    for x in &r.rescued {
        text.push_str(&format!(
            "Task {} had changes ({} path(s)): saved as {} ({})\n",
            x.task,
            x.paths,
            x.ref_name,
            x.patch.as_deref().map_or_else(
                || "as its ref alone, no patch".to_string(),
                |p| format!("patch {}", show(p))
            )
        ));
    }
    text
}
