//! The workers of `git delegate run` (design §3.13): one process group
//! per task, never a shell, at most J at once, with their environment,
//! timeouts and logs (`<common-dir>/delegate/logs/<uuid>/<task>.log`), each
//! stopped on Ctrl-C or SIGTERM; and how each one ended.
//! Never: touches the batch record (the transaction in `mod.rs` records
//! what they did), or lets a worker process outlive run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gix::bstr::BStr;

use crate::git::repo::Source;
use crate::record::batch;
use crate::sys::process::{self, Group};

use super::{substitute, Options};

/// One worker as it ended (design §3.13 `workers[]`).
#[derive(Debug, Clone)]
pub struct Worker {
    pub name: String,
    /// Its exit status (`None`: ended by a signal, or never started).
    pub exit: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Stopped because run was interrupted.
    pub stopped: bool,
    pub duration_ms: u64,
    pub log: PathBuf,
    /// It could not be started (the reason is in its log too).
    pub start_error: Option<String>,
    /// How it was contained (design §3.22).
    pub sandbox: crate::ops::contain::Summary,
}

impl Worker {
    pub fn ok(&self) -> bool {
        self.exit == Some(0) && !self.timed_out && !self.stopped
    }

    /// How it ended, the first that holds of: not started, timed out,
    /// stopped, an exit status, a signal.
    pub fn ended(&self) -> Ended<'_> {
        if let Some(e) = &self.start_error {
            return Ended::NotStarted(e);
        }
        if self.timed_out {
            return Ended::TimedOut;
        }
        if self.stopped {
            return Ended::Stopped;
        }
        match (self.exit, self.signal) {
            (Some(c), _) => Ended::Exited(c),
            (None, Some(s)) => Ended::Killed(s),
            _ => Ended::Failed,
        }
    }
}

/// How a worker ended ([`Worker::ended`]), for its sentence and its status word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended<'a> {
    /// Its command could not be started, for this reason.
    NotStarted(&'a str),
    TimedOut,
    /// Stopped because run was interrupted.
    Stopped,
    Exited(i32),
    /// Killed by this signal.
    Killed(i32),
    /// Neither an exit status nor a signal is known.
    Failed,
}

/// A worker event for the caller to show (design §3.13: on a terminal,
/// lines prefixed with the task name and a status line per task).
pub enum Event<'a> {
    /// Worker `idx` started.
    Started { idx: usize },
    /// A line worker `idx` wrote (stdout and stderr, as in its log).
    Line { idx: usize, line: &'a BStr },
    /// Worker `idx` ended.
    Ended { idx: usize, worker: &'a Worker },
}

/// How run's caller hears about workers (besides `Observer`'s steps).
pub trait Watcher {
    /// Whether worker lines are wanted (a terminal): otherwise logs are not read.
    fn wants_lines(&self) -> bool;
    fn event(&self, event: Event<'_>);
}

/// A sentence saying how a worker ended.
pub fn worker_message(w: &Worker) -> String {
    match w.ended() {
        Ended::NotStarted(e) => format!("its command could not be started: {e}"),
        Ended::TimedOut => "its worker ran past the timeout and was stopped".into(),
        Ended::Stopped => "its worker was stopped (run was interrupted)".into(),
        Ended::Exited(c) => format!("its worker exited with status {c}"),
        Ended::Killed(s) => format!("its worker was killed by signal {s}"),
        Ended::Failed => "its worker failed".into(),
    }
}

/// `tasks[].reason` of a failed worker's task.
pub(super) fn failure_reason(w: &Worker) -> &'static str {
    if w.timed_out {
        "timed_out"
    } else {
        "worker_failed"
    }
}

/// A worker being run.
struct Live {
    idx: usize,
    group: Group,
    timeout: Option<Duration>,
    /// SIGTERM sent (timeout or interruption) at this time.
    terminating: Option<Instant>,
    timed_out: bool,
    /// Its containment: its private `TMPDIR` goes when this is dropped.
    contained: crate::ops::contain::Contained,
}

/// How often running workers are looked at.
const POLL: Duration = Duration::from_millis(50);
/// At most this much of a worker's log is read for display per look.
const CHUNK: u64 = 1 << 20;

/// Start the workers, at most J at once, and wait for all of them. Returns
/// them in task order and whether run was interrupted.
pub(super) fn run_workers(
    source: &Source,
    b: &batch::Batch,
    opts: &Options,
    decision: &crate::ops::contain::Decision,
    logs: &Path,
    watcher: &dyn Watcher,
) -> (Vec<Worker>, bool) {
    let n = b.tasks.len();
    let jobs = opts.jobs.unwrap_or(n).max(1);
    let show = watcher.wants_lines();
    let mut done: Vec<Option<Worker>> = vec![None; n];
    let mut live: Vec<Live> = Vec::new();
    let mut next = 0usize;
    let mut interrupted = false;
    let mut poll = Duration::from_millis(1);
    loop {
        if !interrupted && crate::sys::interrupt::interrupted() {
            interrupted = true;
            let now = Instant::now();
            for l in live.iter_mut().filter(|l| l.terminating.is_none()) {
                l.group.term();
                l.terminating = Some(now);
            }
        }
        while !interrupted && next < n && live.len() < jobs {
            let idx = next;
            next += 1;
            let log = logs.join(format!("{}.log", b.tasks[idx].name));
            match start(source, b, opts, decision, idx, &log) {
                Ok((group, timeout, contained)) => {
                    watcher.event(Event::Started { idx });
                    live.push(Live {
                        idx,
                        group,
                        timeout,
                        terminating: None,
                        timed_out: false,
                        contained,
                    });
                }
                Err(e) => {
                    let w = not_started(b, idx, log, e, decision);
                    watcher.event(Event::Ended { idx, worker: &w });
                    done[idx] = Some(w);
                }
            }
        }
        let mut i = 0;
        while i < live.len() {
            let l = &mut live[i];
            let status = l.group.try_wait().ok().flatten();
            if let Some(status) = status {
                // What it left running in its group goes with it.
                process::kill(l.group.pgid);
                l.contained.settle(&source.repo);
                if show {
                    l.group.lines(true, CHUNK, |line| {
                        watcher.event(Event::Line { idx: l.idx, line })
                    });
                }
                let w = ended(b, l, status, interrupted, logs);
                watcher.event(Event::Ended {
                    idx: l.idx,
                    worker: &w,
                });
                done[l.idx] = Some(w);
                live.swap_remove(i);
                continue;
            }
            tend(l);
            if show {
                let idx = l.idx;
                l.group.lines(false, CHUNK, |line| {
                    watcher.event(Event::Line { idx, line })
                });
            }
            i += 1;
        }
        if live.is_empty() && (interrupted || next >= n) {
            break;
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(POLL);
    }
    // Tasks never started because run was interrupted.
    let workers = done
        .into_iter()
        .enumerate()
        .map(|(idx, w)| w.unwrap_or_else(|| never_started(b, idx, logs, decision)))
        .collect();
    (workers, interrupted)
}

/// The worker of task `idx`, never started because run was interrupted.
fn never_started(
    b: &batch::Batch,
    idx: usize,
    logs: &Path,
    decision: &crate::ops::contain::Decision,
) -> Worker {
    Worker {
        name: b.tasks[idx].name.clone(),
        exit: None,
        signal: None,
        timed_out: false,
        stopped: true,
        duration_ms: 0,
        log: logs.join(format!("{}.log", b.tasks[idx].name)),
        start_error: None,
        sandbox: decision.summary(),
    }
}

/// The worker of task `idx` whose command could not be started (`e`, also
/// written to its log).
fn not_started(
    b: &batch::Batch,
    idx: usize,
    log: std::path::PathBuf,
    e: String,
    decision: &crate::ops::contain::Decision,
) -> Worker {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        let _ = writeln!(f, "git-delegate: cannot start the worker: {e}");
    }
    Worker {
        name: b.tasks[idx].name.clone(),
        exit: None,
        signal: None,
        timed_out: false,
        stopped: false,
        duration_ms: 0,
        log,
        start_error: Some(e),
        sandbox: decision.summary(),
    }
}

/// The worker `l`, which ended with `status`.
fn ended(
    b: &batch::Batch,
    l: &Live,
    status: std::process::ExitStatus,
    interrupted: bool,
    logs: &Path,
) -> Worker {
    use std::os::unix::process::ExitStatusExt;
    Worker {
        name: b.tasks[l.idx].name.clone(),
        exit: status.code(),
        signal: status.signal(),
        timed_out: l.timed_out,
        stopped: interrupted && !l.timed_out,
        duration_ms: l.group.started.elapsed().as_millis() as u64,
        log: logs.join(format!("{}.log", b.tasks[l.idx].name)),
        start_error: None,
        sandbox: l.contained.summary,
    }
}

/// A running worker looked at: SIGKILL once its grace after SIGTERM is
/// over, SIGTERM once its timeout is.
fn tend(l: &mut Live) {
    match l.terminating {
        Some(t) if t.elapsed() >= process::GRACE => {
            // SIGKILL for the group; the leader is reaped next look.
            process::kill(l.group.pgid);
        }
        Some(_) => {}
        None => {
            if l.timeout.is_some_and(|t| l.group.started.elapsed() >= t) {
                l.timed_out = true;
                l.group.term();
                l.terminating = Some(Instant::now());
            }
        }
    }
}

/// Start task `idx`'s worker (design §3.13).
fn start(
    source: &Source,
    b: &batch::Batch,
    opts: &Options,
    decision: &crate::ops::contain::Decision,
    idx: usize,
    log: &Path,
) -> std::result::Result<(Group, Option<Duration>, crate::ops::contain::Contained), String> {
    let task = &b.tasks[idx];
    let spec = opts.specs.iter().find(|s| s.name == task.name);
    let argv: Vec<OsString> = match spec.and_then(|s| s.command.as_ref()) {
        Some(c) => c.iter().map(OsString::from).collect(),
        None => opts.command.clone(),
    };
    let argv: Vec<OsString> = argv
        .iter()
        .map(|a| substitute(a, &task.name, idx, &task.root))
        .collect();
    let Some((program, args)) = argv.split_first() else {
        return Err("no command".into());
    };
    // A workspace that is gone is never made again (under the workspace
    // root, for a batch that may have ended meanwhile).
    if !task.root.is_dir() {
        let ended = batch::batch_dir(&source.state_dir(), &b.id)
            .symlink_metadata()
            .is_err();
        return Err(match ended {
            true => format!(
                "batch {} ended before this worker started: another command applied or dropped it",
                b.short()
            ),
            false => format!("its workspace {} is missing", task.root.display()),
        });
    }
    let mut cmd = crate::ops::setup::worker_command(program, &source.config, b, idx)?;
    cmd.args(args);
    if let Some(s) = spec {
        for (k, v) in &s.env {
            cmd.env(k, v);
        }
    }
    let timeout = spec
        .and_then(|s| s.timeout_secs)
        .or(opts.timeout_secs)
        .map(|s| Duration::from_secs(s.max(0) as u64));
    // Contained as decided (design §3.22), or not started at all.
    let contained = crate::ops::contain::contain(
        decision,
        &source.common_dir,
        &source.config,
        b,
        idx,
        &mut cmd,
    )?;
    process::spawn(cmd, log)
        .map(|g| (g, timeout, contained))
        .map_err(|(is_log, e)| {
            if is_log {
                format!("cannot create {}: {e}", log.display())
            } else {
                format!("{}: {e}", program.to_string_lossy())
            }
        })
}
