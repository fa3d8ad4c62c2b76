//! `workspace.setup` (design §3.20): the shell command run in each new
//! workspace's cwd once its files (and carried ignored files) are in place,
//! at most `workspace.setup-jobs` at once, with the environment of `run`'s
//! workers, output to `<common-dir>/delegate/logs/<uuid>/setup-<task>.log`.
//!
//! Owns: starting, waiting for and stopping the setup commands; the
//! `setup_failed` error naming the task, its exit status and its log.
//! Never: undoes anything itself (prepare's guard removes the batch when
//! this fails); lets a setup command outlive it (a failure or Ctrl-C stops
//! every one still running, their process groups included).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{Code, Error};
use crate::git::repo::Source;
use crate::record::batch;
use crate::sys::process;

/// `program` set up as a task's commands run (design §3.13), for setup and
/// for `run`'s workers alike: in the task's cwd (its root when that folder
/// cannot be made), with `GIT_DELEGATE_BATCH`, `_TASK`, `_TASK_INDEX`,
/// `_WORKSPACE`, `_SOURCE` and `_PORT` (`run.port-base` + index x
/// `run.ports-per-task`).
pub fn worker_command(
    program: impl AsRef<std::ffi::OsStr>,
    cfg: &crate::config::Config,
    b: &batch::Batch,
    idx: usize,
) -> std::result::Result<Command, String> {
    let task = &b.tasks[idx];
    let mut cwd = task.cwd(&b.prefix);
    match crate::workspace::make_cwd(&task.root, &b.prefix) {
        Ok(true) => {}
        Ok(false) => cwd = task.root.clone(),
        Err(why) => return Err(why),
    }
    let port = u32::from(cfg.port_base) + idx as u32 * u32::from(cfg.ports_per_task);
    let mut c = Command::new(program);
    c.current_dir(&cwd)
        .env("GIT_DELEGATE_BATCH", &b.id)
        .env("GIT_DELEGATE_TASK", &task.name)
        .env("GIT_DELEGATE_TASK_INDEX", idx.to_string())
        .env("GIT_DELEGATE_WORKSPACE", &task.root)
        .env("GIT_DELEGATE_SOURCE", &b.source)
        .env("GIT_DELEGATE_PORT", port.to_string());
    Ok(c)
}

/// Stop every setup command in `live` and what it left in its group:
/// SIGTERM to all, then each given what is left of the grace period.
fn stop_all(live: &mut [(usize, process::Group)]) {
    let started = Instant::now();
    for (_, g) in live.iter_mut() {
        g.term();
    }
    for (_, g) in live.iter_mut() {
        let left = process::GRACE.saturating_sub(started.elapsed());
        g.terminate(left);
        process::kill(g.pgid);
    }
}

const POLL: Duration = Duration::from_millis(20);

/// Why setup stopped: the error, and the task whose command failed (none
/// for a signal, or a log folder that cannot be made).
#[derive(Debug)]
pub struct Failed {
    pub task: Option<usize>,
    pub error: Error,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        Failed { task: None, error }
    }
}

/// Run `workspace.setup` in every local task's workspace of `b` (none when
/// it is empty). An error once any of them fails or a signal comes; the
/// others are stopped first. `reused`, per local task in order: its
/// workspace came from the pool (design §3.20), which its error says.
pub fn run(source: &Source, b: &batch::Batch, reused: &[bool]) -> std::result::Result<(), Failed> {
    let cmd = source.config.setup.trim();
    if cmd.is_empty() {
        return Ok(());
    }
    let todo: Vec<usize> = (0..b.tasks.len()).filter(|&i| !b.tasks[i].remote).collect();
    if todo.is_empty() {
        return Ok(());
    }
    let from_pool = |idx: usize| {
        todo.iter()
            .position(|&i| i == idx)
            .and_then(|k| reused.get(k))
            .copied()
            .unwrap_or(false)
    };
    let logs = batch::logs_dir(&source.state_dir(), &b.id);
    std::fs::create_dir_all(&logs)
        .map_err(|e| Error::io(format!("cannot create {}", logs.display()), e))?;
    let jobs = match source.config.setup_jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let cfg = &source.config;
    let log_of = |idx: usize| logs.join(format!("setup-{}.log", b.tasks[idx].name));
    let mut live: Vec<(usize, process::Group)> = Vec::new();
    let mut next = 0usize;
    let mut failure: Option<Failed> = None;
    let failed = |idx: usize, how: &str| Failed {
        task: Some(idx),
        error: failed(&b.tasks[idx].name, how, &log_of(idx), from_pool(idx)),
    };
    let mut poll = Duration::from_millis(1);
    loop {
        if failure.is_none() && crate::sys::interrupt::interrupted() {
            failure = Some(Error::interrupted().into());
        }
        while failure.is_none() && next < todo.len() && live.len() < jobs {
            let idx = todo[next];
            next += 1;
            let log = log_of(idx);
            let mut c = match worker_command("sh", cfg, b, idx) {
                Ok(c) => c,
                Err(why) => {
                    failure = Some(failed(idx, &why));
                    break;
                }
            };
            c.arg("-c").arg(cmd);
            match process::spawn(c, &log) {
                Ok(g) => live.push((idx, g)),
                Err((_, e)) => {
                    failure = Some(failed(idx, &format!("could not start: {e}")));
                }
            }
        }
        if failure.is_some() {
            break;
        }
        let mut i = 0;
        while i < live.len() {
            match live[i].1.try_wait() {
                Ok(Some(status)) => {
                    let (idx, g) = live.swap_remove(i);
                    // What it left running in its group goes with it.
                    process::kill(g.pgid);
                    if !status.success() {
                        use std::os::unix::process::ExitStatusExt;
                        let how = match (status.code(), status.signal()) {
                            (Some(c), _) => format!("exited with status {c}"),
                            (None, Some(s)) => format!("was killed by signal {s}"),
                            _ => "failed".to_string(),
                        };
                        failure = Some(failed(idx, &how));
                    }
                }
                Ok(None) => i += 1,
                Err(e) => {
                    let idx = live[i].0;
                    failure = Some(failed(idx, &format!("could not be waited for: {e}")));
                    i += 1;
                }
            }
        }
        if failure.is_some() || (live.is_empty() && next >= todo.len()) {
            break;
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(POLL);
    }
    // Stop whatever still runs: a failure or a signal ends them all.
    stop_all(&mut live);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The `setup_failed` error of `task` (its command `how`, its `log`);
/// `reused`: its workspace came from the pool, whose earlier output (a
/// virtual environment, build output) is then the likely cause.
fn failed(task: &str, how: &str, log: &Path, reused: bool) -> Error {
    let mut details = serde_json::Map::new();
    details.insert("task".into(), task.into());
    details.insert("log".into(), log.display().to_string().into());
    details.insert("reused".into(), reused.into());
    let (why, help) = match reused {
        true => (
            ". It ran in a workspace taken from the pool, over the ignored files an earlier task's setup left there (a virtual environment, build output): a stale cache there is the likely cause. That workspace was removed; the other idle ones stay in the pool.",
            format!(
                "read {}; prepare again (that task gets a new workspace), and make `workspace.setup` work over its own earlier output; `git delegate drop --pool` empties the pool",
                log.display()
            ),
        ),
        false => (
            "",
            format!(
                "read {} and fix the command in `workspace.setup` (or what it needs), then prepare again",
                log.display()
            ),
        ),
    };
    Error::state(
        Code::SetupFailed,
        format!(
            "workspace.setup failed for task {task}: it {how} (log: {}); prepare was undone{why}",
            log.display()
        ),
        help,
    )
    .with_details(details)
}
