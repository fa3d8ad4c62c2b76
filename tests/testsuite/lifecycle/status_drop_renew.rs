//! `status` (design §3.3), `drop` (§3.5) and `renew` (§3.6): leases (live,
//! expired, orphaned), changed paths, missing and replaced workspaces,
//! problems, `--check`, and what drop removes and leaves alone.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::path::Path;

use crate::common::assert_has;
use crate::common::fixtures::*;
use serde_json::Value;

fn status_json(env: &Env, repo: &Path) -> Value {
    env.delegate(repo, ["status", "--json"]).expect(0).json()
}

fn problem_kinds(st: &Value) -> Vec<String> {
    st["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn no_batches() {
    let (env, repo) = Env::with_repo("none");
    let run = env.delegate(&repo, ["status"]).expect(0);
    assert_eq!(run.stdout, "No batches.\n");
    assert_eq!(run.stderr, "");
    let doc = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(
        doc,
        serde_json::json!({"schema": "git-delegate/v1", "batches": [], "problems": []})
    );
    let run = env.delegate(&repo, ["status", "--check"]).expect(0);
    assert_eq!(run.stdout, "");
    // status creates nothing, not even the state folder.
    assert!(!common_dir(&env, &repo).join("delegate").exists());
}

#[test]
fn status_shows_batches_tasks_and_changed_paths() {
    let (env, repo) = Env::with_repo("st");
    commit_files(&env, &repo, &[("a", "a\n"), ("b", "b\n")], "ab");
    let doc = prepare(&env, &repo, &["-n", "2", "--label", "work"]);
    let (ws1, ws2) = (root(&doc, 0), root(&doc, 1));
    // Task 1: a modification, an addition, a deletion, a mode change.
    write(&ws1.join("a"), "changed\n");
    write(&ws1.join("new/file"), "n\n");
    std::fs::remove_file(ws1.join("b")).unwrap();
    set_exec(&ws1.join("README"), true);
    let st = status_json(&env, &repo);
    assert_eq!(st["schema"], "git-delegate/v1");
    let b = &st["batches"][0];
    assert_eq!(b["schema"], "git-delegate/v1");
    assert_eq!(b["batch"], doc["batch"]);
    assert_eq!(b["label"], "work");
    assert_eq!(b["baseline"], doc["baseline"]);
    assert_eq!(b["lease"], doc["lease"]);
    assert_eq!(b["tasks"][0]["changed_paths"], 4);
    assert_eq!(b["tasks"][1]["changed_paths"], 0);
    assert_eq!(b["tasks"][0]["exists"], true);
    assert_eq!(b["tasks"][0]["state"], "open");
    assert_eq!(st["problems"], serde_json::json!([]));
    // Commits made inside a workspace do not matter, only the files on disk.
    env.git(&ws2, ["commit", "-q", "--allow-empty", "-m", "nothing"]);
    write(&ws2.join("a"), "committed\n");
    env.git(&ws2, ["commit", "-q", "-am", "edit"]);
    write(&ws2.join("a"), "a\n");
    assert_eq!(
        status_json(&env, &repo)["batches"][0]["tasks"][1]["changed_paths"],
        0
    );
    write(&ws2.join("a"), "other\n");
    assert_eq!(
        status_json(&env, &repo)["batches"][0]["tasks"][1]["changed_paths"],
        1
    );
    // status writes no objects: the workspace's new content is not in the store.
    let blob = env.git(&ws1, ["hash-object", "new/file"]);
    let out = env
        .git_cmd(&repo)
        .args(["cat-file", "-e", blob.trim()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "status wrote an object");

    // Human form: id, label, lease, each task with its count and path.
    let run = env.delegate(&repo, ["status"]).expect(0);
    let short = &id(&doc)[..8];
    assert!(
        run.stdout.contains(&format!("batch {short} (work)")),
        "{}",
        run.stdout
    );
    assert_has(&run.stdout, "lease live, expires in");
    for (ws, n) in [(&ws1, 4), (&ws2, 1)] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.ends_with(ws.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{}", run.stdout));
        assert!(line.contains(&format!("{n} changed")), "{line}");
    }
    assert_eq!(run.stderr, "");
    // One batch by label, by prefix.
    for arg in ["work", short, &short[..4]] {
        let st = env
            .delegate(&repo, ["status", arg, "--json"])
            .expect(0)
            .json();
        assert_eq!(st["batches"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn deleted_and_replaced_workspaces() {
    let (env, repo) = Env::with_repo("gone");
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let (ws1, ws2) = (root(&doc, 0), root(&doc, 1));
    std::fs::remove_dir_all(&ws1).unwrap();
    std::fs::remove_dir_all(&ws2).unwrap();
    write(&ws2.join("mine"), "the user's own folder\n");
    let st = status_json(&env, &repo);
    let tasks = &st["batches"][0]["tasks"];
    assert_eq!(tasks[0]["exists"], false);
    assert_eq!(tasks[1]["exists"], false);
    assert_eq!(tasks[2]["exists"], true);
    assert_eq!(tasks[0]["changed_paths"], 0);
    assert_eq!(
        problem_kinds(&st),
        ["workspace_missing", "workspace_replaced"]
    );
    // --check reports them (exit 1), one line each.
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    let human = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(
        human.contains("(missing)") && human.contains("(replaced; not ours)"),
        "{human}"
    );
    // drop: no unapplied work; the replaced folder is left alone, the rest goes.
    let out = env
        .delegate(&repo, ["drop", &id(&doc), "--json"])
        .expect(0)
        .json();
    assert_eq!(out["dropped"], true);
    assert_eq!(out["workspaces_removed"], 1);
    assert_eq!(out["refs_removed"], 1);
    assert_eq!(
        out["left_alone"],
        serde_json::json!([ws2.to_str().unwrap()])
    );
    assert_eq!(read(&ws2.join("mine")), "the user's own folder\n");
    let common = common_dir(&env, &repo);
    assert_eq!(registrations(&common), Vec::<String>::new());
    assert_eq!(batch_folders(&common), Vec::<String>::new());
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert_eq!(env.git(&repo, ["worktree", "list"]).lines().count(), 1);
}

#[test]
fn stale_by_expiry() {
    let (env, repo) = Env::with_repo("expiry");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    wait_until("the lease to expire", || {
        status_json(&env, &repo)["batches"][0]["lease"]["state"] == "expired"
    });
    let st = status_json(&env, &repo);
    assert_eq!(problem_kinds(&st), ["expired"]);
    assert_eq!(st["problems"][0]["batch"], doc["batch"]);
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert!(run.stdout.contains(&id(&doc)[..8]), "{}", run.stdout);
    assert!(run.stdout.contains("stale"));
    assert_eq!(run.stdout.lines().count(), 1);
    let run = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1);
    assert_eq!(problem_kinds(&run.json()), ["expired"]);
    let human = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert_has(&human, "lease expired ");
    assert_has(&human, " ago\n");
    assert!(!human.contains("expired, expired"), "{human}");
    // renew: live again, expiry moved to now + ttl.
    let before = now_secs();
    let renewed = env
        .delegate(&repo, ["renew", "--ttl", "2h", "--json"])
        .expect(0)
        .json();
    assert_eq!(renewed["lease"]["state"], "live");
    assert_eq!(renewed["batch"], doc["batch"]);
    assert_eq!(renewed["tasks"], doc["tasks"]);
    // Bounded by the clock before and after the command, not by a guess of
    // how long it takes on a loaded machine.
    let expires = rfc3339_secs(renewed["lease"]["expires_at"].as_str().unwrap());
    assert!(
        (before + 7200 - 1..=now_secs() + 7200 + 1).contains(&expires),
        "{expires}"
    );
    env.delegate(&repo, ["status", "--check"]).expect(0);
    // Without --ttl: lease.ttl (default 24h).
    let before = now_secs();
    let renewed = env.delegate(&repo, ["renew", "--json"]).expect(0).json();
    let expires = rfc3339_secs(renewed["lease"]["expires_at"].as_str().unwrap());
    assert!(
        (before + 86_400 - 1..=now_secs() + 86_400 + 1).contains(&expires),
        "{expires}"
    );
}

#[test]
fn orphaned_when_the_owner_exits_and_renew_needs_a_new_owner() {
    let (env, repo) = Env::with_repo("orphan");
    let owner = Sleeper::new();
    let doc = prepare(&env, &repo, &["--owner-pid", &owner.pid()]);
    assert_eq!(
        status_json(&env, &repo)["batches"][0]["lease"]["state"],
        "live"
    );
    owner.end();
    let st = status_json(&env, &repo);
    assert_eq!(st["batches"][0]["lease"]["state"], "orphaned");
    assert_eq!(problem_kinds(&st), ["orphaned"]);
    env.delegate(&repo, ["status", "--check"]).expect(1);
    // renew without a new owner: refused, nothing changed.
    let state = batch_toml(&env, &repo, &id(&doc));
    let before = read_bytes(&state);
    let run = expect_error(&env, &repo, &["renew"], 2, "delegate::orphaned_lease");
    assert_has(&run.stderr, "--owner-pid");
    assert_eq!(read_bytes(&state), before);
    // With a running one: live, owned by it.
    let new_owner = Sleeper::new();
    let renewed = env
        .delegate(
            &repo,
            [
                "renew",
                &id(&doc)[..6],
                "--owner-pid",
                &new_owner.pid(),
                "--json",
            ],
        )
        .expect(0)
        .json();
    assert_eq!(renewed["lease"]["state"], "live");
    assert_eq!(renewed["lease"]["owner_pid"], new_owner.0.id());
    env.delegate(&repo, ["status", "--check"]).expect(0);
    // A plain renew keeps the owner.
    let renewed = env.delegate(&repo, ["renew", "--json"]).expect(0).json();
    assert_eq!(renewed["lease"]["owner_pid"], new_owner.0.id());
    new_owner.end();
    assert_eq!(
        status_json(&env, &repo)["batches"][0]["lease"]["state"],
        "orphaned"
    );
}

#[test]
fn a_recycled_pid_is_not_the_owner() {
    let (env, repo) = Env::with_repo("recycled");
    let owner = Sleeper::new();
    let doc = prepare(&env, &repo, &["--owner-pid", &owner.pid()]);
    // Same pid, but a different start time: another process now.
    let path = batch_toml(&env, &repo, &id(&doc));
    let text = read(&path);
    let line = text
        .lines()
        .find(|l| l.starts_with("owner_start = "))
        .unwrap()
        .to_string();
    let start: u64 = line["owner_start = ".len()..].parse().unwrap();
    std::fs::write(
        &path,
        text.replace(&line, &format!("owner_start = {}", start + 1)),
    )
    .unwrap();
    let st = status_json(&env, &repo);
    assert_eq!(st["batches"][0]["lease"]["state"], "orphaned");
    assert_eq!(st["batches"][0]["lease"]["owner_pid"], owner.0.id());
    env.delegate(&repo, ["status", "--check"]).expect(1);
}

#[test]
fn expired_and_orphaned_is_orphaned() {
    let (env, repo) = Env::with_repo("both");
    let owner = Sleeper::new();
    prepare(&env, &repo, &["--owner-pid", &owner.pid(), "--ttl", "1s"]);
    owner.end();
    wait_until("expiry", || {
        let st = status_json(&env, &repo);
        rfc3339_secs(st["batches"][0]["lease"]["expires_at"].as_str().unwrap()) < now_secs()
    });
    let st = status_json(&env, &repo);
    assert_eq!(st["batches"][0]["lease"]["state"], "orphaned");
    expect_error(&env, &repo, &["renew"], 2, "delegate::orphaned_lease");
}

#[test]
fn drop_refuses_unapplied_work_unless_forced() {
    let (env, repo) = Env::with_repo("drop");
    let doc = prepare(&env, &repo, &["-n", "3", "--label", "l"]);
    let (ws1, ws3) = (root(&doc, 0), root(&doc, 2));
    write(&ws1.join("work"), "w\n");
    write(&ws3.join("README"), "edited\n");
    let common = common_dir(&env, &repo);
    let snapshot_of_state = || {
        (
            env.private_refs(&repo),
            registrations(&common),
            batch_folders(&common),
            listing(&env.workspace_root()),
        )
    };
    let before = snapshot_of_state();
    let run = env.delegate(&repo, ["drop", "l", "--json"]).expect(1);
    let out = run.json();
    assert_eq!(
        out,
        serde_json::json!({
            "schema": "git-delegate/v1",
            "batch": doc["batch"],
            "dropped": false,
            "unapplied": ["1", "3"],
        })
    );
    let run = env.delegate(&repo, ["drop", "l"]).expect(1);
    assert_has(&run.stdout, "tasks 1, 3 have changes");
    assert!(run.stdout.contains("--force"));
    assert_eq!(snapshot_of_state(), before);
    assert_eq!(read(&ws1.join("work")), "w\n");

    let out = env
        .delegate(&repo, ["drop", "l", "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(out["dropped"], true);
    assert_eq!(out["workspaces_removed"], 3);
    assert_eq!(out["refs_removed"], 1);
    assert_eq!(out["left_alone"], serde_json::json!([]));
    for ws in roots(&doc) {
        assert!(!ws.exists());
    }
    assert_nothing_created(&env, &repo);
    assert_eq!(env.git(&repo, ["worktree", "list"]).lines().count(), 1);
    // The batch is gone.
    expect_error(&env, &repo, &["status", "l"], 2, "delegate::unknown_batch");
    assert_eq!(
        env.delegate(&repo, ["status"]).expect(0).stdout,
        "No batches.\n"
    );
}

#[test]
fn drop_of_a_clean_batch_needs_no_force() {
    let (env, repo) = Env::with_repo("clean");
    write(&repo.join("dirty"), "d\n");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let run = env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
    assert_has(&run.stdout, "2 workspace(s)");
    assert_nothing_created(&env, &repo);
    // The source is as it was.
    assert_eq!(read(&repo.join("dirty")), "d\n");
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "?? dirty\n");
}

#[test]
fn drop_treats_an_unreadable_workspace_as_unapplied() {
    let (env, repo) = Env::with_repo("unreadable");
    let doc = prepare(&env, &repo, &[]);
    let reg = common_dir(&env, &repo).join(format!("worktrees/delegate-{}-1", &id(&doc)[..8]));
    // Its index would be only a cache (design §3.2 step 1), its HEAD is not.
    std::fs::write(reg.join("HEAD"), "not a HEAD").unwrap();
    let st = status_json(&env, &repo);
    assert_eq!(st["batches"][0]["tasks"][0]["changed_paths"], Value::Null);
    assert_eq!(problem_kinds(&st), ["workspace_unreadable"]);
    assert!(env
        .delegate(&repo, ["status"])
        .expect(0)
        .stdout
        .contains("   ? changed"));
    let out = env
        .delegate(&repo, ["drop", &id(&doc), "--json"])
        .expect(1)
        .json();
    assert_eq!(out["unapplied"], serde_json::json!(["1"]));
    assert!(root(&doc, 0).join("README").exists());
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    assert_nothing_created(&env, &repo);
}

#[test]
fn drop_leaves_a_moved_workspace_to_the_user() {
    let (env, repo) = Env::with_repo("moved");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws1 = root(&doc, 0);
    let moved = env.path().join("moved-here");
    env.git(
        &repo,
        [
            "worktree",
            "move",
            "-f",
            "-f",
            ws1.to_str().unwrap(),
            moved.to_str().unwrap(),
        ],
    );
    write(&moved.join("work"), "w\n");
    let out = env
        .delegate(&repo, ["drop", &id(&doc), "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(out["workspaces_removed"], 1);
    assert_eq!(read(&moved.join("work")), "w\n");
    // Still a working worktree, no longer locked by a batch that is gone.
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    let block = list
        .split("\n\n")
        .find(|b| b.contains(moved.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(!block.contains("locked"), "{block}");
    assert_eq!(env.git(&moved, ["status", "--porcelain"]), "?? work\n");
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
}

#[test]
fn status_into_a_closed_pipe_is_quiet() {
    let (env, repo) = Env::with_repo("pipe");
    for _ in 0..3 {
        prepare(&env, &repo, &["-n", "4"]);
    }
    for args in [&["status"][..], &["status", "--json"]] {
        // The reader is gone before the first write.
        let out = run_with_stdout_closed(&env, &repo, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(stderr, "");
    }
    // And through `| head -1` in a shell.
    let bin = env!("CARGO_BIN_EXE_git-delegate");
    // The hermetic environment of git_cmd, with bash as the program.
    let hermetic = env.git_cmd(&repo);
    let out = crate::common::succeed(
        std::process::Command::new("bash")
            .current_dir(&repo)
            .env_clear()
            .envs(
                hermetic
                    .get_envs()
                    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
            )
            .args(["-c", &format!("set -o pipefail; '{bin}' status | head -1")]),
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("batch "));
}

#[test]
fn renew_keeps_tasks_and_works_on_an_expired_lease() {
    let (env, repo) = Env::with_repo("renew");
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1h", "--label", "r"]);
    let renewed = env
        .delegate(&repo, ["renew", "r", "--ttl", "7d", "--json"])
        .expect(0)
        .json();
    for k in [
        "batch",
        "label",
        "source",
        "source_head",
        "baseline",
        "mode",
        "tasks",
        "created_at",
    ] {
        assert_eq!(renewed[k], doc[k], "{k}");
    }
    assert!(
        rfc3339_secs(renewed["lease"]["expires_at"].as_str().unwrap())
            > rfc3339_secs(doc["lease"]["expires_at"].as_str().unwrap()) + 6 * 86_400
    );
    let human = env.delegate(&repo, ["renew", "r"]).expect(0);
    assert!(human
        .stdout
        .starts_with(&format!("Renewed batch {}", &id(&doc)[..8])));
}

#[test]
fn unreadable_batch_state_is_a_problem_not_a_crash() {
    let (env, repo) = Env::with_repo("broken");
    let doc = prepare(&env, &repo, &[]);
    let good = prepare(&env, &repo, &[]);
    std::fs::write(batch_toml(&env, &repo, &id(&doc)), "this is not = [toml").unwrap();
    let st = status_json(&env, &repo);
    assert_eq!(st["batches"].as_array().unwrap().len(), 1);
    assert_eq!(st["batches"][0]["batch"], good["batch"]);
    assert_eq!(problem_kinds(&st), ["broken_state"]);
    assert_eq!(st["problems"][0]["batch"], doc["batch"]);
    let run = env.delegate(&repo, ["status"]).expect(0);
    assert_has(&run.stdout, "problem:");
    env.delegate(&repo, ["status", "--check"]).expect(1);
    // The readable batch is still the only one commands select.
    env.delegate(&repo, ["renew"]).expect(0);
}

// A corrupted batch.toml is named, and the tool can remove it
// without losing the work in its workspaces.
#[test]
fn a_corrupt_batch_is_named_and_drop_force_removes_it_saving_the_work() {
    let (env, repo) = Env::with_repo("corrupt");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let good = prepare(&env, &repo, &[]);
    let bad = id(&doc);
    let common = common_dir(&env, &repo);
    write(&root(&doc, 0).join("work.txt"), "precious work\n");
    let toml = batch_toml(&env, &repo, &bad);
    let text = read(&toml);
    // Cut inside a string, so the rest never parses whatever the paths'
    // lengths (a cut at a line's end can leave a valid, shorter batch).
    let cut = text[..text.len() / 2].rfind(" = \"").unwrap() + 4;
    std::fs::write(&toml, &text[..cut]).unwrap();

    // status --check names it: the file and the parse error, and what to do.
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_has(&run.stdout, toml.to_str().unwrap());
    let drop_cmd = format!("git delegate drop {bad} --force");
    assert!(run.stdout.contains(&drop_cmd), "{}", run.stdout);
    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    assert_eq!(problem_kinds(&st), ["broken_state"]);
    assert_eq!(st["problems"][0]["batch"], bad.as_str());

    // apply says the state is corrupt (exit 3) and names the drop command.
    for arg in [bad.as_str(), &bad[..8], &bad.to_uppercase()] {
        let run = expect_error(&env, &repo, &["apply", arg], 3, "delegate::corrupt_batch");
        let err = &run.json()["error"];
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains(toml.to_str().unwrap()),
            "{err}"
        );
        assert!(err["help"].as_str().unwrap().contains(&drop_cmd), "{err}");
    }
    // Without an argument, the readable batch is still the one selected.
    env.delegate(&repo, ["renew"]).expect(0);

    // gc reports it and leaves it alone (its lease cannot be read).
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(1).json();
    assert_eq!(gc["skipped"][0]["batch"], bad.as_str(), "{gc}");
    assert!(
        gc["skipped"][0]["message"]
            .as_str()
            .unwrap()
            .contains(&drop_cmd),
        "{gc}"
    );
    assert!(toml.exists());
    assert_eq!(registrations(&common).len(), 3);

    // drop without --force refuses and changes nothing.
    let before = (env.private_refs(&repo), registrations(&common));
    let out = env
        .delegate(&repo, ["drop", &bad, "--json"])
        .expect(1)
        .json();
    assert_eq!(out["dropped"], false);
    assert_eq!(out["corrupt"], true);
    assert_eq!((env.private_refs(&repo), registrations(&common)), before);

    // drop --force removes it; the work of task 1 is saved first.
    let out = env
        .delegate(&repo, ["drop", &bad, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(out["batch"], bad.as_str());
    assert_eq!(out["dropped"], true);
    assert_eq!(out["corrupt"], true);
    assert_eq!(out["workspaces_removed"], 2);
    assert_eq!(out["refs_removed"], 1);
    let kept = format!("refs/pi-delegate/batches/{bad}/tasks/1/proposal");
    assert_eq!(out["rescued"][0]["task"], "1", "{out}");
    assert_eq!(out["rescued"][0]["ref"], kept.as_str());
    let mut refs = env.private_refs(&repo);
    refs.sort();
    let mut want = vec![
        kept.clone(),
        format!("refs/pi-delegate/batches/{}/baseline", id(&good)),
    ];
    want.sort();
    assert_eq!(refs, want);
    assert_eq!(
        env.git(&repo, ["show", &format!("{kept}:work.txt")]),
        "precious work\n"
    );
    let patch = std::path::PathBuf::from(out["rescued"][0]["patch"].as_str().unwrap());
    assert!(patch.is_file());
    assert_eq!(
        registrations(&common),
        vec![format!("delegate-{}-1", &id(&good)[..8])]
    );
    assert_eq!(batch_folders(&common), vec![id(&good)]);
    for ws in roots(&doc) {
        assert!(!ws.exists(), "{}", ws.display());
    }
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 2, "{list}");
    assert!(!list.contains(&bad[..8]), "{list}");
    assert_eq!(list.matches("\nlocked").count(), 1, "{list}");
    // The saved patch gives the worker's bytes back.
    env.git(&repo, ["apply", patch.to_str().unwrap()]);
    assert_eq!(read(&repo.join("work.txt")), "precious work\n");
    // And the corrupt batch is no problem any more.
    assert_eq!(
        problem_kinds(&status_json(&env, &repo)),
        Vec::<String>::new()
    );
}

#[test]
fn a_corrupt_batch_whose_work_cannot_be_saved_keeps_its_workspace_unlocked() {
    let (env, repo) = Env::with_repo("corrupt-nobase");
    let doc = prepare(&env, &repo, &[]);
    let bad = id(&doc);
    let ws = root(&doc, 0);
    write(&ws.join("work.txt"), "precious work\n");
    // Without the baseline there is nothing to record the work against.
    env.git(
        &repo,
        [
            "update-ref",
            "-d",
            &format!("refs/pi-delegate/batches/{bad}/baseline"),
        ],
    );
    std::fs::write(batch_toml(&env, &repo, &bad), "garbage [[[").unwrap();
    let out = env
        .delegate(&repo, ["drop", &bad, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(out["workspaces_removed"], 0);
    assert_eq!(out["left_alone"], serde_json::json!([ws.to_str().unwrap()]));
    assert_eq!(read(&ws.join("work.txt")), "precious work\n");
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert!(!list.contains("locked"), "{list}");
    assert!(batch_folders(&common_dir(&env, &repo)).is_empty());
    // It is an ordinary worktree now: git removes it when the user wants.
    env.git(
        &repo,
        ["worktree", "remove", "--force", ws.to_str().unwrap()],
    );
}
