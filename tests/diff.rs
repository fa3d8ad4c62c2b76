//! `git delegate diff` and `git delegate path` (design §3.16): a task's
//! changes as `git diff` prints them, computed without writing anything;
//! a task's working folder.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::Env;

/// A repository with a few files, a batch of two tasks; returns
/// (repo, baseline commit, task roots).
fn setup(env: &Env) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    std::fs::write(
        repo.join("a.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = env
        .delegate(&repo, ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let roots = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| PathBuf::from(t["root"].as_str().unwrap()))
        .collect();
    (repo, baseline, roots)
}

/// Edits, an add, a delete, a binary add, an exec bit, a symlink.
fn work(ws: &Path) {
    std::fs::write(
        ws.join("a.txt"),
        "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\n",
    )
    .unwrap();
    std::fs::write(ws.join("new.txt"), "fresh\n").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 3, 255, 0, 7, 8, 9]).unwrap();
    let mut perm = std::fs::metadata(ws.join("run.sh")).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(ws.join("run.sh"), perm).unwrap();
    std::os::unix::fs::symlink("sub/b.txt", ws.join("link")).unwrap();
    std::fs::write(ws.join("sub/b.txt"), "b\nc\n").unwrap();
}

/// git's own diff of the baseline against the workspace as `git add -A`
/// would take it (computed by the test, with the git CLI, on a copy of the
/// workspace's index).
fn git_diff(env: &Env, ws: &Path, baseline: &str, extra: &[&str]) -> String {
    let tree = env.oracle_tree(ws);
    let mut args = vec!["diff", "--no-renames"];
    if extra.is_empty() {
        args.extend_from_slice(&["--full-index", "--binary"]);
    }
    args.extend_from_slice(extra);
    args.push(baseline);
    args.push(&tree);
    env.git(ws, args)
}

/// What `diff` must leave alone: refs, index bytes, workspace files.
fn fingerprint(env: &Env, repo: &Path, ws: &Path) -> (String, Vec<u8>, String) {
    let refs = env.git(repo, ["for-each-ref"]);
    let git_dir = PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim());
    let index = std::fs::read(git_dir.join("index")).unwrap_or_default();
    let mut files = String::new();
    for name in ["a.txt", "new.txt", "blob.bin", "run.sh", "sub/b.txt"] {
        let p = ws.join(name);
        let m = std::fs::metadata(&p).unwrap();
        files.push_str(&format!(
            "{name} {:o} {:?}\n",
            m.permissions().mode(),
            std::fs::read(&p).unwrap()
        ));
    }
    (refs, index, files)
}

#[test]
fn diff_is_byte_equal_to_git_diff_and_changes_nothing() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    let before = fingerprint(&env, &repo, &roots[0]);
    let objects_before = env.git(&repo, ["count-objects", "-v"]);
    let ours = env.delegate(&repo, ["diff", "1"]).expect(0).stdout;
    let names = env
        .delegate(&repo, ["diff", "1", "--name-status"])
        .expect(0)
        .stdout;
    let stat = env
        .delegate(&repo, ["diff", "1", "--stat"])
        .expect(0)
        .stdout;
    let doc = env.delegate(&repo, ["diff", "--json"]).expect(0).json();
    // Nothing was written: refs, the workspace's index, its files, objects.
    assert_eq!(fingerprint(&env, &repo, &roots[0]), before);
    assert_eq!(env.git(&repo, ["count-objects", "-v"]), objects_before);

    assert!(!ours.is_empty());
    assert_eq!(ours, git_diff(&env, &roots[0], &baseline, &[]));
    assert_eq!(
        names,
        git_diff(&env, &roots[0], &baseline, &["--name-status"])
    );
    assert_eq!(stat, git_diff(&env, &roots[0], &baseline, &["--stat"]));

    assert_eq!(doc["schema"], "git-delegate/v1");
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["name"], "1");
    assert_eq!(tasks[1]["paths"].as_array().unwrap().len(), 0);
    let paths: Vec<(String, String)> = tasks[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("a.txt", "modified"),
        ("blob.bin", "added"),
        ("gone.txt", "deleted"),
        ("link", "added"),
        ("new.txt", "added"),
        ("run.sh", "modified"),
        ("sub/b.txt", "modified"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(paths, want);
}

#[test]
fn diff_of_several_tasks_heads_each_and_filters_paths() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    std::fs::write(roots[1].join("sub/b.txt"), "task two\n").unwrap();
    // A change too wide for 80 columns: git scales the bars.
    let many: String = (0..150).map(|i| format!("line {i}\n")).collect();
    std::fs::write(
        roots[1].join("a-rather-long-file-name-for-the-stat-column.txt"),
        many,
    )
    .unwrap();
    std::fs::write(roots[1].join("a.txt"), "one\n").unwrap();
    let stat = env
        .delegate(&repo, ["diff", "2", "--stat"])
        .expect(0)
        .stdout;
    assert_eq!(stat, git_diff(&env, &roots[1], &baseline, &["--stat"]));
    let all = env.delegate(&repo, ["diff"]).expect(0).stdout;
    let one = git_diff(&env, &roots[0], &baseline, &[]);
    let two = git_diff(&env, &roots[1], &baseline, &[]);
    assert_eq!(all, format!("# task 1\n{one}# task 2\n{two}"));
    let only = env
        .delegate(&repo, ["diff", "1", "--name-status", "--", "sub/"])
        .expect(0)
        .stdout;
    assert_eq!(only, "M\tsub/b.txt\n");
    // `-- PATH` is relative to the current folder, as with git; run from
    // inside a workspace, the batch is found all the same.
    let from_sub = env
        .delegate(&repo.join("sub"), ["diff", "1", "--name-status", "--", "."])
        .expect(0)
        .stdout;
    assert_eq!(from_sub, "M\tsub/b.txt\n");
    let up = env
        .delegate(
            &roots[1].join("sub"),
            ["diff", "1", "--name-status", "--", "../a.txt"],
        )
        .expect(0)
        .stdout;
    assert_eq!(up, "M\ta.txt\n");
    env.delegate(&repo, ["diff", "1", "--", "../x"]).expect(2);
    let unknown = env.delegate(&repo, ["diff", "nope", "--json"]).expect(2);
    assert_eq!(unknown.json()["error"]["code"], "delegate::unknown_task");
    // A task that is no longer open is refused by name, never read.
    env.delegate(&repo, ["apply", "--only", "2", "--json"])
        .expect(0);
    let closed = env.delegate(&repo, ["diff", "2", "--json"]).expect(2);
    assert_eq!(closed.json()["error"]["code"], "delegate::task_not_open");
    // By default, only the open tasks.
    let doc = env.delegate(&repo, ["diff", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(doc["tasks"][0]["name"], "1");
}

#[test]
fn path_from_the_source_and_from_inside_a_workspace() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/f"), "f\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    let doc = env
        .delegate(&repo.join("sub"), ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let cwd2 = doc["tasks"][1]["cwd"].as_str().unwrap().to_string();
    let root1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    assert!(cwd2.ends_with("/sub"), "{cwd2}");
    let out = env.delegate(&repo, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Inside a workspace, without TASK: that workspace's task.
    let cwd1 = doc["tasks"][0]["cwd"].as_str().unwrap().to_string();
    let out = env.delegate(&root1, ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    let out = env.delegate(&root1.join("sub"), ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    // Another task named from inside a workspace.
    let out = env.delegate(&root1, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Unknown task: exit 2; the source without TASK: exit 2.
    let r = env.delegate(&repo, ["path", "9", "--json"]).expect(2);
    assert_eq!(r.json()["error"]["code"], "delegate::unknown_task");
    env.delegate(&repo, ["path"]).expect(2);
}
