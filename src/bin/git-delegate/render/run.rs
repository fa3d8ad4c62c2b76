//! The run document (design §3.13; docs/json.md "Run") and the refresh
//! document (design §3.12; docs/json.md "Refresh"), whose tasks apply's
//! `refreshed` lists too.

use super::apply::ApplyDoc;
use super::{absent, document, Embedded, Text};
use git_delegate::ops::refresh::Report as Refresh;
use git_delegate::ops::run::Worker;

document! {
    /// The run document.
    pub struct RunDoc {
        batch: String,
        workers: Vec<RunWorker>,
        apply: Option<Embedded<ApplyDoc>>,
        interrupted: bool,
        ended_elsewhere: bool,
        ended_by_apply: Option<String>,
    }
}

document! {
    /// An entry of `workers` of the run document.
    pub struct RunWorker {
        name: String,
        exit: Option<i32>,
        signal: Option<i32>,
        timed_out: bool,
        duration_ms: u64,
        log: String,
    }
}

impl RunWorker {
    pub fn list(t: &Text, workers: &[Worker]) -> Vec<RunWorker> {
        workers
            .iter()
            .map(|w| RunWorker {
                name: w.name.clone(),
                exit: w.exit,
                signal: w.signal,
                timed_out: w.timed_out,
                duration_ms: w.duration_ms,
                log: t.path(&w.log),
            })
            .collect()
    }
}

document! {
    /// The refresh document.
    pub struct RefreshDoc {
        batch: String,
        tasks: Vec<RefreshTask>,
        #[serde(skip_serializing_if = "absent")]
        interrupted: Option<&'static str>,
    }
}

document! {
    /// An entry of `tasks` of the refresh document.
    pub struct RefreshTask {
        name: String,
        base: String,
        conflicted_paths: Vec<String>,
        state: &'static str,
        refreshed: bool,
        proposal_ref: Option<String>,
        workspace: Option<String>,
    }
}

impl RefreshDoc {
    pub fn new(t: &Text, report: &Refresh) -> RefreshDoc {
        RefreshDoc {
            batch: report.batch.id.clone(),
            tasks: RefreshTask::list(t, report),
            interrupted: report.interrupted.then_some("finished"),
        }
    }
}

impl RefreshTask {
    pub fn list(t: &Text, report: &Refresh) -> Vec<RefreshTask> {
        report
            .tasks
            .iter()
            .map(|r| RefreshTask {
                name: r.name.clone(),
                base: r.base.clone(),
                conflicted_paths: t.paths(&r.conflicted),
                state: r.state.as_str(),
                refreshed: !r.unresolved,
                proposal_ref: r.proposal_ref.clone(),
                workspace: report.batch.task(&r.name).map(|k| t.path(&k.root)),
            })
            .collect()
    }
}
