//! `git delegate apply [BATCH]` (design §3.2): parse the arguments, run the
//! transaction (`crate::apply::run`: recording, integration, write-back,
//! clean-up), and render its report.
//!
//! Owns: the apply document (§6.2) and human text; the `kept_workspaces`
//! rendering that drop and gc share.
//! Never: does git, filesystem or process work (the engine's `apply` does).

use serde_json::{json, Value};

pub use crate::apply::Kept;
use crate::apply::Outcome;
use crate::batch::{self, Batch, TaskState};
use crate::cli::ApplyArgs;
use crate::error::{Error, Result};
use crate::paths::{self, BString, ByteSlice};
use crate::ui::Ui;
use crate::writeback::Recovery;

pub fn run(ui: &Ui, args: ApplyArgs, recovered: &mut Recovery) -> Result<i32> {
    if let Some(reference) = args.kept {
        return super::kept::run(ui, reference, args.strict, args.dry_run, recovered);
    }
    let here = super::source()?;
    let opts = crate::apply::Options {
        batch: args.batch,
        only: args.only,
        discard: args.discard,
        keep: args.keep,
        strict: args.strict,
        dry_run: args.dry_run,
    };
    let shown = super::Shown::new(ui);
    let report = crate::apply::run(here, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    let crate::apply::Report {
        batch: b,
        outcomes,
        written,
        batch_open,
        dry_run,
        write_error,
        kept,
        artifacts_error,
    } = &report;
    let (b, batch_open, dry_run) = (b, *batch_open, *dry_run);

    // Report.
    if ui.json {
        let mut doc = document(b, outcomes, written, batch_open, dry_run);
        if let (false, Value::Object(m)) = (kept.is_empty(), &mut doc) {
            m.insert("kept_workspaces".into(), kept_doc(kept));
        }
        ui.doc_after(doc, recovered);
    }
    ui.say(&human(
        ui,
        b,
        outcomes,
        written,
        batch_open,
        dry_run,
        write_error.as_ref(),
    ));
    if !kept.is_empty() {
        ui.say(&kept_text(kept));
    }
    if let Some(e) = artifacts_error {
        ui.warn(&format!(
            "git-delegate: warning: clean-up was incomplete: {}\n",
            crate::ui::escape_text(&e.message)
        ));
    }
    Ok(if report.all_ok() { 0 } else { 1 })
}

/// `kept_workspaces` of the apply, drop and gc documents.
pub fn kept_doc(kept: &[Kept]) -> Value {
    Value::Array(
        kept.iter()
            .map(|(task, root, batches)| {
                json!({"task": task, "workspace": paths::doc_path(root), "batches": batches})
            })
            .collect(),
    )
}

/// The human lines for workspaces kept because open batches were prepared in them.
pub fn kept_text(kept: &[Kept]) -> String {
    kept.iter()
        .map(|(task, root, batches)| {
            let shorts: Vec<&str> = batches.iter().map(|b| batch::short(b)).collect();
            format!(
                "Kept the workspace of task {task}, {root}: open batch {} was prepared in it and writes back into it.\n\
                 It stays as an ordinary worktree; once that batch is applied or dropped, remove it with `git worktree remove {root}`.\n",
                shorts.join(", "),
                root = super::show(root),
            )
        })
        .collect()
}

fn doc_paths(paths: &[BString]) -> Vec<String> {
    paths.iter().map(|p| paths::doc_bytes(p)).collect()
}

/// The apply document (design §6.2).
pub(super) fn document(
    b: &Batch,
    outcomes: &[Outcome],
    written: &[BString],
    batch_open: bool,
    dry_run: bool,
) -> Value {
    let tasks: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            let t = &b.tasks[o.idx];
            let mut v = json!({
                "name": t.name,
                "status": o.status.as_str(),
                "proposed_paths": doc_paths(&o.proposed),
                "applied_paths": doc_paths(&o.applied),
            });
            if o.status == TaskState::Discarded && !dry_run {
                if let Value::Object(m) = &mut v {
                    m.insert("kept".into(), json!(o.kept_until.is_some()));
                    if let Some(until) = &o.kept_until {
                        m.insert("proposal_ref".into(), json!(o.proposal_ref));
                        m.insert(
                            "patch".into(),
                            json!(o.patch.as_deref().map(paths::doc_path)),
                        );
                        m.insert("expires_at".into(), json!(until));
                    }
                }
            }
            if dry_run {
                if let Value::Object(m) = &mut v {
                    m.insert("processes".into(), procs_doc(&o.processes));
                }
            }
            if o.status == TaskState::Discarded && !o.nested_kept.is_empty() {
                if let Value::Object(m) = &mut v {
                    m.insert(
                        "nested_repositories".into(),
                        json!(doc_paths(&o.nested_kept)),
                    );
                    m.insert("workspace".into(), json!(paths::doc_path(&t.root)));
                }
            }
            if !o.ok() {
                if let Value::Object(m) = &mut v {
                    m.insert("reason".into(), json!(o.reason));
                    m.insert(
                        "conflicts".into(),
                        Value::Array(
                            o.conflicts
                                .iter()
                                .map(|c| json!({"path": paths::doc_bytes(&c.path), "reason": c.reason}))
                                .collect(),
                        ),
                    );
                    m.insert("proposal_ref".into(), json!(o.proposal_ref));
                    m.insert(
                        "patch".into(),
                        json!(o.patch.as_deref().map(paths::doc_path)),
                    );
                    m.insert("workspace".into(), json!(paths::doc_path(&t.root)));
                    if let Some(msg) = &o.message {
                        m.insert("message".into(), json!(msg));
                    }
                }
            }
            v
        })
        .collect();
    let stopped: Vec<Value> = outcomes
        .iter()
        .flat_map(|o| {
            let name = &b.tasks[o.idx].name;
            o.stopped
                .iter()
                .map(move |p| json!({"task": name, "pid": p.pid, "command": p.command}))
        })
        .collect();
    json!({
        "batch": b.id,
        "dry_run": dry_run,
        "tasks": tasks,
        "applied_paths": doc_paths(written),
        "batch_open": batch_open,
        "stopped_processes": stopped,
    })
}

/// `[{"pid", "command"}]` for processes found in a workspace.
pub(crate) fn procs_doc(procs: &[git_delegate::quiesce::Proc]) -> Value {
    Value::Array(
        procs
            .iter()
            .map(|p| json!({"pid": p.pid, "command": p.command}))
            .collect(),
    )
}

/// One line per process: `pid command` (with "(terminal)" for one that has
/// a controlling terminal), indented under a task.
pub(crate) fn procs_text(procs: &[git_delegate::quiesce::Proc], indent: &str) -> String {
    procs
        .iter()
        .map(|p| {
            format!(
                "{indent}{} {}{}\n",
                p.pid,
                crate::ui::escape_text(&p.command),
                if p.terminal { " (terminal)" } else { "" }
            )
        })
        .collect()
}

fn human(
    ui: &Ui,
    b: &Batch,
    outcomes: &[Outcome],
    written: &[BString],
    batch_open: bool,
    dry_run: bool,
    write_error: Option<&Error>,
) -> String {
    let mut text = String::new();
    if dry_run {
        text.push_str(&format!(
            "Dry run of apply for batch {} (nothing was changed):\n",
            ui.bold(b.short())
        ));
    } else {
        text.push_str(&format!("Apply of batch {}:\n", ui.bold(b.short())));
    }
    let width = outcomes
        .iter()
        .map(|o| b.tasks[o.idx].name.len())
        .max()
        .unwrap_or(1);
    for o in outcomes {
        let t = &b.tasks[o.idx];
        let status = o.status.as_str();
        let painted = if o.ok() {
            ui.paint("32", status)
        } else {
            ui.paint("31", status)
        };
        let detail = match o.status {
            TaskState::Applied => {
                let n = o.applied.len();
                format!("{n} path{} written", if n == 1 { "" } else { "s" })
            }
            TaskState::Conflict | TaskState::Failed => {
                let mut d = o.reason.unwrap_or("").to_string();
                if !o.conflicts.is_empty() {
                    let list: Vec<String> = o
                        .conflicts
                        .iter()
                        .take(5)
                        .map(|c| {
                            let path = if c.path.is_empty() {
                                "the top folder".to_string()
                            } else {
                                paths::quote(c.path.as_bstr())
                            };
                            format!("{path} ({})", c.reason)
                        })
                        .collect();
                    d.push_str(&format!(": {}", list.join(", ")));
                    if o.conflicts.len() > 5 {
                        d.push_str(&format!(", and {} more", o.conflicts.len() - 5));
                    }
                } else if let Some(m) = &o.message {
                    d.push_str(&format!(": {}", crate::ui::escape_text(m)));
                }
                d
            }
            _ => String::new(),
        };
        let pad = " ".repeat(10usize.saturating_sub(status.len()));
        let line = format!("  task {:<width$}  {painted}{pad} {detail}", t.name);
        text.push_str(line.trim_end());
        text.push('\n');
        if !o.stopped.is_empty() {
            text.push_str("      stopped processes inside its workspace:\n");
            text.push_str(&procs_text(&o.stopped, "        "));
        }
        if dry_run && !o.processes.is_empty() {
            text.push_str("      processes running inside its workspace:\n");
            text.push_str(&procs_text(&o.processes, "        "));
        }
        if let (TaskState::Discarded, Some(until)) = (o.status, &o.kept_until) {
            text.push_str(&format!(
                "      its work is kept until {until} (gc.keep-failed); `git delegate apply --kept {}` brings it back\n",
                o.proposal_ref.as_deref().unwrap_or("REF")
            ));
            if let Some(r) = &o.proposal_ref {
                text.push_str(&format!("      proposal:  {r}\n"));
            }
            if let Some(p) = &o.patch {
                text.push_str(&format!("      patch:     {}\n", super::show(p)));
            }
        }
        if o.status == TaskState::Discarded && !o.nested_kept.is_empty() {
            let list: Vec<String> = o
                .nested_kept
                .iter()
                .map(|p| crate::ui::escape_text(&paths::quote(p.as_bstr())))
                .collect();
            let (one, verb) = match (o.nested_kept.len() == 1, dry_run) {
                (true, false) => (true, "is kept"),
                (false, false) => (false, "is kept"),
                (one, true) => (one, "would be kept"),
            };
            text.push_str(&format!(
                "      its workspace {verb} as an ordinary worktree: it holds the git repositor{} {} its worker made, which no proposal can hold\n\
                 \x20     workspace: {}\n\
                 \x20     when you are done with it: git worktree remove --force {}\n",
                if one { "y" } else { "ies" },
                list.join(", "),
                super::show(&t.root),
                shell_quote(&t.root.to_string_lossy()),
            ));
        }
        if !o.ok() {
            text.push_str(&format!("      workspace: {}\n", super::show(&t.root)));
            if let Some(p) = &o.patch {
                text.push_str(&format!("      patch:     {}\n", super::show(p)));
            }
            if let Some(r) = &o.proposal_ref {
                text.push_str(&format!("      proposal:  {r}\n"));
            }
        }
    }
    if let Some(e) = write_error {
        text.push_str(&format!(
            "Writing back failed, and nothing was changed: {}\n",
            crate::ui::escape_text(&e.message)
        ));
        // Its help says what to do, with the names it knows (design §3.16 "Hints").
        text.push_str(&format!("  {}\n", crate::ui::escape_text(&e.help)));
    }
    let n = written.len();
    let verb = if dry_run { "Would write" } else { "Wrote" };
    text.push_str(&format!(
        "{verb} {n} path{} in {}.\n",
        if n == 1 { "" } else { "s" },
        super::show(&b.source)
    ));
    if batch_open {
        let open: Vec<&str> = b
            .tasks
            .iter()
            .enumerate()
            .filter(|(i, t)| match outcomes.iter().find(|o| o.idx == *i) {
                Some(o) => !o.ok(),
                None => t.state.is_open(),
            })
            .map(|(_, t)| t.name.as_str())
            .collect();
        let short = b.short();
        text.push_str(&format!(
            "Batch {short} {} open for task{} {}.\n",
            if dry_run { "would stay" } else { "stays" },
            if open.len() == 1 { "" } else { "s" },
            open.join(", "),
        ));
        let kept: Vec<&Outcome> = outcomes.iter().filter(|o| !o.ok()).collect();
        if !kept.is_empty() && !dry_run {
            text.push_str("For each of those, either:\n");
            // hint: refresh
            text.push_str(&format!(
                "  - fix the cause (or make the work fit in the workspace), then run `git delegate apply {short}` again;\n"
            ));
            // No `git apply --3way PATCH` line: it fails ("does not match
            // index") whenever the user's index differs from the file
            // (design §3.16 "Hints").
            // `--discard` saves the work first: a task whose workspace could
            // not be snapshotted cannot be given up that way.
            let names: Vec<&str> = kept
                .iter()
                .filter(|o| o.reason != Some("snapshot_failed"))
                .map(|o| b.tasks[o.idx].name.as_str())
                .collect();
            text.push_str(&discard_hint(short, &names));
        }
    } else if !dry_run {
        text.push_str(&format!("Batch {} is done and removed.\n", b.short()));
    }
    text
}

/// The command that gives the work of the tasks `names` up (design §3.16
/// "Hints"): one `--discard` per task; naming only some of them applies the
/// others again with it.
fn discard_hint(short: &str, names: &[&str]) -> String {
    let flags: Vec<String> = names
        .iter()
        .map(|n| format!("--discard {}", shell_quote(n)))
        .collect();
    let cmd = format!("git delegate apply {short} {}", flags.join(" "));
    if names.is_empty() {
        String::new()
    } else if names.len() == 1 {
        format!("  - or give its work up: {cmd}\n")
    } else {
        format!("  - or give their work up: {cmd}  (name only those you give up: the others are applied again)\n")
    }
}

/// Quote a string for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"/._-+:@%".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
