//! Follow-through after a killed `apply --verify` (its verification
//! workspaces go with whatever ends the batch, and gc reclaims or reports
//! those it finds), a `run` whose batch another command applied or dropped,
//! and a failed worker's task, which a plain apply leaves open (design
//! §3.10, §3.13, §3.18 "Follow-through").
use crate::common::files::read;
use crate::common::fixtures::id;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::assert_has;
use crate::common::fixtures::roots;
use crate::common::procs::alive;
use crate::common::{printed_command, Env};

/// Wait for an event (`check`); the deadline only stops a test that would
/// otherwise hang.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill_group(pgid: u32) {
    if let Some(p) = rustix::process::Pid::from_raw(pgid as i32) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

/// An `apply --verify CMD` killed with SIGKILL while CMD runs: CMD (in
/// its own process group, started by apply) goes on running in its
/// verification workspace until `release` is called or this is dropped.
struct KilledVerify {
    env: Env,
    repo: PathBuf,
    batch: String,
    roots: Vec<PathBuf>,
    /// The process group of CMD (its `sh -c`).
    cmd_pgid: u32,
    go: PathBuf,
}

impl KilledVerify {
    fn new(ttl_args: &[&str]) -> KilledVerify {
        let (env, repo) = Env::with_repo("r");
        let mut args = vec!["prepare", "--json", "-n", "2"];
        args.extend_from_slice(ttl_args);
        let doc = env.delegate(&repo, args).expect(0).json();
        let batch = id(&doc);
        let roots: Vec<PathBuf> = roots(&doc);
        std::fs::write(roots[0].join("t1.txt"), "one\n").unwrap();
        std::fs::write(roots[1].join("t2.txt"), "two\n").unwrap();
        let started = env.path().join("started");
        let go = env.path().join("go");
        // CMD says it runs (its pid, the group's), then waits to be let go.
        let cmd = format!(
            "echo $$ > {s}.tmp && mv {s}.tmp {s}; i=0; while [ ! -e {g} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; exit 0",
            s = started.display(),
            g = go.display()
        );
        let mut child: Child = env
            .delegate_cmd(&repo)
            .args(["apply", "--json", "--verify", &cmd])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        wait_for("the verification command starts", || started.exists());
        let cmd_pgid: u32 = std::fs::read_to_string(&started)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // kill -9 apply's process group: apply alone (CMD has its own group).
        kill_group(child.id());
        child.wait().unwrap();
        assert!(alive(cmd_pgid), "CMD ended with apply");
        KilledVerify {
            env,
            repo,
            batch,
            roots,
            cmd_pgid,
            go,
        }
    }

    /// Let CMD end, and wait until it has.
    fn release(&self) {
        std::fs::write(&self.go, "").unwrap();
        wait_for("CMD ends", || !alive(self.cmd_pgid));
    }

    /// The verification workspace CMD runs in (one run of CMD: `.verify-1`).
    fn run_workspace(&self) -> String {
        let runs: Vec<String> = self
            .verification_worktrees()
            .into_iter()
            .filter(|p| !p.ends_with(".verify-template"))
            .collect();
        assert_eq!(runs.len(), 1, "the killed apply left {runs:?}");
        runs[0].clone()
    }

    /// The verification workspaces registered now (and on btrfs, design
    /// §3.17, the template they are snapshots of).
    fn verification_worktrees(&self) -> Vec<String> {
        let list = self
            .env
            .git(&self.repo, ["worktree", "list", "--porcelain"]);
        list.lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .filter(|p| p.contains(".verify-"))
            .map(str::to_string)
            .collect()
    }

    /// Every worktree of the batch (tasks and verification) registered now.
    fn batch_worktrees(&self) -> Vec<String> {
        let base = self.roots[0]
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let list = self
            .env
            .git(&self.repo, ["worktree", "list", "--porcelain"]);
        list.lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .filter(|p| p.starts_with(&base))
            .map(str::to_string)
            .collect()
    }

    /// Everything left under the workspace root.
    fn left_under_root(&self) -> Vec<PathBuf> {
        walk(&self.env.workspace_root())
    }
}

/// Every path below `dir` (entries of the first 50 folders).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                out.push(e.path());
                if e.file_type().is_ok_and(|t| t.is_dir()) && out.len() < 50 {
                    todo.push(e.path());
                }
            }
        }
    }
    out
}

impl Drop for KilledVerify {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.go, "");
        kill_group(self.cmd_pgid);
    }
}

#[test]
fn a_killed_verify_is_removed_by_the_plain_apply_that_ends_the_batch_and_gc_finds_nothing() {
    let k = KilledVerify::new(&[]);
    k.run_workspace();
    let run = k.env.delegate(&k.repo, ["apply"]).expect(0);
    assert_has(&run.stdout, "is done and removed");
    assert_eq!(read(&k.repo.join("t1.txt")), "one\n");
    assert_eq!(read(&k.repo.join("t2.txt")), "two\n");
    // The verification that apply orphaned is stopped with its workspace.
    wait_for("the orphaned CMD is stopped", || !alive(k.cmd_pgid));
    assert_eq!(k.batch_worktrees(), Vec::<String>::new());
    let gc = k.env.delegate(&k.repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["skipped"], serde_json::json!([]), "{gc:#}");
    assert_eq!(k.batch_worktrees(), Vec::<String>::new());
    assert_eq!(k.left_under_root(), Vec::<PathBuf>::new());
    let refs = k.env.private_refs(&k.repo);
    assert!(refs.is_empty(), "{refs:?}");
}

#[test]
fn a_killed_verify_is_removed_by_drop() {
    let k = KilledVerify::new(&[]);
    k.run_workspace();
    k.env
        .delegate(&k.repo, ["drop", &k.batch, "--force"])
        .expect(0);
    wait_for("the orphaned CMD is stopped", || !alive(k.cmd_pgid));
    assert_eq!(k.batch_worktrees(), Vec::<String>::new());
    let gc = k.env.delegate(&k.repo, ["gc"]).expect(0);
    assert_has(&gc.stdout, "Nothing to reclaim");
    assert_eq!(k.left_under_root(), Vec::<PathBuf>::new());
}

#[test]
fn gc_reports_a_verification_workspace_in_use_then_reclaims_it() {
    let k = KilledVerify::new(&[]);
    let wt = k.run_workspace();
    // CMD still runs inside it: gc never signals, it says so (exit 1).
    let gc = k.env.delegate(&k.repo, ["gc", "--json"]).expect(1).json();
    let skipped = gc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{gc:#}");
    assert_eq!(skipped[0]["batch"], k.batch.as_str());
    let message = skipped[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&wt) && message.contains(&k.cmd_pgid.to_string()),
        "{message}"
    );
    assert!(Path::new(&wt).exists());
    k.release();
    // Nothing runs there any more: the leftover of the killed apply goes,
    // while the batch stays open with its task workspaces.
    let gc = k.env.delegate(&k.repo, ["gc", "--json"]).expect(0).json();
    // (On btrfs the template went with the first gc: nothing ran in it.)
    assert!(gc["workspaces_removed"].as_u64().unwrap() >= 1, "{gc:#}");
    assert_eq!(k.verification_worktrees(), Vec::<String>::new());
    assert!(!Path::new(&wt).exists());
    assert!(k.roots.iter().all(|r| r.exists()));
    let refs = k.env.private_refs(&k.repo);
    assert!(refs.iter().all(|r| !r.contains("/verify/")), "{refs:?}");
    // And the batch still applies.
    k.env.delegate(&k.repo, ["apply"]).expect(0);
    assert_eq!(k.batch_worktrees(), Vec::<String>::new());
}

#[test]
fn gc_reclaims_the_verification_workspace_of_a_batch_that_is_gone() {
    let k = KilledVerify::new(&[]);
    let wt = k.run_workspace();
    k.release();
    // The batch's record went some other way (as an older git-delegate's
    // drop or apply left it): only the verification workspace says whose it is.
    let common = PathBuf::from(k.env.git(&k.repo, ["rev-parse", "--git-common-dir"]).trim());
    let common = if common.is_absolute() {
        common
    } else {
        k.repo.join(common)
    };
    std::fs::remove_dir_all(common.join("delegate/batches").join(&k.batch)).unwrap();
    let gc = k.env.delegate(&k.repo, ["gc", "--json"]).expect(0).json();
    assert!(gc["workspaces_removed"].as_u64().unwrap() >= 1, "{gc:#}");
    assert_eq!(k.verification_worktrees(), Vec::<String>::new());
    assert!(!Path::new(&wt).exists());
    let refs = k.env.private_refs(&k.repo);
    assert!(refs.iter().all(|r| !r.contains("/verify/")), "{refs:?}");
}

/// `run -n N` whose worker 1 runs COMMAND (as `sh -c`) on its own batch
/// from the user's working tree; the other workers exit 3. Unconfined
/// (`--no-sandbox`): a contained worker cannot write the batch's state
/// (design §3.22).
fn run_taking_its_batch(env: &Env, repo: &Path, verb: &str, n: usize) -> (i32, Value, String) {
    let script = format!(
        r#"if [ "$GIT_DELEGATE_TASK" = 1 ]; then echo one > one.txt; git -C "$GIT_DELEGATE_SOURCE" delegate {verb} "$GIT_DELEGATE_BATCH" || exit 7; else exit 3; fi"#
    );
    let out = env
        .delegate_cmd(repo)
        .env("PATH", env.path_with_delegate())
        .args([
            "run",
            "-n",
            &n.to_string(),
            "--json",
            "--jobs",
            "1",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not one document ({e}): {stdout}\nstderr:\n{stderr}"));
    (code, doc, stderr)
}

#[test]
fn run_whose_batch_a_worker_applied_says_so_with_the_workers_and_exits_1() {
    let (env, repo) = Env::with_repo("r");
    let (code, doc, stderr) = run_taking_its_batch(&env, &repo, "apply", 1);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    assert!(!stderr.contains("unknown_batch"), "{stderr}");
    assert_eq!(doc["ended_elsewhere"], true, "{doc:#}");
    assert!(doc["ended_by_apply"].is_string(), "{doc:#}");
    assert_eq!(doc["apply"], Value::Null);
    assert_eq!(doc["workers"][0]["exit"], 0, "{doc:#}");
    assert_has(&stderr, "another command applied it");
    assert!(stderr.contains("task 1"), "the workers' lines: {stderr}");
    assert_eq!(read(&repo.join("one.txt")), "one\n");
}

#[test]
fn run_whose_batch_a_worker_dropped_says_so_with_the_workers_and_exits_1() {
    let (env, repo) = Env::with_repo("r");
    let (code, doc, stderr) = run_taking_its_batch(&env, &repo, "drop --force", 2);
    assert_eq!(code, 1, "{doc:#}\n{stderr}");
    assert!(!stderr.contains("unknown_batch"), "{stderr}");
    assert_eq!(doc["ended_elsewhere"], true, "{doc:#}");
    assert_eq!(doc["ended_by_apply"], Value::Null, "{doc:#}");
    assert_eq!(doc["workers"][0]["exit"], 0, "{doc:#}");
    // Worker 2 (`--jobs 1`) comes after the batch ended: never started,
    // and its workspace is not made again.
    assert_eq!(doc["workers"][1]["exit"], Value::Null, "{doc:#}");
    let log = read(Path::new(doc["workers"][1]["log"].as_str().unwrap()));
    assert_has(&log, "ended before this worker started");
    let batch = doc["batch"].as_str().unwrap();
    let left: Vec<PathBuf> = walk(&env.workspace_root())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&batch[..8]))
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new());
    assert_has(&stderr, "another command applied or dropped it");
    // Human text: the workers' lines with their statuses.
    let out = env
        .delegate_cmd(&repo)
        .env("PATH", env.path_with_delegate())
        .args([
            "run", "-n", "2", "--jobs", "1", "--no-sandbox", "--", "sh", "-c",
            r#"if [ "$GIT_DELEGATE_TASK" = 1 ]; then git -C "$GIT_DELEGATE_SOURCE" delegate drop "$GIT_DELEGATE_BATCH" --force || exit 7; else exit 3; fi"#,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_has(&stdout, "another command applied or dropped it");
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("task "))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].contains("exit 0") && lines[1].contains("not started"),
        "{stdout}"
    );
    assert!(!repo.join("one.txt").exists());
}

#[test]
fn run_applies_what_another_command_left_open_and_lists_the_rest_as_recorded() {
    let (env, repo) = Env::with_repo("r");
    // Worker 1 lands its own task, worker 2 (after it) just works.
    let script = r#"echo "w $GIT_DELEGATE_TASK" > "out-$GIT_DELEGATE_TASK.txt"; if [ "$GIT_DELEGATE_TASK" = 1 ]; then git -C "$GIT_DELEGATE_SOURCE" delegate apply "$GIT_DELEGATE_BATCH" --only 1 || exit 7; fi"#;
    let out = env
        .delegate_cmd(&repo)
        .env("PATH", env.path_with_delegate())
        .args([
            "run",
            "-n",
            "2",
            "--jobs",
            "1",
            "--json",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    let run = crate::common::Run::from(out).expect(0);
    let doc = run.json();
    assert_eq!(doc["ended_elsewhere"], false, "{doc:#}");
    let tasks = doc["apply"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{doc:#}");
    assert_eq!(tasks[0]["status"], "applied", "{doc:#}");
    assert_eq!(tasks[1]["status"], "applied", "{doc:#}");
    assert_eq!(read(&repo.join("out-1.txt")), "w 1\n");
    assert_eq!(read(&repo.join("out-2.txt")), "w 2\n");
}

#[test]
fn a_failed_workers_task_stays_out_of_a_plain_apply_until_named() {
    let (env, repo) = Env::with_repo("r");
    let script = r#"echo "work of $GIT_DELEGATE_TASK" > "out-$GIT_DELEGATE_TASK.txt"; [ "$GIT_DELEGATE_TASK" != 2 ] || exit 1"#;
    let doc = env
        .delegate(
            &repo,
            ["run", "-n", "2", "--json", "--", "sh", "-c", script],
        )
        .expect(1)
        .json();
    assert_eq!(doc["workers"][1]["exit"], 1, "{doc:#}");
    assert!(repo.join("out-1.txt").exists());
    // Nothing fixed: a plain apply leaves it open (exit 1).
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    let t2 = apply["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "2")
        .unwrap_or_else(|| panic!("{apply:#}"));
    assert_eq!(t2["status"], "worker_failed", "{apply:#}");
    assert_eq!(t2["reason"], "worker_failed", "{apply:#}");
    assert!(t2["workspace"].is_string(), "{apply:#}");
    assert_eq!(apply["batch_open"], true);
    assert!(!repo.join("out-2.txt").exists());
    let run = env.delegate(&repo, ["apply"]).expect(1);
    assert!(!repo.join("out-2.txt").exists());
    assert_has(&run.stdout, "worker_failed");
    // The hint, followed literally, lands it.
    let short = &apply["batch"].as_str().unwrap()[..8];
    let hint = printed_command(&run.stdout, &format!("git delegate apply {short} --only"));
    assert_eq!(
        hint,
        format!("git delegate apply {short} --only 2"),
        "{}",
        run.stdout
    );
    let landed = env.sh(&repo, &hint).expect(0);
    assert_has(&landed.stdout, "is done and removed");
    assert_eq!(read(&repo.join("out-2.txt")), "work of 2\n");
}
