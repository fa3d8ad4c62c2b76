//! The run document (design §3.13; docs/json.md "Run").

use super::apply::ApplyDoc;
use super::{document, Embedded, Text};
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
        sandbox: Sandbox,
    }
}

document! {
    /// `workers[].sandbox` of the run document (design §3.22).
    pub struct Sandbox {
        kind: &'static str,
        abi: Option<u8>,
        network: bool,
    }
}

impl Sandbox {
    pub fn of(s: &git_delegate::ops::contain::Summary) -> Sandbox {
        Sandbox {
            kind: if s.landlock { "landlock" } else { "none" },
            abi: s.abi,
            network: s.network,
        }
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
                sandbox: Sandbox::of(&w.sandbox),
            })
            .collect()
    }
}
