//! `git delegate diff [TASK...] [--batch BATCH] [--stat | --name-status]
//! [-- PATH...]` (design §3.16): each task's changes against its baseline.
//! The engine (`review::diff`) computes them in object memory; this module
//! prints the patch, the name-status lines, the stat, or the JSON document.

use serde_json::json;

use crate::cli::DiffArgs;
use crate::error::Result;
use crate::review::{self, TaskDiff};
use crate::ui::Ui;

pub fn run(ui: &Ui, args: DiffArgs) -> Result<i32> {
    let source = super::source()?;
    let patch = !ui.json && !args.name_status;
    let report = review::diff(
        &source,
        args.batch.as_deref(),
        &args.tasks,
        &args.paths,
        patch,
    )?;
    if ui.json {
        let tasks: Vec<_> = report
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "paths": t.paths.iter().map(|p| json!({
                        "path": String::from_utf8_lossy(&p.path),
                        "status": status_word(p.status),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        ui.doc(json!({"batch": report.batch, "tasks": tasks}));
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
        if args.name_status {
            for p in &t.paths {
                out.push(p.status as u8);
                out.push(b'\t');
                out.extend_from_slice(&crate::patch::quote_prefixed(b"", &p.path));
                out.push(b'\n');
            }
        } else if args.stat {
            out.extend_from_slice(stat(t).as_bytes());
        } else {
            out.extend_from_slice(&t.patch);
        }
    }
    crate::ui::stdout_bytes(&out);
    Ok(0)
}

/// The JSON word of a status letter (docs/json.md §Diff).
fn status_word(letter: char) -> &'static str {
    match letter {
        'A' => "added",
        'D' => "deleted",
        'T' => "type_changed",
        _ => "modified",
    }
}

/// `git diff --stat` as git prints it into a pipe (80 columns): ` PATH |
/// N +++---` (binary: `Bin OLD -> NEW bytes`), then the summary line. Bars
/// longer than the room left are scaled as git scales them; names are not
/// shortened (git cuts long names to `...tail`).
fn stat(t: &TaskDiff) -> String {
    const WIDTH: usize = 80;
    if t.paths.is_empty() {
        return String::new();
    }
    let names: Vec<String> = t
        .paths
        .iter()
        .map(|p| String::from_utf8_lossy(&crate::patch::quote_prefixed(b"", &p.path)).into_owned())
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
                    s.push_str(&"+".repeat(plus));
                    s.push_str(&"-".repeat(minus));
                }
                s.push('\n');
            }
            None => s.push_str(&format!(
                " {:>number_width$} {} -> {} bytes\n",
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
