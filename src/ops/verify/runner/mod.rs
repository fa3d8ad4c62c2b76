//! The verification runs of design §3.10: each candidate set's `F` as a
//! commit under `refs/pi-delegate/batches/<uuid>/verify/<n>`, a verification
//! workspace made the way task workspaces are (on btrfs, snapshots of a
//! template, design §3.17), CMD through `sh -c` in its own process group
//! with stdin from `/dev/null`, a timeout that kills the group, and its log
//! `<common-dir>/delegate/logs/<uuid>/verify-<n>.log`.
//! Never: writes the source working tree; prints (CMD's output goes to its
//! log and, line by line, to the caller's `Observer`); lets the
//! repository-locating `GIT_*` variables reach CMD.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gix::ObjectId;

use super::leftovers::{remove_leftovers, Processes};
use super::{Ctx, Outcome, Report, Run};
use crate::error::{Code, Error, Result};
use crate::merge::integrate::{self, Candidate};
use crate::record::batch::{self, Batch};
use crate::writeback::{Blocked, PathWrite};

mod commands;
use commands::run_all;
/// One verification run being prepared or running.
struct Job {
    n: usize,
    tasks: Vec<String>,
    root: PathBuf,
    worktree_id: String,
    ref_name: String,
    tree: ObjectId,
    commit: ObjectId,
    log: PathBuf,
}

/// Makes the runs: numbering, workspaces, CMD, logs, clean-up.
pub(super) struct Runner<'a> {
    ctx: &'a Ctx<'a>,
    next_n: usize,
    runs: Vec<Run>,
    /// The `F` of each set evaluated (task indices), this round of search.
    pub(super) trees: HashMap<Vec<usize>, ObjectId>,
    logs_dir: PathBuf,
    ws_dir: PathBuf,
    baseline: Option<ObjectId>,
    /// Ignored files carried into each verification workspace (design §3.9).
    carried: Option<(PathBuf, Vec<crate::workspace::carry::Carried>)>,
    /// For each set `search` evaluated (in its order), the index in `runs`.
    pub(super) by_set: Vec<usize>,
    /// On btrfs (design §3.17): make the workspaces as snapshots of a
    /// template, made with the first one and removed when `Runner` goes.
    derive: bool,
    template: Option<crate::workspace::Template>,
}

impl Drop for Runner<'_> {
    /// The template goes when the verification ends, whatever the outcome
    /// (`--keep` keeps the runs' workspaces, not the template).
    fn drop(&mut self) {
        if let Some(t) = self.template.take() {
            let (root, id) = (&t.plan.root, &t.plan.worktree_id);
            if let Some(trash) = discard_workspace(self.ctx, ".verify-template", root, id) {
                crate::workspace::trash::spawn_purger(&trash, &self.ctx.source.state_dir());
            }
            crate::workspace::shared_root::remove_empty_parents(&self.ws_dir.join("x"));
        }
    }
}

impl<'a> Runner<'a> {
    pub(super) fn new(ctx: &'a Ctx<'a>) -> Result<Runner<'a>> {
        let b = ctx.batch;
        let logs_dir = ctx.source.state_dir().join("logs").join(&b.id);
        let ws_dir = ctx.source.workspace_base()?.join(b.short());
        sweep(ctx);
        // Numbers go on from runs of earlier applies (their failing logs stay).
        let mut last = 0usize;
        for dir in [&logs_dir, &ws_dir] {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    let num = name
                        .strip_prefix("verify-")
                        .and_then(|r| r.strip_suffix(".log"))
                        .or_else(|| name.strip_prefix(".verify-"));
                    if let Some(k) = num.and_then(|k| k.parse::<usize>().ok()) {
                        last = last.max(k);
                    }
                }
            }
        }
        let policy = crate::workspace::carry::Policy::load(
            &ctx.source.root,
            &ctx.source.config.copy_ignored,
            &[],
        )?;
        let carried = if policy.is_empty() || !crate::workspace::Kind::of_batch(b).carries_ignored()
        {
            None
        } else {
            let root = crate::sys::fs::canonical(&ctx.source.root)?;
            Some((
                root,
                crate::workspace::carry::find(&ctx.source.repo, &policy)?,
            ))
        };
        Ok(Runner {
            ctx,
            next_n: last + 1,
            runs: Vec::new(),
            trees: HashMap::new(),
            logs_dir,
            baseline: ObjectId::from_hex(b.baseline.as_bytes()).ok(),
            carried,
            by_set: Vec::new(),
            derive: crate::workspace::can_derive(ctx.source.config.snapshots, &ws_dir),
            template: None,
            ws_dir,
        })
    }

    pub(super) fn report(&self, outcome: Outcome) -> Report {
        Report {
            command: self.ctx.settings.command.clone(),
            outcome,
            runs: self.runs.clone(),
            reason: None,
        }
    }

    /// The log of the `run`-th set `search` evaluated.
    pub(super) fn log_of(&self, run: usize) -> PathBuf {
        self.by_set
            .get(run)
            .and_then(|&i| self.runs.get(i))
            .map(|r| r.log.clone())
            .unwrap_or_default()
    }

    /// Remove passing logs (failing ones are kept and named), unless `--keep`.
    pub(super) fn finish(&self) {
        if self.ctx.settings.keep {
            return;
        }
        for r in self.runs.iter().filter(|r| r.passed()) {
            let _ = std::fs::remove_file(&r.log);
        }
    }

    /// Evaluate `sets` (positions in `order`), all at once.
    pub(super) fn round(
        &mut self,
        sets: &[Vec<usize>],
        order: &[usize],
        cands: &[Candidate],
        s_tree: ObjectId,
        check: &mut dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>>,
    ) -> Result<Vec<bool>> {
        // Each set's `F`, as a commit and ref.
        let ctx = self.ctx;
        let b = ctx.batch;
        let mut jobs: Vec<Job> = Vec::new();
        let made = (|| -> Result<()> {
            for set in sets {
                let tasks: Vec<usize> = set.iter().map(|&p| order[p]).collect();
                let subset: Vec<Candidate> = cands
                    .iter()
                    .filter(|c| tasks.contains(&c.task))
                    .cloned()
                    .collect();
                let plan = integrate::integrate(
                    ctx.mem,
                    ctx.baseline_tree,
                    s_tree,
                    &subset,
                    ctx.strict,
                    check,
                )?;
                self.trees.insert(tasks.clone(), plan.f_tree);
                let names: Vec<String> = plan
                    .applied
                    .iter()
                    .filter_map(|&t| b.tasks.get(t).map(|t| t.name.clone()))
                    .collect();
                let n = self.next_n;
                self.next_n += 1;
                persist_tree(&ctx.source.repo, ctx.mem, plan.f_tree)?;
                let commit = crate::git::commit::write(
                    &ctx.source.repo,
                    plan.f_tree,
                    self.baseline,
                    format!(
                        "git-delegate verify {} {n}\n\ntasks: {}\n",
                        b.id,
                        names.join(" ")
                    ),
                )?;
                let ref_name = format!("{}batches/{}/verify/{n}", crate::git::refs::PREFIX, b.id);
                crate::git::refs::set(&ctx.source.repo, &ref_name, commit, false)?;
                jobs.push(Job {
                    n,
                    tasks: names,
                    root: self.ws_dir.join(format!(".verify-{n}")),
                    worktree_id: format!("delegate-{}--verify-{n}", b.short()),
                    ref_name,
                    tree: plan.f_tree,
                    commit,
                    log: self.logs_dir.join(format!("verify-{n}.log")),
                });
            }
            Ok(())
        })();
        let result = made
            .and_then(|()| self.make_workspaces(&jobs))
            .and_then(|()| {
                std::fs::create_dir_all(&self.logs_dir).map_err(|e| {
                    Error::io(format!("cannot create {}", self.logs_dir.display()), e)
                })?;
                run_all(ctx, &jobs)
            });
        self.clean_up(&jobs, result.is_ok());
        let runs = result?;
        let mut answers = Vec::with_capacity(runs.len());
        for run in runs {
            answers.push(run.passed());
            self.by_set.push(self.runs.len());
            self.runs.push(run);
        }
        Ok(answers)
    }

    /// Clean up what a round made (`--keep` keeps it after a round that
    /// ran, released as an ordinary worktree the batch no longer owns, as
    /// task workspaces are): its workspaces discarded, its refs deleted.
    fn clean_up(&self, jobs: &[Job], ok: bool) {
        let ctx = self.ctx;
        if ctx.settings.keep && ok {
            for j in jobs {
                let _ = crate::workspace::release(&ctx.source.common_dir, &j.worktree_id);
            }
        }
        if !ctx.settings.keep || !ok {
            let mut trashes: Vec<PathBuf> = Vec::new();
            for j in jobs {
                let name = format!(".verify-{}", j.n);
                match discard_workspace(ctx, &name, &j.root, &j.worktree_id) {
                    Some(trash) if !trashes.contains(&trash) => trashes.push(trash),
                    _ => {}
                }
                let _ = crate::git::refs::delete(&ctx.source.repo, &j.ref_name);
            }
            for t in &trashes {
                crate::workspace::trash::spawn_purger(t, &ctx.source.state_dir());
            }
            crate::workspace::shared_root::remove_empty_parents(&self.ws_dir.join("x"));
        }
    }

    /// The verification workspaces, made as task workspaces are (design
    /// §3.1 step 4, §3.9), in parallel.
    fn make_workspaces(&mut self, jobs: &[Job]) -> Result<()> {
        let ctx = self.ctx;
        let common = &ctx.source.common_dir;
        // Below the workspace root as task workspaces are (design §3.18).
        crate::workspace::shared_root::make_batch_dir_at(&self.ws_dir)?;
        crate::workspace::check_free(
            common,
            &jobs
                .iter()
                .map(|j| plan_of(ctx.batch, j))
                .collect::<Vec<_>>(),
        )?;
        let lost = || {
            Error::state(
                Code::Internal,
                "a checkout thread stopped unexpectedly",
                "report this bug; nothing was changed",
            )
        };
        // On btrfs, snapshots of a template (made at the first `F`);
        // those that could not be derived from it are checked out.
        if let Some(first) = jobs
            .first()
            .filter(|_| self.derive && self.template.is_none())
        {
            let plan = template_plan(ctx.batch, &self.ws_dir);
            let carried = &self.carried;
            let made = crate::workspace::check_free(common, std::slice::from_ref(&plan))
                .map_err(Error::from)
                .and_then(|()| {
                    crate::workspace::create_template(
                        common,
                        first.commit,
                        first.tree,
                        &plan,
                        |root| {
                            if let Some((src, entries)) = carried {
                                crate::workspace::carry::carry(
                                    src,
                                    entries,
                                    &[root.to_path_buf()],
                                )?;
                            }
                            Ok(())
                        },
                    )
                    .map_err(Error::from)
                });
            match made {
                Ok(t) => self.template = Some(t),
                Err(e) if gix::interrupt::is_triggered() => return Err(e),
                // Made as elsewhere: checked out.
                Err(_) => self.derive = false,
            }
        }
        let template = self.template.as_ref();
        let derived = crate::sys::parallel::try_map(jobs.iter(), jobs.len(), lost, |j| {
            let plan = plan_of(ctx.batch, j);
            match template {
                Some(t) => crate::workspace::create_from(common, t, j.commit, j.tree, &plan)
                    .map_err(Error::from),
                None => crate::workspace::create_all(common, j.commit, j.tree, &[plan])
                    .map(|()| false)
                    .map_err(Error::from),
            }
        })?;
        // The submodules a build needs, at the commits `F` records (design §3.15).
        let modules = crate::workspace::submodules::find(ctx.source)?;
        for j in jobs.iter().filter(|_| !modules.is_empty()) {
            let p = plan_of(ctx.batch, j);
            crate::workspace::submodules::create(
                &ctx.source.repo,
                j.tree,
                &modules,
                &j.root,
                &p.worktree_id,
                &p.lock_reason,
            )?;
        }
        if let Some((src, entries)) = &self.carried {
            // A snapshot holds them already.
            let roots: Vec<PathBuf> = jobs
                .iter()
                .zip(&derived)
                .filter(|(_, d)| !**d)
                .map(|(j, _)| j.root.clone())
                .collect();
            crate::workspace::carry::carry(src, entries, &roots)?;
        }
        Ok(())
    }
}

/// Remove what an apply killed while verifying this batch left behind:
/// verification workspaces (only folders that are ours and still locked
/// as such, `remove_leftovers`) and every verify ref of the batch. Runs
/// under the repository lock, with no other apply verifying the batch.
fn sweep(ctx: &Ctx<'_>) {
    let id = ctx.batch.id.as_str();
    remove_leftovers(ctx.source, &|b| b == id, Processes::Stop, false);
    if let Ok(names) = crate::git::refs::list_batch(&ctx.source.repo, id) {
        let prefix = format!("{}batches/{id}/verify/", crate::git::refs::PREFIX);
        for r in names.iter().filter(|r| r.starts_with(&prefix)) {
            let _ = crate::git::refs::delete(&ctx.source.repo, r);
        }
    }
}

/// Remove a verification workspace (or the template) as apply removes
/// task workspaces: moved into the trash (one rename) and deleted by a
/// background process (the trash folder returned, for
/// `trash::spawn_purger`), or removed in place.
fn discard_workspace(ctx: &Ctx<'_>, name: &str, root: &Path, worktree_id: &str) -> Option<PathBuf> {
    let mut t = batch::Task::open(
        name.to_string(),
        root.to_path_buf(),
        worktree_id.to_string(),
    );
    t.folder = crate::workspace::folder_of(root);
    match crate::workspace::discard(&ctx.source.common_dir, &t) {
        Ok((_, trash)) => trash,
        Err(_) => {
            let _ = crate::workspace::remove(&ctx.source.common_dir, root, worktree_id);
            None
        }
    }
}

/// The template of design §3.17: `.verify-template` beside the
/// verification workspaces (a leftover is swept as theirs are).
fn template_plan(b: &Batch, ws_dir: &Path) -> crate::workspace::Plan {
    crate::workspace::Plan {
        root: ws_dir.join(".verify-template"),
        worktree_id: format!("delegate-{}--verify-template", b.short()),
        lock_reason: crate::git::registration::verify_lock_reason(&b.id, "template"),
        stat: None,
    }
}

fn plan_of(b: &Batch, j: &Job) -> crate::workspace::Plan {
    crate::workspace::Plan {
        root: j.root.clone(),
        worktree_id: j.worktree_id.clone(),
        lock_reason: crate::git::registration::verify_lock_reason(&b.id, &j.n.to_string()),
        stat: None,
    }
}

/// Copy the objects of `tree` that only `mem` holds into `disk`, so a
/// worktree can be checked out at it.
fn persist_tree(disk: &gix::Repository, mem: &gix::Repository, tree: ObjectId) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| {
        Error::git(format!("cannot store object {tree}"), e.to_string())
    };
    let mut todo = vec![tree];
    while let Some(id) = todo.pop() {
        if disk.has_object(id) {
            continue;
        }
        let obj = mem.find_object(id).map_err(|e| err(&e))?;
        if obj.kind == gix::object::Kind::Tree {
            let t = gix::objs::TreeRefIter::from_bytes(&obj.data, disk.object_hash());
            for e in t {
                let e = e.map_err(|e| err(&e))?;
                if e.mode.is_commit() {
                    continue;
                }
                todo.push(e.oid.to_owned());
            }
        }
        gix::objs::Write::write_buf(disk, obj.kind, &obj.data).map_err(|e| err(&e))?;
    }
    Ok(())
}
