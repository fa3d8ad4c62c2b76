//! `git delegate refresh [TASK...] [--batch BATCH]` (design §3.12): parse,
//! run `git_delegate::ops::refresh::run`, render the refresh document (design §6.4) or
//! human text. Also renders the refresh that `apply --refresh-conflicts`
//! runs after the apply.
//! Never: does git, filesystem or process work (the engine's `refresh` does).

use crate::cli::RefreshArgs;
use crate::ui::Ui;
use git_delegate::error::{Error, Result};
use git_delegate::ops::refresh::Report;
use git_delegate::record::batch::TaskState;
use git_delegate::sys::paths;
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: RefreshArgs, recovered: &mut Recovery) -> Result<i32> {
    let here = super::source()?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let opts = git_delegate::ops::refresh::Options {
        batch: args.batch.batch,
        tasks: args.tasks,
        cwd,
    };
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::refresh::run(here, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::refresh::RefreshDoc::new(&t, &report);
        ui.doc_after(t.doc(doc), recovered);
    }
    ui.say(&human(ui, &report));
    if report.interrupted {
        let last = report.tasks.last().map_or("", |t| t.name.as_str());
        super::tell_finished(ui, &format!("the refresh of the workspace of task {last}"));
        return Ok(1);
    }
    Ok(0)
}

/// One line per task, and for a conflicted one what its worker does next.
pub fn human(ui: &Ui, report: &Report) -> String {
    let b = &report.batch;
    let mut text = format!("Refresh of batch {}:\n", ui.bold(b.short()));
    if report.tasks.is_empty() {
        text.push_str("  no open task to refresh\n");
    }
    let width = report.tasks.iter().map(|t| t.name.len()).max().unwrap_or(1);
    for t in &report.tasks {
        let state = if t.unresolved {
            "unresolved"
        } else {
            t.state.as_str()
        };
        let painted = ui.status_column(state, t.state != TaskState::Conflicted, 10);
        let files: Vec<String> = t
            .conflicted
            .iter()
            .map(|p| paths::quote(p.as_ref()))
            .collect();
        let detail = if t.unresolved {
            format!(
                "not refreshed: earlier conflicts are not resolved: {}",
                files.join(", ")
            )
        } else if files.is_empty() {
            "up to date with the source".to_string()
        } else {
            format!("conflicts in {}", files.join(", "))
        };
        text.push_str(&format!("  task {:<width$}  {painted} {detail}\n", t.name));
        if t.state == TaskState::Conflicted {
            if let Some(k) = b.task(&t.name) {
                text.push_str(&format!(
                    "      resolve them in {} (edit, then `git add`), then apply again\n",
                    super::show(&k.root)
                ));
            }
        }
    }
    text
}
