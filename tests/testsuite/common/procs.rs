//! Processes and the machine: whether a program is there (`have`, git's
//! bash completion), whether a process is alive or on a terminal, and a
//! child's output collected as it comes.
#![allow(dead_code)]

use std::path::PathBuf;

/// Where `git` is on this process's PATH (`command -v git`), for a PATH
/// of the test's own that holds it.
pub fn git_path() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Is `program` on PATH (`command -v`)?
pub fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// git's bash completion script on this machine, if any.
pub fn git_completion_script() -> Option<PathBuf> {
    let mut candidates = vec![
        PathBuf::from("/usr/share/bash-completion/completions/git"),
        PathBuf::from("/usr/local/share/bash-completion/completions/git"),
        PathBuf::from("/etc/bash_completion.d/git"),
        PathBuf::from("/usr/share/git-core/contrib/completion/git-completion.bash"),
        PathBuf::from("/usr/share/git/completion/git-completion.bash"),
    ];
    if let Ok(out) = std::process::Command::new("git")
        .arg("--exec-path")
        .output()
    {
        let exec = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        for up in exec.ancestors().skip(1).take(3) {
            candidates.push(up.join("share/git-core/contrib/completion/git-completion.bash"));
            candidates.push(up.join("share/bash-completion/completions/git"));
        }
    }
    candidates
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("__git_complete_command")))
}

/// Every process id in /proc now.
pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect()
}

/// The fields of a `/proc/PID/stat` line after the command name (which
/// may hold spaces and parentheses): state, ppid, pgrp, ...
pub fn stat_fields(stat: &str) -> Vec<&str> {
    stat.rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// A process that exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !stat_fields(&s)
            .first()
            .is_some_and(|state| state.starts_with('Z')),
        Err(_) => false,
    }
}

/// The controlling terminal of a process (`tty_nr` of /proc/PID/stat).
pub fn tty_nr(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(4)?.parse().ok()
}

/// What a child's output stream carries, collected by a thread as it comes
/// (for a terminal driven by typing and waiting for what it shows).
pub fn read_in_background(
    mut from: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    std::thread::JoinHandle<()>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    (seen, reader)
}

/// Runs the shell command `line` in `dir` on a pseudo-terminal (`script`),
/// with the environment `env` gives the binary and stdin from /dev/null: its
/// output (what the terminal showed). `None`, said on stderr, where this
/// machine has no `script`.
pub fn in_a_terminal(
    env: &super::Env,
    dir: &std::path::Path,
    line: &str,
) -> Option<std::process::Output> {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("no `script`: no pseudo-terminal to test with");
        return None;
    }
    let base = env.delegate_cmd(dir);
    let mut cmd = std::process::Command::new("script");
    cmd.env_clear().current_dir(dir);
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    Some(
        cmd.args(["-qec", line, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap(),
    )
}
