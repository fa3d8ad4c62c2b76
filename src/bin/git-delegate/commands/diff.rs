//! `git delegate diff [TASK...] [--batch BATCH] [--stat | --name-status]
//! [-- PATH...]` (design §3.16): each task's changes against its baseline.
//! The engine (`review::diff`) computes them in object memory; this module
//! prints the patch (coloured and paged on a terminal, as git does), the
//! name-status lines, the stat, or the JSON document. `--source`
//! (`review::source_diff`): what apply would change in the working tree now.

use crate::cli::DiffArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::review::{self, TaskDiff};
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
    let ask = review::Ask {
        batch: args.batch.batch.as_deref(),
        tasks: &args.tasks,
        paths: &args.paths,
        patch,
        paint,
        form,
    };
    if args.source {
        let report = review::source_diff(&source, ask)
            .map_err(|e| super::batch_flag_help(e, &source, &words))?;
        return show_source(ui, &args, report, colour);
    }
    let report =
        review::diff(&source, ask).map_err(|e| super::batch_flag_help(e, &source, &words))?;
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
fn show_source(ui: &Ui, args: &DiffArgs, report: review::SourceDiff, colour: bool) -> Result<i32> {
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
        out.extend_from_slice(stat(t, colour).as_bytes());
    } else {
        out.extend_from_slice(&t.patch);
    }
}

/// `git diff --stat` as git prints it into a pipe (80 columns; coloured
/// as git colours it with `colour`): ` PATH |
/// N +++---` (binary: `Bin OLD -> NEW bytes`), then the summary line. Bars
/// longer than the room left are scaled as git scales them; names are not
/// shortened (git cuts long names to `...tail`).
fn stat(t: &TaskDiff, colour: bool) -> String {
    // git's colours for the graph and a binary file's sizes.
    let (new, old, reset) = if colour {
        ("\x1b[32m", "\x1b[31m", "\x1b[m")
    } else {
        ("", "", "")
    };
    let graph = |c: char, n: usize, set: &str| -> String {
        if n == 0 {
            String::new()
        } else {
            format!("{set}{}{reset}", c.to_string().repeat(n))
        }
    };
    const WIDTH: usize = 80;
    if t.paths.is_empty() {
        return String::new();
    }
    let names: Vec<String> = t
        .paths
        .iter()
        .map(|p| {
            String::from_utf8_lossy(&git_delegate::merge::patch::quote_prefixed(b"", &p.path))
                .into_owned()
        })
        .collect();
    let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let max_change = t
        .paths
        .iter()
        .filter_map(|p| p.lines.map(|(a, r)| a + r))
        .max()
        .unwrap_or(0);
    let binary = t.paths.iter().any(|p| p.lines.is_none());
    let mut number_width = max_change.to_string().len();
    if binary && number_width < 3 {
        number_width = 3;
    }
    let mut graph_width = max_change;
    if name_width + number_width + 6 + graph_width > WIDTH {
        let most = (WIDTH * 3 / 8).saturating_sub(number_width + 6).max(6);
        if graph_width > most {
            graph_width = most;
        }
        if name_width <= WIDTH.saturating_sub(number_width + 6 + graph_width) {
            graph_width = WIDTH.saturating_sub(number_width + 6 + name_width);
        }
    }
    // git's scale_linear: at least one character for a non-zero count.
    let scale = |n: usize| -> usize {
        if max_change <= graph_width || n == 0 {
            n
        } else {
            1 + (n * (graph_width - 1)) / max_change
        }
    };
    let (mut ins, mut del) = (0, 0);
    let mut s = String::new();
    for (p, name) in t.paths.iter().zip(&names) {
        let pad = name_width - name.chars().count();
        s.push_str(&format!(" {name}{} |", " ".repeat(pad)));
        match p.lines {
            Some((a, r)) => {
                ins += a;
                del += r;
                s.push_str(&format!(" {:>number_width$}", a + r));
                if a + r > 0 {
                    let total = scale(a + r);
                    let plus = scale(a).min(total);
                    let minus = total - plus;
                    let minus = if r > 0 { minus.max(1) } else { 0 };
                    s.push(' ');
                    s.push_str(&graph('+', plus, new));
                    s.push_str(&graph('-', minus, old));
                }
                s.push('\n');
            }
            None => s.push_str(&format!(
                " {:>number_width$} {old}{}{reset} -> {new}{}{reset} bytes\n",
                "Bin", p.sizes.0, p.sizes.1
            )),
        }
    }
    let n = t.paths.len();
    s.push_str(&format!(
        " {n} file{} changed",
        if n == 1 { "" } else { "s" }
    ));
    if ins > 0 || del == 0 {
        s.push_str(&format!(
            ", {ins} insertion{}(+)",
            if ins == 1 { "" } else { "s" }
        ));
    }
    if del > 0 || ins == 0 {
        s.push_str(&format!(
            ", {del} deletion{}(-)",
            if del == 1 { "" } else { "s" }
        ));
    }
    s.push('\n');
    s
}
