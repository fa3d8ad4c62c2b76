//! `git delegate branch` and the pre-push guard (design §3.19): a task's
//! work published as a commit on the source's HEAD without the user's
//! uncommitted or untracked files (`make`), wherever it is run from
//! (`inside`: a task's own folder), and the hook that refuses a push that
//! would publish those files, however a worker re-made its commits
//! (`guard`).

mod guard;
mod inside;
mod make;

use std::path::{Path, PathBuf};

use crate::common::files::{lines, with_line};
use crate::common::fixtures::{prepare, task_root, write};
use crate::common::Env;

/// A repository with a committed `a.txt` of 10 lines, then the user's
/// uncommitted edit of its line 2 and an untracked `secret.env`.
pub(super) fn dirty_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    write(&repo.join("a.txt"), &lines(10));
    env.git(&repo, ["add", "a.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "a"]);
    write(&repo.join("a.txt"), &with_line(&lines(10), 2, "user edit"));
    write(&repo.join("secret.env"), "TOKEN=hunter2\n");
    repo
}

/// Prepare one task in `repo` with `args`: (the document, its workspace,
/// its name).
pub(super) fn one_task(
    env: &Env,
    repo: &Path,
    args: &[&str],
) -> (serde_json::Value, PathBuf, String) {
    let doc = prepare(env, repo, args);
    let ws = task_root(&doc, 0);
    let task = doc["tasks"][0]["name"].as_str().unwrap().to_string();
    (doc, ws, task)
}

/// A repository with a bare remote `origin`, main pushed, hooks installed.
pub(super) fn with_remote(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = dirty_repo(env);
    let bare = env.path().join("remote.git");
    env.git(env.path(), ["init", "-q", "--bare", bare.to_str().unwrap()]);
    env.git(&repo, ["remote", "add", "origin", bare.to_str().unwrap()]);
    env.git(&repo, ["push", "-q", "origin", "main"]);
    env.delegate(&repo, ["hooks", "install"]).expect(0);
    (repo, bare)
}

/// `git push ARGS` in `dir` with git-delegate on PATH (the hook runs it).
pub(super) fn push(env: &Env, dir: &Path, args: &str) -> crate::common::Run {
    env.sh(dir, &format!("git push -q {args} 2>&1"))
}
