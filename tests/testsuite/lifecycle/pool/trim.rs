//! Trimming the pool: gc removes idle workspaces beyond `workspace.pool`
//! or older than `workspace.pool-ttl`; `gc --pool` and `drop --pool` empty
//! it.

use super::{idle, pool_config, repo};
use crate::common::fixtures::prepare;
use crate::common::Env;

#[test]
fn gc_trims_the_pool_and_gc_pool_and_drop_pool_empty_it() {
    let env = Env::new();
    let repo = repo(&env, 3);
    prepare(&env, &repo, &["-n", "3"]);
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 3);
    // Within its size and age, gc keeps it.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["idle_workspaces_removed"], 0, "{gc:#}");
    assert_eq!(idle(&env, &repo).len(), 3);
    // Beyond `workspace.pool`: the oldest go.
    pool_config(&env, &repo, 1, "");
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["idle_workspaces_removed"], 2, "{gc:#}");
    assert!(gc["bytes_freed"].as_u64().unwrap() > 0);
    assert_eq!(idle(&env, &repo).len(), 1);
    pool_config(&env, &repo, 0, "");
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["idle_workspaces_removed"], 1, "{dry:#}");
    assert_eq!(idle(&env, &repo).len(), 1);
    let gc = env.delegate(&repo, ["gc"]).expect(0).stdout;
    assert!(gc.contains("Removed 1 idle workspace of the pool."), "{gc}");
    assert!(idle(&env, &repo).is_empty());
    let base = crate::common::fixtures::workspace_base(&env, &repo);
    assert!(!base.join("pool").exists());

    // Older than `workspace.pool-ttl`.
    pool_config(&env, &repo, 3, "pool-ttl = \"1s\"\n");
    prepare(&env, &repo, &["-n", "2"]);
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 2);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["idle_workspaces_removed"], 2, "{gc:#}");

    // `gc --pool` and `drop --pool` empty it.
    pool_config(&env, &repo, 3, "");
    prepare(&env, &repo, &["-n", "2"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let gc = env
        .delegate(&repo, ["gc", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(gc["idle_workspaces_removed"], 2, "{gc:#}");
    assert!(idle(&env, &repo).is_empty());
    prepare(&env, &repo, &["-n", "2"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let drop = env
        .delegate(&repo, ["drop", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(drop["pool"], true);
    assert_eq!(drop["idle_workspaces_removed"], 2, "{drop:#}");
    assert!(idle(&env, &repo).is_empty());
    assert_eq!(
        env.git(&repo, ["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    let text = env.delegate(&repo, ["drop", "--pool"]).expect(0).stdout;
    assert_eq!(text, "Emptied the pool: 0 idle workspaces removed.\n");
    // `--pool` ends no batch: it takes none.
    env.delegate(&repo, ["drop", "--pool", "x"]).expect(2);
}
