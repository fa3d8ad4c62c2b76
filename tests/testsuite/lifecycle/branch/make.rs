//! `git delegate branch` (design §3.19): a task's work as a commit on HEAD,
//! without the user's uncommitted or untracked files, made without touching
//! the working tree, the index or HEAD; conflicts, existing and checked-out
//! branches, nothing to publish.
use crate::common::files::read;

use std::path::Path;

use super::{dirty_repo, one_task};
use crate::common::assert_has;
use crate::common::files::{lines, with_line};
use crate::common::fixtures::{expect_error, index_bytes, prepare, write};
use crate::common::Env;

fn state(env: &Env, repo: &Path) -> (Vec<u8>, String, String, String) {
    (
        index_bytes(repo),
        env.git(repo, ["rev-parse", "HEAD"]),
        read(&repo.join("a.txt")),
        read(&repo.join("secret.env")),
    )
}

#[test]
fn branch_is_head_plus_the_task_only() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let (_, ws, task) = one_task(&env, &repo, &["--label", "feat"]);
    // The worker edits line 8 and adds a file.
    let base = read(&ws.join("a.txt"));
    write(&ws.join("a.txt"), &with_line(&base, 8, "worker edit"));
    write(&ws.join("new.rs"), "fn main() {}\n");
    let before = state(&env, &repo);
    let head = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();

    let out = env.delegate(&repo, ["branch", &task, "--json"]).expect(0);
    let j = out.json();
    let want_branch = format!("refs/heads/delegate/feat/{task}");
    assert_eq!(j["branch"], want_branch.as_str(), "{j}");
    assert_eq!(j["parent"], head.as_str());
    assert_eq!(j["paths"], serde_json::json!(["a.txt", "new.rs"]));
    let commit = j["commit"].as_str().unwrap();
    assert_eq!(env.git(&repo, ["rev-parse", &want_branch]).trim(), commit);
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{commit}^")]).trim(),
        head
    );
    // The tree: HEAD's a.txt with the worker's line 8 only, new.rs, no secret.
    let files = env.git(&repo, ["ls-tree", "-r", "--name-only", commit]);
    assert_eq!(files, "README\na.txt\nnew.rs\n");
    let a = env.git(&repo, ["show", &format!("{commit}:a.txt")]);
    assert_eq!(a, with_line(&lines(10), 8, "worker edit"));
    // Author from git's configuration, not git-delegate's identity.
    let who = env.git(&repo, ["log", "-1", "--format=%an <%ae>|%s", commit]);
    assert!(
        who.starts_with("Test Author <author@example.com>|"),
        "{who}"
    );
    assert!(
        who.contains(&format!("{task}: work from git delegate batch feat")),
        "{who}"
    );
    // Nothing else moved; the task is still open.
    assert_eq!(state(&env, &repo), before);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["tasks"][0]["state"], "open", "{st}");

    // Again: the branch exists (exit 2), --force moves it.
    expect_error(
        &env,
        &repo,
        &["branch", &task],
        2,
        "delegate::branch_exists",
    );
    write(&ws.join("more.txt"), "more\n");
    let j = env
        .delegate(&repo, ["branch", &task, "--force", "--json", "-m", "mine"])
        .expect(0)
        .json();
    assert_eq!(j["previous"], commit);
    let files = env.git(&repo, ["ls-tree", "-r", "--name-only", &want_branch]);
    assert_eq!(files, "README\na.txt\nmore.txt\nnew.rs\n");
    assert_eq!(
        env.git(&repo, ["log", "-1", "--format=%B", &want_branch])
            .trim(),
        "mine"
    );
    assert_eq!(state(&env, &repo), before);
}

#[test]
fn overlapping_the_users_lines_conflicts_and_makes_nothing() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let (_, ws, task) = one_task(&env, &repo, &[]);
    // The baseline holds the user's line 2; the worker rewrites it: against
    // HEAD (which has the original line 2) that conflicts.
    let base = read(&ws.join("a.txt"));
    write(&ws.join("a.txt"), &with_line(&base, 2, "worker rewrote it"));
    let before = state(&env, &repo);
    let refs = env.git(&repo, ["for-each-ref", "refs/heads/"]);
    let out = env.delegate(&repo, ["branch", &task, "--json"]).expect(1);
    let j = out.json();
    assert_eq!(j["commit"], serde_json::Value::Null);
    assert_eq!(j["conflicts"][0]["path"], "a.txt", "{j}");
    assert_eq!(env.git(&repo, ["for-each-ref", "refs/heads/"]), refs);
    assert_eq!(state(&env, &repo), before);
    let human = env.delegate(&repo, ["branch", &task]).expect(1);
    assert_has(&human.stderr, "a.txt");
}

#[test]
fn the_checked_out_branch_is_never_moved() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let (_, ws, task) = one_task(&env, &repo, &[]);
    write(&ws.join("new.rs"), "x\n");
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    expect_error(
        &env,
        &repo,
        &["branch", &task, "main", "--force"],
        3,
        "delegate::branch_checked_out",
    );
    // In a linked worktree too.
    let other = env.path().join("other");
    env.git(
        &repo,
        [
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            other.to_str().unwrap(),
        ],
    );
    expect_error(
        &env,
        &repo,
        &["branch", &task, "side", "--force"],
        3,
        "delegate::branch_checked_out",
    );
    assert_eq!(env.git(&repo, ["rev-parse", "HEAD"]), head);
    assert_eq!(env.git(&repo, ["rev-parse", "side"]), head);
}

#[test]
fn a_task_without_changes_has_nothing_to_publish() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let doc = prepare(&env, &repo, &[]);
    let task = doc["tasks"][0]["name"].as_str().unwrap().to_string();
    expect_error(&env, &repo, &["branch", &task], 2, "delegate::no_changes");
    // Its hint names the task, and runs.
    let out = env.delegate(&repo, ["branch", &task]).expect(2);
    let hint = crate::common::printed_command(&out.stderr, "git delegate diff");
    env.sh(&repo, &hint).expect(0);
    assert_eq!(
        env.git(&repo, ["for-each-ref", "refs/heads/"])
            .lines()
            .count(),
        1
    );
}

#[test]
fn a_bad_private_baselines_value_points_at_the_line() {
    let (env, repo) = Env::with_repo("proj");
    crate::common::fixtures::set_config(&repo, "[hooks]\nprivate-baselines = \"maybe\"\n");
    let out = env.delegate(&repo, ["status"]).expect(2);
    assert_has(&out.stderr, "delegate.toml");
    assert!(
        out.stderr.contains("private-baselines") || out.stderr.contains("maybe"),
        "{}",
        out.stderr
    );
}
