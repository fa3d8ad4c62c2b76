//! Ctrl-C (once, twice, through `git delegate`, while carrying ignored
//! files), SIGTERM and SIGHUP: everything the prepare made is undone and
//! the source is byte-identical.

use super::*;

fn assert_undone(env: &Env, repo: &Path, before: &(Tree, Vec<u8>), p: Prepare, context: &str) {
    let (status, stderr) = p.finish();
    assert!(
        !status.success(),
        "{context}: an interrupted prepare must fail, got {status}\nstderr:\n{stderr}"
    );
    assert_nothing_left(env, repo, context);
    assert!(snapshot(repo) == *before, "{context}: the source changed");
    // Nothing to apply, nothing for gc.
    env.delegate(repo, ["status", "--check"]).expect(0);
}

#[test]
fn ctrl_c_once_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    for point in ["marked", "checked-out", "replicating", "complete-pending"] {
        let mut p = Prepare::start(&env, &repo, point, false);
        p.wait_for(point);
        p.signal(rustix::process::Signal::INT);
        assert_undone(&env, &repo, &before, p, &format!("SIGINT at {point}"));
    }
}

#[test]
fn ctrl_c_twice_does_not_cut_the_undo_short() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let mut p = Prepare::start(&env, &repo, "replicating,undo", false);
    p.wait_for("replicating");
    p.signal(rustix::process::Signal::INT);
    p.wait_for("undo");
    p.signal(rustix::process::Signal::INT);
    assert_undone(&env, &repo, &before, p, "SIGINT twice");
}

#[test]
fn ctrl_c_through_git_delegate_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    // git passes its own SIGINT on to git-delegate: two signals at once.
    for point in ["checked-out", "replicating", "carrying"] {
        let mut p = Prepare::start(&env, &repo, point, true);
        p.wait_for(point);
        p.signal(rustix::process::Signal::INT);
        assert_undone(
            &env,
            &repo,
            &before,
            p,
            &format!("git delegate, SIGINT at {point}"),
        );
    }
}

#[test]
fn ctrl_c_while_carrying_ignored_files_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let mut p = Prepare::start(&env, &repo, "carrying", false);
    p.wait_for("carrying");
    p.signal(rustix::process::Signal::INT);
    assert_undone(&env, &repo, &before, p, "SIGINT while carrying");
}

#[test]
fn sigterm_and_sighup_undo_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    for (sig, name) in [
        (rustix::process::Signal::TERM, "SIGTERM"),
        (rustix::process::Signal::HUP, "SIGHUP"),
    ] {
        let mut p = Prepare::start(&env, &repo, "checked-out", false);
        p.wait_for("checked-out");
        p.signal(sig);
        assert_undone(&env, &repo, &before, p, name);
    }
}
