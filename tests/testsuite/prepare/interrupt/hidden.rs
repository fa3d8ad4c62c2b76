//! Hidden state folders (`.<id>.new`, `.<id>.removed-PID`) left by killed
//! commands: never read as batches or journals, and removed by gc.

use super::*;

/// What a prepare killed before its batch folder appeared (`.<id>.new`)
/// and a removal killed after hiding a state folder (`.<id>.removed-PID`)
/// leave in the state folder: never read as batches, and removed by gc
/// (not by a dry run).
#[test]
fn gc_removes_hidden_state_left_by_killed_commands() {
    let (env, repo) = Env::with_repo("small");
    let live = prepare(&env, &repo, &[]);
    let batches = common_dir(&repo).join("delegate/batches");
    let new = batches.join(format!(".{ID}.new"));
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(new.join("batch.toml"), "half").unwrap();
    let removed = batches.join(format!(".{ID}.removed-4242"));
    std::fs::create_dir_all(removed.join("sub")).unwrap();
    std::fs::write(removed.join("sub/x.patch"), "old").unwrap();
    env.delegate(&repo, ["status", "--check"]).expect(0);
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert!(dry["bytes_freed"].as_u64().unwrap() >= 7, "{dry}");
    assert!(new.exists() && removed.exists());
    env.delegate(&repo, ["gc", "--json"]).expect(0);
    assert!(!new.exists(), "{} left", new.display());
    assert!(!removed.exists(), "{} left", removed.display());
    let id = live["batch"].as_str().unwrap();
    assert!(
        batches.join(id).join("batch.toml").exists(),
        "the live batch must stay"
    );
}

/// A hidden state folder (a removal killed half-way) that still holds a
/// write-back journal is not a batch: no command recovers it or reports it
/// as pending, and gc removes it.
#[test]
fn a_journal_in_a_hidden_state_folder_is_not_recovered() {
    let (env, repo) = Env::with_repo("small");
    let batches = common_dir(&repo).join("delegate/batches");
    let hidden = batches.join(format!(".{ID}.removed-4242"));
    std::fs::create_dir_all(&hidden).unwrap();
    std::fs::write(hidden.join("writeback.journal"), "not a journal\n").unwrap();
    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["problems"], serde_json::json!([]), "{st}");
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["pending_writebacks"], serde_json::json!([]), "{dry}");
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["recovered_writebacks"], serde_json::json!([]), "{gc}");
    assert!(!hidden.exists());
}
