//! Repositories inside a workspace (a nested repository is a conflict,
//! and its workspace is kept on drop and discard) and workspaces that are
//! the source of another open batch (kept, with a command to remove it that
//! works as printed).

use super::*;
use crate::common::assert_has;
use crate::common::fixtures::id;
use crate::common::fixtures::{commit_files, field_strs};
use crate::common::succeed_as;

/// A git repository a worker made in its workspace: `git init` with a commit
/// of its own (task 1), and a `git clone` of another local repository under
/// an untracked folder (task 2), each beside an ordinary edit.
fn nested_repositories(env: &Env, ws: &[PathBuf]) {
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 2, "task one")).unwrap();
    env.git(&ws[0], ["init", "-q", "sub"]);
    std::fs::write(ws[0].join("sub/inner.txt"), "inner work\n").unwrap();
    env.git(&ws[0].join("sub"), ["add", "inner.txt"]);
    env.git(&ws[0].join("sub"), ["commit", "-q", "-m", "nested history"]);

    let dep = env.repo("dep");
    std::fs::create_dir_all(ws[1].join("deps")).unwrap();
    env.git(&ws[1], ["clone", "-q", dep.to_str().unwrap(), "deps/lib"]);
    std::fs::write(ws[1].join("two.txt"), "two\n").unwrap();
}

#[test]
fn a_nested_repository_in_a_workspace_is_a_conflict_and_nothing_of_the_task_applies() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    let short = &doc["batch"].as_str().unwrap()[..8];
    nested_repositories(&env, &ws);
    std::fs::write(ws[2].join("three.txt"), "three\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    for (name, nested, edit) in [("1", "sub", "f.txt"), ("2", "deps/lib", "two.txt")] {
        let t = task(&out, name);
        assert_eq!(t["status"], "conflict", "{out:#}");
        assert_eq!(t["reason"], "nested_repository", "{out:#}");
        let paths = field_strs(&t["conflicts"], "path");
        assert_eq!(paths, [nested], "{out:#}");
        assert_eq!(strings(&t["applied_paths"]), Vec::<String>::new());
        // The rest of the work is recorded, so it is never lost.
        let r = t["proposal_ref"].as_str().unwrap();
        env.git(&repo, ["cat-file", "-e", &format!("{r}:{edit}")]);
        let patch = read_lossy(Path::new(t["patch"].as_str().unwrap()));
        assert_has(&patch, edit);
    }
    // All or nothing per task: neither ordinary edit reached the source.
    assert_eq!(read_lossy(&repo.join("f.txt")), lines(10));
    assert!(!repo.join("two.txt").exists());
    assert!(!repo.join("sub").exists() && !repo.join("deps").exists());
    // The task without a nested repository applies.
    assert_eq!(task(&out, "3")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("three.txt")), "three\n");
    assert_eq!(out["batch_open"], true);
    // The workspaces and their nested repositories are kept.
    assert!(ws[0].join("sub/.git").is_dir());
    assert_eq!(read_lossy(&ws[0].join("sub/inner.txt")), "inner work\n");
    assert!(ws[1].join("deps/lib/.git").is_dir());
    assert_eq!(read_lossy(&ws[1].join("deps/lib/README")), "hello\n");
    assert_eq!(
        read_lossy(&ws[0].join("f.txt")),
        lines_with(10, 2, "task one")
    );

    // status counts them as changes; drop refuses without --force.
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let tasks = status["batches"][0]["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["changed_paths"], 2, "{status:#}");
    assert_eq!(tasks[1]["changed_paths"], 2, "{status:#}");
    let drop = env.delegate(&repo, ["drop", short]).expect(1);
    assert_has(&drop.stdout, "1, 2");
    assert!(ws[0].join("sub/.git").is_dir() && ws[1].join("deps/lib/.git").is_dir());
    assert_eq!(read_lossy(&ws[1].join("two.txt")), "two\n");
}

#[test]
fn drop_refuses_a_workspace_whose_only_change_is_a_nested_repository() {
    let (env, repo) = Env::with_repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    let short = &doc["batch"].as_str().unwrap()[..8];
    env.git(&ws[0], ["init", "-q", "sub"]);
    let out = env
        .delegate(&repo, ["drop", short, "--json"])
        .expect(1)
        .json();
    assert_eq!(out["dropped"], false);
    assert_eq!(out["unapplied"], serde_json::json!(["1"]));
    assert!(ws[0].join("sub/.git").is_dir());
    // apply: a conflict with nothing else to record, the workspace kept.
    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "1")["reason"], "nested_repository", "{out:#}");
    assert!(ws[0].join("sub/.git").is_dir());
}

#[test]
fn a_repository_made_in_a_tracked_folder_of_a_workspace_is_a_nested_repository_too() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::create_dir_all(repo.join("lib")).unwrap();
    commit_files(&env, &repo, &[("lib/x.txt", "x\n")], "lib");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    // `git init` in a folder git already tracks: git add -A would take its
    // files and say nothing of its history.
    env.git(&ws[0].join("lib"), ["init", "-q"]);
    env.git(&ws[0].join("lib"), ["add", "x.txt"]);
    env.git(&ws[0].join("lib"), ["commit", "-q", "-m", "own history"]);
    std::fs::write(ws[0].join("lib/x.txt"), "x edited\n").unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["reason"], "nested_repository", "{out:#}");
    assert_eq!(t["conflicts"][0]["path"], "lib", "{out:#}");
    assert_eq!(read_lossy(&repo.join("lib/x.txt")), "x\n");
    assert!(ws[0].join("lib/.git").is_dir());
}

/// `apply --discard` of a task whose workspace holds a nested repository:
/// discarding is an explicit give-up, so the workspace goes, but never
/// silently: the output names the nested repository removed with it (it is
/// not in the kept proposal), and the kept proposal holds the rest of the
/// work.
#[test]
fn discarding_a_task_with_a_nested_repository_keeps_its_workspace() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);

    let out = apply(&env, &repo, &["--discard", "1", "--discard", "2"], 0);
    for (i, (name, nested, edit)) in [("1", "sub", "f.txt"), ("2", "deps/lib", "two.txt")]
        .into_iter()
        .enumerate()
    {
        let t = task(&out, name);
        assert_eq!(t["status"], "discarded", "{out:#}");
        // The rest of its work is kept as a proposal, as for any discard.
        assert_eq!(t["kept"], true, "{out:#}");
        let r = t["proposal_ref"].as_str().unwrap();
        env.git(&repo, ["cat-file", "-e", &format!("{r}:{edit}")]);
        // The nested repository is in no proposal: its workspace stays.
        assert_eq!(strings(&t["nested_repositories"]), [nested], "{out:#}");
        assert_eq!(t["workspace"], ws[i].to_str().unwrap(), "{out:#}");
        assert!(ws[i].join(nested).join(".git").exists(), "{nested}");
    }
    // Kept as ordinary worktrees: registered, unlocked, which gc never removes.
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    for w in &ws {
        assert_has(&list, w.to_str().unwrap());
    }
    assert!(!list.contains("locked"), "{list}");
    env.delegate(&repo, ["gc"]).expect(0);
    assert!(ws[0].join("sub/.git").is_dir() && ws[1].join("deps/lib/.git").exists());

    // The same in human text, with the command that removes it, which works
    // as printed.
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);
    let run = env
        .delegate(&repo, ["apply", "--discard", "1", "--discard", "2"])
        .expect(0);
    assert_has(&run.stdout, "its workspace is kept as an ordinary worktree: it holds the git repository sub its worker made");
    assert_has(&run.stdout, "deps/lib");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("git worktree remove --force") && l.contains(ws[0].to_str().unwrap()))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let cmd = line
        .trim()
        .trim_start_matches("when you are done with it: ");
    assert!(cmd.starts_with("git worktree remove --force"), "{cmd}");
    // Run exactly as printed, through a shell, in git's hermetic environment.
    let git = env.git_cmd(&repo);
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c").arg(cmd).current_dir(&repo).env_clear();
    for (k, v) in git.get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    assert!(sh.status().unwrap().success(), "{cmd}");
    assert!(!ws[0].exists());
}

/// `apply --dry-run --discard` names the nested repository the discard
/// would remove, and removes nothing.
#[test]
fn a_dry_run_discard_names_the_nested_repository_that_would_keep_its_workspace() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    nested_repositories(&env, &ws);
    let out = apply(&env, &repo, &["--dry-run", "--discard", "1"], 1);
    assert_eq!(task(&out, "1")["status"], "discarded", "{out:#}");
    assert_eq!(
        strings(&task(&out, "1")["nested_repositories"]),
        ["sub"],
        "{out:#}"
    );
    let run = env
        .delegate(&repo, ["apply", "--dry-run", "--discard", "1"])
        .expect(1);
    assert_has(
        &run.stdout,
        "its workspace would be kept as an ordinary worktree: it holds the git repository sub",
    );
    assert!(ws[0].join("sub/.git").is_dir());
}

/// An agent runs `git delegate prepare` inside its own workspace:
/// returns (outer batch id, the outer task's workspace, inner
/// batch id, the inner task's workspace).
fn nested_batches(env: &Env, repo: &Path) -> (String, PathBuf, String, PathBuf) {
    let (outer, ws) = prepare_roots(env, repo, &[]);
    std::fs::write(ws[0].join("outer.txt"), "outer work\n").unwrap();
    let (inner, inner_ws) = prepare_roots(env, &ws[0], &[]);
    assert_eq!(inner["source"], ws[0].to_str().unwrap());
    std::fs::write(inner_ws[0].join("inner.txt"), "inner work\n").unwrap();
    (id(&outer), ws[0].clone(), id(&inner), inner_ws[0].clone())
}

#[test]
fn apply_keeps_a_workspace_that_is_the_source_of_another_open_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    let out = apply(&env, &repo, &[&outer], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("outer.txt")), "outer work\n");
    assert_eq!(out["kept_workspaces"][0]["task"], "1", "{out:#}");
    assert_eq!(out["kept_workspaces"][0]["workspace"], ws.to_str().unwrap());
    assert_eq!(out["kept_workspaces"][0]["batches"][0], inner.as_str());
    // The inner batch's source is still there, as an ordinary worktree,
    // and the inner batch still applies into it.
    assert_eq!(read_lossy(&ws.join("outer.txt")), "outer work\n");
    assert!(worktree_list(&env, &repo).contains(ws.to_str().unwrap()));
    let out = apply(&env, &ws, &[&inner], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&ws.join("inner.txt")), "inner work\n");
    assert!(!repo.join("inner.txt").exists());
}

#[test]
fn drop_refuses_then_keeps_a_workspace_that_is_the_source_of_another_open_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    std::fs::remove_file(ws.join("outer.txt")).unwrap(); // no unapplied work
    let doc = env
        .delegate(&repo, ["drop", &outer, "--json"])
        .expect(1)
        .json();
    assert_eq!(doc["dropped"], false, "{doc:#}");
    assert_eq!(doc["unapplied"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["hosts_open_batches"][0]["batches"][0], inner.as_str());
    assert!(ws.join(".git").is_file());
    let doc = env
        .delegate(&repo, ["drop", &outer, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["dropped"], true);
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(doc["kept_workspaces"][0]["workspace"], ws.to_str().unwrap());
    assert!(ws.join("README").is_file());
    let out = apply(&env, &ws, &[&inner], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_lossy(&ws.join("inner.txt")), "inner work\n");
}

/// The command the kept-workspace line suggests works as printed once the
/// inner batch is applied.
#[test]
fn the_command_to_remove_a_kept_workspace_works_as_printed() {
    let (env, repo) = Env::with_repo("proj");
    let (outer, ws, inner, _) = nested_batches(&env, &repo);
    let run = env.delegate(&repo, ["apply", &outer]).expect(0);
    let cmd = run
        .stdout
        .split('`')
        .find(|s| s.starts_with("git worktree remove"))
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .to_string();
    apply(&env, &ws, &[&inner], 0);
    // The inner batch's result is committed in the workspace, as a user
    // keeps it before removing the worktree.
    env.git(&ws, ["add", "-A"]);
    env.git(&ws, ["commit", "-q", "-m", "inner result"]);
    let mut git = env.git_cmd(&repo);
    git.args(["-c", "core.hooksPath=/dev/null"])
        .args(cmd.split_whitespace().skip(1));
    succeed_as(git, &cmd);
    assert!(!ws.exists());
}
