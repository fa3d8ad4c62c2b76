//! Process quiescing: stopping processes whose cwd is inside a workspace
//! before it is snapshotted (SIGTERM, a short grace, SIGKILL).
//!
//! Owns: finding (`find`), describing (pid, command, whether it has a
//! controlling terminal) and signalling such processes through /proc and
//! rustix;
//! the one rule for "a process is inside a workspace", for apply (which
//! stops them) and gc (which leaves a batch alone while one is found):
//! its current directory is the workspace or below it, read from
//! `/proc/<pid>/cwd`; a process whose cwd was deleted is not inside (it can
//! no longer create anything there), and this process never is.
//! Ancestors, decided on purpose: apply never signals this process's
//! parents ([`find_all`], [`stop_all`] spare them, so `git delegate apply`
//! run from a shell sitting in a workspace does not kill that shell), while
//! gc counts them ([`find_users`]): gc only reads, and a shell (or agent)
//! that ran `git delegate gc` from inside a workspace is still using it, so
//! gc leaves that batch alone rather than delete the folder under it.
//! A third question is asked of a workspace moved aside to be proven
//! before removal ([`holders`], design §3.18): can anything still write
//! into it, now that no path leads there? A process whose cwd is inside
//! (this process's ancestors aside, as for apply), or that holds a folder
//! inside open, or a file inside open for writing.
//! Also the processes git-delegate started for a batch, wherever their cwd
//! is (`find_marked`, `stop_marked`: their environment names the batch),
//! which the removal of a batch whose prepare was killed stops first.
//! Never: signals a process outside the workspace (or, for a batch, one
//! whose environment does not name it), this process or its parents.
//! Callers pass the real path of a workspace whose identity they checked
//! (`workspace::identify`), never a path that could lead through a symlink
//! to somewhere else.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal};

mod find;

pub use find::*;

/// How long a process gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// What quiescing a workspace came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No process is left inside; `stopped` were signalled on the way.
    Clear { stopped: Vec<Proc> },
    /// These processes are still inside (they could not be stopped, or the
    /// policy forbids stopping them: a process with a terminal when
    /// terminals are spared).
    Running(Vec<Proc>),
}

/// A process found inside a workspace, as reported to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    /// Its command line (arguments joined by spaces), or its name when the
    /// command line cannot be read.
    pub command: String,
    /// Whether it has a controlling terminal (`tty_nr` in `/proc/<pid>/stat`
    /// is not 0): a person's shell or editor rather than a background job.
    pub terminal: bool,
}

/// Stop every process inside each of `roots`: SIGTERM, up to `grace` for
/// them to leave, then SIGKILL; re-scan until none is left. A process that
/// cannot be signalled (another user's) makes that root's outcome
/// `Running`. One `/proc` scan per round serves every root, and the roots
/// share one grace period. One outcome per root. With `spare_terminals`, a
/// root where a process with a controlling terminal is found is not
/// touched at all: its outcome is `Running` with those processes.
pub fn stop_all(roots: &[PathBuf], grace: Duration, spare_terminals: bool) -> Vec<Outcome> {
    let canonical = canonical(roots);
    let spared = ancestors();
    let n = canonical.len();
    let mut stopped: Vec<Vec<Proc>> = vec![Vec::new(); n];
    let mut done: Vec<Option<Outcome>> = vec![None; n];
    for _round in 0..8 {
        let found = scan(&canonical, &spared);
        let mut active: Vec<usize> = Vec::new();
        for i in 0..n {
            if done[i].is_some() {
                continue;
            }
            if found[i].is_empty() {
                done[i] = Some(Outcome::Clear {
                    stopped: stopped[i].clone(),
                });
            } else {
                active.push(i);
            }
        }
        if active.is_empty() {
            break;
        }
        for &i in &active {
            let procs: Vec<Proc> = found[i].iter().map(|&p| describe(p)).collect();
            let terminals: Vec<Proc> = procs.iter().filter(|p| p.terminal).cloned().collect();
            if spare_terminals && !terminals.is_empty() {
                done[i] = Some(Outcome::Running(terminals));
                continue;
            }
            for p in procs {
                if !stopped[i].iter().any(|s| s.pid == p.pid) {
                    stopped[i].push(p);
                }
            }
            if !signal_all(&found[i], &canonical[i], Signal::TERM) {
                done[i] = Some(Outcome::Running(
                    found[i].iter().map(|&p| describe(p)).collect(),
                ));
            }
        }
        active.retain(|&i| done[i].is_none());
        let waiting: Vec<(&[u32], &Path)> = active
            .iter()
            .map(|&i| (found[i].as_slice(), canonical[i].as_path()))
            .collect();
        if wait_gone(&waiting, grace) {
            continue;
        }
        for &i in &active {
            let left: Vec<u32> = found[i]
                .iter()
                .copied()
                .filter(|&p| cwd_inside(p, &canonical[i]))
                .collect();
            if !signal_all(&left, &canonical[i], Signal::KILL) {
                done[i] = Some(Outcome::Running(left.into_iter().map(describe).collect()));
            }
        }
        wait_gone(&waiting, grace);
    }
    let last = if done.iter().any(Option::is_none) {
        scan(&canonical, &spared)
    } else {
        vec![Vec::new(); n]
    };
    done.into_iter()
        .zip(last)
        .zip(stopped)
        .map(|((d, pids), stopped)| {
            d.unwrap_or(if pids.is_empty() {
                Outcome::Clear { stopped }
            } else {
                Outcome::Running(pids.into_iter().map(describe).collect())
            })
        })
        .collect()
}

/// Signal each process through a pidfd (so a recycled pid is never hit),
/// after checking once more that it is inside `root`. `false` when a
/// process could not be signalled for lack of permission.
fn signal_all(pids: &[u32], root: &Path, sig: Signal) -> bool {
    signal_checked(pids, |pid| cwd_inside(pid, root), sig)
}

/// Signal each process of `pids` for which `still` holds, checked once
/// more through a pidfd that pins it. `false` when a process could not be
/// signalled for lack of permission.
fn signal_checked(pids: &[u32], still: impl Fn(u32) -> bool, sig: Signal) -> bool {
    for &pid in pids {
        let Some(p) = Pid::from_raw(pid as i32) else {
            continue;
        };
        let fd = match rustix::process::pidfd_open(p, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::SRCH) => continue,
            Err(_) => {
                // No pidfd support: fall back to a plain kill right after the check.
                if still(pid) {
                    match rustix::process::kill_process(p, sig) {
                        Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                        Err(_) => return false,
                    }
                }
                continue;
            }
        };
        // The pidfd pins the process: re-check that it is the one meant.
        if !still(pid) {
            continue;
        }
        match rustix::process::pidfd_send_signal(&fd, sig) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Processes whose environment holds `var=value`, never this process or
/// one of its ancestors: what git-delegate started for a batch carries
/// `GIT_DELEGATE_BATCH=<id>` (its setup commands, its workers), wherever
/// their cwd is. Another user's processes are never found (their
/// environment cannot be read).
pub fn find_marked(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let spared = ancestors();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| !spared.contains(pid) && marked(*pid, needle.as_bytes()))
        .collect();
    out.sort_unstable();
    out
}

/// Whether `pid`'s environment holds exactly the entry `needle` (a zombie,
/// a process gone or another user's: no).
fn marked(pid: u32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|entry| entry == needle))
}

/// Stop every process [`find_marked`] finds for `var=value` (what they
/// start inherits the variable, so their children are found too):
/// SIGTERM, up to `grace`, then SIGKILL, until none is left (a few
/// rounds). `Clear` with what was stopped, or `Running` with those that
/// could not be.
pub fn stop_marked(var: &str, value: &str, grace: Duration) -> Outcome {
    let needle = format!("{var}={value}");
    let is_marked = |pid: u32| marked(pid, needle.as_bytes());
    let mut stopped: Vec<Proc> = Vec::new();
    for round in 0..4 {
        let found = find_marked(var, value);
        if found.is_empty() {
            return Outcome::Clear { stopped };
        }
        for &p in &found {
            if !stopped.iter().any(|s| s.pid == p) {
                // One already gone (a short-lived child ended on its own)
                // reads as an empty command: it was not stopped.
                let d = describe(p);
                if !d.command.is_empty() {
                    stopped.push(d);
                }
            }
        }
        let sig = if round == 0 {
            Signal::TERM
        } else {
            Signal::KILL
        };
        if !signal_checked(&found, is_marked, sig) {
            break;
        }
        let start = Instant::now();
        while found.iter().any(|&p| is_marked(p)) && start.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(25));
        }
    }
    let left = find_marked(var, value);
    if left.is_empty() {
        Outcome::Clear { stopped }
    } else {
        Outcome::Running(left.into_iter().map(describe).collect())
    }
}

/// Wait until none of the processes is inside its root any more; `false`
/// on timeout.
fn wait_gone(waiting: &[(&[u32], &Path)], timeout: Duration) -> bool {
    let start = Instant::now();
    loop {
        if !waiting
            .iter()
            .any(|(pids, root)| pids.iter().any(|&p| cwd_inside(p, root)))
        {
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
        assert!(!find_all(&[cwd])[0].contains(&me));
        assert!(ancestors().contains(&me));
    }

    #[test]
    fn never_follows_a_root_that_is_a_symlink() {
        let cwd = std::env::current_dir().unwrap();
        let tmp = std::env::temp_dir().join(format!("gd-quiesce-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&cwd, &tmp).unwrap();
        let found = find_all(std::slice::from_ref(&tmp));
        let _ = std::fs::remove_file(&tmp);
        assert!(found[0].is_empty(), "{found:?}");
    }

    #[test]
    fn one_rule_for_apply_and_gc_a_deleted_cwd_is_not_inside() {
        let root = std::env::temp_dir().join(format!("gd-quiesce-users-{}", std::process::id()));
        std::fs::create_dir_all(root.join("gone")).unwrap();
        let spawn = |dir: &Path| {
            std::process::Command::new("cat")
                .current_dir(dir)
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let inside = spawn(&root);
        let deleted = spawn(&root.join("gone"));
        let (inside_id, deleted_id) = (inside.id(), deleted.id());
        std::fs::remove_dir(root.join("gone")).unwrap();
        let users = find_users(std::slice::from_ref(&root));
        let all = find_all(std::slice::from_ref(&root));
        for mut child in [inside, deleted] {
            drop(child.stdin.take());
            child.wait().unwrap();
        }
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(users, all);
        assert!(users[0].contains(&inside_id), "{users:?}");
        assert!(!users[0].contains(&deleted_id), "{users:?}");
        assert!(!users[0].contains(&std::process::id()));
    }

    #[test]
    fn parses_parent_with_odd_names() {
        let me = std::process::id();
        assert!(parent_of(me).is_some());
    }
}
