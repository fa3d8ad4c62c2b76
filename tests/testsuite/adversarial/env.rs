//! Adversarial cases: env (see mod.rs). Every command run with the source's
//! `GIT_*` variables exported, as `git --git-dir=X --work-tree=Y delegate`
//! exports them (dotfiles aliases do): the source is found through them,
//! exactly as git finds it, and no workspace inherits them.
//! Also discovery as git's (`GIT_CEILING_DIRECTORIES`), SHA-256 repositories
//! and a source moved after prepare: each names its real cause.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::id;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::assert_has;
use crate::common::fixtures::{prepare, task_root};
use crate::common::killed_at;
use crate::common::{Env, Run};

/// The variables `git --git-dir=GD --work-tree=WT delegate` exports (git
/// passes them on as the user spelled them: relative to the caller's cwd).
fn exported(gd: &str, wt: &str) -> Vec<(&'static str, OsString)> {
    vec![("GIT_DIR", gd.into()), ("GIT_WORK_TREE", wt.into())]
}

fn run_with(env: &Env, dir: &Path, vars: &[(&str, OsString)], args: &[&str]) -> Run {
    let mut cmd = env.delegate_cmd(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    Run::from(cmd.args(args).output().expect("run git-delegate"))
}

/// `git <git_args> delegate <args>`, with the binary on PATH.
fn through_git(env: &Env, dir: &Path, git_args: &[&str], args: &[&str]) -> Run {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_git-delegate"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let mut cmd: Command = env.git_cmd(dir);
    cmd.env("PATH", path)
        .args(git_args)
        .arg("delegate")
        .args(args);
    Run::from(cmd.output().expect("run git delegate"))
}

fn changed(status: &Value, batch: &str) -> Vec<u64> {
    let b = status["batches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batch"] == batch)
        .unwrap_or_else(|| panic!("batch {batch} not in {status}"));
    b["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["changed_paths"].as_u64().unwrap())
        .collect()
}

/// Everything a worker and the tool see of a workspace is the workspace:
/// with the source's GIT_DIR/GIT_WORK_TREE exported to every command.
fn every_command(env: &Env, caller: &Path, run: &dyn Fn(&[&str]) -> Run, repo: &Path) {
    std::fs::write(repo.join("user.txt"), "user edit\n").unwrap();
    let doc = run(&["prepare", "-n", "2", "--json"]).expect(0).json();
    let id = id(&doc);
    assert_eq!(
        PathBuf::from(doc["source"].as_str().unwrap()),
        repo.canonicalize().unwrap()
    );
    // The baseline is the source's working tree, the user's edit included.
    assert_eq!(
        env.git(
            repo,
            [
                "rev-parse",
                &format!("{}^{{tree}}", doc["baseline"]["commit"].as_str().unwrap())
            ]
        )
        .trim(),
        env.oracle_tree(repo)
    );
    let ws1 = task_root(&doc, 0);
    let ws2 = task_root(&doc, 1);
    assert_eq!(read_bytes(&ws1.join("user.txt")), b"user edit\n");
    // A worker edits workspace 1; workspace 2 stays clean.
    std::fs::write(ws1.join("README"), "worker\n").unwrap();
    std::fs::write(ws1.join("new.txt"), "new\n").unwrap();

    let status = run(&["status", "--json"]).expect(0).json();
    assert_eq!(changed(&status, &id), [2, 0], "{status}");
    run(&["status", "--check"]).expect(0);
    run(&["renew", "--json"]).expect(0);
    let gc = run(&["gc", "--dry-run", "--json"]).expect(0).json();
    assert!(gc.to_string().contains("recovered_writebacks"), "{gc}");
    run(&["gc", "--json"]).expect(0);
    assert!(ws1.join("new.txt").is_file(), "gc touched a live batch");

    // drop without --force refuses, naming the task with the work.
    let drop = run(&["drop", &id[..8], "--json"]).expect(1).json();
    assert_eq!(drop["dropped"], false);
    assert_eq!(drop["unapplied"], serde_json::json!(["1"]));
    assert_eq!(read_bytes(&ws1.join("README")), b"worker\n");

    // The hook: a commit in the source is not refused.
    run(&["hook", "pre-commit"]).expect(0);

    // apply --dry-run says what apply will do, and changes nothing.
    let dry = run(&["apply", "--dry-run", "--json"]).expect(0).json();
    assert_eq!(dry["tasks"][0]["status"], "applied", "{dry}");
    assert_eq!(dry["tasks"][1]["status"], "no_changes", "{dry}");
    assert_eq!(read_bytes(&repo.join("README")), b"hello\n");
    assert!(ws1.is_dir());

    let apply = run(&["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied", "{apply}");
    assert_eq!(
        apply["tasks"][0]["applied_paths"],
        serde_json::json!(["README", "new.txt"])
    );
    assert_eq!(read_bytes(&repo.join("README")), b"worker\n");
    assert_eq!(read_bytes(&repo.join("new.txt")), b"new\n");
    assert_eq!(read_bytes(&repo.join("user.txt")), b"user edit\n");
    assert!(!ws1.exists() && !ws2.exists());
    // The user's index and HEAD are untouched: README is modified, new.txt untracked.
    assert_eq!(
        env.git(repo, ["status", "--porcelain"]),
        " M README\n?? new.txt\n?? user.txt\n"
    );

    // drop --force drops a batch with work in it.
    let doc = run(&["prepare", "--json"]).expect(0).json();
    let id = crate::common::fixtures::id(&doc);
    std::fs::write(task_root(&doc, 0).join("x"), "x\n").unwrap();
    let st = run(&["status", "--json"]).expect(0).json();
    assert_eq!(changed(&st, &id), [1]);
    run(&["drop", &id[..8]]).expect(1);
    run(&["drop", &id[..8], "--force", "--json"]).expect(0);
    assert!(!task_root(&doc, 0).exists());
    assert!(env.private_refs(repo).is_empty());

    // hooks install writes into the source's hooks folder.
    let hooks = run(&["hooks", "install", "--json"]).expect(0).json();
    assert_eq!(
        PathBuf::from(hooks["hook"].as_str().unwrap()),
        repo.canonicalize().unwrap().join(".git/hooks/pre-commit")
    );
    let _ = caller;
}

#[test]
fn every_command_with_git_dir_and_work_tree_exported() {
    let (env, repo) = Env::with_repo("src");
    // From the parent folder, as `git --git-dir=src/.git --work-tree=src` exports them.
    let vars = exported("src/.git", "src");
    let caller = env.path().to_path_buf();
    every_command(
        &env,
        &caller,
        &|args| run_with(&env, &caller, &vars, args),
        &repo,
    );
}

#[test]
fn every_command_through_git_with_git_dir_and_work_tree() {
    let (env, repo) = Env::with_repo("src");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    let caller = repo.join("sub");
    every_command(
        &env,
        &caller,
        &|args| {
            through_git(
                &env,
                &caller,
                &["--git-dir=../.git", "--work-tree=.."],
                args,
            )
        },
        &repo,
    );
}

/// A bare dotfiles repository `dotfiles.git` in `env` whose work tree is
/// `home`, with one commit ("dots") of `files` (name, text) written there:
/// its git dir.
fn dotfiles(env: &Env, home: &Path, files: &[(String, String)]) -> PathBuf {
    env.git(
        env.path(),
        ["init", "-q", "--bare", "-b", "main", "dotfiles.git"],
    );
    let gd = env.path().join("dotfiles.git");
    let git = |args: &[&str]| {
        let mut cmd = env.git_cmd(home);
        cmd.env("GIT_DIR", &gd)
            .env("GIT_WORK_TREE", home)
            .args(args);
        crate::common::succeed(cmd);
    };
    let mut add = vec!["add"];
    for (name, text) in files {
        std::fs::write(home.join(name), text).unwrap();
        add.push(name);
    }
    git(&add);
    git(&["commit", "-q", "-m", "dots"]);
    gd
}

/// With `vars` exported in `dir`: `status` shows task 1 of `doc`'s batch
/// changed, and `apply` applies it.
fn changed_then_applied(env: &Env, dir: &Path, vars: &[(&str, OsString)], doc: &Value) {
    let st = run_with(env, dir, vars, &["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(changed(&st, doc["batch"].as_str().unwrap()), [1]);
    let apply = run_with(env, dir, vars, &["apply", "--json"])
        .expect(0)
        .json();
    assert_eq!(apply["tasks"][0]["status"], "applied", "{apply}");
}

/// A dotfiles repository: bare, with `$HOME`-like folder as its work tree.
#[test]
fn a_bare_dotfiles_repository_with_an_exported_work_tree() {
    let env = Env::new();
    let home = env.path().join("dots");
    std::fs::create_dir_all(&home).unwrap();
    let gd = dotfiles(&env, &home, &[(".bashrc".into(), "alias x=y\n".into())]);
    let gd_s = gd.to_str().unwrap().to_string();
    let home_s = home.to_str().unwrap().to_string();
    let vars = exported(&gd_s, &home_s);
    let doc = run_with(&env, &home, &vars, &["prepare", "--json"])
        .expect(0)
        .json();
    let ws = task_root(&doc, 0);
    assert_eq!(read_bytes(&ws.join(".bashrc")), b"alias x=y\n");
    std::fs::write(ws.join(".bashrc"), "alias x=z\n").unwrap();
    changed_then_applied(&env, &home, &vars, &doc);
    assert_eq!(read_bytes(&home.join(".bashrc")), b"alias x=z\n");
    // Applied from the workspace (a worktree of the same repository,
    // without the variables): it writes back into the recorded work tree.
    let doc = run_with(&env, &home, &vars, &["prepare", "--json"])
        .expect(0)
        .json();
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join(".vimrc"), "set nu\n").unwrap();
    let apply = env.delegate(&ws, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied", "{apply}");
    assert_eq!(read_bytes(&home.join(".vimrc")), b"set nu\n");
    // Without the variables there is no repository there, as for git.
    let run = env.delegate(&home, ["status"]).expect(3);
    assert_has(&run.stderr, "delegate::not_a_repository");
}

/// `GIT_INDEX_FILE` names the source's index (git uses it, relative to the
/// top of the work tree: a tracked ignored file in it is part of the
/// snapshot), never a workspace's: a file the worker adds to the
/// workspace's own index with `git add -f` is proposed.
#[test]
fn an_exported_index_file_is_the_source_index_only() {
    let (env, repo) = Env::with_repo("src");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(repo.join("keep.log"), "tracked in the other index\n").unwrap();
    let other = env.path().join("other-index");
    std::fs::copy(repo.join(".git/index"), &other).unwrap();
    let vars = vec![("GIT_INDEX_FILE", OsString::from("../other-index"))];
    let git = |dir: &Path, args: &[&str]| {
        let out = crate::common::succeed(
            env.git_cmd(dir)
                .env("GIT_INDEX_FILE", "../other-index")
                .args(args),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&repo.join("sub"), &["add", "-f", ":/keep.log"]);
    assert_eq!(
        git(&repo.join("sub"), &["ls-files", "--full-name", ":/"]),
        "README\nkeep.log\n"
    );
    let before_default = read_bytes(&repo.join(".git/index"));
    let before_other = read_bytes(&other);
    let sub = repo.join("sub");
    let doc = run_with(&env, &sub, &vars, &["prepare", "--json"])
        .expect(0)
        .json();
    let ws = task_root(&doc, 0);
    // The baseline holds what git would snapshot with that index.
    assert_eq!(
        read_bytes(&ws.join("keep.log")),
        b"tracked in the other index\n"
    );
    std::fs::write(ws.join("README"), "worker\n").unwrap();
    std::fs::write(ws.join("w.log"), "forced\n").unwrap();
    env.git(&ws, ["add", "-f", "w.log"]);
    let st = run_with(&env, &sub, &vars, &["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(changed(&st, doc["batch"].as_str().unwrap()), [2], "{st}");
    let apply = run_with(&env, &sub, &vars, &["apply", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        apply["tasks"][0]["applied_paths"],
        serde_json::json!(["README", "w.log"])
    );
    assert_eq!(read_bytes(&repo.join("README")), b"worker\n");
    assert_eq!(read_bytes(&repo.join("w.log")), b"forced\n");
    assert_eq!(read_bytes(&repo.join(".git/index")), before_default);
    assert_eq!(read_bytes(&other), before_other);
}

/// `GIT_OBJECT_DIRECTORY` and `GIT_COMMON_DIR` naming the repository's own
/// folders work; naming other folders (which the workspaces could not
/// see) is refused before anything is made.
#[test]
fn exported_object_and_common_dirs() {
    let (env, repo) = Env::with_repo("src");
    let same = vec![
        (
            "GIT_OBJECT_DIRECTORY",
            OsString::from(repo.join(".git/objects")),
        ),
        ("GIT_COMMON_DIR", OsString::from(repo.join(".git"))),
    ];
    let doc = run_with(&env, &repo, &same, &["prepare", "--json"])
        .expect(0)
        .json();
    std::fs::write(task_root(&doc, 0).join("README"), "worker\n").unwrap();
    let st = run_with(&env, &repo, &same, &["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(changed(&st, doc["batch"].as_str().unwrap()), [1]);
    run_with(&env, &repo, &same, &["apply", "--json"]).expect(0);
    assert_eq!(read_bytes(&repo.join("README")), b"worker\n");

    let elsewhere = env.path().join("objects-elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for vars in [
        vec![("GIT_OBJECT_DIRECTORY", OsString::from(&elsewhere))],
        vec![(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            OsString::from(&elsewhere),
        )],
        vec![("GIT_COMMON_DIR", OsString::from(env.path().join("nowhere")))],
    ] {
        let run = run_with(&env, &repo, &vars, &["prepare", "--json"]).expect(3);
        let doc = run.json();
        assert_eq!(
            doc["error"]["code"], "delegate::unsupported_environment",
            "{vars:?}: {doc}"
        );
        assert!(
            doc["error"]["message"]
                .as_str()
                .unwrap()
                .contains(vars[0].0),
            "{doc}"
        );
    }
    assert!(env.private_refs(&repo).is_empty());
}

/// A ceiling directory that is not an ancestor of the cwd is ignored, as git
/// ignores it; one between the cwd and the repository stops discovery, as
/// for git.
#[test]
fn ceiling_directories_as_git_reads_them() {
    let (env, repo) = Env::with_repo("src");
    let sub = repo.join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for ceiling in [
        OsString::from("/usr"),
        OsString::from(format!("/usr:{}", elsewhere.display())),
        OsString::from(env.path()),
    ] {
        let vars = vec![("GIT_CEILING_DIRECTORIES", ceiling.clone())];
        let out = env
            .git_cmd(&sub)
            .env("GIT_CEILING_DIRECTORIES", &ceiling)
            .args(["rev-parse", "--git-dir"])
            .output()
            .unwrap();
        assert!(out.status.success(), "git finds it with {ceiling:?}");
        let run = run_with(&env, &sub, &vars, &["status", "--json"]).expect(0);
        assert_eq!(run.json()["batches"], serde_json::json!([]));
    }
    // A ceiling at the repository root: git stops below it.
    let ceiling = OsString::from(&repo);
    let out = env
        .git_cmd(&sub)
        .env("GIT_CEILING_DIRECTORIES", &ceiling)
        .args(["rev-parse", "--git-dir"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let vars = vec![("GIT_CEILING_DIRECTORIES", ceiling)];
    let run = run_with(&env, &sub, &vars, &["status", "--json"]).expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::not_a_repository");
}

/// A `.git` file that points nowhere: the error names it, not "not inside a
/// git repository".
#[test]
fn a_broken_git_file_is_named() {
    let env = Env::new();
    let dir = env.path().join("broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".git"), "gitdir: /nonexistent/gd-test-gitdir\n").unwrap();
    let run = env.delegate(&dir, ["status", "--json"]).expect(3);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::not_a_repository");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert_has(msg, "/nonexistent/gd-test-gitdir");
    assert!(!msg.contains("is not inside a git repository"), "{msg}");
}

/// The source folder moved after prepare: apply names the moved source,
/// also when another repository now sits at the old path, and changes nothing.
#[test]
fn source_moved_after_prepare() {
    let (env, repo) = Env::with_repo("src");
    let doc = prepare(&env, &repo, &[]);
    let id = id(&doc);
    std::fs::write(task_root(&doc, 0).join("README"), "worker\n").unwrap();
    let moved = env.path().join("moved");
    std::fs::rename(&repo, &moved).unwrap();

    let check = |run: Run| {
        let doc = run.json();
        assert_eq!(doc["error"]["code"], "delegate::source_moved", "{doc}");
        let msg = doc["error"]["message"].as_str().unwrap();
        assert_has(msg, repo.to_str().unwrap());
        let help = doc["error"]["help"].as_str().unwrap();
        assert!(!help.contains("update-ref"), "{help}");
        assert!(help.contains(&id[..8]), "{help}");
    };
    check(env.delegate(&moved, ["apply", "--json"]).expect(3));
    check(
        env.delegate(&moved, ["apply", "--dry-run", "--json"])
            .expect(3),
    );
    // Another repository at the old path.
    let other = env.repo("src");
    assert_eq!(other, repo);
    check(env.delegate(&moved, ["apply", "--json"]).expect(3));
    assert_eq!(read_bytes(&other.join("README")), b"hello\n");
    assert_eq!(read_bytes(&moved.join("README")), b"hello\n");
    assert!(env.private_refs(&other).is_empty());
    assert_eq!(env.private_refs(&moved).len(), 1);
    // Moved back, the batch applies as if nothing happened.
    std::fs::remove_dir_all(&other).unwrap();
    std::fs::rename(&moved, &repo).unwrap();
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied", "{apply}");
    assert_eq!(read_bytes(&repo.join("README")), b"worker\n");
}

/// Found while testing `GIT_INDEX_FILE` from a subfolder: prepare run below
/// the root lost staged files outside the caller's folder from the baseline
/// (gix's default pathspec matches only below the cwd).
#[test]
fn staged_files_outside_the_callers_folder_are_in_the_baseline() {
    let (env, repo) = Env::with_repo("src");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/s.txt"), "s\n").unwrap();
    std::fs::write(repo.join("staged.txt"), "staged\n").unwrap();
    env.git(&repo, ["add", "staged.txt"]);
    let doc = prepare(&env, &repo.join("sub"), &[]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{baseline}^{{tree}}")])
            .trim(),
        env.oracle_tree(&repo)
    );
    assert_eq!(
        read_bytes(&task_root(&doc, 0).join("staged.txt")),
        b"staged\n"
    );
}

/// The hook finds the worktree being committed in through the `GIT_DIR`
/// git gives hooks, even though the process takes it out of its
/// environment: a commit in a forbid-commit workspace is refused.
#[test]
fn the_hook_reads_the_git_dir_git_gives_it() {
    let (env, repo) = Env::with_repo("src");
    let doc = prepare(&env, &repo, &["--forbid-commit"]);
    let ws = task_root(&doc, 0);
    let ws_git_dir = env.git(&ws, ["rev-parse", "--absolute-git-dir"]);
    let vars = vec![("GIT_DIR", OsString::from(ws_git_dir.trim()))];
    let run = run_with(&env, env.path(), &vars, &["hook", "pre-commit"]).expect(1);
    assert_has(&run.stderr, "commit refused");
    let vars = vec![("GIT_DIR", OsString::from(repo.join(".git")))];
    run_with(&env, env.path(), &vars, &["hook", "pre-commit"]).expect(0);
}

/// Processes started for a workspace (here a clean filter run while its
/// changes are counted and recorded) get the workspace's git dir, never the
/// source's exported `GIT_INDEX_FILE` or `GIT_OBJECT_DIRECTORY`.
#[test]
fn filters_run_for_a_workspace_do_not_inherit_the_source_variables() {
    let (env, repo) = Env::with_repo("src");
    let log = env.path().join("filter.log");
    env.git(
        &repo,
        [
            "config",
            "filter.rec.clean",
            &format!(
                "sh -c 'echo \"${{GIT_INDEX_FILE:-none}} ${{GIT_OBJECT_DIRECTORY:-none}} $GIT_DIR\" >> {}; cat'",
                log.display()
            ),
        ],
    );
    std::fs::write(repo.join(".gitattributes"), "*.txt filter=rec\n").unwrap();
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "filtered"]);
    let vars = vec![
        ("GIT_INDEX_FILE", OsString::from(repo.join(".git/index"))),
        (
            "GIT_OBJECT_DIRECTORY",
            OsString::from(repo.join(".git/objects")),
        ),
    ];
    let doc = run_with(&env, &repo, &vars, &["prepare", "--json"])
        .expect(0)
        .json();
    let ws = task_root(&doc, 0);
    let _ = std::fs::remove_file(&log);
    std::fs::write(ws.join("a.txt"), "worker\n").unwrap();
    changed_then_applied(&env, &repo, &vars, &doc);
    assert_eq!(read_bytes(&repo.join("a.txt")), b"worker\n");
    let text = read(&log);
    let ws_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/worktrees/delegate-"))
        .collect();
    assert!(
        !ws_lines.is_empty(),
        "the filter never ran for the workspace:\n{text}"
    );
    for l in ws_lines {
        assert!(l.starts_with("none none "), "{l}");
    }
}

/// A write-back killed half way in a dotfiles repository (bare git dir,
/// work tree exported, both relative to a caller in a subfolder), then the
/// user saves over a path it had written: `apply --dry-run` reports the
/// interrupted write-back and moves nothing; `apply` reports
/// `rollback_failed` with the original kept inside the work tree (never in
/// the caller's folder), and the other paths back; once the user puts the
/// original back, apply finishes.
#[test]
fn an_interrupted_write_back_with_exported_variables_is_reported_and_resolved() {
    let env = Env::new();
    let home = env.path().join("dots");
    std::fs::create_dir_all(home.join("sub")).unwrap();
    let files: Vec<(String, String)> = (1..=4)
        .map(|i| (format!("f{i}"), format!("original {i}\n")))
        .collect();
    dotfiles(&env, &home, &files);
    let caller = home.join("sub");
    let vars = exported("../../dotfiles.git", "..");
    let run = |args: &[&str]| run_with(&env, &caller, &vars, args);
    let doc = run(&["prepare", "--json"]).expect(0).json();
    let ws = task_root(&doc, 0);
    for i in 1..=4 {
        std::fs::write(ws.join(format!("f{i}")), format!("task {i}\n")).unwrap();
    }
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    read_bytes(&e.path()),
                )
            })
            .collect();
        v.sort();
        v
    };

    // Renames in path order: f1 aside (1), f1 in place (2), f2 aside (3), ...
    let mut cmd = env.delegate_cmd(&caller);
    for (k, v) in &vars {
        cmd.env(k, v);
    }
    killed_at(cmd.args(["apply", "--json"]), "after-rename:4");
    assert_eq!(read_bytes(&home.join("f1")), b"task 1\n");
    std::fs::write(home.join("f1"), b"USER 1\n").unwrap();

    // The dry run: reported, nothing moved.
    let (before, before_sub) = (files(&home), files(&caller));
    let r = run(&["apply", "--dry-run", "--json"]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["error"]["code"], "delegate::writeback_pending");
    assert_eq!(files(&home), before);
    assert_eq!(files(&caller), before_sub);
    let r = run(&["apply", "--dry-run"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_has(&r.stderr, "delegate::writeback_pending");
    assert_eq!(files(&home), before);

    // apply: every other path back, the user's edit left, its original kept
    // in the work tree.
    let r = run(&["apply", "--json"]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    let doc = r.json();
    assert_eq!(doc["error"]["code"], "delegate::rollback_failed", "{doc:#}");
    let paths = doc["error"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{doc:#}");
    assert_eq!(paths[0]["path"], "f1", "{doc:#}");
    let kept = PathBuf::from(paths[0]["kept"].as_str().unwrap());
    assert_eq!(
        kept.parent().unwrap().canonicalize().unwrap(),
        home.canonicalize().unwrap(),
        "{doc:#}"
    );
    assert_eq!(read_bytes(&kept), b"original 1\n");
    assert_eq!(read_bytes(&home.join("f1")), b"USER 1\n");
    for i in 2..=4 {
        assert_eq!(
            read_bytes(&home.join(format!("f{i}"))),
            format!("original {i}\n").as_bytes()
        );
    }
    assert!(files(&caller).is_empty());
    // The human text names the path and the kept file.
    let r = run(&["apply"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_has(&r.stderr, "rollback_failed");
    // (miette wraps long lines: compare without the wrapping)
    let unwrapped: String = r
        .stderr
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    assert!(unwrapped.contains(&*kept.to_string_lossy()), "{}", r.stderr);

    // The user puts the original back: apply finishes and applies the task.
    std::fs::rename(&kept, home.join("f1")).unwrap();
    let doc = run(&["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    for i in 1..=4 {
        assert_eq!(
            read_bytes(&home.join(format!("f{i}"))),
            format!("task {i}\n").as_bytes()
        );
    }
    run(&["status", "--check"]).expect(0);
}

/// The command `source_moved`'s help suggests to give the batch up works
/// as printed, from the moved folder.
#[test]
fn the_drop_command_a_moved_source_suggests_works_as_printed() {
    let (env, repo) = Env::with_repo("src");
    let doc = prepare(&env, &repo, &[]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "worker\n").unwrap();
    let moved = env.path().join("moved");
    std::fs::rename(&repo, &moved).unwrap();
    let doc = env.delegate(&moved, ["apply", "--json"]).expect(3).json();
    let help = doc["error"]["help"].as_str().unwrap();
    let cmd = help
        .split('`')
        .find(|s| s.starts_with("git delegate drop"))
        .unwrap_or_else(|| panic!("{help}"));
    let args: Vec<&str> = cmd.split_whitespace().skip(2).collect();
    let run = through_git(&env, &moved, &[], &args);
    assert_eq!(run.code, 0, "{cmd}: {}\n{}", run.stdout, run.stderr);
    assert!(env
        .private_refs(&moved)
        .iter()
        .all(|r| !r.contains("baseline")));
    let st = env.delegate(&moved, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"].as_array().map(Vec::len), Some(0), "{st:#}");
}
