//! `git delegate gc [--dry-run] [--pool]` (design §3.4): take the lock, roll back
//! interrupted write-backs, reclaim stale batches and leftovers, trim the
//! pool of idle workspaces (design §3.20; `--pool`: all of them) (the engine
//! is `git_delegate::ops::gc`), and report it (design §6.3). A dry run takes no lock and
//! changes nothing.

use crate::cli::GcArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: GcArgs, recovered: &mut Recovery) -> Result<i32> {
    let source = super::source()?;
    let _lock = if args.dry_run {
        None
    } else {
        Some(super::lock_and_recover(ui, &source, recovered)?)
    };
    let report = {
        let _progress = ui.progress("Collecting stale batches");
        git_delegate::ops::gc::run(&source, args.dry_run, args.pool)?
    };
    let code = if report.skipped.is_empty() { 0 } else { 1 };

    if ui.json {
        let t = crate::render::Text::default();
        let warnings = (!report.remote_left.is_empty()).then(|| {
            report
                .remote_left
                .iter()
                .flat_map(super::remote::left_docs)
                .collect()
        });
        let doc = crate::render::gc::GcDoc::new(&t, &report, &recovered.rolled_back, warnings);
        ui.doc_after(t.doc(doc), recovered);
    }
    for left in &report.remote_left {
        super::remote::warn_left(ui, left);
    }
    ui.say(&human(&source, &report));
    Ok(code)
}

fn human(source: &git_delegate::git::repo::Source, r: &git_delegate::ops::gc::Report) -> String {
    let (verb, would) = if r.dry_run {
        ("Would reclaim", "would be ")
    } else {
        ("Reclaimed", "")
    };
    let mut text = String::new();
    if r.dry_run {
        text.push_str("Dry run: nothing was changed.\n");
    }
    for res in &r.rescued {
        text.push_str(&format!(
            "Task {} of batch {} had unapplied changes ({} path(s)): {}saved as {} ({})\n",
            res.task,
            git_delegate::record::batch::short(&res.batch),
            res.paths,
            would,
            res.ref_name,
            res.patch.as_deref().map_or_else(
                || "as its ref alone, no patch".to_string(),
                |p| format!("patch {}", super::show(p))
            ),
        ));
    }
    let nothing = r.batches.is_empty()
        && r.workspaces_removed == 0
        && r.registrations_removed == 0
        && r.refs_removed == 0
        && r.bytes_freed == 0;
    if nothing {
        text.push_str("Nothing to reclaim.\n");
    } else {
        let batches = match r.batches.len() {
            0 => "no stale batch".to_string(),
            1 => format!("stale batch {}", super::shorts(&r.batches)),
            n => format!("{n} stale batches ({})", super::shorts(&r.batches)),
        };
        text.push_str(&format!(
            "{verb} {batches}: {} workspace(s), {} registration(s), {} ref(s), {}.\n",
            r.workspaces_removed,
            r.registrations_removed,
            r.refs_removed,
            bytes(r.bytes_freed)
        ));
    }
    text.push_str(&removed_text(r));
    text.push_str(&kept_text(source, r));
    text
}

/// What else gc found and removed (or leaves): stash entries, undo
/// entries, temporary files, batches whose prepare was killed.
fn removed_text(r: &git_delegate::ops::gc::Report) -> String {
    let mut text = String::new();
    for w in &r.stashed {
        text.push_str(&format!(
            "Batch {}: the work of {} is in your stash, {}; gc leaves it there (see it with `git stash show -p {}`).\n",
            git_delegate::record::batch::short(&w.batch),
            w.task.as_deref().map_or("one of its tasks".to_string(), |t| format!("task {t}")),
            w.stash,
            w.stash,
        ));
    }
    if !r.undo_entries_removed.is_empty() {
        text.push_str(&format!(
            "{} {} undo entr{} (beyond undo.keep and older than gc.keep-failed).\n",
            if r.dry_run { "Would remove" } else { "Removed" },
            r.undo_entries_removed.len(),
            if r.undo_entries_removed.len() == 1 {
                "y"
            } else {
                "ies"
            }
        ));
    }
    if !r.temp_files_removed.is_empty() {
        // design §3.18 "Leftovers".
        let n = r.temp_files_removed.len();
        text.push_str(&format!(
            "{} {n} temporary file{} that killed commands left in the state folder.\n",
            if r.dry_run { "Would remove" } else { "Removed" },
            if n == 1 { "" } else { "s" }
        ));
    }
    if r.idle_workspaces_removed > 0 {
        // design §3.20.
        let n = r.idle_workspaces_removed;
        text.push_str(&format!(
            "{} {n} idle workspace{} of the pool.\n",
            if r.dry_run { "Would remove" } else { "Removed" },
            if n == 1 { "" } else { "s" }
        ));
    }
    for id in &r.incomplete {
        text.push_str(&format!(
            "{} batch {} whole: its prepare was killed before it was complete, so no worker was ever given it and nothing was rescued.\n",
            if r.dry_run { "Would remove" } else { "Removed" },
            git_delegate::record::batch::short(id)
        ));
        text.push_str(&stopped_text(
            r.dry_run,
            r.stopped
                .iter()
                .filter(|s| &s.batch == id)
                .map(|s| &s.process),
        ));
    }
    text
}

/// The setup commands of a killed prepare stopped (or, `dry_run`, that
/// would be) before its batch went, each as PID and command (design
/// §3.20); nothing when there were none. Shared with drop.
pub(super) fn stopped_text<'a>(
    dry_run: bool,
    procs: impl Iterator<Item = &'a git_delegate::sys::quiesce::Proc>,
) -> String {
    let procs: Vec<git_delegate::sys::quiesce::Proc> = procs.cloned().collect();
    if procs.is_empty() {
        return String::new();
    }
    format!(
        "  {} its setup commands that still ran:\n{}",
        if dry_run { "would stop" } else { "stopped" },
        super::apply::procs_text(&procs, "    ")
    )
}

/// The line naming the kept proposal refs `refs` (none: nothing), as gc
/// and drop say it.
pub(super) fn kept_refs_line(source: &git_delegate::git::repo::Source, refs: &[String]) -> String {
    let Some(one) = refs.first() else {
        return String::new();
    };
    let keep = git_delegate::sys::time::human(source.config.keep_failed_secs);
    format!(
        "Kept for {keep} (gc.keep-failed): {} — see one with `git show --stat {one}`, land it in this working tree with `git delegate apply --kept {one}` (`git delegate status` lists them).\n",
        refs.join(", "),
    )
}

/// What gc kept and why: proposal refs, workspaces, folders left alone
/// or refused, batches skipped, write-backs pending.
fn kept_text(
    source: &git_delegate::git::repo::Source,
    r: &git_delegate::ops::gc::Report,
) -> String {
    let mut text = String::new();
    text.push_str(&kept_refs_line(source, &r.refs_kept));
    // Workspaces kept for what no proposal holds: the nested repositories
    // of every one first, then the changed submodules.
    type Held = fn(&git_delegate::ops::gc::KeptWorkspace) -> &[git_delegate::sys::paths::BString];
    let held: [(Held, &str, &str); 2] = [
        (
            |k| &k.nested,
            "it holds git repositories made inside it",
            "which git-delegate never deletes",
        ),
        (
            |k| &k.changed_submodules,
            "it changed submodules",
            "which a proposal cannot hold",
        ),
    ];
    for (paths, what, why) in held {
        for k in r.kept_workspaces.iter().filter(|k| !paths(k).is_empty()) {
            text.push_str(&format!(
                "Task {} of batch {}: {} its workspace {}: {what} ({}), {why}; it {} an ordinary worktree (`git worktree list`).\n",
                k.task,
                git_delegate::record::batch::short(&k.batch),
                if r.dry_run { "would keep" } else { "kept" },
                super::show(&k.root),
                lossy_list(paths(k)),
                if r.dry_run { "would stay" } else { "stays" },
            ));
        }
    }
    text.push_str(&super::left_alone_text(
        "not proven a workspace of a batch whose work is applied or saved",
        r.left_alone
            .iter()
            .filter(|p| !r.kept_workspaces.iter().any(|k| &k.root == *p)),
        &r.unsafe_folders,
    ));
    for k in r.kept_workspaces.iter().filter(|k| !k.batches.is_empty()) {
        text.push_str(&format!(
            "Kept the workspace of task {} of batch {}, {}: it is the source of open batch {}; it {} as an ordinary worktree (`git worktree remove` removes it).\n",
            k.task,
            git_delegate::record::batch::short(&k.batch),
            super::show(&k.root),
            super::shorts(&k.batches),
            if r.dry_run { "would stay" } else { "stays" },
        ));
    }
    for s in &r.skipped {
        text.push_str(&format!(
            "Not reclaimed: {}\n",
            crate::ui::escape_text(&s.message)
        ));
    }
    if r.dry_run && !r.pending_writebacks.is_empty() {
        text.push_str(&format!(
            "Interrupted write-back recorded for batch {}: `git delegate gc` rolls it back (or, past its commit point, finishes it) once its process is gone.\n",
            super::shorts(&r.pending_writebacks)
        ));
    }
    text
}

/// `1.2 MiB freed`
fn bytes(n: u64) -> String {
    format!("{} freed", super::human_bytes(n, "bytes"))
}

/// Relative paths for human text, as their documents write them.
fn lossy_list(list: &[git_delegate::sys::paths::BString]) -> String {
    let list: Vec<String> = list
        .iter()
        .map(|p| git_delegate::sys::paths::doc_bytes(p))
        .collect();
    list.join(", ")
}
