//! `git delegate refresh` and `apply --refresh-conflicts` (design §3.12):
//! conflicts go back to the worker, as after `git merge`, in its own
//! workspace; apply refuses unresolved ones and merges a refreshed task
//! from its own base.

use crate::common::fixtures::id;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::read;
use crate::common::fixtures::{field_strs, prepare, roots};
use crate::common::with_fault;
use crate::common::Env;

const LINES: &str = "one\ntwo\nthree\nfour\nfive\n";

/// A repository with `a.txt` (five lines) and `b.txt`, a batch of two tasks.
fn setup(env: &Env) -> (PathBuf, Vec<PathBuf>) {
    let repo = env.repo("proj");
    std::fs::write(repo.join("a.txt"), LINES).unwrap();
    std::fs::write(repo.join("b.txt"), "bee\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(env, &repo, &["-n", "2"]);
    let roots = roots(&doc);
    (repo, roots)
}

/// Both tasks rewrite line 3; task 2 also adds a file of its own.
fn conflicting_work(ws: &[PathBuf]) {
    std::fs::write(ws[0].join("a.txt"), "one\ntwo\nTHREE-1\nfour\nfive\n").unwrap();
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nTHREE-2\nfour\nfive\n").unwrap();
    std::fs::write(ws[1].join("mine.txt"), "task two\n").unwrap();
}

/// What `git merge-file --diff3` writes for the same three versions and
/// labels: the oracle for the markers.
fn git_merge_file(env: &Env, dir: &Path, ours: &str, base: &str, theirs: &str) -> String {
    let d = env.path().join("mf");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("ours"), ours).unwrap();
    std::fs::write(d.join("base"), base).unwrap();
    std::fs::write(d.join("theirs"), theirs).unwrap();
    let out = env
        .git_cmd(dir)
        .args([
            "merge-file",
            "-p",
            "--diff3",
            "-L",
            "task",
            "-L",
            "base",
            "-L",
            "source",
        ])
        .arg(d.join("ours"))
        .arg(d.join("base"))
        .arg(d.join("theirs"))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn apply_refresh_conflicts_hands_back_then_resolved_task_lands() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    conflicting_work(&ws);
    let doc = env
        .delegate(&repo, ["apply", "--refresh-conflicts", "--json"])
        .expect(1)
        .json();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["status"], "applied");
    assert_eq!(tasks[1]["status"], "conflict");
    assert_eq!(tasks[1]["reason"], "merge_conflict");
    assert_eq!(read(&repo.join("a.txt")), "one\ntwo\nTHREE-1\nfour\nfive\n");
    // The refresh that followed, in the same document.
    let refreshed = doc["refreshed"].as_array().unwrap();
    assert_eq!(refreshed.len(), 1);
    assert_eq!(refreshed[0]["name"], "2");
    assert_eq!(refreshed[0]["state"], "conflicted");
    assert_eq!(
        refreshed[0]["conflicted_paths"],
        serde_json::json!(["a.txt"])
    );
    let base = refreshed[0]["base"].as_str().unwrap().to_string();

    // Markers exactly as git writes diff3 with those labels.
    let expected = git_merge_file(
        &env,
        &repo,
        "one\ntwo\nTHREE-2\nfour\nfive\n",
        LINES,
        "one\ntwo\nTHREE-1\nfour\nfive\n",
    );
    assert_eq!(
        expected,
        "one\ntwo\n<<<<<<< task\nTHREE-2\n||||||| base\nthree\n=======\nTHREE-1\n>>>>>>> source\nfour\nfive\n"
    );
    assert_eq!(read(&ws[1].join("a.txt")), expected);
    // The worker's own file is still there, untouched.
    assert_eq!(read(&ws[1].join("mine.txt")), "task two\n");
    // Unmerged entries: git says both modified.
    let st = env.git(&ws[1], ["status", "--porcelain"]);
    assert!(st.lines().any(|l| l == "UU a.txt"), "{st}");
    let stages = env.git(&ws[1], ["ls-files", "-u"]);
    assert_eq!(stages.lines().count(), 3, "{stages}");
    // HEAD (detached) at the new base, whose tree is the source now.
    assert_eq!(env.git(&ws[1], ["rev-parse", "HEAD"]).trim(), base);
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{base}^{{tree}}")]),
        env.git(
            &repo,
            [
                "rev-parse",
                &format!(
                    "refs/pi-delegate/batches/{}/tasks/2/base^{{tree}}",
                    doc["batch"].as_str().unwrap()
                )
            ]
        )
    );
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{base}^{{tree}}")])
            .trim(),
        env.oracle_tree(&repo)
    );
    let sym = env
        .git_cmd(&ws[1])
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .unwrap();
    assert!(!sym.status.success(), "HEAD must stay detached");

    // status lists the conflicted task with its files.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let t2 = &st["batches"][0]["tasks"][1];
    assert_eq!(t2["state"], "conflicted");
    assert_eq!(t2["conflicted_paths"], serde_json::json!(["a.txt"]));
    assert_eq!(t2["base"], base.as_str());
    let human = env.delegate(&repo, ["status"]).expect(0);
    assert_has(&human.stdout, "conflicted");
    assert_has(&human.stdout, "a.txt");

    // Unresolved: apply refuses, nothing written.
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["status"], "conflict");
    assert_eq!(doc["tasks"][0]["reason"], "unresolved_conflicts");
    assert_eq!(doc["tasks"][0]["conflicts"][0]["path"], "a.txt");
    assert_eq!(read(&repo.join("a.txt")), "one\ntwo\nTHREE-1\nfour\nfive\n");
    assert!(!repo.join("mine.txt").exists());

    // The worker resolves (edit, then git add); apply lands it.
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nTHREE-1+2\nfour\nfive\n").unwrap();
    env.git(&ws[1], ["add", "a.txt"]);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(
        read(&repo.join("a.txt")),
        "one\ntwo\nTHREE-1+2\nfour\nfive\n"
    );
    assert_eq!(read(&repo.join("mine.txt")), "task two\n");
    assert_eq!(doc["batch_open"], false);
    assert!(env
        .private_refs(&repo)
        .iter()
        .all(|r| !r.contains("/batches/")));
}

#[test]
fn markers_left_after_git_add_are_refused() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    conflicting_work(&ws);
    env.delegate(&repo, ["apply", "--refresh-conflicts"])
        .expect(1);
    // `git add` with the markers still in: no unmerged entry, but the file
    // still holds refresh's marker lines.
    env.git(&ws[1], ["add", "a.txt"]);
    assert_eq!(env.git(&ws[1], ["ls-files", "-u"]), "");
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["reason"], "unresolved_conflicts");
    assert_eq!(doc["tasks"][0]["conflicts"][0]["path"], "a.txt");
    assert_eq!(read(&repo.join("a.txt")), "one\ntwo\nTHREE-1\nfour\nfive\n");
    // Refresh leaves such a task alone.
    let doc = env
        .delegate(&repo, ["refresh", "2", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["refreshed"], false);
    assert_eq!(doc["tasks"][0]["state"], "conflicted");
}

#[test]
fn refresh_without_conflict_moves_the_base_and_diff_shows_only_the_worker() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    // Task 1 edits line 1 and lands; the user edits b.txt meanwhile.
    std::fs::write(ws[0].join("a.txt"), "ONE\ntwo\nthree\nfour\nfive\n").unwrap();
    env.delegate(&repo, ["apply", "--only", "1"]).expect(0);
    std::fs::write(repo.join("b.txt"), "bee\nuser\n").unwrap();
    // Task 2 edits line 5 and stages part of its work.
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nthree\nfour\nFIVE\n").unwrap();
    std::fs::write(ws[1].join("new.txt"), "new\n").unwrap();
    env.git(&ws[1], ["add", "new.txt"]);

    // From inside the workspace, no argument: that task.
    let doc = env.delegate(&ws[1], ["refresh", "--json"]).expect(0).json();
    assert_eq!(doc["schema"], "git-delegate/v1");
    let t = &doc["tasks"][0];
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(t["name"], "2");
    assert_eq!(t["state"], "open");
    assert_eq!(t["conflicted_paths"], serde_json::json!([]));
    let base = t["base"].as_str().unwrap();
    assert_eq!(base.len(), 40);

    // The workspace: the source's changes plus the worker's.
    assert_eq!(read(&ws[1].join("a.txt")), "ONE\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(read(&ws[1].join("b.txt")), "bee\nuser\n");
    assert_eq!(read(&ws[1].join("new.txt")), "new\n");
    assert_eq!(env.git(&ws[1], ["rev-parse", "HEAD"]).trim(), base);
    // `git diff` (index -> worktree) shows only the worker's edit.
    let diff = env.git(&ws[1], ["diff", "--name-only"]);
    assert_eq!(diff, "a.txt\n");
    let diff = env.git(&ws[1], ["diff", "-U0", "a.txt"]);
    assert_has(&diff, "-five\n+FIVE\n");
    assert!(!diff.contains("ONE"), "{diff}");
    // Against the new base, all of the worker's work and nothing else.
    env.git(&ws[1], ["add", "-A"]);
    assert_eq!(
        env.git(&ws[1], ["diff", "--cached", "--name-only", "HEAD"]),
        "a.txt\nnew.txt\n"
    );
    env.git(&ws[1], ["reset", "-q"]);
    // diff and status measure the task from its own base too.
    let d = env
        .delegate(&repo, ["diff", "2", "--name-status"])
        .expect(0);
    assert_eq!(d.stdout, "M\ta.txt\nA\tnew.txt\n");
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["tasks"][1]["changed_paths"], 2);

    // Apply merges it from its own base: the user's edit and task 1 stay.
    // Even --strict: the source has not changed since the task's own base.
    let doc = env
        .delegate(&repo, ["apply", "--strict", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "applied");
    let mut applied: Vec<String> = doc["tasks"][0]["applied_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    applied.sort();
    assert_eq!(applied, ["a.txt", "new.txt"]);
    assert_eq!(read(&repo.join("a.txt")), "ONE\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(read(&repo.join("b.txt")), "bee\nuser\n");
    assert_eq!(read(&repo.join("new.txt")), "new\n");
}

#[test]
fn refresh_from_the_source_takes_every_open_task_and_records_proposals() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    std::fs::write(repo.join("b.txt"), "bee\nuser\n").unwrap();
    std::fs::write(ws[0].join("c.txt"), "c\n").unwrap();
    let doc = env.delegate(&repo, ["refresh", "--json"]).expect(0).json();
    let id = id(&doc);
    let names = field_strs(&doc["tasks"], "name");
    assert_eq!(names, ["1", "2"]);
    // Task 1's work was recorded first, on its old base (the baseline).
    assert_eq!(
        doc["tasks"][0]["proposal_ref"],
        format!("refs/pi-delegate/batches/{id}/tasks/1/proposal")
    );
    let proposal = format!("refs/pi-delegate/batches/{id}/tasks/1/proposal");
    let baseline = format!("refs/pi-delegate/batches/{id}/baseline");
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{proposal}^")]),
        env.git(&repo, ["rev-parse", &baseline])
    );
    assert_eq!(read(&ws[0].join("b.txt")), "bee\nuser\n");
    assert_eq!(read(&ws[1].join("b.txt")), "bee\nuser\n");
    assert_eq!(read(&ws[0].join("c.txt")), "c\n");
    assert_eq!(env.git(&ws[1], ["status", "--porcelain"]), "");
    // A second refresh records a proposal whose parent is the task's own base.
    std::fs::write(ws[0].join("c.txt"), "c2\n").unwrap();
    let doc2 = env
        .delegate(&repo, ["refresh", "1", "--json"])
        .expect(0)
        .json();
    let base1 = doc["tasks"][0]["base"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{proposal}^")])
            .trim(),
        base1
    );
    assert_eq!(doc2["tasks"][0]["state"], "open");
    // Its patch is taken from that base: only the worker's own file.
    let patch = repo.join(format!(".git/delegate/batches/{id}/1.patch"));
    let patch = read(&patch);
    assert_has(&patch, "c.txt");
    assert!(!patch.contains("b.txt"), "{patch}");
    // The batch document carries each task's base.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(
        st["batches"][0]["tasks"][0]["base"],
        doc2["tasks"][0]["base"]
    );
    // Unknown task: exit 2, nothing changed.
    env.delegate(&repo, ["refresh", "nope"]).expect(2);
}

#[test]
fn refresh_refuses_an_untracked_file_in_the_way_and_changes_nothing() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    std::fs::write(repo.join("added.txt"), "from the source\n").unwrap();
    // A file the worker's own .gitignore ignores, where the source's file goes.
    std::fs::write(ws[0].join(".gitignore"), "added.txt\n").unwrap();
    std::fs::write(ws[0].join("added.txt"), "ignored, the worker's\n").unwrap();
    let head = env.git(&ws[0], ["rev-parse", "HEAD"]);
    let r = env.delegate(&repo, ["refresh", "1", "--json"]).expect(3);
    assert_eq!(r.json()["error"]["code"], "delegate::refresh_blocked");
    assert_eq!(read(&ws[0].join("added.txt")), "ignored, the worker's\n");
    assert_eq!(env.git(&ws[0], ["rev-parse", "HEAD"]), head);
}

#[test]
fn a_refresh_killed_while_writing_is_rolled_back_by_the_next_command() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    std::fs::write(repo.join("a.txt"), "ONE\ntwo\nthree\nfour\nfive\n").unwrap();
    std::fs::write(repo.join("b.txt"), "bee\nuser\n").unwrap();
    std::fs::write(ws[0].join("a.txt"), "one\ntwo\nthree\nfour\nFIVE\n").unwrap();
    let head = env.git(&ws[0], ["rev-parse", "HEAD"]);
    let out = with_fault(
        env.delegate_cmd(&repo).args(["refresh", "1"]),
        "after-rename:1",
    );
    assert!(!out.status.success());
    // The next mutating command rolls the workspace back to what it held.
    let doc = env.delegate(&repo, ["renew", "--json"]).expect(0).json();
    assert_eq!(
        doc["recovered_writebacks"].as_array().map(|a| a.len()),
        Some(1),
        "{doc}"
    );
    assert_eq!(read(&ws[0].join("a.txt")), "one\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(read(&ws[0].join("b.txt")), "bee\n");
    assert_eq!(env.git(&ws[0], ["rev-parse", "HEAD"]), head);
    assert_eq!(doc["tasks"][0]["state"], "open");
    assert!(doc["tasks"][0].get("base").is_none(), "{doc}");
    // And a refresh run again does the whole job.
    env.delegate(&repo, ["refresh", "1"]).expect(0);
    assert_eq!(read(&ws[0].join("a.txt")), "ONE\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(read(&ws[0].join("b.txt")), "bee\nuser\n");
    assert_eq!(env.git(&ws[0], ["diff", "--name-only"]), "a.txt\n");
}

#[test]
fn refresh_leaves_processes_in_the_workspace_running() {
    let env = Env::new();
    let (repo, ws) = setup(&env);
    std::fs::write(repo.join("b.txt"), "bee\nuser\n").unwrap();
    let mut worker = std::process::Command::new("sleep")
        .arg("120")
        .current_dir(&ws[0])
        .spawn()
        .unwrap();
    env.delegate(&repo, ["refresh", "1"]).expect(0);
    let alive = worker.try_wait().unwrap().is_none();
    worker.kill().unwrap();
    worker.wait().unwrap();
    assert!(alive, "refresh stopped a process inside the workspace");
    assert_eq!(read(&ws[0].join("b.txt")), "bee\nuser\n");
}
