//! The human text of an apply (design §3.2, §3.16 "Hints"): the task table,
//! what clean-up did to the workspaces, the batch's fate and the hints for
//! the tasks it keeps, the verification's runs.
//!
//! Owns: those words, laid out.
//! Never: prints (`commands::apply` does), decides what happened (the
//! engine's report does), or does git work.

use super::{procs_text, show};
use crate::render::style::Ui;
use git_delegate::ops::apply::{Closed, Outcome, Report};
use git_delegate::record::batch::{Batch, TaskState};
use git_delegate::sys::paths::{self, shell_quote, BString, ByteSlice};

/// How many paths of a task the human text lists without `--verbose`.
const PATHS_SHOWN: usize = 20;

/// The paths a task wrote (or would write), one per line, the first
/// [`PATHS_SHOWN`] unless `verbose`, then how many more there are.
fn paths_text(list: &[BString], verbose: bool) -> String {
    let shown = if verbose {
        list.len()
    } else {
        list.len().min(PATHS_SHOWN)
    };
    let mut text: String = list[..shown]
        .iter()
        .map(|p| format!("      {}\n", paths::quote(p.as_bstr())))
        .collect();
    let rest = list.len() - shown;
    if rest > 0 {
        text.push_str(&format!(
            "      ... and {rest} more path{} (--verbose lists them all)\n",
            if rest == 1 { "" } else { "s" }
        ));
    }
    text
}

/// "task 1", "tasks 1, 2, 3".
fn tasks_named(names: &[&str]) -> String {
    format!(
        "task{} {}",
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

/// What clean-up did (or, in a dry run, would do) to the workspaces of the
/// tasks that closed, one statement each: removed, kept by `--keep` (with
/// the command that removes it), already gone, or left alone. Whether any
/// workspace stays.
fn workspaces_text(report: &Report, keep: bool, text: &mut String) -> bool {
    let b = &report.batch;
    let name = |i: usize| b.tasks[i].name.as_str();
    let mut removed: Vec<&str> = Vec::new();
    let mut parked: Vec<&str> = Vec::new();
    let mut kept: Vec<usize> = Vec::new();
    let mut stays = !report.kept.is_empty();
    if report.dry_run {
        stays |= would_close(report, keep, (&mut removed, &mut parked, &mut kept));
    } else {
        stays |= report
            .outcomes
            .iter()
            .any(|o| o.status == TaskState::Discarded && !o.nested_kept.is_empty());
        for &(i, fate) in &report.workspaces {
            match fate {
                Closed::Removed => removed.push(name(i)),
                Closed::Parked => parked.push(name(i)),
                Closed::Kept => kept.push(i),
                Closed::Missing => text.push_str(&format!(
                    "The workspace of task {} was already gone: {}\n",
                    name(i),
                    show(&b.tasks[i].root)
                )),
                Closed::Foreign => {
                    stays = true;
                    text.push_str(&format!(
                        "Left {} alone: it is no longer the workspace prepare made for task {}.\n",
                        show(&b.tasks[i].root),
                        name(i)
                    ));
                }
                Closed::Changed => {
                    // design §3.18 "Before removing a workspace, prove it".
                    stays = true;
                    let root = &b.tasks[i].root;
                    text.push_str(&format!(
                        "Kept the workspace of task {} as an ordinary worktree the batch no longer owns: its worker wrote into it after apply read it: {}\n\
                         \x20 when you are done with it: git worktree remove --force {}\n",
                        name(i),
                        show(root),
                        shell_quote(&root.to_string_lossy()),
                    ));
                }
            }
        }
    }
    let (remove, kept_as) = if report.dry_run {
        ("Would remove", "Would keep")
    } else {
        ("Removed", "Kept")
    };
    if !removed.is_empty() {
        text.push_str(&format!(
            "{remove} the workspace{} of {}.\n",
            if removed.len() == 1 { "" } else { "s" },
            tasks_named(&removed)
        ));
    }
    if !parked.is_empty() {
        // design §3.20: idle in the pool, not deleted; the next prepare reuses it.
        text.push_str(&format!(
            "{} the workspace{} of {} idle in the pool (workspace.pool): the next prepare reuses {}.\n",
            if report.dry_run { "Would park" } else { "Parked" },
            if parked.len() == 1 { "" } else { "s" },
            tasks_named(&parked),
            if parked.len() == 1 { "it" } else { "them" }
        ));
    }
    for &i in &kept {
        stays = true;
        let root = &b.tasks[i].root;
        text.push_str(&format!(
            "{kept_as} the workspace of task {} as an ordinary worktree the batch no longer owns: {}\n",
            name(i),
            show(root),
        ));
        if !report.dry_run {
            text.push_str(&format!(
                "\x20 when you are done with it: git worktree remove --force {}\n",
                shell_quote(&root.to_string_lossy()),
            ));
        }
    }
    stays
}

/// A dry run: the workspaces apply would close, sorted into those it would
/// remove, park and keep. Whether one would stay.
fn would_close<'a>(
    report: &'a Report,
    keep: bool,
    (removed, parked, kept): (&mut Vec<&'a str>, &mut Vec<&'a str>, &mut Vec<usize>),
) -> bool {
    let name = |i: usize| report.batch.tasks[i].name.as_str();
    let mut stays = false;
    // The workspaces apply would close: those of tasks that would end
    // applied, no_changes or discarded (a discarded one holding a
    // nested repository is kept, said above).
    for o in report.outcomes.iter().filter(|o| o.ok()) {
        if o.status == TaskState::Discarded && !o.nested_kept.is_empty() {
            stays = true;
        } else if keep && o.status != TaskState::Discarded {
            kept.push(o.idx);
        } else if report
            .workspaces
            .iter()
            .any(|&(i, fate)| i == o.idx && fate == Closed::Parked)
        {
            // design §3.20: idle in the pool, not removed.
            parked.push(name(o.idx));
        } else {
            removed.push(name(o.idx));
        }
    }
    stays
}

pub fn human(ui: &Ui, report: &Report, keep: bool, verbose: bool) -> String {
    let Report {
        batch: b,
        outcomes,
        written,
        dry_run,
        write_error,
        ..
    } = report;
    let (dry_run, write_error) = (*dry_run, write_error.as_ref());
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
    // The status column: 10 wide, wider when a status is longer
    // (`worker_failed`, `not_submitted`), so every row lines up.
    let status_width = outcomes
        .iter()
        .map(|o| o.status.as_str().len())
        .max()
        .unwrap_or(0)
        .max(10);
    for o in outcomes {
        let t = &b.tasks[o.idx];
        let painted = ui.status_column(o.status.as_str(), o.ok(), status_width);
        let detail = task_detail(o, dry_run);
        let line = format!("  task {:<width$}  {painted} {detail}", t.name);
        text.push_str(line.trim_end());
        text.push('\n');
        text.push_str(&task_notes(b, o, dry_run, verbose));
    }
    if let Some(e) = write_error {
        text.push_str(&format!(
            "Writing back failed, and nothing was changed: {}\n",
            crate::render::style::escape_text(&e.message)
        ));
        // Its help says what to do, with the names it knows (design §3.16 "Hints").
        text.push_str(&format!(
            "  {}\n",
            crate::render::style::escape_text(&e.help)
        ));
    }
    let n = written.len();
    let verb = if dry_run { "Would write" } else { "Wrote" };
    text.push_str(&format!(
        "{verb} {n} path{} in {}.\n",
        if n == 1 { "" } else { "s" },
        show(&b.source)
    ));
    let stays = workspaces_text(report, keep, &mut text);
    text.push_str(&batch_end_text(report, stays));
    text
}

/// What follows a task's status in its line: how many paths, or why not
/// (the reason, the first conflicts or the message, the verify log).
fn task_detail(o: &Outcome, dry_run: bool) -> String {
    // The reason after the status, unless it only says the status again
    // (`worker_failed worker_failed`).
    let reason_of = |o: &Outcome| -> String {
        match o.reason {
            Some(r) if r != o.status.as_str() => r.to_string(),
            _ => String::new(),
        }
    };
    // `reason: more`, or just `more` when there is no reason to show.
    let then = |d: &mut String, more: &str| {
        if !d.is_empty() {
            d.push_str(": ");
        }
        d.push_str(more);
    };
    match o.status {
        TaskState::Applied if o.message.is_some() => {
            crate::render::style::escape_text(o.message.as_deref().unwrap_or(""))
        }
        TaskState::Applied => {
            let n = o.applied.len();
            let s = if n == 1 { "" } else { "s" };
            if dry_run {
                format!("would write {n} path{s}")
            } else {
                format!("{n} path{s} written")
            }
        }
        TaskState::Conflict | TaskState::Failed | TaskState::Open | TaskState::WorkerFailed => {
            let mut d = reason_of(o);
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
                then(&mut d, &list.join(", "));
                if o.conflicts.len() > 5 {
                    d.push_str(&format!(", and {} more", o.conflicts.len() - 5));
                }
            } else if let Some(m) = &o.message {
                then(&mut d, &crate::render::style::escape_text(m));
            }
            d
        }
        // Its workspace, written into after apply read it, is kept (design §3.18).
        TaskState::Discarded if o.reason.is_some() => {
            let mut d = reason_of(o);
            if let Some(m) = &o.message {
                then(&mut d, &crate::render::style::escape_text(m));
            }
            d
        }
        TaskState::Rejected | TaskState::Unverified => {
            let mut d = reason_of(o);
            if let Some(log) = &o.verify_log {
                then(&mut d, &format!("log {}", show(log)));
            }
            d
        }
        _ => String::new(),
    }
}

/// The lines under a task's line: its paths, processes, what is kept of
/// it and where, or how its remote worker joins.
fn task_notes(b: &Batch, o: &Outcome, dry_run: bool, verbose: bool) -> String {
    let t = &b.tasks[o.idx];
    let mut text = String::new();
    if o.status == TaskState::Applied {
        text.push_str(&paths_text(&o.applied, verbose));
    }
    if !o.stopped.is_empty() {
        text.push_str("      stopped processes inside its workspace:\n");
        text.push_str(&procs_text(&o.stopped, "        "));
    }
    if dry_run && !o.processes.is_empty() {
        text.push_str("      processes running inside its workspace:\n");
        text.push_str(&procs_text(&o.processes, "        "));
    }
    // design §3.18: discarded without the proposal git would not fetch.
    if let (TaskState::Discarded, Some(m)) = (o.status, &o.message) {
        text.push_str(&format!("      {}\n", crate::render::style::escape_text(m)));
    }
    if o.status == TaskState::Discarded && o.would_keep {
        text.push_str(
            "      its work would be kept as a proposal ref and patch until gc.keep-failed passes\n",
        );
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
            text.push_str(&format!("      patch:     {}\n", show(p)));
        }
    }
    if o.status == TaskState::Discarded && !o.nested_kept.is_empty() {
        let list: Vec<String> = o
            .nested_kept
            .iter()
            .map(|p| crate::render::style::escape_text(&paths::quote(p.as_bstr())))
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
            show(&t.root),
            shell_quote(&t.root.to_string_lossy()),
        ));
    }
    if o.status == TaskState::NotSubmitted {
        // design §3.14: its worker has not run `git delegate submit` yet.
        text.push_str(&format!(
            "      its worker has not submitted yet; it joins with: {}\n",
            git_delegate::ops::remote_workers::join_command(b, &t.name).unwrap_or_default()
        ));
    } else if !o.ok() {
        match t.remote {
            true => text.push_str("      workspace: (remote)\n"),
            false => text.push_str(&format!("      workspace: {}\n", show(&t.root))),
        }
        if let Some(p) = &o.patch {
            text.push_str(&format!("      patch:     {}\n", show(p)));
        }
        if let Some(r) = &o.proposal_ref {
            text.push_str(&format!("      proposal:  {r}\n"));
        }
    }
    text
}

/// The batch's fate: open for which tasks (and the hints for them), or
/// done; `stays`: a workspace of it stays.
fn batch_end_text(report: &Report, stays: bool) -> String {
    let Report {
        batch: b,
        outcomes,
        batch_open,
        dry_run,
        ..
    } = report;
    let (batch_open, dry_run) = (*batch_open, *dry_run);
    let mut text = String::new();
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
        let kept: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| !o.ok() && o.status != TaskState::NotSubmitted)
            .collect();
        if !kept.is_empty() && !dry_run {
            text.push_str("For each of those, either:\n");
            text.push_str(&super::hints::again_hint(b, short, &kept));
            // design §3.15: the work is outside the source's sparse checkout.
            let mut folders: Vec<String> = kept
                .iter()
                .filter(|o| o.reason == Some("outside_sparse_checkout"))
                .flat_map(|o| o.conflicts.iter())
                .filter_map(|c| {
                    c.path
                        .rsplit_once_str("/")
                        .map(|(d, _)| d.to_str_lossy().into_owned())
                })
                .collect();
            folders.sort();
            folders.dedup();
            if !folders.is_empty() {
                let args: Vec<String> = folders.iter().map(|f| shell_quote(f)).collect();
                text.push_str(&format!(
                    "  - for work outside the sparse checkout: `git sparse-checkout add {}`, then `git delegate apply {short}` again;\n",
                    args.join(" ")
                ));
            }
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
            text.push_str(&super::hints::discard_hint(short, &names));
        }
    } else {
        // Its refs and state go; "removed" alone only when no workspace
        // of it stays either.
        text.push_str(&match (dry_run, stays) {
            (false, false) => format!("Batch {} is done and removed.\n", b.short()),
            (false, true) => format!(
                "Batch {} is done; its refs and state are removed.\n",
                b.short()
            ),
            (true, false) => format!("Batch {} would be done and removed.\n", b.short()),
            (true, true) => format!(
                "Batch {} would be done; its refs and state would be removed.\n",
                b.short()
            ),
        });
    }
    text
}
