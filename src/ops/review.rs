//! Looking at tasks without touching them (design §3.16): `diff` (each
//! task's workspace against its baseline), `diff --source` (what apply
//! would change in the working tree now, through apply's own integration,
//! `landing::plan`) and `path` (a task's working folder).
//!
//! Owns: selecting tasks for a look, snapshotting their workspaces in
//! object memory only, and finding the task whose workspace holds a folder.
//! Never: writes objects, refs, the index, a workspace or the source; reads
//! a folder that is not the workspace prepare made (`workspace::identify`).

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::diff::PathChange;
use crate::git::repo::Source;
use crate::merge::integrate::{Candidate, PathConflict, Refusal};
use crate::record::batch::{self, Batch, Task, TaskState};

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

/// What one selected task would become in `apply` now (`diff --source`).
pub struct Fate {
    pub name: String,
    /// `Applied` (its changes are in the result), `NoChanges`, `Discarded`
    /// (a scratch batch: its edits never come back), `Conflict` or `Failed`
    /// (left out, as apply would leave it).
    pub status: TaskState,
    /// For `Conflict` and `Failed`: apply's reason word (`merge_conflict`,
    /// `source_changed`, `would_overwrite_untracked`, `write_failed`,
    /// `nested_repository`, `processes_running`, `workspace_missing`,
    /// `snapshot_failed`).
    pub reason: Option<&'static str>,
    /// For `Failed`: what went wrong, for people.
    pub message: Option<String>,
    /// The paths in conflict, with git's word for each.
    pub conflicts: Vec<PathConflict>,
    /// The task's own changes against the baseline (within the path filter).
    pub paths: Vec<Changed>,
}

/// What `diff --source` found: what apply would change in the working tree
/// now, for the selected tasks together.
pub struct SourceDiff {
    pub batch: String,
    pub tasks: Vec<Fate>,
    /// The paths apply would write (within the path filter), sorted, and
    /// (when asked) their patch against the working tree as it is.
    pub changes: TaskDiff,
}

/// `diff --source` (design §3.16): apply's own integration (`landing::plan`:
/// the proposals merged in task order, then with the source as it is now)
/// of the selected tasks' workspaces as they are now, against the source.
/// A task apply would leave out (a conflict, a workspace it cannot read,
/// processes it would not stop, a nested repository) is left out the same
/// way and said so. The batch's own source is the one compared (wherever
/// the command runs). Nothing is written: no lock, no refs, no objects
/// (proposals, the source's snapshot and the merges live in object memory),
/// no index; a left-over write-back is `delegate::writeback_pending`, as
/// for `apply --dry-run`.
pub fn source_diff(here: &Source, ask: Ask<'_>) -> Result<SourceDiff> {
    let b = batch::select_open(&here.state_dir(), ask.batch)?;
    if let Some(p) = crate::ops::preparing::progress(&b) {
        return Err(crate::ops::preparing::refuse(&b, p));
    }
    // Only the drivers its prepare recorded run (design §3.18).
    crate::git::drivers::allow(b.drivers.as_ref());
    let opened;
    let source = if here.root == b.source {
        here
    } else {
        opened = Source::open_recorded(here, &b.source, b.short())?;
        &opened
    };
    refuse_pending_writeback(source)?;
    // In task order, each once, whatever order they were named in: apply
    // integrates in task order.
    let mut selected = select(&b, ask.tasks)?;
    selected.sort_by_key(|t| b.tasks.iter().position(|x| x.name == t.name));
    selected.dedup_by(|x, y| x.name == y.name);
    let filters = ask
        .paths
        .iter()
        .map(|p| resolve(&here.prefix, p))
        .collect::<Result<Vec<String>>>()?;
    let baseline_tree = crate::git::commit::tree_of(&source.repo, &b.baseline)?;
    let mut mem = source.repo.clone().with_object_memory();
    // The source is read and merged in `mem`: only recorded drivers run.
    crate::git::drivers::restrict(&mut mem)?;
    mem.object_cache_size_if_unset(8 << 20);

    let mut fates: Vec<Fate> = selected
        .iter()
        .map(|t| Fate {
            name: t.name.clone(),
            status: TaskState::Open,
            reason: None,
            message: None,
            conflicts: Vec::new(),
            paths: Vec::new(),
        })
        .collect();
    // As apply: a scratch batch's edits never come back.
    let scratch = b.mode == crate::config::Mode::Scratch;
    let readable = readable_workspaces(source, &selected, &mut fates, scratch);
    let batch_dir = batch::batch_dir(&source.state_dir(), &b.id);
    let candidates = candidates(
        source,
        &readable,
        &mut fates,
        &mut mem,
        (baseline_tree, &batch_dir),
        &filters,
        ask.form,
    )?;
    let writes = if candidates.is_empty() {
        Vec::new()
    } else {
        land(source, &mem, baseline_tree, &candidates, &mut fates)?
    };
    let writes = filtered(writes, &filters);
    let (paths, patch) = describe(&mem, &writes, ask.patch, ask.paint, ask.form)?;
    Ok(SourceDiff {
        batch: b.id.clone(),
        tasks: fates,
        changes: TaskDiff {
            name: String::new(),
            paths,
            patch,
        },
    })
}

/// An interrupted write-back left in the source: the working tree may hold
/// part of its result, so what apply would do cannot be said.
fn refuse_pending_writeback(source: &Source) -> Result<()> {
    let pending = crate::writeback::pending(source)?;
    if pending.is_empty() {
        return Ok(());
    }
    let shorts: Vec<&str> = pending.iter().map(|id| batch::short(id)).collect();
    let mut details = serde_json::Map::new();
    details.insert("pending_writebacks".into(), serde_json::json!(pending));
    Err(Error::state(
        Code::WritebackPending,
        format!(
            "an interrupted write-back of batch {} is left over: the working tree may hold part of its result, so diff --source cannot say what apply would do",
            shorts.join(", ")
        ),
        "run `git delegate apply` or `git delegate gc`: they roll it back (or finish it, past its commit point) first; `git delegate status` shows it",
    )
    .with_details(details))
}

/// Each selected workspace that can be read (its index in `selected` and
/// the task at the real path its identity check found); the others fail
/// as `workspace_missing` in `fates`, and a scratch batch's are discarded.
fn readable_workspaces(
    source: &Source,
    selected: &[&Task],
    fates: &mut [Fate],
    scratch: bool,
) -> Vec<(usize, Task)> {
    use crate::workspace::Identity;
    let mut readable: Vec<(usize, Task)> = Vec::new();
    for (i, task) in selected.iter().enumerate() {
        if scratch {
            fates[i].status = TaskState::Discarded;
            continue;
        }
        match crate::workspace::identify(&source.common_dir, task) {
            Identity::Ours { real, .. } => {
                let mut t = (*task).clone();
                t.root = real;
                readable.push((i, t));
            }
            other => {
                let why = match other {
                    Identity::Replaced(why) => format!(
                        "the workspace {} {why}: it is no longer the folder prepare made",
                        task.root.display()
                    ),
                    _ => format!("the workspace {} is missing", task.root.display()),
                };
                fail(&mut fates[i], "workspace_missing", why);
            }
        }
    }
    readable
}

/// The tasks apply would merge, as apply finds them: processes it would
/// not stop, a snapshot that fails, a changed submodule, refused paths and
/// nested repositories settle a task's fate here instead. Each previewed
/// task's own paths go into its fate, its objects into `mem`.
fn candidates(
    source: &Source,
    readable: &[(usize, Task)],
    fates: &mut [Fate],
    mem: &mut gix::Repository,
    (baseline_tree, batch_dir): (ObjectId, &Path),
    filters: &[String],
    form: crate::merge::patch::Form,
) -> Result<Vec<Candidate>> {
    use crate::config::StopProcesses;
    // Processes apply would not stop fail the task, as in its dry run.
    let roots: Vec<PathBuf> = readable.iter().map(|(_, t)| t.root.clone()).collect();
    let running = crate::sys::quiesce::describe_all(&roots);
    let policy = source.config.stop_processes;
    let mut candidates: Vec<Candidate> = Vec::new();
    for ((i, task), procs) in readable.iter().zip(running) {
        let blocking: Vec<&crate::sys::quiesce::Proc> = match policy {
            StopProcesses::Terminate => Vec::new(),
            StopProcesses::Background => procs.iter().filter(|p| p.terminal).collect(),
            StopProcesses::Refuse => procs.iter().collect(),
        };
        if !blocking.is_empty() {
            let list = blocking
                .iter()
                .map(|p| format!("{} {}", p.pid, p.command))
                .collect::<Vec<_>>()
                .join(", ");
            fail(
                &mut fates[*i],
                "processes_running",
                format!("processes apply would not stop run inside the workspace ({list})"),
            );
            continue;
        }
        let preview =
            match crate::merge::proposal::preview(&source.repo, batch_dir, task, baseline_tree)
                .map_err(Error::from)
            {
                Ok(p) => p,
                Err(e) => {
                    fail(&mut fates[*i], "snapshot_failed", e.message.clone());
                    continue;
                }
            };
        // A task that changed a submodule never applies (design §3.15).
        let subs = match crate::workspace::submodules::changed(&source.common_dir, &task.root) {
            Ok(subs) => subs,
            Err(e) => {
                fail(&mut fates[*i], "snapshot_failed", Error::from(e).message);
                continue;
            }
        };
        let submodule_changed = |f: &mut Fate| {
            f.status = TaskState::Conflict;
            f.reason = Some("submodule_changed");
            f.conflicts = subs
                .iter()
                .map(|path| PathConflict {
                    path: path.clone(),
                    reason: "submodule changed".into(),
                })
                .collect();
        };
        let Some(p) = preview else {
            fates[*i].status = TaskState::NoChanges;
            if !subs.is_empty() {
                submodule_changed(&mut fates[*i]);
            }
            continue;
        };
        crate::merge::proposal::add_objects(mem, p.objects);
        let (own, _) = describe(mem, &filtered(p.paths.clone(), filters), false, false, form)?;
        fates[*i].paths = own;
        if !subs.is_empty() {
            submodule_changed(&mut fates[*i]);
            continue;
        }
        // Paths git refuses (design §3.18) and nested repositories: apply
        // refuses the task.
        if let Some((reason, conflicts)) = crate::merge::proposal::refusal(p.invalid, p.nested) {
            let f = &mut fates[*i];
            f.status = TaskState::Conflict;
            f.reason = Some(reason);
            f.conflicts = conflicts;
            continue;
        }
        // A refreshed task merges from its own base, as apply merges it
        // (design §3.12).
        let base = match &task.base {
            Some(own) => Some(crate::git::commit::tree_of(&source.repo, own)?),
            None => None,
        };
        candidates.push(Candidate {
            task: *i,
            tree: p.tree,
            paths: p.paths.into_iter().map(|c| c.path).collect(),
            base,
        });
    }
    Ok(candidates)
}

/// Plans the landing of `candidates` as apply would, settling each one's
/// fate: the writes the source would get.
fn land(
    source: &Source,
    mem: &gix::Repository,
    baseline_tree: ObjectId,
    candidates: &[Candidate],
    fates: &mut [Fate],
) -> Result<Vec<PathChange>> {
    let strict = source.config.strict;
    let plan = crate::merge::landing::plan(source, mem, baseline_tree, candidates, strict, false)?;
    for &i in &plan.applied {
        fates[i].status = TaskState::Applied;
    }
    for r in &plan.refused {
        let f = &mut fates[r.task];
        if r.reason == Refusal::NotWritable {
            f.status = TaskState::Failed;
            f.message = Some("a folder it writes in refuses writing".into());
        } else {
            f.status = TaskState::Conflict;
        }
        f.reason = Some(r.reason.as_str());
        f.conflicts = r.conflicts.clone();
    }
    Ok(plan
        .writes
        .into_iter()
        .map(|w| PathChange {
            path: w.path,
            old: w.old,
            new: w.new,
        })
        .collect())
}

fn fail(f: &mut Fate, reason: &'static str, message: String) {
    f.status = TaskState::Failed;
    f.reason = Some(reason);
    f.message = Some(message);
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
                    crate::ops::remote::join_command(&b, name).unwrap_or_default()
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
