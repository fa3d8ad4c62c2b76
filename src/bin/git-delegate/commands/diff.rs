//! `git delegate diff [TASK...] [--batch BATCH] [--stat | --name-status]
//! [-- PATH...]` (design §3.16): each task's changes against its baseline.
//! The engine (`look::diff`) computes them in object memory; this module
//! prints the patch (coloured and paged on a terminal, as git does), the
//! name-status lines, the stat, or the JSON document. `--source`
//! (`look::source_diff`): what apply would change in the working tree now.

use crate::cli::DiffArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::look::{self, TaskDiff};
use git_delegate::sys::paths::ByteSlice;

pub fn run(ui: &Ui, args: DiffArgs) -> Result<i32> {
    let source = super::source()?;
    // The command as given, for the help of an ambiguous batch.
    let mut words = vec!["diff"];
    if args.source {
        words.push("--source");
    }
    words.extend(args.tasks.iter().map(String::as_str));
    let patch = !ui.json && !args.name_status;
    // Coloured as git colours a diff: `color.diff` before `color.ui`, and
    // a pager counts as a terminal (design §3.16).
    let colour = !ui.json && crate::ui::use_color_for("color.diff", crate::pager::terminal_like());
    let paint = colour && patch && !args.stat;
    let form = git_delegate::merge::patch::Form {
        full_index: args.full_index,
        binary: args.binary,
    };
    let ask = look::Ask {
        batch: args.batch.batch.as_deref(),
        tasks: &args.tasks,
        paths: &args.paths,
        patch,
        paint,
        form,
    };
    if args.source {
        let report = look::source_diff(&source, ask)
            .map_err(|e| super::batch_flag_help(e, &source, &words))?;
        return show_source(ui, &args, report, colour);
    }
    let report =
        look::diff(&source, ask).map_err(|e| super::batch_flag_help(e, &source, &words))?;
    if ui.json {
        ui.doc(crate::render::diff::DiffDoc::new(
            &report.batch,
            &report.tasks,
        ));
        return Ok(0);
    }
    // One task: exactly what `git diff` prints. Several: each task's
    // output after a `# task NAME` line.
    let headed = report.tasks.len() > 1;
    let mut out = Vec::new();
    for t in &report.tasks {
        if headed {
            out.extend_from_slice(format!("# task {}\n", t.name).as_bytes());
        }
        print(&mut out, &args, t, colour);
    }
    crate::pager::show(&out, !args.no_pager);
    Ok(0)
}

/// `diff --source`: the working tree's changes as `git diff` prints them
/// (or their names, or their stat), with a `note:` line on stderr for each
/// task apply would leave out; with `--json`, every selected task's fate
/// and the paths apply would write.
fn show_source(ui: &Ui, args: &DiffArgs, report: look::SourceDiff, colour: bool) -> Result<i32> {
    if ui.json {
        ui.doc(crate::render::diff::DiffDoc::source(&report));
        return Ok(0);
    }
    for f in report.tasks.iter().filter(|f| f.reason.is_some()) {
        let mut why = f.reason.unwrap_or_default().to_string();
        if let Some(m) = &f.message {
            why.push_str(&format!(": {}", crate::ui::escape_text(m)));
        } else if !f.conflicts.is_empty() {
            let list: Vec<String> = f
                .conflicts
                .iter()
                .map(|c| {
                    format!(
                        "{} ({})",
                        crate::ui::escape_text(&git_delegate::sys::paths::quote(c.path.as_bstr())),
                        c.reason
                    )
                })
                .collect();
            why.push_str(&format!(": {}", list.join(", ")));
        }
        ui.warn(&format!(
            "note: task {} left out, as apply would leave it ({why})\n",
            f.name
        ));
    }
    let mut out = Vec::new();
    print(&mut out, args, &report.changes, colour);
    crate::pager::show(&out, !args.no_pager);
    Ok(0)
}

/// One task's changes into `out` as asked: name-status lines, the stat, or
/// the patch.
fn print(out: &mut Vec<u8>, args: &DiffArgs, t: &TaskDiff, colour: bool) {
    if args.name_status {
        for p in &t.paths {
            out.push(p.status as u8);
            out.push(b'\t');
            out.extend_from_slice(&git_delegate::merge::patch::quote_prefixed(b"", &p.path));
            out.push(b'\n');
        }
    } else if args.stat {
        out.extend_from_slice(crate::render::human::diff::stat(t, colour).as_bytes());
    } else {
        out.extend_from_slice(&t.patch);
    }
}
