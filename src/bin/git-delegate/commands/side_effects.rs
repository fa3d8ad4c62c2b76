//! Rendering the branches, tags and stash entries a batch's workspaces made
//! in the repository's shared refs (design §3.16): the `side_effects` array
//! of the apply document and its human lines, with the commands that bring
//! stashed work back into its workspace.
//!
//! Owns: those words and fields.
//! Never: finds them (`git_delegate::ops::side_effects` does) or changes a ref.

use git_delegate::ops::apply::Outcome;
use git_delegate::ops::side_effects::{Change, Kind, SideEffect};
use git_delegate::record::batch::{Batch, TaskState};

/// The warning for changes in the shared git dir (stderr): one line per
/// config key and hook, with what a key now holds and how to look.
pub fn git_dir_warning(b: &Batch, effects: &[SideEffect], dry_run: bool) -> String {
    let changed: Vec<&SideEffect> = effects
        .iter()
        .filter(|e| matches!(e.kind, Kind::Config | Kind::Hook))
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "git-delegate: warning: your repository's config or hooks changed while batch {} lived (its workspaces share them, so a worker may have done it; git runs hooks and commands set there, such as core.fsmonitor, on your next git command; git-delegate {} them as they are):\n",
        b.short(),
        if dry_run { "would leave" } else { "leaves" }
    );
    let mut delegate_toml = false;
    for e in changed {
        let what = crate::ui::escape_text(e.detail.as_deref().unwrap_or(""));
        let path = e.path.as_deref().map(super::show).unwrap_or_default();
        let q = git_delegate::sys::paths::shell_quote(&path);
        if let Some(line) = delegate_line(e, &what) {
            delegate_toml = true;
            text.push_str(&line);
            continue;
        }
        let line = match (e.kind, e.change) {
            (Kind::Config, _) if e.detail.is_none() => {
                format!(
                    "  config {}: changed, and git can no longer read it",
                    crate::ui::escape_text(&path)
                )
            }
            (Kind::Config, Change::Deleted) => format!("  config {what}: removed"),
            (Kind::Config, change) => format!(
                "  config {what}: {} = {} (`git config --file {q} --get-all {}` shows it)",
                if change == Change::Created {
                    "set"
                } else {
                    "changed"
                },
                crate::ui::escape_text(e.value.as_deref().unwrap_or("")),
                git_delegate::sys::paths::shell_quote(e.detail.as_deref().unwrap_or(""))
            ),
            (_, Change::Created) => format!(
                "  hook {what}: created at {}",
                crate::ui::escape_text(&path)
            ),
            (_, Change::Deleted) => format!(
                "  hook {what}: removed from {}",
                crate::ui::escape_text(&path)
            ),
            (_, _) => format!(
                "  hook {what}: changed at {}",
                crate::ui::escape_text(&path)
            ),
        };
        text.push_str(&line);
        text.push('\n');
    }
    if delegate_toml {
        let dir = git_delegate::sys::paths::shell_quote(&super::show(&b.source));
        text.push_str(&format!(
            "  no command of delegate.toml you have not confirmed runs (apply.verify, workspace.setup): `git -C {dir} delegate config` shows what changed, `git -C {dir} delegate config --trust` confirms it\n"
        ));
    }
    text
}

/// A change of `delegate.toml` (design §3.18 "Commands from the shared git
/// dir"), as a warning line; `None` for any other side effect.
fn delegate_line(e: &SideEffect, key: &str) -> Option<String> {
    let path = e.path.as_deref()?;
    if e.kind != Kind::Config || path.file_name()? != "delegate.toml" {
        return None;
    }
    Some(match (e.change, &e.detail) {
        (_, None) => format!(
            "  {}: changed, and it is no longer valid\n",
            crate::ui::escape_text(&super::show(path))
        ),
        (Change::Deleted, _) => format!("  delegate.toml {key}: removed\n"),
        (change, _) => format!(
            "  delegate.toml {key}: {} = {}\n",
            if change == Change::Created {
                "set"
            } else {
                "changed"
            },
            crate::ui::escape_text(e.value.as_deref().unwrap_or(""))
        ),
    })
}

/// The warning for the command keys of an unconfirmed `delegate.toml`
/// apply left out (design §3.18), on stderr.
pub fn untrusted_warning(u: &git_delegate::ops::trust::Untrusted, dry_run: bool) -> String {
    let mut text = format!(
        "git-delegate: warning: {} in {} is not what you confirmed (the file changed while a batch was open, and a worker's workspace shares it), so git-delegate {} it out",
        crate::ui::escape_text(&u.named()),
        crate::ui::escape_text(&super::show(&u.file)),
        if dry_run { "would leave" } else { "left" }
    );
    for l in &u.left_out {
        if !l.confirmed.trim().is_empty() {
            text.push_str(&format!(
                "; the {} you confirmed {} in its place: `{}`",
                l.key,
                if dry_run { "would run" } else { "ran" },
                crate::ui::escape_text(&l.confirmed)
            ));
        }
    }
    text.push_str(&format!(
        "\n  help: {}\n",
        crate::ui::escape_text(&u.help())
    ));
    text
}

/// The human lines: one per branch, tag or stash entry, and for a task whose
/// work is in the stash, how to bring it back into its workspace.
pub fn text(b: &Batch, effects: &[SideEffect], outcomes: &[Outcome], dry_run: bool) -> String {
    let effects: Vec<&SideEffect> = effects
        .iter()
        .filter(|e| !matches!(e.kind, Kind::Config | Kind::Hook))
        .collect();
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
        // A worker's branch sits on the baseline, which holds the user's
        // uncommitted and untracked files (design §3.19).
        if let (Kind::Branch, Change::Created | Change::Moved, Some(t)) =
            (e.kind, e.change, e.task.and_then(|t| b.tasks.get(t)))
        {
            text.push_str(&format!(
                "      it is made on the baseline, which holds your uncommitted and untracked files: do not push it; \
`git delegate branch {} --batch {}` makes a branch on HEAD with the task's changes only\n",
                t.name,
                b.short()
            ));
        }
        let stashed_task = e.task.filter(|&t| {
            e.kind == Kind::Stash
                && e.change == Change::Added
                && outcomes.iter().any(|o| {
                    o.idx == t && o.status == TaskState::Open && o.reason == Some("stashed")
                })
        });
        if let (Some(t), Some(n)) = (stashed_task, e.stash_index) {
            let root = git_delegate::sys::paths::shell_quote(&super::show(&b.tasks[t].root));
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
