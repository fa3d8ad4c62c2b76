//! The apply document (design §6.2, §6.4; docs/json.md "Apply"), which
//! `apply --kept` and `run` print too.

use super::{document, KeptWorkspace, Proc, Text};
use git_delegate::ops::apply::{Outcome, Report};
use git_delegate::record::batch::{Batch, TaskState};
use git_delegate::sys::paths::BString;

document! {
    /// The apply document.
    pub struct ApplyDoc {
        batch: String,
        dry_run: bool,
        tasks: Vec<ApplyTask>,
        applied_paths: Vec<String>,
        batch_open: bool,
        stopped_processes: Vec<StoppedProc>,
        kept_workspaces?: Vec<KeptWorkspace>,
        side_effects?: Vec<SideEffect>,
        apply_id?: Option<String>,
        verify?: Verify,
        untrusted_config?: UntrustedConfig,
        warnings?: Vec<RemoteWarning>,
        refreshed?: Vec<super::refresh::RefreshTask>,
        refresh_error?: super::ErrorBody,
        kept_proposal?: KeptProposal,
        /// `apply --from-undo`: the undo entry applied again
        /// (`undo::reapply_doc`).
        from_undo?: String,
        /// `apply --from-undo` with a conflict: the undone applies to
        /// apply again first (`undo::reapply_doc`).
        reapply_first?: Vec<String>,
        interrupted?: &'static str,
        /// A write-back the filesystem refused, rolled back (exit 3):
        /// the error, as in an error document.
        error?: super::ErrorBody,
    }
}

document! {
    /// An entry of `tasks` of the apply document.
    pub struct ApplyTask {
        name: String,
        status: &'static str,
        proposed_paths: Vec<String>,
        applied_paths: Vec<String>,
        kept?: bool,
        proposal_ref?: Option<String>,
        patch?: Option<String>,
        expires_at?: String,
        processes?: Vec<Proc>,
        message?: String,
        nested_repositories?: Vec<String>,
        workspace?: Option<String>,
        reason?: Option<&'static str>,
        conflicts?: Vec<Conflict>,
        verify_log?: String,
    }
}

document! {
    /// An entry of `tasks[].conflicts`.
    pub struct Conflict {
        path: String,
        reason: String,
    }
}

impl Conflict {
    pub fn list(t: &Text, list: &[git_delegate::merge::integrate::PathConflict]) -> Vec<Conflict> {
        list.iter()
            .map(|c| Conflict {
                path: t.bytes(&c.path),
                reason: c.reason.clone(),
            })
            .collect()
    }
}

document! {
    /// An entry of `stopped_processes`.
    pub struct StoppedProc {
        task: String,
        pid: u32,
        command: String,
    }
}

document! {
    /// The `verify` object (design §6.4).
    pub struct Verify {
        command: String,
        outcome: &'static str,
        /// `untrusted_config`: a command left out (design §3.18).
        reason?: &'static str,
        runs: Vec<VerifyRun>,
    }
}

document! {
    /// `untrusted_config`: the command keys of a `delegate.toml` the user
    /// has not confirmed that apply left out (design §3.18).
    pub struct UntrustedConfig {
        path: String,
        left_out: Vec<LeftOut>,
        help: String,
    }
}

document! {
    /// An entry of `untrusted_config.left_out`.
    pub struct LeftOut {
        key: &'static str,
        value: String,
        confirmed: String,
    }
}

impl UntrustedConfig {
    pub fn new(t: &Text, u: &git_delegate::ops::trust::Untrusted) -> UntrustedConfig {
        UntrustedConfig {
            path: t.path(&u.file),
            left_out: u
                .left_out
                .iter()
                .map(|l| LeftOut {
                    key: l.key,
                    value: l.value.clone(),
                    confirmed: l.confirmed.clone(),
                })
                .collect(),
            help: u.help(),
        }
    }
}

document! {
    /// An entry of `verify.runs`.
    pub struct VerifyRun {
        tasks: Vec<String>,
        exit: Option<i32>,
        timed_out: bool,
        duration_ms: u64,
        log: String,
    }
}

document! {
    /// `kept_proposal` of `apply --kept`.
    pub struct KeptProposal {
        r#ref: String,
        batch: String,
        task: String,
        patch: Option<String>,
        expires_at: String,
        removed: bool,
    }
}

document! {
    /// An entry of `side_effects`: a ref, stash entry, config key or hook a
    /// workspace made or changed in the shared repository (design §3.16).
    pub struct SideEffect {
        task: Option<String>,
        r#ref: Option<String>,
        kind: &'static str,
        change: &'static str,
        old: Option<String>,
        new: Option<String>,
        stash: Option<String>,
        message: Option<String>,
        path: Option<String>,
        detail: Option<String>,
        driver: Option<String>,
    }
}

impl SideEffect {
    pub fn list(
        t: &Text,
        b: &Batch,
        effects: &[git_delegate::ops::side_effects::SideEffect],
    ) -> Vec<SideEffect> {
        use git_delegate::ops::side_effects::Kind;
        // The drivers left out (design §3.18 "Drivers"), named on their keys.
        let left_out = git_delegate::git::drivers::disabled();
        let driver_of = |e: &git_delegate::ops::side_effects::SideEffect| {
            let key = e.detail.as_deref()?;
            let (driver, _) = key.rsplit_once('.')?;
            (e.kind == Kind::Config && left_out.iter().any(|d| d == driver))
                .then(|| driver.to_string())
        };
        effects
            .iter()
            .map(|e| {
                let shared_dir = matches!(e.kind, Kind::Config | Kind::Hook);
                SideEffect {
                    task: e.task.and_then(|t| b.tasks.get(t)).map(|t| t.name.clone()),
                    r#ref: (!shared_dir).then(|| e.name.clone()),
                    kind: e.kind.as_str(),
                    change: e.change.as_str(),
                    old: e.old_hex(),
                    new: e.new_hex(),
                    stash: e.stash_index.map(|n| format!("stash@{{{n}}}")),
                    message: e.message.clone(),
                    path: e.path.as_deref().map(|p| t.path(p)),
                    detail: e.detail.clone(),
                    driver: driver_of(e),
                }
            })
            .collect()
    }
}

document! {
    /// An entry of `warnings`: refs a batch that ended left on its remote
    /// (design §3.14 "Remote refs").
    pub struct RemoteWarning {
        code: &'static str,
        reason: &'static str,
        message: String,
        help: String,
        remote: String,
        refs: Vec<String>,
    }
}

impl ApplyDoc {
    /// The tasks, paths and processes of an apply (what `apply --kept`
    /// prints too); the rest is added by [`ApplyDoc::of_report`].
    pub fn new(
        t: &Text,
        b: &Batch,
        outcomes: &[Outcome],
        written: &[BString],
        batch_open: bool,
        dry_run: bool,
    ) -> ApplyDoc {
        let tasks = outcomes
            .iter()
            .map(|o| ApplyTask::new(t, b, o, dry_run))
            .collect();
        let stopped_processes = outcomes
            .iter()
            .flat_map(|o| {
                let name = &b.tasks[o.idx].name;
                o.stopped.iter().map(move |p| StoppedProc {
                    task: name.clone(),
                    pid: p.pid,
                    command: p.command.clone(),
                })
            })
            .collect();
        let mut doc = ApplyDoc::bare(b.id.clone(), dry_run, tasks, t.paths(written));
        doc.batch_open = batch_open;
        doc.stopped_processes = stopped_processes;
        doc
    }

    /// A document of `tasks` and the paths written, the batch closed,
    /// nothing else.
    pub fn bare(
        batch: String,
        dry_run: bool,
        tasks: Vec<ApplyTask>,
        applied_paths: Vec<String>,
    ) -> ApplyDoc {
        ApplyDoc {
            batch,
            dry_run,
            tasks,
            applied_paths,
            batch_open: false,
            stopped_processes: Vec::new(),
            kept_workspaces: None,
            side_effects: None,
            apply_id: None,
            verify: None,
            untrusted_config: None,
            warnings: None,
            refreshed: None,
            refresh_error: None,
            kept_proposal: None,
            from_undo: None,
            reapply_first: None,
            interrupted: None,
            error: None,
        }
    }

    /// The apply document of `report` (design §6.2, §6.4), but `warnings`
    /// (`commands::remote::left_docs` words them).
    pub fn of_report(t: &Text, report: &Report) -> ApplyDoc {
        let b = &report.batch;
        let mut doc = ApplyDoc::new(
            t,
            b,
            &report.outcomes,
            &report.written,
            report.batch_open,
            report.dry_run,
        );
        if !report.kept.is_empty() {
            doc.kept_workspaces = Some(KeptWorkspace::list(t, &report.kept));
        }
        if let Some(e) = report.refused_by_filesystem() {
            doc.error = Some(super::ErrorBody::new(e.code, &e.message, &e.help));
        }
        doc.side_effects = Some(SideEffect::list(t, b, &report.side_effects));
        doc.apply_id = Some(report.apply_id.clone());
        doc.verify = report.verify.as_ref().map(|v| Verify::new(t, v));
        doc.untrusted_config = report
            .untrusted
            .as_ref()
            .map(|u| UntrustedConfig::new(t, u));
        if report.interrupted {
            doc.interrupted = Some("finished");
        }
        doc
    }
}

impl ApplyTask {
    /// A task's name, status and paths, nothing else.
    pub fn bare(
        name: String,
        status: &'static str,
        proposed_paths: Vec<String>,
        applied_paths: Vec<String>,
    ) -> ApplyTask {
        ApplyTask {
            name,
            status,
            proposed_paths,
            applied_paths,
            kept: None,
            proposal_ref: None,
            patch: None,
            expires_at: None,
            processes: None,
            message: None,
            nested_repositories: None,
            workspace: None,
            reason: None,
            conflicts: None,
            verify_log: None,
        }
    }

    fn new(x: &Text, b: &Batch, o: &Outcome, dry_run: bool) -> ApplyTask {
        let t = &b.tasks[o.idx];
        let discarded = o.status == TaskState::Discarded;
        let mut doc = ApplyTask::bare(
            t.name.clone(),
            o.status.as_str(),
            x.paths(&o.proposed),
            x.paths(&o.applied),
        );
        if discarded && !dry_run {
            doc.kept = Some(o.kept_until.is_some());
            if let Some(until) = &o.kept_until {
                doc.proposal_ref = Some(o.proposal_ref.clone());
                doc.patch = Some(o.patch.as_deref().map(|p| x.path(p)));
                doc.expires_at = Some(until.clone());
            }
        }
        if dry_run {
            doc.processes = Some(Proc::list(&o.processes));
        }
        // Applied by an earlier, interrupted apply (design §7); discarded
        // without a proposal git would not fetch (design §3.18).
        if o.status == TaskState::Applied || discarded {
            doc.message = o.message.clone();
        }
        if discarded && !o.nested_kept.is_empty() {
            doc.nested_repositories = Some(x.paths(&o.nested_kept));
            doc.workspace = Some(Some(x.path(&t.root)));
        }
        // Written into after apply read it: its workspace is kept (design §3.18).
        if discarded && o.reason.is_some() {
            doc.reason = Some(o.reason);
            doc.workspace = Some(Some(x.path(&t.root)));
            doc.message = o.message.clone();
        }
        if !o.ok() {
            doc.reason = Some(o.reason);
            doc.conflicts = Some(Conflict::list(x, &o.conflicts));
            doc.proposal_ref = Some(o.proposal_ref.clone());
            doc.patch = Some(o.patch.as_deref().map(|p| x.path(p)));
            // A remote task has no workspace here (design §3.14).
            doc.workspace = Some((!t.remote).then(|| x.path(&t.root)));
            if o.message.is_some() {
                doc.message = o.message.clone();
            }
            doc.verify_log = o.verify_log.as_deref().map(|p| x.path(p));
        }
        doc
    }
}

impl Verify {
    pub fn new(t: &Text, v: &git_delegate::ops::verify::Report) -> Verify {
        Verify {
            command: v.command.clone(),
            outcome: v.outcome.as_str(),
            reason: v.reason,
            runs: v
                .runs
                .iter()
                .map(|r| VerifyRun {
                    tasks: r.tasks.clone(),
                    exit: r.exit,
                    timed_out: r.timed_out,
                    duration_ms: r.duration_ms,
                    log: t.path(&r.log),
                })
                .collect(),
        }
    }
}
