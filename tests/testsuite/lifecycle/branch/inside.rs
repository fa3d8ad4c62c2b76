//! `git delegate branch` run where a worker runs it, in its task's folder
//! (design §3.19): there HEAD is the baseline, which holds the user's
//! uncommitted and untracked files; the branch goes on the source's HEAD
//! all the same, and the pre-push refusal's hint works from there.

use std::path::Path;

use super::{one_task, push, with_remote};
use crate::common::files::{lines, read, with_line};
use crate::common::fixtures::write;
use crate::common::{printed_command, Env};

/// The branch `name` is one commit on `head` holding HEAD's files and the
/// worker's `new.rs` (and line 8 of `a.txt`), none of the user's private
/// files or edits.
fn clean_on(env: &Env, repo: &Path, name: &str, head: &str) {
    let parent = env.git(repo, ["rev-parse", &format!("{name}^")]);
    assert_eq!(parent.trim(), head);
    let files = env.git(repo, ["ls-tree", "-r", "--name-only", name]);
    assert_eq!(files, "README\na.txt\nnew.rs\n");
    let a = env.git(repo, ["show", &format!("{name}:a.txt")]);
    assert_eq!(a, with_line(&lines(10), 8, "worker edit"));
}

#[test]
fn branch_run_in_a_tasks_folder_builds_on_the_sources_head() {
    let env = Env::new();
    let (repo, _bare) = with_remote(&env);
    let (doc, ws, task) = one_task(&env, &repo, &["--label", "feat"]);
    let head = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();
    let batch = doc["batch"].as_str().unwrap().to_string();
    let base = read(&ws.join("a.txt"));
    write(&ws.join("a.txt"), &with_line(&base, 8, "worker edit"));
    write(&ws.join("new.rs"), "fn main() {}\n");
    // From the task's folder, then from a folder below it, once the worker
    // has committed on the baseline there too.
    let j = env
        .delegate(&ws, ["branch", &task, "one", "--json"])
        .expect(0)
        .json();
    assert_eq!(j["parent"], head.as_str(), "{j}");
    env.git(&ws, ["add", "-A"]);
    env.git(&ws, ["commit", "-q", "-m", "worker commit"]);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    env.delegate(&ws.join("sub"), ["branch", &task, "two", "--batch", &batch])
        .expect(0);
    for name in ["one", "two"] {
        clean_on(&env, &repo, name, &head);
    }
    // --onto the workspace's HEAD (the baseline, or a commit on it) is refused.
    for rev in ["HEAD", "HEAD~1"] {
        let out = env
            .delegate(&ws, ["branch", &task, "three", "--onto", rev])
            .expect(2);
        assert!(out.stderr.contains("baseline of batch"), "{}", out.stderr);
        let cmd = printed_command(&out.stderr, "git delegate branch");
        env.sh(&ws, &format!("{cmd} -m three")).expect(0);
        clean_on(&env, &repo, &format!("delegate/feat/{task}"), &head);
        env.git(
            &repo,
            ["branch", "-q", "-D", &format!("delegate/feat/{task}")],
        );
    }
    // With another batch open, the task's folder still names its own.
    crate::common::fixtures::prepare(&env, &repo, &[]);
    env.delegate(&ws, ["branch", &task, "four"]).expect(0);
    clean_on(&env, &repo, "four", &head);
    // The source is as it was.
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=hunter2\n");
    assert_eq!(env.git(&repo, ["rev-parse", "HEAD"]).trim(), head);
}

#[test]
fn the_pre_push_hint_works_where_it_is_printed() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, task) = one_task(&env, &repo, &["--label", "feat"]);
    let head = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();
    let base = read(&ws.join("a.txt"));
    write(&ws.join("a.txt"), &with_line(&base, 8, "worker edit"));
    write(&ws.join("new.rs"), "fn main() {}\n");
    env.git(&ws, ["checkout", "-q", "-b", "agent/x"]);
    env.git(&ws, ["add", "-A"]);
    env.git(&ws, ["commit", "-q", "-m", "agent work"]);
    // The worker pushes from its folder: refused, naming its task.
    let out = push(&env, &ws, "origin agent/x");
    assert_eq!(out.code, 1, "{}", out.stdout);
    let cmd = printed_command(&out.stdout, "git delegate branch");
    assert!(
        cmd.starts_with(&format!("git delegate branch {task} --batch ")),
        "{cmd}"
    );
    // Run there, as printed: a clean branch on the source's HEAD.
    let made = env.sh(&ws, &cmd).expect(0);
    let name = format!("delegate/feat/{task}");
    clean_on(&env, &repo, &name, &head);
    // Its own hint pushes it, from there too.
    let publish = printed_command(&made.stdout, "git push");
    let out = env.sh(&ws, &format!("{publish} 2>&1"));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let files = env.git(&bare, ["ls-tree", "-r", "--name-only", &name]);
    assert_eq!(files, "README\na.txt\nnew.rs\n");
}
