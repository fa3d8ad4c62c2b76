//! Process quiescing: stopping processes whose cwd is inside a workspace
//! before it is snapshotted (SIGTERM, a short grace, SIGKILL).
//!
//! Owns: finding, describing (pid, command, whether it has a controlling
//! terminal) and signalling such processes through /proc and rustix;
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

/// What `/proc` says about `pid` (a process already gone reads as an empty
/// command without a terminal).
pub fn describe(pid: u32) -> Proc {
    let mut command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            let parts: Vec<String> = b
                .split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            parts.join(" ")
        })
        .unwrap_or_default();
    if command.is_empty() {
        command = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim_end().to_owned())
            .unwrap_or_default();
    }
    let terminal = stat_field(pid, 4).is_some_and(|tty| tty != 0);
    Proc {
        pid,
        command,
        terminal,
    }
}

/// Every process inside each of `roots`, described ([`find_all`]'s rule).
pub fn describe_all(roots: &[PathBuf]) -> Vec<Vec<Proc>> {
    find_all(roots)
        .into_iter()
        .map(|pids| pids.into_iter().map(describe).collect())
        .collect()
}

/// Processes (pids) whose current directory is one of `roots` or inside
/// it, never this process or one of its ancestors: one list per root, from
/// one scan of `/proc`.
pub fn find_all(roots: &[PathBuf]) -> Vec<Vec<u32>> {
    scan(&canonical(roots), &ancestors())
}

/// Processes (pids) whose current directory is one of `roots` or inside
/// it, this process's ancestors included (never this process): who still
/// uses a workspace, for gc, which never signals anyone. One list per root.
pub fn find_users(roots: &[PathBuf]) -> Vec<Vec<u32>> {
    scan(&canonical(roots), &HashSet::from([std::process::id()]))
}

/// Processes (pids, never this one) that can still write into one of
/// `roots` without a path: their current directory is inside (this
/// process's ancestors aside), or they hold a folder inside open (a base
/// for `openat`), or a file inside open for writing. One list per root,
/// from one scan of `/proc` (a process of another user's cannot be read,
/// and cannot reach a folder of the user's own `0700` workspace root).
pub fn holders(roots: &[PathBuf]) -> Vec<Vec<u32>> {
    let roots = canonical(roots);
    let mut out = vec![Vec::new(); roots.len()];
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    let me = std::process::id();
    let elders = ancestors();
    for entry in rd.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cwd = (!elders.contains(&pid)).then(|| cwd_of(pid)).flatten();
        let fds = open_inside(pid, &roots);
        for (i, root) in roots.iter().enumerate() {
            if cwd.as_ref().is_some_and(|c| c.starts_with(root)) || fds[i] {
                out[i].push(pid);
            }
        }
    }
    out
}

/// For each of `roots`: whether `pid` holds a folder at or below it open,
/// or a file below it open for writing.
fn open_inside(pid: u32, roots: &[PathBuf]) -> Vec<bool> {
    let mut out = vec![false; roots.len()];
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out;
    };
    for fd in rd.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let Some(i) = roots.iter().position(|r| target.starts_with(r)) else {
            continue;
        };
        if out[i] {
            continue;
        }
        // `flags:` in fdinfo, octal: O_WRONLY 1, O_RDWR 2, O_DIRECTORY 0200000.
        let flags = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        });
        let is_dir = std::fs::metadata(fd.path()).is_ok_and(|m| m.is_dir());
        // Unknown flags count as writable: never taken for "cannot write".
        out[i] = is_dir || flags.is_none_or(|f| f & 0o3 != 0);
    }
    out
}

/// The canonical form of each root. A root that is itself a symlink is
/// never followed: it maps to a path no process can be in (a relative one).
fn canonical(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .map(|r| {
            if r.symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return PathBuf::from("(a symlink is never followed)");
            }
            std::fs::canonicalize(r).unwrap_or_else(|_| r.clone())
        })
        .collect()
}

/// One pass over `/proc`: the processes inside each of `roots` (canonical),
/// but none of `spared`.
fn scan(roots: &[PathBuf], spared: &HashSet<u32>) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new(); roots.len()];
    if roots.is_empty() {
        return out;
    }
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
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
        let Some(cwd) = cwd_of(pid) else { continue };
        for (i, root) in roots.iter().enumerate() {
            if cwd.starts_with(root) {
                out[i].push(pid);
            }
        }
    }
    for pids in &mut out {
        pids.sort_unstable();
    }
    out
}

/// A process's current directory. A process that is gone, a zombie, or
/// whose cwd cannot be read (or was deleted) has none.
fn cwd_of(pid: u32) -> Option<PathBuf> {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    // A deleted folder reads as "<path> (deleted)": not a usable cwd any more.
    if cwd.as_os_str().as_bytes().ends_with(b" (deleted)") && !cwd.exists() {
        return None;
    }
    Some(cwd)
}

/// Whether `pid`'s current directory is `root` or below it.
fn cwd_inside(pid: u32, root: &Path) -> bool {
    cwd_of(pid).is_some_and(|cwd| cwd.starts_with(root))
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
    stat_field(pid, 1).and_then(|p| u32::try_from(p).ok())
}

/// Field `n` (0 = state, 1 = ppid, 4 = tty_nr) of `/proc/<pid>/stat` after
/// the command name.
fn stat_field(pid: u32, n: usize) -> Option<i64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields follow the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_whitespace().nth(n)?.parse().ok()
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
