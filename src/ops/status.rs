//! What `git delegate status` shows (design §3.3), computed: the batches
//! (one or all), each task's changed-path count and whether its workspace
//! is still the one prepare made, the problems (`problems`), and the
//! proposals kept after their task ended (design §3.16 "kept"), and the
//! processes running in each workspace (design §3.16), and the files
//! still conflicted in each `conflicted` task's workspace (design §3.12),
//! how many undo entries there are (design §3.11), and with `--fetch` which
//! remote tasks have submitted (design §3.14); `commands/status.rs` renders
//! the [`Report`].
//!
//! Owns: which batches a status covers and what is computed for each (the
//! half-made workspaces of a batch whose prepare never completed are never
//! counted as work, design §3.15); each task's workspace health as every
//! batch document shows it (`health`, the document's `exists`).
//! Never: changes anything or takes the lock (workspace snapshots are kept
//! in memory); words anything.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::git::repo::Source;
use crate::ops::problems::{self, Problem};
use crate::record::batch::{self, Batch, Entry};
use crate::record::kept::Kept;
use crate::workspace;

/// One readable batch as status shows it.
pub struct StatusBatch {
    /// The batch as recorded, but for each `conflicted` task whose workspace
    /// is there and ours: its `conflicted_paths` are the files still
    /// unresolved in that workspace now (design §3.12, `refresh::unresolved`:
    /// unmerged entries, refresh's markers), so a file the worker resolved
    /// is no longer listed and one a conflict of its own left is.
    pub batch: Batch,
    /// Per task: how many paths its workspace changed (`None`: unknown, its
    /// workspace could not be read, or the batch is incomplete).
    pub counts: Vec<Option<usize>>,
    /// Per task: whether its workspace is there and ours (`Ours`),
    /// missing, or replaced (`Foreign`).
    pub health: Vec<workspace::Health>,
    /// Per task: the processes running inside its workspace (design §3.16;
    /// none for a workspace that is missing or not ours).
    pub processes: Vec<Vec<crate::sys::quiesce::Proc>>,
    /// With `fetch`, a batch with remote tasks (design §3.14): the remote
    /// tasks its remote says have submitted, or why it could not be asked
    /// (a warning; the document says `null`). `None` when not asked.
    pub submitted: Option<std::result::Result<HashSet<String>, Error>>,
}

/// What status found.
pub struct Report {
    /// Whether there was any batch entry at all (readable or not).
    pub any: bool,
    pub batches: Vec<StatusBatch>,
    pub problems: Vec<Problem>,
    pub kept: Vec<Kept>,
    /// Idle workspaces in the pool (design §3.20).
    pub idle: usize,
    /// Undo entries (design §3.11): how many there are, and how many of
    /// them are not undone.
    pub undo: (usize, usize),
}

/// Per task of `batch`: whether its workspace is there and ours, missing,
/// or replaced (what documents show as `exists`, design §6.1).
pub fn health(source: &Source, batch: &Batch) -> Vec<workspace::Health> {
    batch
        .tasks
        .iter()
        .map(|t| workspace::health(&source.common_dir, t))
        .collect()
}

/// The status of `source`'s batches, or of the one `selector` names (a
/// batch whose state is unreadable can be named too: it shows as a
/// problem). When there is no batch entry, nothing but the kept proposals
/// and the problems found without one is computed (design §3.3's fast path).
/// With `fetch`, each batch's remote is asked which remote tasks have
/// submitted (design §3.14).
pub fn run(source: &Source, selector: Option<&str>, fetch: bool) -> Result<Report> {
    let mut entries = batch::list(&source.state_dir())?;
    // Proposals kept after their task ended (design §3.16): gc rescues,
    // discards, batches that are gone. Listing them reads only our refs.
    let mut kept = crate::record::kept::kept_proposals(source, &entries).unwrap_or_default();
    if let Some(arg) = selector {
        let chosen = batch::choose(entries, Some(arg))?;
        kept.retain(|k| match &chosen {
            Entry::Batch(b) => k.batch == b.id,
            Entry::Broken { id, .. } => &k.batch == id,
        });
        entries = vec![chosen];
    }
    let mut problems = problems::of_batches(source, &entries);
    // Commands in delegate.toml the user has not confirmed (design §3.18;
    // nothing is recorded here: status changes nothing).
    if let Ok(Some(u)) = crate::ops::trust::check(source, &crate::config::COMMAND_KEYS, false) {
        let (named, help) = (u.named(), u.help());
        problems.push(problems::untrusted_config(u.file, named, help));
    }
    let undo_entries = crate::ops::undo::list(&source.state_dir());
    let undo = (
        undo_entries.len(),
        undo_entries.iter().filter(|e| !e.undone).count(),
    );
    let any = !entries.is_empty();
    if !any && problems.is_empty() {
        return Ok(Report {
            any,
            batches: Vec::new(),
            problems,
            kept,
            idle: crate::workspace::pool::list(&source.state_dir()).len(),
            undo,
        });
    }
    let mut batches = Vec::new();
    for e in entries {
        let Entry::Batch(b) = e else { continue };
        // Half-made workspaces of an incomplete batch are never counted as work.
        let counts = match crate::ops::preparing::progress(&b) {
            Some(_) => vec![None; b.tasks.len()],
            None => problems::changed_counts(source, &b),
        };
        batches.push(StatusBatch {
            health: Vec::new(),
            processes: Vec::new(),
            submitted: None,
            counts,
            batch: *b,
        });
    }
    for s in &batches {
        if s.batch.preparing.is_none() {
            problems.extend(problems::unreadable(&s.batch, &s.counts));
        }
    }
    for s in &mut batches {
        s.health = health(source, &s.batch);
        still_conflicted(source, &mut s.batch);
    }
    processes(&mut batches);
    if fetch {
        for s in batches
            .iter_mut()
            .filter(|s| s.batch.tasks.iter().any(|t| t.remote))
        {
            s.submitted = Some(
                crate::ops::remote_workers::submitted(source, &s.batch)
                    .map(|found| found.into_keys().collect()),
            );
        }
    }
    Ok(Report {
        any,
        batches,
        problems,
        kept,
        idle: crate::workspace::pool::list(&source.state_dir()).len(),
        undo,
    })
}

/// Each `conflicted` task of `batch` whose workspace is there and ours:
/// its `conflicted_paths` become the files still unresolved there now.
fn still_conflicted(source: &Source, batch: &mut Batch) {
    for t in batch.tasks.iter_mut() {
        if t.state != batch::TaskState::Conflicted {
            continue;
        }
        if let workspace::Identity::Ours { real, .. } = workspace::identify(&source.common_dir, t) {
            let mut now: Vec<String> = crate::ops::refresh::unresolved(t, &real)
                .into_iter()
                .map(|c| String::from_utf8_lossy(&c.path).into_owned())
                .collect();
            now.sort();
            now.dedup();
            t.conflicted_paths = now;
        }
    }
}

/// The processes running in every workspace that is there and ours, in
/// one /proc scan.
fn processes(batches: &mut [StatusBatch]) {
    let ours: Vec<(usize, usize)> = batches
        .iter()
        .enumerate()
        .flat_map(|(bi, s)| {
            s.health
                .iter()
                .enumerate()
                .filter(|(_, h)| matches!(h, workspace::Health::Ours))
                .map(move |(ti, _)| (bi, ti))
        })
        .collect();
    let roots: Vec<std::path::PathBuf> = ours
        .iter()
        .map(|&(bi, ti)| batches[bi].batch.tasks[ti].root.clone())
        .collect();
    for s in batches.iter_mut() {
        s.processes = vec![Vec::new(); s.batch.tasks.len()];
    }
    for (&(bi, ti), procs) in ours.iter().zip(crate::sys::quiesce::describe_all(&roots)) {
        batches[bi].processes[ti] = procs;
    }
}
