//! Shared test harness: hermetic git environments, fixture repositories
//! built with the real git CLI, and running the real `git-delegate` binary.
//! Below it: `fixtures` (prepared batches, documents, git and state
//! folders, waits), `files` (trees, reading, text made to order), `procs`
//! (programs and processes), `remote` (two machines and a remote) and `mounts` (the test filesystems: reflink,
//! btrfs, small, few inodes).
#![allow(dead_code)]

pub mod files;
pub mod fixtures;
pub mod mounts;
pub mod procs;
pub mod remote;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temp folder with a hermetic HOME, XDG_DATA_HOME and git config.
pub struct Env {
    pub tmp: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::Builder::new()
            .prefix("gd-test-")
            .tempdir()
            .expect("tempdir");
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::write(tmp.path().join("gitconfig"), "").unwrap();
        Env { tmp }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    pub fn data_home(&self) -> PathBuf {
        self.path().join("home/.local/share")
    }

    /// The default workspace root in this env.
    pub fn workspace_root(&self) -> PathBuf {
        self.data_home().join("git-delegate/worktrees")
    }

    fn apply_env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.data_home())
            .env("GIT_CONFIG_GLOBAL", self.path().join("gitconfig"))
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("LANG", "C")
            .env("NO_COLOR", "1");
    }

    /// `program` in `dir` with this environment's variables only.
    pub fn command(&self, program: impl AsRef<OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        self.apply_env(&mut cmd);
        cmd.current_dir(dir);
        cmd
    }

    /// A `git` command in `dir`.
    pub fn git_cmd(&self, dir: &Path) -> Command {
        self.command("git", dir)
    }

    /// Run git, assert success, return stdout.
    pub fn git<I, S>(&self, dir: &Path, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let out = self.git_cmd(dir).args(&args).output().expect("run git");
        assert!(
            out.status.success(),
            "git {:?} failed in {}:\n{}",
            args,
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A `git-delegate` command in `dir`.
    pub fn delegate_cmd(&self, dir: &Path) -> Command {
        self.command(env!("CARGO_BIN_EXE_git-delegate"), dir)
    }

    /// Run git-delegate with `args` in `dir`.
    pub fn delegate<I, S>(&self, dir: &Path, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self
            .delegate_cmd(dir)
            .args(args)
            .output()
            .expect("run git-delegate");
        Run::from(out)
    }

    /// PATH with the built `git-delegate` first, so `git delegate ...` runs it.
    pub fn path_with_delegate(&self) -> std::ffi::OsString {
        path_with_delegate()
    }

    /// Run `command` exactly as printed: `sh -c COMMAND` in `dir`, with this
    /// env and the binary on PATH (design §3.16 "Hints").
    pub fn sh(&self, dir: &Path, command: &str) -> Run {
        let mut cmd = Command::new("sh");
        self.apply_env(&mut cmd);
        cmd.env("PATH", self.path_with_delegate())
            .current_dir(dir)
            .arg("-c")
            .arg(command);
        Run::from(cmd.output().expect("run sh -c"))
    }

    /// A new repository with one commit (`README` with "hello\n").
    pub fn repo(&self, name: &str) -> PathBuf {
        self.repo_at(&self.path().join(name), &[("README", "hello\n")])
    }

    /// A new repository at `dir` (made, with its parents) with one commit
    /// ("init") of `files`: (name, text).
    pub fn repo_at(&self, dir: &Path, files: &[(&str, &str)]) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        self.git(dir, ["init", "-q", "-b", "main"]);
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        self.git(dir, ["add", "."]);
        self.git(dir, ["commit", "-q", "-m", "init"]);
        dir.to_path_buf()
    }

    /// A new `Env` with one repository `name` in it ([`Env::repo`]).
    pub fn with_repo(name: &str) -> (Env, PathBuf) {
        let env = Env::new();
        let repo = env.repo(name);
        (env, repo)
    }

    /// A new repository without commits.
    pub fn empty_repo(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, ["init", "-q", "-b", "main"]);
        dir
    }

    /// Refs under refs/pi-delegate, but the undo entries' (design §3.11:
    /// an apply's entry outlives its batch; `undo_refs` lists those).
    pub fn private_refs(&self, repo: &Path) -> Vec<String> {
        self.git(
            repo,
            ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
        )
        .lines()
        .filter(|r| !r.starts_with("refs/pi-delegate/undo/"))
        .map(str::to_string)
        .collect()
    }

    /// Refs of undo entries (`refs/pi-delegate/undo/<apply-id>/...`).
    pub fn undo_refs(&self, repo: &Path) -> Vec<String> {
        self.git(
            repo,
            [
                "for-each-ref",
                "--format=%(refname)",
                "refs/pi-delegate/undo/",
            ],
        )
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// The tree `git add -A` would write, computed on a copy of the index.
    pub fn oracle_tree(&self, repo: &Path) -> String {
        let git_dir = PathBuf::from(self.git(repo, ["rev-parse", "--absolute-git-dir"]).trim());
        let idx = self
            .path()
            .join(format!("oracle-index-{}", std::process::id()));
        let src = git_dir.join("index");
        if src.exists() {
            std::fs::copy(&src, &idx).unwrap();
        } else {
            let _ = std::fs::remove_file(&idx);
        }
        let run = |args: &[&str]| {
            let out = succeed(self.git_cmd(repo).env("GIT_INDEX_FILE", &idx).args(args));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        run(&["add", "-A"]);
        let tree = run(&["write-tree"]);
        let _ = std::fs::remove_file(&idx);
        tree
    }
}

/// PATH with the built `git-delegate` first, so `git delegate ...` (and a
/// hook calling `git-delegate`) runs it.
pub fn path_with_delegate() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_git-delegate"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// A command run as the user of an [`Env`] outside it (a shell, a
/// completion engine): its HOME and git config, the rest of this
/// process's environment kept.
pub trait AsEnvUser {
    /// Set HOME, `GIT_CONFIG_GLOBAL` and `GIT_CONFIG_NOSYSTEM` to `env`'s.
    fn env_user(&mut self, env: &Env) -> &mut Self;
}

impl AsEnvUser for Command {
    fn env_user(&mut self, env: &Env) -> &mut Self {
        self.env("HOME", env.home())
            .env("GIT_CONFIG_GLOBAL", env.path().join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
    }
}

/// Run `cmd`, assert that it succeeded (showing its stderr), return its output.
#[track_caller]
pub fn succeed(cmd: impl std::borrow::BorrowMut<Command>) -> Output {
    succeed_as(cmd, "")
}

/// [`succeed`], the failure message starting with `what` (the command as
/// the test names it).
#[track_caller]
pub fn succeed_as(mut cmd: impl std::borrow::BorrowMut<Command>, what: &str) -> Output {
    let out = cmd.borrow_mut().output().unwrap();
    assert_succeeded(&out, what);
    out
}

/// Run `cmd` with `input` on its stdin (stdout and stderr captured), assert
/// that it succeeded (`what` and its stderr shown if not), return its output.
#[track_caller]
pub fn succeed_with_input(
    mut cmd: impl std::borrow::BorrowMut<Command>,
    input: &[u8],
    what: &str,
) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .borrow_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_succeeded(&out, what);
    out
}

#[track_caller]
fn assert_succeeded(out: &Output, what: &str) {
    let sep = if what.is_empty() { "" } else { ": " };
    assert!(
        out.status.success(),
        "{what}{sep}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run `cmd` (a `git-delegate` command) with the test-only fault point
/// `fault` set (`GIT_DELEGATE_FAULT`, src/writeback/mod.rs) and return its
/// output: `fail-rename:N` makes that rename fail, every other point kills
/// the process there (SIGKILL, as `kill -9`).
pub fn with_fault(mut cmd: impl std::borrow::BorrowMut<Command>, fault: &str) -> Output {
    cmd.borrow_mut()
        .env("GIT_DELEGATE_FAULT", fault)
        .output()
        .expect("run git-delegate")
}

/// [`with_fault`] at a point that kills: assert that the process died of
/// SIGKILL (showing its status and output if not), return its output.
#[track_caller]
pub fn killed_at(cmd: impl std::borrow::BorrowMut<Command>, fault: &str) -> Output {
    use std::os::unix::process::ExitStatusExt;
    let out = with_fault(cmd, fault);
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{fault}: not killed (status {:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Assert that `text` holds `part`, showing `text` when it does not.
#[track_caller]
pub fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "{text}");
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Assert the exit code, showing the output on failure.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}, got {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Parse stdout as exactly one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// The command a hint in `text` prints that starts with `start` (such as
/// `git delegate renew`), exactly as printed: between backticks when it is
/// quoted so, else up to the end of its line or two spaces (where a remark
/// follows). Panics, showing `text`, when there is none.
pub fn printed_command(text: &str, start: &str) -> String {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` hint in:\n{text}"));
    let rest = &text[at..];
    let end = if at > 0 && text.as_bytes()[at - 1] == b'`' {
        rest.find('`')
            .unwrap_or_else(|| panic!("unterminated `{start}` hint in:\n{text}"))
    } else {
        [rest.find('\n'), rest.find("  ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(rest.len())
    };
    let cmd = &rest[..end];
    // A hint is a command to run, never a form to fill in.
    for placeholder in ["TASK", "BATCH", "PID", "REF", "ID", "PATH", "DIR"] {
        assert!(
            // (`_` joins a word: `GIT_COMMON_DIR` names no placeholder.)
            !cmd.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == placeholder),
            "placeholder {placeholder} in the hint `{cmd}`:\n{text}"
        );
    }
    cmd.to_string()
}
