//! `git delegate hooks install [--force]` (design §3.7): install
//! git-delegate's pre-commit hook (`hooks::install`, whose header says how a
//! foreign hook is chained) and say what was done.

use crate::cli::{HooksAction, HooksArgs};
use crate::ui::Ui;
use git_delegate::error::Result;

pub fn run(ui: &Ui, args: HooksArgs) -> Result<i32> {
    match args.action {
        HooksAction::Install {
            claude: true,
            uninstall,
            ..
        } => claude(ui, uninstall),
        HooksAction::Install { force, .. } => install(ui, force),
    }
}

/// design §3.21: Claude Code's worktree hooks in `.claude/settings.local.json`.
fn claude(ui: &Ui, uninstall: bool) -> Result<i32> {
    let source = super::source()?;
    let done = git_delegate::ops::claude::install_settings(&source.root, uninstall)?;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::hooks::ClaudeDoc {
            settings: t.path(&done.file),
            changed: done.changed,
            installed: !uninstall,
        };
        ui.doc(t.doc(doc));
    }
    let file = super::show(&done.file);
    ui.say(&match (uninstall, done.changed) {
        (false, true) => {
            format!("Installed Claude Code's WorktreeCreate and WorktreeRemove hooks in {file}\n")
        }
        (false, false) => {
            format!("Claude Code's worktree hooks are already in {file}; nothing changed\n")
        }
        (true, true) => format!("Removed Claude Code's worktree hooks from {file}\n"),
        (true, false) => {
            format!("Claude Code's worktree hooks are not in {file}; nothing changed\n")
        }
    });
    Ok(0)
}

fn install(ui: &Ui, force: bool) -> Result<i32> {
    let source = super::source()?;
    let done = git_delegate::ops::pre_commit::install(&source, force)?;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::hooks::HooksDoc::new(&t, &done);
        ui.doc(t.doc(doc));
    }
    let mut text = installed(&done, "pre-commit", "commit");
    if let Some(b) = &done.backup {
        text.push_str(&format!(
            "The previous pre-commit.local was kept as {}\n",
            super::show(b)
        ));
    }
    if let Some(p) = &*done.pre_push {
        text.push_str(&installed(p, "pre-push", "push"));
    }
    ui.say(&text);
    Ok(0)
}

/// The lines saying the `name` hook is installed (or was already), and the
/// hook it runs first, whose failure refuses the `refused` (commit, push).
fn installed(done: &git_delegate::ops::pre_commit::Installed, name: &str, refused: &str) -> String {
    let mut text = if done.changed {
        format!("Installed the {name} hook {}\n", super::show(&done.hook))
    } else {
        format!(
            "The {name} hook {} is already installed; nothing changed\n",
            super::show(&done.hook)
        )
    };
    if let Some(c) = &done.chained {
        text.push_str(&format!(
            "It runs {} first; if that fails, the {refused} is refused\n",
            super::show(c)
        ));
    }
    text
}
