//! Step 1 of apply (design §3.2): fetch what remote tasks submitted, check
//! each selected workspace's identity, stop what still runs in the
//! workspaces, record every proposal (commit, ref; its patch is written in
//! step 5 only where the task keeps it), and turn each into an outcome or
//! a candidate for the integration; then the side effects the workspaces
//! left (design §3.16).
//!
//! Owns: which tasks are read (a folder that is not the workspace prepare
//! made is never read, quiesced nor recorded), the parallel probes and
//! snapshots of the workspaces, and the outcomes step 1 decides (unresolved
//! refresh conflicts, processes running, snapshot failures, submodule
//! changes, paths git refuses, nested repositories, stashed work).
//! Never: merges, writes into the source's working tree, or removes a
//! workspace; writes anything durable with `--dry-run`.

use std::collections::HashMap;

use gix::ObjectId;

use super::{Options, Outcome};
use crate::error::Result;
use crate::git::repo::Source;
use crate::merge::integrate::Candidate;
use crate::ops::remote_workers::Fetched;
use crate::record::batch::{self, Batch, TaskState};
use crate::workspace;

mod read;
mod select;
mod take;

use select::{select, stop, Selected};
use take::take;

/// The proposals git would not fetch, by task (`remote::Fetched`).
pub(super) type Unfetched =
    std::collections::BTreeMap<String, crate::ops::remote_workers::Unfetchable>;

/// What step 1 reads from.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub source: &'a Source,
    pub b: &'a Batch,
    pub opts: &'a Options,
    pub baseline_tree: ObjectId,
    /// The batch's mode is `scratch`: every task is discarded.
    pub scratch: bool,
}

/// What step 1 hands on.
pub(super) struct Recording {
    /// The selected tasks, in selection order (remote ones included).
    pub outcomes: Vec<Outcome>,
    /// The proposals to integrate, in task order.
    pub candidates: Vec<Candidate>,
    /// What the remote tasks submitted (design §3.14).
    pub fetched: HashMap<String, ObjectId>,
    /// Branches, tags and stash entries the workspaces made, and changes
    /// to the shared git dir (design §3.16).
    pub side_effects: Vec<crate::ops::side_effects::SideEffect>,
}

/// Step 1 for the `selected` tasks; the proposals' objects of a dry run
/// are added to `mem`.
pub(super) fn record(
    cx: Ctx<'_>,
    selected: &[(usize, bool)],
    mem: &mut gix::Repository,
) -> Result<Recording> {
    let Ctx {
        source, b, opts, ..
    } = cx;
    let dry_run = opts.dry_run;
    // design §3.14: what the remote tasks submitted, fetched first (a
    // remote that fails stops the apply before anything changed).
    // One proposal git refuses to fetch fails its own task alone (design
    // §3.18 "Bounded work on remote bytes").
    let Fetched {
        found: mut fetched,
        unfetchable,
    } = {
        // (A discarded one's too: its submitted work is kept, as a local
        // workspace's is, before the batch's remote refs may go.)
        let names: Vec<&str> = selected
            .iter()
            .filter(|&&(i, discard)| b.tasks[i].remote && !(discard && dry_run))
            .map(|&(i, _)| b.tasks[i].name.as_str())
            .collect();
        match names.is_empty() {
            true => Default::default(),
            false => crate::ops::remote_workers::fetch_proposals(source, b, &names, !dry_run)?,
        }
    };
    let Selected {
        mut outcomes,
        pending,
        roots,
        received,
    } = select(cx, selected, (&fetched, &unfetchable))?;
    // A discarded task whose proposal git would not fetch: what the remote
    // lists is what the batch's end deletes there (the user ended it, and
    // nothing can fetch it), as `drop --force` deletes what it listed.
    for &(i, discard) in selected {
        if let (true, Some(u)) = (discard, unfetchable.get(&b.tasks[i].name)) {
            fetched.insert(b.tasks[i].name.clone(), u.listed);
        }
    }
    let to_record = stop(cx, &mut outcomes, &pending, &roots);
    let mut candidates = take(
        cx,
        &mut outcomes,
        (&pending, &roots),
        to_record,
        received,
        mem,
    )?;
    // Branches, tags and stash entries the workspaces made (design §3.16);
    // a task whose work sits in the stash stays open.
    let mut side_effects = crate::ops::side_effects::find(source, b)?;
    if !dry_run {
        // Reporting only: a failure to keep it changes no outcome.
        let _ = crate::ops::side_effects::remember(source, b, &side_effects);
    }
    // And what changed in the shared config and hooks (design §3.16 "The
    // shared git dir"): reported, never a task's outcome.
    side_effects.extend(crate::ops::side_effects::find_git_dir(source, b));
    stash_holds_work(b, &side_effects, &mut outcomes, &mut candidates);
    candidates.sort_by_key(|c| c.task);
    Ok(Recording {
        outcomes,
        candidates,
        fetched,
        side_effects,
    })
}

/// A task whose workspace pushed entries still in the stash has work
/// there that apply cannot see: it stays open (reason `stashed`), whatever
/// its workspace holds, so neither is applied without the other nor its
/// workspace removed (design §3.16).
fn stash_holds_work(
    b: &Batch,
    effects: &[crate::ops::side_effects::SideEffect],
    outcomes: &mut [Outcome],
    candidates: &mut Vec<Candidate>,
) {
    for (task, entries) in crate::ops::side_effects::stashed(effects) {
        let Some(out) = outcomes.iter_mut().find(|o| o.idx == task) else {
            continue;
        };
        if !matches!(out.status, TaskState::NoChanges | TaskState::Open) {
            continue;
        }
        candidates.retain(|c| c.task != task);
        let names: Vec<String> = entries.iter().map(|e| e.display_name()).collect();
        out.status = TaskState::Open;
        out.reason = Some("stashed");
        out.message = Some(format!(
            "the work of task {} is in the repository's stash ({}), not in its workspace",
            b.tasks[task].name,
            names.join(", ")
        ));
    }
}

/// Why a task's workspace cannot be read (reason `workspace_missing`).
pub(super) fn missing_message(task: &batch::Task, identity: &workspace::Identity) -> String {
    match identity {
        workspace::Identity::Replaced(why) => format!(
            "the workspace {} {why}: it is no longer the folder prepare made, so it is neither read nor removed",
            task.root.display()
        ),
        _ => format!("the workspace {} is missing", task.root.display()),
    }
}
