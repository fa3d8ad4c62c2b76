//! `git delegate apply` (design §3.2) end to end, on real repositories.

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::files::{digest, lines, lines_with, os, read_lossy};
use crate::common::fixtures::{index_bytes, prepare_roots, task};
use crate::common::procs::{alive, tty_nr};
use crate::common::Env;
use serde_json::Value;

fn apply(env: &Env, repo: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["apply", "--json"];
    all.extend_from_slice(args);
    env.delegate(repo, all).expect(code).json()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn worktree_list(env: &Env, repo: &Path) -> String {
    env.git(repo, ["worktree", "list", "--porcelain"])
}

fn repo_with_lines(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    std::fs::write(repo.join("f.txt"), lines(10)).unwrap();
    env.git(&repo, ["add", "f.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "lines"]);
    repo
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn dirty_baseline_and_proposals_applied_in_order_index_untouched_refs_gone() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    std::fs::write(repo.join("README"), "dirty readme\n").unwrap();
    std::fs::write(repo.join("untracked.txt"), "mine\n").unwrap();
    env.git(&repo, ["add", "README"]); // staged, so the index differs from HEAD
    std::fs::write(repo.join("README"), "dirty readme, unstaged too\n").unwrap();
    let index_before = index_bytes(&repo);
    let head_before = env.git(&repo, ["rev-parse", "HEAD"]);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    // The workspaces see the dirty and untracked state.
    assert_eq!(
        read_lossy(&ws[0].join("README")),
        "dirty readme, unstaged too\n"
    );
    assert_eq!(read_lossy(&ws[1].join("untracked.txt")), "mine\n");

    std::fs::write(ws[0].join("f.txt"), lines_with(10, 2, "task one")).unwrap();
    std::fs::write(ws[0].join("one.txt"), "one\n").unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 9, "task two")).unwrap();
    std::fs::write(ws[1].join("two.txt"), "two\n").unwrap();
    std::fs::write(ws[1].join("untracked.txt"), "mine, edited by two\n").unwrap();

    let out = apply(&env, &repo, &[], 0);
    assert_eq!(out["schema"], "git-delegate/v1");
    assert_eq!(out["batch"], doc["batch"]);
    assert_eq!(out["dry_run"], false);
    assert_eq!(out["batch_open"], false);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(
        strings(&task(&out, "1")["proposed_paths"]),
        ["f.txt", "one.txt"]
    );
    assert_eq!(
        strings(&task(&out, "2")["applied_paths"]),
        ["f.txt", "two.txt", "untracked.txt"]
    );
    assert_eq!(
        strings(&out["applied_paths"]),
        ["f.txt", "one.txt", "two.txt", "untracked.txt"]
    );
    let mut want = lines_with(10, 2, "task one");
    want = want.replace("line 9\n", "task two\n");
    assert_eq!(read_lossy(&repo.join("f.txt")), want);
    assert_eq!(read_lossy(&repo.join("one.txt")), "one\n");
    assert_eq!(read_lossy(&repo.join("two.txt")), "two\n");
    assert_eq!(
        read_lossy(&repo.join("untracked.txt")),
        "mine, edited by two\n"
    );
    assert_eq!(
        read_lossy(&repo.join("README")),
        "dirty readme, unstaged too\n"
    );

    assert_eq!(index_bytes(&repo), index_before, "the user's index changed");
    assert_eq!(env.git(&repo, ["rev-parse", "HEAD"]), head_before);
    assert!(
        env.private_refs(&repo).is_empty(),
        "{:?}",
        env.private_refs(&repo)
    );
    assert!(!ws[0].exists() && !ws[1].exists());
    assert_eq!(worktree_list(&env, &repo).matches("worktree ").count(), 1);
    assert!(!repo
        .join(".git/delegate/batches")
        .join(doc["batch"].as_str().unwrap())
        .exists());
    // Nothing is left to apply.
    env.delegate(&repo, ["apply"]).expect(2);
}

#[test]
fn conflicting_proposal_keeps_ref_patch_and_workspace_first_one_wins() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 5, "first")).unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 5, "second")).unwrap();
    std::fs::write(ws[1].join("extra.txt"), "all or nothing\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "1")["status"], "applied");
    let t2 = task(&out, "2");
    assert_eq!(t2["status"], "conflict");
    assert_eq!(t2["reason"], "merge_conflict");
    assert_eq!(t2["conflicts"][0]["path"], "f.txt");
    assert_eq!(t2["conflicts"][0]["reason"], "both modified");
    assert_eq!(strings(&t2["applied_paths"]), Vec::<String>::new());
    assert_eq!(strings(&t2["proposed_paths"]), ["extra.txt", "f.txt"]);
    assert_eq!(out["batch_open"], true);
    assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 5, "first"));
    assert!(
        !repo.join("extra.txt").exists(),
        "a conflicting proposal applied partly"
    );

    let r = t2["proposal_ref"].as_str().unwrap();
    assert_eq!(
        r,
        format!(
            "refs/pi-delegate/batches/{}/tasks/2/proposal",
            doc["batch"].as_str().unwrap()
        )
    );
    assert!(env.private_refs(&repo).contains(&r.to_string()));
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:f.txt")]),
        lines_with(10, 5, "second")
    );
    let patch = PathBuf::from(t2["patch"].as_str().unwrap());
    assert!(read_lossy(&patch).contains("+second"));
    assert_eq!(PathBuf::from(t2["workspace"].as_str().unwrap()), ws[1]);
    assert!(ws[1].join("extra.txt").exists());
    assert!(!ws[0].exists());

    // The conflict resolved in the workspace: the next apply lands it.
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 5, "first")).unwrap();
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(
        strings(
            &out["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone())
                .collect::<Value>()
        ),
        ["2"]
    );
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("extra.txt")), "all or nothing\n");
    assert!(env.private_refs(&repo).is_empty());
    assert!(!patch.exists());
}

#[test]
fn additions_deletions_binary_symlinks_exec_bits_and_file_folder_switches() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join("keep.bin"), [0u8, 1, 2, 3, 0, 255].repeat(100)).unwrap();
    std::fs::write(repo.join("gone.txt"), "gone\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(repo.join("was-file"), "file\n").unwrap();
    std::fs::create_dir_all(repo.join("was-dir/deep")).unwrap();
    std::fs::write(repo.join("was-dir/deep/x.txt"), "x\n").unwrap();
    std::fs::write(repo.join("was-dir/y.txt"), "y\n").unwrap();
    symlink("README", repo.join("link")).unwrap();
    std::fs::create_dir_all(repo.join("empty-after/sub")).unwrap();
    std::fs::write(repo.join("empty-after/sub/only.txt"), "only\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "kinds"]);

    let (_, ws) = prepare_roots(&env, &repo, &[]);
    let w = &ws[0];
    let mut bin = [0u8, 1, 2, 3, 0, 255].repeat(100);
    bin[7] = 99;
    std::fs::write(w.join("keep.bin"), &bin).unwrap();
    std::fs::write(w.join("new.bin"), [0u8, 0, 7, 13, 10]).unwrap();
    std::fs::remove_file(w.join("gone.txt")).unwrap();
    std::fs::set_permissions(w.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(w.join("was-file")).unwrap();
    std::fs::create_dir(w.join("was-file")).unwrap();
    std::fs::write(w.join("was-file/inside.txt"), "now a folder\n").unwrap();
    std::fs::remove_dir_all(w.join("was-dir")).unwrap();
    std::fs::write(w.join("was-dir"), "now a file\n").unwrap();
    std::fs::remove_file(w.join("link")).unwrap();
    symlink("run.sh", w.join("link")).unwrap();
    symlink("missing-target", w.join("dangling")).unwrap();
    std::fs::remove_dir_all(w.join("empty-after")).unwrap();
    std::fs::create_dir_all(w.join("a/b/c")).unwrap();
    std::fs::write(w.join("a/b/c/deep.txt"), "deep\n").unwrap();
    let want_tree = env.oracle_tree(w);
    let want_digest = digest(w, true);

    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(env.oracle_tree(&repo), want_tree);
    assert_eq!(digest(&repo, true), want_digest);
    assert!(
        !repo.join("empty-after").exists(),
        "emptied folders are removed"
    );
    assert_eq!(
        std::fs::symlink_metadata(repo.join("run.sh"))
            .unwrap()
            .mode()
            & 0o111,
        0o111
    );
    assert_eq!(
        std::fs::read_link(repo.join("link")).unwrap(),
        Path::new("run.sh")
    );
}

#[test]
fn a_source_change_on_the_same_line_is_never_overwritten() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    std::fs::write(repo.join("other.txt"), "other\n").unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 3, "task")).unwrap();
    std::fs::write(ws[1].join("other.txt"), "other, by task 2\n").unwrap();
    // The user keeps working meanwhile, on the same line.
    std::fs::write(repo.join("f.txt"), lines_with(10, 3, "user")).unwrap();

    let out = apply(&env, &repo, &[], 1);
    let t1 = task(&out, "1");
    assert_eq!(t1["status"], "conflict");
    assert_eq!(t1["reason"], "source_changed");
    assert_eq!(t1["conflicts"][0]["path"], "f.txt");
    assert_eq!(t1["conflicts"][0]["reason"], "both modified");
    assert!(t1["proposal_ref"].is_string());
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 3, "user"));
    assert_eq!(read_lossy(&repo.join("other.txt")), "other, by task 2\n");
    assert_eq!(strings(&out["applied_paths"]), ["other.txt"]);
}

#[test]
fn user_edits_elsewhere_and_in_other_lines_merge_and_strict_refuses_them() {
    for strict in [false, true] {
        let env = Env::new();
        let repo = repo_with_lines(&env);
        std::fs::write(repo.join("g.txt"), "g\n").unwrap();
        let (_, ws) = prepare_roots(&env, &repo, &[]);
        std::fs::write(ws[0].join("f.txt"), lines_with(10, 2, "task")).unwrap();
        std::fs::write(repo.join("f.txt"), lines_with(10, 9, "user")).unwrap();
        std::fs::write(repo.join("g.txt"), "g, by the user\n").unwrap();
        std::fs::write(repo.join("later.txt"), "new untracked file\n").unwrap();
        if strict {
            let out = apply(&env, &repo, &["--strict"], 1);
            let t = task(&out, "1");
            assert_eq!(t["status"], "conflict");
            assert_eq!(t["reason"], "source_changed");
            assert_eq!(t["conflicts"][0]["path"], "f.txt");
            assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 9, "user"));
            // The config switch does the same.
            std::fs::write(repo.join(".git/delegate.toml"), "[apply]\nstrict = true\n").unwrap();
            let out = apply(&env, &repo, &[], 1);
            assert_eq!(task(&out, "1")["reason"], "source_changed");
        } else {
            let out = apply(&env, &repo, &[], 0);
            assert_eq!(task(&out, "1")["status"], "applied");
            let want = lines_with(10, 2, "task").replace("line 9\n", "user\n");
            assert_eq!(read_lossy(&repo.join("f.txt")), want);
        }
        assert_eq!(read_lossy(&repo.join("g.txt")), "g, by the user\n");
        assert_eq!(read_lossy(&repo.join("later.txt")), "new untracked file\n");
    }
}

#[test]
fn a_task_without_changes_is_no_changes_and_leaves_no_refs() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    // A worker's commit in the workspace does not matter, only its files.
    std::fs::write(ws[1].join("README"), "hello\n").unwrap();
    env.git(
        &ws[1],
        ["commit", "-q", "--allow-empty", "-m", "worker commit"],
    );
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "no_changes");
    assert_eq!(task(&out, "2")["status"], "no_changes");
    assert_eq!(strings(&out["applied_paths"]), Vec::<String>::new());
    assert!(env.private_refs(&repo).is_empty());
    assert!(!ws[0].exists() && !ws[1].exists());
    assert_eq!(env.git(&repo, ["branch", "--list"]).trim(), "* main");
}

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
    let env = Env::new();
    let repo = env.repo("proj");
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
    let env = Env::new();
    let repo = env.repo("proj");
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
fn only_then_a_second_apply_and_unknown_or_closed_tasks_are_usage_errors() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    for (i, w) in ws.iter().enumerate() {
        std::fs::write(w.join(format!("t{}.txt", i + 1)), "x\n").unwrap();
    }
    env.delegate(&repo, ["apply", "--only", "nope"]).expect(2);
    let out = apply(&env, &repo, &["--only", "2"], 0);
    assert_eq!(out["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(out["batch_open"], true);
    assert!(repo.join("t2.txt").exists() && !repo.join("t1.txt").exists());
    assert!(ws[0].exists() && !ws[1].exists());
    // Task 2 is closed now.
    let err = env
        .delegate(&repo, ["apply", "--only", "2", "--json"])
        .expect(2)
        .json();
    assert_eq!(err["error"]["code"], "delegate::task_not_open");
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(out["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(out["batch_open"], false);
    assert!(repo.join("t1.txt").exists() && repo.join("t3.txt").exists());
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn discard_drops_a_task_and_its_leftovers() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 1, "one")).unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 1, "two")).unwrap();
    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "2")["reason"], "merge_conflict");
    let out = apply(&env, &repo, &["--discard", "2"], 0);
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert_eq!(out["batch_open"], false);
    assert!(!ws[1].exists());
    // Only its work is kept, for gc.keep-failed.
    assert_eq!(task(&out, "2")["kept"], true);
    assert_eq!(
        env.private_refs(&repo),
        [task(&out, "2")["proposal_ref"].as_str().unwrap()]
    );
    assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 1, "one"));
    assert_eq!(worktree_list(&env, &repo).matches("worktree ").count(), 1);
}

#[test]
fn keep_leaves_applied_workspaces_as_plain_unlocked_worktrees() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let out = apply(&env, &repo, &["--keep"], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "no_changes");
    assert!(ws[0].join("a.txt").exists() && ws[1].exists());
    let list = worktree_list(&env, &repo);
    assert_eq!(list.matches("worktree ").count(), 3, "{list}");
    assert!(!list.contains("locked"), "{list}");
    assert!(env.private_refs(&repo).is_empty());
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
    // They are ordinary worktrees now: git can remove them.
    env.git(
        &repo,
        ["worktree", "remove", "--force", ws[0].to_str().unwrap()],
    );
}

#[test]
fn dry_run_changes_nothing_at_all() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    std::fs::write(repo.join("untracked.txt"), "u\n").unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 4, "one")).unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 4, "two")).unwrap();
    std::fs::write(ws[2].join("new.txt"), "three\n").unwrap();
    std::fs::write(repo.join("g.txt"), "user, meanwhile\n").unwrap();

    let snapshot = |env: &Env| {
        let mut all = vec![
            digest(&repo, true),
            digest(&repo.join(".git/delegate/batches"), false),
        ];
        for w in &ws {
            all.push(digest(w, false));
        }
        (
            all,
            index_bytes(&repo),
            env.git(&repo, ["for-each-ref"]),
            worktree_list(env, &repo),
            digest(&repo.join(".git/worktrees"), false),
            digest(&repo.join(".git/objects"), false),
        )
    };
    let before = snapshot(&env);
    let out = apply(&env, &repo, &["--dry-run"], 1);
    assert_eq!(out["dry_run"], true);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "conflict");
    assert_eq!(task(&out, "3")["status"], "applied");
    assert_eq!(out["batch_open"], true);
    assert_eq!(strings(&out["applied_paths"]), ["f.txt", "new.txt"]);
    assert!(before == snapshot(&env), "--dry-run changed something");

    let out = apply(&env, &repo, &["--dry-run", "--only", "3"], 0);
    assert_eq!(out["batch_open"], true);
    let out = apply(&env, &repo, &["--dry-run", "--discard", "2"], 0);
    assert_eq!(out["batch_open"], false);
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert!(before == snapshot(&env), "--dry-run changed something");
}

#[test]
fn odd_names_spaces_newlines_and_non_utf8_bytes() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("with space.txt"), "space\n").unwrap();
    std::fs::write(ws[0].join(os(b"new\nline")), "newline\n").unwrap();
    std::fs::write(ws[0].join(os(b"bad-\xff.txt")), "raw\n").unwrap();
    std::fs::write(ws[0].join("-dash"), "dash\n").unwrap();
    std::fs::create_dir(ws[0].join(os(b"dir \xc3\xa9"))).unwrap();
    std::fs::write(ws[0].join(os(b"dir \xc3\xa9/f")), "utf8 folder\n").unwrap();
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(out["lossy_paths"], true);
    let applied = strings(&out["applied_paths"]);
    assert!(applied.contains(&"with space.txt".to_string()));
    assert!(applied.contains(&"new\nline".to_string()));
    assert!(applied.contains(&"bad-\u{fffd}.txt".to_string()));
    assert!(applied.contains(&"dir é/f".to_string()));
    assert_eq!(read_lossy(&repo.join("with space.txt")), "space\n");
    assert_eq!(read_lossy(&repo.join(os(b"new\nline"))), "newline\n");
    assert_eq!(read_lossy(&repo.join(os(b"bad-\xff.txt"))), "raw\n");
    assert_eq!(read_lossy(&repo.join("-dash")), "dash\n");
    assert_eq!(
        read_lossy(&repo.join(os(b"dir \xc3\xa9/f"))),
        "utf8 folder\n"
    );
}

#[test]
fn crlf_files_come_back_as_crlf() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join(".gitattributes"), "*.txt text eol=crlf\n").unwrap();
    std::fs::write(repo.join("w.txt"), "one\r\ntwo\r\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "crlf"]);
    assert_eq!(
        std::fs::read(repo.join("w.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    assert_eq!(
        std::fs::read(ws[0].join("w.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    std::fs::write(ws[0].join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(ws[0].join("n.txt"), "new\r\nfile\r\n").unwrap();
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(
        std::fs::read(repo.join("w.txt")).unwrap(),
        b"one\r\ntwo\r\nthree\r\n"
    );
    assert_eq!(
        std::fs::read(repo.join("n.txt")).unwrap(),
        b"new\r\nfile\r\n"
    );
    // git agrees the working tree is what the blobs say.
    let status = env.git(&repo, ["status", "--porcelain"]);
    assert!(
        status.contains(" M w.txt") && status.contains("?? n.txt"),
        "{status}"
    );
    env.git(&repo, ["add", "w.txt"]);
    assert_eq!(env.git(&repo, ["show", ":w.txt"]), "one\ntwo\nthree\n");
}

#[test]
fn a_missing_or_replaced_workspace_fails_and_is_never_deleted() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[2].join("c.txt"), "c\n").unwrap();
    std::fs::remove_dir_all(&ws[0]).unwrap();
    std::fs::remove_dir_all(&ws[1]).unwrap();
    std::fs::create_dir(&ws[1]).unwrap();
    std::fs::write(ws[1].join("someone-elses.txt"), "precious\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    for name in ["1", "2"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed");
        assert_eq!(t["reason"], "workspace_missing");
    }
    assert_eq!(task(&out, "3")["status"], "applied");
    assert_eq!(read_lossy(&ws[1].join("someone-elses.txt")), "precious\n");
    let out = apply(&env, &repo, &["--discard", "1", "--discard", "2"], 0);
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert_eq!(read_lossy(&ws[1].join("someone-elses.txt")), "precious\n");
    assert_eq!(out["batch_open"], false);
}

#[test]
fn untracked_and_ignored_things_in_the_way_are_conflicts_never_losses() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join(".gitignore"), "*.tmp\ncache/\n").unwrap();
    env.git(&repo, ["add", ".gitignore"]);
    env.git(&repo, ["commit", "-q", "-m", "ignore"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "4"]);
    // 1: adds x.txt where the user now has an untracked x.txt.
    std::fs::write(ws[0].join("x.txt"), "task\n").unwrap();
    std::fs::write(repo.join("x.txt"), "user\n").unwrap();
    // 2: force-adds an ignored file the user also has.
    std::fs::write(ws[1].join("keep.tmp"), "task\n").unwrap();
    env.git(&ws[1], ["add", "-f", "keep.tmp"]);
    std::fs::write(repo.join("keep.tmp"), "user's ignored file\n").unwrap();
    // 3: adds a file `cache` where the user has an ignored folder with content.
    std::fs::write(ws[2].join("cache"), "task\n").unwrap();
    std::fs::create_dir(repo.join("cache")).unwrap();
    std::fs::write(repo.join("cache/data"), "user's cache\n").unwrap();
    // 4: unrelated, applies.
    std::fs::write(ws[3].join("ok.txt"), "ok\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    let t1 = task(&out, "1");
    assert_eq!(t1["status"], "conflict");
    assert_eq!(t1["reason"], "source_changed");
    assert_eq!(t1["conflicts"][0]["reason"], "both added");
    for name in ["2", "3"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "conflict", "{t:#}");
        assert_eq!(t["reason"], "would_overwrite_untracked", "{t:#}");
    }
    assert_eq!(task(&out, "4")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("x.txt")), "user\n");
    assert_eq!(read_lossy(&repo.join("keep.tmp")), "user's ignored file\n");
    assert_eq!(read_lossy(&repo.join("cache/data")), "user's cache\n");
    assert_eq!(read_lossy(&repo.join("ok.txt")), "ok\n");
}

#[test]
fn a_workspace_that_cannot_be_snapshotted_fails_and_keeps_what_was_recorded() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 1, "task")).unwrap();
    std::fs::write(repo.join("f.txt"), lines_with(10, 1, "user")).unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["reason"], "source_changed");
    let r = t["proposal_ref"].as_str().unwrap().to_string();
    let patch = t["patch"].as_str().unwrap().to_string();
    // Break the workspace's HEAD: the next snapshot cannot be taken (a
    // broken index would be rebuilt: design §3.2 step 1).
    let id = format!("delegate-{}-1", &doc["batch"].as_str().unwrap()[..8]);
    std::fs::write(repo.join(".git/worktrees").join(id).join("HEAD"), "garbage").unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["status"], "failed");
    assert_eq!(t["reason"], "snapshot_failed");
    assert_eq!(t["proposal_ref"], r.as_str());
    assert_eq!(t["patch"], patch.as_str());
    assert!(env.private_refs(&repo).contains(&r));
    assert!(Path::new(&patch).is_file());
    assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 1, "user"));
}

#[test]
fn human_output_names_the_patch_and_what_to_do() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 5, "first")).unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 5, "second")).unwrap();
    let run = env.delegate(&repo, ["apply"]).expect(1);
    assert!(run.stdout.contains("conflict"), "{}", run.stdout);
    // No `git apply --3way` advice: it fails whenever the index differs
    // (design §3.16 "Hints"); the discard advice names the task.
    assert!(!run.stdout.contains("git apply"), "{}", run.stdout);
    assert!(run.stdout.contains("--discard 2\n"), "{}", run.stdout);
    assert!(
        run.stdout.contains(ws[1].to_str().unwrap()),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("2.patch"), "{}", run.stdout);
}

#[test]
fn apply_from_inside_a_workspace_writes_into_the_source() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.txt"), "lib\n").unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("src/lib.txt"), "lib, by task 1\n").unwrap();
    std::fs::write(ws[1].join("two.txt"), "two\n").unwrap();
    // The caller (this test, an ancestor of apply) sits inside workspace 1.
    let out = apply(&env, &ws[0].join("src"), &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("src/lib.txt")), "lib, by task 1\n");
    assert_eq!(read_lossy(&repo.join("two.txt")), "two\n");
    assert!(!ws[0].exists());
}

#[test]
fn a_deleted_baseline_ref_is_exit_3_and_changes_nothing() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let r = doc["baseline"]["ref"].as_str().unwrap();
    env.git(&repo, ["update-ref", "-d", r]);
    let err = env.delegate(&repo, ["apply", "--json"]).expect(3).json();
    assert_eq!(err["error"]["code"], "delegate::baseline_ref_missing");
    assert!(!repo.join("a.txt").exists());
    assert!(ws[0].join("a.txt").exists());
}

#[test]
fn a_failed_write_back_fails_every_task_it_was_writing_and_keeps_the_proposals() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir(repo.join("locked")).unwrap();
    std::fs::write(repo.join("locked/old.txt"), "old\n").unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("ok.txt"), "ok\n").unwrap();
    std::fs::write(ws[1].join("locked/new.txt"), "new\n").unwrap();
    let before = digest(&repo, true);
    // The second rename of the write-back fails (test-only fault injection):
    // a failure the check before writing cannot foresee (a folder that
    // refuses writing is one it does: see
    // a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there).
    let out = env
        .delegate_cmd(&repo)
        .args(["apply", "--json"])
        .env("GIT_DELEGATE_FAULT", "fail-rename:2")
        .output()
        .unwrap();
    let out = crate::common::Run::from(out).expect(1).json();
    for name in ["1", "2"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{t:#}");
        assert_eq!(t["reason"], "write_failed");
        assert!(t["proposal_ref"].is_string() && t["patch"].is_string());
        assert_eq!(strings(&t["applied_paths"]), Vec::<String>::new());
    }
    assert_eq!(task(&out, "3")["status"], "no_changes");
    assert_eq!(strings(&out["applied_paths"]), Vec::<String>::new());
    assert!(
        digest(&repo, true) == before,
        "a failed write-back left changes"
    );
    assert!(ws[0].exists() && ws[1].exists());
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("locked/new.txt")), "new\n");
}

#[test]
fn a_linked_worktree_as_source_gets_the_result_and_the_main_tree_does_not() {
    let env = Env::new();
    let repo = env.repo("proj");
    let linked = env.path().join("linked");
    env.git(
        &repo,
        [
            "worktree".as_ref(),
            "add".as_ref(),
            "-q".as_ref(),
            "-b".as_ref(),
            "side".as_ref(),
            linked.as_os_str(),
        ],
    );
    std::fs::write(linked.join("README"), "linked, dirty\n").unwrap();
    let (_, ws) = prepare_roots(&env, &linked, &[]);
    assert_eq!(read_lossy(&ws[0].join("README")), "linked, dirty\n");
    std::fs::write(ws[0].join("README"), "linked, by the task\n").unwrap();
    // Applied from the main working tree: the batch still belongs to `linked`.
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&linked.join("README")), "linked, by the task\n");
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn workspaces_left_by_an_interrupted_clean_up_are_removed_later_kept_ones_are_not() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[2].join("c.txt"), "c\n").unwrap();
    let out = apply(&env, &repo, &["--only", "3", "--keep"], 0);
    assert_eq!(task(&out, "3")["status"], "applied");
    // As if an apply had recorded task 1 as applied and then died before
    // removing its workspace.
    let toml = repo
        .join(".git/delegate/batches")
        .join(doc["batch"].as_str().unwrap())
        .join("batch.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replacen("state = \"open\"", "state = \"applied\"", 1),
    )
    .unwrap();
    assert!(ws[0].exists());
    let out = apply(&env, &repo, &["--discard", "2"], 0);
    // Task 1 is listed applied, by that earlier apply (design §7 "What
    // recovery finishes"): nothing written for it now.
    assert_eq!(out["tasks"].as_array().unwrap().len(), 2, "{out:#}");
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "1")["applied_paths"], serde_json::json!([]));
    assert!(task(&out, "1")["message"].is_string(), "{out:#}");
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert_eq!(out["batch_open"], false);
    assert!(!ws[0].exists(), "the left-over workspace is still there");
    assert!(!ws[1].exists());
    assert!(
        ws[2].join("c.txt").exists(),
        "the --keep workspace was removed"
    );
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn a_process_that_ignores_sigterm_is_killed() {
    let env = Env::new();
    let repo = env.repo("proj");
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

/// A git repository a worker made in its workspace: `git init` with a commit
/// of its own (task 1), and a `git clone` of another local repository under
/// an untracked folder (task 2), each beside an ordinary edit.
fn nested_repositories(env: &Env, ws: &[PathBuf]) {
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 2, "task one")).unwrap();
    env.git(&ws[0], ["init", "-q", "sub"]);
    std::fs::write(ws[0].join("sub/inner.txt"), "inner work\n").unwrap();
    env.git(&ws[0].join("sub"), ["add", "inner.txt"]);
    env.git(&ws[0].join("sub"), ["commit", "-q", "-m", "nested history"]);

    let dep = env.repo("dep");
    std::fs::create_dir_all(ws[1].join("deps")).unwrap();
    env.git(&ws[1], ["clone", "-q", dep.to_str().unwrap(), "deps/lib"]);
    std::fs::write(ws[1].join("two.txt"), "two\n").unwrap();
}

#[test]
fn a_nested_repository_in_a_workspace_is_a_conflict_and_nothing_of_the_task_applies() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    let short = &doc["batch"].as_str().unwrap()[..8];
    nested_repositories(&env, &ws);
    std::fs::write(ws[2].join("three.txt"), "three\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    for (name, nested, edit) in [("1", "sub", "f.txt"), ("2", "deps/lib", "two.txt")] {
        let t = task(&out, name);
        assert_eq!(t["status"], "conflict", "{out:#}");
        assert_eq!(t["reason"], "nested_repository", "{out:#}");
        let paths: Vec<&str> = t["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, [nested], "{out:#}");
        assert_eq!(strings(&t["applied_paths"]), Vec::<String>::new());
        // The rest of the work is recorded, so it is never lost.
        let r = t["proposal_ref"].as_str().unwrap();
        env.git(&repo, ["cat-file", "-e", &format!("{r}:{edit}")]);
        let patch = read_lossy(Path::new(t["patch"].as_str().unwrap()));
        assert!(patch.contains(edit), "{patch}");
    }
    // All or nothing per task: neither ordinary edit reached the source.
    assert_eq!(read_lossy(&repo.join("f.txt")), lines(10));
    assert!(!repo.join("two.txt").exists());
    assert!(!repo.join("sub").exists() && !repo.join("deps").exists());
    // The task without a nested repository applies.
    assert_eq!(task(&out, "3")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("three.txt")), "three\n");
    assert_eq!(out["batch_open"], true);
    // The workspaces and their nested repositories are kept.
    assert!(ws[0].join("sub/.git").is_dir());
    assert_eq!(read_lossy(&ws[0].join("sub/inner.txt")), "inner work\n");
    assert!(ws[1].join("deps/lib/.git").is_dir());
    assert_eq!(read_lossy(&ws[1].join("deps/lib/README")), "hello\n");
    assert_eq!(
        read_lossy(&ws[0].join("f.txt")),
        lines_with(10, 2, "task one")
    );

    // status counts them as changes; drop refuses without --force.
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let tasks = status["batches"][0]["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["changed_paths"], 2, "{status:#}");
    assert_eq!(tasks[1]["changed_paths"], 2, "{status:#}");
    let drop = env.delegate(&repo, ["drop", short]).expect(1);
    assert!(drop.stdout.contains("1, 2"), "{}", drop.stdout);
    assert!(ws[0].join("sub/.git").is_dir() && ws[1].join("deps/lib/.git").is_dir());
    assert_eq!(read_lossy(&ws[1].join("two.txt")), "two\n");
}

#[test]
fn drop_refuses_a_workspace_whose_only_change_is_a_nested_repository() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    let short = &doc["batch"].as_str().unwrap()[..8];
    env.git(&ws[0], ["init", "-q", "sub"]);
    let out = env
        .delegate(&repo, ["drop", short, "--json"])
        .expect(1)
        .json();
    assert_eq!(out["dropped"], false);
    assert_eq!(out["unapplied"], serde_json::json!(["1"]));
    assert!(ws[0].join("sub/.git").is_dir());
    // apply: a conflict with nothing else to record, the workspace kept.
    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "1")["reason"], "nested_repository", "{out:#}");
    assert!(ws[0].join("sub/.git").is_dir());
}

#[test]
fn assume_unchanged_and_skip_worktree_flags_never_hide_what_is_on_disk() {
    let env = Env::new();
    let repo = env.repo("proj");
    for f in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(repo.join(f), format!("{f} original\n")).unwrap();
    }
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    // Edits hidden from `git status` by the worker's own index flags.
    env.git(&ws[0], ["update-index", "--assume-unchanged", "a.txt"]);
    std::fs::write(ws[0].join("a.txt"), "a.txt edited, assumed unchanged\n").unwrap();
    env.git(&ws[1], ["update-index", "--skip-worktree", "b.txt"]);
    std::fs::write(ws[1].join("b.txt"), "b.txt edited, skip-worktree\n").unwrap();
    // A skip-worktree file absent from disk counts at its index content.
    env.git(&ws[2], ["update-index", "--skip-worktree", "c.txt"]);
    std::fs::remove_file(ws[2].join("c.txt")).unwrap();
    assert_eq!(env.git(&ws[0], ["status", "--porcelain"]), "");
    assert_eq!(env.git(&ws[1], ["status", "--porcelain"]), "");

    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(strings(&task(&out, "1")["applied_paths"]), ["a.txt"]);
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(strings(&task(&out, "2")["applied_paths"]), ["b.txt"]);
    assert_eq!(task(&out, "3")["status"], "no_changes", "{out:#}");
    assert_eq!(
        std::fs::read(repo.join("a.txt")).unwrap(),
        b"a.txt edited, assumed unchanged\n"
    );
    assert_eq!(
        std::fs::read(repo.join("b.txt")).unwrap(),
        b"b.txt edited, skip-worktree\n"
    );
    assert_eq!(read_lossy(&repo.join("c.txt")), "c.txt original\n");
}

#[test]
fn a_repository_made_in_a_tracked_folder_of_a_workspace_is_a_nested_repository_too() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join("lib")).unwrap();
    std::fs::write(repo.join("lib/x.txt"), "x\n").unwrap();
    env.git(&repo, ["add", "lib/x.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "lib"]);
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    // `git init` in a folder git already tracks: git add -A would take its
    // files and say nothing of its history.
    env.git(&ws[0].join("lib"), ["init", "-q"]);
    env.git(&ws[0].join("lib"), ["add", "x.txt"]);
    env.git(&ws[0].join("lib"), ["commit", "-q", "-m", "own history"]);
    std::fs::write(ws[0].join("lib/x.txt"), "x edited\n").unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["reason"], "nested_repository", "{out:#}");
    assert_eq!(t["conflicts"][0]["path"], "lib", "{out:#}");
    assert_eq!(read_lossy(&repo.join("lib/x.txt")), "x\n");
    assert!(ws[0].join("lib/.git").is_dir());
}

fn set_keep_failed(repo: &Path, value: &str) {
    std::fs::write(
        repo.join(".git/delegate.toml"),
        format!("[gc]\nkeep-failed = \"{value}\"\n"),
    )
    .unwrap();
}

// A discarded task's work stays recoverable for gc.keep-failed.
#[test]
fn discard_keeps_the_work_as_a_proposal_ref_and_patch_until_keep_failed() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let batch = doc["batch"].as_str().unwrap().to_string();
    std::fs::write(ws[0].join("one.txt"), "one\n").unwrap();
    std::fs::write(ws[1].join("README"), "the worker's work\n").unwrap();
    std::fs::write(ws[1].join("new.bin"), b"\x00\x01binary\xff\n").unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let out = apply(&env, &repo, &["--discard", "2"], 0);
    let t = task(&out, "2");
    assert_eq!(t["status"], "discarded");
    assert_eq!(t["kept"], true, "{out:#}");
    let r = format!("refs/pi-delegate/batches/{batch}/tasks/2/proposal");
    assert_eq!(t["proposal_ref"], r.as_str());
    let patch = PathBuf::from(t["patch"].as_str().unwrap());
    assert!(patch.is_file());
    assert!(!patch.starts_with(repo.join(".git/delegate/batches")));
    let expires = t["expires_at"].as_str().unwrap();
    assert_eq!(expires.len(), 20, "{expires}");
    assert_eq!(task(&out, "1")["status"], "applied");
    assert!(task(&out, "1").get("kept").is_none());
    assert_eq!(out["batch_open"], false);
    assert!(!ws[1].exists());
    assert_eq!(env.private_refs(&repo), vec![r.clone()]);
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:README")]),
        "the worker's work\n"
    );
    assert!(!repo.join("new.bin").exists());

    // status lists it where rescues are listed.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let kept = &st["kept"][0];
    assert_eq!(kept["ref"], r.as_str(), "{st:#}");
    assert_eq!(kept["batch"], batch.as_str());
    assert_eq!(kept["task"], "2");
    assert_eq!(kept["patch"], t["patch"]);
    assert_eq!(kept["expires_at"], t["expires_at"]);
    let secs = |s: &str| {
        let d = std::process::Command::new("date")
            .args(["-u", "-d", s, "+%s"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&d.stdout)
            .trim()
            .parse::<i64>()
            .unwrap()
    };
    assert!(secs(expires) >= before + 14 * 86_400, "{expires}");

    // Within gc.keep-failed, gc keeps it.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["refs_removed"], 0, "{gc:#}");
    assert_eq!(env.private_refs(&repo), vec![r.clone()]);
    assert!(patch.is_file());

    // The patch gives the worker's bytes back.
    env.git(&repo, ["apply", patch.to_str().unwrap()]);
    assert_eq!(read_lossy(&repo.join("README")), "the worker's work\n");
    assert_eq!(
        std::fs::read(repo.join("new.bin")).unwrap(),
        b"\x00\x01binary\xff\n"
    );

    // Once older than gc.keep-failed, gc removes ref and patch.
    set_keep_failed(&repo, "1s");
    std::thread::sleep(Duration::from_secs(2));
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["refs_removed"], 1, "{gc:#}");
    assert!(env.private_refs(&repo).is_empty());
    assert!(!patch.exists());
    assert!(!repo.join(".git/delegate/kept").exists());
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert!(st.get("kept").is_none(), "{st:#}");
}

#[test]
fn discard_says_where_the_work_is_kept_and_a_clean_task_keeps_nothing() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    let batch = doc["batch"].as_str().unwrap().to_string();
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let run = env
        .delegate(&repo, ["apply", "--discard", "1", "--discard", "2"])
        .expect(0);
    let r = format!("refs/pi-delegate/batches/{batch}/tasks/1/proposal");
    assert!(run.stdout.contains(&r), "{}", run.stdout);
    assert!(run.stdout.contains(".patch"), "{}", run.stdout);
    assert!(run.stdout.contains("gc.keep-failed"), "{}", run.stdout);
    // Task 2 had no changes: nothing kept for it.
    let mut refs = env.private_refs(&repo);
    refs.sort();
    assert_eq!(refs, vec![r.clone()]);
    // Even while the batch stays open elsewhere, gc's keep-failed clock applies.
    let (doc2, ws2) = prepare_roots(&env, &repo, &["-n", "3"]);
    let batch2 = doc2["batch"].as_str().unwrap().to_string();
    std::fs::write(ws2[0].join("b.txt"), "b\n").unwrap();
    let out = apply(&env, &repo, &[&batch2, "--discard", "1", "--only", "2"], 0);
    assert_eq!(out["batch_open"], true);
    assert_eq!(task(&out, "1")["kept"], true);
    let r2 = format!("refs/pi-delegate/batches/{batch2}/tasks/1/proposal");
    assert!(env.private_refs(&repo).contains(&r2));
    set_keep_failed(&repo, "1s");
    std::thread::sleep(Duration::from_secs(2));
    env.delegate(&repo, ["gc"]).expect(0);
    let refs = env.private_refs(&repo);
    assert!(!refs.contains(&r2) && !refs.contains(&r), "{refs:?}");
    assert!(refs.contains(&format!("refs/pi-delegate/batches/{batch2}/baseline")));
    assert!(ws2[2].exists());
}

/// An agent runs `git delegate prepare` inside its own workspace:
/// returns (outer batch id, the outer task's workspace, inner
/// batch id, the inner task's workspace).
fn nested_batches(env: &Env, repo: &Path) -> (String, PathBuf, String, PathBuf) {
    let (outer, ws) = prepare_roots(env, repo, &[]);
    std::fs::write(ws[0].join("outer.txt"), "outer work\n").unwrap();
    let (inner, inner_ws) = prepare_roots(env, &ws[0], &[]);
    assert_eq!(inner["source"], ws[0].to_str().unwrap());
    std::fs::write(inner_ws[0].join("inner.txt"), "inner work\n").unwrap();
    (
        outer["batch"].as_str().unwrap().to_string(),
        ws[0].clone(),
        inner["batch"].as_str().unwrap().to_string(),
        inner_ws[0].clone(),
    )
}

#[test]
fn apply_keeps_a_workspace_that_is_the_source_of_another_open_batch() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    let out = apply(&env, &repo, &[&outer], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("outer.txt")), "outer work\n");
    assert_eq!(out["kept_workspaces"][0]["task"], "1", "{out:#}");
    assert_eq!(out["kept_workspaces"][0]["workspace"], ws.to_str().unwrap());
    assert_eq!(out["kept_workspaces"][0]["batches"][0], inner.as_str());
    // The inner batch's source is still there, as an ordinary worktree,
    // and the inner batch still applies into it.
    assert_eq!(read_lossy(&ws.join("outer.txt")), "outer work\n");
    assert!(worktree_list(&env, &repo).contains(ws.to_str().unwrap()));
    let out = apply(&env, &ws, &[&inner], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&ws.join("inner.txt")), "inner work\n");
    assert!(!repo.join("inner.txt").exists());
}

#[test]
fn drop_refuses_then_keeps_a_workspace_that_is_the_source_of_another_open_batch() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    std::fs::remove_file(ws.join("outer.txt")).unwrap(); // no unapplied work
    let doc = env
        .delegate(&repo, ["drop", &outer, "--json"])
        .expect(1)
        .json();
    assert_eq!(doc["dropped"], false, "{doc:#}");
    assert_eq!(doc["unapplied"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["hosts_open_batches"][0]["batches"][0], inner.as_str());
    assert!(ws.join(".git").is_file());
    let doc = env
        .delegate(&repo, ["drop", &outer, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["dropped"], true);
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(doc["kept_workspaces"][0]["workspace"], ws.to_str().unwrap());
    assert!(ws.join("README").is_file());
    let out = apply(&env, &ws, &[&inner], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&ws.join("inner.txt")), "inner work\n");
}

/// A folder that refuses writing even to root, undone on drop: `chattr +i`
/// (ext4, xfs), else a read-only bind mount (root), else, for a user that
/// is not root, `chmod 555`. `None` after saying SKIPPED (a failure under
/// `CI=true`) when none of them works here.
struct Unwritable {
    dir: PathBuf,
    how: &'static str,
}

impl Unwritable {
    fn new(test: &str, dir: &Path) -> Option<Unwritable> {
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(cmd)
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let d = dir.as_os_str();
        let refuses = || {
            let refused = std::fs::write(dir.join(".probe"), "x").is_err();
            let _ = std::fs::remove_file(dir.join(".probe"));
            refused
        };
        let is_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let attempts: [(&'static str, &dyn Fn() -> bool); 3] = [
            ("chmod", &|| {
                !is_root
                    && std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).is_ok()
            }),
            ("chattr", &|| is_root && run("chattr", &["+i".as_ref(), d])),
            ("mount", &|| {
                is_root
                    && run("mount", &["--bind".as_ref(), d, d])
                    && (run("mount", &["-o".as_ref(), "remount,bind,ro".as_ref(), d])
                        || !run("umount", &[d]))
            }),
        ];
        for (how, attempt) in attempts {
            if attempt() {
                let u = Unwritable {
                    dir: dir.to_path_buf(),
                    how,
                };
                if refuses() {
                    return Some(u);
                }
            }
        }
        crate::common::mounts::skip(
            test,
            "neither chmod 555 (not root), chattr +i nor a read-only bind mount stops writing here",
        );
        None
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        let d = self.dir.as_os_str();
        let _ = match self.how {
            "chattr" => std::process::Command::new("chattr")
                .args(["-i".as_ref(), d])
                .status(),
            "mount" => std::process::Command::new("umount").arg(d).status(),
            _ => std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755))
                .map(|_| std::process::ExitStatus::default()),
        };
    }
}

#[test]
fn a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join("locked")).unwrap();
    std::fs::create_dir_all(repo.join("open")).unwrap();
    std::fs::write(repo.join("locked/a.txt"), "a\n").unwrap();
    std::fs::write(repo.join("open/b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "folders"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("locked/a.txt"), "a, task 1\n").unwrap();
    std::fs::write(ws[1].join("open/b.txt"), "b, task 2\n").unwrap();
    std::fs::write(ws[2].join("locked/new.txt"), "new, task 3\n").unwrap();
    std::fs::write(ws[2].join("top.txt"), "top, task 3\n").unwrap();
    let Some(guard) = Unwritable::new(
        "a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there",
        &repo.join("locked"),
    ) else {
        return;
    };
    let out = apply(&env, &repo, &[], 1);
    drop(guard);
    for name in ["1", "3"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{out:#}");
        assert_eq!(t["reason"], "write_failed", "{out:#}");
        assert_eq!(t["conflicts"][0]["path"], "locked", "{out:#}");
        let reason = t["conflicts"][0]["reason"].as_str().unwrap();
        assert!(reason.starts_with("folder not writable: "), "{reason}");
        assert!(
            reason.contains("os error 1)")
                || reason.contains("os error 13)")
                || reason.contains("os error 30)"),
            "{reason}"
        );
        let message = t["message"].as_str().unwrap();
        assert!(message.contains("the folder locked"), "{message}");
        assert!(t["proposal_ref"].is_string());
    }
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("open/b.txt")), "b, task 2\n");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a\n");
    assert!(!repo.join("locked/new.txt").exists());
    assert!(!repo.join("top.txt").exists());
    // Writable again: the two tasks apply.
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a, task 1\n");
    assert_eq!(read_lossy(&repo.join("locked/new.txt")), "new, task 3\n");
}

#[test]
fn an_ignored_symlink_in_the_way_is_named_and_never_written_through() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join(".gitignore"), "dir\n").unwrap();
    env.git(&repo, ["add", ".gitignore"]);
    env.git(&repo, ["commit", "-q", "-m", "ignore"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::create_dir(ws[0].join("dir")).unwrap();
    std::fs::write(ws[0].join("dir/f"), "task\n").unwrap();
    env.git(&ws[0], ["add", "-f", "dir/f"]);
    std::fs::write(ws[1].join("ok.txt"), "ok\n").unwrap();
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, repo.join("dir")).unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let t = task(&out, "1");
    assert_eq!(t["status"], "conflict", "{out:#}");
    assert_eq!(t["reason"], "would_overwrite_untracked", "{out:#}");
    assert_eq!(
        t["conflicts"],
        serde_json::json!([{"path": "dir", "reason": "ignored symlink in the way"}]),
        "{out:#}"
    );
    assert!(
        run.stderr.contains("dir (ignored symlink in the way)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("dir/f"), "{}", run.stderr);
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(repo.join("dir"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_failing_smudge_filter_in_write_back_is_named_and_rolled_back() {
    let env = Env::new();
    let (repo, smudge) = crate::common::fixtures::filtered_repo(&env, "proj", "cat\n");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.dat"), "data, task\n").unwrap();
    std::fs::write(&smudge, "exit 5\n").unwrap();
    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let t = task(&out, "1");
    assert_eq!(t["status"], "failed", "{out:#}");
    assert_eq!(t["reason"], "write_failed", "{out:#}");
    let message = t["message"].as_str().unwrap();
    assert!(message.contains("smudge filter"), "{message}");
    assert!(message.contains("a.dat"), "{message}");
    assert!(message.contains("exit status: 5"), "{message}");
    assert_eq!(read_lossy(&repo.join("a.dat")), "data\n");
}

#[test]
fn control_characters_in_the_source_path_are_escaped_for_the_terminal() {
    let env = Env::new();
    let dir = env.path().join(os(b"bad\x1b[31mname\nx"));
    std::fs::create_dir(&dir).unwrap();
    env.git(&dir, ["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    env.git(&dir, ["add", "README"]);
    env.git(&dir, ["commit", "-q", "-m", "init"]);
    let run = env.delegate(&dir, ["prepare"]).expect(0);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(run.stdout.contains("bad_[31mname_x-"), "{:?}", run.stdout);
    let (_, ws) = prepare_roots(&env, &dir, &["--label", "b"]);
    // The workspace folder name has no control characters.
    let base = ws[0].parent().unwrap().parent().unwrap();
    let name = base.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("bad_[31mname_x-"), "{name:?}");
    std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
    let run = env.delegate(&dir, ["apply", "b"]).expect(0);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(!run.stdout.contains("name\nx"), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("bad\\e[31mname\\nx"),
        "{:?}",
        run.stdout
    );
    // JSON keeps the exact string.
    let doc = env.delegate(&dir, ["status", "--json"]).expect(0).json();
    let source = doc["batches"][0]["source"].as_str().unwrap_or_default();
    assert!(
        source.is_empty() || source.ends_with("bad\x1b[31mname\nx"),
        "{doc:#}"
    );
    // An error that names the path is escaped too.
    std::fs::write(dir.join(".git/delegate.toml"), "[workspace\n").unwrap();
    let run = env.delegate(&dir, ["status"]).expect(2);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
    assert!(
        run.stderr.contains("bad\\e[31mname\\nx"),
        "{:?}",
        run.stderr
    );
}

#[test]
fn a_top_folder_that_refuses_writing_fails_only_the_tasks_that_write_in_it() {
    let env = Env::new();
    // The git dir lives apart, so a read-only mount of the working tree
    // (the fallback where chattr +i does not work) leaves it writable.
    let repo = env.path().join("proj");
    std::fs::create_dir(&repo).unwrap();
    let git_dir = env.path().join("proj.git");
    env.git(
        &repo,
        [
            "init".as_ref(),
            "-q".as_ref(),
            "-b".as_ref(),
            "main".as_ref(),
            "--separate-git-dir".as_ref(),
            git_dir.as_os_str(),
        ],
    );
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/s.txt"), "s\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("README"), "task 1\n").unwrap();
    std::fs::write(ws[1].join("sub/s.txt"), "s, task 2\n").unwrap();
    std::fs::create_dir(ws[2].join("newdir")).unwrap();
    std::fs::write(ws[2].join("newdir/n.txt"), "n\n").unwrap();
    let test = "a_top_folder_that_refuses_writing_fails_only_the_tasks_that_write_in_it";
    let Some(guard) = Unwritable::new(test, &repo) else {
        return;
    };
    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    drop(guard);
    let out = run.json();
    for name in ["1", "3"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{out:#}");
        assert_eq!(t["reason"], "write_failed", "{out:#}");
        assert_eq!(t["conflicts"][0]["path"], "", "{out:#}");
    }
    assert!(
        run.stderr.contains("the top folder (folder not writable"),
        "{}",
        run.stderr
    );
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("sub/s.txt")), "s, task 2\n");
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");
    assert!(!repo.join("newdir").exists());
}

/// `apply --discard` of a task whose workspace holds a nested repository:
/// discarding is an explicit give-up, so the workspace goes, but never
/// silently: the output names the nested repository removed with it (it is
/// not in the kept proposal), and the kept proposal holds the rest of the
/// work.
#[test]
fn discarding_a_task_with_a_nested_repository_keeps_its_workspace() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);

    let out = apply(&env, &repo, &["--discard", "1", "--discard", "2"], 0);
    for (i, (name, nested, edit)) in [("1", "sub", "f.txt"), ("2", "deps/lib", "two.txt")]
        .into_iter()
        .enumerate()
    {
        let t = task(&out, name);
        assert_eq!(t["status"], "discarded", "{out:#}");
        // The rest of its work is kept as a proposal, as for any discard.
        assert_eq!(t["kept"], true, "{out:#}");
        let r = t["proposal_ref"].as_str().unwrap();
        env.git(&repo, ["cat-file", "-e", &format!("{r}:{edit}")]);
        // The nested repository is in no proposal: its workspace stays.
        assert_eq!(strings(&t["nested_repositories"]), [nested], "{out:#}");
        assert_eq!(t["workspace"], ws[i].to_str().unwrap(), "{out:#}");
        assert!(ws[i].join(nested).join(".git").exists(), "{nested}");
    }
    // Kept as ordinary worktrees: registered, unlocked, which gc never removes.
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    for w in &ws {
        assert!(list.contains(w.to_str().unwrap()), "{list}");
    }
    assert!(!list.contains("locked"), "{list}");
    env.delegate(&repo, ["gc"]).expect(0);
    assert!(ws[0].join("sub/.git").is_dir() && ws[1].join("deps/lib/.git").exists());

    // The same in human text, with the command that removes it, which works
    // as printed.
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);
    let run = env
        .delegate(&repo, ["apply", "--discard", "1", "--discard", "2"])
        .expect(0);
    assert!(
        run.stdout.contains(
            "its workspace is kept as an ordinary worktree: it holds the git repository sub its worker made"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("deps/lib"), "{}", run.stdout);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("git worktree remove --force") && l.contains(ws[0].to_str().unwrap()))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let cmd = line
        .trim()
        .trim_start_matches("when you are done with it: ");
    assert!(cmd.starts_with("git worktree remove --force"), "{cmd}");
    // Run exactly as printed, through a shell, in git's hermetic environment.
    let git = env.git_cmd(&repo);
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c").arg(cmd).current_dir(&repo).env_clear();
    for (k, v) in git.get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    assert!(sh.status().unwrap().success(), "{cmd}");
    assert!(!ws[0].exists());
}

/// A folder that refuses writing (task 1) and a write-back of the other
/// tasks that fails and is rolled back: every task fails, nothing changes,
/// no journal is left; the next apply writes only the other tasks, and
/// task 1 applies once the folder is writable.
#[test]
fn an_unwritable_folder_and_a_rolled_back_write_leave_a_clean_journal() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join("locked")).unwrap();
    std::fs::create_dir_all(repo.join("open")).unwrap();
    std::fs::write(repo.join("locked/a.txt"), "a\n").unwrap();
    std::fs::write(repo.join("open/b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "folders"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("locked/a.txt"), "a, task 1\n").unwrap();
    std::fs::write(ws[1].join("open/b.txt"), "b, task 2\n").unwrap();
    std::fs::write(ws[2].join("top.txt"), "top, task 3\n").unwrap();
    let journals = |repo: &Path| -> usize {
        let dir = repo.join(".git/delegate/batches");
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().join("writeback.journal").exists())
                    .count()
            })
            .unwrap_or(0)
    };
    let Some(guard) = Unwritable::new(
        "an_unwritable_folder_and_a_rolled_back_write_leave_a_clean_journal",
        &repo.join("locked"),
    ) else {
        return;
    };
    let before = digest(&repo, true);
    let run = env
        .delegate_cmd(&repo)
        .args(["apply", "--json"])
        .env("GIT_DELEGATE_FAULT", "fail-rename:2")
        .output()
        .unwrap();
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(run.status.code(), Some(1), "{out:#}");
    for name in ["1", "2", "3"] {
        assert_eq!(task(&out, name)["status"], "failed", "{out:#}");
        assert_eq!(task(&out, name)["reason"], "write_failed", "{out:#}");
    }
    assert_eq!(task(&out, "1")["conflicts"][0]["path"], "locked", "{out:#}");
    assert_eq!(digest(&repo, true), before);
    assert_eq!(journals(&repo), 0);
    env.delegate(&repo, ["status", "--check"]).expect(0);

    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "1")["status"], "failed", "{out:#}");
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(task(&out, "3")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("open/b.txt")), "b, task 2\n");
    assert_eq!(read_lossy(&repo.join("top.txt")), "top, task 3\n");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a\n");
    assert_eq!(journals(&repo), 0);
    drop(guard);
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a, task 1\n");
    assert_eq!(journals(&repo), 0);
    env.delegate(&repo, ["status", "--check"]).expect(0);
}

/// The command the kept-workspace line suggests works as printed once the
/// inner batch is applied.
#[test]
fn the_command_to_remove_a_kept_workspace_works_as_printed() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    let run = env.delegate(&repo, ["apply", &outer]).expect(0);
    let cmd = run
        .stdout
        .split('`')
        .find(|s| s.starts_with("git worktree remove"))
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .to_string();
    apply(&env, &ws, &[&inner], 0);
    // The inner batch's result is committed in the workspace, as a user
    // keeps it before removing the worktree.
    env.git(&ws, ["add", "-A"]);
    env.git(&ws, ["commit", "-q", "-m", "inner result"]);
    let out = env
        .git_cmd(&repo)
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(cmd.split_whitespace().skip(1))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!ws.exists());
}

/// The messages of the interrupted write-back (status --check, apply
/// --dry-run, rollback_failed) and of a moved source are escaped for the
/// terminal when the source path and a file name hold control characters.
#[test]
fn write_back_and_moved_source_messages_escape_control_characters() {
    let env = Env::new();
    let dir = env.path().join(os(b"src\x1b[31mred"));
    std::fs::create_dir(&dir).unwrap();
    env.git(&dir, ["init", "-q", "-b", "main"]);
    let bad = os(b"f\x1b[2Jname\x07");
    for i in 1..=2 {
        std::fs::write(dir.join(format!("f{i}")), format!("original {i}\n")).unwrap();
    }
    std::fs::write(dir.join(bad), "original bad\n").unwrap();
    env.git(&dir, ["add", "-A"]);
    env.git(&dir, ["commit", "-q", "-m", "init"]);
    let (_, ws) = prepare_roots(&env, &dir, &[]);
    for i in 1..=2 {
        std::fs::write(ws[0].join(format!("f{i}")), format!("task {i}\n")).unwrap();
    }
    std::fs::write(ws[0].join(bad), "task bad\n").unwrap();
    // Path order: "f\e..." (1 aside, 2 in place), f1, f2; killed after f1 is in.
    let out = env
        .delegate_cmd(&dir)
        .args(["apply"])
        .env("GIT_DELEGATE_FAULT", "after-rename:4")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    std::fs::write(dir.join(bad), "USER\n").unwrap();
    let clean = |run: &crate::common::Run| {
        for s in [&run.stdout, &run.stderr] {
            assert!(
                !s.contains('\x1b') && !s.contains('\x07'),
                "{:?}\n{:?}",
                run.stdout,
                run.stderr
            );
        }
    };
    let run = env.delegate(&dir, ["status", "--check"]).expect(1);
    clean(&run);
    let run = env.delegate(&dir, ["apply", "--dry-run"]).expect(3);
    clean(&run);
    let run = env.delegate(&dir, ["apply"]).expect(3);
    assert!(run.stderr.contains("rollback_failed"), "{}", run.stderr);
    clean(&run);
    let run = env.delegate(&dir, ["status", "--check"]).expect(1);
    clean(&run);
    let run = env.delegate(&dir, ["gc"]).expect(3);
    clean(&run);
    // Resolved (the user keeps theirs), then the source moves.
    let doc = env.delegate(&dir, ["apply", "--json"]).expect(3).json();
    let kept = doc["error"]["paths"][0]["kept"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(kept).unwrap();
    env.delegate(&dir, ["gc"]).expect(0);
    let moved = env.path().join(os(b"moved\x1b[32mgreen"));
    std::fs::rename(&dir, &moved).unwrap();
    let run = env.delegate(&moved, ["apply"]).expect(3);
    assert!(run.stderr.contains("source_moved"), "{}", run.stderr);
    clean(&run);
}

/// `apply --dry-run --discard` names the nested repository the discard
/// would remove, and removes nothing.
#[test]
fn a_dry_run_discard_names_the_nested_repository_that_would_keep_its_workspace() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);
    let out = apply(&env, &repo, &["--dry-run", "--discard", "1"], 1);
    assert_eq!(task(&out, "1")["status"], "discarded", "{out:#}");
    assert_eq!(
        strings(&task(&out, "1")["nested_repositories"]),
        ["sub"],
        "{out:#}"
    );
    let run = env
        .delegate(&repo, ["apply", "--dry-run", "--discard", "1"])
        .expect(1);
    assert!(
        run.stdout.contains(
            "its workspace would be kept as an ordinary worktree: it holds the git repository sub"
        ),
        "{}",
        run.stdout
    );
    assert!(ws[0].join("sub/.git").is_dir());
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
    let env = Env::new();
    let repo = env.repo("proj");
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
    let env = Env::new();
    let repo = env.repo("proj");
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
    let env = Env::new();
    let repo = env.repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let mut child = spawn_sleeper(&ws[0]);
    let pid = child.id();
    wait_until("the sleeper to enter the workspace", || {
        sleeper_in(pid, &std::fs::canonicalize(&ws[0]).unwrap())
    });
    let dry = env.delegate(&repo, ["apply", "--dry-run"]).expect(0).stdout;
    assert!(
        dry.contains("processes running inside its workspace:"),
        "{dry}"
    );
    assert!(dry.contains(&format!("        {pid} sleep 300\n")), "{dry}");
    let out = env.delegate(&repo, ["apply"]).expect(0).stdout;
    assert!(
        out.contains("stopped processes inside its workspace:"),
        "{out}"
    );
    assert!(out.contains(&format!("        {pid} sleep 300\n")), "{out}");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the sleeper was not stopped: {status:?}");
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
}
