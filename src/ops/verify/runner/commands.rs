//! The verification commands themselves (design §3.10): CMD through
//! `sh -c` in each verification workspace, in its own process group with
//! stdin from `/dev/null`, every job at once, each with a
//! timeout that kills its group and a log, its lines passed on to the
//! caller's `Observer`.
//!
//! Owns: starting, waiting for and timing out those commands.
//! Never: lets the repository-locating `GIT_*` variables reach CMD, or
//! leaves one running when it returns.

use super::*;

/// How often a running CMD is looked at.
const POLL: Duration = Duration::from_millis(50);

struct Running {
    group: crate::sys::process::Group,
    done: Option<Run>,
}

/// Run CMD for every job at once; return the runs in job order.
pub(super) fn run_all(ctx: &Ctx<'_>, jobs: &[Job]) -> Result<Vec<Run>> {
    let timeout = Duration::from_secs(ctx.settings.timeout_secs.max(0) as u64);
    let mut running: Vec<Running> = Vec::with_capacity(jobs.len());
    let kill_all = |running: &mut Vec<Running>| {
        for r in running.iter_mut().filter(|r| r.done.is_none()) {
            r.group.kill();
        }
    };
    for j in jobs {
        match spawn(ctx, j) {
            Ok(group) => running.push(Running { group, done: None }),
            Err(e) => {
                kill_all(&mut running);
                return Err(e);
            }
        }
    }
    // Short commands (`true`) end within milliseconds: look often at first.
    let mut poll = Duration::from_millis(1);
    loop {
        let mut all_done = true;
        for (j, r) in jobs.iter().zip(running.iter_mut()) {
            if r.done.is_some() {
                continue;
            }
            let status = match r.group.try_wait() {
                Ok(s) => s,
                Err(e) => {
                    r.group.kill();
                    return Err(Error::io("cannot wait for the verification command", e));
                }
            };
            let elapsed = r.group.started.elapsed();
            let (exit, timed_out) = match status {
                Some(s) => (s.code(), false),
                None if elapsed >= timeout => {
                    r.group.kill();
                    (None, true)
                }
                None => {
                    all_done = false;
                    continue;
                }
            };
            // What it left running in its group goes with it.
            crate::sys::process::kill(r.group.pgid);
            r.done = Some(Run {
                n: j.n,
                tasks: j.tasks.clone(),
                exit,
                timed_out,
                duration_ms: elapsed.as_millis() as u64,
                log: j.log.clone(),
            });
        }
        for (j, r) in jobs.iter().zip(running.iter_mut()) {
            let done = r.done.is_some();
            r.group
                .lines(done, 1 << 20, |line| ctx.observer.output(j.n, line));
        }
        if all_done {
            break;
        }
        if crate::sys::interrupt::interrupted() {
            kill_all(&mut running);
            return Err(Error::interrupted());
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(POLL);
    }
    Ok(running.into_iter().filter_map(|r| r.done).collect())
}

/// Start CMD for one job (design §3.10): `sh -c CMD` at the caller's
/// position in the verification workspace, stdin `/dev/null`, its own
/// process group, output to the log (`process::spawn`).
fn spawn(ctx: &Ctx<'_>, j: &Job) -> Result<crate::sys::process::Group> {
    let mut cwd = j.root.join(&ctx.source.prefix);
    if std::fs::create_dir_all(&cwd).is_err() {
        cwd = j.root.clone();
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&ctx.settings.command).current_dir(&cwd);
    cmd.env("GIT_DELEGATE_BATCH", &ctx.batch.id)
        .env("GIT_DELEGATE_VERIFY", "1")
        .env("GIT_DELEGATE_TASKS", j.tasks.join(" "));
    crate::sys::process::spawn(cmd, &j.log).map_err(|(log, e)| {
        if log {
            Error::io(format!("cannot create {}", j.log.display()), e)
        } else {
            Error::io(
                format!(
                    "cannot run the verification command {:?}",
                    ctx.settings.command
                ),
                e,
            )
        }
    })
}
