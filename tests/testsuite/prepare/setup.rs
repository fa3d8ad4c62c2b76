//! `workspace.setup` (design §3.20): run once in each new workspace's cwd
//! with run's worker environment, its log per task; its ignored output is
//! not work; a failing setup undoes the prepare; `run` uses it too.
use crate::common::files::read;
use crate::common::fixtures::spawn_piped;

use crate::common::assert_has;
use crate::common::fixtures::{
    assert_nothing_created, commit_files, common_dir, config, expect_error, id, prepare_roots,
};
use crate::common::Env;

/// A repository ignoring `deps/`, with `workspace.setup` writing into it.
fn repo_with_setup(env: &Env, setup: &str) -> std::path::PathBuf {
    let repo = env.repo("r");
    commit_files(env, &repo, &[(".gitignore", "deps/\n")], "ignore deps");
    let toml = format!("[workspace]\nsetup = {setup:?}\nsetup-jobs = 2\n");
    config(env, &repo, &toml);
    repo
}

const RECORD: &str = r#"mkdir -p deps && echo "$GIT_DELEGATE_TASK $GIT_DELEGATE_TASK_INDEX $GIT_DELEGATE_PORT $GIT_DELEGATE_BATCH $(pwd)" >> deps/setup.txt && echo set up $GIT_DELEGATE_TASK"#;

#[test]
fn runs_once_per_workspace_with_the_workers_environment() {
    let env = Env::new();
    let repo = repo_with_setup(&env, RECORD);
    let (doc, roots) = prepare_roots(&env, &repo, &["-n", "3"]);
    let batch = id(&doc);
    for (i, root) in roots.iter().enumerate() {
        let text = read(&root.join("deps/setup.txt"));
        let want = format!(
            "{} {i} {} {batch} {}\n",
            i + 1,
            41000 + i * 10,
            root.canonicalize().unwrap().display()
        );
        assert_eq!(text, want, "{}", root.display());
        let log =
            common_dir(&env, &repo).join(format!("delegate/logs/{batch}/setup-{}.log", i + 1));
        assert_eq!(read(&log), format!("set up {}\n", i + 1));
    }
    // Its ignored output is no work: every task ends no_changes.
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let tasks = apply["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{apply:#}");
    for t in tasks {
        assert_eq!(t["status"], "no_changes", "{apply:#}");
    }
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
}

#[test]
fn a_failing_setup_undoes_the_prepare() {
    let env = Env::new();
    let repo = repo_with_setup(
        &env,
        r#"mkdir -p deps; echo broken >&2; [ "$GIT_DELEGATE_TASK" != 2 ] || exit 7"#,
    );
    let run = expect_error(
        &env,
        &repo,
        &["prepare", "-n", "3"],
        3,
        "delegate::setup_failed",
    );
    let err = &run.json()["error"];
    let message = err["message"].as_str().unwrap();
    assert_has(message, "task 2");
    assert_has(message, "status 7");
    let log = err["log"].as_str().unwrap();
    assert_has(message, log);
    assert!(log.ends_with("setup-2.log"), "{log}");
    assert_eq!(read(std::path::Path::new(log)), "broken\n");
    assert_eq!(err["task"], "2");
    assert_nothing_created(&env, &repo);
}

#[test]
fn run_uses_it() {
    let env = Env::new();
    let repo = repo_with_setup(&env, RECORD);
    // The worker sees what setup made, and proposes one file.
    let doc = env
        .delegate(
            &repo,
            [
                "run",
                "-n",
                "2",
                "--json",
                "--",
                "sh",
                "-c",
                r#"cp deps/setup.txt "seen-$GIT_DELEGATE_TASK.txt""#,
            ],
        )
        .expect(0)
        .json();
    let batch = doc["batch"]["id"]
        .as_str()
        .or(doc["batch"].as_str())
        .map(str::to_string);
    for t in ["1", "2"] {
        let seen = read(&repo.join(format!("seen-{t}.txt")));
        assert!(seen.starts_with(&format!("{t} ")), "{seen}");
        if let Some(b) = &batch {
            assert_has(&seen, b.as_str());
        }
    }
    assert!(!repo.join("deps").exists());
}

#[test]
fn a_failing_setup_fails_run_before_any_worker() {
    let env = Env::new();
    let repo = repo_with_setup(&env, "exit 3");
    expect_error(
        &env,
        &repo,
        &["run", "-n", "2", "--", "sh", "-c", "touch worker-ran"],
        3,
        "delegate::setup_failed",
    );
    assert_nothing_created(&env, &repo);
    assert!(!repo.join("worker-ran").exists());
}

/// A task's cwd missing from its workspace is made by a walk from the
/// workspace root that never follows a symlink (design §3.18): a setup
/// (standing in for a worker) that replaces the cwd's parent by a symlink
/// to an outside folder makes run's worker fail, naming the symlink, and
/// nothing is created outside.
#[test]
fn a_cwd_parent_replaced_by_a_symlink_is_never_followed_to_make_the_cwd() {
    let (env, repo) = Env::with_repo("r");
    commit_files(&env, &repo, &[("sub/f.txt", "f\n")], "sub");
    // The caller's folder holds no file: the workspace has no such folder.
    std::fs::create_dir_all(repo.join("sub/deeper")).unwrap();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let setup = format!(
        "cd \"$GIT_DELEGATE_WORKSPACE\" && rm -rf sub && ln -s '{}' sub",
        outside.display()
    );
    config(&env, &repo, &format!("[workspace]\nsetup = {setup:?}\n"));
    let run = env.delegate(
        &repo.join("sub/deeper"),
        ["run", "--no-apply", "--json", "--", "true"],
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "something was made outside: {} {}",
        run.stdout,
        run.stderr
    );
    let doc = run.json();
    let log =
        std::fs::read_to_string(doc["workers"][0]["log"].as_str().unwrap()).unwrap_or_default();
    let text = format!("{}{}{log}", run.stdout, run.stderr);
    assert!(
        text.contains("is a symbolic link now") && text.contains("rm "),
        "{text}"
    );
}

/// Ctrl-C while `workspace.setup` runs (design §3.20, §3.1 step 5): every
/// setup command's process group is stopped (what it would write after its
/// sleep never appears, no process of its group is left), and the prepare
/// is undone: no private ref, no workspace, no worktree registration; exit
/// 3, `delegate::interrupted`.
#[test]
fn ctrl_c_during_setup_stops_every_setup_group_and_undoes_the_prepare() {
    let env = Env::new();
    let marks = env.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    // Each setup records its group (its shell's pid), then writes a marker
    // once its sleep is over; it ignores SIGTERM's default in a child too.
    let setup = format!(
        r#"echo $$ > "{m}/pid-$GIT_DELEGATE_TASK"; (trap "" TERM; sleep 5; touch "{m}/late-child-$GIT_DELEGATE_TASK") & sleep 5; touch "{m}/late-$GIT_DELEGATE_TASK""#,
        m = marks.display()
    );
    let repo = repo_with_setup(&env, &setup);
    let child = spawn_piped(&env, &repo, &["prepare", "-n", "2", "--json"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // A file can exist before the shell has written its pid: read until both parse.
    let group_of = |f: &str| -> Option<i32> {
        std::fs::read_to_string(marks.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let groups: Vec<i32> = loop {
        if let (Some(a), Some(b)) = (group_of("pid-1"), group_of("pid-2")) {
            break vec![a, b];
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the setups never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let run = crate::common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(
        crate::common::fixtures::error_code(&run),
        "delegate::interrupted"
    );
    // No process of any setup group is left (zombies aside, none of ours).
    for g in &groups {
        let alive = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                return false;
            };
            let rest = crate::common::procs::stat_fields(&stat);
            rest.len() > 2 && rest[0] != "Z" && rest[2] == g.to_string()
        });
        assert!(!alive, "a process of setup group {g} is still running");
    }
    let names: Vec<String> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("late"))
        .collect();
    assert!(names.is_empty(), "a setup ran on: {names:?}");
    assert!(
        env.private_refs(&repo).is_empty(),
        "{:?}",
        env.private_refs(&repo)
    );
    assert_nothing_created(&env, &repo);
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
}

/// The processes whose environment names batch `id` (`GIT_DELEGATE_BATCH`).
fn marked(id: &str) -> Vec<u32> {
    let needle = format!("GIT_DELEGATE_BATCH={id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == needle.as_bytes()))
        })
        .collect()
}

/// Kills every process still marked with batch `.0` when dropped: no
/// setup of a test outlives it.
struct Reap(String);
impl Drop for Reap {
    fn drop(&mut self) {
        for pid in marked(&self.0) {
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
}

/// A prepare of two tasks killed with SIGKILL while its setup commands run
/// (design §3.20, §3.15 "Killed commands"): they outlive it and go on
/// writing into its workspaces (a child that ignores SIGTERM among them).
/// Returns the batch id and the reaper of its processes.
fn killed_prepare_with_running_setups(env: &Env) -> (std::path::PathBuf, String, Reap) {
    let marks = env.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    // Each setup writes files into its workspace without end, in a child
    // that ignores SIGTERM too, and says once it has begun.
    let setup = format!(
        r#"mkdir -p deps; (trap "" TERM; i=0; while :; do i=$((i+1)); echo $i > deps/c$i; sleep 0.01; done) & touch "{m}/began-$GIT_DELEGATE_TASK"; i=0; while :; do i=$((i+1)); echo $i > deps/p$i; sleep 0.01; done"#,
        m = marks.display()
    );
    let repo = repo_with_setup(env, &setup);
    let mut child = spawn_piped(env, &repo, &["prepare", "-n", "2", "--json"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(marks.join("began-1").exists() && marks.join("began-2").exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the setups never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let batch = env.delegate(&repo, ["status", "--json"]).expect(0).json()["batches"][0]["batch"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!marked(&batch).is_empty(), "the setups died with prepare");
    let reap = Reap(batch.clone());
    (repo, batch, reap)
}

/// The pids a `stopped_processes` list names.
fn pids_of(list: &serde_json::Value) -> std::collections::BTreeSet<u32> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|p| {
            assert!(p["command"].as_str().is_some_and(|c| !c.is_empty()), "{p}");
            p["pid"].as_u64().unwrap() as u32
        })
        .collect()
}

/// A killed prepare's setup commands (see above): `gc` stops every one of
/// them first (their environment names the batch), then removes the batch
/// whole: no "Directory not empty", nothing left, no setup process
/// running; and it says which it stopped, as PID and command, in its text
/// and `stopped_processes`. `gc --dry-run` before it names the same batch
/// and the processes it would stop, and changes nothing.
#[test]
fn setup_commands_of_a_killed_prepare_are_stopped_by_gc_before_it_removes_the_batch() {
    let env = Env::new();
    let (repo, batch, _reap) = killed_prepare_with_running_setups(&env);
    // The setup shells themselves run throughout (their `sleep`s come and go).
    let before: std::collections::BTreeSet<u32> = marked(&batch).into_iter().collect();

    let text = env.delegate(&repo, ["gc", "--dry-run"]).expect(0).stdout;
    assert_has(&text, "would stop its setup commands that still ran:");
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["incomplete"], serde_json::json!([batch]), "{dry:#}");
    let lasting: std::collections::BTreeSet<u32> = marked(&batch)
        .into_iter()
        .filter(|p| before.contains(p))
        .collect();
    assert!(lasting.len() >= 4, "gc --dry-run stopped them: {lasting:?}");
    for pid in &lasting {
        assert_has(&text, &format!("    {pid} "));
    }
    let would = pids_of(&dry["stopped_processes"]);
    assert!(lasting.is_subset(&would), "{lasting:?} {dry:#}");
    for p in dry["stopped_processes"].as_array().unwrap() {
        assert_eq!(p["batch"], batch.as_str(), "{dry:#}");
    }

    let run = env.delegate(&repo, ["gc", "--json"]).expect(0);
    let doc = run.json();
    assert_eq!(doc["incomplete"], serde_json::json!([batch]), "{doc:#}");
    assert!(marked(&batch).is_empty(), "a setup process still runs");
    let stopped = pids_of(&doc["stopped_processes"]);
    assert!(lasting.is_subset(&stopped), "{lasting:?} {doc:#}");
    assert!(env.private_refs(&repo).is_empty());
    assert_nothing_created(&env, &repo);
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
}

/// `drop` of a batch whose prepare was killed stops its setup commands
/// too, and names them, as PID and command, in its text and its
/// document's `stopped_processes` (design §3.20).
#[test]
fn drop_names_the_setup_commands_of_a_killed_prepare_it_stopped() {
    let env = Env::new();
    let (repo, batch, _reap) = killed_prepare_with_running_setups(&env);
    let before: std::collections::BTreeSet<u32> = marked(&batch).into_iter().collect();
    let doc = env
        .delegate(&repo, ["drop", &batch, "--json"])
        .expect(0)
        .json();
    assert!(marked(&batch).is_empty(), "a setup process still runs");
    let stopped = pids_of(&doc["stopped_processes"]);
    // The two setup shells and their two children ran throughout.
    assert!(
        stopped.intersection(&before).count() >= 4,
        "{before:?} {doc:#}"
    );
    assert_nothing_created(&env, &repo);

    // In the text too.
    let env = Env::new();
    let (repo, batch, _reap) = killed_prepare_with_running_setups(&env);
    let text = env.delegate(&repo, ["drop", &batch]).expect(0).stdout;
    assert_has(&text, "stopped its setup commands that still ran:");
    assert!(marked(&batch).is_empty(), "a setup process still runs");
}
