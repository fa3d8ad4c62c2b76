//! The pre-commit hook (design §3.7) through real `git commit`s, and
//! `git delegate hooks install`.
use crate::common::files::read;
use crate::common::fixtures::task_root;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::files::write_hook;
use crate::common::fixtures::prepare;
use crate::common::path_with_delegate;
use crate::common::{Env, Run};
use serde_json::Value;

/// PATH without any folder holding a `git-delegate`.
fn path_without_delegate() -> std::ffi::OsString {
    let dirs: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|d| !d.join("git-delegate").exists())
        .collect();
    std::env::join_paths(dirs).unwrap()
}

/// `git commit --allow-empty` in `dir`, hooks enabled.
fn commit(env: &Env, dir: &Path, path: &std::ffi::OsStr, message: &str) -> Run {
    Run::from(
        env.git_cmd(dir)
            .env("PATH", path)
            .args(["commit", "-q", "--allow-empty", "-m", message])
            .output()
            .unwrap(),
    )
}

fn head(env: &Env, dir: &Path) -> String {
    env.git(dir, ["rev-parse", "HEAD"]).trim().to_string()
}

fn wait_stale(env: &Env, repo: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while env.delegate(repo, ["status", "--check"]).code != 1 {
        assert!(Instant::now() < deadline, "the batch never went stale");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn install(env: &Env, dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["hooks", "install", "--json"];
    args.extend_from_slice(extra);
    env.delegate(dir, args)
}

fn our_script() -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks/pre-commit"))
}

#[test]
fn stale_lease_modes_through_git_commit() {
    let (env, repo) = Env::with_repo("proj");
    install(&env, &repo, &[]).expect(0);
    let path = path_with_delegate();

    // No batches: silent.
    let quiet = commit(&env, &repo, &path, "no batches").expect(0);
    assert_eq!(quiet.stderr, "");

    // A live batch: silent too. (A long lease here, cut short afterwards:
    // a 1 s lease could expire before this commit on a loaded machine.)
    let doc = prepare(&env, &repo, &["--ttl", "1h"]);
    let short = doc["batch"].as_str().unwrap()[..8].to_string();
    let live = commit(&env, &repo, &path, "live batch").expect(0);
    assert_eq!(live.stderr, "");
    env.delegate(&repo, ["renew", &short, "--ttl", "1s"])
        .expect(0);
    wait_stale(&env, &repo);

    // warn (default): prints the batch and the way out, and commits.
    let before = head(&env, &repo);
    let warn = commit(&env, &repo, &path, "warn").expect(0);
    assert!(warn.stderr.contains(&short), "{}", warn.stderr);
    assert_has(&warn.stderr, "git delegate gc");
    assert!(warn.stderr.contains(&format!("git delegate renew {short}")));
    assert_ne!(head(&env, &repo), before);

    // block: refuses.
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[hooks]\nstale-leases = \"block\"\n",
    )
    .unwrap();
    let before = head(&env, &repo);
    let block = commit(&env, &repo, &path, "block");
    assert_ne!(block.code, 0);
    assert!(block.stderr.contains(&short), "{}", block.stderr);
    assert_has(&block.stderr, "refused");
    assert_eq!(head(&env, &repo), before);

    // Without git-delegate on PATH the hook does nothing, even in block mode.
    commit(&env, &repo, &path_without_delegate(), "no git-delegate").expect(0);
    assert_ne!(head(&env, &repo), before);

    // ignore: silent, commits.
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[hooks]\nstale-leases = \"ignore\"\n",
    )
    .unwrap();
    let before = head(&env, &repo);
    let ignore = commit(&env, &repo, &path, "ignore").expect(0);
    assert_eq!(ignore.stderr, "");
    assert_ne!(head(&env, &repo), before);
}

#[test]
fn forbid_commit_refuses_inside_workspaces_only() {
    let (env, repo) = Env::with_repo("proj");
    install(&env, &repo, &[]).expect(0);
    let path = path_with_delegate();
    let forbid = prepare(
        &env,
        &repo,
        &["--forbid-commit", "--label", "strict", "worker"],
    );
    assert_eq!(forbid["forbid_commit"], true);
    let free = prepare(&env, &repo, &["--label", "free"]);
    let ws = task_root(&forbid, 0);
    let short = forbid["batch"].as_str().unwrap()[..8].to_string();

    // Inside the forbid-commit workspace (and from a subfolder of it): refused.
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/f.txt"), "x\n").unwrap();
    env.git(&ws, ["add", "sub/f.txt"]);
    let before = head(&env, &ws);
    for dir in [ws.clone(), ws.join("sub")] {
        let refused = commit(&env, &dir, &path, "inside");
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        assert!(refused.stderr.contains(&short), "{}", refused.stderr);
        assert_has(&refused.stderr, "task worker");
        assert_eq!(head(&env, &ws), before);
    }
    // The hook command itself says the same.
    let direct = env.delegate(&ws, ["hook", "pre-commit"]).expect(1);
    assert!(direct.stderr.contains(&short));

    // In the source, commits work; so they do in a batch without forbid-commit.
    let before = head(&env, &repo);
    commit(&env, &repo, &path, "in source").expect(0);
    assert_ne!(head(&env, &repo), before);
    let free_ws = task_root(&free, 0);
    commit(&env, &free_ws, &path, "free worker").expect(0);

    // hooks.forbid-commit = true forbids it in every batch's workspaces.
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[hooks]\nforbid-commit = true\n",
    )
    .unwrap();
    let refused = commit(&env, &free_ws, &path, "free worker again");
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    commit(&env, &repo, &path, "source still fine").expect(0);
}

#[test]
fn hook_outside_a_repository_and_without_batches_is_silent() {
    let env = Env::new();
    let plain = env.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let r = env.delegate(&plain, ["hook", "pre-commit"]).expect(0);
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""));
    let repo = env.repo("proj");
    let r = env.delegate(&repo, ["hook", "pre-commit"]).expect(0);
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", ""));
    // Nothing was created by the check.
    assert!(!repo.join(".git/delegate").exists());
}

#[test]
fn hooks_install_fresh_and_twice() {
    let (env, repo) = Env::with_repo("proj");
    let hook = repo.join(".git/hooks/pre-commit");
    let _ = std::fs::remove_file(&hook);
    let doc = install(&env, &repo, &[]).expect(0).json();
    assert_eq!(doc["schema"], "git-delegate/v1");
    assert_eq!(
        PathBuf::from(doc["hook"].as_str().unwrap()),
        std::fs::canonicalize(&repo)
            .unwrap()
            .join(".git/hooks/pre-commit")
    );
    assert_eq!(doc["chained"], Value::Null);
    assert_eq!(doc["changed"], true);
    assert_eq!(read(&hook), our_script());
    let meta = std::fs::metadata(&hook).unwrap();
    assert_eq!(meta.permissions().mode() & 0o111, 0o111);

    let mtime = meta.modified().unwrap();
    let again = install(&env, &repo, &[]).expect(0).json();
    assert_eq!(again["changed"], false);
    assert_eq!(again["chained"], Value::Null);
    assert_eq!(read(&hook), our_script());
    assert_eq!(std::fs::metadata(&hook).unwrap().modified().unwrap(), mtime);
    assert!(!repo.join(".git/hooks/pre-commit.local").exists());
}

#[test]
fn hooks_install_chains_an_existing_hook() {
    let (env, repo) = Env::with_repo("proj");
    let hooks = repo.join(".git/hooks");
    let marker = env.path().join("local-ran");
    let foreign = format!("#!/bin/sh\necho ran >> '{}'\nexit 0\n", marker.display());
    write_hook(&hooks.join("pre-commit"), &foreign);

    let doc = install(&env, &repo, &[]).expect(0).json();
    let local = std::fs::canonicalize(&hooks)
        .unwrap()
        .join("pre-commit.local");
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["chained"], local.to_str().unwrap());
    assert_eq!(read(&local), foreign);
    assert_eq!(read(&hooks.join("pre-commit")), our_script());
    // Twice: nothing changes, the chain is still reported.
    let again = install(&env, &repo, &[]).expect(0).json();
    assert_eq!(again["changed"], false);
    assert_eq!(again["chained"], local.to_str().unwrap());
    assert_eq!(read(&local), foreign);

    // The old hook still runs first, and its failure refuses the commit.
    let path = path_with_delegate();
    commit(&env, &repo, &path, "chained").expect(0);
    assert_eq!(read(&marker), "ran\n");
    write_hook(&local, "#!/bin/sh\necho 'local says no' >&2\nexit 3\n");
    let before = head(&env, &repo);
    let refused = commit(&env, &repo, &path, "refused");
    assert_ne!(refused.code, 0);
    assert_has(&refused.stderr, "local says no");
    assert_eq!(head(&env, &repo), before);
}

#[test]
fn hooks_install_refuses_a_foreign_hook_beside_a_local_one() {
    let (env, repo) = Env::with_repo("proj");
    let hooks = repo.join(".git/hooks");
    write_hook(&hooks.join("pre-commit"), "#!/bin/sh\n# foreign\nexit 0\n");
    write_hook(
        &hooks.join("pre-commit.local"),
        "#!/bin/sh\n# older local\nexit 0\n",
    );

    let doc = install(&env, &repo, &[]).expect(2).json();
    assert_eq!(doc["error"]["code"], "delegate::hook_exists");
    assert_eq!(
        read(&hooks.join("pre-commit")),
        "#!/bin/sh\n# foreign\nexit 0\n"
    );
    assert_eq!(
        read(&hooks.join("pre-commit.local")),
        "#!/bin/sh\n# older local\nexit 0\n"
    );

    let doc = install(&env, &repo, &["--force"]).expect(0).json();
    assert_eq!(doc["changed"], true);
    assert_eq!(read(&hooks.join("pre-commit")), our_script());
    assert_eq!(
        read(&hooks.join("pre-commit.local")),
        "#!/bin/sh\n# foreign\nexit 0\n"
    );
    let backup = PathBuf::from(doc["backup"].as_str().unwrap());
    assert_eq!(read(&backup), "#!/bin/sh\n# older local\nexit 0\n");
}

#[test]
fn hooks_install_honours_core_hooks_path() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    env.git(&repo, ["config", "core.hooksPath", "myhooks"]);
    // Relative to the worktree root, from wherever it is run.
    let doc = install(&env, &repo.join("sub"), &[]).expect(0).json();
    let hook = std::fs::canonicalize(&repo)
        .unwrap()
        .join("myhooks/pre-commit");
    assert_eq!(doc["hook"], hook.to_str().unwrap());
    assert_eq!(read(&hook), our_script());
    assert!(!repo.join(".git/hooks/pre-commit").exists());

    // git runs it from there: a stale batch is reported on commit.
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    wait_stale(&env, &repo);
    let warned = commit(&env, &repo, &path_with_delegate(), "via hooksPath").expect(0);
    assert!(
        warned.stderr.contains(&doc["batch"].as_str().unwrap()[..8]),
        "{}",
        warned.stderr
    );

    // An absolute hooksPath.
    let abs = env.path().join("global-hooks");
    env.git(&repo, ["config", "core.hooksPath", abs.to_str().unwrap()]);
    let doc = install(&env, &repo, &[]).expect(0).json();
    assert_eq!(doc["hook"], abs.join("pre-commit").to_str().unwrap());
    assert!(abs.join("pre-commit").is_file());
}
