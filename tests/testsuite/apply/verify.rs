//! `git delegate apply --verify CMD` (design §3.10) end to end: real
//! repositories, a real shell script as CMD, real processes.
use crate::common::files::read;
use crate::common::fixtures::id;
use crate::common::fixtures::strs;
use crate::common::fixtures::task_root;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::fixtures::{commit_files, prepare, roots, task};
use crate::common::Env;
use serde_json::Value;

/// A repository, a 5-task batch, and a check script outside the repository.
struct Fixture {
    env: Env,
    repo: PathBuf,
    roots: Vec<PathBuf>,
    /// One line per run of the script: `tasks=[...] git_dir=... top=... pwd=...`.
    runs: PathBuf,
    script: PathBuf,
}

/// The check: fails when `a.txt` and `c.txt` are both present (an
/// interaction), or when any `t*.txt` holds `BAD`.
const CHECK: &str = r#"#!/bin/sh
top=$(git rev-parse --show-toplevel 2>/dev/null)
echo "tasks=[$GIT_DELEGATE_TASKS] verify=$GIT_DELEGATE_VERIFY git_dir=${GIT_DIR-unset} top=$top pwd=$(pwd)" >> "@RUNS@"
cd "$top" || exit 9
echo "checking $GIT_DELEGATE_TASKS"
if [ -e a.txt ] && [ -e c.txt ]; then echo "a.txt and c.txt clash"; exit 3; fi
if cat t*.txt 2>/dev/null | grep -q BAD; then echo "found BAD"; exit 4; fi
exit 0
"#;

impl Fixture {
    fn new(tasks: usize) -> Fixture {
        let (env, repo) = Env::with_repo("r");
        commit_files(&env, &repo, &[("sub/keep", "k\n")], "sub");
        let runs = env.path().join("runs.txt");
        let script = env.path().join("check.sh");
        std::fs::write(
            &script,
            CHECK.replace("@RUNS@", &runs.display().to_string()),
        )
        .unwrap();
        let doc = prepare(&env, &repo, &["-n", &tasks.to_string()]);
        let roots = roots(&doc);
        Fixture {
            env,
            repo,
            roots,
            runs,
            script,
        }
    }

    fn cmd(&self) -> String {
        format!("sh {}", self.script.display())
    }

    /// Task `i` (1-based) writes `t<i>.txt` with `content`.
    fn work(&self, i: usize, content: &str) {
        std::fs::write(self.roots[i - 1].join(format!("t{i}.txt")), content).unwrap();
    }

    /// `status --json`, which must succeed.
    fn status(&self) -> Value {
        self.env
            .delegate(&self.repo, ["status", "--json"])
            .expect(0)
            .json()
    }

    fn apply(&self, args: &[&str], code: i32) -> Value {
        let cmd = self.cmd();
        let mut all = vec!["apply", "--json", "--verify", &cmd];
        all.extend_from_slice(args);
        self.env.delegate(&self.repo, all).expect(code).json()
    }

    fn run_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.runs)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// `apply --json --verify CMD` in `repo`, started and left running: CMD
/// touches the returned `started` (this waits for it) and then waits for
/// `go` to exist (at most 2 minutes), exiting 0. The child and `go`.
fn apply_verifying(
    env: &Env,
    repo: &Path,
    out: fn() -> std::process::Stdio,
) -> (std::process::Child, PathBuf) {
    let started = env.path().join("started");
    let go = env.path().join("go");
    let cmd = format!(
        "touch {s}; i=0; while [ ! -e {g} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; exit 0",
        s = started.display(),
        g = go.display()
    );
    let child = env
        .delegate_cmd(repo)
        .args(["apply", "--json", "--verify", &cmd])
        .stdout(out())
        .stderr(out())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(Instant::now() < deadline, "CMD never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, go)
}

fn status<'a>(doc: &'a Value, name: &str) -> &'a str {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no task {name} in {doc:#}"))["status"]
        .as_str()
        .unwrap()
}

/// `2 + m·(⌈log2 n⌉ + 1)`.
fn bound(n: usize, m: usize) -> usize {
    let log = if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    };
    2 + m * (log + 1)
}

/// Nothing of the verification is left: no verify refs, no verification
/// workspace folders, no registrations.
fn assert_no_verification_left(f: &Fixture) {
    let refs = f.env.private_refs(&f.repo);
    assert!(
        refs.iter().all(|r| !r.contains("/verify/")),
        "verify refs left: {refs:?}"
    );
    let batch_dir = f.roots[0].parent().unwrap();
    if let Ok(rd) = std::fs::read_dir(batch_dir) {
        for e in rd.flatten() {
            assert!(
                !e.file_name().to_string_lossy().starts_with(".verify-"),
                "verification workspace left: {}",
                e.path().display()
            );
        }
    }
    let wt = f.env.git(&f.repo, ["worktree", "list"]);
    assert!(!wt.contains(".verify-"), "{wt}");
}

fn outcome_of(f: &Fixture, culprits: &[usize], jobs: &str) -> (Value, Vec<String>) {
    for i in 1..=5 {
        f.work(
            i,
            if culprits.contains(&i) {
                "BAD\n"
            } else {
                "ok\n"
            },
        );
    }
    let code = if culprits.is_empty() { 0 } else { 1 };
    let doc = f.apply(&["--verify-jobs", jobs], code);
    let lines = f.run_lines();
    (doc, lines)
}

fn check_culprits(culprits: &[usize]) {
    let f = Fixture::new(5);
    let (doc, lines) = outcome_of(&f, culprits, "1");
    for i in 1..=5 {
        let name = i.to_string();
        let file = f.repo.join(format!("t{i}.txt"));
        if culprits.contains(&i) {
            assert_eq!(status(&doc, &name), "rejected", "{doc:#}");
            let t = task(&doc, &name);
            assert_eq!(t["reason"], "verify_failed");
            let log = PathBuf::from(t["verify_log"].as_str().unwrap());
            let text = read(&log);
            assert_has(&text, "found BAD");
            assert!(!file.exists(), "a rejected task's file was written");
            // Its work is kept: proposal ref, patch, workspace.
            assert!(f.roots[i - 1].join(format!("t{i}.txt")).exists());
            let pref = t["proposal_ref"].as_str().unwrap();
            f.env.git(&f.repo, ["rev-parse", "--verify", pref]);
            assert!(Path::new(t["patch"].as_str().unwrap()).exists());
        } else {
            assert_eq!(status(&doc, &name), "applied", "{doc:#}");
            assert_eq!(read(&file), "ok\n");
        }
    }
    let runs = doc["verify"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), lines.len(), "JSON runs vs script runs");
    assert!(
        runs.len() <= bound(5, culprits.len()),
        "{} runs for {} culprits",
        runs.len(),
        culprits.len()
    );
    let outcome = if culprits.is_empty() {
        "passed"
    } else {
        "passed_after_rejections"
    };
    assert_eq!(doc["verify"]["outcome"], outcome);
    assert_eq!(doc["verify"]["command"], f.cmd());
    // Every run says what it tested, and the script saw the same.
    for (run, line) in runs.iter().zip(&lines) {
        let names: Vec<&str> = strs(&run["tasks"]);
        assert!(
            line.starts_with(&format!("tasks=[{}] verify=1", names.join(" "))),
            "{line} vs {names:?}"
        );
        let log = Path::new(run["log"].as_str().unwrap());
        // Passing logs are removed, failing ones kept.
        assert_eq!(log.exists(), run["exit"] != 0, "{run}");
    }
    // The logs on disk are exactly the failing runs' (passing ones removed).
    let failing = runs.iter().filter(|r| r["exit"] != 0).count();
    let logs_dir = f
        .repo
        .join(".git/delegate/logs")
        .join(doc["batch"].as_str().unwrap());
    let on_disk = std::fs::read_dir(&logs_dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("verify-"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(on_disk, failing, "{}", logs_dir.display());
    assert_no_verification_left(&f);
    // The batch stays open for the rejected tasks; status shows them with their logs.
    let st = f.status();
    if culprits.is_empty() {
        assert_eq!(st["batches"].as_array().unwrap().len(), 0);
    } else {
        let tasks = st["batches"][0]["tasks"].as_array().unwrap();
        for &c in culprits {
            let name = c.to_string();
            let t = tasks.iter().find(|t| t["name"] == name.as_str()).unwrap();
            assert_eq!(t["state"], "rejected", "{t}");
            assert!(t["verify_log"].as_str().is_some(), "{t}");
        }
        let human = f.env.delegate(&f.repo, ["status"]).expect(0);
        assert_has(&human.stdout, "rejected");
        assert_has(&human.stdout, "verify-");
    }
}

#[test]
fn no_culprit_lands_everything_in_one_run() {
    check_culprits(&[]);
}

#[test]
fn one_culprit_is_rejected_and_the_rest_land() {
    check_culprits(&[2]);
}

#[test]
fn two_culprits_are_rejected_and_the_rest_land() {
    check_culprits(&[2, 4]);
}

#[test]
fn an_interaction_rejects_the_later_task() {
    let f = Fixture::new(5);
    for i in 1..=5 {
        f.work(i, "ok\n");
    }
    std::fs::write(f.roots[0].join("a.txt"), "a\n").unwrap();
    std::fs::write(f.roots[2].join("c.txt"), "c\n").unwrap();
    let doc = f.apply(&[], 1);
    assert_eq!(status(&doc, "3"), "rejected", "{doc:#}");
    for t in ["1", "2", "4", "5"] {
        assert_eq!(status(&doc, t), "applied", "{doc:#}");
    }
    assert!(f.repo.join("a.txt").exists());
    assert!(!f.repo.join("c.txt").exists());
    assert!(doc["verify"]["runs"].as_array().unwrap().len() <= bound(5, 1));
}

/// The runs apply's human summary lists: (its count line, each listed
/// run's number and line), checked to agree with each other.
fn summary_runs(text: &str) -> (String, Vec<(usize, String)>) {
    let at = text.find("Verification (").expect("a verification summary");
    let mut lines = text[at..].lines();
    let head = lines.next().unwrap().to_string();
    let runs: Vec<(usize, String)> = lines
        .map_while(|l| l.strip_prefix("  verify-"))
        .map(|l| {
            let (n, rest) = l.split_once("  ").expect("a run's number, then its line");
            (n.parse().unwrap(), rest.to_string())
        })
        .collect();
    let count = format!(
        ", {} run{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    assert!(head.contains(&count), "count and list disagree:\n{text}");
    // Each listed failure names its own log.
    for (n, line) in &runs {
        if line.contains("failed") {
            assert_has(line, &format!("/verify-{n}.log)"));
        }
    }
    (head, runs)
}

#[test]
fn the_verify_summary_names_each_run_it_counts_as_its_log_does() {
    let f = Fixture::new(4);
    for i in 1..=4 {
        f.work(i, if i == 2 || i == 4 { "BAD\n" } else { "ok\n" });
    }
    let cmd = f.cmd();
    let first = f
        .env
        .delegate(&f.repo, ["apply", "--verify", &cmd])
        .expect(1)
        .stdout;
    let (head, runs) = summary_runs(&first);
    let numbers: Vec<usize> = runs.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=runs.len()).collect::<Vec<_>>(), "{first}");
    assert!(!head.contains("numbered on"), "{head}");
    // Task 2 fixed: the next apply's runs are numbered on from the logs the
    // first one kept, and the summary says which numbers it counts.
    f.work(2, "ok\n");
    let second = f
        .env
        .delegate(&f.repo, ["apply", "--verify", &cmd])
        .expect(1)
        .stdout;
    let (head, runs) = summary_runs(&second);
    let numbers: Vec<usize> = runs.iter().map(|(n, _)| *n).collect();
    let (a, b) = (numbers[0], *numbers.last().unwrap());
    assert!(a > 1, "{second}");
    assert_eq!(numbers, (a..=b).collect::<Vec<_>>(), "{second}");
    assert_has(&head, &format!("(verify-{a} to verify-{b}: numbered on"));
    // The rejected task's log is one the summary lists.
    let task4 = second
        .lines()
        .find(|l| l.starts_with("  task 4  rejected"))
        .expect("task 4 rejected");
    assert!(
        runs.iter()
            .any(|(n, _)| task4.ends_with(&format!("/verify-{n}.log"))),
        "{second}"
    );
}

#[test]
fn verify_jobs_three_gives_the_same_outcome_as_one() {
    let one = Fixture::new(5);
    let (d1, _) = outcome_of(&one, &[2, 4], "1");
    let three = Fixture::new(5);
    let (d3, lines) = outcome_of(&three, &[2, 4], "3");
    for i in 1..=5 {
        let n = i.to_string();
        assert_eq!(status(&d1, &n), status(&d3, &n), "task {n}");
    }
    assert_eq!(d3["verify"]["runs"].as_array().unwrap().len(), lines.len());
    for i in [1, 3, 5] {
        assert!(three.repo.join(format!("t{i}.txt")).exists());
    }
    assert_no_verification_left(&three);
}

#[test]
fn source_alone_failing_writes_nothing() {
    let f = Fixture::new(3);
    for i in 1..=3 {
        f.work(i, "ok\n");
    }
    // The working tree itself fails the check.
    std::fs::write(f.repo.join("t9.txt"), "BAD\n").unwrap();
    let before = f.env.oracle_tree(&f.repo);
    let doc = f.apply(&[], 1);
    for t in ["1", "2", "3"] {
        assert_eq!(status(&doc, t), "unverified", "{doc:#}");
        assert_eq!(task(&doc, t)["reason"], "verify_fails_without_tasks");
    }
    assert_eq!(doc["verify"]["outcome"], "fails_without_tasks");
    let runs = doc["verify"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["tasks"].as_array().unwrap().len(), 0);
    assert_eq!(f.env.oracle_tree(&f.repo), before);
    assert!(!f.repo.join("t1.txt").exists());
    assert_eq!(doc["applied_paths"].as_array().unwrap().len(), 0);
    // Still open: a later apply without the culprit in the source lands them.
    std::fs::remove_file(f.repo.join("t9.txt")).unwrap();
    let doc = f.apply(&[], 0);
    for t in ["1", "2", "3"] {
        assert_eq!(status(&doc, t), "applied", "{doc:#}");
    }
}

#[test]
fn dry_run_verifies_and_writes_nothing() {
    let f = Fixture::new(5);
    for i in 1..=5 {
        f.work(i, if i == 3 { "BAD\n" } else { "ok\n" });
    }
    let before = f.env.oracle_tree(&f.repo);
    let refs = f.env.private_refs(&f.repo);
    let doc = f.apply(&["--dry-run"], 1);
    assert_eq!(doc["dry_run"], true);
    assert_eq!(status(&doc, "3"), "rejected", "{doc:#}");
    assert_eq!(status(&doc, "1"), "applied");
    assert_eq!(f.env.oracle_tree(&f.repo), before);
    assert_eq!(f.env.private_refs(&f.repo), refs);
    for r in &f.roots {
        assert!(r.exists());
    }
    assert!(!f.repo.join("t1.txt").exists());
    assert_no_verification_left(&f);
    // The batch is untouched: every task still open.
    let st = f.status();
    for t in st["batches"][0]["tasks"].as_array().unwrap() {
        assert_eq!(t["state"], "open", "{t}");
    }
}

#[test]
fn timeout_kills_the_process_group() {
    let f = Fixture::new(1);
    f.work(1, "ok\n");
    let pidfile = f.env.path().join("sleep.pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let doc = f
        .env
        .delegate(
            &f.repo,
            [
                "apply",
                "--json",
                "--verify",
                &cmd,
                "--verify-timeout",
                "2s",
            ],
        )
        .expect(1)
        .json();
    let runs = doc["verify"]["runs"].as_array().unwrap();
    assert_eq!(runs[0]["timed_out"], true, "{doc:#}");
    assert_eq!(runs[0]["exit"], Value::Null);
    assert_eq!(status(&doc, "1"), "unverified");
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    // The background sleep went with its group.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let alive = std::process::Command::new("kill")
            .args(["-0", &pid])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false);
        if !alive || zombie {
            break;
        }
        assert!(Instant::now() < deadline, "sleep {pid} still runs");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!f.repo.join("t1.txt").exists());
}

#[test]
fn a_source_edit_at_a_written_path_while_verifying_takes_the_task_out() {
    let f = Fixture::new(3);
    // Task 1 edits README; the others add files.
    std::fs::write(f.roots[0].join("README"), "HELLO\n").unwrap();
    f.work(2, "ok\n");
    f.work(3, "ok\n");
    // CMD appends a line to the source's README, once.
    let marker = f.env.path().join("edited");
    let cmd = format!(
        "if [ ! -e {m} ]; then touch {m}; echo user >> {src}/README; fi; exit 0",
        m = marker.display(),
        src = f.repo.display()
    );
    let doc = f
        .env
        .delegate(&f.repo, ["apply", "--json", "--verify", &cmd])
        .expect(1)
        .json();
    assert_eq!(status(&doc, "1"), "conflict", "{doc:#}");
    assert_eq!(task(&doc, "1")["reason"], "source_changed");
    assert_eq!(status(&doc, "2"), "applied");
    assert_eq!(status(&doc, "3"), "applied");
    // The user's edit is intact and the task's edit was not written.
    assert_eq!(read(&f.repo.join("README")), "hello\nuser\n");
    assert!(f.repo.join("t2.txt").exists() && f.repo.join("t3.txt").exists());
    // Verified twice: once with task 1, once without.
    assert!(doc["verify"]["runs"].as_array().unwrap().len() >= 2);
    assert_no_verification_left(&f);
}

#[test]
fn git_dir_of_the_caller_never_reaches_cmd_and_cmd_runs_at_the_mirrored_position() {
    let f = Fixture::new(1);
    f.work(1, "ok\n");
    let cmd = f.cmd();
    let run = f
        .env
        .delegate_cmd(&f.repo.join("sub"))
        .env("GIT_DIR", f.repo.join(".git"))
        .env("GIT_WORK_TREE", &f.repo)
        .args(["apply", "--json", "--verify", &cmd])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines = f.run_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_has(line, "git_dir=unset");
    let repo = std::fs::canonicalize(&f.repo).unwrap();
    assert!(
        !line.contains(&format!("top={} ", repo.display())),
        "{line}"
    );
    assert_has(line, "/.verify-");
    assert!(line.ends_with("/sub"), "{line}");
    assert!(f.repo.join("t1.txt").exists());
}

#[test]
fn a_batch_being_verified_is_busy_for_drop_and_apply() {
    let f = Fixture::new(2);
    f.work(1, "ok\n");
    f.work(2, "ok\n");
    let (child, go) = apply_verifying(&f.env, &f.repo, std::process::Stdio::piped);
    // No repository lock is held: other commands run; this batch is busy.
    let st = f.env.delegate(&f.repo, ["status", "--json"]).expect(0);
    assert!(st.stdout.contains("\"batches\""));
    let batch = f.env.delegate(&f.repo, ["status", "--json"]).json()["batches"][0]["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let d = f
        .env
        .delegate(&f.repo, ["drop", "--json", "--force", &batch])
        .expect(3)
        .json();
    assert_eq!(d["error"]["code"], "delegate::batch_busy", "{d:#}");
    let a = f
        .env
        .delegate(&f.repo, ["apply", "--json"])
        .expect(3)
        .json();
    assert_eq!(a["error"]["code"], "delegate::batch_busy", "{a:#}");
    // refresh writes into the workspaces: busy too (design §3.10).
    let r = f
        .env
        .delegate(&f.repo, ["refresh", "--batch", &batch, "--json"])
        .expect(3)
        .json();
    assert_eq!(r["error"]["code"], "delegate::batch_busy", "{r:#}");
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(f.repo.join("t1.txt").exists() && f.repo.join("t2.txt").exists());
}

#[test]
fn no_verify_turns_the_configured_command_off() {
    let f = Fixture::new(1);
    f.work(1, "BAD\n");
    let common = f.repo.join(".git");
    std::fs::write(
        common.join("delegate.toml"),
        format!("[apply]\nverify = {:?}\n", f.cmd()),
    )
    .unwrap();
    // Written while the batch is open: the user confirms it (design §3.18).
    f.env.delegate(&f.repo, ["config", "--trust"]).expect(0);
    let doc = f
        .env
        .delegate(&f.repo, ["apply", "--json", "--dry-run"])
        .expect(1)
        .json();
    assert_eq!(status(&doc, "1"), "rejected", "{doc:#}");
    let doc = f
        .env
        .delegate(&f.repo, ["apply", "--json", "--no-verify"])
        .expect(0)
        .json();
    assert_eq!(status(&doc, "1"), "applied");
    assert!(doc.get("verify").is_none());
}

#[test]
fn the_verification_workspace_carries_ignored_files_by_policy() {
    let (env, repo) = Env::with_repo("r");
    commit_files(&env, &repo, &[(".gitignore", "deps/\n")], "ignore");
    std::fs::create_dir_all(repo.join("deps")).unwrap();
    std::fs::write(repo.join("deps/lib.txt"), "built\n").unwrap();
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[workspace]\ncopy-ignored = [\"deps/\"]\n",
    )
    .unwrap();
    let doc = prepare(&env, &repo, &[]);
    let root = task_root(&doc, 0);
    std::fs::write(root.join("new.txt"), "n\n").unwrap();
    let cmd = "grep -q built \"$(git rev-parse --show-toplevel)/deps/lib.txt\"";
    let doc = env
        .delegate(&repo, ["apply", "--json", "--verify", cmd])
        .expect(0)
        .json();
    assert_eq!(doc["verify"]["outcome"], "passed", "{doc:#}");
    assert!(repo.join("new.txt").exists());
}

#[test]
fn an_apply_killed_while_verifying_leaves_nothing_the_next_one_trips_on() {
    let f = Fixture::new(2);
    f.work(1, "ok\n");
    f.work(2, "ok\n");
    let (mut child, go) = apply_verifying(&f.env, &f.repo, std::process::Stdio::null);
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(&go, "").unwrap();
    // The batch is not busy any more; the next verification sweeps the leftovers.
    let doc = f.apply(&[], 0);
    assert_eq!(status(&doc, "1"), "applied", "{doc:#}");
    assert_eq!(status(&doc, "2"), "applied");
    assert_no_verification_left(&f);
}

#[test]
fn keep_keeps_verification_workspaces_as_ordinary_worktrees_and_passing_logs() {
    let f = Fixture::new(1);
    f.work(1, "ok\n");
    let doc = f.apply(&["--keep"], 0);
    let run = &doc["verify"]["runs"][0];
    assert!(Path::new(run["log"].as_str().unwrap()).exists());
    let wt = f.env.git(&f.repo, ["worktree", "list", "--porcelain"]);
    assert_has(&wt, ".verify-1");
    // Released: not locked, so `git worktree remove` takes it.
    let path = wt
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .find(|p| p.contains(".verify-1"))
        .unwrap()
        .to_string();
    f.env.git(&f.repo, ["worktree", "remove", "--force", &path]);
}

#[test]
fn nothing_to_verify_is_not_run() {
    let f = Fixture::new(2);
    // No task changed anything.
    let doc = f.apply(&[], 0);
    assert_eq!(doc["verify"]["outcome"], "not_run", "{doc:#}");
    assert_eq!(doc["verify"]["runs"].as_array().unwrap().len(), 0);
    assert!(f.run_lines().is_empty());
}

#[test]
fn gc_leaves_a_stale_batch_alone_while_it_is_verified() {
    let (env, repo) = Env::with_repo("r");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let root = task_root(&doc, 0);
    std::fs::write(root.join("t1.txt"), "ok\n").unwrap();
    let (child, go) = apply_verifying(&env, &repo, std::process::Stdio::piped);
    std::thread::sleep(Duration::from_millis(1500)); // past the 1 s lease
                                                     // Skipped (and said so, exit 1), as a batch with a process inside is.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(1).json();
    assert_eq!(gc["batches"].as_array().unwrap().len(), 0, "{gc:#}");
    let skipped = gc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{gc:#}");
    assert!(
        skipped[0]["message"]
            .as_str()
            .unwrap()
            .contains("being verified"),
        "{gc:#}"
    );
    assert!(
        root.exists(),
        "gc removed a workspace of a batch being verified"
    );
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(repo.join("t1.txt").exists());
}

#[test]
fn cmd_output_is_shown_live_on_a_terminal() {
    let f = Fixture::new(1);
    f.work(1, "ok\n");
    let line = format!(
        "{} apply --verify 'echo hello-from-cmd'",
        env!("CARGO_BIN_EXE_git-delegate")
    );
    let Some(out) = crate::common::procs::in_a_terminal(&f.env, &f.repo, &line) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("verify-1 | hello-from-cmd"), "{text}");
    // Without a terminal (and with --json) nothing of it reaches stderr.
    let f = Fixture::new(1);
    f.work(1, "ok\n");
    let run = f
        .env
        .delegate(&f.repo, ["apply", "--verify", "echo hello-from-cmd"])
        .expect(0);
    assert!(!run.stderr.contains("hello-from-cmd"), "{}", run.stderr);
}

#[test]
fn failing_logs_stay_until_keep_failed_after_the_batch_ended() {
    let f = Fixture::new(2);
    f.work(1, "ok\n");
    f.work(2, "BAD\n");
    let doc = f.apply(&[], 1);
    let log = PathBuf::from(task(&doc, "2")["verify_log"].as_str().unwrap());
    assert!(log.exists());
    let batch = id(&doc);
    std::fs::write(
        f.repo.join(".git/delegate.toml"),
        "[gc]\nkeep-failed = \"1s\"\n",
    )
    .unwrap();
    // While the batch is open, gc keeps its logs whatever their age.
    std::thread::sleep(Duration::from_millis(1200));
    f.env.delegate(&f.repo, ["gc", "--json"]).expect(0);
    assert!(log.exists());
    f.env
        .delegate(&f.repo, ["drop", "--json", "--force", &batch])
        .expect(0);
    assert!(log.exists(), "drop removed a failing log");
    // The first gc after the batch ended starts the clock...
    f.env.delegate(&f.repo, ["gc", "--json"]).expect(0);
    assert!(log.exists());
    std::thread::sleep(Duration::from_millis(1500));
    // ...and one after keep-failed removes them.
    f.env.delegate(&f.repo, ["gc", "--json"]).expect(0);
    assert!(!log.exists());
    assert!(!log.parent().unwrap().exists());
}

#[test]
fn a_source_edit_elsewhere_while_verifying_takes_nothing_out() {
    let f = Fixture::new(2);
    std::fs::write(f.roots[0].join("README"), "HELLO\n").unwrap();
    f.work(2, "ok\n");
    let cmd = format!("echo user >> {}/sub/keep; exit 0", f.repo.display());
    let doc = f
        .env
        .delegate(&f.repo, ["apply", "--json", "--verify", &cmd])
        .expect(0)
        .json();
    assert_eq!(status(&doc, "1"), "applied", "{doc:#}");
    assert_eq!(status(&doc, "2"), "applied");
    assert_eq!(doc["verify"]["runs"].as_array().unwrap().len(), 1);
    assert_eq!(read(&f.repo.join("README")), "HELLO\n");
    assert_eq!(read(&f.repo.join("sub/keep")), "k\nuser\n");
}
