//! The refresh document (design §3.12; docs/json.md "Refresh"), whose
//! tasks apply's `refreshed` lists too.

use super::{document, Text};
use git_delegate::ops::refresh::Report as Refresh;

document! {
    /// The refresh document.
    pub struct RefreshDoc {
        batch: String,
        tasks: Vec<RefreshTask>,
        interrupted?: &'static str,
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
