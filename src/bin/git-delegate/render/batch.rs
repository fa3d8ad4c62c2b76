//! The batch document (design §6.1; docs/json.md "Batch"), which `prepare`
//! and `renew` print and `status` lists, and the status document around it
//! (docs/json.md "Status").

use std::collections::HashSet;

use super::{document, Proc, Text};
use git_delegate::git::repo::Source;
use git_delegate::record::batch::{Batch, TaskState};

document! {
    /// The batch document.
    pub struct BatchDoc {
        batch: String,
        label: Option<String>,
        created_at: String,
        source: String,
        source_head: Option<String>,
        baseline: Baseline,
        mode: git_delegate::config::Mode,
        forbid_commit: bool,
        state: &'static str,
        lease: Lease,
        tasks: Vec<BatchTask>,
        remote?: Remote,
        sparse?: Vec<String>,
        warnings?: Vec<HookWarning>,
    }
}

document! {
    /// `baseline` of the batch document.
    pub struct Baseline {
        commit: String,
        r#ref: String,
    }
}

document! {
    /// `lease` of the batch document.
    pub struct Lease {
        state: &'static str,
        expires_at: String,
        owner_pid: Option<u32>,
        host: String,
    }
}

document! {
    /// `remote` of the batch document (design §3.14).
    pub struct Remote {
        name: String,
        url: String,
    }
}

document! {
    /// An entry of `warnings` of prepare's batch document.
    pub struct HookWarning {
        code: &'static str,
        message: String,
        help: String,
    }
}

document! {
    /// An entry of `tasks` of the batch document.
    pub struct BatchTask {
        name: String,
        state: &'static str,
        root: Option<String>,
        cwd: Option<String>,
        exists: bool,
        changed_paths: Option<usize>,
        processes?: Vec<Proc>,
        reason?: String,
        proposal_ref?: String,
        patch?: String,
        base?: String,
        conflicted_paths?: Vec<String>,
        remote?: bool,
        submitted?: Option<bool>,
        join?: Option<String>,
        verify_log?: String,
        carried_ignored?: serde_json::Value,
        scratch_copy?: serde_json::Value,
    }
}

/// What `status` knows of a batch's tasks beyond the batch itself.
#[derive(Default, Clone, Copy)]
pub struct Seen<'a> {
    /// Per task, its count of paths that differ from the baseline, `None`
    /// where unknown (null); without it every count is 0 (prepare, renew).
    pub counts: Option<&'a [Option<usize>]>,
    /// Per task, the processes running inside its workspace.
    pub processes: Option<&'a [Vec<git_delegate::sys::quiesce::Proc>]>,
    /// The remote tasks that have submitted, where the remote was asked
    /// (`status --fetch`, design §3.14).
    pub submitted: Option<&'a HashSet<String>>,
}

impl BatchDoc {
    /// The batch document of `batch` (design §6.1).
    pub fn new(t: &Text, source: &Source, batch: &Batch, seen: Seen) -> BatchDoc {
        // A batch whose prepare never completed (design §3.15): its tasks
        // are `incomplete`, never open work, and once its prepare is gone
        // it is not live whatever its lease says.
        let progress = git_delegate::ops::preparing::progress(batch);
        let lease_state = match progress {
            Some(git_delegate::ops::preparing::Progress::Interrupted) => {
                git_delegate::record::lease::State::Orphaned
            }
            _ => batch.lease.state(),
        };
        let health = git_delegate::ops::status::health(source, batch);
        let tasks = batch
            .tasks
            .iter()
            .zip(&health)
            .enumerate()
            .map(|(i, (task, health))| {
                let changed_paths = match seen.counts.and_then(|c| c.get(i)) {
                    Some(n) => *n,
                    None => Some(0),
                };
                let processes = match (seen.counts, seen.processes) {
                    (Some(c), Some(p)) if i < c.len() => p.get(i).map(|p| Proc::list(p)),
                    _ => None,
                };
                let carried = task.carried.map(|c| c.to_json());
                let scratch = batch.mode == git_delegate::config::Mode::Scratch;
                BatchTask {
                    name: task.name.clone(),
                    state: if progress.is_some() {
                        "incomplete"
                    } else {
                        task.state.as_str()
                    },
                    root: (!task.remote).then(|| t.path(&task.root)),
                    cwd: (!task.remote).then(|| t.path(&task.cwd(&batch.prefix))),
                    exists: *health == git_delegate::workspace::Health::Ours,
                    changed_paths,
                    processes,
                    // Retained recovery artifacts (design §3.3).
                    reason: task.reason.clone(),
                    proposal_ref: task.proposal_ref.clone(),
                    patch: task.patch.as_deref().map(|p| t.path(p)),
                    // A refreshed task's own base and its conflicts (design §3.12).
                    base: task.base.clone(),
                    conflicted_paths: (task.state == TaskState::Conflicted)
                        .then(|| task.conflicted_paths.clone()),
                    // design §3.14: a remote task, its join line, and whether
                    // it has submitted (null: not asked, `status --fetch` asks).
                    remote: task.remote.then_some(true),
                    submitted: task
                        .remote
                        .then(|| seen.submitted.map(|s| s.contains(&task.name))),
                    join: task.remote.then(|| {
                        git_delegate::ops::remote_workers::join_command(batch, &task.name)
                    }),
                    verify_log: task.verify_log.as_deref().map(|p| t.path(p)),
                    // What prepare put there besides the baseline (design §3.9).
                    carried_ignored: carried.clone().filter(|_| !scratch),
                    scratch_copy: carried.filter(|_| scratch),
                }
            })
            .collect();
        BatchDoc {
            batch: batch.id.clone(),
            label: batch.label.clone(),
            created_at: batch.created_at.clone(),
            source: t.path(&batch.source),
            source_head: batch.source_head.clone(),
            baseline: Baseline {
                commit: batch.baseline.clone(),
                r#ref: git_delegate::git::refs::baseline(&batch.id),
            },
            mode: batch.mode,
            forbid_commit: batch.forbid_commit,
            state: progress.map_or("ready", |p| p.as_str()),
            lease: Lease {
                state: lease_state.as_str(),
                expires_at: batch.lease.expires_at.clone(),
                owner_pid: batch.lease.owner_pid,
                host: batch.lease.host.clone(),
            },
            tasks,
            remote: batch.remote.as_ref().map(|r| Remote {
                name: r.name.clone(),
                url: r.url.clone(),
            }),
            // The workspaces' sparse-checkout patterns (design §3.15).
            sparse: batch.sparse.clone(),
            warnings: None,
        }
    }
}

document! {
    /// The status document.
    pub struct StatusDoc {
        batches: Vec<super::Embedded<BatchDoc>>,
        problems: Vec<StatusProblem>,
        undo_entries?: usize,
        kept?: Vec<KeptProposal>,
        idle_workspaces?: usize,
    }
}

document! {
    /// An entry of `problems` of the status document.
    pub struct StatusProblem {
        batch: String,
        kind: &'static str,
        message: String,
        path?: String,
        bytes?: u64,
        recovery?: &'static str,
    }
}

document! {
    /// An entry of `kept` of the status document (design §3.16).
    pub struct KeptProposal {
        r#ref: String,
        patch: Option<String>,
        batch: String,
        task: String,
        expires_at: String,
        kept_at: String,
        name: String,
    }
}

impl KeptProposal {
    pub fn list(t: &Text, kept: &[git_delegate::record::kept::Kept]) -> Vec<KeptProposal> {
        kept.iter()
            .map(|k| KeptProposal {
                r#ref: k.ref_name.clone(),
                patch: k.patch.as_deref().map(|p| t.path(p)),
                batch: k.batch.clone(),
                task: k.task.clone(),
                expires_at: git_delegate::sys::time::rfc3339(k.expires_at),
                kept_at: git_delegate::sys::time::rfc3339(k.kept_at),
                name: git_delegate::ops::kept::short_name(kept, k),
            })
            .collect()
    }
}

impl StatusProblem {
    /// `message`: the problem in `status`'s words.
    pub fn new(t: &Text, p: &git_delegate::ops::problems::Problem, message: String) -> Self {
        use git_delegate::ops::problems::Fact;
        let temp = match &p.fact {
            Fact::TempFile(f) => Some(f),
            _ => None,
        };
        let path = match &p.fact {
            Fact::TempFile(f) => Some(t.path(&f.path)),
            Fact::UnattendedTrash(u) => Some(t.path(&u.trash)),
            Fact::LeftAside { path, .. } => Some(t.path(path)),
            Fact::DeadRegistration { path, .. } => Some(t.path(path)),
            Fact::UntrustedConfig { file, .. } => Some(t.path(file)),
            _ => None,
        };
        StatusProblem {
            batch: p.batch.clone(),
            kind: p.kind(),
            message,
            path,
            bytes: temp.map(|f| f.bytes),
            recovery: p.recovery(),
        }
    }
}
