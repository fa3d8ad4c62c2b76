//! `git delegate run` (design §3.13): the prepare transaction, one worker
//! process per task, then the apply transaction of the tasks whose worker
//! exited 0, in one command.
//!
//! Owns: the `--tasks FILE` format (`[[task]]` tables, errors pointing at
//! the line and column), the workers (placeholders `{task}` `{index}`
//! `{workspace}` in their arguments, never a shell; their environment and
//! ports; at most J at once; timeouts; their logs
//! `<common-dir>/delegate/logs/<uuid>/<task>.log`), stopping every worker
//! on Ctrl-C or SIGTERM, recording `worker_failed`, the lease handed over
//! when run ends with the batch open.
//! Never: prints (workers' lines and status go to the caller's
//! `Observer`); holds the repository lock while workers run (a worker may
//! call `refresh` or `renew`); lets a worker process outlive it; applies
//! anything after an interruption.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gix::bstr::BStr;
use serde::Deserialize;
use toml::Spanned;

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::ops::observe::Observer;
use crate::record::batch::{self, TaskState};
use crate::sys::process::{self, Group};

/// One `[[task]]` of a `--tasks` file.
#[derive(Debug, Clone, Default)]
pub struct TaskSpec {
    pub name: String,
    /// Its own command (default: the one after `--`).
    pub command: Option<Vec<String>>,
    pub env: Vec<(String, String)>,
    pub timeout_secs: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TasksFile {
    #[serde(default)]
    task: Vec<TaskEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskEntry {
    name: Spanned<String>,
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    timeout: Option<Spanned<String>>,
}

/// `line L, column C` (1-based) of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Read a `--tasks` file (design §3.13): `[[task]]` tables with `name` and
/// optionally `command` (an array), `env` (a table of strings), `timeout`
/// (a duration). Unknown keys, wrong types, bad names and durations are
/// errors pointing at the line and column (exit 2).
pub fn load_tasks(path: &Path) -> Result<Vec<TaskSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(
            Code::TasksFile,
            format!("cannot read the tasks file {}: {e}", path.display()),
            "give --tasks a readable TOML file of [[task]] tables",
        )
    })?;
    parse_tasks(path, &text)
}

pub fn parse_tasks(path: &Path, text: &str) -> Result<Vec<TaskSpec>> {
    let bad = |message: String, span: std::ops::Range<usize>, label: &str| {
        let (line, col) = position(text, span.start);
        Error::usage(
            Code::TasksFile,
            format!(
                "invalid tasks file {} at line {line}, column {col}: {message}",
                path.display()
            ),
            "fix that line: each [[task]] has `name`, and optionally `command` (an array of strings), `env` (a table of strings) and `timeout` (such as \"10m\")",
        )
        .with_source(
            path.display().to_string(),
            text.to_string(),
            span,
            label.to_string(),
        )
    };
    let file: TasksFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        bad(e.message().trim().to_string(), span, "here")
    })?;
    if file.task.is_empty() {
        return Err(bad("it has no [[task]] table".into(), 0..0, "no task"));
    }
    let mut out: Vec<TaskSpec> = Vec::new();
    for t in file.task {
        let name = t.name.get_ref().clone();
        if let Err(e) = crate::ops::prepare::check(std::slice::from_ref(&name), None) {
            return Err(bad(e.message, t.name.span(), "bad task name"));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(bad(
                format!("the task name {name:?} is given twice"),
                t.name.span(),
                "duplicate",
            ));
        }
        if let Some(c) = &t.command {
            if c.get_ref().is_empty() {
                return Err(bad("`command` is empty".into(), c.span(), "empty command"));
            }
        }
        let timeout_secs = match &t.timeout {
            Some(v) => Some(crate::sys::time::duration(v.get_ref()).map_err(|e| {
                bad(
                    format!("`timeout`: {}", e.describe(v.get_ref())),
                    v.span(),
                    "not a duration",
                )
            })?),
            None => None,
        };
        out.push(TaskSpec {
            name,
            command: t.command.map(|c| c.into_inner()),
            env: t.env.into_iter().collect(),
            timeout_secs,
        });
    }
    Ok(out)
}

/// `arg` with `{task}`, `{index}` and `{workspace}` replaced, `{{` and `}}`
/// as literal braces; any other brace stays as it is.
pub fn substitute(arg: &OsStr, task: &str, index: usize, workspace: &Path) -> OsString {
    let b = arg.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let index = index.to_string();
    let keys: [(&[u8], &[u8]); 3] = [
        (b"{task}", task.as_bytes()),
        (b"{index}", index.as_bytes()),
        (b"{workspace}", workspace.as_os_str().as_bytes()),
    ];
    'outer: while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"{{") || rest.starts_with(b"}}") {
            out.push(rest[0]);
            i += 2;
            continue;
        }
        for (k, v) in keys {
            if rest.starts_with(k) {
                out.extend_from_slice(v);
                i += k.len();
                continue 'outer;
            }
        }
        out.push(rest[0]);
        i += 1;
    }
    OsString::from_vec(out)
}

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The prepare part; its `names` are the tasks (from `specs` when given).
    pub prepare: crate::ops::prepare::Options,
    /// `--tasks FILE`: per task its own command, env and timeout, in order.
    pub specs: Vec<TaskSpec>,
    /// The command after `--` (program and arguments).
    pub command: Vec<OsString>,
    /// `--jobs` (default: all at once).
    pub jobs: Option<usize>,
    /// `--timeout`.
    pub timeout_secs: Option<i64>,
    /// The apply part (`--verify` and friends); `None`: `--no-apply`.
    pub apply: Option<crate::ops::apply::Options>,
}

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
}

impl Worker {
    pub fn ok(&self) -> bool {
        self.exit == Some(0) && !self.timed_out && !self.stopped
    }
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

/// What run did.
pub struct Report {
    pub prepared: crate::ops::prepare::Report,
    pub workers: Vec<Worker>,
    /// The apply (`None`: `--no-apply`, or interrupted). Its outcomes list
    /// every task, `worker_failed` ones included.
    pub apply: Option<crate::ops::apply::Report>,
    /// Ctrl-C or SIGTERM stopped the workers; nothing was applied.
    pub interrupted: bool,
    /// `--no-apply`.
    pub no_apply: bool,
    /// The batch ended while the workers ran: another command applied or
    /// dropped it, and run applied nothing (`apply` is `None`).
    pub ended_elsewhere: Option<EndedElsewhere>,
}

/// How run's batch ended while its workers ran (another command's `apply`
/// or `drop`, a worker's own included).
#[derive(Debug, Clone)]
pub struct EndedElsewhere {
    /// The undo entry of an apply of the batch (design §3.11), when one
    /// wrote anything: that apply landed its work. None: it was dropped, or
    /// applied without writing anything.
    pub apply_id: Option<String>,
}

/// `Some` when batch `id` is gone (no state folder any more): another
/// command applied or dropped it; every apply of it since was another
/// command's (run made the batch and has not applied it).
fn ended_elsewhere(source: &Source, id: &str) -> Option<EndedElsewhere> {
    let state = source.state_dir();
    if batch::batch_dir(&state, id).symlink_metadata().is_ok() {
        return None;
    }
    // Newest first.
    let apply_id = crate::ops::undo::list(&state)
        .into_iter()
        .find(|e| e.batch == id)
        .map(|e| e.apply_id);
    Some(EndedElsewhere { apply_id })
}

impl Report {
    /// Exit 0 (design §3.13): every worker exited 0 and every task applied
    /// or had no changes (with `--no-apply`: every worker exited 0).
    pub fn ok(&self) -> bool {
        !self.interrupted
            && self.ended_elsewhere.is_none()
            && self.workers.iter().all(Worker::ok)
            && self.apply.as_ref().is_none_or(|a| {
                // Applied or without changes; a discarded task (scratch
                // mode's are always) did not apply.
                a.outcomes
                    .iter()
                    .all(|o| matches!(o.status, TaskState::Applied | TaskState::NoChanges))
            })
    }
}

/// How run's caller hears about workers (besides `Observer`'s steps).
pub trait Watcher {
    /// Whether worker lines are wanted (a terminal): otherwise logs are not read.
    fn wants_lines(&self) -> bool;
    fn event(&self, event: Event<'_>);
}

/// Run (design §3.13): prepare, the workers, apply.
pub fn run(
    source: Source,
    opts: &Options,
    observer: &dyn Observer,
    watcher: &dyn Watcher,
) -> Result<Report> {
    // Ctrl-C (SIGINT) or SIGTERM from now on stop the workers instead of
    // ending run with them still running.
    let _signals = crate::sys::interrupt::catch_signals().map(|d| d.auto_deregister());
    if opts.command.is_empty()
        && (opts.specs.is_empty() || opts.specs.iter().any(|s| s.command.is_none()))
    {
        return Err(Error::usage(
            Code::Usage,
            "no command to run: give it after `--`",
            "for example `git delegate run -n 2 -- sh -c 'echo $GIT_DELEGATE_TASK'`",
        ));
    }
    // run owns the lease while it runs (design §3.13); what the caller
    // asked for (`--owner-pid`, or a plain TTL lease) is put in place when
    // it ends with the batch open.
    let mut popts = opts.prepare.clone();
    let after_owner = popts.owner.take();
    let me = std::process::id();
    popts.owner = crate::sys::process::process_start(me).map(|s| (me, s));
    let prepared = crate::ops::prepare::run(&source, &popts, observer)?;
    let b = prepared.batch.clone();
    let logs = batch::logs_dir(&source.state_dir(), &b.id);
    std::fs::create_dir_all(&logs)
        .map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
    let ttl = popts.ttl_secs.unwrap_or(source.config.ttl_secs);
    let hand_over = |source: &Source| hand_over(source, &b.id, ttl, after_owner);

    let (workers, interrupted) = run_workers(&source, &b, opts, &logs, watcher);
    let failed: Vec<usize> = (0..workers.len()).filter(|&i| !workers[i].ok()).collect();
    if interrupted {
        // The workers are stopped; what follows (recording, the lease
        // handed over) must not stop at the flag the signal set.
        gix::interrupt::reset();
        // A worker the interruption stopped did not fail: its task stays
        // open for the plain `apply` run prints (design §3.13).
        let failed: Vec<usize> = failed
            .into_iter()
            .filter(|&i| !workers[i].stopped)
            .collect();
        let _ = record_failed(&source, &b.id, &failed, &workers);
        hand_over(&source)?;
        return Ok(Report {
            prepared,
            workers,
            apply: None,
            interrupted: true,
            no_apply: opts.apply.is_none(),
            ended_elsewhere: ended_elsewhere(&source, &b.id),
        });
    }
    // Another command may have applied or dropped the batch while the
    // workers ran (no lock is held meanwhile): said so, never taken for
    // an unknown batch (design §3.13: exit 1, the workers' lines shown).
    let no_apply = opts.apply.is_none();
    let elsewhere = |workers: Vec<Worker>, prepared, ended| {
        Ok(Report {
            prepared,
            workers,
            apply: None,
            interrupted: false,
            no_apply,
            ended_elsewhere: Some(ended),
        })
    };
    if let Some(ended) = ended_elsewhere(&source, &b.id) {
        return elsewhere(workers, prepared, ended);
    }
    if let Err(e) = record_failed(&source, &b.id, &failed, &workers) {
        return match ended_elsewhere(&source, &b.id) {
            Some(ended) => elsewhere(workers, prepared, ended),
            None => Err(e),
        };
    }
    let Some(aopts) = &opts.apply else {
        hand_over(&source)?;
        return Ok(Report {
            prepared,
            workers,
            apply: None,
            interrupted: false,
            no_apply: true,
            ended_elsewhere: None,
        });
    };
    // A task another command applied (or discarded) meanwhile is neither
    // applied again nor called worker_failed: listed as it is recorded now.
    let now = match batch::select_open(&source.state_dir(), Some(&b.id)) {
        Ok(now) => now,
        Err(e) => {
            return match ended_elsewhere(&source, &b.id) {
                Some(ended) => elsewhere(workers, prepared, ended),
                None => Err(e),
            }
        }
    };
    let closed: Vec<usize> = (0..workers.len())
        .filter(|&i| now.tasks.get(i).is_some_and(|t| !t.state.is_open()))
        .collect();
    let failed: Vec<usize> = failed.into_iter().filter(|i| !closed.contains(i)).collect();
    let ok: Vec<String> = workers
        .iter()
        .enumerate()
        .filter(|(i, w)| w.ok() && !closed.contains(i))
        .map(|(_, w)| w.name.clone())
        .collect();
    let mut aopts = aopts.clone();
    aopts.batch = Some(b.id.clone());
    aopts.only = ok.clone();
    aopts.discard.clear();
    let mut apply = if ok.is_empty() {
        // Nothing to apply: every task is a failed worker's (or was
        // applied by another command).
        let mut batch = now;
        for &i in &failed {
            batch.tasks[i].state = TaskState::WorkerFailed;
        }
        crate::ops::apply::Report {
            batch,
            outcomes: Vec::new(),
            written: Vec::new(),
            apply_id: None,
            batch_open: true,
            dry_run: false,
            write_error: None,
            kept: Vec::new(),
            workspaces: Vec::new(),
            artifacts_error: None,
            side_effects: Vec::new(),
            verify: None,
            remote_left: None,
            interrupted: false,
        }
    } else {
        let root = source.root.clone();
        let r = crate::ops::apply::run(source, &aopts, observer);
        let source = Source::discover(&root)?;
        if r.is_err() {
            if let Some(ended) = ended_elsewhere(&source, &b.id) {
                return elsewhere(workers, prepared, ended);
            }
        }
        // A failed apply leaves the batch open too: its lease is handed
        // over all the same (run's own would be orphaned in a moment).
        if r.as_ref().map_or(true, |r| r.batch_open) {
            let handed = hand_over(&source);
            let r = r?;
            handed?;
            r
        } else {
            r?
        }
    };
    // run's apply document lists every task, the failed workers' included.
    for &i in &failed {
        let mut o = crate::ops::apply::Outcome::new(i, TaskState::WorkerFailed);
        let w = &workers[i];
        o.message = Some(worker_message(w));
        o.reason = Some(failure_reason(w));
        apply.outcomes.push(o);
    }
    for &i in &closed {
        let state = apply
            .batch
            .tasks
            .get(i)
            .map_or(TaskState::Applied, |t| t.state);
        let mut o = crate::ops::apply::Outcome::new(i, state);
        o.message = Some(format!(
            "another command ended it ({}) while the workers ran",
            state.as_str()
        ));
        apply.outcomes.push(o);
    }
    apply.outcomes.sort_by_key(|o| o.idx);
    if ok.is_empty() {
        hand_over(&Source::discover(&b.source)?)?;
    }
    Ok(Report {
        prepared,
        workers,
        apply: Some(apply),
        interrupted: false,
        no_apply: false,
        ended_elsewhere: None,
    })
}

/// A sentence saying how a worker ended.
pub fn worker_message(w: &Worker) -> String {
    if let Some(e) = &w.start_error {
        return format!("its command could not be started: {e}");
    }
    if w.timed_out {
        return "its worker ran past the timeout and was stopped".into();
    }
    if w.stopped {
        return "its worker was stopped (run was interrupted)".into();
    }
    match (w.exit, w.signal) {
        (Some(c), _) => format!("its worker exited with status {c}"),
        (None, Some(s)) => format!("its worker was killed by signal {s}"),
        _ => "its worker failed".into(),
    }
}

/// Record `worker_failed` for tasks `failed` (under the lock), with the
/// reason (`timed_out` or `worker_failed`), so a later plain apply leaves
/// them out (design §3.18 "Follow-through").
fn record_failed(source: &Source, id: &str, failed: &[usize], workers: &[Worker]) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let state = source.state_dir();
    let _lock = crate::ops::lock::acquire(&state, source.config.lock_timeout_secs)?;
    let mut b = batch::select_open(&state, Some(id))?;
    for &i in failed {
        if let Some(t) = b.tasks.get_mut(i) {
            if t.state == TaskState::Open {
                t.state = TaskState::WorkerFailed;
                t.reason = Some(failure_reason(&workers[i]).to_string());
            }
        }
    }
    batch::save(&state, &b)
}

/// `tasks[].reason` of a failed worker's task.
fn failure_reason(w: &Worker) -> &'static str {
    if w.timed_out {
        "timed_out"
    } else {
        "worker_failed"
    }
}

/// run ends with the batch open: its lease becomes a plain TTL lease (or
/// one owned by the `--owner-pid` the caller gave), counted from now.
fn hand_over(source: &Source, id: &str, ttl: i64, owner: Option<(u32, u64)>) -> Result<()> {
    let state = source.state_dir();
    let _lock = crate::ops::lock::acquire(&state, source.config.lock_timeout_secs)?;
    let Ok(mut b) = batch::select_open(&state, Some(id)) else {
        return Ok(());
    };
    if b.id != id {
        return Ok(());
    }
    b.lease = crate::record::lease::Lease::new(ttl, owner);
    batch::save(&state, &b)
}

/// A worker being run.
struct Live {
    idx: usize,
    group: Group,
    timeout: Option<Duration>,
    /// SIGTERM sent (timeout or interruption) at this time.
    terminating: Option<Instant>,
    timed_out: bool,
}

/// How often running workers are looked at.
const POLL: Duration = Duration::from_millis(50);
/// At most this much of a worker's log is read for display per look.
const CHUNK: u64 = 1 << 20;

/// Start the workers, at most J at once, and wait for all of them. Returns
/// them in task order and whether run was interrupted.
fn run_workers(
    source: &Source,
    b: &batch::Batch,
    opts: &Options,
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
            match start(source, b, opts, idx, &log) {
                Ok((group, timeout)) => {
                    watcher.event(Event::Started { idx });
                    live.push(Live {
                        idx,
                        group,
                        timeout,
                        terminating: None,
                        timed_out: false,
                    });
                }
                Err(e) => {
                    use std::io::Write;
                    if let Ok(mut f) = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&log)
                    {
                        let _ = writeln!(f, "git-delegate: cannot start the worker: {e}");
                    }
                    let w = Worker {
                        name: b.tasks[idx].name.clone(),
                        exit: None,
                        signal: None,
                        timed_out: false,
                        stopped: false,
                        duration_ms: 0,
                        log,
                        start_error: Some(e),
                    };
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
                if show {
                    l.group.lines(true, CHUNK, |line| {
                        watcher.event(Event::Line { idx: l.idx, line })
                    });
                }
                use std::os::unix::process::ExitStatusExt;
                let w = Worker {
                    name: b.tasks[l.idx].name.clone(),
                    exit: status.code(),
                    signal: status.signal(),
                    timed_out: l.timed_out,
                    stopped: interrupted && !l.timed_out,
                    duration_ms: l.group.started.elapsed().as_millis() as u64,
                    log: logs.join(format!("{}.log", b.tasks[l.idx].name)),
                    start_error: None,
                };
                watcher.event(Event::Ended {
                    idx: l.idx,
                    worker: &w,
                });
                done[l.idx] = Some(w);
                live.swap_remove(i);
                continue;
            }
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
        .map(|(idx, w)| {
            w.unwrap_or_else(|| Worker {
                name: b.tasks[idx].name.clone(),
                exit: None,
                signal: None,
                timed_out: false,
                stopped: true,
                duration_ms: 0,
                log: logs.join(format!("{}.log", b.tasks[idx].name)),
                start_error: None,
            })
        })
        .collect();
    (workers, interrupted)
}

/// Start task `idx`'s worker (design §3.13).
fn start(
    source: &Source,
    b: &batch::Batch,
    opts: &Options,
    idx: usize,
    log: &Path,
) -> std::result::Result<(Group, Option<Duration>), String> {
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
    process::spawn(cmd, log)
        .map(|g| (g, timeout))
        .map_err(|(is_log, e)| {
            if is_log {
                format!("cannot create {}: {e}", log.display())
            } else {
                format!("{}: {e}", program.to_string_lossy())
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        let ws = Path::new("/w/s 1");
        let s = |a: &str| {
            substitute(OsStr::new(a), "t1", 3, ws)
                .into_string()
                .unwrap()
        };
        assert_eq!(s("{task}-{index}"), "t1-3");
        assert_eq!(s("--root={workspace}"), "--root=/w/s 1");
        assert_eq!(s("{{task}}"), "{task}");
        assert_eq!(s("{{{task}}}"), "{t1}");
        assert_eq!(s("{other} {"), "{other} {");
    }

    #[test]
    fn tasks_file() {
        let p = Path::new("tasks.toml");
        let t = parse_tasks(
            p,
            "[[task]]\nname = \"a\"\ncommand = [\"echo\", \"{task}\"]\nenv = { X = \"1\" }\ntimeout = \"5s\"\n[[task]]\nname = \"b\"\n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].command.as_deref().unwrap(), ["echo", "{task}"]);
        assert_eq!(t[0].env, [("X".to_string(), "1".to_string())]);
        assert_eq!(t[0].timeout_secs, Some(5));
        assert!(t[1].command.is_none());
        for (text, line) in [
            ("[[task]]\nname = \"a\"\ncolour = 1\n", 3),
            ("[[task]]\nname = \"a\"\ncommand = \"echo\"\n", 3),
            ("[[task]]\nname = \"a\"\ntimeout = \"soon\"\n", 3),
            ("[[task]]\nname = \"-a\"\n", 2),
            ("[[task]]\nname = \"a\"\n[[task]]\nname = \"a\"\n", 4),
        ] {
            let e = parse_tasks(p, text).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{text}");
            assert!(
                e.message.contains(&format!("line {line},")),
                "{text}: {}",
                e.message
            );
        }
    }
}
