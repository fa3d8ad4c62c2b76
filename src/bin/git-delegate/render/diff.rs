//! The diff document (design §3.16; docs/json.md "Diff") and the path
//! document (docs/json.md "Path").
//!
//! Their paths are written with `String::from_utf8_lossy` and never noted
//! as lossy (`lossy_paths`), as these documents always were.

use super::apply::Conflict;
use super::document;
use git_delegate::ops::look::{Changed, SourceDiff, TaskDiff};

document! {
    /// The diff document, with and without `--source`.
    pub struct DiffDoc {
        batch: String,
        source: bool,
        tasks: Vec<DiffTask>,
        paths?: Vec<DiffPath>,
    }
}

document! {
    /// An entry of `tasks` of the diff document.
    pub struct DiffTask {
        name: String,
        paths: Vec<DiffPath>,
        status?: &'static str,
        reason?: &'static str,
        conflicts?: Vec<Conflict>,
        message?: String,
    }
}

document! {
    /// `{"path", "status"}`: a path changed, in git's words.
    pub struct DiffPath {
        path: String,
        status: &'static str,
    }
}

fn paths(list: &[Changed]) -> Vec<DiffPath> {
    list.iter()
        .map(|p| DiffPath {
            path: String::from_utf8_lossy(&p.path).into_owned(),
            status: status_word(p.status),
        })
        .collect()
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

impl DiffDoc {
    /// `diff`: each task's paths against its baseline.
    pub fn new(batch: &str, tasks: &[TaskDiff]) -> DiffDoc {
        DiffDoc {
            batch: batch.to_string(),
            source: false,
            tasks: tasks
                .iter()
                .map(|t| DiffTask {
                    name: t.name.clone(),
                    paths: paths(&t.paths),
                    status: None,
                    reason: None,
                    conflicts: None,
                    message: None,
                })
                .collect(),
            paths: None,
        }
    }

    /// `diff --source`: each task's fate and the paths apply would write.
    pub fn source(report: &SourceDiff) -> DiffDoc {
        DiffDoc {
            batch: report.batch.clone(),
            source: true,
            tasks: report
                .tasks
                .iter()
                .map(|f| DiffTask {
                    name: f.name.clone(),
                    paths: paths(&f.paths),
                    status: Some(f.status.as_str()),
                    reason: f.reason,
                    conflicts: f.reason.map(|_| {
                        f.conflicts
                            .iter()
                            .map(|c| Conflict {
                                path: String::from_utf8_lossy(&c.path).into_owned(),
                                reason: c.reason.clone(),
                            })
                            .collect()
                    }),
                    message: f.message.clone(),
                })
                .collect(),
            paths: Some(paths(&report.changes.paths)),
        }
    }
}

document! {
    /// The path document.
    pub struct PathDoc {
        path: String,
    }
}

impl PathDoc {
    pub fn new(path: &std::path::Path) -> PathDoc {
        PathDoc {
            path: path.to_string_lossy().into_owned(),
        }
    }
}
