//! Never delete what is not proven ours and empty of work (design §3.18):
//! a task folder renamed inside its batch folder, a batch folder moved
//! aside, or any other folder there is left and reported by gc (never
//! reclaimed as a leftover), a stale batch whose workspace moved so is left
//! whole, and `drop` without `--force` refuses while work may be in such a
//! folder; the words say how to put it back, and doing so works.

use std::path::{Path, PathBuf};

use crate::common::files::read;
use crate::common::fixtures::{id, prepare, strs, task, task_root, wait_stale};
use crate::common::{assert_has, printed_command, Env};

/// A batch of two tasks, each with unapplied work in its workspace.
fn two_with_work(env: &Env, repo: &Path, ttl: &str) -> (String, PathBuf, PathBuf) {
    let doc = prepare(env, repo, &["-n", "2", "--ttl", ttl]);
    let (one, two) = (task_root(&doc, 0), task_root(&doc, 1));
    std::fs::write(one.join("work-1.txt"), "unapplied one\n").unwrap();
    std::fs::write(two.join("work-2.txt"), "unapplied two\n").unwrap();
    (id(&doc), one, two)
}

#[test]
fn gc_leaves_a_task_folder_renamed_inside_a_live_batch_and_reports_it() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, _) = two_with_work(&env, &repo, "1h");
    let renamed = one.with_file_name("renamed");
    std::fs::rename(&one, &renamed).unwrap();

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    assert_eq!(gc["bytes_freed"], 0, "{gc:#}");
    assert_eq!(
        strs(&gc["left_alone"]),
        [renamed.to_str().unwrap()],
        "{gc:#}"
    );
    assert_eq!(read(&renamed.join("work-1.txt")), "unapplied one\n");
    assert!(renamed.join("README").is_file());
    let human = env.delegate(&repo, ["gc"]).expect(0);
    assert_has(&human.stdout, "Nothing to reclaim.");
    assert_has(&human.stdout, renamed.to_str().unwrap());
    // The batch is still open, and its worker's work still there.
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"][0]["batch"], batch.as_str());
}

#[test]
fn drop_refuses_while_a_renamed_task_folder_holds_work_and_its_hint_works() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, two) = two_with_work(&env, &repo, "1h");
    std::fs::remove_file(two.join("work-2.txt")).unwrap();
    let renamed = one.with_file_name("renamed");
    std::fs::rename(&one, &renamed).unwrap();

    let refused = env
        .delegate(&repo, ["drop", &batch, "--json"])
        .expect(1)
        .json();
    assert_eq!(refused["dropped"], false, "{refused:#}");
    assert_eq!(
        refused["unapplied"],
        serde_json::json!(["1"]),
        "{refused:#}"
    );
    assert_eq!(
        strs(&refused["left_alone"]),
        [renamed.to_str().unwrap()],
        "{refused:#}"
    );
    let human = env.delegate(&repo, ["drop", &batch]).expect(1);
    assert_has(&human.stdout, "Not dropping batch");
    assert_has(&human.stdout, renamed.to_str().unwrap());
    assert_eq!(read(&renamed.join("work-1.txt")), "unapplied one\n");
    // Its hint, followed literally, puts the workspace back; apply lands it.
    let mv = printed_command(&human.stdout, "mv ");
    env.sh(&repo, &mv).expect(0);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(task(&doc, "1")["status"], "applied", "{doc:#}");
    assert_eq!(read(&repo.join("work-1.txt")), "unapplied one\n");
}

#[test]
fn gc_leaves_a_stale_batch_whose_task_folder_was_renamed_whole() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, two) = two_with_work(&env, &repo, "1s");
    let renamed = one.with_file_name("renamed");
    std::fs::rename(&one, &renamed).unwrap();
    wait_stale(&env, &repo, &batch);

    let run = env.delegate(&repo, ["gc", "--json"]).expect(1);
    let gc = run.json();
    assert_eq!(gc["batches"], serde_json::json!([]), "{gc:#}");
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    assert_eq!(gc["skipped"][0]["batch"], batch.as_str(), "{gc:#}");
    assert_has(
        gc["skipped"][0]["message"].as_str().unwrap(),
        renamed.to_str().unwrap(),
    );
    assert!(strs(&gc["left_alone"]).contains(&renamed.to_str().unwrap()));
    assert_eq!(read(&renamed.join("work-1.txt")), "unapplied one\n");
    assert_eq!(read(&two.join("work-2.txt")), "unapplied two\n");
    assert!(env.private_refs(&repo).iter().any(|r| r.contains(&batch)));
}

#[test]
fn a_batch_folder_moved_aside_keeps_both_tasks_work_through_gc_and_drop() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, two) = two_with_work(&env, &repo, "1s");
    let folder = one.parent().unwrap().to_path_buf();
    let moved = folder.with_file_name(format!("zz-{}", &batch[..8]));
    std::fs::rename(&folder, &moved).unwrap();
    let (m1, m2) = (moved.join("1"), moved.join("2"));
    wait_stale(&env, &repo, &batch);

    // gc: the stale batch is left whole, the moved folders reported.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(1).json();
    assert_eq!(gc["batches"], serde_json::json!([]), "{gc:#}");
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    let left = strs(&gc["left_alone"]);
    for m in [&m1, &m2] {
        assert!(left.contains(&m.to_str().unwrap()), "{gc:#}");
    }
    assert_eq!(read(&m1.join("work-1.txt")), "unapplied one\n");
    assert_eq!(read(&m2.join("work-2.txt")), "unapplied two\n");

    // drop without --force refuses, naming where the work is.
    let refused = env
        .delegate(&repo, ["drop", &batch, "--json"])
        .expect(1)
        .json();
    assert_eq!(refused["dropped"], false);
    assert_eq!(
        refused["unapplied"],
        serde_json::json!(["1", "2"]),
        "{refused:#}"
    );
    let mut left = strs(&refused["left_alone"]);
    left.sort();
    assert_eq!(left, [m1.to_str().unwrap(), m2.to_str().unwrap()]);
    let human = env.delegate(&repo, ["drop", &batch]).expect(1);
    assert_has(&human.stdout, m1.to_str().unwrap());

    // --force drops the batch, and still leaves the folders and their files.
    let dropped = env
        .delegate(&repo, ["drop", &batch, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(dropped["workspaces_removed"], 0, "{dropped:#}");
    let left = strs(&dropped["left_alone"]);
    for m in [&m1, &m2] {
        assert!(left.contains(&m.to_str().unwrap()), "{dropped:#}");
    }
    assert_eq!(read(&m1.join("work-1.txt")), "unapplied one\n");
    assert_eq!(read(&m2.join("work-2.txt")), "unapplied two\n");
    // And no later gc takes them.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["workspaces_removed"], 0, "{gc:#}");
    assert_eq!(read(&m1.join("work-1.txt")), "unapplied one\n");
    assert_eq!(read(&m2.join("work-2.txt")), "unapplied two\n");
    let _ = two;
}

#[test]
fn drop_refuses_while_the_batch_folder_is_gone() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, _) = two_with_work(&env, &repo, "1h");
    let folder = one.parent().unwrap().to_path_buf();
    let elsewhere = env.path().join("elsewhere");
    std::fs::rename(&folder, &elsewhere).unwrap();
    let refused = env
        .delegate(&repo, ["drop", &batch, "--json"])
        .expect(1)
        .json();
    assert_eq!(
        refused["unapplied"],
        serde_json::json!(["1", "2"]),
        "{refused:#}"
    );
    let human = env.delegate(&repo, ["drop", &batch]).expect(1);
    assert_has(&human.stdout, "its batch folder is gone");
    assert_eq!(read(&elsewhere.join("1/work-1.txt")), "unapplied one\n");
    env.delegate(&repo, ["drop", &batch, "--force"]).expect(0);
    assert_eq!(read(&elsewhere.join("1/work-1.txt")), "unapplied one\n");
}

#[test]
fn an_unknown_folder_in_a_batch_folder_is_left_alone_and_reported() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, one, _) = two_with_work(&env, &repo, "1s");
    let stranger = one.with_file_name("notes");
    std::fs::create_dir(&stranger).unwrap();
    std::fs::write(stranger.join("keep.txt"), "mine\n").unwrap();
    wait_stale(&env, &repo, &batch);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([batch]), "{gc:#}");
    assert_eq!(gc["workspaces_removed"], 2, "{gc:#}");
    assert_eq!(
        strs(&gc["left_alone"]),
        [stranger.to_str().unwrap()],
        "{gc:#}"
    );
    assert_eq!(read(&stranger.join("keep.txt")), "mine\n");
}
