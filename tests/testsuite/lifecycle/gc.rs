//! `git delegate gc` (design §3.4, §6.3): rescue first, then reclaim stale
//! batches and leftovers; live batches and anything not ours are never
//! touched; `--dry-run` changes nothing.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::strs;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::assert_has;
use crate::common::fixtures::{id, prepare, set_config, task_root, wait_stale};
use crate::common::Env;
use serde_json::Value;

/// Wait until the wall clock has moved past `secs` whole seconds from now.
fn sleep_secs(secs: u64) {
    std::thread::sleep(Duration::from_millis(secs * 1000 + 100));
}

/// Everything under `root`: per path, its kind, mode, size, mtime (ns) and
/// content (symlink target for links). Directories included.
fn tree_state(root: &Path) -> BTreeMap<PathBuf, (u32, u64, i64, i64, Vec<u8>)> {
    crate::common::files::entries_below(root, false)
        .into_iter()
        .map(|(p, m, content)| (p, (m.mode(), m.size(), m.mtime(), m.mtime_nsec(), content)))
        .collect()
}

fn refs_with_targets(env: &Env, repo: &Path) -> String {
    env.git(
        repo,
        [
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/pi-delegate/",
        ],
    )
}

fn worktree_ids(repo: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(repo.join(".git/worktrees"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

#[test]
fn gc_rescues_uncommitted_work_then_removes_the_workspaces() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join("extra.txt"), "extra\n").unwrap();
    std::fs::write(repo.join("README"), "source edit\n").unwrap();
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    let batch = id(&doc);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let (ws1, ws2) = (task_root(&doc, 0), task_root(&doc, 1));

    // Worker 1 edits, adds and deletes, never commits; worker 2 does nothing.
    std::fs::write(ws1.join("README"), "worker edit\n").unwrap();
    std::fs::create_dir_all(ws1.join("dir")).unwrap();
    std::fs::write(ws1.join("dir/new.txt"), "new file\n").unwrap();
    std::fs::remove_file(ws1.join("extra.txt")).unwrap();
    let expected_tree = env.oracle_tree(&ws1);
    let source_before = tree_state(&repo);
    wait_stale(&env, &repo, &batch);

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["schema"], "git-delegate/v1");
    assert_eq!(gc["dry_run"], false);
    assert_eq!(gc["batches"], serde_json::json!([batch]));
    assert_eq!(gc["workspaces_removed"], 2);
    assert_eq!(gc["recovered_writebacks"], serde_json::json!([]));
    assert!(gc["bytes_freed"].as_u64().unwrap() > 0);
    let rescued = gc["rescued"].as_array().unwrap();
    assert_eq!(rescued.len(), 1, "{gc}");
    assert_eq!(rescued[0]["batch"], batch.as_str());
    assert_eq!(rescued[0]["task"], "1");
    let r = rescued[0]["ref"].as_str().unwrap();
    assert_eq!(
        r,
        format!("refs/pi-delegate/batches/{batch}/tasks/1/proposal")
    );
    // Only the baseline ref went; the proposal is kept.
    assert_eq!(gc["refs_removed"], 1);

    // The ref holds exactly the worker's files, on top of the baseline.
    let tree = env.git(&repo, ["rev-parse", &format!("{r}^{{tree}}")]);
    assert_eq!(tree.trim(), expected_tree);
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{r}^")]).trim(),
        baseline
    );
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:README")]),
        "worker edit\n"
    );
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:dir/new.txt")]),
        "new file\n"
    );
    let gone = env
        .git_cmd(&repo)
        .args(["cat-file", "-e", &format!("{r}:extra.txt")])
        .output()
        .unwrap();
    assert!(!gone.status.success(), "extra.txt should be deleted in {r}");
    // Its patch outlives the batch's state folder.
    let patch = PathBuf::from(rescued[0]["patch"].as_str().unwrap());
    assert!(patch.is_file(), "{}", patch.display());

    // Workspaces, registrations, baseline ref and state are gone.
    assert!(!ws1.exists() && !ws2.exists());
    assert!(!ws1.parent().unwrap().exists());
    assert_eq!(worktree_ids(&repo), Vec::<String>::new());
    assert!(!env
        .git(&repo, ["worktree", "list", "--porcelain"])
        .contains("delegate"));
    assert_eq!(env.private_refs(&repo), vec![r.to_string()]);
    assert!(!repo.join(".git/delegate/batches").join(&batch).exists());
    env.delegate(&repo, ["status", "--check"]).expect(0);

    // The source working tree and index were not touched.
    let outside_git = |m: BTreeMap<PathBuf, _>| {
        m.into_iter()
            .filter(|(p, _)| !p.starts_with(".git"))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(
        outside_git(tree_state(&repo)),
        outside_git(source_before.clone())
    );
    assert_eq!(read_bytes(&repo.join("README")), b"source edit\n");
    assert_eq!(
        source_before.get(Path::new(".git/index")),
        tree_state(&repo).get(Path::new(".git/index"))
    );

    // A second gc finds nothing left to do and keeps the rescued ref.
    let again = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(again["batches"].as_array().unwrap().len(), 0);
    assert_eq!(again["refs_removed"], 0);
    assert_eq!(again["bytes_freed"], 0);
    assert_eq!(env.private_refs(&repo), vec![r.to_string()]);
    assert!(patch.is_file());
}

#[test]
fn gc_leaves_a_live_batch_byte_for_byte_alone() {
    let (env, repo) = Env::with_repo("proj");
    let live = prepare(&env, &repo, &["-n", "2", "--ttl", "1h", "--label", "live"]);
    let stale = prepare(&env, &repo, &["--ttl", "1s"]);
    let live_id = id(&live);
    // The live batch's workers have uncommitted work, one even a commit.
    let (lw1, lw2) = (task_root(&live, 0), task_root(&live, 1));
    std::fs::write(lw1.join("README"), "live work\n").unwrap();
    std::fs::write(lw2.join("untracked.txt"), "more\n").unwrap();
    env.git(&lw2, ["add", "untracked.txt"]);
    env.git(&lw2, ["commit", "-q", "-m", "worker commit"]);
    std::fs::write(lw2.join("README"), "uncommitted\n").unwrap();
    wait_stale(&env, &repo, &id(&stale));

    let git_dir = repo.join(".git");
    let live_refs: Vec<String> = refs_with_targets(&env, &repo)
        .lines()
        .filter(|l| l.contains(&live_id))
        .map(str::to_string)
        .collect();
    assert_eq!(live_refs.len(), 1);
    let ws_before = tree_state(lw1.parent().unwrap());
    let regs_before: Vec<_> = ["1", "2"]
        .iter()
        .map(|t| tree_state(&git_dir.join(format!("worktrees/delegate-{}-{t}", &live_id[..8]))))
        .collect();
    let state_before = tree_state(&git_dir.join("delegate/batches").join(&live_id));

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([id(&stale)]));
    assert_eq!(gc["rescued"].as_array().unwrap().len(), 0);

    assert_eq!(tree_state(lw1.parent().unwrap()), ws_before);
    for (t, before) in ["1", "2"].iter().zip(&regs_before) {
        let reg = git_dir.join(format!("worktrees/delegate-{}-{t}", &live_id[..8]));
        assert_eq!(&tree_state(&reg), before);
    }
    assert_eq!(
        tree_state(&git_dir.join("delegate/batches").join(&live_id)),
        state_before
    );
    let live_refs_after: Vec<String> = refs_with_targets(&env, &repo)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(live_refs_after, live_refs);
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"].as_array().unwrap().len(), 1);
    assert_eq!(status["batches"][0]["lease"]["state"], "live");
}

#[test]
fn gc_dry_run_changes_nothing_and_predicts_the_real_run() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    let batch = id(&doc);
    std::fs::write(task_root(&doc, 1).join("work.txt"), "work\n").unwrap();
    // A leftover folder nobody owns, too.
    let base = task_root(&doc, 0)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(base.join("0badc0de/9")).unwrap();
    wait_stale(&env, &repo, &batch);

    let before = tree_state(env.path());
    let refs_before = refs_with_targets(&env, &repo);
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(tree_state(env.path()), before, "gc --dry-run changed files");
    assert_eq!(refs_with_targets(&env, &repo), refs_before);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["batches"], serde_json::json!([batch]));
    assert_eq!(dry["workspaces_removed"], 3);
    assert_eq!(dry["rescued"][0]["task"], "2");
    let text = env.delegate(&repo, ["gc", "--dry-run"]).expect(0);
    assert_has(&text.stdout, "Would reclaim");
    assert_eq!(tree_state(env.path()), before);

    let real = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(real["dry_run"], false);
    for key in [
        "batches",
        "workspaces_removed",
        "registrations_removed",
        "refs_removed",
        "refs_kept",
        "bytes_freed",
    ] {
        assert_eq!(real[key], dry[key], "{key}");
    }
    assert_eq!(real["rescued"][0]["ref"], dry["rescued"][0]["ref"]);
    assert!(!base.join("0badc0de").exists());
}

#[test]
fn gc_reclaims_each_kind_of_leftover_and_nothing_else() {
    let (env, repo) = Env::with_repo("proj");
    let live = prepare(&env, &repo, &["--ttl", "1h"]);
    let lost = prepare(&env, &repo, &["-n", "2", "--ttl", "1h"]);
    let lost_id = id(&lost);
    let short = &lost_id[..8];
    let base = task_root(&lost, 0)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let workspace_root = base.parent().unwrap().to_path_buf();

    // A batch whose state was lost: task 1's folder is gone (registration
    // left over), task 2's registration is gone (folder left over).
    std::fs::remove_dir_all(repo.join(".git/delegate/batches").join(&lost_id)).unwrap();
    std::fs::remove_dir_all(task_root(&lost, 0)).unwrap();
    std::fs::remove_dir_all(repo.join(format!(".git/worktrees/delegate-{short}-2"))).unwrap();
    // An empty folder left by a prepare that died early.
    std::fs::create_dir_all(base.join("0badc0de/1")).unwrap();
    // Not ours to remove: another repository's folder, a folder the user put
    // in ours, a registered worktree (like `apply --keep` hands over), the
    // user's own worktrees whose folders are gone (one even named like ours).
    let other = workspace_root.join("other-0123456789ab/abcd1234/1");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("file"), "other repo\n").unwrap();
    let users = base.join("feedbeef/mine");
    std::fs::create_dir_all(&users).unwrap();
    std::fs::write(users.join("notes.txt"), "mine\n").unwrap();
    let kept = base.join("cafecafe/kept");
    crate::common::fixtures::worktree_add(&env, &repo, &kept);
    let own = env.path().join("own");
    let own_like_ours = env.path().join("delegate-own");
    crate::common::fixtures::worktree_add(&env, &repo, &own);
    crate::common::fixtures::worktree_add(&env, &repo, &own_like_ours);
    std::fs::remove_dir_all(&own).unwrap();
    std::fs::remove_dir_all(&own_like_ours).unwrap();
    let live_before = tree_state(&task_root(&live, 0));

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"].as_array().unwrap().len(), 0);
    assert_eq!(gc["registrations_removed"], 1, "{gc}");
    // Only the empty folder goes: task 2's folder holds files nothing
    // proves are no work (no batch, no registration records it), so it is
    // left and reported, as the user's folder is (design §3.18).
    assert_eq!(gc["workspaces_removed"], 1, "{gc}");
    assert!(gc["bytes_freed"].as_u64().unwrap() > 0);
    let mut left: Vec<&str> = strs(&gc["left_alone"]);
    left.sort();
    let two = task_root(&lost, 1);
    let mut want = vec![two.to_str().unwrap(), users.to_str().unwrap()];
    want.sort();
    assert_eq!(left, want, "{gc}");
    // The lost batch's baseline ref is young: kept for gc.keep-failed.
    assert_eq!(gc["refs_removed"], 0);

    assert!(task_root(&lost, 1).join("README").is_file());
    assert!(!base.join("0badc0de").exists());
    let mut ids = worktree_ids(&repo);
    ids.retain(|i| i != &format!("delegate-{}-1", &id(&live)[..8]));
    assert_eq!(ids, vec!["delegate-own", "kept", "own"]);
    assert_eq!(read(&other.join("file")), "other repo\n");
    assert_eq!(read(&users.join("notes.txt")), "mine\n");
    assert!(kept.join("README").exists());
    assert_eq!(tree_state(&task_root(&live, 0)), live_before);
    let baseline_ref = format!("refs/pi-delegate/batches/{lost_id}/baseline");
    assert!(env.private_refs(&repo).contains(&baseline_ref));

    // Once its commit is older than gc.keep-failed, the unowned ref goes;
    // the live batch's ref stays whatever its age.
    set_config(&repo, "[gc]\nkeep-failed = \"1s\"\n");
    sleep_secs(2);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["refs_removed"], 1);
    assert_eq!(
        env.private_refs(&repo),
        vec![format!("refs/pi-delegate/batches/{}/baseline", id(&live))]
    );
}

#[test]
fn gc_keeps_rescued_refs_for_keep_failed_then_removes_them() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    std::fs::write(task_root(&doc, 0).join("README"), "rescue me\n").unwrap();
    wait_stale(&env, &repo, &batch);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    let r = gc["rescued"][0]["ref"].as_str().unwrap().to_string();
    let patch = PathBuf::from(gc["rescued"][0]["patch"].as_str().unwrap());
    assert_eq!(gc["refs_kept"], serde_json::json!([r]));
    assert!(patch.is_file());

    // Within gc.keep-failed (default 14 days) it stays.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["refs_removed"], 0);
    assert_eq!(env.private_refs(&repo), vec![r.clone()]);

    set_config(&repo, "[gc]\nkeep-failed = \"1s\"\n");
    sleep_secs(2);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["refs_removed"], 1);
    assert!(env.private_refs(&repo).is_empty());
    assert!(!patch.exists());
    assert!(!repo.join(".git/delegate/kept").exists());
}

#[test]
fn gc_keeps_a_conflict_proposal_and_restarts_its_clock() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    let batch = id(&doc);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    // Task 1 ended `conflict` in an earlier apply (long ago: the test env
    // dates git's commits 2026-01-01), and its workspace is gone since.
    let base_tree = env.git(&repo, ["rev-parse", &format!("{baseline}^{{tree}}")]);
    let old = env.git(
        &repo,
        [
            "commit-tree",
            base_tree.trim(),
            "-p",
            &baseline,
            "-m",
            "old proposal",
        ],
    );
    let r = format!("refs/pi-delegate/batches/{batch}/tasks/1/proposal");
    env.git(&repo, ["update-ref", &r, old.trim()]);
    let toml_path = repo
        .join(".git/delegate/batches")
        .join(&batch)
        .join("batch.toml");
    let text = read(&toml_path);
    let text = text.replacen("state = \"open\"", "state = \"conflict\"", 1);
    std::fs::write(&toml_path, text).unwrap();
    std::fs::remove_dir_all(task_root(&doc, 0)).unwrap();
    wait_stale(&env, &repo, &batch);

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([batch]));
    assert_eq!(gc["refs_kept"], serde_json::json!([r]));
    assert_eq!(gc["workspaces_removed"], 1);
    assert_eq!(env.private_refs(&repo), vec![r.clone()]);
    // Same content and parent, a fresh clock: kept for gc.keep-failed from now.
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{r}^{{tree}}")])
            .trim(),
        base_tree.trim()
    );
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{r}^")]).trim(),
        baseline
    );
    assert_eq!(worktree_ids(&repo), Vec::<String>::new());
}

#[test]
fn gc_never_removes_a_replaced_workspace() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("mine.txt"), "the user's\n").unwrap();
    wait_stale(&env, &repo, &batch);

    for _ in 0..2 {
        let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
        assert_eq!(gc["left_alone"], serde_json::json!([ws.to_str().unwrap()]));
        assert_eq!(gc["workspaces_removed"], 0);
        assert_eq!(read(&ws.join("mine.txt")), "the user's\n");
    }
    assert!(env.private_refs(&repo).is_empty());
    assert_eq!(worktree_ids(&repo), Vec::<String>::new());
}

#[test]
fn gc_outside_a_repository_fails_cleanly() {
    let env = Env::new();
    let dir = env.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    let doc = env.delegate(&dir, ["gc", "--json"]).expect(3).json();
    assert_eq!(doc["error"]["code"], "delegate::not_a_repository");
}

#[test]
fn gc_waits_for_processes_still_running_in_a_workspace() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "still being written\n").unwrap();
    // A worker that forgot to renew its lease but is still at work in there.
    let mut worker = std::process::Command::new("cat")
        .current_dir(&ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_stale(&env, &repo, &batch);

    let before = tree_state(&ws);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(1).json();
    assert_eq!(gc["batches"].as_array().unwrap().len(), 0);
    assert_eq!(gc["skipped"][0]["batch"], batch.as_str());
    let message = gc["skipped"][0]["message"].as_str().unwrap();
    assert!(message.contains(&worker.id().to_string()), "{message}");
    assert_eq!(tree_state(&ws), before);
    assert_eq!(env.private_refs(&repo).len(), 1);

    drop(worker.stdin.take());
    worker.wait().unwrap();
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([batch]));
    assert_eq!(gc["rescued"][0]["task"], "1");
    assert!(!ws.exists());
}

/// A nested repository whose name is not UTF-8: written lossily, and the
/// document says so (the engine reports the name as bytes, design §6.2).
#[test]
fn gc_names_a_nested_repository_that_is_not_utf8_lossily_and_says_so() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    let dep = env.repo("dep");
    env.git(&ws, ["clone", "-q", dep.to_str().unwrap(), "lib"]);
    std::fs::rename(
        ws.join("lib"),
        ws.join(crate::common::files::os(b"lib-\xff")),
    )
    .unwrap();
    wait_stale(&env, &repo, &batch);

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    let kept = gc["kept_workspaces"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{gc:#}");
    assert_eq!(
        kept[0]["nested_repositories"],
        serde_json::json!(["lib-\u{fffd}"]),
        "{gc:#}"
    );
    assert_eq!(gc["lossy_paths"], true, "{gc:#}");
}

#[test]
fn gc_rescues_the_rest_and_keeps_a_workspace_holding_a_nested_repository() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "worker edit\n").unwrap();
    let dep = env.repo("dep");
    env.git(&ws, ["clone", "-q", dep.to_str().unwrap(), "lib"]);
    std::fs::write(ws.join("lib/local.txt"), "not committed anywhere\n").unwrap();
    wait_stale(&env, &repo, &batch);

    let dry = env.delegate(&repo, ["gc", "--dry-run", "--json"]).json();
    assert_eq!(
        dry["kept_workspaces"][0]["nested_repositories"],
        serde_json::json!(["lib"]),
        "{dry:#}"
    );
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    // The rest is rescued as a proposal.
    let rescued = gc["rescued"].as_array().unwrap();
    assert_eq!(rescued.len(), 1, "{gc:#}");
    let r = rescued[0]["ref"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["show", &format!("{r}:README")]),
        "worker edit\n"
    );
    // The workspace is kept, with its nested repository, and reported.
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    let kept = gc["kept_workspaces"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{gc:#}");
    assert_eq!(kept[0]["batch"], batch.as_str());
    assert_eq!(kept[0]["task"], "1");
    assert_eq!(kept[0]["nested_repositories"], serde_json::json!(["lib"]));
    assert!(gc.get("lossy_paths").is_none(), "{gc:#}");
    let left: Vec<&str> = strs(&gc["left_alone"]);
    assert!(left.contains(&ws.to_str().unwrap()), "{gc:#}");
    assert!(ws.join("lib/.git").is_dir());
    assert_eq!(
        read_bytes(&ws.join("lib/local.txt")),
        b"not committed anywhere\n"
    );
    assert_eq!(read_bytes(&ws.join("README")), b"worker edit\n");
    // It stays a registered worktree the user owns (unlocked), so no later gc
    // takes it.
    assert!(env
        .git(&repo, ["worktree", "list", "--porcelain"])
        .contains(ws.to_str().unwrap()));
    let again = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(again["workspaces_removed"], 0, "{again:#}");
    assert!(ws.join("lib/.git").is_dir());
    assert!(ws.join("lib/local.txt").is_file());
}

#[test]
fn gc_keeps_a_stale_workspace_that_is_the_source_of_another_open_batch() {
    // An agent ran `git delegate prepare` inside its workspace; the outer batch goes stale, the inner one is live.
    let (env, repo) = Env::with_repo("proj");
    let outer = prepare(&env, &repo, &["--ttl", "1s"]);
    let ws = task_root(&outer, 0);
    let inner = prepare(&env, &ws, &[]);
    let inner_ws = task_root(&inner, 0);
    std::fs::write(inner_ws.join("inner.txt"), "inner work\n").unwrap();
    wait_stale(&env, &repo, &id(&outer));
    let doc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(doc["batches"], serde_json::json!([id(&outer)]), "{doc:#}");
    assert_eq!(doc["kept_workspaces"][0]["workspace"], ws.to_str().unwrap());
    assert_eq!(doc["kept_workspaces"][0]["batches"][0], id(&inner).as_str());
    assert!(ws.join("README").is_file());
    let out = env
        .delegate(&ws, ["apply", "--json", &id(&inner)])
        .expect(0)
        .json();
    assert_eq!(out["tasks"][0]["status"], "applied", "{out:#}");
    assert_eq!(read_bytes(&ws.join("inner.txt")), b"inner work\n");
    // Once nothing is prepared in it any more, it is an ordinary worktree:
    // gc leaves it to `git worktree remove`.
    env.delegate(&repo, ["gc", "--json"]).expect(0);
    assert!(ws.join("README").is_file());
}

/// One rule with apply's quiescing (`quiesce`'s header): a process whose
/// current folder inside the workspace was deleted no longer uses it, so
/// gc reclaims the batch.
#[test]
fn gc_ignores_a_process_whose_folder_in_the_workspace_was_deleted() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    std::fs::create_dir(ws.join("gone")).unwrap();
    let mut worker = std::process::Command::new("cat")
        .current_dir(ws.join("gone"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::fs::remove_dir(ws.join("gone")).unwrap();
    wait_stale(&env, &repo, &batch);

    let gc = env.delegate(&repo, ["gc", "--json"]);
    drop(worker.stdin.take());
    worker.wait().unwrap();
    let gc = gc.expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([batch]));
    assert!(!ws.exists());
}

/// Decided on purpose (`quiesce`'s header): gc counts the caller's own
/// ancestors. A shell sitting in a workspace that runs `git delegate gc`
/// (here from a subshell in the source) is still using it: gc leaves that
/// batch alone and names the shell.
#[test]
fn gc_counts_the_callers_shell_sitting_in_a_workspace() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = task_root(&doc, 0);
    wait_stale(&env, &repo, &batch);

    let pid_file = env.path().join("shell.pid");
    // The harness's hermetic environment, for a shell instead of the binary.
    let mut sh = std::process::Command::new("sh");
    sh.env_clear();
    for (k, v) in env.delegate_cmd(&ws).get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    // The shell stays in the workspace; a subshell runs gc in the source.
    sh.current_dir(&ws)
        .arg("-c")
        .arg(r#"echo $$ > "$1"; (cd "$2" && exec "$3" gc --json); status=$?; exit $status"#);
    sh.arg("sh")
        .arg(&pid_file)
        .arg(&repo)
        .arg(env!("CARGO_BIN_EXE_git-delegate"));
    let out = sh.output().unwrap();
    let shell = read(&pid_file);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let gc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(gc["batches"].as_array().unwrap().len(), 0);
    assert_eq!(gc["skipped"][0]["batch"], batch.as_str());
    let message = gc["skipped"][0]["message"].as_str().unwrap();
    assert_has(message, shell.trim());
    assert!(ws.exists());
}
