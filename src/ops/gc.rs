//! Garbage collection (design §3.4): reclaiming what stale batches and
//! leftovers hold, rescuing unapplied work first.
//!
//! For every stale batch (lease expired or orphaned): each open task's
//! workspace that is still ours is snapshotted into its proposal ref and
//! patch (`proposal::record`), then workspaces, their registrations, the
//! baseline ref and the state folder go. A workspace holding a git
//! repository the worker made (which no proposal can hold) is kept instead,
//! as an ordinary unlocked worktree, and reported (`kept_workspaces`). Proposal refs that hold work
//! (rescued, conflict, failed) are kept, with their patches moved to
//! `<state>/kept/<batch>/`, until their commit is older than
//! `gc.keep-failed`: the commit's committer time is the clock, so a kept
//! ref's commit is re-dated when its batch is reclaimed. Leftovers of this
//! repository (registrations of ours whose folder is gone, folders under
//! `<root>/<repo-name>-<fp>/` no batch owns, refs under `refs/pi-delegate`
//! no batch owns) are reclaimed too, and so is the trash of workspaces apply
//! removed (`<root>/<repo-name>-<fp>/.trash`, see `trash`) that a killed
//! background deleter left; they count as removed workspaces, and so do
//! the verification workspaces an `apply --verify` that was killed left
//! (of any batch no apply verifies now, a batch that is gone included;
//! left in place and reported while a process runs inside). So are the
//! hidden folders a killed prepare or batch removal leaves in the state
//! folder (`.<id>.new`, `.<id>.removed-<pid>`), and the temporary files a
//! killed command left there once they are older than an hour (design
//! §3.18 "Leftovers").
//!
//! A stale batch is left alone while a process is inside one of its
//! workspaces (`quiesce::find_users`, whose header says why the caller's
//! own shell counts); the dry run predicts the rescue with
//! `proposal::preview`, as `apply --dry-run` does.
//!
//! A batch whose `batch.toml` cannot be read is never reclaimed here (its
//! lease is unknown): it is reported in `skipped`, and everything that could
//! be its own is left alone. `drop BATCH --force` removes it through
//! [`remove_corrupt`], which rescues its workspaces first as gc does.
//!
//! A batch whose prepare was killed (still marked as being prepared, its
//! process gone; see `preparing`) is removed whole at any age, with nothing
//! rescued: no worker was ever given its workspaces (design §3.15).
//!
//! Owns: deciding what is stale or left over, and reclaiming it.
//! Never: touches a live batch, a user's own worktree, a folder git has
//! registered as a worktree, another repository's folders, a nested git
//! repository inside a workspace, or a batch whose work could not be
//! rescued; reads, rescues from, looks for processes in or removes a folder
//! that is not the workspace prepare made (`workspace::identify`); removes a
//! workspace that is the source of another open batch (it is released as an
//! ordinary worktree); with `dry_run` it changes nothing at all.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::registration::{self, Registration};
use crate::git::repo::Source;
use crate::record::batch::{self, discard_kept, Batch, Entry};
use crate::record::kept;
use crate::{git::commit, git::refs, merge::proposal, workspace};

/// Work saved from a stale task's workspace into a proposal ref.
#[derive(Debug, Clone)]
pub struct Rescued {
    pub batch: String,
    pub task: String,
    pub ref_name: String,
    /// Where the patch is kept (after the batch's state folder is gone).
    pub patch: PathBuf,
    /// Paths that differ from the baseline.
    pub paths: usize,
}

/// A stale task's workspace gc kept when it reclaimed the batch, left as an
/// ordinary, unlocked worktree: it holds git repositories the worker made,
/// which gc never deletes (design §3.2 `nested_repository`), or other open
/// batches were prepared in it and write back into it.
#[derive(Debug, Clone)]
pub struct KeptWorkspace {
    pub batch: String,
    pub task: String,
    pub root: PathBuf,
    /// The nested repositories, relative to the workspace root.
    pub nested: Vec<String>,
    /// The open batches whose source it is.
    pub batches: Vec<String>,
    /// The submodules the task changed (design §3.15: their work cannot be
    /// saved in a proposal), relative to the workspace root.
    pub changed_submodules: Vec<String>,
}

/// A stale batch gc did not reclaim, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub batch: String,
    pub message: String,
}

/// What gc did (or, with `dry_run`, would do).
#[derive(Debug, Default)]
pub struct Report {
    pub dry_run: bool,
    /// Stale batches reclaimed.
    pub batches: Vec<String>,
    /// Workspace folders removed: of stale batches, and leftovers.
    pub workspaces_removed: usize,
    /// Leftover worktree registrations removed (their folder was gone).
    pub registrations_removed: usize,
    pub rescued: Vec<Rescued>,
    pub refs_removed: usize,
    /// Proposal refs kept for `gc.keep-failed`.
    pub refs_kept: Vec<String>,
    /// Sum of the sizes of the files removed.
    pub bytes_freed: u64,
    /// Folders not ours any more (a stale task's folder replaced by the
    /// user), and the workspaces kept for nested repositories: left alone.
    pub left_alone: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
    /// Batches whose state folder holds a write-back journal (dry run: not rolled back).
    pub pending_writebacks: Vec<String>,
    /// Workspaces of reclaimed batches kept (released: ordinary worktrees
    /// now) for the nested repositories in them or because they are the
    /// source of open batches.
    pub kept_workspaces: Vec<KeptWorkspace>,
    /// Batches whose prepare was killed before they were complete (design
    /// §3.15): removed whole, nothing rescued; they are in `batches` too.
    pub incomplete: Vec<String>,
    /// Stash entries the workspaces of reclaimed batches pushed, still in
    /// the stash: reported, never touched (design §3.16).
    pub stashed: Vec<StashedWork>,
    /// Undo entries removed: beyond the newest `undo.keep` and older than
    /// `gc.keep-failed` (design §3.11); their refs count in `refs_removed`.
    pub undo_entries_removed: Vec<String>,
    /// Temporary files older than an hour that killed commands left in
    /// the state folder, removed (design §3.18 "Leftovers"); their sizes
    /// count in `bytes_freed`.
    pub temp_files_removed: Vec<PathBuf>,
    /// Reclaimed batches whose refs on their remote could not be deleted
    /// (design §3.14): reported, the refs listed for later.
    pub remote_left: Vec<crate::ops::remote::Left>,
    /// Folders below the workspace root refused (design §3.18): another
    /// user's, or a symlink where a folder of ours was expected; never
    /// entered, read or removed.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
}

/// A stash entry a stale batch's workspace pushed (design §3.16).
#[derive(Debug, Clone)]
pub struct StashedWork {
    pub batch: String,
    /// `None` when which workspace made it cannot be told.
    pub task: Option<String>,
    /// `stash@{N}`.
    pub stash: String,
}

/// Reclaim what stale batches and leftovers hold. The caller holds the
/// repository lock (and has recovered interrupted write-backs), unless `dry_run`.
pub fn run(source: &Source, dry_run: bool) -> Result<Report> {
    let mut gc = Gc {
        source,
        dry_run,
        state_dir: source.state_dir(),
        report: Report {
            dry_run,
            ..Report::default()
        },
        handled_refs: HashSet::new(),
        handled_regs: HashSet::new(),
        handled_roots: HashSet::new(),
    };
    let entries = batch::list(&gc.state_dir)?;
    let all: Vec<Batch> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(b.as_ref().clone()),
            Entry::Broken { .. } => None,
        })
        .collect();
    let mut remaining: Vec<&Batch> = Vec::new();
    let mut broken_shorts: Vec<String> = Vec::new();
    for e in &entries {
        match e {
            Entry::Batch(b) => {
                // A batch whose prepare never completed: removed whole once
                // its process is gone, whatever its lease says, and never
                // rescued (no worker was given it); left alone while its
                // prepare still runs (design §3.15).
                match crate::ops::preparing::progress(b) {
                    Some(crate::ops::preparing::Progress::Interrupted) => {
                        match gc.reclaim_incomplete(b) {
                            Ok(()) => {
                                gc.report.batches.push(b.id.clone());
                                gc.report.incomplete.push(b.id.clone());
                            }
                            Err(e) => {
                                gc.report.skipped.push(Skipped {
                                    batch: b.id.clone(),
                                    message: format!(
                                        "batch {} (its prepare was killed): removing it stopped half-way: {} ({})",
                                        b.short(),
                                        e.message,
                                        e.help
                                    ),
                                });
                                remaining.push(b);
                            }
                        }
                        continue;
                    }
                    Some(crate::ops::preparing::Progress::Preparing) => {
                        remaining.push(b);
                        continue;
                    }
                    None => {}
                }
                if batch::batch_dir(&gc.state_dir, &b.id)
                    .join(batch::JOURNAL_FILE)
                    .exists()
                {
                    gc.report.pending_writebacks.push(b.id.clone());
                }
                if !b.lease.state().is_stale() {
                    remaining.push(b);
                    continue;
                }
                // An apply verifies it now, without the lock (design §3.10).
                if let Err(e) = crate::record::busy::refuse_if_busy(&gc.state_dir, b) {
                    gc.report.skipped.push(Skipped {
                        batch: b.id.clone(),
                        message: e.message,
                    });
                    remaining.push(b);
                    continue;
                }
                match gc.reclaim_batch(b, &all) {
                    Ok(true) => gc.report.batches.push(b.id.clone()),
                    Ok(false) => {
                        // Left alone: its stash entries are the batch's still.
                        gc.report.stashed.retain(|w| w.batch != b.id);
                        remaining.push(b)
                    }
                    // Its work was rescued before anything was removed; what
                    // is left stays owned by the batch until the next gc.
                    Err(e) => {
                        gc.report.skipped.push(Skipped {
                            batch: b.id.clone(),
                            message: format!(
                                "batch {}: reclaiming it stopped half-way: {} ({})",
                                b.short(),
                                e.message,
                                e.help
                            ),
                        });
                        remaining.push(b);
                    }
                }
            }
            Entry::Broken { id, problem } => {
                // Its lease cannot be read, so it is never reclaimed
                // automatically: reported, with the command that removes it.
                gc.report.skipped.push(Skipped {
                    batch: id.clone(),
                    message: format!(
                        "batch {}: its state is corrupt ({problem}), so its lease cannot be read and gc leaves it alone; remove it with `git delegate drop {id} --force` (the changes in its workspaces are saved as proposal refs first)",
                        batch::short(id)
                    ),
                });
                broken_shorts.push(batch::short(id).to_string())
            }
        }
    }
    let owners = Owners {
        batches: remaining,
        broken_ids: entries
            .iter()
            .filter_map(|e| match e {
                Entry::Broken { id, .. } => Some(id.clone()),
                Entry::Batch(_) => None,
            })
            .collect(),
        broken_shorts,
    };
    gc.leftover_verifications(&owners.broken_ids);
    gc.leftover_registrations(&owners)?;
    gc.leftover_folders(&owners)?;
    let (undone, refs) = crate::ops::undo::prune(source, dry_run)?;
    gc.report.undo_entries_removed = undone;
    gc.report.refs_removed += refs;
    gc.leftover_refs(&owners)?;
    gc.leftover_patches()?;
    gc.leftover_hidden_state();
    gc.leftover_temp_files();
    // Failing verification logs of ended batches, after gc.keep-failed (design §3.10).
    let ids: Vec<String> = entries
        .iter()
        .map(|e| match e {
            Entry::Batch(b) => b.id.clone(),
            Entry::Broken { id, .. } => id.clone(),
        })
        .collect();
    crate::ops::verify::prune_logs(&gc.state_dir, &ids, source.config.keep_failed_secs, dry_run);
    Ok(gc.report)
}

/// What the batches that stay (live, skipped, unreadable) own.
struct Owners<'a> {
    batches: Vec<&'a Batch>,
    /// Ids of batch folders whose `batch.toml` cannot be read: everything
    /// that could be theirs is left alone.
    broken_ids: Vec<String>,
    broken_shorts: Vec<String>,
}

impl Owners<'_> {
    fn owns_registration(&self, id: &str) -> bool {
        self.batches
            .iter()
            .any(|b| b.tasks.iter().any(|t| t.worktree_id == id))
            || self
                .broken_shorts
                .iter()
                .any(|s| id.starts_with(&format!("delegate-{s}-")))
    }

    fn owns_short(&self, short: &str) -> bool {
        self.broken_shorts.iter().any(|s| s == short)
    }

    fn owns_root(&self, root: &Path) -> bool {
        self.batches
            .iter()
            .any(|b| b.tasks.iter().any(|t| same_path(&t.root, root)))
    }

    fn owns_ref(&self, name: &str) -> bool {
        let owned_by = |id: &str| name.starts_with(&format!("{}batches/{id}/", refs::PREFIX));
        self.batches
            .iter()
            .any(|b| owned_by(&b.id) && !discard_kept(b, name))
            || self.broken_ids.iter().any(|id| owned_by(id))
    }
}

struct Gc<'a> {
    source: &'a Source,
    dry_run: bool,
    state_dir: PathBuf,
    report: Report,
    /// Refs this run removed or kept (a dry run leaves them in place).
    handled_refs: HashSet<String>,
    /// Registrations this run removed.
    handled_regs: HashSet<String>,
    /// Workspace folders this run removed.
    handled_roots: HashSet<PathBuf>,
}

impl Gc<'_> {
    fn registration(&self, id: &str) -> PathBuf {
        Registration::new(&self.source.common_dir, id)
            .path()
            .to_path_buf()
    }

    /// Remove a batch whose prepare was killed, whole (see `preparing`).
    fn reclaim_incomplete(&mut self, b: &Batch) -> Result<()> {
        for name in refs::list_batch(&self.source.repo, &b.id)? {
            self.handled_refs.insert(name);
        }
        for t in &b.tasks {
            self.handled_roots.insert(t.root.clone());
            self.handled_regs.insert(t.worktree_id.clone());
        }
        let r = crate::ops::preparing::remove_whole(self.source, b, self.dry_run)?;
        self.report.workspaces_removed += r.workspaces;
        self.report.refs_removed += r.refs;
        self.report.bytes_freed += r.bytes;
        self.report.left_alone.extend(r.left_alone);
        for u in r.unsafe_folders {
            self.refused(u);
        }
        if !self.dry_run {
            for t in &b.tasks {
                workspace::remove_empty_parents_of(t);
            }
        }
        Ok(())
    }

    /// Reclaim one stale batch; `false` when it was left alone (reported in
    /// `skipped`). `others` are every readable batch (for workspaces that
    /// are the source of another one).
    fn reclaim_batch(&mut self, b: &Batch, others: &[Batch]) -> Result<bool> {
        let skip = |gc: &mut Self, message: String| {
            gc.report.skipped.push(Skipped {
                batch: b.id.clone(),
                message,
            });
            Ok(false)
        };
        let dir = batch::batch_dir(&self.state_dir, &b.id);
        if dir.join(batch::JOURNAL_FILE).exists() {
            return skip(
                self,
                format!(
                    "batch {} still records an interrupted write-back; run `git delegate status` and `git delegate gc` again once its process is gone",
                    b.short()
                ),
            );
        }
        // Work a workspace put in the stash stays there: named, not touched
        // (read before the workspaces go: their HEADs tell who made it).
        if let Ok(effects) = crate::ops::side_effects::find(self.source, b) {
            self.report.stashed.extend(
                effects
                    .iter()
                    .filter(|e| e.change == crate::ops::side_effects::Change::Added)
                    .map(|e| StashedWork {
                        batch: b.id.clone(),
                        task: e.task.and_then(|t| b.tasks.get(t)).map(|t| t.name.clone()),
                        stash: e.display_name(),
                    }),
            );
        }
        let baseline_tree = match commit::tree_of(&self.source.repo, &b.baseline) {
            Ok(t) => t,
            Err(e) => {
                return skip(
                    self,
                    format!(
                        "batch {}: its baseline cannot be read ({}), so its work cannot be rescued; left alone",
                        b.short(),
                        e.message
                    ),
                )
            }
        };

        // A process still working in a workspace could write after the
        // rescue: leave the whole batch until it is gone.
        // Only in folders that are the workspaces prepare made: a folder
        // swapped in is none of the batch's business.
        for t in &b.tasks {
            let workspace::Identity::Ours { real, .. } =
                workspace::identify(&self.source.common_dir, t)
            else {
                continue;
            };
            // Ancestors count here (see `quiesce`'s header).
            let pids = crate::sys::quiesce::find_users(std::slice::from_ref(&real))
                .into_iter()
                .next()
                .unwrap_or_default();
            if !pids.is_empty() {
                let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
                return skip(
                    self,
                    format!(
                        "batch {}: processes still run inside the workspace of task {} (pid {}); stop them, or `{}`",
                        b.short(),
                        t.name,
                        pids.join(", "),
                        crate::ops::renew::command(b.short(), b.lease.state())
                    ),
                );
            }
        }

        // 1. Rescue: nothing is removed unless every open task's work is
        // saved. A nested repository cannot be saved in a proposal: its
        // workspace is kept (step 3), the rest of its work rescued.
        let mut rescued = Vec::new();
        let mut nested: Vec<(String, Vec<String>)> = Vec::new();
        let mut submodules: Vec<(String, Vec<String>)> = Vec::new();
        for task in b.open_tasks() {
            // Read at the real path the identity check found.
            let workspace::Identity::Ours { real, .. } =
                workspace::identify(&self.source.common_dir, task)
            else {
                continue;
            };
            let mut t = task.clone();
            t.root = real;
            let t = &t;
            let ref_name = refs::proposal(&b.id, &t.name);
            let before = refs::get(&self.source.repo, &ref_name)
                .ok()
                .flatten()
                .and_then(|c| commit::tree_of(&self.source.repo, &c.to_string()).ok());
            let saved = if self.dry_run {
                proposal::preview(&self.source.repo, t, baseline_tree)
                    .map(|r| r.map(|p| (p.tree, p.paths.len(), p.nested)))
            } else {
                proposal::record(self.source, b, t, baseline_tree)
                    .map(|r| r.map(|p| (p.tree, p.paths.len(), p.nested)))
            };
            if let Ok(Some((_, _, repos))) = &saved {
                if !repos.is_empty() {
                    let repos = repos
                        .iter()
                        .map(|p| crate::sys::paths::doc_bytes(p))
                        .collect();
                    nested.push((t.name.clone(), repos));
                }
            }
            // Work in a submodule cannot be saved in a proposal either
            // (design §3.15): its workspace is kept.
            match crate::workspace::submodules::changed(&self.source.common_dir, &t.root) {
                Ok(subs) if !subs.is_empty() => submodules.push((
                    t.name.clone(),
                    subs.iter().map(|p| crate::sys::paths::doc_bytes(p)).collect(),
                )),
                Ok(_) => {}
                Err(e) => {
                    return skip(
                        self,
                        format!(
                            "batch {}: the submodules of task {} could not be read ({}); nothing of this batch was removed",
                            b.short(),
                            t.name,
                            e.message
                        ),
                    )
                }
            }
            match saved {
                Ok(Some((tree, paths, _))) if before != Some(tree) && paths > 0 => rescued.push(Rescued {
                    batch: b.id.clone(),
                    task: t.name.clone(),
                    ref_name,
                    patch: kept::kept_dir(&self.state_dir)
                        .join(&b.id)
                        .join(format!("{}.patch", t.name)),
                    paths,
                }),
                Ok(_) => {}
                Err(e) => {
                    return skip(
                        self,
                        format!(
                            "batch {}: the work of task {} could not be saved ({}); nothing of this batch was removed",
                            b.short(),
                            t.name,
                            e.message
                        ),
                    )
                }
            }
        }

        // Remote tasks (design §3.14): what their workers submitted is
        // rescued like a workspace's work.
        let mut remote_seen = std::collections::HashMap::new();
        let remote_open: Vec<&str> = b
            .open_tasks()
            .filter(|t| t.remote)
            .map(|t| t.name.as_str())
            .collect();
        if !remote_open.is_empty() {
            let found = if self.dry_run {
                crate::ops::remote::submitted(self.source, b).map(|mut f| {
                    f.retain(|t, _| remote_open.contains(&t.as_str()));
                    f
                })
            } else {
                crate::ops::remote::fetch_proposals(self.source, b, &remote_open, true)
            };
            // A remote that cannot be asked keeps what was submitted under
            // its refs there: the batch goes here, and the refs left on the
            // remote are reported (`remote::end`, below), never lost.
            let found = found.unwrap_or_default();
            // What was fetched is what the batch's end may delete there
            // (design §3.14 "Remote refs").
            remote_seen.clone_from(&found);
            for (task, commit) in found {
                let ref_name = refs::proposal(&b.id, &task);
                let paths = match b.tasks.iter().find(|t| t.name == task) {
                    Some(t) if !self.dry_run => {
                        let (_, base_tree) =
                            proposal::base_of(&self.source.repo, b, t, baseline_tree)?;
                        match crate::ops::remote::received(
                            &self.source.repo,
                            b,
                            t,
                            commit,
                            base_tree,
                        ) {
                            Ok(Some((tree, paths))) => {
                                let patch = proposal::patch_path(self.source, b, &task);
                                crate::merge::patch::write_patch(
                                    &self.source.repo,
                                    base_tree,
                                    tree,
                                    &patch,
                                )?;
                                paths.len()
                            }
                            _ => 0,
                        }
                    }
                    _ => 0,
                };
                rescued.push(Rescued {
                    batch: b.id.clone(),
                    task: task.clone(),
                    ref_name,
                    patch: kept::kept_dir(&self.state_dir)
                        .join(&b.id)
                        .join(format!("{task}.patch")),
                    paths,
                });
            }
        }

        // 2. Keep the proposal refs that hold work, with their patches.
        let mut kept = Vec::new();
        for t in b.open_tasks() {
            let name = refs::proposal(&b.id, &t.name);
            let exists = refs::get(&self.source.repo, &name)?.is_some();
            let would_exist = rescued.iter().any(|r| r.ref_name == name);
            if !(exists || would_exist) {
                continue;
            }
            if !self.dry_run {
                self.keep_patch(b, &t.name)?;
                if !would_exist {
                    kept::redate(&self.source.repo, &name)?;
                }
            }
            self.handled_refs.insert(name.clone());
            kept.push(name);
        }

        // 3. Workspaces and their registrations. A workspace that is the
        // source of another open batch stays as an ordinary worktree.
        // (A remote task has no workspace here, design §3.14.)
        for t in b.tasks.iter().filter(|t| !t.remote) {
            let reg = self.registration(&t.worktree_id);
            let health = workspace::health(&self.source.common_dir, t);
            let hosted = if health == workspace::Health::Ours {
                workspace::hosted_batches(others, t, &b.id)
            } else {
                Vec::new()
            };
            let repos = nested
                .iter()
                .find(|(name, _)| *name == t.name)
                .map(|(_, repos)| repos.clone())
                .unwrap_or_default();
            let subs = submodules
                .iter()
                .find(|(name, _)| *name == t.name)
                .map(|(_, subs)| subs.clone())
                .unwrap_or_default();
            if health == workspace::Health::Ours
                && (!hosted.is_empty() || !repos.is_empty() || !subs.is_empty())
            {
                // Kept as an ordinary worktree: registered (so no later gc
                // takes the folder) and unlocked, as `apply --keep` leaves one.
                if !self.dry_run {
                    workspace::release(&self.source.common_dir, &t.worktree_id)?;
                }
                if !repos.is_empty() || !subs.is_empty() {
                    self.report.left_alone.push(t.root.clone());
                }
                self.report.kept_workspaces.push(KeptWorkspace {
                    batch: b.id.clone(),
                    task: t.name.clone(),
                    root: t.root.clone(),
                    nested: repos,
                    batches: hosted,
                    changed_submodules: subs,
                });
                self.handled_roots.insert(t.root.clone());
                self.handled_regs.insert(t.worktree_id.clone());
                continue;
            }
            match health {
                workspace::Health::Ours => {
                    let bytes = crate::workspace::shared_root::tree_size(&t.root)
                        + crate::sys::fs::tree_size(&reg);
                    if !self.dry_run {
                        workspace::remove_task(&self.source.common_dir, t)?;
                    }
                    self.report.bytes_freed += bytes;
                    self.report.workspaces_removed += 1;
                    self.handled_roots.insert(t.root.clone());
                    self.handled_regs.insert(t.worktree_id.clone());
                }
                health => {
                    if health == workspace::Health::Foreign {
                        self.report.left_alone.push(t.root.clone());
                        self.handled_roots.insert(t.root.clone());
                        if let Some(r) = workspace::refusal(t) {
                            self.refused(r);
                        }
                    }
                    // The registration goes only when it still names this
                    // task's folder (or nothing that exists): a worktree the
                    // user moved elsewhere keeps its registration.
                    if reg.symlink_metadata().is_ok() && registration_is_dead(&reg, &t.root) {
                        self.report.bytes_freed += crate::sys::fs::tree_size(&reg);
                        if !self.dry_run {
                            crate::sys::fs::remove_all(&reg)?;
                        }
                    }
                    self.handled_regs.insert(t.worktree_id.clone());
                }
            }
            if !self.dry_run {
                workspace::remove_empty_parents_of(t);
            }
        }

        // 4. Refs: everything of the batch but the kept proposals (a
        // discarded task's kept proposal runs on its own keep-failed clock,
        // see `leftover_refs`).
        for (name, removed) in
            crate::ops::teardown::remove_refs(self.source, b, &kept, self.dry_run)?
        {
            if removed {
                self.report.refs_removed += 1;
            }
            self.handled_refs.insert(name);
        }

        // 5. The state folder (patches of kept refs were moved out).
        self.report.bytes_freed += crate::sys::fs::tree_size(&dir);
        if !self.dry_run {
            if let Some(left) = crate::ops::remote::end(self.source, b, &remote_seen) {
                self.report.remote_left.push(left);
            }
            crate::ops::teardown::remove_state(self.source, b)?;
        }
        self.report.rescued.extend(rescued);
        self.report.refs_kept.extend(kept);
        Ok(true)
    }

    /// Move a task's patch out of the batch's state folder, so it outlives it.
    fn keep_patch(&self, b: &Batch, task: &str) -> Result<()> {
        let from = proposal::patch_path(self.source, b, task);
        if from.symlink_metadata().is_err() {
            return Ok(());
        }
        let dir = kept::kept_dir(&self.state_dir).join(&b.id);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let to = dir.join(format!("{task}.patch"));
        std::fs::rename(&from, &to)
            .map_err(|e| Error::io(format!("cannot move {}", from.display()), e))?;
        crate::sys::fs::sync_dir(&dir);
        Ok(())
    }

    /// Verification workspaces no apply runs in (design §3.10): what an
    /// apply killed while verifying left, of any batch (a batch that is
    /// gone too) but one being verified now or one whose record cannot be
    /// read. Removed while nothing runs inside; otherwise left in place and
    /// reported in `skipped` (gc never signals anyone).
    fn leftover_verifications(&mut self, broken: &[String]) {
        let state = self.state_dir.clone();
        let of =
            |id: &str| !broken.iter().any(|b| b == id) && !crate::record::busy::is_busy(&state, id);
        let swept = crate::ops::verify::remove_leftovers(
            self.source,
            &of,
            crate::ops::verify::Processes::Leave,
            self.dry_run,
        );
        self.report.workspaces_removed += swept.removed.len();
        self.report.registrations_removed += swept.registrations;
        self.report.bytes_freed += swept.bytes;
        self.report.refs_removed += swept.refs.len();
        self.handled_refs.extend(swept.refs);
        self.handled_roots.extend(swept.removed);
        for (batch, root, pids) in swept.in_use {
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            self.report.skipped.push(Skipped {
                message: format!(
                    "batch {}: processes still run inside its verification workspace {} (pid {}), left by an `apply --verify` that was killed; stop them, then run `git delegate gc` again",
                    batch::short(&batch),
                    root.display(),
                    pids.join(", ")
                ),
                batch,
            });
            self.handled_roots.insert(root);
        }
    }

    /// Registrations of ours (`delegate-*`) whose folder is gone and that no batch owns.
    fn leftover_registrations(&mut self, owners: &Owners) -> Result<()> {
        let dir = registration::dir(&self.source.common_dir);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Ok(());
        };
        let base = self.source.workspace_base().ok();
        for entry in rd.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if !id.starts_with("delegate-")
                || self.handled_regs.contains(&id)
                || owners.owns_registration(&id)
            {
                continue;
            }
            let registration = Registration::at(entry.path());
            let reg = registration.path();
            let target = read_gitdir_file(&registration.gitdir_file()).map(|t| reg.join(t));
            let folder = target.as_deref().and_then(Path::parent);
            if folder.is_some_and(|f| f.symlink_metadata().is_ok()) {
                continue; // its folder is there: a worktree, not a leftover
            }
            let locked_by_us = registration.is_locked_by_a_batch();
            let under_base = match (folder, &base) {
                (Some(f), Some(base)) => f.starts_with(base),
                _ => false,
            };
            if !(locked_by_us || under_base) {
                continue; // named like ours, but nothing says it is: the user's
            }
            self.report.bytes_freed += crate::sys::fs::tree_size(reg);
            if !self.dry_run {
                crate::sys::fs::remove_all(reg)?;
            }
            self.report.registrations_removed += 1;
        }
        Ok(())
    }

    /// Folders `<base>/<batch-short>/<task>` that no batch owns and git
    /// has not registered. Every folder is reached through the handle of
    /// the one above, never through a symlink and only when ours (design
    /// §3.18); what is refused is reported (`unsafe_folders`) and never
    /// entered, and a leftover goes through the handle that was checked.
    fn leftover_folders(&mut self, owners: &Owners) -> Result<()> {
        use crate::workspace::shared_root::Opened;
        let Ok(base_path) = self.source.workspace_base() else {
            return Ok(());
        };
        let base = match crate::workspace::shared_root::open_base(&base_path) {
            Ok(Opened::Ours(b)) => b,
            Ok(Opened::Refused(r)) => {
                self.refused(r);
                return Ok(());
            }
            Ok(Opened::Missing) | Err(_) => return Ok(()),
        };
        for short in base.dir.names() {
            let short_dir = base_path.join(&short);
            if short == crate::workspace::trash::TRASH {
                // Workspaces apply removed, left by a killed background
                // deleter. A deleter still at work is waited for, so the
                // trash is gone when gc returns.
                if let Ok(Opened::Refused(r)) = base.dir.child(&short) {
                    self.refused(r);
                    continue;
                }
                if let Some(p) =
                    crate::workspace::trash::purge(&short_dir, true, self.dry_run, true)
                {
                    self.report.workspaces_removed += p.entries;
                    self.report.bytes_freed += p.bytes;
                }
                continue;
            }
            if owners.owns_short(&short.to_string_lossy()) {
                continue;
            }
            let batch = match base.dir.child(&short) {
                Ok(Opened::Ours(d)) => d,
                // A file is no folder of ours: not looked at.
                Ok(Opened::Refused(r))
                    if r.reason != crate::workspace::shared_root::Reason::NotAFolder =>
                {
                    self.refused(r);
                    continue;
                }
                _ => continue,
            };
            for task in batch.names() {
                let root = short_dir.join(&task);
                if self.handled_roots.contains(&root) || owners.owns_root(&root) {
                    continue;
                }
                let ws = match batch.child(&task) {
                    Ok(Opened::Ours(d)) => d,
                    Ok(Opened::Refused(r))
                        if r.reason != crate::workspace::shared_root::Reason::NotAFolder =>
                    {
                        self.refused(r);
                        continue;
                    }
                    _ => continue,
                };
                if is_registered_worktree(&root) {
                    continue;
                }
                if !self.made_by_us(&ws) {
                    self.report.left_alone.push(root);
                    continue;
                }
                crate::sys::interrupt::pause("gc-leftover-checked");
                self.report.bytes_freed += ws.size();
                if !self.dry_run {
                    batch.remove_child(&task, ws.into_fd())?;
                }
                self.report.workspaces_removed += 1;
            }
            if !self.dry_run {
                base.dir.remove_child_if_empty(&short);
            }
        }
        if !self.dry_run {
            base.remove_if_empty();
        }
        Ok(())
    }

    /// Report a folder below the workspace root that was refused (once).
    fn refused(&mut self, r: crate::workspace::shared_root::Refused) {
        crate::workspace::shared_root::note(&mut self.report.unsafe_folders, r);
    }

    /// A folder prepare made (held open): empty (a prepare that died before
    /// writing its `.git`), or its `.git` file names a `delegate-*`
    /// registration of this repository. Anything else in our folder is left
    /// alone.
    fn made_by_us(&self, ws: &crate::workspace::shared_root::Dir) -> bool {
        if ws.is_empty() {
            return true;
        }
        let Some(target) = read_dotgit_at(ws) else {
            return false;
        };
        let ours = target
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("delegate-"));
        ours && target
            .parent()
            .is_some_and(|p| same_path(p, &registration::dir(&self.source.common_dir)))
    }

    /// Refs under refs/pi-delegate that no batch owns, once their commit is
    /// older than `gc.keep-failed`.
    fn leftover_refs(&mut self, owners: &Owners) -> Result<()> {
        let now = crate::sys::time::now();
        let keep = self.source.config.keep_failed_secs;
        for (name, id) in refs::list(&self.source.repo)? {
            if self.handled_refs.contains(&name) || owners.owns_ref(&name) {
                continue;
            }
            // An undo entry's refs go with the entry (`undo::prune`).
            if crate::ops::undo::owns_ref(&self.state_dir, &name) {
                continue;
            }
            let Some(when) = kept::commit_time(&self.source.repo, id) else {
                continue; // not a commit: no clock, left alone
            };
            if now.saturating_sub(when) < keep {
                continue;
            }
            if self.dry_run || refs::delete(&self.source.repo, &name)? {
                self.report.refs_removed += 1;
            }
            self.handled_refs.insert(name);
        }
        Ok(())
    }

    /// Kept patches whose proposal ref is gone (or goes in this run).
    fn leftover_patches(&mut self) -> Result<()> {
        let kept = kept::kept_dir(&self.state_dir);
        let Ok(batches) = std::fs::read_dir(&kept) else {
            return Ok(());
        };
        let existing: HashSet<String> = refs::list(&self.source.repo)?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let removed_now = |name: &String| {
            self.handled_refs.contains(name) && !self.report.refs_kept.contains(name)
        };
        let mut freed = 0;
        for b in batches.flatten() {
            let id = b.file_name().to_string_lossy().into_owned();
            let Ok(files) = std::fs::read_dir(b.path()) else {
                continue;
            };
            for f in files.flatten() {
                let file = f.file_name().to_string_lossy().into_owned();
                let Some(task) = file.strip_suffix(".patch") else {
                    continue;
                };
                let name = refs::proposal(&id, task);
                if existing.contains(&name) && !removed_now(&name) {
                    continue;
                }
                freed += crate::sys::fs::tree_size(&f.path());
                if !self.dry_run {
                    crate::sys::fs::remove_all(&f.path())?;
                }
            }
            if !self.dry_run {
                let _ = std::fs::remove_dir(b.path());
            }
        }
        if !self.dry_run {
            let _ = std::fs::remove_dir(&kept);
        }
        self.report.bytes_freed += freed;
        Ok(())
    }
}

impl Gc<'_> {
    /// Hidden folders in the state folder that killed commands leave: a
    /// prepare's `.<id>.new` (its batch recorded before the rename that
    /// makes it appear; nothing else was made yet, see `preparing::record`)
    /// and a removal's `.<id>.removed-<pid>` (see `batch::remove_state`).
    /// Both are made and removed under the repository lock, which gc holds.
    fn leftover_hidden_state(&mut self) {
        let dir = batch::batches_dir(&self.state_dir);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix('.') else {
                continue;
            };
            if !(rest.ends_with(".new") || rest.contains(".removed-")) {
                continue;
            }
            self.report.bytes_freed += crate::sys::fs::tree_size(&e.path());
            if !self.dry_run {
                // Best effort: what is left stays hidden and is tried again.
                let _ = crate::sys::fs::remove_all(&e.path());
            }
        }
    }
}

impl Gc<'_> {
    /// Temporary files a killed command left in the state folder, older
    /// than an hour (`problems::old_temp_files`, which `status` reports):
    /// made under the repository lock, which gc holds, or by a command
    /// whose last write is that old.
    fn leftover_temp_files(&mut self) {
        for (_, t) in crate::ops::problems::old_temp_files(&self.state_dir) {
            // Best effort: one that cannot be removed is reported again.
            if self.dry_run || crate::sys::fs::remove_file(&t.path).is_ok() {
                self.report.bytes_freed += t.bytes;
                self.report.temp_files_removed.push(t.path);
            }
        }
    }
}

/// What [`remove_corrupt`] did.
#[derive(Debug, Default)]
pub struct CorruptRemoval {
    pub workspaces_removed: usize,
    /// Workspace folders left in place: no longer ours, or their work could
    /// not be saved (then unlocked, an ordinary worktree of the user's).
    pub left_alone: Vec<PathBuf>,
    pub rescued: Vec<Rescued>,
    pub refs_removed: usize,
    /// Proposal refs kept for `gc.keep-failed` (rescued now, or recorded before).
    pub refs_kept: Vec<String>,
    /// Folders below the workspace root refused (design §3.18), above or
    /// at workspaces left alone.
    pub unsafe_folders: Vec<crate::workspace::shared_root::Refused>,
}

/// Remove a batch whose `batch.toml` cannot be read (`drop ID --force`).
/// Without its record, what is the batch's is proven otherwise: its id is
/// the folder name; its workspaces are the registrations
/// `delegate-<short>-<task>` that prepare locked with the reason
/// `git-delegate batch <id> task <task>`, whose folder's `.git` names them
/// back; its refs are those under `refs/pi-delegate/batches/<id>/`. Each
/// workspace's changes against the baseline ref are saved as a proposal
/// ref and patch (kept for `gc.keep-failed`, like a rescue) before the
/// workspace goes; one whose work cannot be saved is unlocked and left in
/// place. Proposal refs recorded before are kept too. The caller holds the
/// repository lock.
pub fn remove_corrupt(source: &Source, id: &str) -> Result<CorruptRemoval> {
    let mut out = CorruptRemoval::default();
    let repo = &source.repo;
    let state_dir = source.state_dir();
    let short = batch::short(id);
    let reg_prefix = format!("delegate-{short}-");
    let kept = kept::kept_dir(&state_dir).join(id);
    let baseline = refs::get(repo, &refs::baseline(id))?;
    let baseline_tree = baseline.and_then(|c| commit::tree_of(repo, &c.to_string()).ok());

    // 1. Workspaces: rescue, then remove.
    let regs_dir = registration::dir(&source.common_dir);
    let mut regs: Vec<(String, String)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&regs_dir) {
        for e in rd.flatten() {
            let wid = e.file_name().to_string_lossy().into_owned();
            let Some(task) = wid.strip_prefix(&reg_prefix) else {
                continue;
            };
            if Registration::at(e.path()).is_ours_for(id, task) {
                regs.push((wid.clone(), task.to_string()));
            }
        }
    }
    regs.sort();
    let mut rescued_tasks: HashSet<String> = HashSet::new();
    for (wid, task) in regs {
        let reg = Registration::new(&source.common_dir, &wid);
        let root = read_gitdir_file(&reg.gitdir_file())
            .map(|t| reg.path().join(t))
            .and_then(|t| t.parent().map(Path::to_path_buf));
        let Some(root) = root else {
            // No folder named: nothing to rescue, only the registration.
            crate::sys::fs::remove_all(reg.path())?;
            continue;
        };
        // Without batch.toml there is no recorded identity: the check falls
        // back to "not a symlink, at its real path, its .git ours".
        let probe = stand_in(
            source,
            id,
            gix::ObjectId::null(gix::hash::Kind::Sha1),
            &task,
            &root,
            &wid,
        );
        if workspace::health(&source.common_dir, &probe.tasks[0]) == workspace::Health::Ours {
            let saved = match (baseline, baseline_tree) {
                (Some(commit), Some(tree)) => {
                    let b = stand_in(source, id, commit, &task, &root, &wid);
                    std::fs::create_dir_all(&kept)
                        .map_err(|e| Error::io(format!("cannot create {}", kept.display()), e))
                        .and_then(|()| proposal::record_in(repo, &kept, &b, &b.tasks[0], tree))
                }
                _ => Err(Error::state(
                    Code::BaselineRefMissing,
                    "the baseline is gone",
                    "",
                )),
            };
            match saved {
                Ok(Some(p)) => {
                    rescued_tasks.insert(task.clone());
                    out.refs_kept.push(p.ref_name.clone());
                    out.rescued.push(Rescued {
                        batch: id.to_string(),
                        task: task.clone(),
                        ref_name: p.ref_name,
                        patch: p.patch,
                        paths: p.paths.len(),
                    });
                }
                Ok(None) => {}
                Err(_) => {
                    // Never lose work: the folder stays, as an ordinary
                    // (unlocked) worktree the user can inspect and remove.
                    workspace::release(&source.common_dir, &wid)?;
                    out.left_alone.push(root);
                    continue;
                }
            }
        }
        match workspace::remove(&source.common_dir, &root, &wid)? {
            workspace::Removal::Removed => out.workspaces_removed += 1,
            workspace::Removal::Missing => {}
            workspace::Removal::Foreign => {
                if let Some(r) = workspace::refusal(&probe.tasks[0]) {
                    crate::workspace::shared_root::note(&mut out.unsafe_folders, r);
                }
                out.left_alone.push(root)
            }
        }
    }

    // 2. Refs: proposals are kept (with their patches), the rest goes.
    let dir = batch::batch_dir(&state_dir, id);
    for name in refs::list_batch(repo, id)? {
        let task = name
            .strip_prefix(&format!("{}batches/{id}/tasks/", refs::PREFIX))
            .and_then(|t| t.strip_suffix("/proposal"));
        match task {
            Some(task) => {
                if rescued_tasks.contains(task) {
                    continue;
                }
                let from = dir.join(format!("{task}.patch"));
                let to = kept.join(format!("{task}.patch"));
                if to.symlink_metadata().is_err() {
                    // Recorded by an apply that kept it for the batch: the
                    // keep-failed clock starts now.
                    kept::redate(repo, &name)?;
                    if from.is_file() {
                        std::fs::create_dir_all(&kept).map_err(|e| {
                            Error::io(format!("cannot create {}", kept.display()), e)
                        })?;
                        std::fs::rename(&from, &to)
                            .map_err(|e| Error::io(format!("cannot move {}", from.display()), e))?;
                    }
                }
                out.refs_kept.push(name);
            }
            None => {
                if refs::delete(repo, &name)? {
                    out.refs_removed += 1;
                }
            }
        }
    }
    crate::sys::fs::sync_dir(&kept);
    // Folders made for patches that were not needed (fails when not empty).
    let _ = std::fs::remove_dir(&kept);
    let _ = std::fs::remove_dir(kept::kept_dir(&state_dir));

    // 3. The state folder.
    batch::remove_state(&state_dir, id)?;
    Ok(out)
}

/// A one-task batch record standing in for a corrupt batch, for `proposal::record_in`.
fn stand_in(
    source: &Source,
    id: &str,
    baseline: ObjectId,
    task: &str,
    root: &Path,
    wid: &str,
) -> Batch {
    Batch {
        id: id.to_string(),
        label: None,
        created_at: crate::sys::time::rfc3339(crate::sys::time::now()),
        source: source.root.clone(),
        prefix: PathBuf::new(),
        source_head: None,
        baseline: baseline.to_string(),
        mode: crate::config::Mode::Worktree,
        forbid_commit: false,
        sparse: None,
        lease: crate::record::lease::Lease::new(1, None),
        preparing: None,
        remote: None,
        tasks: vec![batch::Task::open(
            task.to_string(),
            root.to_path_buf(),
            wid.to_string(),
        )],
    }
}

/// The path a worktree registration's `gitdir` file names, if readable.
fn read_gitdir_file(path: &Path) -> Option<PathBuf> {
    let text = std::fs::read(path).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    use std::os::unix::ffi::OsStrExt;
    (!text.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(text)))
}

/// A registration that names `root`'s `.git`, or a folder that is gone, or nothing readable.
fn registration_is_dead(reg: &Path, root: &Path) -> bool {
    match read_gitdir_file(&Registration::at(reg.to_path_buf()).gitdir_file()).map(|t| reg.join(t))
    {
        Some(target) => {
            same_path(&target, &root.join(".git"))
                || target
                    .parent()
                    .is_none_or(|f| f.symlink_metadata().is_err())
        }
        None => true,
    }
}

/// Does git have `root` registered as a worktree (of any repository)? Its
/// `.git` file names a registration whose `gitdir` names it back. A folder
/// holding a `.git` folder is a repository of its own: also never ours to remove.
fn is_registered_worktree(root: &Path) -> bool {
    let dotgit = root.join(".git");
    let Ok(meta) = dotgit.symlink_metadata() else {
        return false;
    };
    if !meta.is_file() {
        return true;
    }
    if std::fs::read(&dotgit).is_err() {
        return true; // unreadable: do not guess
    }
    let Some(target) = read_dotgit(root) else {
        return false;
    };
    match read_gitdir_file(&Registration::at(target.clone()).gitdir_file()) {
        Some(back) => same_path(&target.join(back), &dotgit),
        None => false,
    }
}

/// The registration the `.git` file in the opened folder `ws` names (made
/// absolute), read through its handle, never through a symlink.
fn read_dotgit_at(ws: &crate::workspace::shared_root::Dir) -> Option<PathBuf> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let f = rustix::fs::openat(
        ws.fd(),
        ".git",
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC
            | rustix::fs::OFlags::NONBLOCK,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let mut text = Vec::new();
    std::fs::File::from(f)
        .take(64 * 1024)
        .read_to_end(&mut text)
        .ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let target = text.strip_prefix(b"gitdir: ")?;
    Some(ws.path().join(std::ffi::OsStr::from_bytes(target)))
}

/// The registration a worktree folder's `.git` file names (made absolute).
fn read_dotgit(root: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let text = std::fs::read(root.join(".git")).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let target = text.strip_prefix(b"gitdir: ")?;
    Some(root.join(std::ffi::OsStr::from_bytes(target)))
}

fn same_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
