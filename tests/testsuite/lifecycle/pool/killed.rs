//! A kill (or Ctrl-C) at each step of parking a workspace or reusing one
//! leaves either whole idle workspaces or leftovers gc removes, and never
//! a workspace half-way.

use std::path::PathBuf;

use super::{assert_pool_whole, repo, signalled_at};
use crate::common::fixtures::{prepare, task_root, tree_of, write};
use crate::common::Env;

/// After the kill or signal and `gc`: the pool is whole, nothing else is
/// left below the repository's folder or in the state folder's batches;
/// the next prepare gives each task a clean workspace at the new baseline
/// (`reused` of them from the pool, or at least `at_least`), and emptying
/// the pool leaves nothing.
fn assert_recovers(env: &Env, repo: &std::path::Path, what: &str, at_least: usize) {
    use crate::common::fixtures::{
        batch_folders, common_dir, names_in, registrations, workspace_base,
    };
    env.delegate(repo, ["gc"]).expect(0);
    let common = common_dir(env, repo);
    let whole = assert_pool_whole(env, repo, what);
    assert!(whole.len() >= at_least, "{whole:?} {what}");
    assert_eq!(batch_folders(&common), Vec::<String>::new(), "{what}");
    let base = workspace_base(env, repo);
    let left: Vec<String> = names_in(&base)
        .into_iter()
        .filter(|n| n != "pool")
        .collect();
    assert_eq!(left, Vec::<String>::new(), "{what}");
    // The next prepare reuses the idle ones or makes fresh ones: each clean.
    let next = prepare(env, repo, &["-n", "2"]);
    let tree = tree_of(env, repo, next["baseline"]["commit"].as_str().unwrap());
    let mut reused = 0;
    for i in 0..2 {
        let ws = task_root(&next, i);
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "", "{what}");
        assert_eq!(env.oracle_tree(&ws), tree, "{what}");
        reused += usize::from(whole.contains(&ws));
    }
    assert_eq!(reused, whole.len().min(2), "{what}");
    env.delegate(repo, ["apply"]).expect(0);
    env.delegate(repo, ["drop", "--pool"]).expect(0);
    assert_eq!(assert_pool_whole(env, repo, what), Vec::<PathBuf>::new());
    assert_eq!(registrations(&common), Vec::<String>::new(), "{what}");
    assert!(!base.join("pool").exists(), "{what}");
    assert_eq!(
        names_in(&common.join("delegate/pool")),
        Vec::<String>::new(),
        "{what}"
    );
}

/// Apply is killed (SIGKILL) or interrupted (Ctrl-C) while it parks the
/// workspaces of its two tasks, between saving the first one's record and
/// locking it for the pool. The applied work is in the source; the next
/// apply (after a kill) finishes the parking; gc leaves only whole idle
/// workspaces.
#[test]
fn an_apply_killed_or_interrupted_while_parking_loses_no_workspace_half_way() {
    use rustix::process::Signal;
    for sig in [Signal::KILL, Signal::INT] {
        let env = Env::new();
        let repo = repo(&env, 4);
        let doc = prepare(&env, &repo, &["-n", "2"]);
        write(&task_root(&doc, 0).join("src/a.txt"), "task one\n");
        write(&task_root(&doc, 1).join("src/deep/b.txt"), "task two\n");
        let point = "pool-park-recorded";
        let out = signalled_at(&env, &repo, &["apply"], point, sig);
        let what = format!("{point} {sig:?}: {}", String::from_utf8_lossy(&out.stderr));
        let read = |p: &str| std::fs::read_to_string(repo.join(p)).unwrap();
        assert_eq!(read("src/a.txt"), "task one\n", "{what}");
        assert_eq!(read("src/deep/b.txt"), "task two\n", "{what}");
        if sig == Signal::KILL {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(out.status.signal(), Some(9), "{what}");
            // The killed apply's clean-up is the next one's.
            env.delegate(&repo, ["apply"]).expect(0);
        } else {
            // Past the commit point: finished, said so, exit 1 (design §7 "Signals").
            assert_eq!(out.status.code(), Some(1), "{what}");
        }
        // Both go idle: the next apply reads the one it finds applied and
        // not cleaned up, and Ctrl-C only asks.
        assert_recovers(&env, &repo, &what, 2);
    }
}

/// Prepare is killed (SIGKILL) or interrupted (Ctrl-C) while it reuses
/// the idle workspaces: after claiming the first (its record removed, not
/// yet locked for the task) and while moving them to the baseline. Nothing
/// is left that gc does not remove; what stays idle is whole.
#[test]
fn a_prepare_killed_or_interrupted_while_reusing_leaves_nothing_gc_does_not_clean_up() {
    use rustix::process::Signal;
    for point in ["pool-claimed", "pool-moved"] {
        for sig in [Signal::KILL, Signal::INT] {
            let env = Env::new();
            let repo = repo(&env, 4);
            prepare(&env, &repo, &["-n", "2"]);
            env.delegate(&repo, ["apply"]).expect(0);
            assert_eq!(super::idle(&env, &repo).len(), 2);
            // The user changes a file: the reuse writes it.
            write(&repo.join("src/a.txt"), "the user's\n");
            let out = signalled_at(&env, &repo, &["prepare", "-n", "2"], point, sig);
            let what = format!("{point} {sig:?}: {}", String::from_utf8_lossy(&out.stderr));
            assert_ne!(out.status.code(), Some(0), "{what}");
            assert_recovers(&env, &repo, &what, 0);
        }
    }
}
