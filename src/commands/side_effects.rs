//! Rendering the branches, tags and stash entries a batch's workspaces made
//! in the repository's shared refs (design §3.16): the `side_effects` array
//! of the apply document and its human lines, with the commands that bring
//! stashed work back into its workspace.
//!
//! Owns: those words and fields.
//! Never: finds them (`crate::side_effects` does) or changes a ref.

use serde_json::{json, Value};

use crate::apply::Outcome;
use crate::batch::{Batch, TaskState};
use git_delegate::side_effects::{Change, Kind, SideEffect};

/// `[{"task", "ref", "kind", "change", "old", "new", "stash", "message"}]`.
pub fn doc(b: &Batch, effects: &[SideEffect]) -> Value {
    Value::Array(
        effects
            .iter()
            .map(|e| {
                json!({
                    "task": e.task.and_then(|t| b.tasks.get(t)).map(|t| &t.name),
                    "ref": e.name,
                    "kind": e.kind.as_str(),
                    "change": e.change.as_str(),
                    "old": e.old_hex(),
                    "new": e.new_hex(),
                    "stash": e.stash_index.map(|n| format!("stash@{{{n}}}")),
                    "message": e.message,
                })
            })
            .collect(),
    )
}

/// The human lines: one per branch, tag or stash entry, and for a task whose
/// work is in the stash, how to bring it back into its workspace.
pub fn text(b: &Batch, effects: &[SideEffect], outcomes: &[Outcome], dry_run: bool) -> String {
    if effects.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "Branches, tags and stash entries changed since prepare (workspaces share them with your repository; git-delegate leaves them as they are):\n",
    );
    for e in effects {
        let who = match e.task.and_then(|t| b.tasks.get(t)) {
            Some(t) => format!("task {}", t.name),
            None => "one of the batch's workspaces (which one cannot be told)".to_string(),
        };
        let what = crate::ui::escape_text(&e.display_name());
        let line = match (e.kind, e.change) {
            (Kind::Stash, Change::Added) => format!(
                "  {who}: {what} ({})",
                crate::ui::escape_text(e.message.as_deref().unwrap_or(""))
            ),
            (Kind::Stash, _) => format!(
                "  a stash entry of before prepare is gone (popped or dropped, by you or a worker): {}; `git stash store -m restored {}` puts it back",
                e.old_short(),
                e.old_hex().unwrap_or_default()
            ),
            (_, Change::Created) => format!(
                "  {who}: {} {what} created at {}",
                e.kind.as_str(),
                e.new_short()
            ),
            (_, Change::Moved) => format!(
                "  {who}: {} {what} moved from {} to {}",
                e.kind.as_str(),
                e.old_short(),
                e.new_short()
            ),
            (_, _) => format!(
                "  {} {what} is gone since prepare (by you or a worker); it was at {}: `git update-ref {} {}` restores it",
                e.kind.as_str(),
                e.old_short(),
                crate::ui::escape_text(&e.name),
                e.old_hex().unwrap_or_default()
            ),
        };
        text.push_str(&line);
        text.push('\n');
        let stashed_task = e.task.filter(|&t| {
            e.kind == Kind::Stash
                && e.change == Change::Added
                && outcomes.iter().any(|o| {
                    o.idx == t && o.status == TaskState::Open && o.reason == Some("stashed")
                })
        });
        if let (Some(t), Some(n)) = (stashed_task, e.stash_index) {
            let root = crate::paths::shell_quote(&super::show(&b.tasks[t].root));
            let verb = if dry_run { "would stay" } else { "stays" };
            text.push_str(&format!(
                "      its work is there, not in its workspace, so the task {verb} open; bring it back with:\n\
                 \x20       git -C {root} stash pop stash@{{{n}}}\n\
                 \x20     then run `git delegate apply {}` again (or keep it in the stash and `git delegate apply {} --discard {}`)\n",
                b.short(),
                b.short(),
                b.tasks[t].name,
            ));
        } else if e.kind == Kind::Stash && e.change == Change::Added {
            if let Some(n) = e.stash_index {
                text.push_str(&format!(
                    "      see it with `git stash show -p stash@{{{n}}}`\n"
                ));
            }
        }
    }
    text
}
