//! The crash test of design §7: a proposal touching 3,000 paths
//! (modifications, additions, deletions, exec bits, symlinks, folders that
//! appear and disappear), `git delegate apply` killed at every fault point
//! and by a real SIGKILL after random delays. After each crash, `status
//! --check` reports the journal (exit 1) and changes nothing; the next
//! mutating command (`gc`, `renew` or `apply`) leaves the source exactly the
//! pre-apply tree or exactly the fully applied one, never a mix, the user's
//! index byte-identical; and a re-run of `apply` completes the job.
//!
//! Set `CRASH_SEED` to replay the random delays of a failed run, and
//! `CRASH_ON_DISK=1` to run on the disk instead of a tmpfs (slower: every
//! fsync is real).
use crate::common::files::read_bytes;
use crate::common::fixtures::id;
use crate::common::fixtures::problem;
use crate::common::fixtures::task_root;
use crate::common::mounts::Tmpfs;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::files::{tree, tree_differences, Tree};
use crate::common::fixtures::{index_bytes, prepare};
use crate::common::killed_at;
use crate::common::Env;
use serde_json::Value;

const DIRS: usize = 60;
const PER_DIR: usize = 50;

/// Which of the two trees `t` is, or a description of the mix.
fn classify(t: &Tree, pre: &Tree, full: &Tree) -> Result<&'static str, String> {
    if t == pre {
        return Ok("pre");
    }
    if t == full {
        return Ok("full");
    }
    let (p, f) = (tree_differences(t, pre), tree_differences(t, full));
    Err(format!(
        "a MIX: {} paths differ from the pre-apply tree (e.g. {:?}), {} from the applied one (e.g. {:?})",
        p.len(),
        &p[..p.len().min(5)],
        f.len(),
        &f[..f.len().min(5)]
    ))
}

fn build_repo(env: &Env, repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    env.git(repo, ["init", "-q", "-b", "main"]);
    for d in 0..DIRS {
        for f in 0..PER_DIR {
            let p = repo.join(format!("d{d:02}/f{f:02}.txt"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("dir {d} file {f}\nsecond line\n")).unwrap();
        }
    }
    env.git(repo, ["add", "-A"]);
    env.git(repo, ["commit", "-q", "-m", "3000 files"]);
}

/// The worker's changes: 1,500 modified (some made executable), 750
/// deleted (15 whole folders), 750 added (15 new folders, a few symlinks).
fn work(ws: &Path) {
    for d in 0..30 {
        for f in 0..PER_DIR {
            let p = ws.join(format!("d{d:02}/f{f:02}.txt"));
            std::fs::write(&p, format!("dir {d} file {f}\nchanged by the worker\n")).unwrap();
            if f < 2 {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
    }
    for d in 30..45 {
        std::fs::remove_dir_all(ws.join(format!("d{d:02}"))).unwrap();
    }
    for d in 0..15 {
        let dir = ws.join(format!("new{d:02}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..PER_DIR {
            if f < 2 {
                symlink(
                    format!("../../d00/f{f:02}.txt"),
                    dir.join(format!("l{f:02}")),
                )
                .unwrap();
            } else {
                std::fs::write(dir.join(format!("n{f:02}")), format!("new {d} {f}\n")).unwrap();
            }
        }
    }
}

fn journal_exists(repo: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(repo.join(".git/delegate/batches")) else {
        return false;
    };
    rd.flatten()
        .any(|b| b.path().join("writeback.journal").exists())
}

struct Rig {
    /// Dropped before `env` (fields drop in order).
    _mount: Option<Tmpfs>,
    env: Env,
    repo: PathBuf,
    pre: Tree,
    full: Tree,
    index: Vec<u8>,
    batch: String,
    /// The task's workspace.
    ws: PathBuf,
    /// How long one uninterrupted apply took (for the random delays).
    apply_time: Duration,
}

impl Rig {
    fn new() -> Rig {
        let env = Env::new();
        let fs = env.path().join("fs");
        let mount = if std::env::var_os("CRASH_ON_DISK").is_some() {
            std::fs::create_dir_all(&fs).unwrap();
            None
        } else {
            Tmpfs::try_new(&fs, "512m")
        };
        if mount.is_none() {
            eprintln!("note: cannot mount a tmpfs here; the crash test runs on the disk (slower)");
        }
        let repo = fs.join("big");
        build_repo(&env, &repo);
        std::fs::write(
            repo.join(".git/delegate.toml"),
            format!(
                "[workspace]\nroot = {:?}\n",
                fs.join("ws").to_str().unwrap()
            ),
        )
        .unwrap();
        let pre = tree(&repo);
        let mut rig = Rig {
            _mount: mount,
            env,
            repo,
            pre,
            full: Tree::new(),
            index: Vec::new(),
            batch: String::new(),
            ws: PathBuf::new(),
            apply_time: Duration::from_millis(500),
        };
        rig.new_batch();
        rig
    }

    /// A fresh batch with the worker's changes, on the pre-apply source.
    fn new_batch(&mut self) {
        let doc = self
            .env
            .delegate(&self.repo, ["prepare", "--json"])
            .expect(0)
            .json();
        self.batch = id(&doc);
        let ws = task_root(&doc, 0);
        work(&ws);
        self.ws = ws.clone();
        let mut full = tree(&ws);
        full.remove(&b".git"[..]);
        self.full = full;
        self.index = index_bytes(&self.repo);
    }

    /// Back to the committed pre-apply tree, with a new batch.
    fn reset(&mut self) {
        self.env.git(&self.repo, ["reset", "-q", "--hard", "HEAD"]);
        self.env.git(&self.repo, ["clean", "-q", "-f", "-d"]);
        assert_eq!(
            classify(&tree(&self.repo), &self.pre, &self.full),
            Ok("pre")
        );
        self.new_batch();
    }

    fn state(&self, when: &str) -> &'static str {
        let t = tree(&self.repo);
        match classify(&t, &self.pre, &self.full) {
            Ok(s) => s,
            Err(mix) => panic!("{when}: {mix}"),
        }
    }

    fn apply_cmd(&self) -> std::process::Command {
        let mut cmd = self.env.delegate_cmd(&self.repo);
        cmd.args(["apply", "--json"]);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// `apply` to the end: every task applied, the source the full result.
    fn complete(&mut self, when: &str) {
        let t0 = Instant::now();
        let doc = self
            .env
            .delegate(&self.repo, ["apply", "--json"])
            .expect(0)
            .json();
        let took = t0.elapsed();
        // No task left to process is fine: an interrupted clean-up had
        // recorded it applied already; this run finishes the clean-up.
        let tasks = doc["tasks"].as_array().unwrap();
        assert!(
            tasks.iter().all(|t| t["status"] == "applied"),
            "{when}: {doc:#}"
        );
        assert_eq!(doc["batch_open"], false, "{when}: {doc:#}");
        if !tasks.is_empty() {
            self.apply_time = took;
        }
        let batch_dir = self.repo.join(".git/delegate/batches").join(&self.batch);
        assert!(!batch_dir.exists(), "{when}: batch state left");
        assert!(!self.ws.exists(), "{when}: workspace left");
        assert_eq!(self.state(when), "full");
        assert_eq!(index_bytes(&self.repo), self.index, "{when}: index changed");
        assert!(!journal_exists(&self.repo));
    }

    /// After a crash: `status --check` reports (exit 1 with a journal) and
    /// changes nothing; then `recover` (a mutating command) recovers.
    fn after_crash(&mut self, when: &str, recover: &str) -> &'static str {
        let before = tree(&self.repo);
        let journal = journal_exists(&self.repo);
        let run = self
            .env
            .delegate(&self.repo, ["status", "--check", "--json"]);
        if journal {
            assert_eq!(
                run.code, 1,
                "{when}: status --check with a journal\n{}",
                run.stderr
            );
            let doc = run.json();
            assert!(problem(&doc, "journal").is_some(), "{when}: {doc:#}");
        }
        assert!(
            tree(&self.repo) == before,
            "{when}: status changed the tree"
        );
        assert_eq!(
            journal_exists(&self.repo),
            journal,
            "{when}: status touched the journal"
        );

        if recover == "gc" {
            let run = self.env.delegate(&self.repo, ["gc", "--json"]);
            assert_eq!(run.code, 0, "{when}: gc\n{}", run.stderr);
            self.check_report(when, &run.json(), journal);
        }
        match recover {
            "renew" => {
                let run = self.env.delegate(&self.repo, ["renew", "--json"]);
                assert_eq!(run.code, 0, "{when}: renew\n{}", run.stderr);
                self.check_report(when, &run.json(), journal);
            }
            "apply" => {
                let doc = self
                    .env
                    .delegate(&self.repo, ["apply", "--json"])
                    .expect(0)
                    .json();
                self.check_report(when, &doc, journal);
            }
            _ => {}
        }
        assert!(
            !journal_exists(&self.repo),
            "{when}: journal left after {recover}"
        );
        assert_eq!(index_bytes(&self.repo), self.index, "{when}: index changed");
        self.state(&format!("{when}, after {recover}"))
    }

    /// After a real SIGKILL of `apply` (anywhere): a batch that still lists
    /// the task open has its whole workspace; the next command recovers;
    /// the tree is pre or full; a re-run of apply completes the job (when
    /// the tree is full, or `finish` asks for it). Returns the state.
    fn killed(&mut self, when: &str, recover: &str, finish: bool) -> &'static str {
        let batch_toml = self
            .repo
            .join(".git/delegate/batches")
            .join(&self.batch)
            .join("batch.toml");
        let listed_open =
            std::fs::read_to_string(&batch_toml).is_ok_and(|t| t.contains("state = \"open\""));
        if listed_open && self.ws.join(".git").exists() {
            let mut w = tree(&self.ws);
            w.remove(&b".git"[..]);
            if let Err(mix) = classify(&w, &Tree::new(), &self.full) {
                panic!(
                    "{when}: the killed apply left the workspace half-removed while batch.toml \
                     still lists the task open, so a re-run would apply the missing files as \
                     deletions (apply must record the task's state before removing its \
                     workspace): workspace vs proposal: {mix}"
                );
            }
        }
        // The apply may have finished (batch gone) before the kill.
        let batch_open = batch_toml.exists();
        let state = if batch_open {
            self.after_crash(when, recover)
        } else {
            self.state(when)
        };
        eprintln!("{when}: {state}");
        if !batch_toml.exists() {
            assert_eq!(state, "full", "{when}: batch gone but tree not applied");
            self.reset();
        } else if state == "full" || finish {
            // A re-run of apply completes the job (after a "pre" crash the
            // next round's apply is that re-run).
            self.complete(&format!("{when}, re-run"));
            self.reset();
        }
        state
    }

    /// The recovering command says which state it left (design §4): rolled
    /// back to the pre-apply tree, or the full result completed.
    fn check_report(&self, when: &str, doc: &Value, journal: bool) {
        if !journal {
            return;
        }
        let named = |key: &str| {
            doc[key]
                .as_array()
                .is_some_and(|ids| ids.iter().any(|b| b == self.batch.as_str()))
        };
        if self.state(when) == "pre" {
            assert!(named("recovered_writebacks"), "{when}: {doc:#}");
        } else {
            // Completed by recovery, or rolled back and then applied again.
            assert!(
                named("completed_writebacks") || named("recovered_writebacks"),
                "{when}: {doc:#}"
            );
        }
    }
}

#[test]
fn apply_killed_anywhere_leaves_the_pre_apply_or_the_applied_tree() {
    let started = Instant::now();
    let mut rig = Rig::new();
    let paths = 30 * PER_DIR + 15 * PER_DIR + 15 * PER_DIR;
    assert_eq!(paths, 3000);
    // 1,500 modifications x 2 renames + 750 deletions + 750 additions.
    let renames = 30 * PER_DIR * 2 + 15 * PER_DIR + 15 * PER_DIR;

    // Deterministic points: (fault, the command that recovers).
    let points = [
        ("after-journal".to_string(), "gc"),
        ("after-temp-files".to_string(), "renew"),
        ("after-rename:1".to_string(), "gc"),
        ("after-rename:2".to_string(), "renew"),
        (format!("after-rename:{}", renames / 2), "renew"),
        (format!("after-rename:{}", renames - 1), "gc"),
        (format!("after-rename:{renames}"), "apply"),
        ("after-commit".to_string(), "renew"),
        ("before-journal-remove".to_string(), "apply"),
    ];
    for (fault, recover) in &points {
        killed_at(rig.apply_cmd(), fault);
        assert!(
            journal_exists(&rig.repo),
            "{fault}: no journal after the crash"
        );
        let state = rig.after_crash(fault, recover);
        // Past the commit the result stands (rolled forward); an apply
        // that recovers also finishes the job.
        let committed = fault == "after-commit" || fault == "before-journal-remove";
        let expected = if committed || *recover == "apply" {
            "full"
        } else {
            "pre"
        };
        assert_eq!(state, expected, "{fault} recovered by {recover}");
        if *recover == "apply" {
            // That apply completed the job.
            rig.reset();
        } else if state == "full" {
            rig.complete(&format!("re-run after {fault}"));
            rig.reset();
        }
    }

    // A crash during recovery is recovered by the next run.
    killed_at(rig.apply_cmd(), &format!("after-rename:{}", renames / 3));
    for k in [1, 500, 1700] {
        killed_at(
            rig.env.delegate_cmd(&rig.repo).args(["renew", "--json"]),
            &format!("recover-abort:{k}"),
        );
        assert!(journal_exists(&rig.repo));
    }
    assert_eq!(rig.after_crash("crashes during recovery", "renew"), "pre");
    rig.complete("re-run after crashes during recovery");
    rig.reset();

    // Killed the moment apply starts removing the workspace (its write-back
    // done): a re-run must still complete the job, never lose files.
    let entries = |ws: &Path| std::fs::read_dir(ws).map(|r| r.count()).unwrap_or(0);
    let whole = entries(&rig.ws);
    let mut child = rig.apply_cmd().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if entries(&rig.ws) < whole || child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "apply never removed its workspace"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let when = format!("killed while apply removes the workspace ({status:?})");
    assert_eq!(rig.killed(&when, "renew", true), "full");

    // Real SIGKILLs after random delays spanning a whole apply.
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("CRASH_SEED={seed}");
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen = BTreeMap::<&str, usize>::new();
    for round in 0..8 {
        let span = (rig.apply_time.as_millis() as u64 * 6 / 5).max(300);
        let delay = Duration::from_millis(5 + next() % span);
        let mut child = rig.apply_cmd().spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        let when = format!(
            "round {round}: SIGKILL after {delay:?} ({status:?}, journal left: {})",
            journal_exists(&rig.repo)
        );
        let recover = ["renew", "gc", "renew", "apply"][round % 4];
        let state = rig.killed(&when, recover, round == 7);
        *seen.entry(state).or_default() += 1;
    }
    eprintln!("random kills: {seen:?}; whole test {:?}", started.elapsed());
    wait_for_deleters(rig.repo.parent().unwrap());
}

/// Applied workspaces are deleted by a background `purge-trash` process:
/// wait for every one working below `under` before the test ends.
fn wait_for_deleters(under: &Path) {
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            args.contains(&&b"purge-trash"[..])
                && args
                    .iter()
                    .any(|a| Path::new(std::ffi::OsStr::from_bytes(a)).starts_with(under))
        })
    };
    let start = Instant::now();
    while running() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// After a crash: apply killed mid write-back, the user
/// edits a path it had already written. `apply --dry-run` changes nothing
/// (it only reports the interrupted write-back); the next mutating command
/// restores every other path, leaves the user's edit, keeps the original it
/// replaced and the journal, and reports `rollback_failed` naming the path;
/// once the user has put the original back, it finishes and a re-run of
/// apply completes the job.
#[test]
fn a_path_edited_after_a_crash_is_never_rolled_back_over() {
    let (env, repo) = Env::with_repo("r");
    for i in 1..=4 {
        std::fs::write(repo.join(format!("f{i}.txt")), format!("original {i}\n")).unwrap();
    }
    std::fs::write(repo.join("gone.txt"), "deleted by the task\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    for i in 1..=4 {
        std::fs::write(ws.join(format!("f{i}.txt")), format!("task {i}\n")).unwrap();
    }
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("added.txt"), "added by the task\n").unwrap();
    let pre = tree(&repo);
    let index = index_bytes(&repo);

    // Renames in path order: added.txt (1), f1 aside (2), f1 in place (3), ...
    killed_at(
        env.delegate_cmd(&repo).args(["apply", "--json"]),
        "after-rename:5",
    );
    assert_eq!(read_bytes(&repo.join("f1.txt")), b"task 1\n");
    assert_eq!(read_bytes(&repo.join("f2.txt")), b"task 2\n");
    // The user saves over f1.txt (the same length: only the bytes tell).
    std::fs::write(repo.join("f1.txt"), b"USER 1\n").unwrap();

    // A dry run changes nothing and says why it cannot preview.
    let before = tree(&repo);
    let run = env.delegate(&repo, ["apply", "--dry-run", "--json"]);
    assert_eq!(tree(&repo), before, "apply --dry-run changed the tree");
    assert!(journal_exists(&repo), "apply --dry-run removed the journal");
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::writeback_pending",
        "{doc:#}"
    );
    assert!(doc["recovered_writebacks"].is_null(), "{doc:#}");
    env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_eq!(tree(&repo), before);

    // The next mutating command: every other path back, the edit left.
    let run = env.delegate(&repo, ["gc", "--json"]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::rollback_failed", "{doc:#}");
    let paths = doc["error"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{doc:#}");
    assert_eq!(paths[0]["path"], "f1.txt", "{doc:#}");
    let kept = PathBuf::from(paths[0]["kept"].as_str().unwrap());
    assert_eq!(read_bytes(&kept), b"original 1\n");
    assert_eq!(read_bytes(&repo.join("f1.txt")), b"USER 1\n");
    let mut expect = pre.clone();
    expect.get_mut(&b"f1.txt"[..]).unwrap().1 = b"USER 1\n".to_vec();
    let mut now = tree(&repo);
    let kept_rel = kept
        .strip_prefix(&repo)
        .unwrap()
        .as_os_str()
        .as_bytes()
        .to_vec();
    assert!(now.remove(&kept_rel).is_some());
    assert_eq!(now, expect, "every other path is back as before the apply");
    assert!(journal_exists(&repo));
    assert_eq!(index_bytes(&repo), index);
    // `apply` says the same and changes nothing either.
    let before = tree(&repo);
    let run = env.delegate(&repo, ["apply", "--json"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(run.json()["error"]["code"], "delegate::rollback_failed");
    assert_eq!(tree(&repo), before);

    // The user takes the original back; the next apply finishes the
    // rollback and then applies the task whole.
    std::fs::rename(&kept, repo.join("f1.txt")).unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert!(
        doc["recovered_writebacks"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{doc:#}"
    );
    assert!(!journal_exists(&repo));
    for i in 1..=4 {
        assert_eq!(
            read_bytes(&repo.join(format!("f{i}.txt"))),
            format!("task {i}\n").as_bytes()
        );
    }
    assert!(!repo.join("gone.txt").exists());
    assert_eq!(read_bytes(&repo.join("added.txt")), b"added by the task\n");
    assert_eq!(index_bytes(&repo), index);
}
