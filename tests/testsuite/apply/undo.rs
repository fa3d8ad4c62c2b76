//! `git delegate undo` and `apply --from-undo` (design §3.11) end to end,
//! on real repositories: the exact pre-apply tree comes back, later edits in
//! other lines survive, conflicting rewrites refuse with nothing changed,
//! crashes are recovered, `--list`, gc pruning.
use crate::common::files::read;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::paused_at;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::{lines, tree, with_line, Tree};
use crate::common::fixtures::{index_bytes, prepare_batch, set_config, strings};
use crate::common::killed_at;
use crate::common::Env;
use serde_json::Value;

/// [`rich_repo`] with two tasks' [`work`] applied: the env, the repository,
/// its tree before the apply and the apply id.
fn applied() -> (Env, PathBuf, Tree, String) {
    let env = Env::new();
    let repo = rich_repo(&env);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    work(&ws);
    let pre = tree(&repo);
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let id = out["apply_id"].as_str().unwrap().to_string();
    (env, repo, pre, id)
}

/// A repository with a file of 10 lines, a file to delete, a symlink, a
/// script, a file that becomes a folder, and an uncommitted user edit.
fn rich_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    std::fs::write(repo.join("f.txt"), lines(10)).unwrap();
    std::fs::write(repo.join("gone.txt"), "to be deleted\n").unwrap();
    symlink("f.txt", repo.join("link")).unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::write(repo.join("x"), "a file that becomes a folder\n").unwrap();
    std::fs::create_dir_all(repo.join("dir")).unwrap();
    std::fs::write(repo.join("dir/keep.txt"), "kept\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    // Uncommitted work of the user's, in the snapshot and untouched by tasks.
    std::fs::write(repo.join("README"), "hello, edited\n").unwrap();
    std::fs::write(repo.join("untracked.txt"), "mine\n").unwrap();
    repo
}

/// Two tasks covering every kind of change.
fn work(ws: &[PathBuf]) {
    let f = read(&ws[0].join("f.txt"));
    std::fs::write(ws[0].join("f.txt"), with_line(&f, 2, "task one's line 2")).unwrap();
    std::fs::remove_file(ws[0].join("gone.txt")).unwrap();
    std::fs::write(ws[0].join("added.txt"), "added\n").unwrap();
    std::fs::set_permissions(ws[0].join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(ws[1].join("link")).unwrap();
    symlink("gone-target", ws[1].join("link")).unwrap();
    std::fs::remove_file(ws[1].join("x")).unwrap();
    std::fs::create_dir_all(ws[1].join("x")).unwrap();
    std::fs::write(ws[1].join("x/y"), "now a folder\n").unwrap();
    std::fs::create_dir_all(ws[1].join("new/deep")).unwrap();
    std::fs::write(ws[1].join("new/deep/z.bin"), b"\x00\x01\xff binary\n").unwrap();
}

fn head(env: &Env, repo: &Path) -> String {
    env.git(repo, ["rev-parse", "HEAD"])
}

#[test]
fn undo_restores_the_exact_pre_apply_tree_and_apply_again_restores_the_result() {
    let env = Env::new();
    let repo = rich_repo(&env);
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    work(&ws);
    let pre = tree(&repo);
    let index = index_bytes(&repo);
    let head_before = head(&env, &repo);

    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let id = out["apply_id"].as_str().expect("apply_id").to_string();
    assert!(uuid_v4(&id), "{id}");
    let post = tree(&repo);
    assert_ne!(pre, post);
    // The batch is gone; its apply's undo entry stays.
    assert!(env.private_refs(&repo).is_empty());
    assert_eq!(post[&b"run.sh".to_vec()].0 & 0o111, 0o111);
    let written = strings(&out["applied_paths"]);

    // The entry: a commit over its `S` parent, holding exactly the written paths.
    let entry = format!("refs/pi-delegate/undo/{id}/entry");
    let diffed = env.git(&repo, ["diff", "--name-only", &format!("{entry}^"), &entry]);
    let mut named: Vec<String> = diffed.lines().map(str::to_string).collect();
    named.sort();
    let mut w = written.clone();
    w.sort();
    assert_eq!(named, w);
    let refs = env.undo_refs(&repo);
    for t in ["1", "2"] {
        assert!(
            refs.contains(&format!("refs/pi-delegate/undo/{id}/tasks/{t}")),
            "{refs:?}"
        );
    }
    assert!(env
        .path()
        .join("proj/.git/delegate/undo")
        .join(&id)
        .join("entry.json")
        .is_file());

    // --list
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    let entries = list["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{list:#}");
    assert_eq!(entries[0]["apply_id"], id.as_str());
    assert_eq!(entries[0]["batch"], batch.as_str());
    assert_eq!(entries[0]["paths"], written.len());
    assert_eq!(entries[0]["undone"], false);
    assert!(entries[0]["applied_at"].as_str().unwrap().ends_with('Z'));

    // A dry run changes nothing.
    let dry = env
        .delegate(&repo, ["undo", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["undone"], false);
    assert_eq!(tree(&repo), post);

    // Undo: byte for byte the tree before the apply.
    let out = env.delegate(&repo, ["undo", "--json"]).expect(0).json();
    assert_eq!(out["apply_id"], id.as_str());
    assert_eq!(out["undone"], true);
    assert_eq!(out["conflicts"], serde_json::json!([]));
    assert_eq!(strings(&out["paths"]).len(), written.len());
    assert_eq!(out["kept"].as_array().unwrap().len(), 2, "{out:#}");
    assert_eq!(tree(&repo), pre);
    assert_eq!(index_bytes(&repo), index);
    assert_eq!(head(&env, &repo), head_before);

    // Nothing left to undo: exit 2, nothing changed.
    let again = env.delegate(&repo, ["undo", "--json"]).expect(2).json();
    assert_eq!(again["error"]["code"], "delegate::nothing_to_undo");
    env.delegate(&repo, ["undo", &id[..6]]).expect(2);
    assert_eq!(tree(&repo), pre);

    // Undo of the undo: apply the kept proposals again, as a new apply.
    let re = env
        .delegate(&repo, ["apply", "--from-undo", &id[..6], "--json"])
        .expect(0)
        .json();
    let id2 = re["apply_id"].as_str().unwrap().to_string();
    assert_ne!(id2, id);
    assert_eq!(re["from_undo"], id.as_str());
    assert_eq!(tree(&repo), post);
    assert_eq!(index_bytes(&repo), index);
    // That entry is re-applied now: exit 2; the new apply is not undone: exit 2.
    env.delegate(&repo, ["apply", "--from-undo", &id]).expect(2);
    let e = env
        .delegate(&repo, ["apply", "--from-undo", &id2, "--json"])
        .expect(2)
        .json();
    assert_eq!(e["error"]["code"], "delegate::not_undone");
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"].as_array().unwrap().len(), 2);
    assert_eq!(list["entries"][0]["apply_id"], id2.as_str());
    // The latest not undone is the re-apply.
    let out = env.delegate(&repo, ["undo", "--json"]).expect(0).json();
    assert_eq!(out["apply_id"], id2.as_str());
    assert_eq!(tree(&repo), pre);

    // status counts the entries.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["undo_entries"], 2, "{st:#}");
}

fn uuid_v4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts[2].starts_with('4')
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[test]
fn an_apply_that_writes_nothing_has_no_apply_id() {
    let (env, repo) = Env::with_repo("proj");
    prepare_batch(&env, &repo, &["-n", "1"]);
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(out["apply_id"], Value::Null, "{out:#}");
    let e = env.delegate(&repo, ["undo", "--json"]).expect(2).json();
    assert_eq!(e["error"]["code"], "delegate::nothing_to_undo");
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"], serde_json::json!([]));
}

/// A repository with `f.txt` of 12 lines committed and one task that
/// rewrote its line 2 and added `other.txt`, not applied yet.
fn one_task_on_line_2() -> (Env, PathBuf) {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join("f.txt"), lines(12)).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "f"]);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("f.txt"), with_line(&lines(12), 2, "task line")).unwrap();
    std::fs::write(ws[0].join("other.txt"), "task's new file\n").unwrap();
    (env, repo)
}

/// Every `git delegate apply --from-undo ...` command between backticks in
/// `text`, in the order printed.
fn from_undo_hints(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("git delegate apply --from-undo "))
        .map(str::to_string)
        .collect()
}

#[test]
fn re_applying_the_later_of_two_undone_applies_names_the_earlier_one_to_re_apply_first() {
    let (env, repo) = one_task_on_line_2();
    let first = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let first = first["apply_id"].as_str().unwrap().to_string();
    // A second batch, prepared on top of the first apply, rewrites the same line.
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    let now = read(&ws[0].join("f.txt"));
    std::fs::write(ws[0].join("f.txt"), with_line(&now, 2, "second task")).unwrap();
    let second = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let second = second["apply_id"].as_str().unwrap().to_string();
    let after_both = tree(&repo);
    // Both undone, the later first.
    env.delegate(&repo, ["undo"]).expect(0);
    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(read(&repo.join("f.txt")), lines(12));
    let before = tree(&repo);

    // The later one alone conflicts: it was made on top of the earlier one.
    let doc = env
        .delegate(&repo, ["apply", "--from-undo", &second, "--json"])
        .expect(1)
        .json();
    assert_eq!(doc["tasks"][0]["reason"], "source_changed", "{doc:#}");
    assert_eq!(doc["reapply_first"], serde_json::json!([first]));
    assert_eq!(tree(&repo), before);
    let out = env
        .delegate(&repo, ["apply", "--from-undo", &second[..8]])
        .expect(1)
        .stdout;
    assert_has(&out, "undone as well");
    assert!(!out.contains("fix the conflicting paths"), "{out}");
    // The printed commands, run as printed and in order, bring both back.
    let hints = from_undo_hints(&out);
    assert_eq!(
        hints,
        [
            format!("git delegate apply --from-undo {}", &first[..8]),
            format!("git delegate apply --from-undo {}", &second[..8]),
        ],
        "{out}"
    );
    for h in &hints {
        env.sh(&repo, h).expect(0);
    }
    assert_eq!(tree(&repo), after_both);
    assert_eq!(
        read(&repo.join("f.txt")),
        with_line(&lines(12), 2, "second task")
    );
}

#[test]
fn a_user_edit_in_another_line_survives_undo() {
    let (env, repo) = one_task_on_line_2();
    env.delegate(&repo, ["apply"]).expect(0);
    // After the apply the user edits another line and another file.
    let now = read(&repo.join("f.txt"));
    std::fs::write(repo.join("f.txt"), with_line(&now, 11, "user line")).unwrap();
    std::fs::write(repo.join("README"), "user's later edit\n").unwrap();

    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(
        read(&repo.join("f.txt")),
        with_line(&lines(12), 11, "user line")
    );
    assert_eq!(read(&repo.join("README")), "user's later edit\n");
    assert!(!repo.join("other.txt").exists());
}

#[test]
fn a_user_rewrite_of_a_written_line_makes_undo_refuse_with_nothing_changed() {
    let (env, repo) = one_task_on_line_2();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let id = out["apply_id"].as_str().unwrap().to_string();
    let now = read(&repo.join("f.txt"));
    std::fs::write(repo.join("f.txt"), with_line(&now, 2, "user rewrote it")).unwrap();
    let before = tree(&repo);

    let out = env.delegate(&repo, ["undo", "--json"]).expect(1).json();
    assert_eq!(out["undone"], false);
    assert_eq!(out["conflicts"][0]["path"], "f.txt", "{out:#}");
    assert_eq!(out["conflicts"].as_array().unwrap().len(), 1, "{out:#}");
    // Nothing was written, not even the path that would merge cleanly.
    assert_eq!(tree(&repo), before);
    assert!(repo.join("other.txt").exists());
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"][0]["undone"], false);
    // The human text names the path.
    let run = env.delegate(&repo, ["undo"]).expect(1);
    assert_has(&run.stdout, "f.txt");
    assert_eq!(tree(&repo), before);

    // Once the user puts the line back, undo goes through.
    std::fs::write(repo.join("f.txt"), now).unwrap();
    let out = env
        .delegate(&repo, ["undo", &id, "--json"])
        .expect(0)
        .json();
    assert_eq!(out["undone"], true);
    assert_eq!(read(&repo.join("f.txt")), lines(12));
}

#[test]
fn an_untracked_file_where_undo_restores_a_deleted_path_refuses() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[("gone.txt", "old\n")], "f");
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::remove_file(ws[0].join("gone.txt")).unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    // The user made a new file at the deleted path since.
    std::fs::write(repo.join("gone.txt"), "the user's new content\n").unwrap();
    let before = tree(&repo);
    let out = env.delegate(&repo, ["undo", "--json"]).expect(1).json();
    assert_eq!(out["conflicts"][0]["path"], "gone.txt", "{out:#}");
    assert_eq!(tree(&repo), before);
}

fn journal(repo: &Path, id: &str) -> PathBuf {
    repo.join(".git/delegate/undo")
        .join(id)
        .join("writeback.journal")
}

#[test]
fn undo_killed_mid_write_is_rolled_back_by_the_next_command() {
    let (env, repo, pre, id) = applied();
    let post = tree(&repo);

    for (fault, recover) in [
        ("after-journal", "gc"),
        ("after-rename:1", "gc"),
        ("after-rename:3", "renew"),
        ("after-temp-files", "undo"),
    ] {
        killed_at(env.delegate_cmd(&repo).args(["undo"]), fault);
        assert!(journal(&repo, &id).is_file(), "{fault}: no journal");
        // status reports it and changes nothing.
        let before = tree(&repo);
        env.delegate(&repo, ["status", "--check"]).expect(1);
        assert_eq!(tree(&repo), before);
        match recover {
            "undo" => {
                // undo recovers first, then undoes.
                let out = env.delegate(&repo, ["undo", "--json"]).expect(0).json();
                assert_eq!(
                    out["recovered_writebacks"],
                    serde_json::json!([id]),
                    "{out:#}"
                );
                assert_eq!(tree(&repo), pre, "{fault}");
                env.delegate(&repo, ["apply", "--from-undo", &id]).expect(0);
                break;
            }
            "renew" => {
                // renew fails (no batch) but recovers first.
                let r = env.delegate(&repo, ["renew", "--json"]);
                assert_eq!(r.json()["recovered_writebacks"], serde_json::json!([id]));
            }
            _ => {
                let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
                assert_eq!(
                    out["recovered_writebacks"],
                    serde_json::json!([id]),
                    "{out:#}"
                );
            }
        }
        assert!(!journal(&repo, &id).exists(), "{fault}");
        assert_eq!(
            tree(&repo),
            post,
            "{fault}: not rolled back to the applied tree"
        );
    }
}

#[test]
fn undo_killed_after_its_commit_point_is_finished_and_its_entry_marked_undone() {
    let (env, repo, pre, id) = applied();
    killed_at(env.delegate_cmd(&repo).args(["undo"]), "after-commit");
    let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(
        out["completed_writebacks"],
        serde_json::json!([id]),
        "{out:#}"
    );
    assert_eq!(tree(&repo), pre);
    // The entry marked undone took effect with the write-back (design §7
    // "What recovery finishes"): nothing is left to undo.
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"][0]["apply_id"], id.as_str());
    assert_eq!(list["entries"][0]["undone"], true, "{list:#}");
    env.delegate(&repo, ["undo"]).expect(2);
    assert_eq!(tree(&repo), pre);
}

#[test]
fn gc_removes_entries_beyond_undo_keep_once_older_than_keep_failed() {
    let (env, repo) = Env::with_repo("proj");
    let mut ids = Vec::new();
    for i in 0..3 {
        let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
        std::fs::write(ws[0].join(format!("f{i}.txt")), "x\n").unwrap();
        let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
        ids.push(out["apply_id"].as_str().unwrap().to_string());
    }
    let undo_refs = |env: &Env| env.undo_refs(&repo);
    assert_eq!(undo_refs(&env).len(), 6);
    // Beyond undo.keep but young: kept (default keep-failed is 14 days).
    set_config(&repo, "[undo]\nkeep = 1\n");
    let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(out["undo_entries_removed"], serde_json::json!([]));
    assert_eq!(undo_refs(&env).len(), 6);

    // Old enough: all but the newest go.
    set_config(&repo, "[undo]\nkeep = 1\n[gc]\nkeep-failed = \"1s\"\n");
    // Each entry ages on its own clock: gc until both older ones went.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut gone: Vec<String> = Vec::new();
    while gone.len() < 2 {
        let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
        gone.extend(strings(&out["undo_entries_removed"]));
        assert!(
            std::time::Instant::now() < deadline,
            "never pruned: {gone:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    gone.sort();
    let mut want = vec![ids[0].clone(), ids[1].clone()];
    want.sort();
    assert_eq!(gone, want);
    let refs = undo_refs(&env);
    assert_eq!(refs.len(), 2, "{refs:?}");
    assert!(refs.iter().all(|r| r.contains(&ids[2])), "{refs:?}");
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"].as_array().unwrap().len(), 1);
    assert_eq!(list["entries"][0]["apply_id"], ids[2].as_str());
    assert!(!repo.join(".git/delegate/undo").join(&ids[0]).exists());
    // The newest can still be undone.
    env.delegate(&repo, ["undo"]).expect(0);
    assert!(!repo.join("f2.txt").exists());
    assert!(repo.join("f1.txt").exists());
}

#[test]
fn undo_names_applies_by_prefix_and_refuses_unknown_ones() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let id = out["apply_id"].as_str().unwrap().to_string();
    let e = env
        .delegate(&repo, ["undo", "zzzz", "--json"])
        .expect(2)
        .json();
    assert_eq!(e["error"]["code"], "delegate::unknown_apply");
    env.delegate(&repo, ["undo", &id[..3]]).expect(2);
    assert!(repo.join("a.txt").exists());
    env.delegate(&repo, ["undo", &id[..4].to_uppercase()])
        .expect(0);
    assert!(!repo.join("a.txt").exists());
}

#[test]
fn undo_killed_by_sigkill_before_it_writes_changes_nothing() {
    let (env, repo, pre, id) = applied();
    let post = tree(&repo);
    let mut undo = env.delegate_cmd(&repo);
    undo.args(["undo"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = paused_at(&env, undo, "undo-before-write");
    child.kill().unwrap(); // SIGKILL
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert_eq!(tree(&repo), post);
    assert!(!journal(&repo, &id).exists());
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"][0]["undone"], false);
    // The lock it held is free again; the next undo does the job.
    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(tree(&repo), pre);
}

#[test]
fn undo_writes_into_the_linked_worktree_the_apply_wrote_into() {
    let (env, repo) = Env::with_repo("proj");
    let linked = env.path().join("linked");
    crate::common::fixtures::worktree_add(&env, &repo, &linked);
    let (_, ws) = prepare_batch(&env, &linked, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "by the task\n").unwrap();
    env.delegate(&linked, ["apply"]).expect(0);
    assert_eq!(read(&linked.join("README")), "by the task\n");
    let main_before = tree(&repo);
    // Run from the main working tree: the entry's working tree is undone.
    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(read(&linked.join("README")), "hello\n");
    assert_eq!(tree(&repo), main_before);
}
