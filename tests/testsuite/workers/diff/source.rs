//! `diff --source`: what the real apply would write to the source, tasks
//! left out as apply leaves them out; it writes nothing, and refuses while
//! a write-back is left over.
use crate::common::files::read_bytes;
use crate::common::fixtures::task_fates;

use super::*;
use crate::common::files::read;
use crate::common::killed_at;

/// Three tasks and the user's own edits: task 1 applies, task 2 changes
/// the line task 1 changed (`merge_conflict`), task 3 the line the user
/// changed (`source_changed`). `--source` is what the real apply then
/// writes: its patch, applied with `git apply` to a copy of the source,
/// gives the bytes the real apply leaves; it changes nothing itself.
/// `stderr` notes that `task` was left out, and names `reason`.
#[track_caller]
fn assert_left_out(stderr: &str, task: &str, reason: &str) {
    assert!(
        stderr.contains(&format!("note: task {task} left out")) && stderr.contains(reason),
        "{stderr}"
    );
}

#[test]
fn diff_source_is_what_apply_writes_and_changes_nothing() {
    let (env, repo) = three_tasks_and_the_users_edits();
    let refs_before = env.git(&repo, ["for-each-ref"]);
    let objects_before = env.git(&repo, ["count-objects", "-v"]);
    let index_before = read_bytes(&repo.join(".git/index"));
    let files_before = tree_bytes(&repo);
    let plain = env.delegate(&repo, ["diff", "--source"]).expect(0).stdout;
    let run = env
        .delegate(&repo, ["diff", "--source", "--binary"])
        .expect(0);
    let patch = run.stdout.clone();
    assert_left_out(&run.stderr, "2", "merge_conflict");
    assert_left_out(&run.stderr, "3", "source_changed");
    assert!(!run.stderr.contains("task 1 "), "{}", run.stderr);
    let names = env
        .delegate(&repo, ["diff", "--source", "--name-status"])
        .expect(0)
        .stdout;
    assert_eq!(
        names,
        "M\ta.txt\nA\tblob.bin\nA\tlink\nA\tnew.txt\nD\told.txt\nM\trun.sh\n"
    );
    let doc = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(0)
        .json();
    // Tasks named in another order (or twice) are integrated in task order,
    // as apply does.
    let named = env
        .delegate(&repo, ["diff", "--source", "--binary", "3", "2", "1", "2"])
        .expect(0)
        .stdout;
    assert_eq!(named, patch);
    // Nothing was written: refs, objects, the index, the working tree.
    assert_eq!(env.git(&repo, ["for-each-ref"]), refs_before);
    assert_eq!(env.git(&repo, ["count-objects", "-v"]), objects_before);
    assert_eq!(read_bytes(&repo.join(".git/index")), index_before);
    assert_eq!(tree_bytes(&repo), files_before);
    assert_eq!(doc["source"], true);
    let fates = task_fates(&doc);
    let paths = field_strs(&doc["paths"], "path");
    assert_eq!(
        paths,
        ["a.txt", "blob.bin", "link", "new.txt", "old.txt", "run.sh"]
    );

    // The oracle: the patch applied by git to a copy of the source.
    let (copy, s_tree, f_tree) = applied_by_git(&env, &repo, &patch);
    // git's own diff of the working tree before and after: the same bytes,
    // plain and coloured.
    let git_says = |extra: &[&str]| {
        let mut args = vec!["diff", "--binary", "--no-renames"];
        args.extend_from_slice(extra);
        args.push(&s_tree);
        args.push(&f_tree);
        env.git(&copy, args)
    };
    assert_eq!(patch, git_says(&[]));
    let painted = env
        .delegate(&repo, ["diff", "--source", "--binary", "--color=always"])
        .expect(0)
        .stdout;
    assert_eq!(painted, git_says(&["--color=always"]));
    // Without --binary, as plain `git diff` prints the same change.
    let git_plain = env.git(&copy, ["diff", "--no-renames", &s_tree, &f_tree]);
    assert_eq!(plain, git_plain);

    // The real apply: the same tasks out, the same bytes written.
    let applied = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    let real = task_fates(&applied);
    assert_eq!(fates, real);
    assert_eq!(
        fates.iter().map(|f| f.1.as_str()).collect::<Vec<_>>(),
        ["applied", "conflict", "conflict"]
    );
    assert_eq!(tree_bytes(&repo), tree_bytes(&copy));
    // The user's edits are still there, in both.
    let a = read(&repo.join("a.txt"));
    assert!(
        a.contains("line two\n") && a.contains("line 15 by me\n"),
        "{a}"
    );
}

/// A source of four files, a batch of three tasks and their work, the
/// user's own edits on top, as the test above says.
fn three_tasks_and_the_users_edits() -> (Env, PathBuf) {
    let (env, repo) = Env::with_repo("proj");
    let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("a.txt"), &lines).unwrap();
    std::fs::write(repo.join("user.txt"), "mine\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(repo.join("old.txt"), "old\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let roots: Vec<PathBuf> = roots(&doc);
    // Task 1: an edit, an add, a binary, an exec bit, a delete, a symlink.
    std::fs::write(
        roots[0].join("a.txt"),
        lines.replace("line 2\n", "line two\n"),
    )
    .unwrap();
    std::fs::write(roots[0].join("new.txt"), "fresh\n").unwrap();
    std::fs::write(roots[0].join("blob.bin"), [0u8, 1, 2, 255, 0, 9]).unwrap();
    let mut perm = std::fs::metadata(roots[0].join("run.sh"))
        .unwrap()
        .permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(roots[0].join("run.sh"), perm).unwrap();
    std::fs::remove_file(roots[0].join("old.txt")).unwrap();
    std::os::unix::fs::symlink("new.txt", roots[0].join("link")).unwrap();
    // Task 2: the same line as task 1, otherwise.
    std::fs::write(
        roots[1].join("a.txt"),
        lines.replace("line 2\n", "line 2 by two\n"),
    )
    .unwrap();
    std::fs::write(roots[1].join("two.txt"), "two\n").unwrap();
    // Task 3: the line the user changes.
    std::fs::write(
        roots[2].join("a.txt"),
        lines.replace("line 15\n", "line 15 by three\n"),
    )
    .unwrap();
    // The user keeps working: the line task 3 changes, and a file no task
    // touches.
    std::fs::write(
        repo.join("a.txt"),
        lines.replace("line 15\n", "line 15 by me\n"),
    )
    .unwrap();
    std::fs::write(repo.join("user.txt"), "mine, changed\n").unwrap();
    (env, repo)
}

/// `patch` applied with `git apply` to a copy of `repo`: the copy, and the
/// trees of its working tree before and after.
fn applied_by_git(env: &Env, repo: &Path, patch: &str) -> (PathBuf, String, String) {
    let copy = env.path().join("copy");
    let cp = std::process::Command::new("cp")
        .args(["-a"])
        .arg(repo)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let patch_file = env.path().join("source.patch");
    std::fs::write(&patch_file, patch).unwrap();
    env.git(&copy, ["add", "-A"]);
    let s_tree = env.git(&copy, ["write-tree"]).trim().to_string();
    env.git(&copy, ["apply", patch_file.to_str().unwrap()]);
    env.git(&copy, ["add", "-A"]);
    let f_tree = env.git(&copy, ["write-tree"]).trim().to_string();
    (copy, s_tree, f_tree)
}

fn cwd_is(pid: u32, dir: &Path) -> bool {
    std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir)
}

/// `--source` leaves out what apply leaves out beyond merge conflicts: a
/// task whose workspace has a process on a terminal (which neither stops:
/// it stays alive), a task whose new file an untracked file of the user's
/// is in the way of; keeps `-- PATH`; shows the batch's own source when
/// run from inside a workspace.
#[test]
fn diff_source_leaves_out_what_apply_would_and_filters_paths() {
    let env = Env::new();
    let (repo, _baseline, roots) = setup(&env);
    // Task 2 gets the terminal process.
    let ws3 = roots[1].clone();
    work(&roots[0]);
    std::fs::write(ws3.join("late.txt"), "late\n").unwrap();
    // The user's ignored file where task 1 adds one.
    std::fs::write(repo.join(".gitignore"), "new.txt\n").unwrap();
    std::fs::write(repo.join("new.txt"), "the user's own\n").unwrap();
    let mut term = std::process::Command::new("setsid")
        .args(["script", "-qc", "exec sleep 300", "/dev/null"])
        .current_dir(&ws3)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn script");
    let real = std::fs::canonicalize(&ws3).unwrap();
    let mut pid = 0;
    for _ in 0..600 {
        pid = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|&p| cwd_is(p, &real) && tty_nr(p).is_some_and(|t| t != 0))
            .unwrap_or(0);
        if pid != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_ne!(pid, 0, "no terminal process in the workspace");

    let run = env.delegate(&repo, ["diff", "--source"]).expect(0);
    assert!(
        run.stderr
            .contains("note: task 1 left out, as apply would leave it (would_overwrite_untracked: new.txt (untracked file in the way))"),
        "{}",
        run.stderr
    );
    assert_left_out(&run.stderr, "2", "processes_running");
    assert_eq!(run.stdout, "");
    let doc = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["reason"], "would_overwrite_untracked");
    assert_eq!(doc["tasks"][1]["reason"], "processes_running");
    assert_eq!(doc["tasks"][1]["status"], "failed");
    assert!(
        doc["tasks"][1]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{pid} sleep 300")),
        "{doc:#}"
    );
    assert_eq!(doc["paths"].as_array().unwrap().len(), 0);
    assert!(alive(pid), "diff --source stopped the terminal process");

    // With the untracked file gone, task 1 applies; `-- PATH` keeps part
    // of its result; from inside a workspace, the same source is shown.
    std::fs::remove_file(repo.join("new.txt")).unwrap();
    std::fs::remove_file(repo.join(".gitignore")).unwrap();
    let names = env
        .delegate(
            &repo,
            ["diff", "--source", "--name-status", "--", "sub", "new.txt"],
        )
        .expect(0)
        .stdout;
    assert_eq!(names, "A\tnew.txt\nM\tsub/b.txt\n");
    let here = env.delegate(&repo, ["diff", "--source"]).expect(0).stdout;
    let there = env
        .delegate(&roots[0], ["diff", "--source"])
        .expect(0)
        .stdout;
    assert_has(&here, "diff --git a/new.txt b/new.txt");
    assert_eq!(here, there);
    // The real apply agrees: task 1 applied, task 2 failed, process alive.
    let applied = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(applied["tasks"][0]["status"], "applied");
    assert_eq!(applied["tasks"][1]["reason"], "processes_running");
    assert!(alive(pid));
    let _ = term.kill();
    let _ = term.wait();
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
}

/// An apply killed during its write-back leaves part of its result in the
/// working tree: `diff --source` cannot say what apply would do, says so
/// (`delegate::writeback_pending`, exit 3, as `apply --dry-run`), and
/// changes nothing (the journal stays for the next mutating command).
#[test]
fn diff_source_refuses_while_a_write_back_is_left_over() {
    let env = Env::new();
    let (repo, _baseline, roots) = setup(&env);
    work(&roots[0]);
    killed_at(
        env.delegate_cmd(&repo).args(["apply", "--json"]),
        "after-rename:2",
    );
    let before = tree_bytes(&repo);
    let run = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(3);
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::writeback_pending",
        "{doc:#}"
    );
    assert!(doc["error"]["pending_writebacks"].is_array(), "{doc:#}");
    assert_eq!(tree_bytes(&repo), before);
    // The plain diff of a task still works: it reads only the workspace.
    env.delegate(&repo, ["diff", "1"]).expect(0);
    // The next apply rolls it back and finishes the job.
    env.delegate(&repo, ["apply"]).expect(0);
}
