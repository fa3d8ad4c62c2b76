//! `prepare --forbid-commit` without git-delegate's pre-commit hook warns
//! (stderr, and `warnings` in the JSON document): the flag does nothing
//! until the hook is installed (design §3.7). With the hook, no warning.

use crate::common::assert_has;
use crate::common::fixtures::task_root;
use crate::common::Env;

const WARNING: &str =
    "git-delegate: warning: commits in this batch's workspaces will not be refused: \
forbid-commit needs git-delegate's pre-commit hook, which is not installed at ";

#[test]
fn prepare_forbid_commit_warns_when_the_hook_is_not_installed() {
    let env = Env::new();
    let repo = std::fs::canonicalize(env.repo("src")).unwrap();
    let hook = repo.join(".git/hooks/pre-commit");

    // Human: the warning on stderr, naming the hook's path, and its help.
    let run = env
        .delegate(&repo, ["prepare", "--forbid-commit", "--label", "one"])
        .expect(0);
    assert_eq!(
        run.stderr,
        format!(
            "{WARNING}{}\n  run `git delegate hooks install` (the hook then refuses commits in this batch's workspaces too)\n",
            hook.display()
        )
    );
    assert!(run.stdout.starts_with("Prepared batch"), "{}", run.stdout);

    // JSON: one `warnings` entry, and the same text on stderr.
    let run = env
        .delegate(
            &repo,
            ["prepare", "--forbid-commit", "--label", "two", "--json"],
        )
        .expect(0);
    let doc = run.json();
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{doc:#}");
    assert_eq!(warnings[0]["code"], "hook_not_installed");
    assert!(warnings[0]["message"]
        .as_str()
        .unwrap()
        .ends_with(&hook.display().to_string()));
    assert_has(&run.stderr, WARNING);

    // A foreign hook is not ours: still a warning.
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let run = env
        .delegate(&repo, ["prepare", "--forbid-commit", "--label", "three"])
        .expect(0);
    assert!(run.stderr.starts_with(WARNING), "{}", run.stderr);

    // Without --forbid-commit: nothing to warn about.
    let run = env
        .delegate(&repo, ["prepare", "--label", "four", "--json"])
        .expect(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    assert!(run.json().get("warnings").is_none());
}

#[test]
fn prepare_forbid_commit_with_the_hook_installed_says_nothing_and_the_hook_refuses() {
    let (env, repo) = Env::with_repo("src");
    // The help of the warning, followed literally.
    env.delegate(&repo, ["hooks", "install"]).expect(0);
    let run = env
        .delegate(&repo, ["prepare", "--forbid-commit"])
        .expect(0);
    assert_eq!(run.stderr, "");
    let run = env
        .delegate(
            &repo,
            ["prepare", "--forbid-commit", "--label", "j", "--json"],
        )
        .expect(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let doc = run.json();
    assert!(doc.get("warnings").is_none(), "{doc:#}");

    // hooks.forbid-commit = true counts as --forbid-commit: no hook, a warning.
    let other = env.repo("other");
    std::fs::write(
        other.join(".git/delegate.toml"),
        "[hooks]\nforbid-commit = true\n",
    )
    .unwrap();
    let run = env.delegate(&other, ["prepare"]).expect(0);
    assert!(run.stderr.starts_with(WARNING), "{}", run.stderr);

    // And the hook does refuse a commit in the workspace (git-delegate on PATH).
    let root = task_root(&doc, 0);
    std::fs::write(root.join("new"), "x\n").unwrap();
    env.git(&root, ["add", "new"]);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_git-delegate"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = env
        .git_cmd(&root)
        .env("PATH", path)
        .args(["commit", "-q", "-m", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the commit went through: {out:?}");
}
