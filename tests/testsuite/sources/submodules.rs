//! Submodules, read-only (design §3.15): a superproject with a submodule
//! that has a nested submodule of its own, and one submodule that is not
//! initialized, all made with the git CLI; the upstreams are moved away
//! after cloning, so any use of the network (or of the submodule URLs)
//! fails.
use crate::common::files::read;
use crate::common::fixtures::id;

use crate::common::assert_has;
use crate::common::fixtures::{commit_files, prepare, roots};
use crate::common::Env;
use std::path::{Path, PathBuf};

/// `git submodule add -q URL PATH` in `dir` (file URLs allowed).
fn submodule_add(env: &Env, dir: &Path, url: &Path, path: &str) {
    env.git(
        dir,
        [
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            url.to_str().unwrap(),
            path,
        ],
    );
}

struct Fixture {
    env: Env,
    repo: PathBuf,
    /// `<super>/.git/modules/vendor/lib`
    lib_git: PathBuf,
    /// `<lib_git>/modules/deps/n`
    nested_git: PathBuf,
    lib_head: String,
    nested_head: String,
}

fn fixture() -> Fixture {
    let (env, nested) = Env::with_repo("nested-up");
    commit_files(&env, &nested, &[("n.txt", "nested\n")], "n");
    let lib = env.repo("lib-up");
    std::fs::write(lib.join("l.txt"), "lib\n").unwrap();
    env.git(&lib, ["add", "l.txt"]);
    submodule_add(&env, &lib, &nested, "deps/n");
    env.git(&lib, ["commit", "-q", "-m", "lib"]);
    let other = env.repo("other-up");
    let repo = env.repo("super");
    for (url, path) in [(&lib, "vendor/lib"), (&other, "vendor/other")] {
        submodule_add(&env, &repo, url, path);
    }
    env.git(&repo, ["commit", "-q", "-m", "submodules"]);
    env.git(
        &repo,
        [
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "update",
            "-q",
            "--init",
            "--recursive",
        ],
    );
    // vendor/other: not initialized (its gitlink stays, its folder is empty).
    env.git(&repo, ["submodule", "deinit", "-q", "-f", "vendor/other"]);
    // No upstream is reachable any more.
    for up in [&nested, &lib, &other] {
        let gone = up.with_file_name(format!(
            "{}-gone",
            up.file_name().unwrap().to_string_lossy()
        ));
        std::fs::rename(up, gone).unwrap();
    }
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
    let lib_git = repo.join(".git/modules/vendor/lib");
    let nested_git = lib_git.join("modules/deps/n");
    assert!(lib_git.join("HEAD").is_file() && nested_git.join("HEAD").is_file());
    let lib_head = env
        .git(&repo.join("vendor/lib"), ["rev-parse", "HEAD"])
        .trim()
        .to_string();
    let nested_head = env
        .git(&repo.join("vendor/lib/deps/n"), ["rev-parse", "HEAD"])
        .trim()
        .to_string();
    Fixture {
        env,
        repo,
        lib_git,
        nested_git,
        lib_head,
        nested_head,
    }
}

/// The worktrees `git worktree list --porcelain` lists for a repository
/// (its git dir), but its main one.
fn linked_worktrees(env: &Env, git_dir: &Path) -> Vec<String> {
    let out = crate::common::succeed(
        env.git_cmd(git_dir)
            .arg(format!("--git-dir={}", git_dir.display()))
            .args(["worktree", "list", "--porcelain"]),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn workspaces_hold_every_submodule_at_its_recorded_commit() {
    let f = fixture();
    let env = &f.env;
    let doc = prepare(env, &f.repo, &["-n", "2"]);
    // The baseline records the gitlinks at the submodules' commits.
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    let ls = env.git(&f.repo, ["ls-tree", "-r", baseline, "vendor"]);
    assert!(
        ls.contains(&format!("160000 commit {}\tvendor/lib", f.lib_head)),
        "{ls}"
    );
    assert!(
        ls.contains("160000 commit ") && ls.contains("\tvendor/other"),
        "{ls}"
    );
    for ws in roots(&doc) {
        let lib = ws.join("vendor/lib");
        let nested = lib.join("deps/n");
        assert_eq!(read(&lib.join("l.txt")), "lib\n");
        assert_eq!(read(&nested.join("n.txt")), "nested\n");
        // A linked worktree of the submodule's own repository, detached.
        assert!(lib.join(".git").is_file() && nested.join(".git").is_file());
        assert_eq!(env.git(&lib, ["rev-parse", "HEAD"]).trim(), f.lib_head);
        assert_eq!(
            env.git(&nested, ["rev-parse", "HEAD"]).trim(),
            f.nested_head
        );
        assert_eq!(
            PathBuf::from(env.git(&lib, ["rev-parse", "--git-common-dir"]).trim())
                .canonicalize()
                .unwrap(),
            f.lib_git.canonicalize().unwrap()
        );
        assert!(
            env.git_cmd(&lib)
                .args(["symbolic-ref", "-q", "HEAD"])
                .output()
                .unwrap()
                .status
                .code()
                == Some(1)
        );
        // Clean everywhere, as git sees it.
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
        assert_eq!(env.git(&lib, ["status", "--porcelain"]), "");
        assert_eq!(env.git(&nested, ["status", "--porcelain"]), "");
        // The uninitialized one is an empty folder, as git leaves it.
        let other = ws.join("vendor/other");
        assert!(other.is_dir());
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
    }
    // Registered in the submodules' repositories, locked.
    for git_dir in [&f.lib_git, &f.nested_git] {
        let listed = linked_worktrees(env, git_dir);
        assert_eq!(listed.len(), 2, "{listed:?}");
        for block in &listed {
            assert_has(block, "\ndetached");
            assert_has(block, "\nlocked git-delegate batch ");
        }
    }
    // The source's submodules are untouched.
    assert_eq!(env.git(&f.repo, ["status", "--porcelain"]), "");
    assert_eq!(
        env.git(&f.repo.join("vendor/lib"), ["status", "--porcelain"]),
        ""
    );

    // An untouched batch applies with no changes, and takes the
    // submodule worktrees with it.
    let run = env.delegate(&f.repo, ["apply", "--json"]).expect(0);
    for t in run.json()["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "no_changes", "{t}");
    }
    for git_dir in [&f.lib_git, &f.nested_git] {
        assert_eq!(linked_worktrees(env, git_dir), Vec::<String>::new());
        let regs = git_dir.join("worktrees");
        assert!(
            !regs.exists() || std::fs::read_dir(&regs).unwrap().count() == 0,
            "{}",
            regs.display()
        );
    }
    for ws in roots(&doc) {
        assert!(!ws.exists(), "{}", ws.display());
    }
}

#[test]
fn a_dirty_submodule_is_refused_naming_it() {
    let f = fixture();
    let env = &f.env;
    let nothing_made = |f: &Fixture| {
        assert_eq!(f.env.private_refs(&f.repo), Vec::<String>::new());
        assert!(!f.env.workspace_root().exists() || walk_files(&f.env.workspace_root()).is_empty());
        assert_eq!(linked_worktrees(&f.env, &f.lib_git), Vec::<String>::new());
    };
    // A tracked file modified in the submodule.
    let l = f.repo.join("vendor/lib/l.txt");
    std::fs::write(&l, "changed\n").unwrap();
    let run = env.delegate(&f.repo, ["prepare", "--json"]).expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::dirty_submodule");
    assert!(run.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("vendor/lib"));
    let run = env.delegate(&f.repo, ["prepare"]).expect(3);
    assert!(
        run.stderr.contains("vendor/lib") && run.stderr.contains("l.txt"),
        "{}",
        run.stderr
    );
    nothing_made(&f);
    std::fs::write(&l, "lib\n").unwrap();

    // In the nested one, named by its whole path.
    let n = f.repo.join("vendor/lib/deps/n/n.txt");
    std::fs::write(&n, "changed\n").unwrap();
    let run = env.delegate(&f.repo, ["prepare", "--json"]).expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::dirty_submodule");
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("vendor/lib/deps/n"),
        "{}",
        run.stdout
    );
    nothing_made(&f);
    std::fs::write(&n, "nested\n").unwrap();

    // A submodule whose HEAD is not the commit the superproject records.
    let lib = f.repo.join("vendor/lib");
    env.git(&lib, ["commit", "-q", "--allow-empty", "-m", "moved"]);
    let run = env.delegate(&f.repo, ["prepare", "--json"]).expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::dirty_submodule");
    nothing_made(&f);
    env.git(&lib, ["checkout", "-q", "--detach", &f.lib_head]);

    // Untracked files inside a submodule do not make it dirty (design §3.15).
    std::fs::write(lib.join("untracked.txt"), "mine\n").unwrap();
    let doc = prepare(env, &f.repo, &[]);
    let ws = &roots(&doc)[0];
    assert!(!ws.join("vendor/lib/untracked.txt").exists());
    assert_eq!(read(&lib.join("untracked.txt")), "mine\n");
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_task_that_changes_a_submodule_conflicts_and_keeps_its_work() {
    let f = fixture();
    let env = &f.env;
    let doc = env
        .delegate(
            &f.repo,
            [
                "prepare",
                "edit-sub",
                "nested-new",
                "moved",
                "plain",
                "--json",
            ],
        )
        .expect(0)
        .json();
    let ws = roots(&doc);
    // edit-sub: a submodule file and a superproject file.
    std::fs::write(ws[0].join("vendor/lib/l.txt"), "worker\n").unwrap();
    std::fs::write(ws[0].join("README"), "edited by edit-sub\n").unwrap();
    // nested-new: only a new (untracked) file in the nested submodule.
    std::fs::write(ws[1].join("vendor/lib/deps/n/new.txt"), "new\n").unwrap();
    // moved: a commit in the submodule worktree.
    env.git(
        &ws[2].join("vendor/lib"),
        ["commit", "-q", "--allow-empty", "-m", "w"],
    );
    // plain: only superproject files.
    std::fs::write(ws[3].join("plain.txt"), "plain\n").unwrap();

    // The dry run and `diff --source` say what apply will do.
    let dry = env
        .delegate(&f.repo, ["apply", "--dry-run", "--json"])
        .expect(1)
        .json();
    let preview = env.delegate(&f.repo, ["diff", "--source", "--json"]).json();
    for doc in [&dry, &preview] {
        let tasks = doc["tasks"].as_array().unwrap();
        for name in ["edit-sub", "nested-new", "moved"] {
            let t = tasks.iter().find(|t| t["name"] == name).unwrap();
            assert_eq!(t["reason"], "submodule_changed", "{doc}");
        }
    }
    let run = env.delegate(&f.repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let tasks = out["tasks"].as_array().unwrap();
    let by = |name: &str| tasks.iter().find(|t| t["name"] == name).unwrap().clone();
    for (name, path) in [
        ("edit-sub", "vendor/lib"),
        ("nested-new", "vendor/lib/deps/n"),
        ("moved", "vendor/lib"),
    ] {
        let t = by(name);
        assert_eq!(t["status"], "conflict", "{t}");
        assert_eq!(t["reason"], "submodule_changed", "{t}");
        assert_eq!(t["conflicts"][0]["path"], path, "{t}");
        assert_eq!(t["applied_paths"], serde_json::json!([]), "{t}");
    }
    // Its superproject work is recorded; none of it applied.
    let edit = by("edit-sub");
    assert_eq!(
        edit["proposed_paths"],
        serde_json::json!(["README"]),
        "{edit}"
    );
    assert!(edit["proposal_ref"].is_string() && edit["patch"].is_string());
    assert_eq!(read(&f.repo.join("README")), "hello\n");
    assert_eq!(by("plain")["status"], "applied");
    assert_eq!(read(&f.repo.join("plain.txt")), "plain\n");
    // apply never writes into the source's submodules.
    assert_eq!(read(&f.repo.join("vendor/lib/l.txt")), "lib\n");
    assert_eq!(
        env.git(&f.repo.join("vendor/lib"), ["status", "--porcelain"]),
        ""
    );
    assert_eq!(
        env.git(&f.repo.join("vendor/lib"), ["rev-parse", "HEAD"])
            .trim(),
        f.lib_head
    );
    assert!(!f.repo.join("vendor/lib/deps/n/new.txt").exists());
    // The work is kept in the workspaces, as the worker left it.
    assert_eq!(read(&ws[0].join("vendor/lib/l.txt")), "worker\n");
    assert_eq!(read(&ws[1].join("vendor/lib/deps/n/new.txt")), "new\n");
    assert!(!ws[3].exists());
    // The applied task's submodule worktrees went with its workspace.
    let plain_ws = ws[3].to_string_lossy().into_owned();
    for git_dir in [&f.lib_git, &f.nested_git] {
        let listed = linked_worktrees(env, git_dir);
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert!(listed.iter().all(|b| !b.contains(&plain_ws)), "{listed:?}");
    }
    // Applying again changes nothing: the work stays.
    env.delegate(&f.repo, ["apply", "--json"]).expect(1);
    assert_eq!(read(&ws[0].join("vendor/lib/l.txt")), "worker\n");

    // drop --force removes the workspaces and every submodule registration.
    let batch = doc["batch"].as_str().unwrap();
    env.delegate(&f.repo, ["drop", batch, "--force", "--json"])
        .expect(0);
    for git_dir in [&f.lib_git, &f.nested_git] {
        assert_eq!(linked_worktrees(env, git_dir), Vec::<String>::new());
    }
    for w in &ws {
        assert!(!w.exists(), "{}", w.display());
    }
    // The submodules' repositories are whole: no object or ref was lost.
    env.git(&f.repo.join("vendor/lib"), ["fsck", "--no-progress"]);
    assert_eq!(
        env.git(&f.repo, ["status", "--porcelain"]),
        "?? plain.txt\n"
    );
}

#[test]
fn submodule_work_blocks_drop_and_survives_gc() {
    let f = fixture();
    let env = &f.env;
    let doc = prepare(env, &f.repo, &["--ttl", "1s"]);
    let batch = id(&doc);
    let ws = roots(&doc).remove(0);
    std::fs::write(ws.join("vendor/lib/l.txt"), "worker\n").unwrap();
    // Only submodule work: drop refuses without --force.
    let run = env.delegate(&f.repo, ["drop", &batch, "--json"]).expect(1);
    assert!(
        run.stdout.contains(&batch) || run.stderr.contains("unapplied"),
        "{}",
        run.stdout
    );
    assert!(ws.join("vendor/lib/l.txt").exists());
    // gc of the stale batch keeps the workspace (unlocked, registered) and says why.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let out = loop {
        let out = env.delegate(&f.repo, ["gc", "--json"]).json();
        if out["batches"].as_array().is_some_and(|b| !b.is_empty()) {
            break out;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the batch never went stale"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    let kept = &out["kept_workspaces"][0];
    assert_eq!(
        kept["changed_submodules"],
        serde_json::json!(["vendor/lib"]),
        "{out}"
    );
    assert_eq!(read(&ws.join("vendor/lib/l.txt")), "worker\n");
    // The submodule worktree stays registered, no longer locked.
    let listed = linked_worktrees(env, &f.lib_git);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(!listed[0].contains("\nlocked"), "{}", listed[0]);
    assert_eq!(
        env.git(&ws.join("vendor/lib"), ["diff", "--name-only"]),
        "l.txt\n"
    );
}

#[test]
fn a_submodule_with_its_repository_inside_its_folder_is_refused_until_absorbed() {
    let (env, up) = Env::with_repo("up");
    let repo = env.repo("super");
    env.git(&repo, ["clone", "-q", up.to_str().unwrap(), "deps/sub"]);
    // `submodule add` of a repository already in place keeps its `.git` folder there.
    submodule_add(&env, &repo, &up, "deps/sub");
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    assert!(repo.join("deps/sub/.git").is_dir());
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    let err = &run.json()["error"];
    assert_eq!(err["code"], "delegate::submodules");
    assert!(
        err["message"].as_str().unwrap().contains("deps/sub"),
        "{err}"
    );
    assert!(err["help"]
        .as_str()
        .unwrap()
        .contains("git submodule absorbgitdirs"));
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    // The help, followed literally, works.
    env.git(&repo, ["submodule", "absorbgitdirs"]);
    let doc = prepare(&env, &repo, &[]);
    let ws = roots(&doc).remove(0);
    assert_eq!(read(&ws.join("deps/sub/README")), "hello\n");
}

#[test]
fn refresh_and_apply_leave_submodules_alone() {
    let f = fixture();
    let env = &f.env;
    let run = env.delegate(&f.repo, ["prepare", "--json"]).expect(0);
    // The submodules' `.git` files are no nested repositories to warn about.
    assert!(!run.stderr.contains("of its own"), "{}", run.stderr);
    let ws = roots(&run.json()).remove(0);
    std::fs::write(f.repo.join("README"), "user\n").unwrap();
    std::fs::write(ws.join("task.txt"), "task\n").unwrap();
    let doc = env
        .delegate(&f.repo, ["refresh", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["state"], "open", "{doc}");
    assert_eq!(read(&ws.join("README")), "user\n");
    assert_eq!(
        env.git(&ws.join("vendor/lib"), ["status", "--porcelain"]),
        ""
    );
    assert_eq!(
        env.git(&ws.join("vendor/lib"), ["rev-parse", "HEAD"])
            .trim(),
        f.lib_head
    );
    let out = env.delegate(&f.repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(out["tasks"][0]["status"], "applied", "{out}");
    assert_eq!(out["applied_paths"], serde_json::json!(["task.txt"]));
    assert_eq!(
        env.git(&f.repo, ["status", "--porcelain"]),
        " M README\n?? task.txt\n"
    );
    assert_eq!(linked_worktrees(env, &f.lib_git), Vec::<String>::new());
    assert_eq!(linked_worktrees(env, &f.nested_git), Vec::<String>::new());
}

#[test]
fn verification_workspaces_hold_the_submodules_too() {
    let f = fixture();
    let env = &f.env;
    let doc = prepare(env, &f.repo, &[]);
    let ws = roots(&doc).remove(0);
    std::fs::write(ws.join("task.txt"), "task\n").unwrap();
    let cmd = "test -f task.txt && test \"$(cat vendor/lib/l.txt)\" = lib && test -f vendor/lib/deps/n/n.txt && test -z \"$(git -C vendor/lib status --porcelain)\"";
    let out = env
        .delegate(&f.repo, ["apply", "--json", "--verify", cmd])
        .expect(0)
        .json();
    assert_eq!(out["verify"]["outcome"], "passed", "{out}");
    assert_eq!(out["tasks"][0]["status"], "applied", "{out}");
    for git_dir in [&f.lib_git, &f.nested_git] {
        assert_eq!(linked_worktrees(env, git_dir), Vec::<String>::new());
    }
}

#[test]
fn a_prepare_that_cannot_register_a_submodule_worktree_is_undone() {
    let f = fixture();
    let env = &f.env;
    let id = "0b1e5c6a-0000-4000-8000-000000000001";
    // Someone else's registration under the name task 2's would get.
    let stale = f.lib_git.join("worktrees/delegate-0b1e5c6a-2");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("gitdir"), "/nowhere/.git\n").unwrap();
    let run = Env::delegate_cmd(env, &f.repo)
        .env("GIT_DELEGATE_TEST_BATCH_ID", id)
        .args(["prepare", "-n", "2", "--json"])
        .output()
        .unwrap();
    let run = crate::common::Run::from(run).expect(2);
    let err = &run.json()["error"];
    assert_eq!(err["code"], "delegate::workspace_exists", "{err}");
    assert!(err["message"]
        .as_str()
        .unwrap()
        .contains("delegate-0b1e5c6a-2"));
    // Nothing made is left: no refs, no workspace, no registration (task 1's
    // in both submodule repositories went with the undo); the stale one stays.
    assert_eq!(env.private_refs(&f.repo), Vec::<String>::new());
    assert!(walk_files(&env.workspace_root()).is_empty());
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir.join("worktrees"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(names(&f.lib_git), vec!["delegate-0b1e5c6a-2".to_string()]);
    assert_eq!(names(&f.nested_git), Vec::<String>::new());
    assert_eq!(read(&stale.join("gitdir")), "/nowhere/.git\n");
    // The help, followed literally, clears the way.
    let help = err["help"].as_str().unwrap();
    let cmd = help.split('`').nth(3).unwrap();
    env.sh(&f.repo, cmd).expect(0);
    Env::delegate_cmd(env, &f.repo)
        .env("GIT_DELEGATE_TEST_BATCH_ID", id)
        .args(["prepare", "-n", "2", "--json"])
        .status()
        .unwrap()
        .success()
        .then_some(())
        .expect("prepare after the help");
}

/// The commands a help quotes (between backticks) that hold every one of `words`.
fn quoted_command(help: &str, words: &[&str]) -> String {
    let found: Vec<&str> = help
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| words.iter().all(|w| c.contains(w)))
        .collect();
    assert_eq!(found.len(), 1, "one `{words:?}` command in: {help}");
    found[0].to_string()
}

fn refusal(env: &Env, repo: &Path) -> (String, String) {
    let doc = env.delegate(repo, ["prepare", "--json"]).expect(3).json();
    assert_eq!(doc["error"]["code"], "delegate::dirty_submodule", "{doc}");
    let s = |k: &str| doc["error"][k].as_str().unwrap().to_string();
    (s("message"), s("help"))
}

/// design §3.16 "Hints": a submodule refusal's help works as printed, for
/// a nested submodule too (`git -C PARENT add NESTED`: `git add
/// vendor/lib/deps/n` from the top fails, the path is in vendor/lib's
/// index). Another commit checked out in a submodule, with no file
/// changed, is named as that, not as uncommitted changes.
#[test]
fn submodule_refusal_hints_work_as_printed() {
    let f = fixture();
    let env = &f.env;
    let lib = f.repo.join("vendor/lib");
    let n = lib.join("deps/n");
    let prepare_ok = |env: &Env| {
        let doc = prepare(env, &f.repo, &[]);
        let id = id(&doc);
        let ws = roots(&doc)[0].clone();
        (id, ws)
    };
    env.git(&n, ["commit", "-q", "--allow-empty", "-m", "moved"]);
    let moved = env.git(&n, ["rev-parse", "HEAD"]).trim().to_string();

    // Check the recorded commit out again, as printed.
    let (message, help) = refusal(env, &f.repo);
    assert_has(&message, "vendor/lib/deps/n");
    assert!(message.contains(&moved[..12]), "{message}");
    assert_has(&message, "checked out");
    assert!(!message.contains("uncommitted"), "{message}");
    env.sh(&f.repo, &quoted_command(&help, &["checkout"]))
        .expect(0);
    assert_eq!(env.git(&n, ["rev-parse", "HEAD"]).trim(), f.nested_head);
    let (id, _) = prepare_ok(env);
    env.delegate(&f.repo, ["drop", &id]).expect(0);

    // Or record it: in vendor/lib, as printed, then commit it there, then
    // record that in the superproject, as printed.
    env.git(&n, ["checkout", "-q", "--detach", &moved]);
    let (_, help) = refusal(env, &f.repo);
    let add = quoted_command(&help, &[" add "]);
    assert_has(&add, lib.to_str().unwrap());
    env.sh(&f.repo, &add).expect(0);
    let (message, help) = refusal(env, &f.repo);
    assert!(
        message.starts_with("the submodule vendor/lib has uncommitted changes"),
        "{message}"
    );
    assert_has(&help, "stash");
    env.git(&lib, ["commit", "-q", "-m", "nested moved"]);
    let (message, help) = refusal(env, &f.repo);
    assert!(
        message.starts_with("the submodule vendor/lib has commit"),
        "{message}"
    );
    let add = quoted_command(&help, &[" add "]);
    env.sh(&f.repo, &add).expect(0);
    let (id, ws) = prepare_ok(env);
    assert_eq!(
        env.git(&ws.join("vendor/lib/deps/n"), ["rev-parse", "HEAD"])
            .trim(),
        moved
    );
    env.delegate(&f.repo, ["drop", &id]).expect(0);

    // A file changed in the nested one: put aside as printed.
    std::fs::write(n.join("n.txt"), "changed\n").unwrap();
    let (message, help) = refusal(env, &f.repo);
    assert!(
        message.contains("vendor/lib/deps/n") && message.contains("n.txt"),
        "{message}"
    );
    env.sh(&f.repo, &quoted_command(&help, &["stash"]))
        .expect(0);
    prepare_ok(env);
}
