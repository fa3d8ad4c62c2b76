//! Claude Code's worktree hooks (design §3.21) through the real binary:
//! payloads on stdin as Claude Code sends them, `hooks install --claude`.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::assert_has;
use crate::common::fixtures::{assert_nothing_created, common_dir, config};
use crate::common::{Env, Run};
use serde_json::{json, Value};

/// Run `git delegate hook <which>` in `dir` with `payload` on stdin.
fn hook(env: &Env, dir: &Path, which: &str, payload: &str) -> Run {
    let mut child = env
        .delegate_cmd(dir)
        .args(["hook", which])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    Run::from(child.wait_with_output().unwrap())
}

/// The remove hook for the worktree at `path`.
fn remove(env: &Env, dir: &Path, path: &Path) -> Run {
    hook(
        env,
        dir,
        "worktree-remove",
        &json!({ "worktree_path": path }).to_string(),
    )
}

/// A create hook that succeeded: its one stdout line, an existing folder.
fn create(env: &Env, dir: &Path, payload: Value) -> PathBuf {
    let run = hook(env, dir, "worktree-create", &payload.to_string()).expect(0);
    assert!(run.stdout.ends_with('\n'), "{:?}", run.stdout);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout: {:?}", run.stdout);
    let p = PathBuf::from(lines[0]);
    assert!(p.is_absolute() && p.is_dir(), "{p:?}");
    p
}

fn batches(env: &Env, repo: &Path) -> Vec<Value> {
    env.delegate(repo, ["status", "--json"]).expect(0).json()["batches"]
        .as_array()
        .unwrap()
        .clone()
}

/// A repository with a subfolder, an uncommitted edit and an untracked file.
fn dirty_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    commit_files(env, &repo, &[("sub/s.txt", "s\n")], "sub");
    std::fs::write(repo.join("README"), "hello\nedited\n").unwrap();
    std::fs::write(repo.join("untracked.txt"), "u\n").unwrap();
    repo
}

#[test]
fn create_from_top_and_subfolder_holds_the_dirty_tree() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    // Current spelling, from the top, extra fields ignored.
    let top = create(
        &env,
        &repo,
        json!({"session_id": "s", "hook_event_name": "WorktreeCreate", "name": "agent one", "cwd": repo}),
    );
    assert_eq!(read(&top.join("README")), "hello\nedited\n");
    assert_eq!(read(&top.join("untracked.txt")), "u\n");
    // Older spelling, from a subfolder: the folder printed is that subfolder.
    let sub = create(
        &env,
        &repo,
        json!({"worktree_name": "two", "base_path": repo.join("sub")}),
    );
    assert!(sub.ends_with("two/sub"), "{sub:?}");
    assert_eq!(read(&sub.join("s.txt")), "s\n");
    assert_eq!(read(&sub.join("../README")), "hello\nedited\n");
    // A third while both are open.
    let third = create(&env, &repo, json!({"name": "three", "cwd": repo}));
    let bs = batches(&env, &repo);
    assert_eq!(bs.len(), 3);
    let labels: Vec<&str> = bs.iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert!(labels.contains(&"claude-agent one"), "{labels:?}");
    assert!(labels.contains(&"claude-two") && labels.contains(&"claude-three"));
    assert_eq!(
        bs.iter()
            .filter(|b| b["tasks"][0]["name"] == "agent-one")
            .count(),
        1
    );
    assert!(third.is_dir());
}

#[test]
fn remove_lands_the_work_and_keeps_concurrent_edits() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let a = create(&env, &repo, json!({"name": "a", "cwd": repo}));
    let b = create(&env, &repo, json!({"name": "b", "cwd": repo.join("sub")}));
    std::fs::write(a.join("from-a.txt"), "A\n").unwrap();
    std::fs::write(b.join("from-b.txt"), "B\n").unwrap();
    // The user goes on working meanwhile.
    std::fs::write(repo.join("user.txt"), "mine\n").unwrap();
    // b finishes first; its payload names the folder create printed.
    let run = remove(&env, &repo, &b).expect(0);
    assert_eq!(run.stdout, "");
    assert_eq!(read(&repo.join("sub/from-b.txt")), "B\n");
    assert!(!b.exists());
    assert_eq!(batches(&env, &repo).len(), 1);
    remove(&env, &repo, &a).expect(0);
    assert_eq!(read(&repo.join("from-a.txt")), "A\n");
    assert_eq!(read(&repo.join("user.txt")), "mine\n");
    assert_eq!(read(&repo.join("README")), "hello\nedited\n");
    assert_eq!(batches(&env, &repo).len(), 0);
    assert_eq!(
        env.private_refs(&repo)
            .iter()
            .filter(|r| r.contains("/batches/"))
            .count(),
        0
    );
}

#[test]
fn remove_with_a_conflict_keeps_the_work() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let a = create(&env, &repo, json!({"name": "a", "cwd": repo}));
    std::fs::write(a.join("README"), "hello\nagent\n").unwrap();
    std::fs::write(repo.join("README"), "hello\nuser\n").unwrap();
    let run = remove(&env, &repo, &a);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_has(&run.stderr, "conflict");
    assert_has(&run.stderr, "kept");
    assert_eq!(read(&repo.join("README")), "hello\nuser\n");
    let bs = batches(&env, &repo);
    assert_eq!(bs.len(), 1);
    assert_eq!(bs[0]["tasks"][0]["state"], "conflict");
}

#[test]
fn on_remove_keep_leaves_the_batch_open() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    config(&env, &repo, "[hooks]\non-remove = \"keep\"\n");
    let a = create(&env, &repo, json!({"name": "a", "cwd": repo}));
    std::fs::write(a.join("x.txt"), "x\n").unwrap();
    remove(&env, &repo, &a).expect(0);
    assert!(!repo.join("x.txt").exists());
    assert_eq!(batches(&env, &repo).len(), 1);
}

#[test]
fn bad_payloads_make_nothing() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let plain = env.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    for payload in [
        "not json".to_string(),
        "[1]".to_string(),
        json!({"cwd": repo}).to_string(),
        json!({"name": "x"}).to_string(),
        json!({"name": "---", "cwd": repo}).to_string(),
        json!({"name": "x", "cwd": plain}).to_string(),
    ] {
        let run = hook(&env, &repo, "worktree-create", &payload);
        assert_ne!(run.code, 0, "{payload}");
        assert_eq!(run.stdout, "", "{payload}");
        assert!(!run.stderr.is_empty(), "{payload}");
        assert_nothing_created(&env, &repo);
    }
    let run = hook(&env, &repo, "worktree-remove", "{}");
    assert_eq!(run.code, 2);
    assert_has(&run.stderr, "bad_hook_payload");
}

#[test]
fn remove_of_a_foreign_path_is_left_alone() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let other = env.path().join("claude-made");
    env.git(&repo, ["worktree", "add", "-q", other.to_str().unwrap()]);
    let run = remove(&env, &repo, &other).expect(0);
    assert_has(&run.stderr, "not a git-delegate workspace");
    assert!(other.join("README").exists());
    let run = remove(&env, &repo, Path::new("/nonexistent/x")).expect(0);
    assert_has(&run.stderr, "left alone");
    let _ = common_dir(&env, &repo);
}

#[test]
fn install_claude_merges_and_is_idempotent() {
    let (env, repo) = Env::with_repo("proj");
    let file = repo.join(".claude/settings.local.json");
    std::fs::create_dir(repo.join(".claude")).unwrap();
    let before = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"WorktreeCreate": [{"hooks": [{"type": "command", "command": "other"}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
        "model": "opus"
    });
    std::fs::write(&file, before.to_string()).unwrap();
    let run = env
        .delegate(&repo, ["hooks", "install", "--claude", "--json"])
        .expect(0);
    assert_eq!(run.json()["changed"], true);
    let after: Value = serde_json::from_slice(&read_bytes(&file)).unwrap();
    assert_eq!(after["permissions"], before["permissions"]);
    assert_eq!(after["model"], "opus");
    assert_eq!(after["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    let create = after["hooks"]["WorktreeCreate"].as_array().unwrap();
    assert_eq!(create.len(), 2);
    assert_eq!(create[0], before["hooks"]["WorktreeCreate"][0]);
    assert_eq!(
        create[1],
        json!({"hooks": [{"type": "command", "command": "git delegate hook worktree-create"}]})
    );
    assert_eq!(
        after["hooks"]["WorktreeRemove"],
        json!([{"hooks": [{"type": "command", "command": "git delegate hook worktree-remove"}]}])
    );
    let bytes = read_bytes(&file);
    let run = env
        .delegate(&repo, ["hooks", "install", "--claude", "--json"])
        .expect(0);
    assert_eq!(run.json()["changed"], false);
    assert_eq!(read_bytes(&file), bytes);
    env.delegate(&repo, ["hooks", "install", "--claude", "--uninstall"])
        .expect(0);
    let gone: Value = serde_json::from_slice(&read_bytes(&file)).unwrap();
    assert_eq!(gone, before);
    // From nothing: the file is made.
    let fresh = env.repo("fresh");
    env.delegate(&fresh, ["hooks", "install", "--claude"])
        .expect(0);
    assert!(fresh.join(".claude/settings.local.json").is_file());
}
