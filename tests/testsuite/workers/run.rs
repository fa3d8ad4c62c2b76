//! `git delegate run` (design §3.13) end to end: real repositories, real
//! worker processes (`sh -c` scripts), real signals.

use crate::common::fixtures::commit_files;
use crate::common::fixtures::id;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::files::read;
use crate::common::fixtures::{field_strs, task};
use crate::common::procs::alive;
use crate::common::Env;
use serde_json::Value;

fn worker<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no worker {name} in {doc:#}"))
}

/// Live (non-zombie) processes whose process group is one of `groups`.
fn members(groups: &HashSet<u32>) -> Vec<u32> {
    let mut out = Vec::new();
    for pid in crate::common::procs::pids() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = crate::common::procs::stat_fields(&stat);
        // state, ppid, pgrp
        if rest.len() > 2 && rest[0] != "Z" && groups.contains(&rest[2].parse().unwrap_or(0)) {
            out.push(pid);
        }
    }
    out
}

/// Wait (generously: a loaded machine) until `check` holds.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Let the contained workers of `repo` write `dir` too (`run.writable`,
/// design §3.22): where these tests' workers leave their marks.
fn writable(repo: &Path, dir: &Path) {
    crate::common::fixtures::set_config(
        repo,
        &format!("[run]\nwritable = [{:?}]\n", dir.display().to_string()),
    );
}

fn batches(env: &Env, repo: &Path) -> Vec<Value> {
    env.delegate(repo, ["status", "--json"]).expect(0).json()["batches"]
        .as_array()
        .unwrap()
        .clone()
}

/// The worker of the first test: records its environment, arguments and
/// cwd in `env-<task>.txt` (in the source's `sub/` once applied), writes to
/// its log, and checks the locating variables are gone.
const RECORD: &str = r#"
{
  echo "task=$GIT_DELEGATE_TASK"
  echo "index=$GIT_DELEGATE_TASK_INDEX"
  echo "batch=$GIT_DELEGATE_BATCH"
  echo "workspace=$GIT_DELEGATE_WORKSPACE"
  echo "source=$GIT_DELEGATE_SOURCE"
  echo "port=$GIT_DELEGATE_PORT"
  echo "git_dir=${GIT_DIR-unset}"
  echo "pwd=$(pwd)"
  echo "arg1=$1"
  echo "arg2=$2"
  echo "arg3=$3"
  echo "arg4=$4"
  echo "stdin=$(cat)"
} > "env-$GIT_DELEGATE_TASK.txt"
echo "hello from $1 on stdout"
echo "hello from $1 on stderr" >&2
"#;

#[test]
fn four_workers_apply_with_their_environment_placeholders_logs_and_ports() {
    let (env, repo) = Env::with_repo("r");
    commit_files(&env, &repo, &[("sub/keep", "k\n")], "sub");
    let git_dir = repo.join(".git");
    let mut out = env
        .delegate_cmd(&repo.join("sub"))
        // Locating variables of the source never reach a worker.
        .env("GIT_DIR", &git_dir)
        .env("GIT_WORK_TREE", &repo)
        .args(["run", "-n", "4", "--json", "--", "sh", "-c", RECORD, "sh"])
        .args(["{task}", "{index}", "{workspace}", "{{task}}-{{"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // What run's own stdin holds never reaches a worker (theirs is /dev/null).
    {
        use std::io::Write;
        let mut stdin = out.stdin.take().unwrap();
        let _ = stdin.write_all(b"not for workers\n");
    }
    let run = crate::common::Run::from(out.wait_with_output().unwrap()).expect(0);
    let doc = run.json();
    assert_eq!(doc["schema"], "git-delegate/v1");
    let id = id(&doc);
    let short = &id[..8];
    assert_eq!(doc["workers"].as_array().unwrap().len(), 4, "{doc:#}");
    let source = std::fs::canonicalize(&repo).unwrap();
    let mut ports = HashSet::new();
    for (i, name) in ["1", "2", "3", "4"].iter().enumerate() {
        let w = worker(&doc, name);
        assert_eq!(w["exit"], 0, "{doc:#}");
        assert_eq!(w["signal"], Value::Null);
        assert_eq!(w["timed_out"], false);
        assert!(w["duration_ms"].is_u64());
        // The log holds stdout and stderr, and stays after the batch ended.
        let log = PathBuf::from(w["log"].as_str().unwrap());
        assert_eq!(
            log,
            git_dir
                .canonicalize()
                .unwrap()
                .join(format!("delegate/logs/{id}/{name}.log"))
        );
        let text = read(&log);
        assert!(
            text.contains(&format!("hello from {name} on stdout")),
            "{text}"
        );
        assert!(
            text.contains(&format!("hello from {name} on stderr")),
            "{text}"
        );
        // Applied into the source, at the position mirroring `sub/`.
        assert_eq!(task(&doc["apply"], name)["status"], "applied");
        let rec = read(&repo.join(format!("sub/env-{name}.txt")));
        let field = |k: &str| -> String {
            rec.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("no {k} in {rec}"))
                .to_string()
        };
        assert_eq!(field("task"), *name);
        assert_eq!(field("index"), i.to_string());
        assert_eq!(field("batch"), id);
        let ws = field("workspace");
        assert!(ws.ends_with(&format!("/{short}/{name}")), "{ws}");
        assert_eq!(field("source"), source.display().to_string());
        assert_eq!(field("git_dir"), "unset");
        assert_eq!(field("pwd"), format!("{ws}/sub"));
        assert_eq!(field("arg1"), *name);
        assert_eq!(field("arg2"), i.to_string());
        assert_eq!(field("arg3"), ws);
        assert_eq!(field("arg4"), "{task}-{");
        assert_eq!(field("stdin"), "");
        let port: u32 = field("port").parse().unwrap();
        assert_eq!(port, 41000 + 10 * i as u32);
        ports.insert(port);
    }
    assert_eq!(ports.len(), 4);
    assert_eq!(doc["apply"]["batch_open"], false);
    assert!(batches(&env, &repo).is_empty());
}

#[test]
fn ports_follow_the_config() {
    let (env, repo) = Env::with_repo("r");
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[run]\nport-base = 50000\nports-per-task = 3\n",
    )
    .unwrap();
    env.delegate(
        &repo,
        [
            "run",
            "a",
            "b",
            "--",
            "sh",
            "-c",
            "echo $GIT_DELEGATE_PORT > port-$GIT_DELEGATE_TASK",
        ],
    )
    .expect(0);
    assert_eq!(read(&repo.join("port-a")), "50000\n");
    assert_eq!(read(&repo.join("port-b")), "50003\n");
}

#[test]
fn a_failing_worker_is_worker_failed_and_its_work_stays_appliable() {
    let (env, repo) = Env::with_repo("r");
    let script = r#"echo "work of $GIT_DELEGATE_TASK" > "out-$GIT_DELEGATE_TASK.txt"; [ "$GIT_DELEGATE_TASK" != 2 ] || exit 3"#;
    let run = env
        .delegate(
            &repo,
            ["run", "-n", "3", "--json", "--", "sh", "-c", script],
        )
        .expect(1);
    let doc = run.json();
    assert_eq!(worker(&doc, "2")["exit"], 3);
    assert_eq!(worker(&doc, "1")["exit"], 0);
    let failed = task(&doc["apply"], "2");
    assert_eq!(failed["status"], "worker_failed", "{doc:#}");
    assert!(failed["workspace"].is_string());
    assert_eq!(task(&doc["apply"], "1")["status"], "applied");
    assert_eq!(task(&doc["apply"], "3")["status"], "applied");
    assert_eq!(doc["apply"]["batch_open"], true);
    assert!(repo.join("out-1.txt").exists() && repo.join("out-3.txt").exists());
    assert!(!repo.join("out-2.txt").exists());
    // The batch stays open for it, with a plain TTL lease (run is gone).
    let b = batches(&env, &repo);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["lease"]["owner_pid"], Value::Null, "{b:#?}");
    assert_eq!(b[0]["lease"]["state"], "live");
    let t2 = b[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "2")
        .unwrap();
    assert_eq!(t2["state"], "worker_failed");
    // Its work is applied later, only when named (design §3.18
    // "Follow-through"): a plain apply leaves it open.
    env.delegate(&repo, ["apply"]).expect(1);
    assert!(!repo.join("out-2.txt").exists());
    env.delegate(&repo, ["apply", "--only", "2"]).expect(0);
    assert_eq!(read(&repo.join("out-2.txt")), "work of 2\n");
    assert!(batches(&env, &repo).is_empty());
}

#[test]
fn jobs_bounds_the_workers_alive_at_once() {
    let (env, repo) = Env::with_repo("r");
    let times = env.path().join("times");
    std::fs::create_dir_all(&times).unwrap();
    writable(&repo, &times);
    let script = format!(
        r#"echo "$(date +%s%N)" > "{d}/$GIT_DELEGATE_TASK.start"; sleep 0.3; echo "$(date +%s%N)" > "{d}/$GIT_DELEGATE_TASK.stop""#,
        d = times.display()
    );
    env.delegate(
        &repo,
        [
            "run",
            "-n",
            "6",
            "--jobs",
            "2",
            "--no-apply",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .expect(0);
    let mut spans: Vec<(u128, u128)> = Vec::new();
    for i in 1..=6 {
        let t = |k: &str| -> u128 {
            read(&times.join(format!("{i}.{k}")))
                .trim()
                .parse()
                .unwrap()
        };
        spans.push((t("start"), t("stop")));
    }
    // Each worker's recorded span lies within its lifetime: at no worker's
    // start were more than two spans open.
    for &(s, _) in &spans {
        let open = spans.iter().filter(|&&(a, b)| a <= s && s <= b).count();
        assert!(open <= 2, "{open} workers alive at once: {spans:?}");
    }
}

#[test]
fn a_timeout_kills_a_worker_that_traps_sigterm_and_its_grandchild() {
    let (env, repo) = Env::with_repo("r");
    let pids = env.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    writable(&repo, &pids);
    // Ignores SIGTERM, as does the grandchild (an ignored signal is inherited).
    let script = format!(
        r#"trap "" TERM; echo work > w.txt; sleep 300 & echo $! > "{d}/grandchild"; echo $$ > "{d}/worker"; wait; wait"#,
        d = pids.display()
    );
    let doc = env
        .delegate(
            &repo,
            [
                "run",
                "--timeout",
                "5s",
                "--json",
                "--",
                "sh",
                "-c",
                &script,
            ],
        )
        .expect(1)
        .json();
    let w = worker(&doc, "1");
    assert_eq!(w["timed_out"], true, "{doc:#}");
    assert_eq!(w["exit"], Value::Null);
    assert_eq!(w["signal"], 9);
    assert_eq!(task(&doc["apply"], "1")["status"], "worker_failed");
    assert_eq!(task(&doc["apply"], "1")["reason"], "timed_out");
    for who in ["worker", "grandchild"] {
        let pid: u32 = read(&pids.join(who)).trim().parse().unwrap();
        wait_for(&format!("the {who} to be gone"), || !alive(pid));
    }
    assert!(!repo.join("w.txt").exists());
}

#[test]
fn sigint_stops_every_worker_group_applies_nothing_and_says_how_to_go_on() {
    let (env, repo) = Env::with_repo("r");
    let pids = env.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    writable(&repo, &pids);
    // Worker 3 ignores SIGTERM and leaves a child behind that does too.
    let script = format!(
        r#"echo "work $GIT_DELEGATE_TASK" > "f-$GIT_DELEGATE_TASK.txt"
if [ "$GIT_DELEGATE_TASK" = 3 ]; then trap "" TERM; sleep 300 & fi
echo $$ > "{d}/$GIT_DELEGATE_TASK"
sleep 300; sleep 300"#,
        d = pids.display()
    );
    let child = env
        .delegate_cmd(&repo)
        .args(["run", "-n", "3", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run_pid = child.id();
    wait_for("every worker to start", || {
        (1..=3).all(|i| pids.join(i.to_string()).exists())
    });
    // While the workers run, the lease is run's and no lock is held: a
    // status (and a renew) go through.
    let b = batches(&env, &repo);
    assert_eq!(b[0]["lease"]["owner_pid"], run_pid, "{b:#?}");
    env.delegate(&repo, ["renew", "--json"]).expect(0);
    let groups: HashSet<u32> = (1..=3)
        .map(|i| read(&pids.join(i.to_string())).trim().parse().unwrap())
        .collect();
    assert!(members(&groups).len() >= 3);
    std::process::Command::new("kill")
        .args(["-INT", &run_pid.to_string()])
        .status()
        .unwrap();
    let out = crate::common::Run::from(child.wait_with_output().unwrap()).expect(1);
    assert!(members(&groups).is_empty(), "left: {:?}", members(&groups));
    // Nothing applied, the batch open with a plain lease.
    for i in 1..=3 {
        assert!(!repo.join(format!("f-{i}.txt")).exists());
    }
    let b = batches(&env, &repo);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["lease"]["owner_pid"], Value::Null);
    assert_has(&out.stderr, "nothing was applied");
    // The printed command applies the batch.
    let apply = crate::common::printed_command(&out.stderr, "git delegate apply");
    env.sh(&repo, &apply).expect(0);
    for i in 1..=3 {
        assert_eq!(
            read(&repo.join(format!("f-{i}.txt"))),
            format!("work {i}\n")
        );
    }
}

#[test]
fn sigint_then_drop_as_printed() {
    let (env, repo) = Env::with_repo("r");
    let marks = env.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    writable(&repo, &marks);
    let started = marks.join("started");
    let script = format!(
        r#"echo x > x.txt; touch "{}"; sleep 300"#,
        started.display()
    );
    let child = env
        .delegate_cmd(&repo)
        .args(["run", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the worker to start", || started.exists());
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = crate::common::Run::from(child.wait_with_output().unwrap()).expect(1);
    let doc = out.json();
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["apply"], Value::Null);
    let drop = crate::common::printed_command(&out.stderr, "git delegate drop");
    env.sh(&repo, &drop).expect(0);
    assert!(batches(&env, &repo).is_empty());
    assert!(!repo.join("x.txt").exists());
}

#[test]
fn a_tasks_file_gives_commands_env_and_order() {
    let (env, repo) = Env::with_repo("r");
    let file = env.path().join("tasks.toml");
    std::fs::write(
        &file,
        r#"
[[task]]
name = "lint"
command = ["sh", "-c", "echo \"$WHAT {task}\" > lint.txt"]
env = { WHAT = "linting" }

[[task]]
name = "docs"
env = { WHAT = "documenting" }
"#,
    )
    .unwrap();
    let doc = env
        .delegate(
            &repo,
            [
                "run",
                "--tasks",
                file.to_str().unwrap(),
                "--json",
                "--",
                "sh",
                "-c",
                "echo \"$WHAT $GIT_DELEGATE_TASK_INDEX\" > docs.txt",
            ],
        )
        .expect(0)
        .json();
    let names = field_strs(&doc["workers"], "name");
    assert_eq!(names, ["lint", "docs"]);
    assert_eq!(read(&repo.join("lint.txt")), "linting lint\n");
    assert_eq!(read(&repo.join("docs.txt")), "documenting 1\n");
}

#[test]
fn a_bad_tasks_file_names_line_and_column_and_prepares_nothing() {
    let (env, repo) = Env::with_repo("r");
    let file = env.path().join("tasks.toml");
    for (text, at) in [
        (
            "[[task]]\nname = \"a\"\ncolour = \"red\"\n",
            "line 3, column 1",
        ),
        (
            "[[task]]\nname = \"a\"\n\n[[task]]\nname = \"b\"\ntimeout = 5\n",
            "line 6, column 11",
        ),
        ("[[task]]\nname = \"a b\"\n", "line 2, column 8"),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = env
            .delegate(
                &repo,
                [
                    "run",
                    "--tasks",
                    file.to_str().unwrap(),
                    "--json",
                    "--",
                    "true",
                ],
            )
            .expect(2);
        let doc = out.json();
        assert_eq!(doc["error"]["code"], "delegate::tasks_file", "{doc:#}");
        let msg = doc["error"]["message"].as_str().unwrap();
        assert!(msg.contains(at), "{text:?}: {msg}");
        let human = env
            .delegate(
                &repo,
                ["run", "--tasks", file.to_str().unwrap(), "--", "true"],
            )
            .expect(2);
        assert_has(&human.stderr, at);
    }
    assert!(batches(&env, &repo).is_empty());
    assert!(env.private_refs(&repo).is_empty());
    assert!(
        !env.workspace_root().exists()
            || std::fs::read_dir(env.workspace_root()).unwrap().all(|e| {
                std::fs::read_dir(e.unwrap().path())
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true)
            })
    );
}

#[test]
fn no_apply_stops_after_the_workers_and_prints_the_apply_command() {
    let (env, repo) = Env::with_repo("r");
    // A worker may call git-delegate itself while run runs (no lock held);
    // one that changes the batch (renew) runs unconfined: a contained one
    // cannot write the shared state (design §3.22).
    let out = env
        .delegate_cmd(&repo)
        .env("PATH", env.path_with_delegate())
        .args([
            "run",
            "-n",
            "2",
            "--no-apply",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            "echo done > n-$GIT_DELEGATE_TASK.txt && git delegate renew $GIT_DELEGATE_BATCH --json > /dev/null",
        ])
        .output()
        .unwrap();
    let out = crate::common::Run::from(out).expect(0);
    assert!(!repo.join("n-1.txt").exists());
    let b = batches(&env, &repo);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["lease"]["owner_pid"], Value::Null);
    let apply = crate::common::printed_command(&out.stdout, "git delegate apply");
    env.sh(&repo, &apply).expect(0);
    assert_eq!(read(&repo.join("n-1.txt")), "done\n");
    assert_eq!(read(&repo.join("n-2.txt")), "done\n");
    // With --json: apply is null; a failing worker makes it exit 1.
    let doc = env
        .delegate(&repo, ["run", "--no-apply", "--json", "--", "false"])
        .expect(1)
        .json();
    assert_eq!(doc["apply"], Value::Null);
    assert_eq!(worker(&doc, "1")["exit"], 1);
}

#[test]
fn a_command_that_cannot_start_fails_its_task() {
    let (env, repo) = Env::with_repo("r");
    let doc = env
        .delegate(&repo, ["run", "--json", "--", "/nonexistent/agent"])
        .expect(1)
        .json();
    let w = worker(&doc, "1");
    assert_eq!(w["exit"], Value::Null);
    assert!(read(Path::new(w["log"].as_str().unwrap())).contains("/nonexistent/agent"));
    assert_eq!(task(&doc["apply"], "1")["status"], "worker_failed");
}

#[test]
fn a_worker_writing_50_mb_neither_blocks_nor_fills_memory() {
    let (env, repo) = Env::with_repo("r");
    // The worker waits for this file, so run is still there to be measured.
    let go = env.path().join("go");
    let child = env
        .delegate_cmd(&repo)
        .args([
            "run",
            "--json",
            "--",
            "sh",
            "-c",
            &format!(
                "head -c 50000000 /dev/zero | tr '\\0' x; echo; echo done > big.txt; \
                 while [ ! -e '{go}' ]; do sleep 0.1; done",
                go = go.display()
            ),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let logs = repo.join(".git/delegate/logs");
    let log_size = || -> u64 {
        std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .map(|d| {
                std::fs::metadata(d.path().join("1.log"))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .sum()
    };
    wait_for("the output to be written", || log_size() > 50_000_000);
    // run is still there (the worker sleeps): its peak memory so far.
    let status = read(Path::new(&format!("/proc/{pid}/status")));
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    std::fs::write(&go, "").unwrap();
    let out = crate::common::Run::from(child.wait_with_output().unwrap()).expect(0);
    assert!(hwm_kb < 48 * 1024, "run's peak RSS {hwm_kb} kB");
    assert_eq!(read(&repo.join("big.txt")), "done\n");
    assert_eq!(out.json()["workers"][0]["exit"], 0);
}

#[test]
fn no_command_is_bad_usage() {
    let (env, repo) = Env::with_repo("r");
    let doc = env
        .delegate(&repo, ["run", "-n", "2", "--json"])
        .expect(2)
        .json();
    assert_eq!(doc["error"]["code"], "delegate::usage");
    assert!(batches(&env, &repo).is_empty());
}

#[test]
fn verify_lands_only_what_passes() {
    let (env, repo) = Env::with_repo("r");
    let script = r#"echo "$GIT_DELEGATE_TASK" > "t-$GIT_DELEGATE_TASK.txt"; [ "$GIT_DELEGATE_TASK" != 2 ] || echo BAD > bad.txt"#;
    let doc = env
        .delegate(
            &repo,
            [
                "run",
                "-n",
                "3",
                "--verify",
                "test ! -e bad.txt",
                "--json",
                "--",
                "sh",
                "-c",
                script,
            ],
        )
        .expect(1)
        .json();
    for w in doc["workers"].as_array().unwrap() {
        assert_eq!(w["exit"], 0, "{doc:#}");
    }
    let apply = &doc["apply"];
    assert_eq!(apply["verify"]["command"], "test ! -e bad.txt");
    assert_eq!(apply["verify"]["outcome"], "passed_after_rejections");
    assert_eq!(task(apply, "2")["status"], "rejected");
    assert_eq!(task(apply, "1")["status"], "applied");
    assert_eq!(task(apply, "3")["status"], "applied");
    assert!(!repo.join("bad.txt").exists());
    assert!(repo.join("t-1.txt").exists() && repo.join("t-3.txt").exists());
}

#[test]
fn on_a_terminal_lines_are_prefixed_with_their_task_and_each_worker_has_a_status_line() {
    let (env, repo) = Env::with_repo("r");
    let line = format!(
        "{} run alpha b -- sh -c 'echo line-of-$GIT_DELEGATE_TASK; printf partial-$GIT_DELEGATE_TASK; exit $GIT_DELEGATE_TASK_INDEX'",
        env!("CARGO_BIN_EXE_git-delegate")
    );
    let Some(out) = crate::common::procs::in_a_terminal(&env, &repo, &line) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("alpha | line-of-alpha\n"), "{text}");
    assert!(text.contains("b     | line-of-b\n"), "{text}");
    assert!(text.contains("alpha | partial-alpha\n"), "{text}");
    assert!(text.contains("alpha | -- exit 0 after"), "{text}");
    assert!(text.contains("b     | -- exit 1 after"), "{text}");
    // Piped: none of it.
    let run = env
        .delegate(
            &repo,
            ["run", "--", "sh", "-c", "echo line-of-$GIT_DELEGATE_TASK"],
        )
        .expect(0);
    assert!(!run.stderr.contains("line-of-"), "{}", run.stderr);
    assert!(!run.stdout.contains("line-of-"), "{}", run.stdout);
}

#[test]
fn what_a_worker_leaves_running_in_its_group_goes_when_it_ends() {
    let (env, repo) = Env::with_repo("r");
    let marks = env.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    writable(&repo, &marks);
    let pidfile = marks.join("bg.pid");
    let script = format!(
        r#"sleep 300 & echo $! > "{}"; echo done > d.txt; exit 0"#,
        pidfile.display()
    );
    env.delegate(&repo, ["run", "--", "sh", "-c", &script])
        .expect(0);
    let pid: u32 = read(&pidfile).trim().parse().unwrap();
    wait_for("the background sleep to be gone", || !alive(pid));
    assert_eq!(read(&repo.join("d.txt")), "done\n");
}

#[test]
fn an_owner_pid_given_owns_the_lease_once_run_ends() {
    let (env, repo) = Env::with_repo("r");
    let me = std::process::id().to_string();
    env.delegate(
        &repo,
        [
            "run",
            "--owner-pid",
            &me,
            "--ttl",
            "2h",
            "--no-apply",
            "--",
            "true",
        ],
    )
    .expect(0);
    let b = batches(&env, &repo);
    assert_eq!(b[0]["lease"]["owner_pid"].to_string(), me, "{b:#?}");
    assert_eq!(b[0]["lease"]["state"], "live");
}
