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

/// `git diff --stat`-like lines: ` PATH | N +++---` (binary: `Bin`), then
/// the summary line.
fn stat(t: &TaskDiff) -> String {
    let names: Vec<String> = t
        .paths
        .iter()
        .map(|p| String::from_utf8_lossy(&crate::patch::quote_prefixed(b"", &p.path)).into_owned())
        .collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let (mut ins, mut del) = (0, 0);
    let mut s = String::new();
    for (p, name) in t.paths.iter().zip(&names) {
        match p.lines {
            Some((a, r)) => {
                ins += a;
                del += r;
                let bar = |n: usize, c: &str| c.repeat(n.min(40));
                s.push_str(&format!(
                    " {name:<width$} | {:>4} {}{}\n",
                    a + r,
                    bar(a, "+"),
                    bar(r, "-")
                ));
            }
            None => s.push_str(&format!(" {name:<width$} |  Bin\n")),
        }
    }
    if !t.paths.is_empty() {
        let n = t.paths.len();
        s.push_str(&format!(
            " {n} file{} changed, {ins} insertion{}(+), {del} deletion{}(-)\n",
            if n == 1 { "" } else { "s" },
            if ins == 1 { "" } else { "s" },
            if del == 1 { "" } else { "s" },
        ));
    }
    s
}
