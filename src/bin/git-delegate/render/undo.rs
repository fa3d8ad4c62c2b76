//! The undo and undo-list documents (design §3.11; docs/json.md "Undo"),
//! and the apply document of `apply --from-undo`.

use super::apply::{ApplyDoc, ApplyTask, Conflict};
use super::{document, Text};
use git_delegate::ops::undo::{Entry, Reapply, Report};

document! {
    /// The undo document.
    pub struct UndoDoc {
        apply_id: String,
        batch: String,
        dry_run: bool,
        undone: bool,
        paths: Vec<String>,
        conflicts: Vec<Conflict>,
        kept: Vec<UndoKept>,
        interrupted?: &'static str,
    }
}

document! {
    /// An entry of `kept` of the undo document.
    pub struct UndoKept {
        task: String,
        r#ref: String,
    }
}

impl UndoDoc {
    pub fn new(t: &Text, r: &Report) -> UndoDoc {
        UndoDoc {
            apply_id: r.entry.apply_id.clone(),
            batch: r.entry.batch.clone(),
            dry_run: r.dry_run,
            undone: r.undone,
            paths: t.paths(&r.paths),
            conflicts: Conflict::list(t, &r.conflicts),
            kept: r
                .kept
                .iter()
                .map(|(task, name)| UndoKept {
                    task: task.clone(),
                    r#ref: name.clone(),
                })
                .collect(),
            interrupted: r.interrupted.then_some("finished"),
        }
    }
}

document! {
    /// The undo-list document.
    pub struct UndoList {
        entries: Vec<UndoEntry>,
    }
}

document! {
    /// An entry of `entries` of the undo-list document.
    pub struct UndoEntry {
        apply_id: String,
        batch: String,
        applied_at: String,
        paths: usize,
        undone: bool,
        undone_at: Option<String>,
        tasks: Vec<String>,
        from_undo: Option<String>,
        reapplied_as: Option<String>,
        head: Option<String>,
    }
}

impl UndoList {
    pub fn new(entries: &[Entry]) -> UndoList {
        UndoList {
            entries: entries
                .iter()
                .map(|e| UndoEntry {
                    apply_id: e.apply_id.clone(),
                    batch: e.batch.clone(),
                    applied_at: e.applied_at.clone(),
                    paths: e.paths,
                    undone: e.undone,
                    undone_at: e.undone_at.clone(),
                    tasks: e.tasks.clone(),
                    from_undo: e.from_undo.clone(),
                    reapplied_as: e.reapplied_as.clone(),
                    head: e.head.clone(),
                })
                .collect(),
        }
    }
}

/// The apply document of `apply --from-undo` (design §3.11): its tasks
/// `applied` or `conflict`, no workspace involved.
pub fn reapply_doc(t: &Text, r: &Reapply) -> ApplyDoc {
    let tasks = r
        .tasks
        .iter()
        .map(|l| {
            let mut task = ApplyTask::bare(
                l.task.clone(),
                if l.applied { "applied" } else { "conflict" },
                t.paths(&l.proposed),
                t.paths(&l.applied_paths),
            );
            if !l.applied {
                task.reason = Some(l.reason);
                task.conflicts = Some(Conflict::list(t, &l.conflicts));
                task.proposal_ref = Some(Some(git_delegate::ops::undo::task_ref(
                    &r.from.apply_id,
                    &l.task,
                )));
            }
            task
        })
        .collect();
    let mut doc = ApplyDoc::bare(r.from.batch.clone(), r.dry_run, tasks, t.paths(&r.written));
    doc.apply_id = Some(r.apply_id.clone());
    doc.from_undo = Some(r.from.apply_id.clone());
    if !r.first.is_empty() {
        doc.reapply_first = Some(r.first.clone());
    }
    // No workspace is involved: none could have made any.
    doc.side_effects = Some(Vec::new());
    if r.interrupted {
        doc.interrupted = Some("finished");
    }
    doc
}
