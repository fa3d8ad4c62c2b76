//! Moving refs between repositories over a git remote (design §3.14): the
//! `git` command line (`git push`, plain or with a lease on each ref it
//! changes, `git fetch`, `git ls-remote`, `git clone`,
//! and the `git checkout` that fills a partial clone from its remote), run
//! with the user's own configuration and credentials, never prompting
//! (`GIT_TERMINAL_PROMPT=0`), without the repository-locating variables
//! (`GIT_DIR`, `GIT_WORK_TREE`, ...) other than `GIT_DIR` where it is set
//! here on purpose; a failure becomes a `delegate::remote_failed` diagnostic
//! naming the remote and the failing command with git's own words.
//!
//! This is the one place the product runs `git`: gix cannot push, and a
//! partial clone fetches the objects it lacks only through git. Everything
//! else is done in-process with gix.
//! Owns: building and running those commands, and their error
//! (`TransportError`: the command as typed, the remote, git's own words).
//! Never: decides which refs move (that is `ops::remote_workers`), or runs anything but
//! the commands above; words a help line or decides an error code
//! (`ops::explain` does).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// A git command that could not be run, or failed. `command` is as the user
/// would type it. The message is the `Display`; the code
/// (`delegate::remote_failed`) and help: `ops::explain`.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// git could not be started (not installed, not on PATH).
    #[error("cannot run `{command}` for the remote {remote}: {source}")]
    Spawn {
        command: String,
        remote: String,
        #[source]
        source: std::io::Error,
    },
    /// git ran and failed: `said` is its stderr without hints, on one line
    /// (or its exit status).
    #[error("`{command}` failed for the remote {remote}: {said}")]
    Failed {
        command: String,
        remote: String,
        said: String,
    },
}

type Result<T, E = TransportError> = std::result::Result<T, E>;

/// A git command run against `git_dir` (or, `None`, outside any repository).
fn command(git_dir: Option<&Path>, args: &[&OsStr]) -> Command {
    let mut cmd = Command::new("git");
    // The process took them out already (`repo::isolate_environment`);
    // removed again so no caller can leak one in.
    for k in crate::sys::process::LOCATING {
        cmd.env_remove(k);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0").stdin(Stdio::null());
    crate::sys::process::without_hooks(&mut cmd);
    if let Some(dir) = git_dir {
        cmd.env("GIT_DIR", dir);
    }
    cmd.args(args);
    cmd
}

/// The command as the user would type it (for messages).
fn shown(args: &[&OsStr]) -> String {
    let mut s = String::from("git");
    for a in args {
        s.push(' ');
        s.push_str(&crate::sys::paths::shell_quote(&a.to_string_lossy()));
    }
    s
}

/// Run git; its stdout on success, else a diagnostic naming `remote` and the command.
fn run(
    git_dir: Option<&Path>,
    cwd: Option<&Path>,
    remote: &str,
    args: &[&OsStr],
) -> Result<Vec<u8>> {
    let mut cmd = command(git_dir, args);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let out = cmd.output().map_err(|source| TransportError::Spawn {
        command: shown(args),
        remote: remote.to_string(),
        source,
    })?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    let said = if said.is_empty() {
        format!("exit status {}", out.status.code().unwrap_or(-1))
    } else {
        said.join("; ")
    };
    Err(TransportError::Failed {
        command: shown(args),
        remote: remote.to_string(),
        said,
    })
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// `git push --quiet --no-verify REMOTE SPEC...` from the repository at
/// `git_dir`: [`push_leased`] with no lease, not atomic.
pub fn push(git_dir: &Path, remote: &str, specs: &[String]) -> Result<()> {
    push_leased(git_dir, remote, &[], specs, false)
}

/// `git push --quiet --no-verify [--atomic] --force-with-lease=REF:EXPECTED...
/// REMOTE SPEC...` from the repository at `git_dir` (design §3.14 "Remote
/// refs"): each leased ref changes only while the remote holds the object
/// id the caller expects there (checked by git against what the remote
/// advertises, and by the remote against the old value git sends). With
/// `atomic`, the remote takes every spec or none. A ref git refuses makes
/// it fail like any push; the caller asks the remote what is there now.
pub fn push_leased(
    git_dir: &Path,
    remote: &str,
    leases: &[(String, String)],
    specs: &[String],
    atomic: bool,
) -> Result<()> {
    let leases: Vec<String> = leases
        .iter()
        .map(|(name, expected)| format!("--force-with-lease={name}:{expected}"))
        .collect();
    let mut args: Vec<&OsStr> = vec![os("push"), os("--quiet"), os("--no-verify")];
    if atomic {
        args.push(os("--atomic"));
    }
    args.extend(leases.iter().map(|l| os(l)));
    // `--`: a remote that starts with `-` is never read as an option.
    args.push(os("--"));
    args.push(os(remote));
    args.extend(specs.iter().map(|s| os(s)));
    run(Some(git_dir), None, remote, &args).map(|_| ())
}

/// `git fetch --no-tags --no-recurse-submodules REMOTE SPEC...` into the repository at `git_dir`.
pub fn fetch(git_dir: &Path, remote: &str, specs: &[String]) -> Result<()> {
    if specs.is_empty() {
        return Ok(());
    }
    let mut args: Vec<&OsStr> = vec![
        os("fetch"),
        os("--quiet"),
        os("--no-tags"),
        os("--no-write-fetch-head"),
        // A proposal's gitlinks are bytes from another machine: git never
        // fetches the submodules they name (design §3.18, limits).
        os("--no-recurse-submodules"),
        os("--"),
        os(remote),
    ];
    args.extend(specs.iter().map(|s| os(s)));
    run(Some(git_dir), None, remote, &args).map(|_| ())
}

/// `git ls-remote REMOTE PATTERN`: (ref, object id) of each matching ref.
pub fn ls_remote(
    git_dir: Option<&Path>,
    remote: &str,
    pattern: &str,
) -> Result<Vec<(String, String)>> {
    let args: Vec<&OsStr> = vec![os("ls-remote"), os("--"), os(remote), os(pattern)];
    let out = run(git_dir, None, remote, &args)?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let (id, name) = l.split_once('\t')?;
            Some((name.to_string(), id.to_string()))
        })
        .collect())
}

/// `git clone --no-checkout [--filter=blob:none] URL DIR`, run in `cwd`.
pub fn clone(cwd: &Path, url: &str, dir: &Path, partial: bool) -> Result<()> {
    let mut args: Vec<&OsStr> = vec![os("clone"), os("--quiet"), os("--no-checkout")];
    if partial {
        args.push(os("--filter=blob:none"));
    }
    args.push(os("--"));
    args.push(os(url));
    args.push(dir.as_os_str());
    run(None, Some(cwd), url, &args).map(|_| ())
}

/// `git checkout --quiet --detach COMMIT` in the working tree `root` (a
/// partial clone fetches the blobs it needs from `remote` meanwhile).
pub fn checkout_detached(root: &Path, remote: &str, commit: &str) -> Result<()> {
    let args: Vec<&OsStr> = vec![os("checkout"), os("--quiet"), os("--detach"), os(commit)];
    run(None, Some(root), remote, &args).map(|_| ())
}
