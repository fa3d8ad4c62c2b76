//! Tearing a batch down once it ends (design §3.2 step 5, §3.5): each task's
//! workspace removed (or kept as an ordinary worktree when it is the source
//! of another open batch), then the batch's refs and its state folder.
//! `drop` and apply's clean-up use it whole; `gc` walks the workspaces
//! itself (rescue first, nested repositories, a dry run that only counts,
//! bytes freed) and uses `remove_refs` and `remove_state`; a batch whose
//! prepare never completed goes through `preparing::remove_whole`.
//! `blockers` says what makes `drop` refuse without `--force` (unapplied
//! work, submodules a task changed, work a workspace put in the stash, a
//! workspace hosting an open batch).
//!
//! Owns: the rule that a workspace hosting an open batch is released, never
//! removed; what a removal is proven against (design §3.18 "Before
//! removing a workspace, prove it": `read_tree_of_closed`, and in `drop`
//! an open task's base); which open tasks' work may be elsewhere
//! (`moved_work`: design §3.18 "Never delete what is not proven ours and
//! empty of work"); the order "workspaces (the tasks', then the
//! verification workspaces a killed `apply --verify` left), then refs,
//! then the state folder last".
//! Never: removes a folder that is not the workspace prepare made
//! (`workspace::remove_proven`/`remove_task`/`discard` check its
//! identity), nor, unless the user forced it, one not proven to hold what
//! was read; deletes a discarded task's kept proposal (it runs on
//! gc.keep-failed's clock).

use std::collections::HashMap;
use std::path::PathBuf;

use gix::ObjectId;

use crate::error::Result;
use crate::git::repo::Source;
use crate::record::batch::{self, Batch, Task};
use crate::{git::refs, workspace};

/// A workspace kept because it is the source of open batches (or, with no
/// batches named, left alone because it is no longer the workspace prepare
/// made): (task, folder, batch ids).
pub type Kept = (String, PathBuf, Vec<String>);

/// How a workspace that is ours goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Deleted here.
    Delete,
    /// A large one moved into the trash (one rename), deleted later by a
    /// background process the caller starts (`trash::spawn_purger`).
    Trash,
}

/// What became of one task's workspace.
#[derive(Debug)]
pub enum Fate {
    Removed,
    /// Nothing was there.
    Missing,
    /// Something that is not the workspace prepare made: left alone.
    Foreign,
    /// Ours and the source of these open batches: released (unlocked, still
    /// registered), kept as an ordinary worktree.
    Hosting(Vec<String>),
    /// Written into since it was read (design §3.18 "Before removing a
    /// workspace, prove it"): kept at its place, registered and locked.
    Changed,
    /// Written into since it was read, and its place was taken meanwhile:
    /// it stays aside at this path in the trash, never deleted.
    LeftAside(PathBuf),
}

/// Release the task's workspace and name the open batches among `others`
/// it is the source of, when it is ours and hosts any; `None` otherwise
/// (nothing changed).
pub fn keep_if_hosting(
    source: &Source,
    b: &Batch,
    t: &Task,
    others: &[Batch],
) -> Result<Option<Vec<String>>> {
    let hosted = workspace::hosted_batches(others, t, &b.id);
    if hosted.is_empty() || workspace::health(&source.common_dir, t) != workspace::Health::Ours {
        return Ok(None);
    }
    workspace::release(&source.common_dir, &t.worktree_id)?;
    Ok(Some(hosted))
}

/// Tear one task's workspace down: kept when it hosts open batches among
/// `others`, else removed `way` (only when it is ours), once proven to hold
/// `read`, the tree the caller's last snapshot of it gave (design §3.18
/// "Before removing a workspace, prove it"): written into since, it is
/// kept (`Fate::Changed`). `read` is `None` only for a removal the user
/// forced (`drop --force`): then nothing is proven. With `Way::Trash`, the
/// trash folder used, if any.
pub fn workspace(
    source: &Source,
    b: &Batch,
    t: &Task,
    others: &[Batch],
    way: Way,
    read: Option<&workspace::aside::Read>,
) -> Result<(Fate, Option<PathBuf>)> {
    if let Some(hosted) = keep_if_hosting(source, b, t, others)? {
        return Ok((Fate::Hosting(hosted), None));
    }
    let Some(read) = read else {
        let (removal, trash) = match way {
            Way::Delete => (workspace::remove_task(&source.common_dir, t)?, None),
            Way::Trash => workspace::discard(&source.common_dir, t)?,
        };
        let fate = match removal {
            workspace::Removal::Removed => Fate::Removed,
            workspace::Removal::Missing => Fate::Missing,
            workspace::Removal::Foreign => Fate::Foreign,
        };
        return Ok((fate, trash));
    };
    let in_place = way == Way::Delete;
    let read = match read.stat {
        Some(_) => read.clone(),
        None => read.clone().with_stat(stat_record(source, b, t)),
    };
    Ok(
        match workspace::remove_proven(&source.common_dir, t, &read, in_place)? {
            workspace::Proof::Removed(trash) => (Fate::Removed, trash),
            workspace::Proof::Missing => (Fate::Missing, None),
            workspace::Proof::Foreign => (Fate::Foreign, None),
            workspace::Proof::Changed => (Fate::Changed, None),
            workspace::Proof::LeftAside(p) => (Fate::LeftAside(p), None),
        },
    )
}

/// Where git-delegate's own stat record of task `t`'s workspace lies
/// (design §3.20; a batch prepared before records were kept has none).
pub fn stat_record(source: &Source, b: &Batch, t: &Task) -> PathBuf {
    let batch_dir = crate::record::batch::batch_dir(&source.state_dir(), &b.id);
    crate::record::stat::of_task(&batch_dir, &t.name)
}

/// The tree a closed task's workspace is proven against when a command
/// that did not read it removes it (an apply interrupted during its
/// clean-up left it; design §3.18): an applied task's is its proposal's
/// (its ref outlives the workspace; without it, its base's: a workspace
/// holding nothing else has no work), a discarded one's its kept
/// proposal's, and one without changes (or a discarded one with none) its
/// base's. `None` when it cannot be told: such a workspace is never
/// removed.
pub fn read_tree_of_closed(source: &Source, b: &Batch, t: &Task) -> Option<ObjectId> {
    let tree_of_ref = |name: &str| -> Option<ObjectId> {
        let id = refs::get(&source.repo, name).ok()??;
        crate::git::commit::tree_of(&source.repo, &id.to_string()).ok()
    };
    let base_tree = || crate::git::commit::tree_of(&source.repo, t.base_or(&b.baseline)).ok();
    match t.state {
        // Its ref gone (someone deleted it): a workspace without changes
        // holds no work either way.
        batch::TaskState::Applied => {
            tree_of_ref(&refs::proposal(&b.id, &t.name)).or_else(base_tree)
        }
        batch::TaskState::NoChanges => base_tree(),
        batch::TaskState::Discarded => match &t.proposal_ref {
            Some(r) => tree_of_ref(r),
            None => base_tree(),
        },
        _ => None,
    }
}

/// Remove what an apply killed while verifying the batch left (its
/// verification workspaces, processes inside stopped; design §3.10), then
/// the batch's refs (but discarded tasks' kept proposals) and, last, its
/// state folder. Returns how many refs were removed.
pub fn refs_and_state(source: &Source, b: &Batch) -> Result<usize> {
    crate::ops::verify::remove_leftovers(
        source,
        &|id| id == b.id,
        crate::ops::verify::Processes::Stop,
        false,
    );
    let removed = remove_refs(source, b, &[], false)?
        .iter()
        .filter(|(_, removed)| *removed)
        .count();
    remove_state(source, b)?;
    Ok(removed)
}

/// Remove the batch's refs but those in `keep` and discarded tasks' kept
/// proposals (they outlive the batch until gc.keep-failed); with
/// `dry_run`, none. Returns each ref considered with whether it was (or,
/// with `dry_run`, would be) removed.
pub fn remove_refs(
    source: &Source,
    b: &Batch,
    keep: &[String],
    dry_run: bool,
) -> Result<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for name in refs::list_batch(&source.repo, &b.id)? {
        if keep.contains(&name) || crate::record::batch::discard_kept(b, &name) {
            continue;
        }
        let removed = dry_run || refs::delete(&source.repo, &name)?;
        out.push((name, removed));
    }
    Ok(out)
}

/// Remove the batch's state folder (the last of it: a removal that stops
/// before leaves the batch listed for the next try), durably.
pub fn remove_state(source: &Source, b: &Batch) -> Result<()> {
    // Renamed to a hidden name first (durably), so a removal killed
    // half-way never leaves a folder without a readable batch.toml; a
    // symlink in its place is moved and removed, never followed.
    Ok(batch::remove_state(&source.state_dir(), &b.id)?)
}

/// What `remove_batch` did.
#[derive(Debug, Default)]
pub struct Removed {
    pub workspaces: usize,
    /// Folders kept: hosting open batches (named), or not the workspace
    /// prepare made (no batches named).
    pub kept: Vec<Kept>,
    pub refs: usize,
    /// Its refs on its remote that could not be deleted (design §3.14).
    pub remote_left: Option<crate::ops::remote_workers::Left>,
    /// Folders below the workspace root refused (design §3.18): another
    /// user's, or a symlink where a folder of ours was expected, at or
    /// above a workspace left alone; never entered.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
    /// Tasks whose workspace was written into after it was read (design
    /// §3.18 "Before removing a workspace, prove it"), kept: (task, where
    /// it is when it could not go back to its place). When any is, the
    /// batch was not removed (its refs and state stay).
    pub changed: Vec<(String, Option<PathBuf>)>,
}

/// Remove a whole batch now (`drop`): every task's workspace (deleted
/// here), its refs and its state; on its remote, what `remote_seen` (the
/// blockers' listing) and the batch's record say was fetched. Unless
/// `force`, a workspace goes only once proven to hold what the blockers
/// read in it (an open task's: nothing but its base; a closed one's: what
/// it ended with, `read_tree_of_closed`): one written into since is kept,
/// and then the batch stays (`Removed::changed`).
pub fn remove_batch(
    source: &Source,
    b: &Batch,
    others: &[Batch],
    remote_seen: &HashMap<String, ObjectId>,
    force: bool,
) -> Result<Removed> {
    let mut r = Removed::default();
    // Open tasks whose workspace (proven to hold no changes) went.
    let mut emptied: Vec<usize> = Vec::new();
    for (i, t) in b.tasks.iter().enumerate() {
        let read = if force {
            None
        } else {
            let read = match t.state.is_open() {
                true => crate::git::commit::tree_of(&source.repo, t.base_or(&b.baseline)).ok(),
                false => read_tree_of_closed(source, b, t),
            };
            match read {
                Some(tree) => Some(workspace::aside::Read::from(tree)),
                // Never removed unproven.
                None if workspace::health(&source.common_dir, t) == workspace::Health::Ours => {
                    r.changed.push((t.name.clone(), None));
                    continue;
                }
                None => None,
            }
        };
        match workspace(source, b, t, others, Way::Delete, read.as_ref())?.0 {
            Fate::Removed => {
                r.workspaces += 1;
                if t.state.is_open() {
                    emptied.push(i);
                }
            }
            Fate::Missing => {}
            Fate::Changed => r.changed.push((t.name.clone(), None)),
            Fate::LeftAside(p) => r.changed.push((t.name.clone(), Some(p))),
            Fate::Foreign => {
                if let Some(u) = workspace::refusal(t) {
                    crate::workspace::shared_root::note(&mut r.unsafe_folders, u);
                }
                r.kept.push((t.name.clone(), t.root.clone(), Vec::new()))
            }
            Fate::Hosting(h) => r.kept.push((t.name.clone(), t.root.clone(), h)),
        }
    }
    if !r.changed.is_empty() {
        // The batch stays for the work kept: the tasks whose workspaces
        // went had none, and are closed as such (no apply finds them
        // missing).
        let mut kept = b.clone();
        let now = crate::sys::time::rfc3339(crate::sys::time::now());
        for i in emptied {
            kept.tasks[i].state = batch::TaskState::NoChanges;
            kept.tasks[i].updated_at = Some(now.clone());
        }
        batch::save(&source.state_dir(), &kept)?;
        return Ok(r);
    }
    r.remote_left = crate::ops::remote_workers::end(source, b, remote_seen);
    r.refs = refs_and_state(source, b)?;
    Ok(r)
}

/// Why `drop` would refuse to end a batch without `--force` (design §3.5).
pub struct Blockers {
    /// Tasks holding unapplied work: their workspace differs from the
    /// baseline, they ended conflict/failed (the proposal is kept), or
    /// their workspace cannot be read (unknown is never taken for clean).
    pub unapplied: Vec<String>,
    /// Workspaces that are the source of other open batches.
    pub hosting: Vec<Kept>,
    /// Every readable batch, for `remove_batch`.
    pub others: Vec<Batch>,
    /// Open tasks whose workspace pushed entries still in the stash (design
    /// §3.16): (task, `stash@{N}`); they count as unapplied too.
    pub stashed: Vec<(String, String)>,
    /// The proposals the open remote tasks had submitted when asked here
    /// (task -> commit): all that `remove_batch` may delete of them on the
    /// remote (design §3.14 "Remote refs").
    pub remote_seen: HashMap<String, ObjectId>,
    /// Open tasks (also in `unapplied`) whose workspace is not at its place
    /// while their work may be elsewhere (design §3.18): the folders below
    /// the repository's workspace folder that name its registration (a
    /// task folder renamed, a batch folder moved aside), empty when its
    /// batch folder is gone and none was found.
    pub moved: Vec<(String, Vec<PathBuf>)>,
}

/// Open local tasks of `b` whose workspace is not at its place (missing,
/// or something else there) while their work may be elsewhere: folders
/// that name their registration below the repository's workspace folder,
/// or (`gone_counts`) their batch folder gone. Each with those folders.
pub fn moved_work(source: &Source, b: &Batch, gone_counts: bool) -> Vec<(String, Vec<PathBuf>)> {
    b.tasks
        .iter()
        .filter(|t| t.state.is_open() && !t.remote && workspace::Kind::of_task(t).registered())
        .filter(|t| workspace::health(&source.common_dir, t) != workspace::Health::Ours)
        .filter_map(|t| {
            let found = workspace::elsewhere::copies(&source.common_dir, t);
            let gone = gone_counts && workspace::elsewhere::batch_folder_gone(t);
            (!found.is_empty() || gone).then(|| (t.name.clone(), found))
        })
        .collect()
}

/// What stands in the way of dropping `b` (a batch whose prepare completed).
pub fn blockers(source: &Source, b: &Batch) -> Result<Blockers> {
    let counts = crate::ops::problems::changed_counts(source, b);
    let mut unapplied = b
        .tasks
        .iter()
        .zip(&counts)
        .filter(|(t, n)| t.state.is_open() && (**n != Some(0) || t.state != batch::TaskState::Open))
        .map(|(t, _)| t.name.clone())
        .collect::<Vec<String>>();
    // A remote task's work is what its worker submitted (design §3.14); a
    // remote that cannot be asked is never taken for "nothing submitted".
    let mut remote_seen = HashMap::new();
    if b.tasks
        .iter()
        .any(|t| t.remote && t.state == batch::TaskState::Open)
    {
        let submitted = crate::ops::remote_workers::submitted(source, b).ok();
        remote_seen = submitted.clone().unwrap_or_default();
        for t in b
            .tasks
            .iter()
            .filter(|t| t.remote && t.state == batch::TaskState::Open)
        {
            if submitted.as_ref().is_none_or(|s| s.contains_key(&t.name)) {
                unapplied.push(t.name.clone());
            }
        }
    }
    // Work a workspace put in the stash is unapplied work too (design §3.16).
    let effects = crate::ops::side_effects::find(source, b)?;
    let mut stashed = Vec::new();
    for (t, entries) in crate::ops::side_effects::stashed(&effects) {
        let task = &b.tasks[t];
        if !task.state.is_open() {
            continue;
        }
        if !unapplied.contains(&task.name) {
            unapplied.push(task.name.clone());
        }
        stashed.extend(
            entries
                .iter()
                .map(|e| (task.name.clone(), e.display_name())),
        );
    }
    // So is work in a workspace's submodules (design §3.15), which no
    // proposal holds.
    for t in b.tasks.iter().filter(|t| t.state.is_open()) {
        if !unapplied.contains(&t.name)
            && workspace::health(&source.common_dir, t) == workspace::Health::Ours
            && crate::workspace::submodules::changed(&source.common_dir, &t.root)
                .is_ok_and(|s| !s.is_empty())
        {
            unapplied.push(t.name.clone());
        }
    }
    // A workspace moved away with its work (design §3.18): never taken
    // for "no changes".
    let moved = moved_work(source, b, true);
    for (task, _) in &moved {
        if !unapplied.contains(task) {
            unapplied.push(task.clone());
        }
    }
    unapplied.sort_by_key(|name| b.tasks.iter().position(|t| &t.name == name));
    let others = batch::list_ok(&source.state_dir())?;
    let hosting = b
        .tasks
        .iter()
        .map(|t| (t, workspace::hosted_batches(&others, t, &b.id)))
        .filter(|(_, h)| !h.is_empty())
        .map(|(t, h)| (t.name.clone(), t.root.clone(), h))
        .collect();
    Ok(Blockers {
        unapplied,
        hosting,
        others,
        stashed,
        remote_seen,
        moved,
    })
}
