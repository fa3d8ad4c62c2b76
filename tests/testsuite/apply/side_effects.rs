//! Work that hides in shared refs (design §3.16): a worker's `git checkout
//! -b`, `git tag` and `git stash` in a workspace land in the user's
//! repository; apply reports them (`side_effects`), a task whose work is in
//! the stash stays open instead of `no_changes`, and `drop` refuses
//! without `--force`. Real git in real workspaces.
use crate::common::files::read;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;
use crate::common::succeed_as;
use crate::common::AsEnvUser;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::{prepare, roots, task};
use crate::common::Env;
use serde_json::Value;

/// A repository with two files, a branch `old` and a tag `v0` made before
/// prepare, and a batch of `n` tasks; returns (repo, batch short, roots).
fn setup(env: &Env, n: usize) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    commit_files(env, &repo, &[("a.txt", "a\n"), ("b.txt", "b\n")], "files");
    env.git(&repo, ["branch", "old"]);
    env.git(&repo, ["tag", "v0"]);
    let doc = prepare(env, &repo, &["-n", &n.to_string()]);
    let short = doc["batch"].as_str().unwrap()[..8].to_string();
    let roots = roots(&doc);
    (repo, short, roots)
}

fn effects(doc: &Value) -> Vec<Value> {
    doc["side_effects"]
        .as_array()
        .unwrap_or_else(|| panic!("no side_effects in {doc}"))
        .clone()
}

fn effect<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|e| e["ref"] == name)
}

fn stash_list(env: &Env, repo: &Path) -> Vec<String> {
    env.git(repo, ["stash", "list", "--format=%H"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn branch_tag_and_stash_made_in_workspaces_are_reported_and_the_users_are_not() {
    let env = Env::new();
    let (repo, short, roots) = setup(&env, 2);
    // Task 1: a branch, a commit on it, a tag.
    env.git(&roots[0], ["checkout", "-q", "-b", "x"]);
    std::fs::write(roots[0].join("a.txt"), "a from 1\n").unwrap();
    env.git(&roots[0], ["commit", "-q", "-am", "work of 1"]);
    env.git(&roots[0], ["tag", "t"]);
    let x = env
        .git(&repo, ["rev-parse", "refs/heads/x"])
        .trim()
        .to_string();
    // Task 2: its work stashed.
    std::fs::write(roots[1].join("b.txt"), "b from 2\n").unwrap();
    env.git(&roots[1], ["stash", "-q"]);
    let worker_stash = env
        .git(&repo, ["rev-parse", "refs/stash"])
        .trim()
        .to_string();
    // The user, in the source after prepare: a branch, a commit, a stash.
    env.git(&repo, ["branch", "mine"]);
    env.git(&repo, ["commit", "-q", "--allow-empty", "-m", "user"]);
    std::fs::write(repo.join("README"), "user edit\n").unwrap();
    env.git(&repo, ["stash", "-q"]);

    // The human text says not to push the worker's branch, and what makes
    // a clean one (design §3.19).
    let human = env.delegate(&repo, ["apply", "--dry-run"]).expect(1);
    let all = format!("{}{}", human.stdout, human.stderr);
    assert!(
        all.contains(&format!("`git delegate branch 1 --batch {short}`")),
        "{all}"
    );
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    let list = effects(&doc);
    let branch = effect(&list, "refs/heads/x").expect("branch x reported");
    assert_eq!(branch["task"], "1");
    assert_eq!(branch["kind"], "branch");
    assert_eq!(branch["change"], "created");
    assert_eq!(branch["new"], x.as_str());
    let tag = effect(&list, "refs/tags/t").expect("tag t reported");
    assert_eq!(tag["task"], "1");
    assert_eq!(tag["kind"], "tag");
    let stash = effect(&list, "refs/stash").expect("stash entry reported");
    assert_eq!(stash["task"], "2");
    assert_eq!(stash["change"], "added");
    assert_eq!(stash["new"], worker_stash.as_str());
    // The user's stash came after: the worker's entry is stash@{1}.
    assert_eq!(stash["stash"], "stash@{1}");
    // Only those three: refs unchanged since prepare (old, v0), the user's
    // branch, moved main and stash are not the batch's.
    assert_eq!(list.len(), 3, "{list:?}");
    for name in [
        "refs/heads/old",
        "refs/tags/v0",
        "refs/heads/mine",
        "refs/heads/main",
    ] {
        assert!(effect(&list, name).is_none(), "{name} reported: {list:?}");
    }

    assert_eq!(task(&doc, "1")["status"], "applied");
    let t2 = task(&doc, "2");
    assert_ne!(t2["status"], "no_changes");
    assert_eq!(t2["status"], "open");
    assert_eq!(t2["reason"], "stashed");
    assert_eq!(doc["batch_open"], true);
    assert_eq!(read(&repo.join("a.txt")), "a from 1\n");
    // Nothing of the user's refs or stash was touched.
    assert_eq!(env.git(&repo, ["rev-parse", "refs/heads/x"]).trim(), x);
    env.git(&repo, ["rev-parse", "--verify", "-q", "refs/tags/t"]);
    assert_eq!(stash_list(&env, &repo).len(), 2);
    assert!(roots[1].exists(), "the stashed task keeps its workspace");
    assert!(
        !roots[0].exists(),
        "the applied task's workspace is removed"
    );

    // Task 1's workspace is gone, yet a later run still names it.
    let again = env
        .delegate(&repo, ["apply", &short, "--dry-run", "--json"])
        .expect(1)
        .json();
    let list = effects(&again);
    assert_eq!(effect(&list, "refs/heads/x").unwrap()["task"], "1");
    assert_eq!(effect(&list, "refs/tags/t").unwrap()["task"], "1");
    assert_eq!(effect(&list, "refs/stash").unwrap()["task"], "2");
}

#[test]
fn a_stash_only_task_stays_open_and_drop_refuses_without_force() {
    let env = Env::new();
    let (repo, short, roots) = setup(&env, 2);
    std::fs::write(roots[0].join("a.txt"), "a from 1\n").unwrap();
    env.git(&roots[0], ["stash", "-q"]);

    // The dry run says so too.
    let dry = env
        .delegate(&repo, ["apply", "--dry-run", "--json"])
        .expect(1)
        .json();
    assert_eq!(task(&dry, "1")["status"], "open");
    assert_eq!(task(&dry, "1")["reason"], "stashed");
    assert_eq!(task(&dry, "2")["status"], "no_changes");
    let list = effects(&dry);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["task"], "1");
    assert_eq!(list[0]["stash"], "stash@{0}");

    let refused = env
        .delegate(&repo, ["drop", &short, "--json"])
        .expect(1)
        .json();
    assert_eq!(refused["dropped"], false);
    assert_eq!(refused["unapplied"], serde_json::json!(["1"]));
    assert_eq!(refused["stashed"][0]["task"], "1");
    assert_eq!(refused["stashed"][0]["stash"], "stash@{0}");
    assert!(roots[0].exists());

    let text = env.delegate(&repo, ["drop", &short]).expect(1);
    assert_has(&text.stdout, "stash@{0}");

    env.delegate(&repo, ["drop", &short, "--force", "--json"])
        .expect(0);
    // The work stays in the user's stash.
    assert_eq!(stash_list(&env, &repo).len(), 1);
    env.git(&repo, ["stash", "show", "-p", "stash@{0}"]);
}

#[test]
fn following_the_printed_stash_hint_brings_the_work_back_and_applies_it() {
    let env = Env::new();
    let (repo, short, roots) = setup(&env, 2);
    std::fs::write(roots[1].join("b.txt"), "b from 2\n").unwrap();
    env.git(&roots[1], ["stash", "-q"]);

    let run = env.delegate(&repo, ["apply"]).expect(1);
    assert_has(&run.stdout, "stashed");
    let pop = run
        .stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("git -C ") && l.contains(" stash pop "))
        .unwrap_or_else(|| panic!("no stash pop hint in:\n{}", run.stdout))
        .to_string();
    let again = format!("git delegate apply {short}");
    assert!(run.stdout.contains(&format!("`{again}`")), "{}", run.stdout);

    // Run the hint as printed, through a shell, then apply as printed.
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c")
        .arg(&pop)
        .current_dir(&repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env_user(&env);
    succeed_as(sh, &format!("{pop} failed"));
    assert!(stash_list(&env, &repo).is_empty());
    let doc = env
        .delegate(&repo, ["apply", &short, "--json"])
        .expect(0)
        .json();
    assert_eq!(task(&doc, "2")["status"], "applied");
    assert_eq!(read(&repo.join("b.txt")), "b from 2\n");
    assert_eq!(doc["side_effects"], serde_json::json!([]));
}

#[test]
fn a_branch_moved_onto_a_workspace_commit_is_reported_as_moved() {
    let env = Env::new();
    let (repo, _short, roots) = setup(&env, 1);
    let before = env
        .git(&repo, ["rev-parse", "refs/heads/old"])
        .trim()
        .to_string();
    env.git(&roots[0], ["branch", "-f", "old", "HEAD"]);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let list = effects(&doc);
    let old = effect(&list, "refs/heads/old").expect("moved branch reported");
    assert_eq!(old["change"], "moved");
    assert_eq!(old["old"], before.as_str());
    assert_eq!(old["task"], "1");
    assert_eq!(task(&doc, "1")["status"], "no_changes");
}

#[test]
fn a_branch_or_tag_deleted_since_prepare_is_reported_with_its_old_commit() {
    let env = Env::new();
    let (repo, _short, roots) = setup(&env, 1);
    let v0 = env
        .git(&repo, ["rev-parse", "refs/tags/v0"])
        .trim()
        .to_string();
    env.git(&roots[0], ["tag", "-d", "v0"]);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let list = effects(&doc);
    let gone = effect(&list, "refs/tags/v0").expect("deleted tag reported");
    assert_eq!(gone["change"], "deleted");
    assert_eq!(gone["old"], v0.as_str());
    assert_eq!(gone["new"], Value::Null);
    assert_eq!(gone["task"], Value::Null);
}

#[test]
fn gc_of_a_stale_batch_reports_stashed_work_and_leaves_the_stash() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[("a.txt", "a\n")], "files");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let id = id(&doc);
    let root = task_root(&doc, 0);
    std::fs::write(root.join("a.txt"), "a from 1\n").unwrap();
    env.git(&root, ["stash", "-q"]);
    let stashed = env.git(&repo, ["rev-parse", "refs/stash"]);
    // Poll until the lease is stale (no timing assertion: a generous deadline).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        let state = st["batches"][0]["lease"]["state"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if state == "expired" || state == "orphaned" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never went stale");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([id]));
    assert_eq!(
        gc["stashed"],
        serde_json::json!([{"batch": id, "task": "1", "stash": "stash@{0}"}])
    );
    assert_eq!(env.git(&repo, ["rev-parse", "refs/stash"]), stashed);
    assert_eq!(stash_list(&env, &repo).len(), 1);
}

fn touch(path: &Path) {
    let ok = std::process::Command::new("touch")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "touch {}", path.display());
}

#[test]
fn a_stash_entry_is_told_by_the_files_it_put_back_or_else_belongs_to_no_task() {
    let env = Env::new();
    let (repo, _short, roots) = setup(&env, 2);
    std::fs::write(roots[0].join("a.txt"), "a from 1\n").unwrap();
    env.git(&roots[0], ["stash", "-q"]);
    // Both workspaces sit at the baseline, and the other one's index is
    // written after the stash (as a `git status` there may do): the file
    // `git stash` put back in task 1's workspace still tells.
    let gitdir = env.git(&roots[1], ["rev-parse", "--absolute-git-dir"]);
    touch(&Path::new(gitdir.trim()).join("index"));
    let doc = env
        .delegate(&repo, ["apply", "--dry-run", "--json"])
        .expect(1)
        .json();
    assert_eq!(effect(&effects(&doc), "refs/stash").unwrap()["task"], "1");
    assert_eq!(task(&doc, "1")["reason"], "stashed");

    // Task 2's a.txt is rewritten too: nothing tells any more. The entry is
    // reported with no task, changes no status, and stays in the stash.
    touch(&roots[1].join("a.txt"));
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let list = effects(&doc);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["task"], Value::Null);
    assert_eq!(list[0]["stash"], "stash@{0}");
    assert_eq!(task(&doc, "1")["status"], "no_changes");
    assert_eq!(task(&doc, "2")["status"], "no_changes");
    assert_eq!(stash_list(&env, &repo).len(), 1);
}
