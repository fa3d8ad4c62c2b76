//! `git delegate status` (SPEC §3.3): batches, leases, tasks, and problems.
//! Changes nothing and takes no lock: workspace snapshots are kept in memory.
//! A batch whose prepare never completed is shown as such (its half-made
//! workspaces are never counted as work) and, once its prepare is gone,
//! reported as a problem (SPEC §3.15).

use serde_json::{json, Value};

use crate::batch::{self, Batch, Entry};
use crate::cli::StatusArgs;
use crate::error::Result;
use crate::repo::Source;
use crate::ui::Ui;
use crate::{diff, snapshot, workspace};

pub struct Problem {
    pub batch: String,
    pub kind: &'static str,
    pub message: String,
}

/// Problems of a repository's batches: stale leases, unreadable state,
/// left-over write-back journals, deleted baseline refs, workspaces the user
/// deleted or replaced.
pub fn problems(source: &Source, entries: &[Entry]) -> Vec<Problem> {
    let mut out = Vec::new();
    for e in entries {
        match e {
            Entry::Batch(b) => {
                // A batch whose prepare never completed (SPEC §3.15): a
                // problem once its prepare is gone, and nothing else about
                // it counts (its workspaces and refs may be half-made).
                match crate::preparing::progress(b) {
                    Some(crate::preparing::Progress::Interrupted) => {
                        out.push(Problem {
                            batch: b.id.clone(),
                            kind: "interrupted_prepare",
                            message: format!(
                                "batch {} was never completely prepared (its prepare was killed) and holds no work; `git delegate gc` or `git delegate drop {} --force` removes it",
                                b.short(),
                                b.short()
                            ),
                        });
                        continue;
                    }
                    Some(crate::preparing::Progress::Preparing) => continue,
                    None => {}
                }
                let state = b.lease.state();
                if state.is_stale() {
                    out.push(Problem {
                        batch: b.id.clone(),
                        kind: state.as_str(),
                        message: format!(
                            "batch {} is stale (lease {}); apply it, `git delegate renew {}`, or `git delegate gc`",
                            b.short(),
                            state.as_str(),
                            b.short()
                        ),
                    });
                }
                if batch::batch_dir(&source.state_dir(), &b.id)
                    .join(batch::JOURNAL_FILE)
                    .exists()
                {
                    out.push(Problem {
                        batch: b.id.clone(),
                        kind: "journal",
                        message: format!(
                            "batch {} has an interrupted write-back; the next git delegate command that changes things rolls it back",
                            b.short()
                        ),
                    });
                }
                out.extend(baseline_problem(source, b));
                for t in b.open_tasks() {
                    let (kind, what) =
                        match workspace::health(&source.common_dir, &t.root, &t.worktree_id) {
                            workspace::Removal::Removed => continue,
                            workspace::Removal::Missing => ("workspace_missing", "is missing"),
                            workspace::Removal::Foreign => (
                                "workspace_replaced",
                                "is no longer the workspace prepare made (left alone)",
                            ),
                        };
                    out.push(Problem {
                        batch: b.id.clone(),
                        kind,
                        message: format!(
                            "batch {} task {}: the workspace {} {what}; `git delegate drop {}` ends the batch",
                            b.short(),
                            t.name,
                            super::show(&t.root),
                            b.short()
                        ),
                    });
                }
            }
            Entry::Broken { id, problem } => out.push(Problem {
                batch: id.clone(),
                kind: "broken_state",
                message: problem.clone(),
            }),
        }
    }
    for (batch, message) in crate::scratch::orphan_messages(source) {
        out.push(Problem {
            batch,
            kind: "scratch_orphan",
            message,
        });
    }
    out
}

/// A baseline ref deleted (or moved) by someone else, or a baseline commit
/// that is gone.
fn baseline_problem(source: &Source, b: &Batch) -> Option<Problem> {
    let name = crate::refs::baseline(&b.id);
    let (kind, message) = match crate::refs::get(&source.repo, &name) {
        Ok(Some(id)) if gix::ObjectId::from_hex(b.baseline.as_bytes()).ok() == Some(id) => {
            return None
        }
        Ok(Some(id)) => (
            "ref_moved",
            format!(
                "batch {}: the ref {name} was moved to {id} by someone else (the baseline is {})",
                b.short(),
                b.baseline
            ),
        ),
        Ok(None) | Err(_) => {
            let present = gix::ObjectId::from_hex(b.baseline.as_bytes())
                .ok()
                .is_some_and(|id| source.repo.find_commit(id).is_ok());
            (
                "ref_missing",
                if present {
                    format!(
                        "batch {}: the ref {name} was deleted by someone else; the baseline commit {} is still there but unprotected from `git gc`",
                        b.short(),
                        b.baseline
                    )
                } else {
                    format!(
                        "batch {}: the ref {name} was deleted and the baseline commit {} is gone; drop the batch",
                        b.short(),
                        b.baseline
                    )
                },
            )
        }
    };
    Some(Problem {
        batch: b.id.clone(),
        kind,
        message,
    })
}

/// How many paths of each task's workspace differ from the baseline: `Some(0)`
/// for tasks that are not open or whose workspace is missing or not ours,
/// `None` where the workspace could not be read (the count is unknown).
pub fn changed_counts_checked(source: &Source, b: &Batch) -> Vec<Option<usize>> {
    let baseline_tree = gix::ObjectId::from_hex(b.baseline.as_bytes())
        .ok()
        .and_then(|c| source.repo.find_commit(c).ok())
        .and_then(|c| c.tree_id().ok())
        .map(|t| t.detach());
    b.tasks
        .iter()
        .map(|t| {
            if !t.state.is_open()
                || workspace::health(&source.common_dir, &t.root, &t.worktree_id)
                    != workspace::Removal::Removed
            {
                return Some(0);
            }
            let base = baseline_tree?;
            let repo = crate::repo::open_worktree(&t.root).ok()?;
            // Keep the snapshot's objects in memory: status changes nothing.
            let repo = repo.with_object_memory();
            snapshot::snapshot(&repo)
                .and_then(|s| diff::trees(&repo, base, s.tree))
                .map(|c| c.len())
                .ok()
        })
        .collect()
}

/// Problems found while counting changes: workspaces that could not be read.
fn count_problems(b: &Batch, counts: &[Option<usize>]) -> Vec<Problem> {
    b.tasks
        .iter()
        .zip(counts)
        .filter(|(_, c)| c.is_none())
        .map(|(t, _)| Problem {
            batch: b.id.clone(),
            kind: "workspace_unreadable",
            message: format!(
                "batch {} task {}: the workspace {} cannot be read, so its changes are unknown",
                b.short(),
                t.name,
                super::show(&t.root)
            ),
        })
        .collect()
}

pub fn run(ui: &Ui, args: StatusArgs) -> Result<i32> {
    let source = super::source()?;
    let mut entries = batch::list(&source.state_dir())?;
    if let Some(arg) = args.batch.as_deref() {
        let chosen = batch::select(batch::list_ok(&source.state_dir())?, Some(arg))?;
        entries = vec![Entry::Batch(Box::new(chosen))];
    }
    let mut problems = problems(&source, &entries);
    if entries.is_empty() && problems.is_empty() {
        // The fast path (SPEC §3.3: no batches, well under 20 ms).
        if ui.json {
            ui.doc(json!({ "batches": [], "problems": [] }));
        } else if !args.check {
            ui.say("No batches.\n");
        }
        return Ok(0);
    }
    let batches: Vec<&Batch> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(b.as_ref()),
            Entry::Broken { .. } => None,
        })
        .collect();
    // Half-made workspaces of an incomplete batch are never counted as work.
    let counts: Vec<Vec<Option<usize>>> = batches
        .iter()
        .map(|b| match crate::preparing::progress(b) {
            Some(_) => vec![None; b.tasks.len()],
            None => changed_counts_checked(&source, b),
        })
        .collect();
    for (b, c) in batches.iter().zip(&counts) {
        if b.preparing.is_none() {
            problems.extend(count_problems(b, c));
        }
    }
    let code = if args.check && !problems.is_empty() {
        1
    } else {
        0
    };

    if ui.json {
        let docs: Vec<Value> = batches
            .iter()
            .zip(&counts)
            .map(|(b, c)| {
                let known: Vec<usize> = c.iter().map(|n| n.unwrap_or(0)).collect();
                let mut d = super::batch_doc(&source, b, Some(&known));
                if let Value::Object(m) = &mut d {
                    m.insert("schema".into(), json!(crate::ui::SCHEMA));
                    // An unknown count is null, never a made-up number.
                    if let Some(Value::Array(tasks)) = m.get_mut("tasks") {
                        for (t, n) in tasks.iter_mut().zip(c) {
                            if let (Value::Object(t), None) = (t, n) {
                                t.insert("changed_paths".into(), Value::Null);
                            }
                        }
                    }
                }
                d
            })
            .collect();
        let problems: Vec<Value> = problems
            .iter()
            .map(|p| json!({"batch": p.batch, "kind": p.kind, "message": p.message}))
            .collect();
        ui.doc(json!({ "batches": docs, "problems": problems }));
        return Ok(code);
    }

    if args.check {
        let text: String = problems
            .iter()
            .map(|p| format!("{}\n", p.message))
            .collect();
        ui.say(&text);
        return Ok(code);
    }
    if batches.is_empty() && problems.is_empty() {
        ui.say("No batches.\n");
        return Ok(0);
    }
    let now = crate::time::now();
    let mut text = String::new();
    for (b, counts) in batches.iter().zip(&counts) {
        let created = crate::time::parse_rfc3339(&b.created_at).unwrap_or(now);
        let state = b.lease.state();
        let expires = b.lease.expires_at_secs() - now;
        text.push_str(&format!(
            "batch {}{}  {}  created {} ago  baseline {}{}\n",
            ui.bold(b.short()),
            b.label
                .as_ref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default(),
            b.mode,
            crate::time::human(now - created),
            &b.baseline[..7.min(b.baseline.len())],
            b.source_head
                .as_ref()
                .map(|h| format!(" (on HEAD {})", &h[..7.min(h.len())]))
                .unwrap_or_default(),
        ));
        let progress = crate::preparing::progress(b);
        match progress {
            Some(crate::preparing::Progress::Interrupted) => text.push_str(&format!(
                "  {}: its prepare was killed; no worker was given it; `git delegate gc` removes it\n",
                ui.paint("31", "interrupted")
            )),
            Some(crate::preparing::Progress::Preparing) => text.push_str(&format!(
                "  {}: its prepare (pid {}) still runs\n",
                ui.paint("33", "preparing"),
                b.preparing.as_ref().map(|m| m.pid).unwrap_or_default()
            )),
            None => {}
        }
        let state = match progress {
            Some(crate::preparing::Progress::Interrupted) => crate::lease::State::Orphaned,
            _ => state,
        };
        let lease_state = match state {
            crate::lease::State::Live => ui.paint("32", "live"),
            s => ui.paint("31", s.as_str()),
        };
        text.push_str(&format!(
            "  lease {lease_state}, {} {}{}\n",
            if expires > 0 { "expires in" } else { "expired" },
            crate::time::human(expires),
            if expires > 0 {
                String::new()
            } else {
                " ago".into()
            },
        ));
        if let Some(pid) = b.lease.owner_pid {
            text.push_str(&format!("  owner pid {pid} on {}\n", b.lease.host));
        }
        for (t, n) in b.tasks.iter().zip(counts) {
            let n = n.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
            let health = workspace::health(&source.common_dir, &t.root, &t.worktree_id);
            let where_ = match health {
                workspace::Removal::Removed => super::show(&t.root),
                workspace::Removal::Missing if !t.state.is_open() => {
                    "(workspace removed)".to_string()
                }
                workspace::Removal::Missing => format!("{} (missing)", super::show(&t.root)),
                workspace::Removal::Foreign => {
                    format!("{} (replaced; not ours)", super::show(&t.root))
                }
            };
            text.push_str(&format!(
                "  task {:<8} {:<10} {:>4} changed  {where_}{}\n",
                t.name,
                if progress.is_some() {
                    "incomplete"
                } else {
                    t.state.as_str()
                },
                n,
                t.reason
                    .as_ref()
                    .map(|r| format!("  ({r})"))
                    .unwrap_or_default()
            ));
        }
    }
    for p in &problems {
        text.push_str(&format!("{} {}\n", ui.paint("33", "problem:"), p.message));
    }
    ui.say(&text);
    Ok(code)
}
