//! Finding the processes inside a workspace through /proc (see
//! `quiesce`): the one rule for "a process is inside" (its cwd is the
//! workspace or below it; a deleted cwd is not; this process never is),
//! with or without this process's ancestors, and what holds a folder or a
//! file inside open.
//!
//! Owns: reading /proc (cwd, parent, stat fields, open files) and
//! describing a process.
//! Never: signals a process (`quiesce` does).

use super::*;

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
pub(super) fn open_inside(pid: u32, roots: &[PathBuf]) -> Vec<bool> {
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
pub(super) fn canonical(roots: &[PathBuf]) -> Vec<PathBuf> {
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
pub(super) fn scan(roots: &[PathBuf], spared: &HashSet<u32>) -> Vec<Vec<u32>> {
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
pub(super) fn cwd_of(pid: u32) -> Option<PathBuf> {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    // A deleted folder reads as "<path> (deleted)": not a usable cwd any more.
    if cwd.as_os_str().as_bytes().ends_with(b" (deleted)") && !cwd.exists() {
        return None;
    }
    Some(cwd)
}

/// Whether `pid`'s current directory is `root` or below it.
pub(super) fn cwd_inside(pid: u32, root: &Path) -> bool {
    cwd_of(pid).is_some_and(|cwd| cwd.starts_with(root))
}

/// This process and every ancestor up to init.
pub(super) fn ancestors() -> HashSet<u32> {
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

pub(super) fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 1).and_then(|p| u32::try_from(p).ok())
}

/// Field `n` (0 = state, 1 = ppid, 4 = tty_nr) of `/proc/<pid>/stat` after
/// the command name.
pub(super) fn stat_field(pid: u32, n: usize) -> Option<i64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields follow the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_whitespace().nth(n)?.parse().ok()
}
