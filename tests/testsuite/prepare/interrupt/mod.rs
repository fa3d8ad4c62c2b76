//! Killed and interrupted prepares (design §3.15 "Killed commands"). A source of a few thousand files, with uncommitted
//! changes and ignored folders carried into the workspaces; `prepare -n 3`
//! is paused at a named point (`GIT_DELEGATE_TEST_PAUSE`, test-only) and
//! then signalled there:
//! - Ctrl-C (SIGINT to the whole process group, once or twice, directly or
//!   through `git delegate` so git and git-delegate both get it), SIGTERM:
//!   everything the prepare made is gone again (refs, registrations,
//!   folders, state) and the source is byte-identical;
//! - SIGKILL at every point: `apply` refuses the batch (exit 3,
//!   `delegate::incomplete_batch`) and changes nothing, `status --check`
//!   reports it (exit 1), and `gc` (without rescuing anything) or `drop`
//!   (with or without `--force`) removes it whole.
//!
//! Here: the fixture, the paused `Prepare` and what is left to check; the
//! tests are in `signals` (Ctrl-C, SIGTERM, SIGHUP: undone), `killed`
//! (SIGKILL: refused, reported, removed whole), `alongside` (an interrupted
//! batch beside corrupt, ordinary and outer batches) and `hidden` (state
//! folders left by killed commands).
use crate::common::files::read_bytes;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::files::{tree, Tree};
use crate::common::fixtures::{field_strs, prepare};
use crate::common::Env;

mod alongside;
mod hidden;
mod killed;
mod signals;

const ID: &str = "0badc0de-0000-4000-8000-000000000001";
const SHORT: &str = "0badc0de";

/// The user's files and index, to compare before and after.
fn snapshot(repo: &Path) -> (Tree, Vec<u8>) {
    (tree(repo), read_bytes(&repo.join(".git/index")))
}

/// 2,000 tracked files in 40 folders, a handful of uncommitted changes,
/// and two ignored folders (`build/`, `cache/`) that `.worktreeinclude` carries.
fn fixture(env: &Env) -> PathBuf {
    let repo = env.repo("src");
    for d in 0..40 {
        let dir = repo.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            std::fs::write(
                dir.join(format!("f{f:02}.txt")),
                format!("folder {d} file {f}\n").repeat(8),
            )
            .unwrap();
        }
    }
    std::fs::write(repo.join(".gitignore"), "build/\ncache/\n").unwrap();
    std::fs::write(repo.join(".worktreeinclude"), "build/\ncache/\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    for i in 0..10 {
        std::fs::write(
            repo.join(format!("d00/f{i:02}.txt")),
            format!("edited {i}\n"),
        )
        .unwrap();
    }
    for i in 0..5 {
        std::fs::remove_file(repo.join(format!("d01/f{i:02}.txt"))).unwrap();
        std::fs::write(repo.join(format!("new{i}.txt")), "untracked\n").unwrap();
    }
    for dir in ["build", "cache"] {
        std::fs::create_dir_all(repo.join(dir)).unwrap();
        for i in 0..200 {
            std::fs::write(repo.join(format!("{dir}/o{i}.bin")), format!("{dir} {i}\n")).unwrap();
        }
    }
    repo
}

/// A prepare running in its own process group, paused at named points.
struct Prepare {
    child: Child,
    pgid: rustix::process::Pid,
    paused: PathBuf,
}

impl Prepare {
    fn start(env: &Env, repo: &Path, points: &str, via_git: bool) -> Prepare {
        let paused = env
            .path()
            .join(format!("paused-{}", points.replace(',', "-")));
        let _ = std::fs::remove_file(&paused);
        let mut cmd = if via_git {
            let bin = Path::new(env!("CARGO_BIN_EXE_git-delegate"))
                .parent()
                .unwrap();
            let mut path = std::ffi::OsString::from(bin);
            path.push(":");
            path.push(std::env::var_os("PATH").unwrap_or_default());
            let mut cmd = env.git_cmd(repo);
            cmd.env("PATH", path).arg("delegate");
            cmd
        } else {
            env.delegate_cmd(repo)
        };
        cmd.args(["prepare", "-n", "3", "--label", "work"])
            .env("GIT_DELEGATE_TEST_PAUSE", points)
            .env("GIT_DELEGATE_TEST_PAUSED", &paused)
            .env("GIT_DELEGATE_TEST_BATCH_ID", ID)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let child = cmd.spawn().expect("start prepare");
        let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        Prepare {
            child,
            pgid,
            paused,
        }
    }

    /// Wait until the prepare reports that it waits at `point`.
    fn wait_for(&mut self, point: &str) {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let text = std::fs::read_to_string(&self.paused).unwrap_or_default();
            if text.lines().any(|l| l == point) {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                let out = std::mem::replace(
                    &mut self.child,
                    std::process::Command::new("true").spawn().unwrap(),
                )
                .wait_with_output()
                .unwrap();
                panic!(
                    "prepare ended ({status}) before reaching {point}; reached {text:?}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(Instant::now() < deadline, "prepare never reached {point}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn signal(&self, sig: rustix::process::Signal) {
        rustix::process::kill_process_group(self.pgid, sig).expect("signal the prepare");
    }

    /// Wait for the prepare (and every process of its group) to end.
    fn finish(self) -> (std::process::ExitStatus, String) {
        let out = self.child.wait_with_output().unwrap();
        let deadline = Instant::now() + Duration::from_secs(180);
        while rustix::process::test_kill_process_group(self.pgid).is_ok() {
            assert!(
                Instant::now() < deadline,
                "the prepare's processes never ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn common_dir(repo: &Path) -> PathBuf {
    repo.join(".git")
}

/// Nothing of the batch is left: no ref, no state, no registration, no folder.
fn assert_nothing_left(env: &Env, repo: &Path, context: &str) {
    assert_eq!(
        env.private_refs(repo),
        Vec::<String>::new(),
        "{context}: refs left"
    );
    let state = common_dir(repo).join("delegate/batches").join(ID);
    assert!(
        !state.exists(),
        "{context}: state folder {} left",
        state.display()
    );
    let regs: Vec<_> = std::fs::read_dir(common_dir(repo).join("worktrees"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(regs.is_empty(), "{context}: registrations left: {regs:?}");
    let root = env.workspace_root();
    if let Ok(rd) = std::fs::read_dir(&root) {
        for repo_dir in rd.flatten() {
            let short = repo_dir.path().join(SHORT);
            assert!(
                !short.exists(),
                "{context}: workspace folders left in {}",
                short.display()
            );
        }
    }
    let list = env.git(repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.lines().filter(|l| l.starts_with("worktree ")).count(),
        1,
        "{context}: worktrees left:\n{list}"
    );
}
