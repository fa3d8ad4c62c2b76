//! Containing the workers `run` and `exec` start (design §3.22): which
//! folders a task's worker may write, the environment that makes its git
//! work there (its own object folder, with the repository's objects as an
//! alternate; its own `TMPDIR`), and the decision, made once per command
//! before anything is made, whether workers are contained at all
//! (`run.sandbox`, `--no-sandbox`; `run.network`, `--no-network`).
//!
//! Owns: the writable set (the task's workspace, held by the handle its
//! identity check opened; its registration `<common-dir>/worktrees/<id>`,
//! reached without following a symlink, which holds the private object
//! folder; a private `TMPDIR`; `run.writable`; `/dev/null`, the terminal
//! devices and `/dev/shm`), the worker's `sandbox` summary, the
//! `delegate::sandbox_unavailable` refusal, and removing the private
//! `TMPDIR` when the worker is done ([`Contained`] does, when dropped).
//! Never: spawns or waits for the worker (its caller does); writes
//! anything but the private folders it makes; lets a worker start
//! unconfined under `run.sandbox = "on"`.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::{Config, Sandbox};
use crate::error::{Code, Error, Result};
use crate::record::batch::Batch;
use crate::sys::sandbox::{self, Support};

/// What the caller asked for: the config, with the command line's
/// `--no-sandbox` and `--no-network` over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub sandbox: Sandbox,
    /// New TCP connections and listening sockets allowed.
    pub network: bool,
}

impl Options {
    pub fn new(cfg: &Config, no_sandbox: bool, no_network: bool) -> Options {
        Options {
            sandbox: if no_sandbox {
                Sandbox::Off
            } else {
                cfg.sandbox
            },
            network: cfg.network && !no_network,
        }
    }
}

/// What a worker got (run's JSON `sandbox`: `kind`, `abi`, `network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Its writes were contained by Landlock.
    pub landlock: bool,
    /// The Landlock ABI that contained it (None: not contained).
    pub abi: Option<u8>,
    /// It could open TCP connections and listen.
    pub network: bool,
}

impl Summary {
    /// A worker started without containment.
    pub const NONE: Summary = Summary {
        landlock: false,
        abi: None,
        network: true,
    };
}

/// Whether and how a command's workers are contained, decided before
/// anything is made.
#[derive(Debug, Clone)]
pub struct Decision {
    opts: Options,
    support: Support,
    /// Said once on stderr: containment is weaker than asked for (no
    /// Landlock under `"auto"`, or a kernel without network rules).
    pub note: Option<String>,
}

/// Decide (design §3.22): `"on"` without Landlock, or `--no-network`
/// under `"on"` on a kernel without network rules (ABI < 4), is
/// `delegate::sandbox_unavailable` (exit 3); under `"auto"` either is one
/// note and the worker goes on as well as the kernel allows.
pub fn decide(opts: Options) -> Result<Decision> {
    let support = sandbox::support();
    let mut note = None;
    match (opts.sandbox, support) {
        (Sandbox::Off, _) => {}
        (Sandbox::On, Support::Absent) => {
            return Err(Error::state(
                Code::SandboxUnavailable,
                "run.sandbox is \"on\" but this kernel has no Landlock (Linux 5.13 or later, with landlock in its `lsm=` list), so no worker can be contained; nothing was made",
                "run on a kernel with Landlock, or start the workers unconfined: `--no-sandbox` for one command, or `run.sandbox = \"auto\"` in .git/delegate.toml",
            ));
        }
        (Sandbox::Auto, Support::Absent) => {
            note = Some(
                "git-delegate: this kernel has no Landlock: workers run unconfined (they can write wherever you can)".to_string(),
            );
        }
        _ => {}
    }
    if !opts.network {
        match support {
            Support::Landlock(abi) if abi >= sandbox::NETWORK_ABI => {}
            _ if opts.sandbox == Sandbox::On => {
                return Err(Error::state(
                    Code::SandboxUnavailable,
                    format!(
                        "--no-network (or run.network = false) needs Landlock ABI {} or later (Linux 6.7), and this kernel has {}; nothing was made",
                        sandbox::NETWORK_ABI,
                        abi_words(support)
                    ),
                    "run on a newer kernel, or allow the network: leave out --no-network (or set run.network = true)",
                ));
            }
            _ => {
                let line = format!(
                    "git-delegate: --no-network needs Landlock ABI {} or later and this kernel has {}: workers can still use the network",
                    sandbox::NETWORK_ABI,
                    abi_words(support)
                );
                note = Some(match note {
                    Some(n) => format!("{n}\n{line}"),
                    None => line,
                });
            }
        }
    }
    Ok(Decision {
        opts,
        support,
        note,
    })
}

fn abi_words(support: Support) -> String {
    match support {
        Support::Landlock(abi) => format!("ABI {abi}"),
        Support::Absent => "no Landlock".into(),
    }
}

impl Decision {
    /// Are writes contained?
    pub fn files(&self) -> bool {
        self.opts.sandbox != Sandbox::Off && self.support.abi().is_some()
    }

    /// What a worker started under this decision gets.
    pub fn summary(&self) -> Summary {
        let network = self.opts.network
            || self
                .support
                .abi()
                .is_none_or(|abi| abi < sandbox::NETWORK_ABI);
        Summary {
            landlock: self.files(),
            abi: self.support.abi().filter(|_| self.files()),
            network,
        }
    }
}

/// A worker's containment, set on its command: removes the worker's
/// private `TMPDIR` when dropped (after the worker ended).
#[derive(Debug)]
pub struct Contained {
    pub summary: Summary,
    tmp: Option<PathBuf>,
    /// Its own object folder (a linked worktree's, contained).
    objects: Option<PathBuf>,
}

impl Contained {
    /// The worker ended: take the objects its git made into `repo`'s
    /// store, so that git run by the user in its workspace (whose HEAD
    /// and index may name them) sees them too. Best effort: whatever
    /// reads the workspace later takes them in again.
    pub fn settle(&self, repo: &gix::Repository) {
        if let Some(dir) = &self.objects {
            let _ = crate::git::private_objects::take_in(repo, dir);
        }
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            // remove_dir_all never follows a symlink the worker left.
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}

/// The system files and folders every contained worker may write: the
/// null device, its terminal (so an interactive agent works under
/// `exec`), and POSIX shared memory.
const DEVICES: [&str; 5] = ["/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm"];

/// Contain `cmd`, the worker of task `idx` of `b` (its program, cwd and
/// environment set by `setup::worker_command`), as `decision` says. The
/// error says why it cannot start (its workspace is not the folder prepare
/// made, its registration is gone): such a worker never starts unconfined.
pub fn contain(
    decision: &Decision,
    common_dir: &Path,
    cfg: &Config,
    b: &Batch,
    idx: usize,
    cmd: &mut Command,
) -> std::result::Result<Contained, String> {
    let mut plan = sandbox::Plan {
        files: decision.files(),
        writable: Vec::new(),
        no_network: !decision.opts.network,
    };
    let mut contained = Contained {
        summary: decision.summary(),
        tmp: None,
        objects: None,
    };
    if plan.files {
        let task = &b.tasks[idx];
        plan.writable.extend(task_folders(common_dir, task, cmd)?);
        contained.objects = crate::workspace::Kind::of_task(task).private_objects(common_dir, task);
        let tmp = private_tmp(b.short(), &task.name)?;
        if let Some(fd) = sandbox::Plan::open(&tmp) {
            plan.writable.push((tmp.clone(), fd));
        }
        cmd.env("TMPDIR", &tmp);
        contained.tmp = Some(tmp);
        for dir in cfg.writable.iter().map(PathBuf::as_path) {
            // A folder that is not there is left out: it cannot be made.
            if let Some(fd) = sandbox::Plan::open(dir) {
                plan.writable.push((dir.to_path_buf(), fd));
            }
        }
        for dev in DEVICES.iter().map(Path::new) {
            if let Some(fd) = sandbox::Plan::open(dev) {
                plan.writable.push((dev.to_path_buf(), fd));
            }
        }
    }
    let prepared = sandbox::prepare(&plan, decision.support)
        .map_err(|e| format!("cannot make its Landlock ruleset: {e}"))?;
    prepared.install(cmd);
    Ok(contained)
}

/// The task's own folders: its workspace (the folder its identity check
/// proved, by handle) and, for a linked worktree, its registration with
/// the private object folder in it, which `cmd`'s git is pointed at.
fn task_folders(
    common_dir: &Path,
    task: &crate::record::batch::Task,
    cmd: &mut Command,
) -> std::result::Result<Vec<(PathBuf, OwnedFd)>, String> {
    let ws = crate::workspace::held(common_dir, task).ok_or_else(|| {
        format!(
            "its workspace {} is not the folder prepare made (missing, moved or replaced), so it cannot be contained",
            task.root.display()
        )
    })?;
    let mut folders = vec![(task.root.clone(), ws)];
    // A scratch copy holds its own repository: nothing beside it.
    let kind = crate::workspace::Kind::of_task(task);
    if let Some(beside) = kind.writable_beside(common_dir, task)? {
        // git follows the store's own `info/alternates` from there.
        cmd.env("GIT_OBJECT_DIRECTORY", &beside.objects).env(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            common_dir.join("objects"),
        );
        folders.push(beside.registration);
    }
    Ok(folders)
}

/// A new private temporary folder (`0700`) in the system's, for one worker.
fn private_tmp(batch: &str, task: &str) -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..8 {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let dir = base.join(format!("git-delegate-{batch}-{task}-{}", &tag[..8]));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(format!(
                    "cannot make its private temporary folder in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot make its private temporary folder in {}: {}",
        base.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}
