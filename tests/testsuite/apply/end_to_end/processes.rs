//! Processes still running in a workspace at apply (design §3.2 step 4):
//! a background one is stopped, one on a terminal fails its task, one
//! ignoring SIGTERM is killed, `--processes refuse` and `terminate`, and
//! what apply says it stopped.

use super::*;
use crate::common::assert_has;

fn spawn_sleeper(dir: &Path) -> std::process::Child {
    std::process::Command::new("setsid")
        .args(["sleep", "300"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn setsid sleep")
}

fn cwd_is(pid: u32, dir: &Path) -> bool {
    std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c.starts_with(dir))
}

/// A `spawn_sleeper` child sits in `dir` and has become `sleep` (it is
/// `setsid` until it execs, and apply names a process by its command line).
fn sleeper_in(pid: u32, dir: &Path) -> bool {
    cwd_is(pid, dir)
        && std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| c.trim_end() == "sleep")
}

#[test]
fn a_background_process_in_a_workspace_is_stopped_and_the_task_applies() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::create_dir(ws[0].join("sub")).unwrap();
    std::fs::write(ws[0].join("sub/work.txt"), "done\n").unwrap();
    let mut child = spawn_sleeper(&ws[0].join("sub"));
    let pid = child.id();
    wait_until("the sleeper to enter the workspace", || {
        sleeper_in(pid, &std::fs::canonicalize(&ws[0]).unwrap())
    });
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("sub/work.txt")), "done\n");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the sleeper was not stopped: {status:?}");
}

#[test]
fn refuse_policy_fails_the_task_and_leaves_the_process_alone() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[apply]\nstop-processes = \"refuse\"\n",
    )
    .unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    std::fs::write(ws[1].join("b.txt"), "b\n").unwrap();
    let mut child = spawn_sleeper(&ws[0]);
    let pid = child.id();
    wait_until("the sleeper to enter the workspace", || {
        sleeper_in(pid, &std::fs::canonicalize(&ws[0]).unwrap())
    });
    let out = apply(&env, &repo, &[], 1);
    let t1 = task(&out, "1");
    assert_eq!(t1["status"], "failed");
    assert_eq!(t1["reason"], "processes_running");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the process was signalled"
    );
    assert!(!repo.join("a.txt").exists());
    assert!(ws[0].join("a.txt").exists());
    child.kill().unwrap();
    child.wait().unwrap();
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
}

#[test]
fn a_process_that_ignores_sigterm_is_killed() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("w.txt"), "w\n").unwrap();
    // setsid: a background process even when the tests run from a terminal.
    // It says when its trap is set (a SIGTERM before that would end it).
    let ready = env.path().join("trap-set");
    let mut child = std::process::Command::new("setsid")
        .args([
            "sh",
            "-c",
            "trap '' TERM; : > \"$0\"; while :; do sleep 1; done",
        ])
        .arg(&ready)
        .current_dir(&ws[0])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until("the shell to set its trap", || {
        ready.exists() && cwd_is(pid, &std::fs::canonicalize(&ws[0]).unwrap())
    });
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "{status:?}");
}

/// A process attached to a terminal in `dir`: `script` opens a pty and runs
/// `sleep` on it (the sleep has a controlling terminal; `script` itself,
/// started by `setsid`, has none). Returns the `script` child and the pid
/// of the terminal `sleep`.
fn spawn_terminal_sleeper(dir: &Path) -> (std::process::Child, u32) {
    let child = std::process::Command::new("setsid")
        .args(["script", "-qc", "exec sleep 300", "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn script");
    let real = std::fs::canonicalize(dir).unwrap();
    let mut found = 0;
    wait_until("a terminal process to run in the workspace", || {
        found = terminal_pid_in(&real).unwrap_or(0);
        found != 0
    });
    (child, found)
}

fn terminal_pid_in(dir: &Path) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&p| cwd_is(p, dir) && tty_nr(p).is_some_and(|t| t != 0))
}

#[test]
fn a_terminal_process_fails_its_task_and_stays_alive_a_background_one_is_stopped_and_reported() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    std::fs::write(ws[1].join("b.txt"), "b\n").unwrap();
    let (mut term, term_pid) = spawn_terminal_sleeper(&ws[0]);
    let mut bg = spawn_sleeper(&ws[1]);
    let bg_pid = bg.id();
    wait_until("the sleeper to enter the workspace", || {
        sleeper_in(bg_pid, &std::fs::canonicalize(&ws[1]).unwrap())
    });

    // status lists the processes in each workspace, in JSON and for people.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let tasks = st["batches"][0]["tasks"].as_array().unwrap();
    assert!(
        tasks[0]["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == term_pid && p["command"] == "sleep 300"),
        "{st:#}"
    );
    assert_eq!(
        tasks[1]["processes"],
        serde_json::json!([{"pid": bg_pid, "command": "sleep 300"}]),
        "{st:#}"
    );
    let human = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(
        human.contains(&format!("{term_pid} sleep 300 (terminal)")),
        "{human}"
    );
    assert!(human.contains(&format!("{bg_pid} sleep 300\n")), "{human}");
    // A dry run lists both and says the terminal one would fail its task.
    let dry = apply(&env, &repo, &["--dry-run"], 1);
    let procs = task(&dry, "1")["processes"].as_array().unwrap().clone();
    assert!(
        procs
            .iter()
            .any(|p| p["pid"] == term_pid && p["command"] == "sleep 300"),
        "{dry:#}"
    );
    assert_eq!(task(&dry, "1")["reason"], "processes_running", "{dry:#}");
    let procs2 = task(&dry, "2")["processes"].as_array().unwrap().clone();
    assert_eq!(procs2.len(), 1, "{dry:#}");
    assert_eq!(procs2[0]["command"], "sleep 300");
    assert_eq!(task(&dry, "2")["status"], "applied", "{dry:#}");
    assert_eq!(dry["stopped_processes"], serde_json::json!([]));
    assert!(alive(term_pid) && alive(bg_pid));

    let out = apply(&env, &repo, &[], 1);
    let t1 = task(&out, "1");
    assert_eq!(t1["status"], "failed", "{out:#}");
    assert_eq!(t1["reason"], "processes_running");
    let msg = t1["message"].as_str().unwrap();
    assert!(msg.contains(&format!("{term_pid} sleep 300")), "{msg}");
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    let stopped = out["stopped_processes"].as_array().unwrap();
    assert_eq!(stopped.len(), 1, "{out:#}");
    assert_eq!(stopped[0]["task"], "2");
    assert_eq!(stopped[0]["pid"], bg_pid);
    assert_eq!(stopped[0]["command"], "sleep 300");
    let status = bg.wait().unwrap();
    assert!(!status.success(), "the background sleeper was not stopped");
    assert!(alive(term_pid), "the terminal process was killed");
    assert!(term.try_wait().unwrap().is_none(), "script ended");
    // Its work is kept, and applies once the terminal process is gone.
    assert!(!repo.join("a.txt").exists());
    assert!(ws[0].join("a.txt").exists());
    assert_eq!(read_lossy(&repo.join("b.txt")), "b\n");
    let _ = rustix_kill(term_pid);
    let _ = term.kill();
    let _ = term.wait();
    wait_until("the terminal sleeper to end", || !alive(term_pid));
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
}

#[test]
fn terminate_policy_stops_a_terminal_process_too_and_reports_it() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[apply]\nstop-processes = \"terminate\"\n",
    )
    .unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let (mut term, term_pid) = spawn_terminal_sleeper(&ws[0]);
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    let stopped = out["stopped_processes"].as_array().unwrap();
    assert!(
        stopped
            .iter()
            .any(|p| p["pid"] == term_pid && p["task"] == "1" && p["command"] == "sleep 300"),
        "{out:#}"
    );
    wait_until("the terminal sleeper to end", || !alive(term_pid));
    let _ = term.kill();
    let _ = term.wait();
}

fn rustix_kill(pid: u32) -> std::io::Result<std::process::ExitStatus> {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
}

#[test]
fn apply_says_which_processes_it_stopped() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let mut child = spawn_sleeper(&ws[0]);
    let pid = child.id();
    wait_until("the sleeper to enter the workspace", || {
        sleeper_in(pid, &std::fs::canonicalize(&ws[0]).unwrap())
    });
    let dry = env.delegate(&repo, ["apply", "--dry-run"]).expect(0).stdout;
    assert_has(&dry, "processes running inside its workspace:");
    assert!(dry.contains(&format!("        {pid} sleep 300\n")), "{dry}");
    let out = env.delegate(&repo, ["apply"]).expect(0).stdout;
    assert_has(&out, "stopped processes inside its workspace:");
    assert!(out.contains(&format!("        {pid} sleep 300\n")), "{out}");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the sleeper was not stopped: {status:?}");
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
}
