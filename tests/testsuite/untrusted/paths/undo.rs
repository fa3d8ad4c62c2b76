//! Undo entries a worker sharing the repository moved to a hostile
//! commit: `undo` and `apply --from-undo` write nothing of them.
use crate::common::files::read_bytes;

use super::*;

#[test]
fn undo_of_an_entry_moved_to_a_hostile_commit_writes_nothing() {
    let AppliedOne {
        env,
        src,
        hooks_before: before,
        ws2,
        apply_id,
        ..
    } = applied_one();
    // The worker of task 2 shares the repository: it points the undo entry
    // at an `S` that holds a hook, so that undoing "restores" it.
    let blob = git_in(&env, &ws2, &["hash-object", "-w", "--stdin"], b"mine\n");
    let f_tree = write_tree(&env, &ws2, vec![("100644".into(), b"a.txt".to_vec(), blob)]);
    let (mode, hooks_dir) = write_node(
        &env,
        &ws2,
        &dir(vec![(
            b"hooks",
            dir(vec![(
                b"pre-commit",
                Node::Exec(b"#!/bin/sh\necho pwned\n"),
            )]),
        )]),
    );
    let s_tree = write_tree(&env, &ws2, vec![(mode, b".git".to_vec(), hooks_dir)]);
    let s = env.git(&ws2, ["commit-tree", &s_tree, "-m", "S"]);
    let f = env.git(&ws2, ["commit-tree", &f_tree, "-p", s.trim(), "-m", "F"]);
    env.git(
        &ws2,
        [
            "update-ref",
            &format!("refs/pi-delegate/undo/{apply_id}/entry"),
            f.trim(),
        ],
    );
    let run = env.delegate(&src, ["undo", "--json"]).expect(3);
    invalid_path_error(&run, ".git/hooks/pre-commit");
    assert_eq!(hooks(&src), before);
    assert_eq!(read_bytes(&src.join("a.txt")), b"mine\n");
}

#[test]
fn apply_from_undo_refuses_a_kept_proposal_moved_to_a_hostile_commit() {
    let AppliedOne {
        env,
        src,
        hooks_before: before,
        id,
        ws2,
        apply_id,
    } = applied_one();
    env.delegate(&src, ["undo", "--json"]).expect(0);
    assert!(absent(&src, "a.txt"));
    // The worker of task 2 moves the undone apply's kept proposal to a
    // commit on the baseline that writes a hook.
    let baseline = env.git(
        &ws2,
        [
            "rev-parse",
            &format!("refs/pi-delegate/batches/{id}/baseline"),
        ],
    );
    let (extra, path, _) = shapes().remove(0);
    let hostile = commit_on(&env, &ws2, baseline.trim(), extra);
    env.git(
        &ws2,
        [
            "update-ref",
            &format!("refs/pi-delegate/undo/{apply_id}/tasks/1"),
            &hostile,
        ],
    );
    let doc = env
        .delegate(&src, ["apply", "--from-undo", &apply_id, "--json"])
        .expect(1)
        .json();
    let t = &doc["tasks"][0];
    assert_eq!(t["reason"], "invalid_path", "{doc}");
    assert!(conflict_paths(t).iter().any(|p| p == path), "{doc}");
    assert_eq!(doc["applied_paths"], serde_json::json!([]), "{doc}");
    assert_eq!(hooks(&src), before);
}
