//! Before removing a workspace, prove it (design §3.18): a worker still
//! running outside its workspace and writing into it by absolute path
//! while apply (or drop, gc, the pool) reads and removes it loses no
//! successful write. The workspace is moved aside first (a write by path
//! then fails), compared with what was read, and kept when it changed: its
//! task stays open (`changed_after_read`), and the next apply lands the
//! rest. A command killed between moving it aside and back leaves it where
//! the next command puts it back, and no deleter takes it meanwhile.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::files::read;
use crate::common::fixtures::{
    id, prepare, set_config, strs, task, task_root, wait_stale, wait_until, workspace_base,
};
use crate::common::{assert_has, Env, Run};

/// A background writer, outside the workspace (its cwd is the test's
/// folder), writing `late-<n>.txt` holding `n` into `ws` by absolute path
/// as fast as it can, and logging each `n` whose write succeeded.
struct Writer {
    child: Child,
    log: PathBuf,
    stop: PathBuf,
}

impl Writer {
    fn start(env: &Env, ws: &Path) -> Writer {
        let log = env.path().join("writes.log");
        let stop = env.path().join("stop-writing");
        let child = Command::new("bash")
            .current_dir(env.path())
            .arg("-c")
            .arg(
                r#"i=0
while [ ! -e "$2" ]; do
  if printf '%s\n' "$i" > "$1/late-$i.txt" 2>/dev/null; then printf '%s\n' "$i" >> "$3"; fi
  i=$((i+1))
done"#,
            )
            .arg("writer")
            .arg(ws)
            .arg(&stop)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let w = Writer { child, log, stop };
        wait_until("the writer's first writes", || w.written().len() >= 20);
        w
    }

    /// The numbers whose write succeeded so far.
    fn written(&self) -> Vec<u64> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect()
    }

    fn finish(mut self) -> Vec<u64> {
        std::fs::write(&self.stop, "").unwrap();
        self.child.wait().unwrap();
        self.written()
    }
}

/// `apply --json` until the batch is done (at most `tries` times): each
/// document.
fn apply_until_done(env: &Env, repo: &Path, tries: usize) -> Vec<Value> {
    let mut docs = Vec::new();
    for _ in 0..tries {
        let run = env.delegate(repo, ["apply", "--json"]);
        assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
        let doc = run.json();
        let open = doc["batch_open"].as_bool().unwrap();
        docs.push(doc);
        if !open {
            return docs;
        }
    }
    panic!("the batch is still open after {tries} applies: {docs:#?}");
}

/// Nothing is left aside in the trash of the repository's workspace folder.
fn nothing_aside(env: &Env, repo: &Path) {
    let trash = workspace_base(env, repo).join(".trash");
    let aside: Vec<String> = std::fs::read_dir(&trash)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".aside"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(aside, Vec::<String>::new());
}

#[test]
fn a_worker_writing_by_path_while_apply_runs_loses_no_successful_write() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    let writer = Writer::start(&env, &ws);
    let first = env.delegate(&repo, ["apply", "--json"]);
    assert!(first.code == 0 || first.code == 1, "{}", first.stderr);
    let first = first.json();
    // Still writing after apply returned: what it writes now goes into the
    // kept workspace, or fails where there is none.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let written = writer.finish();
    if first["batch_open"] == true {
        let t = task(&first, "1");
        assert_eq!(t["status"], "open", "{first:#}");
        assert_eq!(t["reason"], "changed_after_read", "{first:#}");
        assert!(strs(&t["applied_paths"]).contains(&"README"), "{first:#}");
        assert_eq!(t["workspace"], ws.to_str().unwrap());
        apply_until_done(&env, &repo, 3);
    }
    // Every write the worker saw succeed is in the source now.
    assert!(written.len() >= 20);
    let landed: Vec<u64> = std::fs::read_dir(&repo)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("late-")?
                .strip_suffix(".txt")?
                .parse()
                .ok()
        })
        .collect();
    let lost: Vec<u64> = written
        .iter()
        .copied()
        .filter(|n| !landed.contains(n))
        .collect();
    assert_eq!(
        lost,
        Vec::<u64>::new(),
        "{} of {} successful writes lost",
        lost.len(),
        written.len()
    );
    for n in &written {
        assert_eq!(read(&repo.join(format!("late-{n}.txt"))), format!("{n}\n"));
    }
    assert_eq!(read(&repo.join("README")), "task edit\n");
    assert!(!ws.exists());
    nothing_aside(&env, &repo);
}

/// `git delegate ARGS` paused at each of `points` in turn (test-only
/// `GIT_DELEGATE_TEST_PAUSE`): at each, `at(point)` runs, then it goes on
/// (or, when `at` returns false, it is killed there). Its output.
fn paused(
    env: &Env,
    dir: &Path,
    args: &[&str],
    points: &[&str],
    mut at: impl FnMut(&str) -> bool,
) -> std::process::Output {
    let paused = env.path().join("paused");
    let _ = std::fs::remove_file(&paused);
    let mut child = env
        .delegate_cmd(dir)
        .args(args)
        .env("GIT_DELEGATE_TEST_PAUSE", points.join(","))
        .env("GIT_DELEGATE_TEST_PAUSED", &paused)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for point in points {
        wait_until(point, || {
            if let Ok(Some(status)) = child.try_wait() {
                let out = child.stderr.take().map(std::io::read_to_string);
                panic!("ended ({status}) before {point}: {out:?}");
            }
            std::fs::read_to_string(&paused)
                .unwrap_or_default()
                .lines()
                .any(|l| l == *point)
        });
        if !at(point) {
            child.kill().unwrap();
            return child.wait_with_output().unwrap();
        }
        std::fs::remove_file(&paused).unwrap();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_write_after_apply_read_the_workspace_keeps_it_and_the_next_apply_lands_it() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    std::fs::write(task_root(&doc, 1).join("two.txt"), "two\n").unwrap();
    // After apply read and landed task 1's work, before its workspace
    // goes, its worker writes a file by absolute path.
    let out = paused(
        &env,
        &repo,
        &["apply", "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let run = Run::from(out).expect(1);
    let doc1 = run.json();
    let t = task(&doc1, "1");
    assert_eq!(t["status"], "open", "{doc1:#}");
    assert_eq!(t["reason"], "changed_after_read", "{doc1:#}");
    assert_eq!(strs(&t["applied_paths"]), ["README"], "{doc1:#}");
    assert_eq!(t["workspace"], ws.to_str().unwrap());
    assert_has(t["message"].as_str().unwrap(), "lands the rest");
    assert_eq!(task(&doc1, "2")["status"], "applied");
    assert_eq!(doc1["batch_open"], true);
    // What was read landed; the late file is in the kept workspace, which is
    // still the task's (registered, locked).
    assert_eq!(read(&repo.join("README")), "task edit\n");
    assert!(!repo.join("late.txt").exists());
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    assert!(env
        .git(&repo, ["worktree", "list", "--porcelain"])
        .contains(&format!("worktree {}\nHEAD", ws.display())));
    let status = env
        .delegate(&repo, ["status", "--json", &id(&doc)])
        .expect(0)
        .json();
    let t = &status["batches"][0]["tasks"][0];
    assert_eq!(t["state"], "open", "{status:#}");
    assert_eq!(t["reason"], "changed_after_read", "{status:#}");
    assert_eq!(t["changed_paths"], 1, "only the rest is left: {status:#}");
    // The human text says what to do, and doing it works.
    let human = env.delegate(&repo, ["apply", "--dry-run"]).expect(0);
    assert_has(&human.stdout, "would write 1 path");
    let doc2 = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let t = task(&doc2, "1");
    assert_eq!(t["status"], "applied", "{doc2:#}");
    assert_eq!(
        strs(&t["applied_paths"]),
        ["late.txt"],
        "only the rest: {doc2:#}"
    );
    assert_eq!(read(&repo.join("late.txt")), "written late\n");
    assert_eq!(read(&repo.join("README")), "task edit\n");
    assert_eq!(doc2["batch_open"], false);
    assert!(!ws.exists());
    nothing_aside(&env, &repo);
}

#[test]
fn the_human_text_of_a_workspace_written_after_it_was_read_says_what_to_do() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    let out = paused(&env, &repo, &["apply"], &["prove-before-aside"], |_| {
        std::fs::write(ws.join("late.txt"), "late\n").unwrap();
        true
    });
    let run = Run::from(out).expect(1);
    assert_has(&run.stdout, "changed_after_read");
    assert_has(
        &run.stdout,
        "its worker wrote into its workspace after apply read it",
    );
    let hint = format!("`git delegate apply {}` lands the rest", &id(&doc)[..8]);
    assert_has(&run.stdout, &hint);
    // Followed literally, the hint lands the rest.
    let cmd = crate::common::printed_command(&run.stdout, "git delegate apply");
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read(&repo.join("late.txt")), "late\n");
    assert!(!ws.exists());
}

#[test]
fn a_write_by_path_after_the_workspace_was_moved_aside_fails_and_a_kill_there_loses_nothing() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    let trash = workspace_base(&env, &repo).join(".trash");
    let mut aside = PathBuf::new();
    // A write just before the move aside lands in the workspace; one
    // after it fails (no path leads there); apply is killed there.
    let out = paused(
        &env,
        &repo,
        &["apply", "--json"],
        &["prove-before-aside", "prove-aside"],
        |point| {
            if point == "prove-before-aside" {
                std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
                return true;
            }
            assert!(std::fs::write(ws.join("later.txt"), "x").is_err());
            assert!(!ws.exists());
            let names: Vec<PathBuf> = std::fs::read_dir(&trash)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".aside"))
                .collect();
            assert_eq!(names.len(), 1, "{names:?}");
            aside = names[0].clone();
            false
        },
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9));
    assert_eq!(read(&repo.join("README")), "task edit\n");
    // No deleter takes what was not proven: the background deleter, run
    // on that trash, leaves it whole.
    env.delegate_cmd(&repo)
        .arg("purge-trash")
        .arg(&trash)
        .status()
        .unwrap();
    assert_eq!(read(&aside.join("late.txt")), "written late\n");
    // The next command puts it back at its place; the apply after proves it
    // again: it changed since apply read it, so its task opens again, and
    // the next apply lands the rest.
    let doc1 = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert!(!aside.exists());
    let t = task(&doc1, "1");
    assert_eq!(t["status"], "open", "{doc1:#}");
    assert_eq!(t["reason"], "changed_after_read", "{doc1:#}");
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    let doc2 = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(strs(&task(&doc2, "1")["applied_paths"]), ["late.txt"]);
    assert_eq!(read(&repo.join("late.txt")), "written late\n");
    assert!(!ws.exists());
    nothing_aside(&env, &repo);
}

#[test]
fn a_kill_after_the_move_aside_of_an_unchanged_workspace_is_finished_by_the_next_apply() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    let out = paused(&env, &repo, &["apply"], &["prove-aside"], |_| false);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9));
    // gc first: it puts the workspace back and leaves the live batch alone.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    assert_eq!(read(&ws.join("README")), "task edit\n");
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(task(&doc, "1")["status"], "applied", "{doc:#}");
    assert_eq!(doc["batch_open"], false);
    assert!(!ws.exists());
    nothing_aside(&env, &repo);
}

#[test]
fn a_workspace_written_into_before_it_is_parked_is_kept_out_of_the_pool() {
    let (env, repo) = Env::with_repo("proj");
    set_config(&repo, "[workspace]\npool = 1\n");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    let out = paused(
        &env,
        &repo,
        &["apply", "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let doc1 = Run::from(out).expect(1).json();
    assert_eq!(task(&doc1, "1")["reason"], "changed_after_read", "{doc1:#}");
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    // Not idle: its task's again (a workspace of the pool keeps its path).
    let idle = || {
        env.git(&repo, ["worktree", "list", "--porcelain"])
            .matches("locked git-delegate pool")
            .count()
    };
    assert_eq!(idle(), 0);
    let doc2 = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(strs(&task(&doc2, "1")["applied_paths"]), ["late.txt"]);
    assert_eq!(read(&repo.join("late.txt")), "written late\n");
    // Proven now, it goes idle in the pool, where it is.
    assert_eq!(idle(), 1);
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
}

#[test]
fn a_discarded_workspace_written_into_after_it_was_read_is_kept_as_a_worktree() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "given up\n").unwrap();
    let out = paused(
        &env,
        &repo,
        &["apply", "--discard", "1", "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let doc1 = Run::from(out).expect(0).json();
    let t = task(&doc1, "1");
    assert_eq!(t["status"], "discarded", "{doc1:#}");
    assert_eq!(t["reason"], "changed_after_read", "{doc1:#}");
    assert_eq!(t["workspace"], ws.to_str().unwrap());
    // What was read is kept as its proposal; the rest is in the workspace,
    // an ordinary (unlocked) worktree now.
    let r = t["proposal_ref"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:README")]),
        "given up\n"
    );
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}\n", ws.display())),
        "{list}"
    );
    assert!(!list.contains("locked"), "{list}");
}

#[test]
fn drop_keeps_a_workspace_written_into_after_it_read_it_and_the_batch_with_it() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    let out = paused(
        &env,
        &repo,
        &["drop", &batch, "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let run = Run::from(out).expect(1);
    let d = run.json();
    assert_eq!(d["dropped"], false, "{d:#}");
    assert_eq!(d["changed_after_read"], serde_json::json!(["1"]), "{d:#}");
    assert_eq!(d["unapplied"], serde_json::json!(["1"]), "{d:#}");
    assert_has(&run.stderr, "written into after drop read it");
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    // The batch stays, its work with it: a plain drop now refuses over it.
    let again = env
        .delegate(&repo, ["drop", &batch, "--json"])
        .expect(1)
        .json();
    assert_eq!(again["unapplied"], serde_json::json!(["1"]), "{again:#}");
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(strs(&task(&doc, "1")["applied_paths"]), ["late.txt"]);
    assert_eq!(read(&repo.join("late.txt")), "written late\n");
}

#[test]
fn gc_keeps_a_stale_workspace_written_into_after_its_rescue_and_rescues_it_later() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "rescue me\n").unwrap();
    wait_stale(&env, &repo, &batch);
    let out = paused(
        &env,
        &repo,
        &["gc", "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let gc = Run::from(out).expect(1).json();
    assert_eq!(gc["batches"], serde_json::json!([]), "{gc:#}");
    let skipped = gc["skipped"][0]["message"].as_str().unwrap();
    assert_has(skipped, "written into after gc read it");
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    assert_eq!(read(&ws.join("README")), "rescue me\n");
    // Once nothing writes there, the next gc rescues all of it.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([batch]), "{gc:#}");
    let r = gc["rescued"][0]["ref"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:late.txt")]),
        "written late\n"
    );
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:README")]),
        "rescue me\n"
    );
    assert!(!ws.exists());
}

#[test]
fn a_workspace_kept_for_a_late_write_goes_back_though_the_others_went() {
    // Task 1 is written into after apply read it; task 2's workspace is
    // proven and removed; task 3, discarded, had its workspace removed by
    // hand, so its clean-up finds the batch folder empty while the other
    // two are aside (and removes it).
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "task edit\n").unwrap();
    std::fs::remove_dir_all(task_root(&doc, 2)).unwrap();
    let out = paused(
        &env,
        &repo,
        &["apply", "--discard", "3", "--json"],
        &["prove-before-aside"],
        |_| {
            std::fs::write(ws.join("late.txt"), "written late\n").unwrap();
            true
        },
    );
    let doc1 = Run::from(out).expect(1).json();
    assert_eq!(task(&doc1, "1")["reason"], "changed_after_read", "{doc1:#}");
    assert_eq!(task(&doc1, "2")["status"], "no_changes", "{doc1:#}");
    assert_eq!(task(&doc1, "3")["status"], "discarded", "{doc1:#}");
    assert_eq!(read(&ws.join("late.txt")), "written late\n");
    assert!(!task_root(&doc, 1).exists());
    nothing_aside(&env, &repo);
    let doc2 = env
        .delegate(&repo, ["apply", "--only", "1", "--json"])
        .expect(0)
        .json();
    assert_eq!(strs(&task(&doc2, "1")["applied_paths"]), ["late.txt"]);
    assert_eq!(read(&repo.join("late.txt")), "written late\n");
}
