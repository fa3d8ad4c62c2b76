//! The choices apply takes: `--only`, a second apply, unknown or closed
//! tasks, `--discard` (and what it keeps for gc.keep-failed), `--keep`,
//! `--dry-run`, and the human output that names the patch.
use crate::common::files::read_bytes;
use crate::common::fixtures::id;

use super::*;
use crate::common::assert_has;

#[test]
fn only_then_a_second_apply_and_unknown_or_closed_tasks_are_usage_errors() {
    let (env, repo) = Env::with_repo("proj");
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
    let (env, repo) = Env::with_repo("proj");
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
    let (env, repo) = Env::with_repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let batch = id(&doc);
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
    assert_eq!(read_bytes(&repo.join("new.bin")), b"\x00\x01binary\xff\n");

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
    let (env, repo) = Env::with_repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    let batch = id(&doc);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let run = env
        .delegate(&repo, ["apply", "--discard", "1", "--discard", "2"])
        .expect(0);
    let r = format!("refs/pi-delegate/batches/{batch}/tasks/1/proposal");
    assert!(run.stdout.contains(&r), "{}", run.stdout);
    assert_has(&run.stdout, ".patch");
    assert_has(&run.stdout, "gc.keep-failed");
    // Task 2 had no changes: nothing kept for it.
    let mut refs = env.private_refs(&repo);
    refs.sort();
    assert_eq!(refs, vec![r.clone()]);
    // Even while the batch stays open elsewhere, gc's keep-failed clock applies.
    let (doc2, ws2) = prepare_roots(&env, &repo, &["-n", "3"]);
    let batch2 = id(&doc2);
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

#[test]
fn human_output_names_the_patch_and_what_to_do() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 5, "first")).unwrap();
    std::fs::write(ws[1].join("f.txt"), lines_with(10, 5, "second")).unwrap();
    let run = env.delegate(&repo, ["apply"]).expect(1);
    assert_has(&run.stdout, "conflict");
    // No `git apply --3way` advice: it fails whenever the index differs
    // (design §3.16 "Hints"); the discard advice names the task.
    assert!(!run.stdout.contains("git apply"), "{}", run.stdout);
    assert_has(&run.stdout, "--discard 2\n");
    assert_has(&run.stdout, ws[1].to_str().unwrap());
    assert_has(&run.stdout, "2.patch");
}
