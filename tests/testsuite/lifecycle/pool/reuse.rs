//! Reusing idle workspaces where they are: the new baseline and nothing
//! else, their ignored files in place, one path (and inode) for life; what
//! is never pooled or never reused.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{idle, idle_count, repo, setup_line};
use crate::common::files::{read, read_bytes};
use crate::common::fixtures::{config, id, prepare, task_root, tree_of, write};
use crate::common::Env;

#[test]
fn a_reused_workspace_holds_the_new_baseline_and_keeps_its_build_output() {
    let env = Env::new();
    let repo = repo(&env, 2);
    let first = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&first, 0);
    let setup = read(&ws.join("build/setup.txt"));
    assert_eq!(setup, setup_line(&first, 0));
    let build_ino = std::fs::metadata(ws.join("build/setup.txt")).unwrap().ino();
    // The worker edits, deletes and adds; its work is discarded.
    write(&ws.join("src/a.txt"), "worker\n");
    std::fs::remove_file(ws.join("src/deep/b.txt")).unwrap();
    write(&ws.join("worker-untracked.txt"), "mine\n");
    write(&ws.join("build/cache.o"), "object\n");
    env.delegate(&repo, ["apply", "--discard", "1"]).expect(0);
    // Idle where it is: a slot of the pool.
    let pooled = idle(&env, &repo);
    assert_eq!(pooled, vec![ws.clone()]);
    let base = crate::common::fixtures::workspace_base(&env, &repo);
    assert_eq!(ws.parent().unwrap(), base.join("pool"));
    assert_eq!(idle_count(&env, &repo), 1);
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(status.contains("1 idle workspace in the pool"), "{status}");

    // The user commits, edits without committing and adds an untracked file.
    write(&repo.join("src/new.txt"), "new\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "new"]);
    write(&repo.join("src/deep/b.txt"), "b edited\n");
    write(&repo.join("untracked.txt"), "user's\n");

    let second = prepare(&env, &repo, &["-n", "1"]);
    let ws2 = task_root(&second, 0);
    assert_eq!(ws2, ws, "the workspace kept its path");
    assert!(idle(&env, &repo).is_empty());
    assert_eq!(idle_count(&env, &repo), 0);
    let baseline = second["baseline"]["commit"].as_str().unwrap();
    // Exactly the new baseline; the ignored output is the same file.
    assert_eq!(env.oracle_tree(&ws2), tree_of(&env, &repo, baseline));
    assert_eq!(read(&ws2.join("src/a.txt")), "a\n");
    assert_eq!(read(&ws2.join("src/deep/b.txt")), "b edited\n");
    assert!(ws2.join("src/new.txt").exists() && ws2.join("untracked.txt").exists());
    assert!(!ws2.join("worker-untracked.txt").exists());
    let meta = std::fs::metadata(ws2.join("build/setup.txt")).unwrap();
    assert_eq!(meta.ino(), build_ino, "the build output was kept in place");
    assert!(ws2.join("build/cache.o").exists());
    // Setup ran again, once, in the reused workspace.
    let setup = read(&ws2.join("build/setup.txt"));
    let want = setup_line(&first, 0) + &setup_line(&second, 0);
    assert_eq!(setup, want, "setup ran again where it ran before");
    // git sees a clean tree with a valid stat cache: nothing to re-read.
    assert_eq!(env.git(&ws2, ["status", "--porcelain"]), "");
    let index = PathBuf::from(env.git(&ws2, ["rev-parse", "--git-path", "index"]).trim());
    let index = if index.is_absolute() {
        index
    } else {
        ws2.join(index)
    };
    let before = read_bytes(&index);
    assert!(env
        .git_cmd(&ws2)
        .args(["diff-files", "--quiet"])
        .status()
        .unwrap()
        .success());
    env.git(&ws2, ["status", "--porcelain"]);
    assert_eq!(read_bytes(&index), before, "status rewrote the index");
    env.git(&ws2, ["fsck", "--no-dangling", "--cache"]);
    let (tree, hashed) = crate::common::fixtures::snapshot(&env, &ws2);
    assert_eq!(
        (tree.as_str(), hashed),
        (tree_of(&env, &repo, baseline).as_str(), 0)
    );
    // It works as any workspace: its change applies.
    write(&ws2.join("src/a.txt"), "second worker\n");
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(read(&repo.join("src/a.txt")), "second worker\n");
    assert_eq!(idle(&env, &repo).len(), 1);
}

#[test]
fn idle_workspaces_are_locked_detached_worktrees_and_a_conflict_is_never_pooled() {
    let env = Env::new();
    let repo = repo(&env, 4);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let (ws1, ws2) = (task_root(&doc, 0), task_root(&doc, 1));
    write(&ws1.join("src/a.txt"), "task one\n");
    write(&repo.join("src/a.txt"), "the user's\n");
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(apply["tasks"][0]["status"], "conflict", "{apply:#}");
    // Task 2 (no changes) is idle where it is; task 1 keeps its workspace.
    assert!(ws1.join("src/a.txt").exists());
    assert_eq!(idle(&env, &repo), vec![ws2.clone()]);
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    let block = list
        .split("\n\n")
        .find(|b| b.contains("locked git-delegate pool"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(block.lines().any(|l| l == "detached"), "{block}");
    let root = block
        .lines()
        .next()
        .unwrap()
        .strip_prefix("worktree ")
        .unwrap();
    let base = crate::common::fixtures::workspace_base(&env, &repo);
    assert_eq!(Path::new(root).parent().unwrap(), base.join("pool"));
    assert_eq!(idle(&env, &repo).len(), 1);
    // Dropping the conflicting batch removes its workspace; it never goes
    // idle, and the idle one, its task closed, is not the batch's to remove.
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    assert!(!ws1.exists());
    assert_eq!(idle(&env, &repo), vec![ws2.clone()]);
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["idle_workspaces"], 1, "{status:#}");
}

#[test]
fn a_workspace_keeps_its_path_and_inode_for_three_rounds() {
    let env = Env::new();
    let repo = repo(&env, 2);
    let first = prepare(&env, &repo, &["-n", "2"]);
    let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
    let mut homes: Vec<(PathBuf, u64)> = (0..2)
        .map(|i| task_root(&first, i))
        .map(|r| (r.clone(), ino(&r)))
        .collect();
    homes.sort();
    let mut doc = first;
    for round in 0..3 {
        // Each worker changes a file of its own; the user commits meanwhile.
        for i in 0..2 {
            let ws = task_root(&doc, i);
            write(
                &ws.join(format!("src/t{i}.txt")),
                &format!("round {round}\n"),
            );
        }
        env.delegate(&repo, ["apply"]).expect(0);
        env.git(&repo, ["add", "-A"]);
        env.git(&repo, ["commit", "-q", "-m", &format!("round {round}")]);
        doc = prepare(&env, &repo, &["-n", "2"]);
        let mut now: Vec<(PathBuf, u64)> = (0..2)
            .map(|i| task_root(&doc, i))
            .map(|r| (r.clone(), ino(&r)))
            .collect();
        now.sort();
        assert_eq!(now, homes, "round {round}");
        let baseline = doc["baseline"]["commit"].as_str().unwrap();
        for i in 0..2 {
            let ws = task_root(&doc, i);
            assert_eq!(env.oracle_tree(&ws), tree_of(&env, &repo, baseline));
            assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
            // Every way a task's folder is named names that one path.
            assert_eq!(doc["tasks"][i]["cwd"].as_str(), Some(ws.to_str().unwrap()));
            let task = (i + 1).to_string();
            let path = env.delegate(&repo, ["path", &task]).expect(0).stdout;
            assert_eq!(path.trim_end(), ws.to_str().unwrap());
        }
        let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        let roots: Vec<&str> = (0..2)
            .map(|i| status["batches"][0]["tasks"][i]["root"].as_str().unwrap())
            .collect();
        assert_eq!(
            roots,
            [0, 1]
                .map(|i| task_root(&doc, i))
                .map(|p| p.display().to_string())
        );
    }
    // `run`'s `{workspace}` is that path too.
    env.delegate(&repo, ["apply"]).expect(0);
    let out = env.path().join("run-out");
    let run = env
        .delegate(
            &repo,
            [
                "run",
                "-n",
                "2",
                // (The workers write outside their workspaces: unconfined.)
                "--no-sandbox",
                "--",
                "sh",
                "-c",
                &format!("echo \"$1\" >> {}", out.display()),
                "sh",
                "{workspace}",
            ],
        )
        .expect(0);
    let mut seen: Vec<PathBuf> = read(&out).lines().map(PathBuf::from).collect();
    seen.sort();
    let homes: Vec<PathBuf> = homes.into_iter().map(|(p, _)| p).collect();
    assert_eq!(seen, homes, "{}", run.stderr);
}

#[test]
fn a_workspace_swapped_or_written_into_while_idle_is_not_reused() {
    let env = Env::new();
    let repo = repo(&env, 4);
    prepare(&env, &repo, &["-n", "4"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 4);
    let outside = env.path().join("outside");
    write(&outside.join("keep.txt"), "not yours\n");
    // Written into: a tracked file, an untracked file, a symlink planted
    // where a folder was, a nested repository.
    write(&pooled[0].join("src/a.txt"), "planted\n");
    write(&pooled[1].join("planted.txt"), "planted\n");
    std::fs::remove_dir_all(pooled[2].join("src/deep")).unwrap();
    std::os::unix::fs::symlink(&outside, pooled[2].join("src/deep")).unwrap();
    env.git(&pooled[3], ["init", "-q", "src/nested"]);
    write(&pooled[3].join("src/nested/x"), "x\n");

    let doc = prepare(&env, &repo, &["-n", "4"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    for i in 0..4 {
        let ws = task_root(&doc, i);
        assert_eq!(
            env.oracle_tree(&ws),
            tree_of(&env, &repo, baseline),
            "{}",
            ws.display()
        );
        assert!(!ws.join("planted.txt").exists());
        assert!(!ws.join("src/nested").exists());
        assert!(ws.join("src/deep").symlink_metadata().unwrap().is_dir());
        // A new workspace: its setup output holds this prepare's line only.
        let setup = read(&ws.join("build/setup.txt"));
        assert_eq!(setup, setup_line(&doc, i), "{}", ws.display());
    }
    for p in &pooled {
        assert!(!p.exists(), "{} was removed", p.display());
    }
    assert_eq!(read(&outside.join("keep.txt")), "not yours\n");
    env.delegate(&repo, ["apply"]).expect(0);

    // Swapped: a copy put in its place (another inode) is left alone.
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 4);
    let aside = env.path().join("aside");
    std::fs::rename(&pooled[0], &aside).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&aside)
        .arg(&pooled[0])
        .status()
        .unwrap();
    assert!(copied.success());
    write(&pooled[0].join("src/a.txt"), "the copy\n");
    let doc = prepare(&env, &repo, &["-n", "4"]);
    let mut reused = 0;
    for i in 0..4 {
        let ws = task_root(&doc, i);
        assert_eq!(read(&ws.join("src/a.txt")), "a\n");
        let setup = read(&ws.join("build/setup.txt"));
        reused += usize::from(setup.lines().count() == 2);
    }
    assert_eq!(
        reused, 3,
        "the three idle workspaces left as they were are reused"
    );
    assert_eq!(
        read(&pooled[0].join("src/a.txt")),
        "the copy\n",
        "a folder that is not the one pooled is left alone"
    );
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
}

#[test]
fn the_pool_works_with_btrfs_snapshot_workspaces() {
    let Some(env) =
        crate::common::mounts::btrfs_env("the_pool_works_with_btrfs_snapshot_workspaces")
    else {
        return;
    };
    let repo = repo(&env, 1);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    // Build output each worker made (snapshots share inode numbers, and
    // subvolumes' device numbers are reused: the files tell them apart).
    for i in 0..2 {
        write(&task_root(&doc, i).join("build/who"), &format!("{i}\n"));
    }
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 1);
    write(&repo.join("src/a.txt"), "changed\n");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    let mut reused = 0;
    for i in 0..2 {
        let ws = task_root(&doc, i);
        assert_eq!(env.oracle_tree(&ws), tree_of(&env, &repo, baseline));
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
        reused += usize::from(ws.join("build/who").exists());
        assert_eq!(read(&ws.join("src/a.txt")), "changed\n");
        let lines = read(&ws.join("build/setup.txt"));
        assert!(lines.ends_with(&setup_line(&doc, i)), "{lines}");
    }
    assert_eq!(reused, 1, "one workspace came from the pool");
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 1);
    let drop = env
        .delegate(&repo, ["drop", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(drop["idle_workspaces_removed"], 1);
    assert!(idle(&env, &repo).is_empty());
}

#[test]
fn a_bad_pool_value_points_at_its_line() {
    let env = Env::new();
    let repo = env.repo("proj");
    for (text, at) in [
        ("[workspace]\npool = \"many\"\n", "delegate.toml:2:8"),
        ("[workspace]\npool = -1\n", "delegate.toml:2:8"),
        (
            "[workspace]\npool = 2\npool-ttl = \"soon\"\n",
            "delegate.toml:3:12",
        ),
    ] {
        config(&env, &repo, text);
        let run = env.delegate(&repo, ["prepare", "-n", "1"]).expect(2);
        assert!(run.stderr.contains(at), "{text}: {}", run.stderr);
        assert!(run.stderr.contains("delegate::config"), "{}", run.stderr);
    }
}

#[test]
fn worker_state_in_the_registration_keeps_a_workspace_out_and_gc_takes_unrecorded_idle_ones() {
    let env = Env::new();
    let repo = repo(&env, 4);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    // Task 1's worker left a merge under way in its registration.
    let git_dir = PathBuf::from(
        env.git(&task_root(&doc, 0), ["rev-parse", "--absolute-git-dir"])
            .trim(),
    );
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    std::fs::write(git_dir.join("MERGE_HEAD"), head).unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1, "{pooled:?}");
    assert!(!git_dir.exists(), "its workspace was removed");
    // An idle workspace whose record is gone (a park killed half-way) is gc's.
    let common = crate::common::fixtures::common_dir(&env, &repo);
    for e in std::fs::read_dir(common.join("delegate/pool")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    assert_eq!(idle_count(&env, &repo), 0);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["idle_workspaces_removed"], 1, "{gc:#}");
    assert!(!pooled[0].exists());
    assert!(idle(&env, &repo).is_empty());
}

#[test]
fn an_idle_workspace_hosting_a_batch_is_neither_reused_nor_removed() {
    let env = Env::new();
    let repo = repo(&env, 2);
    prepare(&env, &repo, &["-n", "1"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1);
    // Someone prepares a batch inside the idle workspace.
    let inner = prepare(&env, &pooled[0], &["-n", "1"]);
    write(&pooled[0].join("src/a.txt"), "the inner batch's source\n");
    let outer = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&outer, 0);
    assert_eq!(read(&ws.join("src/a.txt")), "a\n");
    let gc = env
        .delegate(&repo, ["gc", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(gc["idle_workspaces_removed"], 0, "{gc:#}");
    assert_eq!(
        read(&pooled[0].join("src/a.txt")),
        "the inner batch's source\n"
    );
    env.delegate(&pooled[0], ["drop", &id(&inner), "--force"])
        .expect(0);
    let gc = env
        .delegate(&repo, ["gc", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(gc["idle_workspaces_removed"], 1, "{gc:#}");
    assert!(!pooled[0].exists());
    env.delegate(&repo, ["drop", &id(&outer)]).expect(0);
}

/// `apply --dry-run` says what apply would do with each workspace (design
/// §3.20): park it in the pool while `workspace.pool` has room, remove the
/// rest; the apply after does just that, and says it the same way.
#[test]
fn apply_dry_run_says_which_workspaces_it_would_park_and_which_it_would_remove() {
    let env = Env::new();
    let repo = repo(&env, 1);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    write(&task_root(&doc, 0).join("src/a.txt"), "one\n");
    let dry = env.delegate(&repo, ["apply", "--dry-run"]).expect(0).stdout;
    assert!(
        dry.contains("Would park the workspace of task 1 idle in the pool"),
        "{dry}"
    );
    assert!(
        dry.contains("Would remove the workspace of task 2."),
        "{dry}"
    );
    assert!(
        !dry.contains("Would remove the workspace of task 1"),
        "{dry}"
    );
    assert_eq!(idle_count(&env, &repo), 0);
    let run = env.delegate(&repo, ["apply"]).expect(0).stdout;
    assert!(
        run.contains("Parked the workspace of task 1 idle in the pool"),
        "{run}"
    );
    assert!(run.contains("Removed the workspace of task 2."), "{run}");
    assert_eq!(idle(&env, &repo), vec![task_root(&doc, 0)]);
}
