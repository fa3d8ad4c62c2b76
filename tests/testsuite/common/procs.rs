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

/// The uid (and gid) of the unprivileged user `nobody`.
pub const NOBODY: u32 = 65534;

/// Whether the tests run as root (`id -u`).
pub fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Give everything below `dir` to `nobody` (`chown -R`; root only).
pub fn give_to_nobody(dir: &std::path::Path) {
    let chown = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(dir)
        .status()
        .unwrap();
    assert!(chown.success(), "chown -R {}", dir.display());
}

/// `cmd` run as the unprivileged user `nobody` through `setpriv` (same
/// program, arguments, environment and folder; the tests must run as root).
///
/// The built `git-delegate` lies below the checkout's `target/`, which
/// `nobody` may not be able to enter (a clone in a `mktemp -d` folder, or
/// under `/root`, is `0700`): `setpriv` still starts it (it execs with the
/// capabilities it is about to drop), but every program it starts in turn
/// from its own path, such as the trash's background deleter, fails with
/// EACCES. So the command runs a copy of the binary in `bin_dir` (made
/// `0755`; a hard link where it can be, else a copy), which `nobody` must
/// be able to reach; PATH's entry for the built binary's folder is swapped
/// for it too. Link it after any `chown -R` of a folder above: a hard link
/// shares the binary's owner.
pub fn as_nobody(cmd: &std::process::Command, bin_dir: &std::path::Path) -> std::process::Command {
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_git-delegate"));
    let mut program = std::path::PathBuf::from(cmd.get_program());
    if program == built {
        program = reachable_binary(bin_dir);
    }
    let mut out = std::process::Command::new("setpriv");
    out.arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .args(["--clear-groups", "--"])
        .arg(program)
        .args(cmd.get_args())
        .env_clear();
    for (k, v) in cmd.get_envs() {
        let Some(v) = v else { continue };
        if k == "PATH" {
            let dirs = std::env::split_paths(v).map(|d| {
                if Some(d.as_path()) == built.parent() {
                    bin_dir.to_path_buf()
                } else {
                    d
                }
            });
            out.env(k, std::env::join_paths(dirs.collect::<Vec<_>>()).unwrap());
        } else {
            out.env(k, v);
        }
    }
    if let Some(d) = cmd.get_current_dir() {
        out.current_dir(d);
    }
    out
}

/// The built `git-delegate` in `bin_dir` (made `0755`): a hard link where
/// it can be, else a copy made by `cp`. See [`as_nobody`].
pub fn reachable_binary(bin_dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_git-delegate"));
    let copy = bin_dir.join("git-delegate");
    if copy.symlink_metadata().is_err() {
        std::fs::create_dir_all(bin_dir).unwrap();
        std::fs::set_permissions(bin_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        if std::fs::hard_link(built, &copy).is_err() {
            // Copied by `cp`, never by this process: a file this process
            // held open for writing would be inherited by the children
            // other tests fork meanwhile, and exec'ing the copy while one
            // of them still holds it fails with ETXTBSY ("Text file busy").
            let tmp = bin_dir.join("git-delegate.tmp");
            let cp = std::process::Command::new("cp")
                .arg(built)
                .arg(&tmp)
                .status()
                .unwrap();
            assert!(cp.success(), "cp {} {}", built.display(), tmp.display());
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&tmp, &copy).unwrap();
        }
    }
    copy
}
