//! Claude Code's worktree hooks (design §3.21) through the real binary:
//! payloads on stdin as Claude Code sends them, `hooks install --claude`.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::common::assert_has;
use crate::common::fixtures::{assert_nothing_created, common_dir, config};
use crate::common::{Env, Run};
use serde_json::{json, Value};

/// Start `git delegate hook <which>` in `dir` with `payload` on stdin.
fn start_hook(env: &Env, dir: &Path, which: &str, payload: &str) -> Child {
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
    child
}

/// Run `git delegate hook <which>` in `dir` with `payload` on stdin.
fn hook(env: &Env, dir: &Path, which: &str, payload: &str) -> Run {
    Run::from(
        start_hook(env, dir, which, payload)
            .wait_with_output()
            .unwrap(),
    )
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
    assert!(labels.contains(&"claude-two") && labels.contains(&"claude-three"));
    // A name with a space is made a task name, a hash of it appended.
    let one: Vec<&Value> = bs
        .iter()
        .filter(|b| {
            b["label"]
                .as_str()
                .unwrap()
                .starts_with("claude-agent-one-")
        })
        .collect();
    assert_eq!(one.len(), 1, "{labels:?}");
    assert_eq!(
        format!("claude-{}", one[0]["tasks"][0]["name"].as_str().unwrap()),
        one[0]["label"].as_str().unwrap()
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
        json!({"name": "", "cwd": repo}).to_string(),
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

/// The batch whose label is `label`, from `status --json`.
fn labelled(env: &Env, repo: &Path, label: &str) -> Value {
    batches(env, repo)
        .into_iter()
        .find(|b| b["label"] == label)
        .unwrap_or_else(|| panic!("no batch labelled {label}"))
}

/// Names Claude Code may send that are no task name (`..`, a path, 10,000
/// characters, NUL, a newline, Unicode, names that differ only in what is
/// dropped) become valid task names and labels, each different, bounded,
/// and `git delegate branch TASK` works with its default branch name
/// `delegate/<label>/<task>`, a ref git accepts.
#[test]
fn every_name_gives_a_safe_label_and_branch_works() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let long = "n".repeat(10_000);
    let raw = [
        "../../x",
        long.as_str(),
        "a\u{0}b",
        "a\nb",
        "a b",
        "a\tb",
        "a/b",
        "ünïcødé ✓ 修正",
        "x.lock",
        "-lead.",
    ];
    let mut seen = std::collections::HashSet::new();
    for (i, name) in raw.iter().enumerate() {
        let run = hook(
            &env,
            &repo,
            "worktree-create",
            &json!({"name": name, "cwd": repo}).to_string(),
        )
        .expect(0);
        assert_has(&run.stderr, "is made the task name");
        let ws = PathBuf::from(run.stdout.trim_end());
        // Inside the workspace root, nowhere a `..` could lead.
        assert!(ws.starts_with(env.workspace_root()), "{name:?}: {ws:?}");
        std::fs::write(ws.join(format!("work-{i}.txt")), "work\n").unwrap();
        let b = batches(&env, &repo)
            .into_iter()
            .find(|b| b["tasks"][0]["root"] == ws.to_str().unwrap())
            .unwrap();
        let (label, task) = (
            b["label"].as_str().unwrap().to_string(),
            b["tasks"][0]["name"].as_str().unwrap().to_string(),
        );
        assert_eq!(label, format!("claude-{task}"), "{name:?}");
        assert!(task.len() <= 64, "{task}");
        assert!(
            label
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c)),
            "{label:?}"
        );
        assert!(seen.insert(label.clone()), "{name:?} collides: {label}");
        let branch = format!("delegate/{label}/{task}");
        let ok = env
            .git_cmd(&repo)
            .args(["check-ref-format", "--branch", &branch])
            .output()
            .unwrap();
        assert!(ok.status.success(), "{branch}");
        let out = env
            .delegate(&repo, ["branch", &task, "--batch", &label, "--json"])
            .expect(0)
            .json();
        assert_eq!(out["branch"], format!("refs/heads/{branch}"), "{out}");
        let files = env.git(&repo, ["ls-tree", "-r", "--name-only", &branch]);
        assert!(files.contains(&format!("work-{i}.txt")), "{files}");
    }
    // A name that is a valid task name already is kept as it is.
    let a = create(&env, &repo, json!({"name": "agent-a1b2", "cwd": repo}));
    assert!(a.ends_with("agent-a1b2"), "{a:?}");
    assert_eq!(
        labelled(&env, &repo, "claude-agent-a1b2")["tasks"][0]["name"],
        "agent-a1b2"
    );
}

/// `worktree-remove` started together with the user's own `git delegate
/// apply` of the same batch: whichever gets there first lands the work,
/// the hook always exits 0 (saying on stderr that the batch had ended when
/// the user's apply won), and the work lands exactly once.
#[test]
fn remove_racing_the_users_apply_exits_0_and_lands_once() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let rounds = 8;
    let mut hook_lost = 0;
    for round in 0..rounds {
        let name = format!("race{round}");
        let ws = create(&env, &repo, json!({"name": name, "cwd": repo}));
        let readme = read(&ws.join("README"));
        std::fs::write(ws.join("README"), format!("{readme}line {round}\n")).unwrap();
        std::fs::write(ws.join(format!("{name}.txt")), "landed\n").unwrap();
        let label = format!("claude-{name}");
        let user = env
            .delegate_cmd(&repo)
            .args(["apply", &label])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let hook = start_hook(
            &env,
            &repo,
            "worktree-remove",
            &json!({ "worktree_path": ws }).to_string(),
        );
        let hook = Run::from(hook.wait_with_output().unwrap());
        let user = Run::from(user.wait_with_output().unwrap());
        assert_eq!(hook.code, 0, "round {round}: hook\n{}", hook.stderr);
        if hook
            .stderr
            .contains("ended before this hook could apply it")
        {
            hook_lost += 1;
            assert_has(&hook.stderr, "another git-delegate command applied it");
            assert_eq!(user.code, 0, "round {round}: user\n{}", user.stderr);
        } else {
            // The hook applied it; the user's apply found no batch.
            assert!(
                user.code == 0 || user.stderr.contains("unknown_batch"),
                "round {round}: user\n{}",
                user.stderr
            );
        }
        assert_eq!(read(&repo.join(format!("{name}.txt"))), "landed\n");
        let lines = read(&repo.join("README"));
        assert_eq!(
            lines.matches(&format!("line {round}\n")).count(),
            1,
            "round {round}: {lines}"
        );
        assert!(!ws.exists());
        assert!(batches(&env, &repo).is_empty());
    }
    // Every round was applied once: one undo entry each.
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"].as_array().unwrap().len(), rounds);
    eprintln!("the user's apply won {hook_lost} of {rounds} races");
}

/// Claude Code resuming `--worktree NAME` runs create again with the same
/// name: the open batch of that name in this working tree is handed back
/// (its folder on stdout, "resumed" on stderr, its lease renewed), only
/// while its workspace is the folder prepare made; another working tree
/// of the repository never gets it.
#[test]
fn create_of_an_open_name_resumes_it() {
    let env = Env::new();
    let repo = dirty_repo(&env);
    let payload = json!({"name": "feature x", "cwd": repo.join("sub")});
    let first = create(&env, &repo, payload.clone());
    std::fs::write(first.join("wip.txt"), "half done\n").unwrap();
    let label = batches(&env, &repo)[0]["label"]
        .as_str()
        .unwrap()
        .to_string();
    let expires = labelled(&env, &repo, &label)["lease"]["expires_at"].clone();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let run = hook(&env, &repo, "worktree-create", &payload.to_string()).expect(0);
    assert_eq!(run.stdout, format!("{}\n", first.display()));
    assert_has(&run.stderr, "resumed batch");
    let bs = batches(&env, &repo);
    assert_eq!(bs.len(), 1);
    assert_ne!(bs[0]["lease"]["expires_at"], expires, "lease not renewed");
    assert_eq!(read(&first.join("wip.txt")), "half done\n");
    // Removing it lands the work once.
    remove(&env, &repo, &first).expect(0);
    assert_eq!(read(&repo.join("sub/wip.txt")), "half done\n");

    // Another working tree of the repository with the same name: refused,
    // never handed this one's workspace.
    let again = create(&env, &repo, payload.clone());
    let other = env.path().join("other-wt");
    env.git(
        &repo,
        ["worktree", "add", "-q", "--detach", other.to_str().unwrap()],
    );
    let run = hook(
        &env,
        &other,
        "worktree-create",
        &json!({"name": "feature x", "cwd": other}).to_string(),
    );
    assert_ne!(run.code, 0);
    assert_eq!(run.stdout, "");
    assert_has(&run.stderr, "duplicate_label");

    // A workspace that is gone is not handed back either.
    let root = PathBuf::from(
        labelled(&env, &repo, &label)["tasks"][0]["root"]
            .as_str()
            .unwrap(),
    );
    assert!(again.starts_with(&root));
    std::fs::remove_dir_all(&root).unwrap();
    let run = hook(&env, &repo, "worktree-create", &payload.to_string());
    assert_ne!(run.code, 0);
    assert_eq!(run.stdout, "");
    assert_has(&run.stderr, "duplicate_label");
}
