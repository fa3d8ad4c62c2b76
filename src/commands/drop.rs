//! `git delegate drop BATCH [--force]` (SPEC §3.5): end a batch on purpose.
//! Refuses while tasks hold unapplied changes unless `--force`; never removes
//! a folder that is no longer the workspace prepare made. A batch whose
//! prepare was killed holds no work and goes whole either way (SPEC §3.15).

use serde_json::json;

use crate::batch::{self, Batch};
use crate::cli::DropArgs;
use crate::error::Result;
use crate::repo::Source;
use crate::ui::Ui;
use crate::{refs, workspace};

pub fn run(ui: &Ui, args: DropArgs) -> Result<i32> {
    let source = super::source()?;
    let _lock = super::lock_and_recover(ui, &source)?;
    let b = batch::select(batch::list_ok(&source.state_dir())?, Some(&args.batch))?;
    // A batch whose prepare never completed holds no work: it goes whole,
    // with or without --force (SPEC §3.15); one still being prepared only
    // with --force.
    match crate::preparing::progress(&b) {
        Some(crate::preparing::Progress::Preparing) if !args.force => {
            return Err(crate::preparing::refuse(
                &b,
                crate::preparing::Progress::Preparing,
            ))
        }
        Some(_) => return drop_incomplete(ui, &source, &b),
        None => {}
    }
    // A task holds unapplied work when its workspace differs from the
    // baseline, when it ended conflict/failed (its proposal is kept), or when
    // its workspace cannot be read (unknown is never taken for clean).
    let counts = super::status::changed_counts_checked(&source, &b);
    let unapplied: Vec<String> = b
        .tasks
        .iter()
        .zip(&counts)
        .filter(|(t, n)| t.state.is_open() && (**n != Some(0) || t.state != batch::TaskState::Open))
        .map(|(t, _)| t.name.clone())
        .collect();
    if !unapplied.is_empty() && !args.force {
        if ui.json {
            ui.doc(json!({"batch": b.id, "dropped": false, "unapplied": unapplied}));
        }
        let (noun, verb) = if unapplied.len() == 1 {
            ("task", "has")
        } else {
            ("tasks", "have")
        };
        ui.say(&format!(
            "Not dropping batch {}: {noun} {} {verb} changes that were never applied.\n\
             Apply them with `git delegate apply {}`, or drop anyway with `git delegate drop {} --force`.\n",
            b.short(),
            unapplied.join(", "),
            b.short(),
            b.short()
        ));
        return Ok(1);
    }
    let (removed, kept, refs_removed) = remove_batch(&source, &b)?;
    if ui.json {
        ui.doc(json!({
            "batch": b.id,
            "dropped": true,
            "workspaces_removed": removed,
            "refs_removed": refs_removed,
            "left_alone": kept.iter().map(|k| crate::paths::doc_path(k)).collect::<Vec<_>>(),
        }));
    }
    let mut text = format!(
        "Dropped batch {}: {removed} workspace(s) and {refs_removed} ref(s) removed.\n",
        b.short()
    );
    for k in kept {
        text.push_str(&format!(
            "Left alone (no longer the workspace prepare made): {}\n",
            super::show(&k)
        ));
    }
    ui.say(&text);
    Ok(0)
}

/// Remove a batch whose prepare never completed, whole.
fn drop_incomplete(ui: &Ui, source: &Source, b: &Batch) -> Result<i32> {
    let r = crate::preparing::remove_whole(source, b, false)?;
    if ui.json {
        ui.doc(json!({
            "batch": b.id,
            "dropped": true,
            "workspaces_removed": r.workspaces,
            "refs_removed": r.refs,
            "left_alone": r.left_alone.iter().map(|k| crate::paths::doc_path(k)).collect::<Vec<_>>(),
        }));
    }
    let mut text = format!(
        "Dropped the unfinished batch {} (its prepare never completed): {} workspace(s) and {} ref(s) removed.\n",
        b.short(),
        r.workspaces,
        r.refs
    );
    for k in &r.left_alone {
        text.push_str(&format!(
            "Left alone (not a folder prepare made): {}\n",
            super::show(k)
        ));
    }
    ui.say(&text);
    Ok(0)
}

/// Remove a batch's workspaces, refs and state. Returns (workspaces removed,
/// folders left alone, refs removed).
pub fn remove_batch(source: &Source, b: &Batch) -> Result<(usize, Vec<std::path::PathBuf>, usize)> {
    let mut removed = 0;
    let mut kept = Vec::new();
    for t in &b.tasks {
        match workspace::remove(&source.common_dir, &t.root, &t.worktree_id)? {
            workspace::Removal::Removed => removed += 1,
            workspace::Removal::Missing => {}
            workspace::Removal::Foreign => kept.push(t.root.clone()),
        }
    }
    let mut refs_removed = 0;
    for name in refs::list_batch(&source.repo, &b.id)? {
        if refs::delete(&source.repo, &name)? {
            refs_removed += 1;
        }
    }
    let dir = batch::batch_dir(&source.state_dir(), &b.id);
    std::fs::remove_dir_all(&dir)
        .map_err(|e| crate::error::Error::io(format!("cannot remove {}", dir.display()), e))?;
    Ok((removed, kept, refs_removed))
}
