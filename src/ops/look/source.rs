//! `diff --source` (design §3.16): what apply would change in the working
//! tree now, through apply's own integration (`landing::plan`), for the
//! selected tasks together, and what each would become.
//!
//! Owns: the fate of each selected task (`Fate`), the readable workspaces'
//! candidates and their landing in object memory.
//! Never: writes objects, refs, the index, a workspace or the source; takes
//! the lock.

use super::*;
use crate::merge::integrate::{Candidate, Refusal};
use crate::record::batch::TaskState;

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
    let scratch = !crate::workspace::Kind::of_batch(&b).writes_back();
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
pub(super) fn refuse_pending_writeback(source: &Source) -> Result<()> {
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
pub(super) fn readable_workspaces(
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
pub(super) fn candidates(
    source: &Source,
    readable: &[(usize, Task)],
    fates: &mut [Fate],
    mem: &mut gix::Repository,
    (baseline_tree, batch_dir): (ObjectId, &Path),
    filters: &[String],
    form: crate::merge::patch::Form,
) -> Result<Vec<Candidate>> {
    // Processes apply would not stop fail the task, as in its dry run.
    let roots: Vec<PathBuf> = readable.iter().map(|(_, t)| t.root.clone()).collect();
    let running = crate::sys::quiesce::describe_all(&roots);
    let policy = source.config.stop_processes;
    let mut candidates: Vec<Candidate> = Vec::new();
    for ((i, task), procs) in readable.iter().zip(running) {
        if let Some(list) = blocking(policy, &procs) {
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

/// The processes in a workspace apply would not stop under `policy`, as
/// its message lists them (`None`: none).
fn blocking(
    policy: crate::config::StopProcesses,
    procs: &[crate::sys::quiesce::Proc],
) -> Option<String> {
    use crate::config::StopProcesses;
    let blocking: Vec<&crate::sys::quiesce::Proc> = match policy {
        StopProcesses::Terminate => Vec::new(),
        StopProcesses::Background => procs.iter().filter(|p| p.terminal).collect(),
        StopProcesses::Refuse => procs.iter().collect(),
    };
    (!blocking.is_empty()).then(|| {
        blocking
            .iter()
            .map(|p| format!("{} {}", p.pid, p.command))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Plans the landing of `candidates` as apply would, settling each one's
/// fate: the writes the source would get.
pub(super) fn land(
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

pub(super) fn fail(f: &mut Fate, reason: &'static str, message: String) {
    f.status = TaskState::Failed;
    f.reason = Some(reason);
    f.message = Some(message);
}
