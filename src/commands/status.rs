//! `git delegate status` (SPEC §3.3): batches, leases, tasks, and problems.
//! Changes nothing and takes no lock: workspace snapshots are kept in memory.

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
/// left-over write-back journals.
pub fn problems(source: &Source, entries: &[Entry]) -> Vec<Problem> {
    let mut out = Vec::new();
    for e in entries {
        match e {
            Entry::Batch(b) => {
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

/// How many paths of each task's workspace differ from the baseline.
pub fn changed_counts(source: &Source, b: &Batch) -> Vec<usize> {
    let baseline_tree = gix::ObjectId::from_hex(b.baseline.as_bytes())
        .ok()
        .and_then(|c| source.repo.find_commit(c).ok())
        .and_then(|c| c.tree_id().ok())
        .map(|t| t.detach());
    b.tasks
        .iter()
        .map(|t| {
            let (Some(base), true) = (
                baseline_tree,
                t.state.is_open()
                    && workspace::health(&source.common_dir, &t.root, &t.worktree_id)
                        == workspace::Removal::Removed,
            ) else {
                return 0;
            };
            let Ok(repo) = crate::repo::open_worktree(&t.root) else {
                return 0;
            };
            let repo = repo.with_object_memory();
            snapshot::snapshot(&repo)
                .and_then(|s| diff::trees(&repo, base, s.tree))
                .map(|c| c.len())
                .unwrap_or(0)
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
    let problems = problems(&source, &entries);
    let batches: Vec<&Batch> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(b.as_ref()),
            Entry::Broken { .. } => None,
        })
        .collect();
    let code = if args.check && !problems.is_empty() {
        1
    } else {
        0
    };

    if ui.json {
        let docs: Vec<Value> = batches
            .iter()
            .map(|b| {
                let mut d = super::batch_doc(&source, b, Some(&changed_counts(&source, b)));
                if let Value::Object(m) = &mut d {
                    m.insert("schema".into(), json!(crate::ui::SCHEMA));
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
    for b in &batches {
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
        let lease_state = match state {
            crate::lease::State::Live => ui.paint("32", "live"),
            s => ui.paint("31", s.as_str()),
        };
        text.push_str(&format!(
            "  lease {lease_state}, {} {}{}\n",
            if expires >= 0 {
                "expires in"
            } else {
                "expired"
            },
            crate::time::human(expires),
            if expires >= 0 {
                String::new()
            } else {
                " ago".into()
            },
        ));
        if let Some(pid) = b.lease.owner_pid {
            text.push_str(&format!("  owner pid {pid} on {}\n", b.lease.host));
        }
        let counts = changed_counts(&source, b);
        for (t, n) in b.tasks.iter().zip(counts) {
            let health = workspace::health(&source.common_dir, &t.root, &t.worktree_id);
            let where_ = match health {
                workspace::Removal::Removed => super::show(&t.root),
                workspace::Removal::Missing => format!("{} (missing)", super::show(&t.root)),
                workspace::Removal::Foreign => {
                    format!("{} (replaced; not ours)", super::show(&t.root))
                }
            };
            text.push_str(&format!(
                "  task {:<8} {:<10} {:>4} changed  {where_}{}\n",
                t.name,
                t.state.as_str(),
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
