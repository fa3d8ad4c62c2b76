//! Looking at tasks without touching them (design §3.16): `diff` (each
//! task's workspace against its baseline), `diff --source` (what apply
//! would change in the working tree now, through apply's own integration,
//! `landing::plan`) and `path` (a task's working folder).
//!
//! Owns: selecting tasks for a look, snapshotting their workspaces in
//! object memory only, and finding the task whose workspace holds a folder
//! (`diff --source` itself is `source`'s).
//! Never: writes objects, refs, the index, a workspace or the source; reads
//! a folder that is not the workspace prepare made (`workspace::identify`).

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::diff::PathChange;
use crate::git::repo::Source;
use crate::merge::integrate::PathConflict;
use crate::record::batch::{self, Batch, Task};

mod source;
pub use source::{source_diff, Fate, SourceDiff};

/// One task's changes against its baseline.
pub struct TaskDiff {
    pub name: String,
    /// Paths that differ (within the path filter), sorted.
    pub paths: Vec<Changed>,
    /// Those changes as `git diff --full-index --binary` prints them
    /// (only when asked for).
    pub patch: Vec<u8>,
}

/// One changed path.
pub struct Changed {
    /// The path, raw bytes, relative to the repository root.
    pub path: Vec<u8>,
    /// git's `--name-status` letter: A, D, M, or T (file <-> symlink).
    pub status: char,
    /// Lines added and removed (`None`: a binary change); only when the
    /// patch was asked for.
    pub lines: Option<(usize, usize)>,
    /// Sizes in bytes of the old and new content (0: absent), for `--stat`'s
    /// `Bin OLD -> NEW bytes`.
    pub sizes: (u64, u64),
}

fn status_of(c: &PathChange) -> char {
    use gix::objs::tree::EntryKind::Link;
    match (&c.old, &c.new) {
        (None, _) => 'A',
        (_, None) => 'D',
        (Some((a, _)), Some((b, _))) if (*a == Link) != (*b == Link) => 'T',
        _ => 'M',
    }
}

/// Lines added and removed in one path's patch text (`None`: binary).
fn count(patch: &[u8]) -> Option<(usize, usize)> {
    let mut added = 0;
    let mut removed = 0;
    let mut hunks = false;
    for line in patch.split(|&b| b == b'\n') {
        if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files ") {
            return None;
        }
        if line.starts_with(b"@@ ") {
            hunks = true;
        } else if hunks && line.starts_with(b"+") {
            added += 1;
        } else if hunks && line.starts_with(b"-") {
            removed += 1;
        }
    }
    Some((added, removed))
}

/// What `diff` found.
pub struct DiffReport {
    pub batch: String,
    pub tasks: Vec<TaskDiff>,
}

/// What a look ([`diff`], [`source_diff`]) is asked for: the batch
/// (`None`: the only open one), the tasks (empty: every open task), the
/// path filter, whether to render the patch (`patch`), painted (`paint`),
/// and in which form.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub batch: Option<&'a str>,
    pub tasks: &'a [String],
    pub paths: &'a [String],
    pub patch: bool,
    pub paint: bool,
    pub form: crate::merge::patch::Form,
}

/// Each selected task's workspace, as it is now, against the batch's
/// baseline. `tasks` empty: every open task. `paths`: keep only these paths
/// and what is under them (relative to the caller's folder, as git takes
/// `-- PATH`; `source.prefix`). `patch`: render
/// the unified diff too. Nothing is written: the workspace's tree lives in
/// object memory only.
pub fn diff(source: &Source, ask: Ask<'_>) -> Result<DiffReport> {
    let b = batch::select_open(&source.state_dir(), ask.batch)?;
    // Only the drivers its prepare recorded run (design §3.18).
    crate::git::drivers::allow(b.drivers.as_ref());
    let selected = select(&b, ask.tasks)?;
    let filters = ask
        .paths
        .iter()
        .map(|p| resolve(&source.prefix, p))
        .collect::<Result<Vec<String>>>()?;
    let baseline =
        ObjectId::from_hex(b.baseline.as_bytes()).map_err(|e| Error::git("bad baseline id", e))?;
    let baseline_tree = source
        .repo
        .find_commit(baseline)
        .map_err(|e| Error::git("cannot read the baseline commit", e))?
        .tree_id()
        .map_err(|e| Error::git("cannot read the baseline tree", e))?
        .detach();
    let common_dir = source.common_dir.clone();
    let mut out = Vec::new();
    for task in selected {
        match crate::workspace::identify(&common_dir, task) {
            crate::workspace::Identity::Ours { .. } => {}
            crate::workspace::Identity::Missing => {
                return Err(unreadable(task, "is missing".into()))
            }
            crate::workspace::Identity::Replaced(why) => {
                return Err(unreadable(task, why.to_string()))
            }
            crate::workspace::Identity::TooManyOpenFiles(e) => return Err(e),
        }
        let mut view = source.repo.clone().with_object_memory();
        let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
        let (changes, objects) =
            match crate::merge::proposal::preview(&source.repo, &batch_dir, task, baseline_tree)? {
                Some(p) => (p.paths, Some(p.objects)),
                None => (Vec::new(), None),
            };
        if let Some(objects) = objects {
            crate::merge::proposal::add_objects(&mut view, objects);
        }
        let changes = filtered(changes, &filters);
        let (changed, text) = describe(&view, &changes, ask.patch, ask.paint, ask.form)?;
        out.push(TaskDiff {
            name: task.name.clone(),
            paths: changed,
            patch: text,
        });
    }
    Ok(DiffReport {
        batch: b.id,
        tasks: out,
    })
}

/// What `render` asks of [`describe`]: which of `changes` fall under the
/// path filters (from [`resolve`]; none: all).
fn filtered(changes: Vec<PathChange>, filters: &[String]) -> Vec<PathChange> {
    changes
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|p| under(c.path.as_bstr(), p)))
        .collect()
}

/// Each change as a [`Changed`], and (with `patch`) their patch text,
/// painted as `git diff --color` paints it with `paint`.
fn describe(
    view: &gix::Repository,
    changes: &[PathChange],
    patch: bool,
    paint: bool,
    form: crate::merge::patch::Form,
) -> Result<(Vec<Changed>, Vec<u8>)> {
    let mut text = Vec::new();
    let mut changed = Vec::with_capacity(changes.len());
    for c in changes {
        let lines = if patch {
            let one = crate::merge::patch::render_changes(view, std::slice::from_ref(c), form)?;
            let lines = count(&one);
            if paint {
                text.extend_from_slice(&crate::merge::patch::paint_change(view, c, &one)?);
            } else {
                text.extend_from_slice(&one);
            }
            lines
        } else {
            None
        };
        let size = |side: &Option<(gix::objs::tree::EntryKind, ObjectId)>| -> Result<u64> {
            match side {
                Some((_, id)) if patch && lines.is_none() => crate::git::blob::size(view, *id)
                    .map_err(|e| Error::git("cannot read a blob's size", e)),
                _ => Ok(0),
            }
        };
        changed.push(Changed {
            path: c.path.to_vec(),
            status: status_of(c),
            lines,
            sizes: (size(&c.old)?, size(&c.new)?),
        });
    }
    Ok((changed, text))
}

/// `filter` (relative to the caller's folder `prefix`) as a path relative
/// to the repository root, `.` and `..` resolved lexically; empty for the
/// root. One that leaves the working tree is `delegate::usage`.
fn resolve(prefix: &Path, filter: &str) -> Result<String> {
    use std::path::Component;
    let mut parts: Vec<String> = Vec::new();
    for c in prefix.join(filter).components() {
        match c {
            Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir if parts.pop().is_some() => {}
            _ => {
                return Err(Error::usage(
                    Code::Usage,
                    format!("{filter:?} is outside the working tree"),
                    "give paths inside the repository, relative to the current folder",
                ))
            }
        }
    }
    Ok(parts.join("/"))
}

/// Is `path` the path `filter` (from [`resolve`]), or under it? (An empty
/// filter takes everything.)
fn under(path: &BStr, filter: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    let f = filter.as_bytes();
    path == f || (path.starts_with(f) && path.get(f.len()) == Some(&b'/'))
}

fn unreadable(task: &Task, why: String) -> Error {
    Error::state(
        Code::WorkspaceMissing,
        format!(
            "the workspace of task {} ({}) {why}",
            task.name,
            task.root.display()
        ),
        "run `git delegate status` to see the batch; name the other tasks to see theirs",
    )
}

/// The named tasks of `b` (each open), or every open task.
fn select<'a>(b: &'a Batch, names: &[String]) -> Result<Vec<&'a Task>> {
    if names.is_empty() {
        // A remote task's work is on its remote until apply fetches it (design §3.14).
        return Ok(b.open_tasks().filter(|t| !t.remote).collect());
    }
    names
        .iter()
        .map(|n| b.open_task_named(n).map_err(Error::from))
        .collect()
}

/// The working folder of a task (`Task::cwd` with the batch's prefix).
/// With `task` `None`, the task whose workspace holds `cwd`, in any batch
/// of the repository (or of the batch named); `delegate::unknown_task` (exit
/// 2) when `cwd` is in no task's workspace.
pub fn path(
    source: &Source,
    batch_arg: Option<&str>,
    task: Option<&str>,
    cwd: &Path,
) -> Result<PathBuf> {
    if let Some(name) = task {
        let b = batch::select_open(&source.state_dir(), batch_arg)?;
        let t = b.task_named(name)?;
        if t.remote {
            return Err(Error::usage(
                Code::UnknownTask,
                format!("task {name} is remote: its workspace is on its worker's machine"),
                format!(
                    "its worker joins with `{}`",
                    crate::ops::remote_workers::join_command(&b, name).unwrap_or_default()
                ),
            ));
        }
        return Ok(t.cwd(&b.prefix));
    }
    let here = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let batches: Vec<Batch> = match batch_arg {
        Some(_) => vec![batch::select_open(&source.state_dir(), batch_arg)?],
        None => batch::list_ok(&source.state_dir())?,
    };
    for b in &batches {
        // A remote task has no folder here (design §3.14).
        for t in b.tasks.iter().filter(|t| !t.remote) {
            let root = std::fs::canonicalize(&t.root).unwrap_or_else(|_| t.root.clone());
            if here.starts_with(&root) {
                return Ok(t.cwd(&b.prefix));
            }
        }
    }
    Err(Error::usage(
        Code::UnknownTask,
        format!(
            "{} is not inside a task's workspace, and no TASK was named",
            cwd.display()
        ),
        "name the task: `git delegate path TASK` (`git delegate status` lists them)",
    ))
}
