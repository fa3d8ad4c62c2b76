//! `git delegate drop BATCH [--force]` (design §3.5): end a batch on purpose.
//! Refuses while tasks hold unapplied changes, or while a workspace is the
//! source of another open batch (an agent prepared one inside it), unless
//! `--force`; never removes a folder that is no longer the workspace prepare
//! made, nor, even with `--force`, one that is the source of an open batch
//! (it is kept as an ordinary worktree). A batch whose `batch.toml` cannot
//! be read is removed only with `--force`, its workspaces' changes saved as
//! proposal refs first (`gc::remove_corrupt`). A batch whose prepare was
//! killed holds no work and goes whole either way (design §3.15). `drop
//! --pool` takes no batch: it empties the pool of idle workspaces (§3.20).

use crate::cli::DropArgs;
use crate::render::gc::{DropDoc, DropRefused};
use crate::render::{KeptWorkspace, Text};
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::git::repo::Source;
use git_delegate::record::batch::{self, Batch};
use git_delegate::writeback::Recovery;

use super::apply::kept_text;
use super::left_alone_text;

pub fn run(ui: &Ui, args: DropArgs, recovered: &mut Recovery) -> Result<i32> {
    let source = super::source()?;
    let _lock = super::lock_and_recover(ui, &source, recovered)?;
    if args.pool {
        return drop_pool(ui, &source, recovered);
    }
    let Some(name) = args.batch.batch.as_deref() else {
        return Err(no_batch_named(&source));
    };
    let b = match batch::choose(batch::list(&source.state_dir())?, Some(name))? {
        batch::Entry::Batch(b) => *b,
        batch::Entry::Broken { id, problem } => {
            return drop_corrupt(ui, &source, &id, &problem, args.force, recovered)
        }
    };
    // An apply verifies it without holding the lock (design §3.10).
    git_delegate::record::busy::refuse_if_busy(&source.state_dir(), &b)?;
    // A batch whose prepare never completed holds no work: it goes whole,
    // with or without --force (design §3.15); one still being prepared only
    // with --force.
    match git_delegate::ops::preparing::progress(&b) {
        Some(git_delegate::ops::preparing::Progress::Preparing) if !args.force => {
            return Err(git_delegate::ops::preparing::refuse(
                &b,
                git_delegate::ops::preparing::Progress::Preparing,
            ))
        }
        Some(_) => return drop_incomplete(ui, &source, &b, recovered),
        None => {}
    }
    let git_delegate::ops::teardown::Blockers {
        unapplied,
        hosting,
        others,
        stashed,
        remote_seen,
        moved,
    } = git_delegate::ops::teardown::blockers(&source, &b)?;
    let found: Vec<std::path::PathBuf> = moved.iter().flat_map(|(_, f)| f.clone()).collect();
    if (!unapplied.is_empty() || !hosting.is_empty()) && !args.force {
        if ui.json {
            let t = Text::default();
            let mut doc = DropRefused::new(&b.id, &unapplied);
            doc.hosts_open_batches =
                (!hosting.is_empty()).then(|| KeptWorkspace::list(&t, &hosting));
            doc.stashed = (!stashed.is_empty()).then(|| DropRefused::stashed(&stashed));
            doc.left_alone = DropRefused::left_alone(&t, &found);
            ui.doc_after(t.doc(doc), recovered);
        }
        let (noun, verb) = if unapplied.len() == 1 {
            ("task", "has")
        } else {
            ("tasks", "have")
        };
        let mut text = String::new();
        if !unapplied.is_empty() {
            text.push_str(&format!(
                "Not dropping batch {}: {noun} {} {verb} changes that were never applied.\n\
                 Apply them with `git delegate apply {}`, or drop anyway with `git delegate drop {} --force`.\n",
                b.short(),
                unapplied.join(", "),
                b.short(),
                b.short()
            ));
        }
        text.push_str(&moved_text(&b, &moved));
        for (task, entry) in &stashed {
            text.push_str(&format!(
                "The work of task {task} is in your stash, {entry} (a worker ran `git stash` in its workspace); it stays there even with --force.\n"
            ));
        }
        for (task, root, batches) in &hosting {
            text.push_str(&format!(
                "Not dropping batch {}: the workspace of task {task}, {}, is the source of open batch {}.\n\
                 Apply or drop that batch first, or drop anyway with `git delegate drop {} --force` (that workspace is then kept as an ordinary worktree).\n",
                b.short(),
                super::show(root),
                super::shorts(batches),
                b.short()
            ));
        }
        ui.say(&text);
        return Ok(1);
    }
    let git_delegate::ops::teardown::Removed {
        workspaces: removed,
        kept,
        refs: refs_removed,
        remote_left,
        unsafe_folders,
        changed,
    } = git_delegate::ops::teardown::remove_batch(&source, &b, &others, &remote_seen, args.force)?;
    if !changed.is_empty() {
        return Ok(refused_changed(ui, &b, &changed, recovered));
    }
    let mut kept = kept;
    if args.force {
        // What may hold a moved workspace's work stays (design §3.18).
        kept.extend(found.into_iter().map(|f| (String::new(), f, Vec::new())));
    }
    let (left_alone, hosting): (Vec<_>, Vec<_>) = kept.into_iter().partition(|k| k.2.is_empty());
    let kept: Vec<std::path::PathBuf> = left_alone.into_iter().map(|k| k.1).collect();
    if ui.json {
        let t = Text::default();
        let mut doc = DropDoc::new(&t, &b.id, removed, refs_removed, &kept, &unsafe_folders);
        doc.kept_workspaces = (!hosting.is_empty()).then(|| KeptWorkspace::list(&t, &hosting));
        doc.warnings = remote_left.as_ref().map(super::remote::left_docs);
        ui.doc_after(t.doc(doc), recovered);
    }
    if let Some(left) = &remote_left {
        super::remote::warn_left(ui, left);
    }
    let mut text = format!(
        "Dropped batch {}: {removed} workspace(s) and {refs_removed} ref(s) removed.\n",
        b.short()
    );
    text.push_str(&left_alone_text(
        "no longer the workspace prepare made",
        &kept,
        &unsafe_folders,
    ));
    text.push_str(&kept_text(&hosting));
    ui.say(&text);
    Ok(0)
}

/// The lines for open tasks whose workspace is not at its place while their
/// work may be elsewhere (design §3.18).
fn moved_text(b: &Batch, moved: &[(String, Vec<std::path::PathBuf>)]) -> String {
    let mut text = String::new();
    for (task, found) in moved {
        let root = b
            .tasks
            .iter()
            .find(|t| &t.name == task)
            .map(|t| t.root.clone())
            .unwrap_or_default();
        if found.is_empty() {
            text.push_str(&format!(
                "The workspace of task {task} is not at {}, and its batch folder is gone: if it was moved, its work went with it. Move it back to apply it; if you removed it, drop anyway with `git delegate drop {} --force`.\n",
                super::show(&root),
                b.short()
            ));
        } else {
            let list: Vec<String> = found.iter().map(|f| super::show(f)).collect();
            text.push_str(&format!(
                "The workspace of task {task} is not at {}, but {} holds a workspace of it, with its work: move it back (`mv {} {}`) and apply it; `git delegate drop {} --force` leaves {} alone.\n",
                super::show(&root),
                list.join(", "),
                git_delegate::sys::paths::shell_quote(&found[0].to_string_lossy()),
                git_delegate::sys::paths::shell_quote(&root.to_string_lossy()),
                b.short(),
                if found.len() == 1 { "it" } else { "them" },
            ));
        }
    }
    text
}

/// Drop stopped: workspaces written into after drop read them were kept
/// (design §3.18), so the batch stays (exit 1).
fn refused_changed(
    ui: &Ui,
    b: &Batch,
    changed: &[(String, Option<std::path::PathBuf>)],
    recovered: &Recovery,
) -> i32 {
    let names: Vec<String> = changed.iter().map(|(t, _)| t.clone()).collect();
    if ui.json {
        let t = Text::default();
        let mut doc = DropRefused::new(&b.id, &names);
        doc.changed_after_read = Some(names.clone());
        let aside: Vec<std::path::PathBuf> =
            changed.iter().filter_map(|(_, p)| p.clone()).collect();
        doc.left_alone = DropRefused::left_alone(&t, &aside);
        ui.doc_after(t.doc(doc), recovered);
    }
    let mut text = format!(
        "Not dropping batch {}: {} {} written into after drop read {} (a worker still writes there), so {} kept with the batch.\n",
        b.short(),
        if names.len() == 1 { "the workspace of task" } else { "the workspaces of tasks" },
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 { "it is" } else { "they are" },
    );
    for (task, aside) in changed {
        if let Some(p) = aside {
            text.push_str(&format!(
                "The workspace of task {task} could not go back to its place (something is there now) and waits at {}: move what is there out of the way; the next git delegate command puts it back.\n",
                super::show(p)
            ));
        }
    }
    text.push_str(&format!(
        "Once nothing writes there any more, apply the work with `git delegate apply {}`, or drop anyway with `git delegate drop {} --force`.\n",
        b.short(),
        b.short()
    ));
    ui.say(&text);
    1
}

/// `drop --pool` (design §3.20): every idle workspace of the pool removed.
fn drop_pool(ui: &Ui, source: &Source, recovered: &mut Recovery) -> Result<i32> {
    let trimmed = git_delegate::ops::gc::empty_pool(source)?;
    if ui.json {
        let t = Text::default();
        let doc = crate::render::gc::DropPoolDoc::new(trimmed.removed, trimmed.bytes);
        ui.doc_after(t.doc(doc), recovered);
    }
    ui.say(&format!(
        "Emptied the pool: {} idle workspace{} removed.\n",
        trimmed.removed,
        if trimmed.removed == 1 { "" } else { "s" }
    ));
    Ok(0)
}

/// Drop a batch whose state cannot be read: with `--force`, remove what is
/// provably its own, saving its workspaces' changes first; without, refuse
/// (exit 1): which tasks hold unapplied changes is unknown.
fn drop_corrupt(
    ui: &Ui,
    source: &Source,
    id: &str,
    problem: &str,
    force: bool,
    recovered: &Recovery,
) -> Result<i32> {
    let short = batch::short(id);
    if !force {
        if ui.json {
            let mut doc = DropRefused::new(id, &[]);
            doc.corrupt = Some(true);
            ui.doc_after(Text::default().doc(doc), recovered);
        }
        ui.say(&format!(
            "Not dropping batch {short}: its state is corrupt ({problem}), so which of its tasks hold unapplied changes is unknown.\n\
             `git delegate drop {id} --force` removes it, saving the changes in its workspaces as proposal refs first.\n"
        ));
        return Ok(1);
    }
    let r = git_delegate::ops::gc::remove_corrupt(source, id)?;
    if ui.json {
        let t = Text::default();
        let mut doc = DropDoc::new(
            &t,
            id,
            r.workspaces_removed,
            r.refs_removed,
            &r.left_alone,
            &r.unsafe_folders,
        );
        doc.corrupt = Some(true);
        doc.rescued = Some(DropDoc::rescued(&t, &r.rescued));
        doc.refs_kept = Some(r.refs_kept.clone());
        ui.doc_after(t.doc(doc), recovered);
    }
    let mut text = format!(
        "Dropped batch {short} (its state was corrupt): {} workspace(s) and {} ref(s) removed.\n",
        r.workspaces_removed, r.refs_removed
    );
    for x in &r.rescued {
        text.push_str(&format!(
            "Task {} had changes ({} path(s)): saved as {} ({})\n",
            x.task,
            x.paths,
            x.ref_name,
            x.patch.as_deref().map_or_else(
                || "as its ref alone, no patch".to_string(),
                |p| format!("patch {}", super::show(p))
            )
        ));
    }
    text.push_str(&super::gc::kept_refs_line(source, &r.refs_kept));
    text.push_str(&left_alone_text(
        "not the workspace prepare made, or its work could not be saved",
        &r.left_alone,
        &r.unsafe_folders,
    ));
    ui.say(&text);
    Ok(0)
}

/// Remove a batch whose prepare never completed, whole.
fn drop_incomplete(ui: &Ui, source: &Source, b: &Batch, recovered: &Recovery) -> Result<i32> {
    let r = git_delegate::ops::preparing::remove_whole(source, b, false)?;
    if ui.json {
        let t = Text::default();
        let mut doc = DropDoc::new(
            &t,
            &b.id,
            r.workspaces,
            r.refs,
            &r.left_alone,
            &r.unsafe_folders,
        );
        doc.stopped_processes = Some(crate::render::gc::DropStopped::list(&r.stopped));
        ui.doc_after(t.doc(doc), recovered);
    }
    let mut text = format!(
        "Dropped the unfinished batch {} (its prepare never completed): {} workspace(s) and {} ref(s) removed.\n",
        b.short(),
        r.workspaces,
        r.refs
    );
    text.push_str(&super::gc::stopped_text(false, r.stopped.iter()));
    text.push_str(&left_alone_text(
        "not a folder prepare made",
        &r.left_alone,
        &r.unsafe_folders,
    ));
    ui.say(&text);
    Ok(0)
}

/// `drop` with no BATCH: dropping ends a batch, so it is never guessed; the
/// error lists the open batches and the command that drops the first.
fn no_batch_named(source: &Source) -> git_delegate::error::Error {
    use git_delegate::error::{Code, Error};
    let open = batch::list_ok(&source.state_dir()).unwrap_or_default();
    let Some(first) = open.first() else {
        return Error::usage(
            Code::Usage,
            "drop needs the batch to end, and this repository has no open batch",
            "run `git delegate status` to see what is left",
        );
    };
    let names: Vec<String> = open
        .iter()
        .map(|b| match &b.label {
            Some(l) => format!("{} ({l})", b.short()),
            None => b.short().to_string(),
        })
        .collect();
    Error::usage(
        Code::Usage,
        format!("drop needs the batch to end; open: {}", names.join(", ")),
        format!(
            "name it by label, id or the first 4 or more characters of its id, e.g. `git delegate drop {}`",
            first.short()
        ),
    )
}
