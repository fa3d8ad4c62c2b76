//! `git delegate undo [APPLY] [--list] [--dry-run]` and `git delegate apply
//! --from-undo APPLY` (design §3.11): parse, call the engine (`git_delegate::ops::undo`),
//! render the undo, list and re-apply documents (design §6.4) and text.
//!
//! Owns: those documents and their human text; the hint apply prints.
//! Never: does git, filesystem or process work (the engine's `undo` does).

use crate::cli::{ApplyArgs, UndoArgs};
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::git::repo::Source;
use git_delegate::sys::paths::{self, ByteSlice};
use git_delegate::writeback::Recovery;

fn conflicts_text(c: &[git_delegate::ops::undo::PathConflict]) -> String {
    c.iter()
        .map(|c| format!("  {} ({})\n", paths::quote(c.path.as_bstr()), c.reason))
        .collect()
}

/// The line apply prints after writing: how to take it back.
pub fn undo_hint(id: &str) -> String {
    format!(
        "Apply {} recorded: `git delegate undo` takes it back.\n",
        git_delegate::record::batch::short(id)
    )
}

pub fn run(ui: &Ui, args: UndoArgs, recovered: &mut Recovery) -> Result<i32> {
    let here = super::source()?;
    if args.list {
        return list(ui, &here);
    }
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::undo::undo(
        here,
        args.apply.as_deref(),
        args.dry_run,
        args.force,
        &shown,
    );
    shown.recovered_into(recovered);
    let r = report?;
    let e = &r.entry;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::undo::UndoDoc::new(&t, &r);
        ui.doc_after(t.doc(doc), recovered);
    }
    let mut text = String::new();
    let short = e.short();
    if !r.conflicts.is_empty() {
        text.push_str(&format!(
            "Undo of apply {short} refused: these paths changed since the apply in a way that conflicts with taking it back, so nothing was written:\n"
        ));
        text.push_str(&conflicts_text(&r.conflicts));
        text.push_str("Make those paths hold what the apply wrote again (or what they held before it), then run `git delegate undo` again.\n");
    } else {
        let n = r.paths.len();
        let verb = if r.dry_run { "would write" } else { "wrote" };
        text.push_str(&format!(
            "{} apply {short} of batch {}: {verb} {n} path{} in {}.\n",
            if r.dry_run {
                "Dry run of undo of"
            } else {
                "Undid"
            },
            git_delegate::record::batch::short(&e.batch),
            if n == 1 { "" } else { "s" },
            super::show(&e.source)
        ));
        if !r.kept.is_empty() && !r.dry_run {
            text.push_str("The undone proposals are kept:\n");
            for (t, name) in &r.kept {
                text.push_str(&format!("  task {t}: {name}\n"));
            }
            text.push_str(&format!(
                "Apply them again with `git delegate apply --from-undo {short}`.\n"
            ));
        }
    }
    ui.say(&text);
    if r.interrupted {
        super::tell_finished(ui, &format!("the undo of apply {short}"));
        return Ok(1);
    }
    Ok(if r.conflicts.is_empty() { 0 } else { 1 })
}

fn list(ui: &Ui, here: &Source) -> Result<i32> {
    let entries = git_delegate::ops::undo::list(&here.state_dir());
    if ui.json {
        ui.doc(crate::render::undo::UndoList::new(&entries));
    }
    let mut text = String::new();
    if entries.is_empty() {
        text.push_str(
            "No undo entries: no apply of this repository wrote anything (or gc removed them).\n",
        );
    }
    for e in &entries {
        text.push_str(&format!(
            "{}  {}  batch {}  {} path{}  {}\n",
            e.short(),
            e.applied_at,
            git_delegate::record::batch::short(&e.batch),
            e.paths,
            if e.paths == 1 { "" } else { "s" },
            match (&e.undone, &e.reapplied_as) {
                (true, Some(again)) => format!(
                    "undone, applied again as {}",
                    git_delegate::record::batch::short(again)
                ),
                (true, None) => "undone".to_string(),
                (false, _) => "applied".to_string(),
            }
        ));
    }
    ui.say(&text);
    Ok(0)
}

/// What to run when the undone apply `r.from` conflicts because earlier
/// applies it was made on top of are undone too (design §3.11): each of
/// them again, oldest first, then this one.
fn reapply_first_text(r: &git_delegate::ops::undo::Reapply) -> String {
    let short = git_delegate::record::batch::short;
    let names: Vec<&str> = r.first.iter().map(|id| short(id)).collect();
    let (them, it) = if names.len() == 1 {
        (format!("apply {}", names[0]), "it")
    } else {
        (
            format!("applies {}", names.join(", ")),
            "them, oldest first",
        )
    };
    let mut steps: Vec<String> = names
        .iter()
        .map(|n| format!("`git delegate apply --from-undo {n}`"))
        .collect();
    steps.push(format!(
        "`git delegate apply --from-undo {}`",
        r.from.short()
    ));
    let last = steps.pop().unwrap_or_default();
    format!(
        "This apply was made on top of the work of {them}, undone as well, which wrote the conflicting paths: \
         apply {it} again first: {}, then {last}.\n",
        steps.join(", then ")
    )
}

/// `apply --from-undo APPLY`.
pub fn reapply(ui: &Ui, from: &str, args: &ApplyArgs, recovered: &mut Recovery) -> Result<i32> {
    let here = super::source()?;
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::undo::reapply(here, from, args.strict, args.dry_run, &shown);
    shown.recovered_into(recovered);
    let r = report?;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::undo::reapply_doc(&t, &r);
        ui.doc_after(t.doc(doc), recovered);
    }
    let mut text = format!(
        "{} of undone apply {} (batch {}):\n",
        if r.dry_run {
            "Dry run of applying again"
        } else {
            "Applying again"
        },
        r.from.short(),
        git_delegate::record::batch::short(&r.from.batch)
    );
    for t in &r.tasks {
        if t.applied {
            text.push_str(&format!(
                "  task {}  applied    {} path{} written\n",
                t.task,
                t.applied_paths.len(),
                if t.applied_paths.len() == 1 { "" } else { "s" }
            ));
        } else {
            text.push_str(&format!(
                "  task {}  conflict   {}\n{}",
                t.task,
                t.reason.unwrap_or(""),
                conflicts_text(&t.conflicts)
            ));
        }
    }
    let n = r.written.len();
    text.push_str(&format!(
        "{} {n} path{} in {}.\n",
        if r.dry_run { "Would write" } else { "Wrote" },
        if n == 1 { "" } else { "s" },
        super::show(&r.from.source)
    ));
    if !r.all_ok() && !r.first.is_empty() {
        text.push_str(&reapply_first_text(&r));
    } else if !r.all_ok() && !r.dry_run {
        text.push_str(&format!(
            "The proposals stay kept under refs/pi-delegate/undo/{}/tasks/: fix the conflicting paths and run `git delegate apply --from-undo {}` again.\n",
            r.from.apply_id,
            r.from.short()
        ));
    }
    ui.say(&text);
    if let Some(id) = &r.apply_id {
        ui.say(&undo_hint(id));
    }
    if r.interrupted {
        super::tell_finished(ui, "the write-back of this apply");
        return Ok(1);
    }
    Ok(if r.all_ok() { 0 } else { 1 })
}
