//! Commands git-delegate starts for the user: `apply --verify`'s CMD
//! (design §3.10) and `run`'s workers (design §3.13). Each runs in its own
//! process group, with stdin from `/dev/null`, its stdout and stderr written
//! straight into its log file (never through a pipe this process has to
//! drain: a command writing gigabytes neither blocks nor grows our memory),
//! and without the repository-locating `GIT_*` variables; the group is
//! stopped whole (SIGTERM, then SIGKILL after a grace), so nothing it started
//! outlives it.
//!
//! Owns: spawning into a group with a log (`spawn`), stopping a group
//! (`terminate`, `kill`), reading the log's new complete lines (`Group::lines`);
//! the list of repository-locating variables no started command inherits
//! ([`LOCATING`], which `repo` also takes out of this process's environment
//! and applies to the source alone); the facts that tell a live process from
//! a recycled pid, which leases, journals and markers record ([`hostname`],
//! [`process_start`]).
//! Never: decides what to run, where, or for how long (its callers do);
//! prints anything.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use gix::bstr::{BStr, ByteSlice};

/// The variables that say where a repository is (git's `local_repo_env`
/// without the `-c` configuration, plus `GIT_NAMESPACE`), as git exports
/// them for `git --git-dir=X --work-tree=Y delegate`. They describe the
/// source only: a workspace is another repository for them (git's own
/// `prepare_other_repo_env` clears the same list).
pub const LOCATING: [&str; 11] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_NAMESPACE",
];

/// Make the git command `cmd` run no hook (design §3.18 "What apply
/// runs"): `core.hooksPath=/dev/null` appended to the configuration given
/// through the environment (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
/// `GIT_CONFIG_VALUE_<n>`), after the entries the process already has, so
/// those keep their meaning and this one wins.
pub fn without_hooks(cmd: &mut Command) {
    let n: usize = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    cmd.env(format!("GIT_CONFIG_KEY_{n}"), "core.hooksPath")
        .env(format!("GIT_CONFIG_VALUE_{n}"), "/dev/null")
        .env("GIT_CONFIG_COUNT", (n + 1).to_string());
}

/// How long a group gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// A started command: the leader of its own process group.
pub struct Group {
    pub child: Child,
    pub pgid: i32,
    pub started: Instant,
    log: std::fs::File,
    read: u64,
    partial: Vec<u8>,
}

/// Take the repository-locating variables ([`LOCATING`]) out of `cmd`'s
/// environment, but those its caller set on it (a contained worker's own
/// object folder, design §3.22).
pub fn without_locating(cmd: &mut Command) {
    let set: Vec<std::ffi::OsString> = cmd
        .get_envs()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k.to_os_string())
        .collect();
    for k in LOCATING {
        if !set.iter().any(|s| s == k) {
            cmd.env_remove(k);
        }
    }
}

/// Start `cmd` (already given its program, arguments, cwd and variables) in
/// a new process group, stdin `/dev/null`, stdout and stderr appended to a
/// new file at `log`, without the repository-locating variables
/// ([`without_locating`]). The error says which of the two steps failed.
pub fn spawn(mut cmd: Command, log: &Path) -> Result<Group, (bool, std::io::Error)> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(log).map_err(|e| (true, e))?;
    let err = out.try_clone().map_err(|e| (true, e))?;
    let reader = std::fs::File::open(log).map_err(|e| (true, e))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0);
    without_locating(&mut cmd);
    let child = cmd.spawn().map_err(|e| (false, e))?;
    let pgid = child.id() as i32;
    Ok(Group {
        child,
        pgid,
        started: Instant::now(),
        log: reader,
        read: 0,
        partial: Vec::new(),
    })
}

fn signal(pgid: i32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// Whether any live process of group `pgid` is still there. A zombie does
/// not count: it holds nothing, and one reparented to a PID 1 that never
/// reaps (some containers) would stay forever.
pub fn group_alive(pgid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pgid) else {
        return false;
    };
    if rustix::process::test_kill_process_group(pid).is_err() {
        return false;
    }
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return true;
    };
    rd.flatten().any(|e| {
        let Some(n) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{n}/stat")) else {
            return false;
        };
        // After the command name: state, ppid, pgrp.
        let mut f = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let state = f.next().unwrap_or("Z");
        let group = f.nth(1).and_then(|g| g.parse::<i32>().ok());
        state != "Z" && state != "X" && group == Some(pgid)
    })
}

/// SIGKILL to every process of group `pgid` (what a command left running
/// goes with it), then wait a little until the group is empty.
pub fn kill(pgid: i32) {
    signal(pgid, rustix::process::Signal::KILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while group_alive(pgid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Group {
    /// Has the leader ended? (Reaps it.)
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// SIGTERM to the group without waiting.
    pub fn term(&self) {
        signal(self.pgid, rustix::process::Signal::TERM);
    }

    /// Kill the group at once and reap the leader.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        signal(self.pgid, rustix::process::Signal::KILL);
        let status = self.child.wait().ok();
        kill(self.pgid);
        status
    }

    /// Stop the group: SIGTERM, then SIGKILL once the leader has ended or
    /// `grace` has passed (whichever comes first), so members that ignore
    /// SIGTERM go too. Returns the leader's status.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.term();
        let deadline = Instant::now() + grace;
        let mut status = None;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break,
            }
        }
        // Whatever is left in the group (a grandchild trapping SIGTERM).
        signal(self.pgid, rustix::process::Signal::KILL);
        if status.is_none() {
            status = self.child.wait().ok();
        }
        kill(self.pgid);
        status
    }

    /// Give `each` the complete lines written to the log since last time
    /// (at most `max` bytes read per call); `done`: the last partial line too.
    pub fn lines(&mut self, done: bool, max: u64, mut each: impl FnMut(&BStr)) {
        if self.log.seek(SeekFrom::Start(self.read)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        if self.log.by_ref().take(max).read_to_end(&mut buf).is_err() {
            return;
        }
        self.read += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let mut start = 0;
        while let Some(i) = self.partial[start..].find_byte(b'\n') {
            each(self.partial[start..start + i].as_bstr());
            start += i + 1;
        }
        self.partial.drain(..start);
        // A line longer than `max` is shown in pieces rather than held.
        if (done || self.partial.len() as u64 > max) && !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            each(line.as_bstr());
        }
    }

    /// Skip what the log holds so far (nobody is shown it).
    pub fn skip(&mut self) {
        self.read = self.log.metadata().map(|m| m.len()).unwrap_or(self.read);
        self.partial.clear();
    }
}

/// The start time (ticks since boot) of a running process, `None` if gone
/// (zombies count as gone: they hold no workspace).
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    // After the state come fields 4..; starttime is field 22, i.e. the 19th after state.
    fields.nth(18)?.parse().ok()
}

/// This machine's name, as leases and journals record it.
pub fn hostname() -> String {
    let uname = rustix::system::uname();
    uname.nodename().to_string_lossy().into_owned()
}
