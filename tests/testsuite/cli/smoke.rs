//! The shortest round trip (prepare, status, drop), and a stale lock on a
//! private ref that must not block the next command.

use crate::common::files::read;
use crate::common::fixtures::task_root;
#[test]
fn prepare_status_drop_round_trip() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join("README"), "changed\n").unwrap();
    let doc = crate::common::fixtures::prepare(&env, &repo, &["-n", "2"]);
    assert_eq!(doc["schema"], "git-delegate/v1");
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 2);
    let root = task_root(&doc, 0);
    assert_eq!(read(&root.join("README")), "changed\n");
    assert_eq!(
        env.oracle_tree(&repo),
        env.git(
            &repo,
            [
                "rev-parse",
                &format!("{}^{{tree}}", doc["baseline"]["commit"].as_str().unwrap())
            ]
        )
        .trim()
    );
    let id = doc["batch"].as_str().unwrap();
    env.delegate(&repo, ["drop", &id[..8], "--json"]).expect(0);
    assert!(env.private_refs(&repo).is_empty());
    assert!(!root.exists());
}

/// A git-delegate process killed while editing one of its private refs leaves
/// `<ref>.lock` behind; the next command (holding the repository lock) must
/// not be stuck on it.
#[test]
fn a_stale_lock_on_a_private_ref_does_not_block_the_next_command() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    let doc = crate::common::fixtures::prepare(&env, &repo, &[]);
    let id = doc["batch"].as_str().unwrap();
    let lock = repo.join(format!(".git/refs/pi-delegate/batches/{id}/baseline.lock"));
    std::fs::write(&lock, "").unwrap();
    env.delegate(&repo, ["drop", id, "--force", "--json"])
        .expect(0);
    assert!(env.private_refs(&repo).is_empty());
    assert!(!lock.exists());
}
