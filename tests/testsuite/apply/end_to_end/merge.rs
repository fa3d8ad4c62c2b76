//! What apply brings back and how it merges: the dirty baseline and the
//! proposals in task order, conflicts (first one wins), every kind of
//! change, the source changed meanwhile (`--strict`), odd names, CRLF,
//! things in the way, a linked worktree or a workspace as the source,
//! index flags that would hide what is on disk.
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;

use super::*;

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
    let (env, repo) = Env::with_repo("proj");
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
    let (env, repo) = Env::with_repo("proj");
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

#[test]
fn odd_names_spaces_newlines_and_non_utf8_bytes() {
    let (env, repo) = Env::with_repo("proj");
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
    let (env, repo) = Env::with_repo("proj");
    commit_files(
        &env,
        &repo,
        &[
            (".gitattributes", "*.txt text eol=crlf\n"),
            ("w.txt", "one\r\ntwo\r\n"),
        ],
        "crlf",
    );
    assert_eq!(read_bytes(&repo.join("w.txt")), b"one\r\ntwo\r\n");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    assert_eq!(read_bytes(&ws[0].join("w.txt")), b"one\r\ntwo\r\n");
    std::fs::write(ws[0].join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(ws[0].join("n.txt"), "new\r\nfile\r\n").unwrap();
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_bytes(&repo.join("w.txt")), b"one\r\ntwo\r\nthree\r\n");
    assert_eq!(read_bytes(&repo.join("n.txt")), b"new\r\nfile\r\n");
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
fn untracked_and_ignored_things_in_the_way_are_conflicts_never_losses() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[(".gitignore", "*.tmp\ncache/\n")], "ignore");
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
fn apply_from_inside_a_workspace_writes_into_the_source() {
    let (env, repo) = Env::with_repo("proj");
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
fn a_linked_worktree_as_source_gets_the_result_and_the_main_tree_does_not() {
    let (env, repo) = Env::with_repo("proj");
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
fn assume_unchanged_and_skip_worktree_flags_never_hide_what_is_on_disk() {
    let (env, repo) = Env::with_repo("proj");
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
        read_bytes(&repo.join("a.txt")),
        b"a.txt edited, assumed unchanged\n"
    );
    assert_eq!(
        read_bytes(&repo.join("b.txt")),
        b"b.txt edited, skip-worktree\n"
    );
    assert_eq!(read_lossy(&repo.join("c.txt")), "c.txt original\n");
}
