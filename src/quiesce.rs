//! Process quiescing: stopping processes whose cwd is inside a workspace
//! before it is snapshotted (SIGTERM, a short grace, SIGKILL).
//!
//! Owns: finding and signalling such processes through /proc and rustix.
//! Never: signals a process outside the workspace, this process or its parents.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal};

/// How long a process gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// What quiescing a workspace came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No process is left inside; `stopped` were signalled on the way.
    Clear { stopped: usize },
    /// These processes are still inside (they could not be stopped, or the
    /// policy forbids stopping them).
    Running(Vec<u32>),
}

/// Processes (pids) whose current directory is `root` or inside it, never
/// this process or one of its ancestors.
pub fn find(root: &Path) -> Vec<u32> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let spared = ancestors();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in rd.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if spared.contains(&pid) {
            continue;
        }
        if cwd_inside(pid, &root) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Whether `pid`'s current directory is `root` or below it. A process that
/// is gone, a zombie, or whose cwd cannot be read does not count.
fn cwd_inside(pid: u32, root: &Path) -> bool {
    match std::fs::read_link(format!("/proc/{pid}/cwd")) {
        Ok(cwd) => {
            // A deleted folder reads as "<path> (deleted)": not a usable cwd any more.
            if cwd.as_os_str().as_bytes().ends_with(b" (deleted)") && !cwd.exists() {
                return false;
            }
            cwd.starts_with(root)
        }
        Err(_) => false,
    }
}

/// This process and every ancestor up to init.
fn ancestors() -> HashSet<u32> {
    let mut out = HashSet::new();
    let mut pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
    while pid > 1 && out.insert(pid) {
        match parent_of(pid) {
            Some(p) => pid = p,
            None => break,
        }
    }
    out.insert(1);
    out
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields follow the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Stop every process inside `root`: SIGTERM, up to `grace` for them to
/// leave, then SIGKILL; re-scan until none is left. A process that cannot
/// be signalled (another user's) makes this give up with `Running`.
pub fn stop(root: &Path, grace: Duration) -> Outcome {
    let canonical: PathBuf = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut stopped = 0;
    for _round in 0..8 {
        let pids = find(&canonical);
        if pids.is_empty() {
            return Outcome::Clear { stopped };
        }
        stopped += pids.len();
        if !signal_all(&pids, &canonical, Signal::TERM) {
            return Outcome::Running(pids);
        }
        if wait_gone(&pids, &canonical, grace) {
            continue;
        }
        let left: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&p| cwd_inside(p, &canonical))
            .collect();
        if !signal_all(&left, &canonical, Signal::KILL) {
            return Outcome::Running(left);
        }
        wait_gone(&left, &canonical, grace);
    }
    match find(&canonical) {
        pids if pids.is_empty() => Outcome::Clear { stopped },
        pids => Outcome::Running(pids),
    }
}

/// Signal each process through a pidfd (so a recycled pid is never hit),
/// after checking once more that it is inside `root`. `false` when a
/// process could not be signalled for lack of permission.
fn signal_all(pids: &[u32], root: &Path, sig: Signal) -> bool {
    for &pid in pids {
        let Some(p) = Pid::from_raw(pid as i32) else {
            continue;
        };
        let fd = match rustix::process::pidfd_open(p, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::SRCH) => continue,
            Err(_) => {
                // No pidfd support: fall back to a plain kill right after the check.
                if cwd_inside(pid, root) {
                    match rustix::process::kill_process(p, sig) {
                        Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                        Err(_) => return false,
                    }
                }
                continue;
            }
        };
        // The pidfd pins the process: re-check that it is the one inside.
        if !cwd_inside(pid, root) {
            continue;
        }
        match rustix::process::pidfd_send_signal(&fd, sig) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Wait until none of `pids` is inside `root` any more; `false` on timeout.
fn wait_gone(pids: &[u32], root: &Path, timeout: Duration) -> bool {
    let start = Instant::now();
    loop {
        if !pids.iter().any(|&p| cwd_inside(p, root)) {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_finds_itself_or_ancestors() {
        let cwd = std::env::current_dir().unwrap();
        let me = std::process::id();
        assert!(!find(&cwd).contains(&me));
        assert!(ancestors().contains(&me));
    }

    #[test]
    fn parses_parent_with_odd_names() {
        let me = std::process::id();
        assert!(parent_of(me).is_some());
    }
}
