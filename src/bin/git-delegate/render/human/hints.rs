//! The hints an apply prints for the tasks it keeps (design §3.16 "Hints"):
//! how each can land after all, or be given up.
//!
//! Owns: the wording of those hints; every command they name works as printed.
//! Never: prints, decides a task's fate, or does git work.

use git_delegate::ops::apply::Outcome;
use git_delegate::record::batch::{Batch, TaskState};
use git_delegate::sys::paths::shell_quote;

/// How a kept task gets applied after all (design §3.16 "Hints"). A task
/// whose work conflicts with another task's or with the source cannot
/// succeed by running apply again (the same lines still differ): `refresh`
/// hands the conflict to its worker, in its workspace (design §3.12), and
/// apply lands it once resolved there. A task with refreshed conflicts not
/// yet resolved waits for its worker. Any other cause (a process, a file in
/// the way, a failed write or verification) is fixed where it is.
pub fn again_hint(b: &Batch, short: &str, kept: &[&Outcome]) -> String {
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
    text.push_str(&worker_lines(&failed_workers, &written_late, short));
    // design §3.14: a remote task has no workspace here; what its worker
    // submitted is what cannot be applied.
    for o in to_resubmit {
        let task = &b.tasks[o.idx].name;
        text.push_str(&format!(
            "  - task {}: what its worker submitted cannot be applied as it is; the worker submits again from its workspace (`git delegate submit` there, or, to start afresh, in the one `{}` makes), then run `git delegate apply {short}` again;\n",
            shell_quote(task),
            git_delegate::ops::remote_workers::join_command(b, task).unwrap_or_default(),
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

/// The hints for tasks whose worker failed in `git delegate run`, and for
/// those whose worker wrote into its workspace after apply read it.
fn worker_lines(failed_workers: &[String], written_late: &[String], short: &str) -> String {
    let mut text = String::new();
    let task_s = |n: &[String]| if n.len() == 1 { "task" } else { "tasks" };
    if !failed_workers.is_empty() {
        let one = failed_workers.len() == 1;
        let only: Vec<String> = failed_workers
            .iter()
            .map(|n| format!("--only {n}"))
            .collect();
        text.push_str(&format!(
            "  - {} {}: {} worker{} failed in `git delegate run`, so a plain apply leaves {} out; once you have looked at {} work in {} workspace{}, `git delegate apply {short} {}` lands {};\n",
            task_s(failed_workers),
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
            task_s(written_late),
            written_late.join(", "),
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            if one { "its" } else { "their" },
            if one { "" } else { "s" },
            if one { "it" } else { "them" },
            if one { "it" } else { "them" },
        ));
    }
    text
}

/// The command that gives the work of the tasks `names` up (design §3.16
/// "Hints"): one `--discard` per task; naming only some of them applies the
/// others again with it.
pub fn discard_hint(short: &str, names: &[&str]) -> String {
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
