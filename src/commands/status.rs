//! `git delegate status` (SPEC §3.3): batches, leases, tasks, problems, and
//! the proposals kept after their task ended (SPEC §3.16 "kept").
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
                let dir = batch::batch_dir(&source.state_dir(), &b.id);
                if dir.join(batch::JOURNAL_FILE).exists() {
                    let left = crate::writeback::left_paths(&dir);
                    let message = if left.is_empty() {
                        format!(
                            "batch {} has an interrupted write-back; the next git delegate command that changes things rolls it back (a path you changed since is left as you left it, and named)",
                            b.short()
                        )
                    } else {
                        let named: Vec<String> = left
                            .iter()
                            .map(|l| {
                                format!(
                                    "{} ({} is kept at {})",
                                    crate::paths::quote(l.path.as_ref()),
                                    if l.yours {
                                        "your version"
                                    } else {
                                        "its original"
                                    },
                                    super::show(&l.kept)
                                )
                            })
                            .collect();
                        format!(
                            "batch {}: rolling back its write-back left paths you changed as you left them: {}; keep yours by deleting the kept file, or move the kept file over the path, then run `git delegate gc`",
                            b.short(),
                            named.join(", ")
                        )
                    };
                    out.push(Problem {
                        batch: b.id.clone(),
                        kind: "journal",
                        message,
                    });
                }
                out.extend(baseline_problem(source, b));
                for t in b.open_tasks() {
                    let (kind, what) = match workspace::identify(&source.common_dir, t) {
                        workspace::Identity::Ours { .. } => continue,
                        workspace::Identity::Missing => ("workspace_missing", "is missing".into()),
                        workspace::Identity::Replaced(why) => (
                            "workspace_replaced",
                            format!(
                                "{why}: it is no longer the workspace prepare made (never read nor removed)"
                            ),
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
                message: format!(
                    "batch {}: its state is corrupt: {problem}; remove it with `git delegate drop {id} --force` (the changes in its workspaces are saved as proposal refs first)",
                    batch::short(id)
                ),
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

/// How many paths of each task's workspace differ from the baseline (a
/// nested repository the worker made counts as one path): `Some(0)`
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
            if !t.state.is_open() {
                return Some(0);
            }
            // Only the folder prepare made is read, at its real path.
            let workspace::Identity::Ours { real, .. } = workspace::identify(&source.common_dir, t)
            else {
                return Some(0);
            };
            let base = baseline_tree?;
            let repo = crate::repo::open_worktree(&real).ok()?;
            // Keep the snapshot's objects in memory: status changes nothing.
            let repo = repo.with_object_memory();
            // A nested repository the worker made counts as one changed
            // path: it is work apply cannot take (SPEC §3.2).
            snapshot::snapshot_workspace(&repo)
                .and_then(|s| Ok(diff::trees(&repo, base, s.tree)?.len() + s.nested_repos.len()))
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
    // Proposals kept after their task ended (SPEC §3.16): gc rescues,
    // discards, batches that are gone. Listing them reads only our refs.
    let mut kept = crate::gc::kept_proposals(&source, &entries).unwrap_or_default();
    if let Some(arg) = args.batch.as_deref() {
        // A batch whose state is unreadable can be named too: it shows as a problem.
        entries = vec![batch::choose(entries, Some(arg))?];
        kept.retain(|k| match &entries[0] {
            Entry::Batch(b) => k.batch == b.id,
            Entry::Broken { id, .. } => &k.batch == id,
        });
    }
    let kept_doc: Vec<Value> = kept
        .iter()
        .map(|k| {
            json!({
                "ref": k.ref_name,
                "patch": k.patch.as_deref().map(crate::paths::doc_path),
                "batch": k.batch,
                "task": k.task,
                "expires_at": crate::time::rfc3339(k.expires_at),
            })
        })
        .collect();
    let kept_text: String = kept
        .iter()
        .map(|k| {
            format!(
                "kept: {} (task {} of batch {}) until {}{}\n",
                k.ref_name,
                k.task,
                batch::short(&k.batch),
                crate::time::rfc3339(k.expires_at),
                k.patch
                    .as_ref()
                    .map(|p| format!(", patch {}", super::show(p)))
                    .unwrap_or_default()
            )
        })
        .collect();
    let mut problems = problems(&source, &entries);
    if entries.is_empty() && problems.is_empty() {
        // The fast path (SPEC §3.3: no batches, well under 20 ms).
        if ui.json {
            let mut doc = json!({ "batches": [], "problems": [] });
            if !kept_doc.is_empty() {
                doc["kept"] = json!(kept_doc);
            }
            ui.doc(doc);
        } else if !args.check {
            ui.say(&format!("No batches.\n{kept_text}"));
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
        let mut doc = json!({ "batches": docs, "problems": problems });
        if !kept_doc.is_empty() {
            doc["kept"] = json!(kept_doc);
        }
        ui.doc(doc);
        return Ok(code);
    }

    if args.check {
        let text: String = problems
            .iter()
            .map(|p| format!("{}\n", crate::ui::escape_text(&p.message)))
            .collect();
        ui.say(&text);
        return Ok(code);
    }
    if batches.is_empty() && problems.is_empty() {
        ui.say(&format!("No batches.\n{kept_text}"));
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
            let health = workspace::health(&source.common_dir, t);
            let where_ = match health {
                workspace::Health::Ours => super::show(&t.root),
                workspace::Health::Missing if !t.state.is_open() => {
                    "(workspace removed)".to_string()
                }
                workspace::Health::Missing => format!("{} (missing)", super::show(&t.root)),
                workspace::Health::Foreign => {
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
    text.push_str(&kept_text);
    for p in &problems {
        text.push_str(&format!(
            "{} {}\n",
            ui.paint("33", "problem:"),
            crate::ui::escape_text(&p.message)
        ));
    }
    ui.say(&text);
    Ok(code)
}
