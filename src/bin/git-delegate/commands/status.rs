//! `git delegate status` (design §3.3): batches, leases, tasks, problems, and
//! the proposals kept after their task ended (design §3.16 "kept").
//! The report is the engine's (`status::run`: the problems `problems`'
//! facts, the undo entries, with `--fetch` what remote tasks submitted);
//! `render::human::status` words it, `render::batch` makes its document. A
//! batch whose prepare never completed is shown as such (design §3.15).
//!
//! Owns: what status prints, and its exit status (`--check`).
//! Never: does git or filesystem work; words a line itself.

use crate::cli::StatusArgs;
use crate::render::human::status::{batch_text, message, tail_text};
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::status::Report;

pub fn run(ui: &Ui, args: StatusArgs) -> Result<i32> {
    let source = super::source()?;
    let report = git_delegate::ops::status::run(&source, args.batch.batch.as_deref(), args.fetch)?;
    let problems = &report.problems;
    let tail = tail_text(&report);
    if !report.any && problems.is_empty() {
        // The fast path (design §3.3: no batches, well under 20 ms).
        if ui.json {
            ui_doc(ui, &source, &report);
        } else if !args.check {
            ui.say(&format!("No batches.\n{tail}"));
        }
        return Ok(0);
    }
    let code = if args.check && !problems.is_empty() {
        1
    } else {
        0
    };
    // design §3.14: a remote that cannot be asked is a warning (null).
    for e in report
        .batches
        .iter()
        .filter_map(|s| s.submitted.as_ref()?.as_ref().err())
    {
        ui.warn(&format!(
            "git-delegate: warning: {}
  {}
",
            e.message, e.help
        ));
    }
    if ui.json {
        ui_doc(ui, &source, &report);
        return Ok(code);
    }
    if args.check {
        let text: String = problems
            .iter()
            .map(|p| format!("{}\n", crate::ui::escape_text(&message(p))))
            .collect();
        ui.say(&text);
        return Ok(code);
    }
    if report.batches.is_empty() && problems.is_empty() {
        ui.say(&format!("No batches.\n{tail}"));
        return Ok(0);
    }
    let now = git_delegate::sys::time::now();
    let mut text = String::new();
    for shown in &report.batches {
        text.push_str(&batch_text(ui, shown, now));
    }
    text.push_str(&tail);
    for p in problems {
        text.push_str(&format!(
            "{} {}\n",
            ui.paint("33", "problem:"),
            crate::ui::escape_text(&message(p))
        ));
    }
    ui.say(&text);
    Ok(code)
}

/// Print the status document: `kept`, `undo_entries` and
/// `idle_workspaces` only when there are any.
fn ui_doc(ui: &Ui, source: &git_delegate::git::repo::Source, report: &Report) {
    use crate::render::batch::{BatchDoc, KeptProposal, Seen, StatusDoc, StatusProblem};
    let t = crate::render::Text::default();
    let batches = report
        .batches
        .iter()
        .map(|shown| {
            let seen = Seen {
                counts: Some(&shown.counts),
                processes: Some(&shown.processes),
                submitted: shown.submitted.as_ref().and_then(|r| r.as_ref().ok()),
            };
            crate::render::Embedded::new(BatchDoc::new(&t, source, &shown.batch, seen))
        })
        .collect();
    let problems = report
        .problems
        .iter()
        .map(|p| StatusProblem::new(&t, p, message(p)))
        .collect();
    let (undo_entries, _) = report.undo;
    let doc = StatusDoc {
        batches,
        problems,
        undo_entries: (undo_entries > 0).then_some(undo_entries),
        kept: (!report.kept.is_empty()).then(|| KeptProposal::list(&t, &report.kept)),
        idle_workspaces: (report.idle > 0).then_some(report.idle),
    };
    ui.doc(t.doc(doc));
}
