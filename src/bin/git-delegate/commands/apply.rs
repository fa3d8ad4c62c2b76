//! `git delegate apply [BATCH]` (design §3.2): parse the arguments, run the
//! transaction (`git_delegate::ops::apply::run`: recording, integration, write-back,
//! clean-up), and render its report.
//!
//! Owns: the apply document (§6.2) and human text; the `kept_workspaces`
//! rendering that drop and gc share.
//! Never: does git, filesystem or process work (the engine's `apply` does).

use crate::cli::ApplyArgs;
use crate::render::apply::ApplyDoc;
use crate::ui::Ui;
use git_delegate::error::{Error, Result};
pub use git_delegate::ops::apply::Kept;
use git_delegate::ops::apply::{Closed, Outcome, Report};
use git_delegate::record::batch::{Batch, TaskState};
use git_delegate::sys::paths::{self, shell_quote, BString, ByteSlice};
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: ApplyArgs, recovered: &mut Recovery) -> Result<i32> {
    let here = super::source()?;
    if let Some(from) = &args.from_undo {
        return super::undo::reapply(ui, here, from, &args, recovered);
    }
    let opts = git_delegate::ops::apply::Options {
        batch: args.batch.batch,
        only: args.only,
        discard: args.discard,
        keep: args.keep,
        strict: args.strict,
        dry_run: args.dry_run,
        verify: args.verify,
        no_verify: args.no_verify,
        verify_timeout_secs: super::parse_ttl_opt(args.verify_timeout.as_deref())?,
        verify_jobs: args.verify_jobs.map(usize::from),
    };
    let shown = super::Shown::new(ui);
    let report = git_delegate::ops::apply::run(here, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    let (b, outcomes) = (&report.batch, &report.outcomes);
    let refreshed = if args.refresh_conflicts {
        refresh_conflicts(b, outcomes)
    } else {
        None
    };

    // Report.
    if ui.json {
        let t = crate::render::Text::default();
        let mut doc = report_doc(&t, &report);
        match &refreshed {
            Some(Ok(r)) => doc.refreshed = Some(crate::render::refresh::RefreshTask::list(&t, r)),
            Some(Err(e)) => {
                doc.refresh_error = Some(crate::render::ErrorBody::new(e.code, &e.message, &e.help))
            }
            None => {}
        }
        ui.doc_after(t.doc(doc), recovered);
    }
    say(ui, &report, args.keep, args.verbose);
    match &refreshed {
        Some(Ok(r)) => ui.say(&super::refresh::human(ui, r)),
        Some(Err(e)) => ui.warn(&format!(
            "git-delegate: the conflicting tasks were not refreshed: {} ({})\n  help: {}\n",
            crate::ui::escape_text(&e.message),
            e.code.as_str(),
            crate::ui::escape_text(&e.help)
        )),
        None => {}
    }
    if report.interrupted {
        super::tell_finished(
            ui,
            &format!("the write-back into {}", super::show(&b.source)),
        );
    }
    // A write-back the filesystem refused: exit 3; a command left out of
    // an unconfirmed delegate.toml: exit 1 (design §3.18).
    let code = if let Some(e) = report.refused_by_filesystem() {
        e.exit_code()
    } else if report.all_ok() && !report.interrupted && report.untrusted.is_none() {
        0
    } else {
        1
    };
    Ok(match refreshed {
        Some(Err(e)) => code.max(e.exit_code()),
        _ => code,
    })
}

/// The whole apply document of `report` (design §6.2, §6.4); `run` embeds it too.
pub(super) fn report_doc(t: &crate::render::Text, report: &Report) -> ApplyDoc {
    let mut doc = ApplyDoc::of_report(t, report);
    doc.warnings = report.remote_left.as_ref().map(super::remote::left_docs);
    doc
}

/// The human text of `report` (stdout) and its clean-up warning (stderr).
pub(super) fn say(ui: &Ui, report: &Report, keep: bool, verbose: bool) {
    let Report {
        batch: b,
        outcomes,
        dry_run,
        kept,
        artifacts_error,
        side_effects,
        apply_id,
        verify,
        remote_left,
        ..
    } = report;
    if let Some(left) = remote_left {
        super::remote::warn_left(ui, left);
    }
    ui.warn(&super::side_effects::git_dir_warning(
        b,
        side_effects,
        *dry_run,
    ));
    if let Some(u) = &report.untrusted {
        ui.warn(&super::side_effects::untrusted_warning(u, *dry_run));
    }
    ui.say(&human(ui, report, keep, verbose));
    ui.say(&super::side_effects::text(
        b,
        side_effects,
        outcomes,
        *dry_run,
    ));
    if let Some(v) = verify {
        ui.say(&verify_text(v));
    }
    if !kept.is_empty() {
        ui.say(&kept_text(kept));
    }
    if let Some(id) = apply_id {
        ui.say(&super::undo::undo_hint(id));
    }
    if let Some(e) = artifacts_error {
        ui.warn(&format!(
            "git-delegate: warning: clean-up was incomplete: {}\n",
            crate::ui::escape_text(&e.message)
        ));
    }
}

/// `apply --refresh-conflicts` (design §3.12): refresh every task this
/// apply left `conflict` (not those whose refreshed conflicts are still
/// unresolved), right after it. `None` when there is none.
fn refresh_conflicts(
    b: &Batch,
    outcomes: &[Outcome],
) -> Option<Result<git_delegate::ops::refresh::Report>> {
    let tasks: Vec<String> = outcomes
        .iter()
        .filter(|o| {
            o.status == TaskState::Conflict
                && o.reason != Some(git_delegate::ops::refresh::UNRESOLVED)
        })
        .map(|o| b.tasks[o.idx].name.clone())
        .collect();
    if tasks.is_empty() {
        return None;
    }
    let run = || -> Result<git_delegate::ops::refresh::Report> {
        let here = super::source()?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?;
        let opts = git_delegate::ops::refresh::Options {
            batch: Some(b.id.clone()),
            tasks,
            cwd,
        };
        git_delegate::ops::refresh::run(here, &opts, &git_delegate::ops::observe::Silent)
    };
    Some(run())
}

/// The human lines for workspaces kept because open batches were prepared in them.
pub fn kept_text(kept: &[Kept]) -> String {
    kept.iter()
        .map(|(task, root, batches)| {
            format!(
                "Kept the workspace of task {task}, {root}: open batch {} was prepared in it and writes back into it.\n\
                 It stays as an ordinary worktree; once that batch is applied or dropped, remove it with `git worktree remove {root}`.\n",
                super::shorts(batches),
                root = super::show(root),
            )
        })
        .collect()
}

/// One line per process: `pid command` (with "(terminal)" for one that has
/// a controlling terminal), indented under a task.
pub(crate) fn procs_text(procs: &[git_delegate::sys::quiesce::Proc], indent: &str) -> String {
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
                    super::show(&b.tasks[i].root)
                )),
                Closed::Foreign => {
                    stays = true;
                    text.push_str(&format!(
                        "Left {} alone: it is no longer the workspace prepare made for task {}.\n",
                        super::show(&b.tasks[i].root),
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
                        super::show(root),
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
            super::show(root),
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

fn human(ui: &Ui, report: &Report, keep: bool, verbose: bool) -> String {
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
            crate::ui::escape_text(o.message.as_deref().unwrap_or(""))
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
                then(&mut d, &crate::ui::escape_text(m));
            }
            d
        }
        // Its workspace, written into after apply read it, is kept (design §3.18).
        TaskState::Discarded if o.reason.is_some() => {
            let mut d = reason_of(o);
            if let Some(m) = &o.message {
                then(&mut d, &crate::ui::escape_text(m));
            }
            d
        }
        TaskState::Rejected | TaskState::Unverified => {
            let mut d = reason_of(o);
            if let Some(log) = &o.verify_log {
                then(&mut d, &format!("log {}", super::show(log)));
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
        text.push_str(&format!("      {}\n", crate::ui::escape_text(m)));
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
    if o.status == TaskState::NotSubmitted {
        // design §3.14: its worker has not run `git delegate submit` yet.
        text.push_str(&format!(
            "      its worker has not submitted yet; it joins with: {}\n",
            git_delegate::ops::remote::join_command(b, &t.name).unwrap_or_default()
        ));
    } else if !o.ok() {
        match t.remote {
            true => text.push_str("      workspace: (remote)\n"),
            false => text.push_str(&format!("      workspace: {}\n", super::show(&t.root))),
        }
        if let Some(p) = &o.patch {
            text.push_str(&format!("      patch:     {}\n", super::show(p)));
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
            text.push_str(&again_hint(b, short, &kept));
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
            text.push_str(&discard_hint(short, &names));
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

/// How a kept task gets applied after all (design §3.16 "Hints"). A task
/// whose work conflicts with another task's or with the source cannot
/// succeed by running apply again (the same lines still differ): `refresh`
/// hands the conflict to its worker, in its workspace (design §3.12), and
/// apply lands it once resolved there. A task with refreshed conflicts not
/// yet resolved waits for its worker. Any other cause (a process, a file in
/// the way, a failed write or verification) is fixed where it is.
fn again_hint(b: &Batch, short: &str, kept: &[&Outcome]) -> String {
    let names = |pick: &dyn Fn(&Outcome) -> bool| -> Vec<String> {
        kept.iter()
            .filter(|o| pick(o))
            .map(|o| shell_quote(&b.tasks[o.idx].name))
            .collect()
    };
    let merge = |o: &Outcome| {
        o.status == TaskState::Conflict
            && matches!(o.reason, Some("merge_conflict") | Some("source_changed"))
    };
    let unresolved = |o: &Outcome| o.reason == Some(git_delegate::ops::refresh::UNRESOLVED);
    // design §3.18: paths git refuses, which only their worker can change.
    // (A remote proposal git would not fetch has none named: its worker
    // submits again.)
    let invalid =
        |o: &Outcome| o.reason == Some(git_delegate::git::validate::REASON) && !o.resubmit;
    // design §3.18 "Follow-through": only an apply that names it lands it.
    let worker_failed = |o: &Outcome| o.status == TaskState::WorkerFailed;
    // design §3.18: written into after apply read it; the rest lands next time.
    let late = |o: &Outcome| o.reason == Some(git_delegate::ops::apply::CHANGED_AFTER_READ);
    let resubmit = |o: &Outcome| o.resubmit;
    let to_refresh = names(&merge);
    let waiting = names(&unresolved);
    let refused = names(&invalid);
    let failed_workers = names(&worker_failed);
    let written_late = names(&late);
    let to_resubmit: Vec<&Outcome> = kept.iter().copied().filter(|o| resubmit(o)).collect();
    let other = names(&|o| {
        !merge(o) && !unresolved(o) && !invalid(o) && !worker_failed(o) && !resubmit(o) && !late(o)
    });
    let mut text = String::new();
    let task_s = |n: &[String]| if n.len() == 1 { "task" } else { "tasks" };
    if !to_refresh.is_empty() {
        text.push_str(&format!(
            "  - hand the conflicts of {} {} back to {} worker{}: `git delegate refresh {} --batch {short}` (its workspace gets your working tree with conflict markers; once the worker has resolved them there and run `git add`, `git delegate apply {short}` lands it);\n",
            task_s(&to_refresh),
            to_refresh.join(", "),
            if to_refresh.len() == 1 { "its" } else { "their" },
            if to_refresh.len() == 1 { "" } else { "s" },
            to_refresh.join(" "),
        ));
    }
    if !waiting.is_empty() {
        text.push_str(&format!(
            "  - {} {}: its worker resolves the conflicts in its workspace (edit, then `git add`), then `git delegate apply {short}` lands it;\n",
            task_s(&waiting),
            waiting.join(", "),
        ));
    }
    if !refused.is_empty() {
        text.push_str(&format!(
            "  - {} {}: git refuses to check out the paths named above, so apply never writes them; have them renamed or removed in the workspace (a remote worker submits again), then run `git delegate apply {short}` again;\n",
            task_s(&refused),
            refused.join(", "),
        ));
    }
    if !failed_workers.is_empty() {
        let one = failed_workers.len() == 1;
        let only: Vec<String> = failed_workers
            .iter()
            .map(|n| format!("--only {n}"))
            .collect();
        text.push_str(&format!(
            "  - {} {}: {} worker{} failed in `git delegate run`, so a plain apply leaves {} out; once you have looked at {} work in {} workspace{}, `git delegate apply {short} {}` lands {};\n",
            task_s(&failed_workers),
            failed_workers.join(", "),
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            if one { "it" } else { "them" },
            if one { "its" } else { "their" },
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            only.join(" "),
            if one { "it" } else { "them" },
        ));
    }
    if !written_late.is_empty() {
        let one = written_late.len() == 1;
        text.push_str(&format!(
            "  - {} {}: {} worker{} still wrote into {} workspace{} after apply read {}; once nothing writes there any more (stop what still runs for {}), `git delegate apply {short}` lands the rest;\n",
            task_s(&written_late),
            written_late.join(", "),
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            if one { "it" } else { "them" },
            if one { "it" } else { "them" },
        ));
    }
    // design §3.14: a remote task has no workspace here; what its worker
    // submitted is what cannot be applied.
    for o in to_resubmit {
        let task = &b.tasks[o.idx].name;
        text.push_str(&format!(
            "  - task {}: what its worker submitted cannot be applied as it is; the worker submits again from its workspace (`git delegate submit` there, or, to start afresh, in the one `{}` makes), then run `git delegate apply {short}` again;\n",
            shell_quote(task),
            git_delegate::ops::remote::join_command(b, task).unwrap_or_default(),
        ));
    }
    if !other.is_empty() {
        text.push_str(&format!(
            "  - {} {}: fix the cause shown above, then run `git delegate apply {short}` again;\n",
            task_s(&other),
            other.join(", "),
        ));
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

/// The human lines for `--verify`: the outcome and each run, by its name
/// (`verify-N`, as its log and its live output name it). The numbers go
/// on from the batch's earlier verifications, so the first need not be 1:
/// the count line says which they are.
fn verify_text(v: &git_delegate::ops::verify::Report) -> String {
    if v.reason == Some("untrusted_config") {
        return format!(
            "Verification ({}): not run (apply.verify is not in the delegate.toml you confirmed)\n",
            crate::ui::escape_text(&v.command)
        );
    }
    let numbers = v.runs.iter().map(|r| r.n);
    let span = match (numbers.clone().min(), numbers.max()) {
        (Some(1), _) | (None, _) => String::new(),
        (Some(a), Some(b)) if a == b => {
            format!(" (verify-{a}: numbered on from this batch's earlier verifications)")
        }
        (Some(a), Some(b)) => format!(
            " (verify-{a} to verify-{b}: numbered on from this batch's earlier verifications)"
        ),
        (Some(_), None) => String::new(),
    };
    let mut text = format!(
        "Verification ({}): {}, {} run{}{span}\n",
        crate::ui::escape_text(&v.command),
        v.outcome.as_str().replace('_', " "),
        v.runs.len(),
        if v.runs.len() == 1 { "" } else { "s" }
    );
    for r in &v.runs {
        let tasks = if r.tasks.is_empty() {
            "(the working tree alone)".to_string()
        } else {
            r.tasks.join(" ")
        };
        let result = match (r.timed_out, r.exit) {
            (true, _) => "timed out".to_string(),
            (false, Some(0)) => "passed".to_string(),
            (false, Some(n)) => format!("failed (exit {n}, log {})", super::show(&r.log)),
            (false, None) => format!("killed by a signal (log {})", super::show(&r.log)),
        };
        text.push_str(&format!("  verify-{}  {tasks}: {result}\n", r.n));
    }
    text
}
