//! Kept proposals (design §3.16 "kept"): `status` lists what gc rescued and
//! what `apply --discard` kept, and `apply --kept REF` lands one through the
//! normal integration (3-way with the live source, the journal), removing
//! its ref and patch once written; a conflict writes nothing and keeps it.
use crate::common::files::read_bytes;

use crate::common::fixtures::strs;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::read_lossy;
use crate::common::fixtures::{prepare_batch, wait_stale};
use crate::common::killed_at;
use crate::common::Env;
use serde_json::Value;

fn kept_list(env: &Env, repo: &Path) -> Vec<Value> {
    let st = env.delegate(repo, ["status", "--json"]).expect(0).json();
    st.get("kept")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Every file below `dir` (`.git` included: refs, state, objects), with its bytes.
fn digest(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else if md.is_file() {
                out.push((p.clone(), read_bytes(&p)));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_gc_rescued_proposal_is_listed_and_lands_with_apply_kept() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    std::fs::write(ws[0].join("README"), "worker edit\n").unwrap();
    std::fs::create_dir_all(ws[0].join("dir")).unwrap();
    std::fs::write(ws[0].join("dir/new.txt"), "new file\n").unwrap();
    wait_stale(&env, &repo, &batch);
    env.delegate(&repo, ["gc", "--json"]).expect(0);
    assert!(!ws[0].exists());
    // The user goes on working meanwhile, in another path.
    std::fs::write(repo.join("mine.txt"), "the user's own\n").unwrap();

    let r = format!("refs/pi-delegate/batches/{batch}/tasks/1/proposal");
    let kept = kept_list(&env, &repo);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["ref"], r.as_str());
    assert_eq!(kept[0]["batch"], batch.as_str());
    assert_eq!(kept[0]["task"], "1");
    let name = kept[0]["name"].as_str().unwrap().to_string();
    assert_eq!(name, format!("{}/1", &batch[..8]));
    assert_eq!(kept[0]["kept_at"].as_str().unwrap().len(), 20);
    let patch = PathBuf::from(kept[0]["patch"].as_str().unwrap());
    assert!(patch.is_file());
    // The human status names it, its age and expiry, and how to land it.
    let human = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(human.contains(&format!("kept: {name}")), "{human}");
    assert_has(&human, " ago, gc may remove it in ");
    assert!(
        human.contains(&format!("git delegate apply --kept {name}")),
        "{human}"
    );

    // A dry run says what would happen and changes nothing.
    let before = digest(&repo);
    let dry = env
        .delegate(&repo, ["apply", "--kept", &name, "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["tasks"][0]["status"], "applied");
    assert_eq!(before, digest(&repo));

    // The short name as status printed it, followed literally.
    let out = env
        .delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(0)
        .json();
    assert_eq!(out["batch"], batch.as_str());
    assert_eq!(out["dry_run"], false);
    assert_eq!(out["batch_open"], false);
    assert_eq!(out["tasks"][0]["name"], "1");
    assert_eq!(out["tasks"][0]["status"], "applied", "{out:#}");
    let mut applied: Vec<&str> = strs(&out["applied_paths"]);
    applied.sort();
    assert_eq!(applied, vec!["README", "dir/new.txt"]);
    assert_eq!(out["kept_proposal"]["ref"], r.as_str());
    assert_eq!(out["kept_proposal"]["removed"], true);
    assert_eq!(read_lossy(&repo.join("README")), "worker edit\n");
    assert_eq!(read_lossy(&repo.join("dir/new.txt")), "new file\n");
    assert_eq!(read_lossy(&repo.join("mine.txt")), "the user's own\n");
    // Nothing but the working tree changed in git's eyes: index and HEAD as before.
    assert_eq!(
        env.git(&repo, ["diff", "--cached", "--name-only"]).trim(),
        ""
    );
    // Landed: ref and patch gone, nothing kept any more, no state left.
    assert!(env.private_refs(&repo).is_empty());
    assert!(!patch.exists());
    assert!(kept_list(&env, &repo).is_empty());
    assert!(!repo.join(".git/delegate/kept").exists());
    assert!(!repo.join(".git/delegate/batches").join(&batch).exists());
    // Again: it is no longer kept.
    env.delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(2);

    // It left an undo entry, as every apply that writes does (design §3.11):
    // undo takes the landed work back out, and the user's file stays.
    let id = out["apply_id"]
        .as_str()
        .expect("apply --kept has an apply_id");
    let undone = env.delegate(&repo, ["undo", id, "--json"]).expect(0).json();
    assert_eq!(undone["undone"], true, "{undone:#}");
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");
    assert!(!repo.join("dir/new.txt").exists());
    assert_eq!(read_lossy(&repo.join("mine.txt")), "the user's own\n");
}

#[test]
fn a_discarded_tasks_proposal_lands_with_apply_kept_and_its_task_is_applied() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("one.txt"), "one\n").unwrap();
    std::fs::write(ws[1].join("README"), "the worker's work\n").unwrap();
    std::fs::write(ws[1].join("new.bin"), b"\x00\x01binary\xff\n").unwrap();
    let out = env
        .delegate(&repo, ["apply", "--json", "--only", "1", "--discard", "2"])
        .expect(0)
        .json();
    assert_eq!(out["batch_open"], true, "{out:#}");
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");

    let r = format!("refs/pi-delegate/batches/{batch}/tasks/2/proposal");
    let kept = kept_list(&env, &repo);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["ref"], r.as_str());
    let patch = PathBuf::from(kept[0]["patch"].as_str().unwrap());
    assert!(patch.is_file());

    // The full ref, as status lists it.
    let out = env
        .delegate(&repo, ["apply", "--kept", &r, "--json"])
        .expect(0)
        .json();
    assert_eq!(out["tasks"][0]["name"], "2");
    assert_eq!(out["tasks"][0]["status"], "applied", "{out:#}");
    assert_eq!(out["batch_open"], true);
    assert_eq!(read_lossy(&repo.join("README")), "the worker's work\n");
    assert_eq!(read_bytes(&repo.join("new.bin")), b"\x00\x01binary\xff\n");
    assert_eq!(read_lossy(&repo.join("one.txt")), "one\n");
    assert!(!env.private_refs(&repo).contains(&r));
    assert!(!patch.exists());
    assert!(kept_list(&env, &repo).is_empty());
    // The batch record says task 2 is applied now; task 3 is still open.
    let st = env
        .delegate(&repo, ["status", &batch, "--json"])
        .expect(0)
        .json();
    let tasks = st["batches"][0]["tasks"].as_array().unwrap();
    let state = |n: &str| {
        tasks.iter().find(|t| t["name"] == n).unwrap()["state"]
            .as_str()
            .unwrap_or_else(|| panic!("{st:#}"))
            .to_string()
    };
    assert_eq!(state("2"), "applied", "{st:#}");
    assert_eq!(state("3"), "open");
    // The rest of the batch applies as before.
    env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn apply_kept_of_an_unknown_ref_exits_2_and_changes_nothing() {
    let (env, repo) = Env::with_repo("proj");
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[1].join("README"), "work\n").unwrap();
    env.delegate(&repo, ["apply", "--json", "--discard", "2"])
        .expect(0);
    let before = digest(&repo);
    for arg in [
        "refs/pi-delegate/batches/0000/tasks/2/proposal",
        "zzzz/2",
        "2",
        "refs/heads/main",
    ] {
        let run = env.delegate(&repo, ["apply", "--kept", arg, "--json"]);
        let run = run.expect(2);
        let doc = run.json();
        assert_eq!(doc["error"]["code"], "delegate::unknown_kept", "{doc:#}");
        let human = env.delegate(&repo, ["apply", "--kept", arg]).expect(2);
        assert_has(&human.stderr, "no kept proposal matches");
        // The help names the one there is.
        assert_has(&human.stderr, "/tasks/2/proposal");
    }
    assert_eq!(before, digest(&repo));
    // The proposal of a task still open is the batch's, not kept: the help
    // names the apply that lands it, and that command works as printed.
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1", "--label", "open-one"]);
    std::fs::write(ws[0].join("open.txt"), "open work\n").unwrap();
    let before = digest(&repo);
    for arg in [format!("{}/1", &batch[..8]), "open-one/1".to_string()] {
        let run = env.delegate(&repo, ["apply", "--kept", &arg]).expect(2);
        assert_has(&run.stderr, "still open");
        let hint = format!("git delegate apply {} --only 1", &batch[..8]);
        assert!(run.stderr.contains(&hint), "{}", run.stderr);
    }
    assert_eq!(before, digest(&repo));
    let args: Vec<String> = ["apply", &batch[..8], "--only", "1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    env.delegate(&repo, args).expect(0);
    assert_eq!(read_lossy(&repo.join("open.txt")), "open work\n");
    // Not with a batch's own options.
    env.delegate(&repo, ["apply", "--kept", "x/1", "--only", "1"])
        .expect(2);
}

#[test]
fn a_kept_proposal_that_conflicts_is_not_written_and_stays_kept() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join("other.txt"), "other\n").unwrap();
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "the worker's line\n").unwrap();
    std::fs::write(ws[0].join("other.txt"), "other, by the worker\n").unwrap();
    env.delegate(&repo, ["apply", "--json", "--discard", "1"])
        .expect(0);
    let kept = kept_list(&env, &repo);
    let r = kept[0]["ref"].as_str().unwrap().to_string();
    let name = kept[0]["name"].as_str().unwrap().to_string();
    let patch = PathBuf::from(kept[0]["patch"].as_str().unwrap());
    // The user changed the same line since.
    std::fs::write(repo.join("README"), "the user's line\n").unwrap();
    let before = digest(&repo);

    let out = env
        .delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(1)
        .json();
    let t = &out["tasks"][0];
    assert_eq!(t["status"], "conflict", "{out:#}");
    assert_eq!(t["reason"], "source_changed");
    assert_eq!(t["conflicts"][0]["path"], "README");
    assert_eq!(t["proposal_ref"], r.as_str());
    assert_eq!(t["workspace"], Value::Null);
    assert_eq!(out["applied_paths"], serde_json::json!([]));
    assert_eq!(out["kept_proposal"]["removed"], false);
    // Nothing written, not even the path that merges cleanly; still kept.
    assert_eq!(before, digest(&repo));
    assert_eq!(read_lossy(&repo.join("README")), "the user's line\n");
    assert_eq!(read_lossy(&repo.join("other.txt")), "other\n");
    assert!(patch.is_file());
    assert_eq!(kept_list(&env, &repo), kept);
    // The human output says it stays kept, and the hint it prints works.
    let human = env
        .delegate(&repo, ["apply", "--kept", &name])
        .expect(1)
        .stdout;
    assert_has(&human, "It stays kept until");
    let hint = crate::common::printed_command(&human, "git show");
    assert_eq!(hint, format!("git show {r}:README"), "{human}");
    assert_eq!(env.sh(&repo, &hint).expect(0).stdout, "the worker's line\n");
    // Once the working tree no longer conflicts, it lands.
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    env.delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "the worker's line\n");
    assert_eq!(
        read_lossy(&repo.join("other.txt")),
        "other, by the worker\n"
    );
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn a_kept_proposal_that_deleted_a_path_the_user_changed_shows_what_was_there() {
    let (env, repo) = Env::with_repo("proj");
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::remove_file(ws[0].join("README")).unwrap();
    env.delegate(&repo, ["apply", "--json", "--discard", "1"])
        .expect(0);
    let kept = kept_list(&env, &repo);
    let r = kept[0]["ref"].as_str().unwrap().to_string();
    let name = kept[0]["name"].as_str().unwrap().to_string();
    // The user changed the path the task deleted.
    std::fs::write(repo.join("README"), "the user's line\n").unwrap();
    let out = env
        .delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(1)
        .json();
    let t = &out["tasks"][0];
    assert_eq!(t["conflicts"][0]["path"], "README", "{out:#}");
    assert_eq!(t["conflicts"][0]["reason"], "deleted by them");
    // The hint says the task deleted it, and shows what was there when the
    // task started, run as printed in the repository.
    let human = env
        .delegate(&repo, ["apply", "--kept", &name])
        .expect(1)
        .stdout;
    assert_has(&human, "The task deleted README: ");
    let hint = crate::common::printed_command(&human, "git show");
    assert_eq!(hint, format!("git show '{r}^:README'"), "{human}");
    assert_eq!(env.sh(&repo, &hint).expect(0).stdout, "hello\n");
    // The proposal's own version would name nothing: that hint would fail.
    env.sh(&repo, &format!("git show {r}:README")).expect(128);
    assert_eq!(read_lossy(&repo.join("README")), "the user's line\n");
}

/// The `git delegate apply --kept ...` command in `text` (between backticks),
/// as its arguments after `git delegate`.
fn printed_kept_command(text: &str) -> Vec<String> {
    let start = text
        .find("`git delegate apply --kept ")
        .unwrap_or_else(|| panic!("no apply --kept hint in:\n{text}"));
    let rest = &text[start + 1..];
    let end = rest.find('`').unwrap();
    rest[..end]
        .split_whitespace()
        .skip(2)
        .map(str::to_string)
        .collect()
}

// Each place that points at kept work prints a command that lands it when
// run exactly as printed: apply --discard, status, gc.
#[test]
fn the_apply_kept_hints_of_discard_status_and_gc_work_as_printed() {
    let (env, repo) = Env::with_repo("proj");
    // apply --discard's own hint.
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("a.txt"), "from the discard hint\n").unwrap();
    let text = env
        .delegate(&repo, ["apply", "--discard", "1"])
        .expect(0)
        .stdout;
    let cmd = printed_kept_command(&text);
    assert!(!cmd.contains(&"REF".to_string()), "{text}");
    env.delegate(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("a.txt")), "from the discard hint\n");
    assert!(env.private_refs(&repo).is_empty());

    // status's hint.
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("b.txt"), "from the status hint\n").unwrap();
    env.delegate(&repo, ["apply", "--discard", "1"]).expect(0);
    let text = env.delegate(&repo, ["status"]).expect(0).stdout;
    env.delegate(&repo, printed_kept_command(&text)).expect(0);
    assert_eq!(read_lossy(&repo.join("b.txt")), "from the status hint\n");
    assert!(env.private_refs(&repo).is_empty());

    // gc's hint, for a rescued proposal.
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1", "--ttl", "1s"]);
    std::fs::write(ws[0].join("c.txt"), "from the gc hint\n").unwrap();
    wait_stale(&env, &repo, &batch);
    let text = env.delegate(&repo, ["gc"]).expect(0).stdout;
    let cmd = printed_kept_command(&text);
    assert!(!cmd.contains(&"REF".to_string()), "{text}");
    env.delegate(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("c.txt")), "from the gc hint\n");
    assert!(env.private_refs(&repo).is_empty());
}

// Killed while it writes a proposal whose batch is gone: the next command
// rolls the write back, and `apply --kept` still finds it and lands it.
#[test]
fn apply_kept_killed_during_its_write_back_is_rolled_back_and_can_run_again() {
    let (env, repo) = Env::with_repo("proj");
    let (_batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "kept work\n").unwrap();
    std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
    env.delegate(&repo, ["apply", "--discard", "1"]).expect(0);
    let kept = kept_list(&env, &repo);
    let name = kept[0]["name"].as_str().unwrap().to_string();
    killed_at(
        env.delegate_cmd(&repo).args(["apply", "--kept", &name]),
        "after-rename:1",
    );
    // Rolled back by the next mutating command, then landed by it.
    let out = env
        .delegate(&repo, ["apply", "--kept", &name, "--json"])
        .expect(0)
        .json();
    assert_eq!(out["tasks"][0]["status"], "applied", "{out:#}");
    assert_eq!(out["recovered_writebacks"].as_array().unwrap().len(), 1);
    assert_eq!(read_lossy(&repo.join("README")), "kept work\n");
    assert_eq!(read_lossy(&repo.join("new.txt")), "new\n");
    assert!(env.private_refs(&repo).is_empty());
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"], serde_json::json!([]), "{st:#}");
    assert_eq!(st["problems"], serde_json::json!([]), "{st:#}");
    let leftovers: Vec<_> = std::fs::read_dir(repo.join(".git/delegate/batches"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
