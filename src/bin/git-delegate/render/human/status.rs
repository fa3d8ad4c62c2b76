//! The human text of `git delegate status` (design §3.3): each batch's
//! header, lease and task lines, the kept proposals, and each problem in
//! words (the JSON document carries the same words, `problems[].message`).
//!
//! Owns: those words, laid out.
//! Never: prints (`commands::status` does), decides what status shows (the
//! engine's `status::Report` does), or does git work.

use super::{human_bytes, procs_text, show};
use crate::render::style::Ui;
use git_delegate::ops::problems::{Fact, Problem};
use git_delegate::workspace;

/// A problem in `status`'s words.
pub fn message(p: &Problem) -> String {
    let short = p.short();
    match &p.fact {
        Fact::InterruptedPrepare => format!(
            "batch {short} was never completely prepared (its prepare was killed) and holds no work; `git delegate gc` or `git delegate drop {short} --force` removes it"
        ),
        Fact::Stale(state) => format!(
            "batch {short} is stale (lease {}); apply it, `{}`, or `git delegate gc`",
            state.as_str(),
            git_delegate::ops::renew::command(short, *state)
        ),
        Fact::UndoJournal { finishes: true, .. } => format!(
            "the undo of apply {short} was interrupted after it had written its whole result; the next git delegate command that changes things finishes it (`git delegate gc` for one)"
        ),
        Fact::UndoJournal { left, .. } => format!(
            "the undo of apply {short} was interrupted; the next git delegate command that changes things rolls it back{}",
            if left.is_empty() {
                String::new()
            } else {
                format!(
                    " (paths you changed since are left as you left them: {})",
                    left.iter()
                        .map(|l| format!("{}, its original kept at {}", git_delegate::sys::paths::quote(l.path.as_ref()), show(&l.kept)))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        ),
        Fact::Journal { finishes: true, .. } => format!(
            "batch {short} has an interrupted write-back that had written its whole result; the next git delegate command that changes things finishes it (the working tree keeps the result, and the apply is recorded), `git delegate gc` for one"
        ),
        Fact::Journal { left, .. } if left.is_empty() => format!(
            "batch {short} has an interrupted write-back; the next git delegate command that changes things rolls it back, `git delegate gc` for one (a path you changed since is left as you left it, and named)"
        ),
        Fact::Journal { left, .. } => journal_left(short, left),
        Fact::RefMoved { name, to, baseline } => format!(
            "batch {short}: the ref {name} was moved to {to} by someone else (the baseline is {baseline})"
        ),
        Fact::RefMissing {
            name,
            baseline,
            present: true,
        } => format!(
            "batch {short}: the ref {name} was deleted by someone else; the baseline commit {baseline} is still there but unprotected from `git gc`"
        ),
        Fact::RefMissing {
            name,
            baseline,
            present: false,
        } => format!(
            "batch {short}: the ref {name} was deleted and the baseline commit {baseline} is gone; drop the batch"
        ),
        Fact::WorkspaceMissing { task, root } => format!(
            "batch {short} task {task}: the workspace {} is missing; `git delegate drop {short} --force` ends the batch (apply the other tasks first: `git delegate apply {short}`)",
            show(root)
        ),
        Fact::WorkspaceReplaced { task, root, why } => format!(
            "batch {short} task {task}: the workspace {} {why}: it is no longer the workspace prepare made (never read nor removed); `git delegate drop {short} --force` ends the batch (apply the other tasks first: `git delegate apply {short}`)",
            show(root)
        ),
        Fact::WorkspaceUnreadable { task, root } => format!(
            "batch {short} task {task}: the workspace {} cannot be read, so its changes are unknown",
            show(root)
        ),
        Fact::BrokenState { problem } => format!(
            "batch {short}: its state is corrupt: {problem}; remove it with `git delegate drop {} --force` (the changes in its workspaces are saved as proposal refs first)",
            p.batch
        ),
        Fact::ScratchOrphan { message } => message.clone(),
        // design §3.18 "Leftovers".
        Fact::TempFile(t) => format!(
            "a temporary file of git-delegate was left by a command that was killed: {} ({}, last written {} ago); `git delegate gc` removes it",
            show(&t.path),
            human_bytes(t.bytes, "bytes"),
            git_delegate::sys::time::human(t.age_secs as i64)
        ),
        // design §3.3: the trash's deleter.
        Fact::UnattendedTrash(u) => unattended(u),
        // design §3.18 "Before removing a workspace, prove it".
        Fact::LeftAside { task, path, back: true } => format!(
            "batch {short} task {task}: its workspace was left aside at {} by a command killed while it proved the workspace before removing it; `git delegate gc` puts it back at its place (and reclaims it with its batch only if the batch is stale, its work saved first)",
            show(path)
        ),
        Fact::LeftAside { task, path, back: false } => format!(
            "a workspace of batch {short} task {task} was left aside at {} by a command that was killed, and cannot go back to its place (its batch is gone, or something else is there now); nothing deletes it: see what it holds, then remove it yourself (`rm -rf {}`)",
            show(path),
            git_delegate::sys::paths::shell_quote(&path.to_string_lossy())
        ),
        // design §3.18 "Commands from the shared git dir".
        Fact::UntrustedConfig { file, named, help } => format!(
            "{named} in {} is not what you confirmed (the file changed while a batch was open, and a worker's workspace shares it): it does not run; {help}",
            show(file),
        ),
        // design §3.4: gc's leftovers.
        Fact::DeadRegistration { id, folder, .. } => format!(
            "the worktree registration {id} of git-delegate names {}, which is gone, and no batch owns it (`git worktree list` still shows it); `git delegate gc` removes it",
            folder.as_deref().map_or_else(|| "no readable folder".to_string(), show)
        ),
    }
}

/// A rolled-back write-back left paths the user changed as they were.
fn journal_left(short: &str, left: &[git_delegate::writeback::LeftPath]) -> String {
    let named: Vec<String> = left
        .iter()
        .map(|l| {
            format!(
                "{} ({} is kept at {})",
                git_delegate::sys::paths::quote(l.path.as_ref()),
                if l.yours {
                    "your version"
                } else {
                    "its original"
                },
                show(&l.kept)
            )
        })
        .collect();
    format!(
        "batch {short}: rolling back its write-back left paths you changed as you left them: {}; keep yours by deleting the kept file, or move the kept file over the path, then run `git delegate gc`",
        named.join(", ")
    )
}

/// Workspaces in the trash no deleter works on (design §3.3).
fn unattended(u: &git_delegate::workspace::trash::Unattended) -> String {
    format!(
    "{} removed workspace{} in {} (the oldest moved there {} ago) {} no deleter working on {}: {}; `git delegate gc` deletes {} now",
    u.entries,
    if u.entries == 1 { "" } else { "s" },
    show(&u.trash),
    git_delegate::sys::time::human(u.age_secs as i64),
    if u.entries == 1 { "has" } else { "have" },
    if u.entries == 1 { "it" } else { "them" },
    u.why.as_deref().map_or_else(
        || "its background deleter was killed, or gave up on one it could not delete".to_string(),
        crate::render::style::escape_text
    ),
    if u.entries == 1 { "it" } else { "them" },
)
}

/// The human lines of one batch: its header, lease, and one line per task
/// (with its conflicts, verify log and processes).
pub fn batch_text(ui: &Ui, shown: &git_delegate::ops::status::StatusBatch, now: i64) -> String {
    let progress = git_delegate::ops::preparing::progress(&shown.batch);
    let mut text = header_text(ui, &shown.batch, progress, now);
    text.push_str(&tasks_text(shown, progress));
    text
}

/// A batch's header line, its prepare's progress, and its lease.
fn header_text(
    ui: &Ui,
    b: &git_delegate::record::batch::Batch,
    progress: Option<git_delegate::ops::preparing::Progress>,
    now: i64,
) -> String {
    let mut text = String::new();
    let created = git_delegate::sys::time::parse_rfc3339(&b.created_at).unwrap_or(now);
    let state = b.lease.state();
    let expires = b.lease.expires_at_secs() - now;
    text.push_str(&format!(
        "batch {}{}  {}  created {} ago  baseline {}{}\n",
        ui.bold(b.short()),
        b.label
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        b.mode,
        git_delegate::sys::time::human(now - created),
        &b.baseline[..7.min(b.baseline.len())],
        b.source_head
            .as_ref()
            .map(|h| format!(" (on HEAD {})", &h[..7.min(h.len())]))
            .unwrap_or_default(),
    ));
    match progress {
        Some(git_delegate::ops::preparing::Progress::Interrupted) => text.push_str(&format!(
            "  {}: its prepare was killed; no worker was given it; `git delegate gc` removes it\n",
            ui.paint("31", "interrupted")
        )),
        Some(git_delegate::ops::preparing::Progress::Preparing) => text.push_str(&format!(
            "  {}: its prepare (pid {}) still runs\n",
            ui.paint("33", "preparing"),
            b.preparing.as_ref().map(|m| m.pid).unwrap_or_default()
        )),
        None => {}
    }
    let state = match progress {
        Some(git_delegate::ops::preparing::Progress::Interrupted) => {
            git_delegate::record::lease::State::Orphaned
        }
        _ => state,
    };
    let lease_state = match state {
        git_delegate::record::lease::State::Live => ui.paint("32", "live"),
        s => ui.paint("31", s.as_str()),
    };
    // "lease live, expires in 3h", "lease expired 5m ago" (the state
    // said once), "lease orphaned, expired 5m ago".
    let when = git_delegate::sys::time::human(expires);
    text.push_str(&if expires > 0 {
        format!("  lease {lease_state}, expires in {when}\n")
    } else if state == git_delegate::record::lease::State::Expired {
        format!("  lease {lease_state} {when} ago\n")
    } else {
        format!("  lease {lease_state}, expired {when} ago\n")
    });
    if let Some(pid) = b.lease.owner_pid {
        text.push_str(&format!("  owner pid {pid} on {}\n", b.lease.host));
    }
    text
}

/// One line per task of a batch (with its conflicts, verify log and
/// processes); with `--fetch`, whether each remote task has submitted.
fn tasks_text(
    shown: &git_delegate::ops::status::StatusBatch,
    progress: Option<git_delegate::ops::preparing::Progress>,
) -> String {
    let mut text = String::new();
    let (b, counts) = (&shown.batch, &shown.counts);
    let sub = shown.submitted.as_ref().and_then(|r| r.as_ref().ok());
    // The state column: 10 wide, wider for a longer state
    // (`worker_failed`), so every row of the batch lines up.
    let state_width = b
        .tasks
        .iter()
        .map(|t| t.state.as_str().len())
        .max()
        .unwrap_or(0)
        .max(10);
    for (((t, n), health), procs) in b
        .tasks
        .iter()
        .zip(counts)
        .zip(&shown.health)
        .zip(&shown.processes)
    {
        let n = n.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
        let where_ = match health {
            // design §3.14: a remote task has no workspace here.
            _ if t.remote => match sub {
                Some(s) if s.contains(&t.name) => "remote, submitted".to_string(),
                Some(_) => "remote, not submitted yet".to_string(),
                None if !t.state.is_open() => "remote".to_string(),
                None => format!(
                    "remote: {}",
                    git_delegate::ops::remote_workers::join_command(b, &t.name).unwrap_or_default()
                ),
            },
            workspace::Health::Ours => show(&t.root),
            workspace::Health::Missing if !t.state.is_open() => "(workspace removed)".to_string(),
            workspace::Health::Missing => format!("{} (missing)", show(&t.root)),
            workspace::Health::Foreign => {
                format!("{} (replaced; not ours)", show(&t.root))
            }
        };
        text.push_str(&format!(
            "  task {:<8} {:<state_width$} {:>4} changed  {where_}{}\n",
            t.name,
            if progress.is_some() {
                "incomplete"
            } else {
                t.state.as_str()
            },
            n,
            // Not when it only says the state again (`worker_failed`).
            t.reason
                .as_ref()
                .filter(|r| r.as_str() != t.state.as_str())
                .map(|r| format!("  ({r})"))
                .unwrap_or_default()
        ));
        if t.state == git_delegate::record::batch::TaskState::Conflicted {
            // Handed back by a refresh, or left by the worker's own git
            // (design §3.12): the files still unresolved in its workspace.
            let files: Vec<String> = t
                .conflicted_paths
                .iter()
                .map(|p| git_delegate::sys::paths::quote(p.as_bytes().into()))
                .collect();
            if files.is_empty() && *health == workspace::Health::Ours {
                text.push_str(&format!(
                    "      its conflicts are resolved in its workspace: `git delegate apply {}` lands it\n",
                    b.short()
                ));
            } else {
                text.push_str(&format!(
                    "      conflicts for its worker to resolve (edit, then `git add`): {}\n",
                    files.join(", ")
                ));
            }
        }
        if let Some(log) = &t.verify_log {
            // design §3.10: a rejected task names the failing run's log.
            text.push_str(&format!("      verify log: {}\n", show(log)));
        }
        if !procs.is_empty() {
            text.push_str("      processes running inside:\n");
            text.push_str(&procs_text(procs, "        "));
        }
    }
    text
}

/// The human lines for kept proposals (design §3.16 "kept"): name, age,
/// expiry, ref and patch, and how to land one.
fn kept_text(kept: &[git_delegate::record::kept::Kept]) -> String {
    let Some(first) = kept.first() else {
        return String::new();
    };
    let now = git_delegate::sys::time::now();
    let mut text = String::new();
    for k in kept {
        let expiry = if k.expires_at > now {
            format!(
                "gc may remove it in {}",
                git_delegate::sys::time::human(k.expires_at - now)
            )
        } else {
            "gc may remove it now".to_string()
        };
        text.push_str(&format!(
            "kept: {}, saved {} ago, {expiry} ({})\n      ref:   {}\n",
            git_delegate::ops::kept::short_name(kept, k),
            git_delegate::sys::time::human(now.saturating_sub(k.kept_at).max(0)),
            git_delegate::sys::time::rfc3339(k.expires_at),
            k.ref_name,
        ));
        if let Some(p) = &k.patch {
            text.push_str(&format!("      patch: {}\n", show(p)));
        }
    }
    text.push_str(&format!(
        "Land one in this working tree with `git delegate apply --kept {}`; see one with `git show --stat {}`.\n",
        git_delegate::ops::kept::short_name(kept, first),
        first.ref_name
    ));
    text
}

/// What follows the batches: the kept proposals, the undo entries (design
/// §3.11: how many, and how many are not undone) and the idle workspaces of
/// the pool (design §3.20).
pub fn tail_text(report: &git_delegate::ops::status::Report) -> String {
    let mut text = kept_text(&report.kept);
    let (entries, undoable) = report.undo;
    if entries > 0 {
        text.push_str(&format!(
            "{entries} undo entr{} ({undoable} not undone): `git delegate undo --list`\n",
            if entries == 1 { "y" } else { "ies" }
        ));
    }
    if report.idle > 0 {
        text.push_str(&format!(
            "{} idle workspace{} in the pool: `git delegate gc --pool` removes them\n",
            report.idle,
            if report.idle == 1 { "" } else { "s" }
        ));
    }
    text
}
