//! The workspace pool (design §3.20): workspaces of tasks that ended
//! applied, no_changes or discarded go idle (registered, locked `git-delegate
//! pool`), prepare reuses them moved to the new baseline with their ignored
//! files in place and `workspace.setup` run again; one holding work is never
//! pooled; one swapped or written into while idle is never reused with that
//! content; gc trims the pool, `gc --pool` and `drop --pool` empty it.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::common::fixtures::{config, id, prepare, task_root, tree_of, write};
use crate::common::Env;

/// Setup appends the task, batch and workspace to `build/setup.txt` (ignored).
const SETUP: &str = r#"mkdir -p build && echo "$GIT_DELEGATE_TASK $GIT_DELEGATE_BATCH $GIT_DELEGATE_WORKSPACE" >> build/setup.txt"#;

/// A repository ignoring `build/`, with a few files, and the pool on.
fn repo(env: &Env, pool: usize) -> PathBuf {
    let repo = env.repo("proj");
    commit_files(
        env,
        &repo,
        &[
            (".gitignore", "build/\n"),
            ("src/a.txt", "a\n"),
            ("src/deep/b.txt", "b\n"),
        ],
        "files",
    );
    pool_config(env, &repo, pool, "");
    repo
}

/// The line setup writes for task `i` (0-based) of batch `doc`.
fn setup_line(doc: &serde_json::Value, i: usize) -> String {
    format!("{} {} {}\n", i + 1, id(doc), task_root(doc, i).display())
}

fn pool_config(env: &Env, repo: &Path, pool: usize, more: &str) {
    config(
        env,
        repo,
        &format!("[workspace]\npool = {pool}\nsetup = {SETUP:?}\n{more}"),
    );
}

/// The idle workspaces `git worktree list --porcelain` shows, with the
/// lock reason `git-delegate pool`.
fn idle(env: &Env, repo: &Path) -> Vec<PathBuf> {
    let list = env.git(repo, ["worktree", "list", "--porcelain"]);
    list.split("\n\n")
        .filter(|b| b.lines().any(|l| l == "locked git-delegate pool"))
        .filter_map(|b| {
            b.lines()
                .next()?
                .strip_prefix("worktree ")
                .map(PathBuf::from)
        })
        .collect()
}

fn idle_count(env: &Env, repo: &Path) -> u64 {
    let doc = env.delegate(repo, ["status", "--json"]).expect(0).json();
    doc["idle_workspaces"].as_u64().unwrap_or(0)
}

#[test]
fn a_reused_workspace_holds_the_new_baseline_and_keeps_its_build_output() {
    let env = Env::new();
    let repo = repo(&env, 2);
    let first = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&first, 0);
    let setup = read(&ws.join("build/setup.txt"));
    assert_eq!(setup, setup_line(&first, 0));
    let build_ino = std::fs::metadata(ws.join("build/setup.txt")).unwrap().ino();
    // The worker edits, deletes and adds; its work is discarded.
    write(&ws.join("src/a.txt"), "worker\n");
    std::fs::remove_file(ws.join("src/deep/b.txt")).unwrap();
    write(&ws.join("worker-untracked.txt"), "mine\n");
    write(&ws.join("build/cache.o"), "object\n");
    env.delegate(&repo, ["apply", "--discard", "1"]).expect(0);
    assert!(!ws.exists(), "the workspace left its task's place");
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1, "{pooled:?}");
    assert_eq!(idle_count(&env, &repo), 1);
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(status.contains("1 idle workspace in the pool"), "{status}");

    // The user commits, edits without committing and adds an untracked file.
    write(&repo.join("src/new.txt"), "new\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "new"]);
    write(&repo.join("src/deep/b.txt"), "b edited\n");
    write(&repo.join("untracked.txt"), "user's\n");

    let second = prepare(&env, &repo, &["-n", "1"]);
    let ws2 = task_root(&second, 0);
    assert!(idle(&env, &repo).is_empty());
    assert_eq!(idle_count(&env, &repo), 0);
    let baseline = second["baseline"]["commit"].as_str().unwrap();
    // Exactly the new baseline; the ignored output is the same file.
    assert_eq!(env.oracle_tree(&ws2), tree_of(&env, &repo, baseline));
    assert_eq!(read(&ws2.join("src/a.txt")), "a\n");
    assert_eq!(read(&ws2.join("src/deep/b.txt")), "b edited\n");
    assert!(ws2.join("src/new.txt").exists() && ws2.join("untracked.txt").exists());
    assert!(!ws2.join("worker-untracked.txt").exists());
    let meta = std::fs::metadata(ws2.join("build/setup.txt")).unwrap();
    assert_eq!(meta.ino(), build_ino, "the build output was kept in place");
    assert!(ws2.join("build/cache.o").exists());
    // Setup ran again, once, in the reused workspace.
    let setup = read(&ws2.join("build/setup.txt"));
    let want = setup_line(&first, 0) + &setup_line(&second, 0);
    assert_eq!(setup, want, "setup ran in its new place");
    // git sees a clean tree with a valid stat cache: nothing to re-read.
    assert_eq!(env.git(&ws2, ["status", "--porcelain"]), "");
    let index = PathBuf::from(env.git(&ws2, ["rev-parse", "--git-path", "index"]).trim());
    let index = if index.is_absolute() {
        index
    } else {
        ws2.join(index)
    };
    let before = read_bytes(&index);
    assert!(env
        .git_cmd(&ws2)
        .args(["diff-files", "--quiet"])
        .status()
        .unwrap()
        .success());
    env.git(&ws2, ["status", "--porcelain"]);
    assert_eq!(read_bytes(&index), before, "status rewrote the index");
    env.git(&ws2, ["fsck", "--no-dangling", "--cache"]);
    let (tree, hashed) = crate::common::fixtures::snapshot(&env, &ws2);
    assert_eq!(
        (tree.as_str(), hashed),
        (tree_of(&env, &repo, baseline).as_str(), 0)
    );
    // It works as any workspace: its change applies.
    write(&ws2.join("src/a.txt"), "second worker\n");
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(read(&repo.join("src/a.txt")), "second worker\n");
    assert_eq!(idle(&env, &repo).len(), 1);
}

#[test]
fn idle_workspaces_are_locked_detached_worktrees_and_a_conflict_is_never_pooled() {
    let env = Env::new();
    let repo = repo(&env, 4);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let (ws1, ws2) = (task_root(&doc, 0), task_root(&doc, 1));
    write(&ws1.join("src/a.txt"), "task one\n");
    write(&repo.join("src/a.txt"), "the user's\n");
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(apply["tasks"][0]["status"], "conflict", "{apply:#}");
    // Task 2 (no changes) is idle; task 1 keeps its workspace.
    assert!(ws1.join("src/a.txt").exists());
    assert!(!ws2.exists());
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    let block = list
        .split("\n\n")
        .find(|b| b.contains("locked git-delegate pool"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(block.lines().any(|l| l == "detached"), "{block}");
    let root = block
        .lines()
        .next()
        .unwrap()
        .strip_prefix("worktree ")
        .unwrap();
    let base = crate::common::fixtures::workspace_base(&env, &repo);
    assert_eq!(Path::new(root).parent().unwrap(), base.join("pool"));
    assert_eq!(idle(&env, &repo).len(), 1);
    // Dropping the conflicting batch removes its workspace; it never goes idle.
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    assert!(!ws1.exists());
    assert_eq!(idle(&env, &repo).len(), 1);
}

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

#[test]
fn a_workspace_swapped_or_written_into_while_idle_is_not_reused() {
    let env = Env::new();
    let repo = repo(&env, 4);
    prepare(&env, &repo, &["-n", "4"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 4);
    let outside = env.path().join("outside");
    write(&outside.join("keep.txt"), "not yours\n");
    // Written into: a tracked file, an untracked file, a symlink planted
    // where a folder was, a nested repository.
    write(&pooled[0].join("src/a.txt"), "planted\n");
    write(&pooled[1].join("planted.txt"), "planted\n");
    std::fs::remove_dir_all(pooled[2].join("src/deep")).unwrap();
    std::os::unix::fs::symlink(&outside, pooled[2].join("src/deep")).unwrap();
    env.git(&pooled[3], ["init", "-q", "src/nested"]);
    write(&pooled[3].join("src/nested/x"), "x\n");

    let doc = prepare(&env, &repo, &["-n", "4"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    for i in 0..4 {
        let ws = task_root(&doc, i);
        assert_eq!(
            env.oracle_tree(&ws),
            tree_of(&env, &repo, baseline),
            "{}",
            ws.display()
        );
        assert!(!ws.join("planted.txt").exists());
        assert!(!ws.join("src/nested").exists());
        assert!(ws.join("src/deep").symlink_metadata().unwrap().is_dir());
        // A new workspace: its setup output holds this prepare's line only.
        let setup = read(&ws.join("build/setup.txt"));
        assert_eq!(setup, setup_line(&doc, i), "{}", ws.display());
    }
    for p in &pooled {
        assert!(!p.exists(), "{} was removed", p.display());
    }
    assert_eq!(read(&outside.join("keep.txt")), "not yours\n");
    env.delegate(&repo, ["apply"]).expect(0);

    // Swapped: a copy put in its place (another inode) is left alone.
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 4);
    let aside = env.path().join("aside");
    std::fs::rename(&pooled[0], &aside).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&aside)
        .arg(&pooled[0])
        .status()
        .unwrap();
    assert!(copied.success());
    write(&pooled[0].join("src/a.txt"), "the copy\n");
    let doc = prepare(&env, &repo, &["-n", "4"]);
    let mut reused = 0;
    for i in 0..4 {
        let ws = task_root(&doc, i);
        assert_eq!(read(&ws.join("src/a.txt")), "a\n");
        let setup = read(&ws.join("build/setup.txt"));
        reused += usize::from(setup.lines().count() == 2);
    }
    assert_eq!(
        reused, 3,
        "the three idle workspaces left as they were are reused"
    );
    assert_eq!(
        read(&pooled[0].join("src/a.txt")),
        "the copy\n",
        "a folder that is not the one pooled is left alone"
    );
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
}

#[test]
fn the_pool_works_with_btrfs_snapshot_workspaces() {
    let Some(env) =
        crate::common::mounts::btrfs_env("the_pool_works_with_btrfs_snapshot_workspaces")
    else {
        return;
    };
    let repo = repo(&env, 1);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    // Build output each worker made (snapshots share inode numbers, and
    // subvolumes' device numbers are reused: the files tell them apart).
    for i in 0..2 {
        write(&task_root(&doc, i).join("build/who"), &format!("{i}\n"));
    }
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 1);
    write(&repo.join("src/a.txt"), "changed\n");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    let mut reused = 0;
    for i in 0..2 {
        let ws = task_root(&doc, i);
        assert_eq!(env.oracle_tree(&ws), tree_of(&env, &repo, baseline));
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
        reused += usize::from(ws.join("build/who").exists());
        assert_eq!(read(&ws.join("src/a.txt")), "changed\n");
        let lines = read(&ws.join("build/setup.txt"));
        assert!(lines.ends_with(&setup_line(&doc, i)), "{lines}");
    }
    assert_eq!(reused, 1, "one workspace came from the pool");
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(idle(&env, &repo).len(), 1);
    let drop = env
        .delegate(&repo, ["drop", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(drop["idle_workspaces_removed"], 1);
    assert!(idle(&env, &repo).is_empty());
}

#[test]
fn a_bad_pool_value_points_at_its_line() {
    let env = Env::new();
    let repo = env.repo("proj");
    for (text, at) in [
        ("[workspace]\npool = \"many\"\n", "delegate.toml:2:8"),
        ("[workspace]\npool = -1\n", "delegate.toml:2:8"),
        (
            "[workspace]\npool = 2\npool-ttl = \"soon\"\n",
            "delegate.toml:3:12",
        ),
    ] {
        config(&env, &repo, text);
        let run = env.delegate(&repo, ["prepare", "-n", "1"]).expect(2);
        assert!(run.stderr.contains(at), "{text}: {}", run.stderr);
        assert!(run.stderr.contains("delegate::config"), "{}", run.stderr);
    }
}

#[test]
fn worker_state_in_the_registration_keeps_a_workspace_out_and_gc_takes_unrecorded_idle_ones() {
    let env = Env::new();
    let repo = repo(&env, 4);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    // Task 1's worker left a merge under way in its registration.
    let git_dir = PathBuf::from(
        env.git(&task_root(&doc, 0), ["rev-parse", "--absolute-git-dir"])
            .trim(),
    );
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    std::fs::write(git_dir.join("MERGE_HEAD"), head).unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1, "{pooled:?}");
    assert!(!git_dir.exists(), "its workspace was removed");
    // An idle workspace whose record is gone (a park killed half-way) is gc's.
    let common = crate::common::fixtures::common_dir(&env, &repo);
    for e in std::fs::read_dir(common.join("delegate/pool")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    assert_eq!(idle_count(&env, &repo), 0);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["idle_workspaces_removed"], 1, "{gc:#}");
    assert!(!pooled[0].exists());
    assert!(idle(&env, &repo).is_empty());
}

#[test]
fn an_idle_workspace_hosting_a_batch_is_neither_reused_nor_removed() {
    let env = Env::new();
    let repo = repo(&env, 2);
    prepare(&env, &repo, &["-n", "1"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1);
    // Someone prepares a batch inside the idle workspace.
    let inner = prepare(&env, &pooled[0], &["-n", "1"]);
    write(&pooled[0].join("src/a.txt"), "the inner batch's source\n");
    let outer = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&outer, 0);
    assert_eq!(read(&ws.join("src/a.txt")), "a\n");
    let gc = env
        .delegate(&repo, ["gc", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(gc["idle_workspaces_removed"], 0, "{gc:#}");
    assert_eq!(
        read(&pooled[0].join("src/a.txt")),
        "the inner batch's source\n"
    );
    env.delegate(&pooled[0], ["drop", &id(&inner), "--force"])
        .expect(0);
    let gc = env
        .delegate(&repo, ["gc", "--pool", "--json"])
        .expect(0)
        .json();
    assert_eq!(gc["idle_workspaces_removed"], 1, "{gc:#}");
    assert!(!pooled[0].exists());
    env.delegate(&repo, ["drop", &id(&outer)]).expect(0);
}

/// `git delegate apply` in its own process group, paused at `point`
/// (test-only `GIT_DELEGATE_TEST_PAUSE`) and sent `sig` there: its output.
fn apply_signalled_at(
    env: &Env,
    repo: &Path,
    point: &str,
    sig: rustix::process::Signal,
) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut apply = env.delegate_cmd(repo);
    apply
        .arg("apply")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = crate::common::fixtures::paused_at(env, apply, point);
    let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process_group(pgid, sig).unwrap();
    child.wait_with_output().unwrap()
}

/// The pool is whole: every record names `<base>/pool/<id>`, a worktree
/// registered as `delegate-pool-<id>`, locked `git-delegate pool`, whose
/// `.git` names that registration; every pool folder and every
/// registration has its record. Returns the idle workspaces.
fn assert_pool_whole(env: &Env, repo: &Path, what: &str) -> Vec<PathBuf> {
    use crate::common::fixtures::{common_dir, names_in, registrations, workspace_base};
    let common = common_dir(env, repo);
    let pool = workspace_base(env, repo).join("pool");
    let mut ids = Vec::new();
    let names = names_in(&common.join("delegate/pool"));
    for name in names.iter().filter(|n| n.ends_with(".toml")) {
        let text = std::fs::read_to_string(common.join("delegate/pool").join(&name)).unwrap();
        let rec: toml::Value = toml::from_str(&text).unwrap();
        let id = rec["id"].as_str().unwrap().to_string();
        assert_eq!(name, &format!("{id}.toml"), "{what}");
        // git-delegate's own stat record of it (design §3.20).
        assert!(names.contains(&format!("{id}.index")), "{what}");
        assert_eq!(Path::new(rec["root"].as_str().unwrap()), pool.join(&id));
        ids.push(id);
    }
    ids.sort();
    let regs: Vec<String> = ids.iter().map(|i| format!("delegate-pool-{i}")).collect();
    assert_eq!(registrations(&common), regs, "registrations: {what}");
    assert_eq!(names_in(&pool), ids, "pool folders: {what}");
    let roots: Vec<PathBuf> = ids.iter().map(|i| pool.join(i)).collect();
    let mut locked = idle(env, repo);
    locked.sort();
    assert_eq!(locked, roots, "locked idle worktrees: {what}");
    for (id, root) in ids.iter().zip(&roots) {
        let dotgit = std::fs::read_to_string(root.join(".git")).unwrap();
        let want = common.join("worktrees").join(format!("delegate-pool-{id}"));
        assert_eq!(dotgit, format!("gitdir: {}\n", want.display()), "{what}");
    }
    roots
}

/// Apply is killed (SIGKILL) or interrupted (Ctrl-C) while it parks the
/// workspaces of its two tasks: at each step of moving the first one into
/// the pool. The applied work is in the source; gc afterwards leaves only
/// whole idle workspaces (none half-parked, no registration or folder of
/// the batch); a prepare then reuses them or makes fresh ones, each clean;
/// and emptying the pool leaves nothing.
#[test]
fn an_apply_killed_or_interrupted_while_parking_loses_no_workspace_half_way() {
    use crate::common::fixtures::{
        batch_folders, common_dir, names_in, registrations, workspace_base,
    };
    use rustix::process::Signal;
    let points = [
        "pool-registration-renamed",
        "pool-park-registered",
        "pool-park-moved",
        "pool-park-unrecorded",
    ];
    for (point, sig) in points
        .iter()
        .map(|p| (*p, Signal::KILL))
        .chain(points.iter().map(|p| (*p, Signal::INT)))
    {
        let env = Env::new();
        let repo = repo(&env, 4);
        let doc = prepare(&env, &repo, &["-n", "2"]);
        write(&task_root(&doc, 0).join("src/a.txt"), "task one\n");
        write(&task_root(&doc, 1).join("src/deep/b.txt"), "task two\n");
        let out = apply_signalled_at(&env, &repo, point, sig);
        let what = format!("{point} {sig:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            std::fs::read_to_string(repo.join("src/a.txt")).unwrap(),
            "task one\n",
            "{what}"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("src/deep/b.txt")).unwrap(),
            "task two\n",
            "{what}"
        );
        if sig == Signal::KILL {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(out.status.signal(), Some(9), "{what}");
            // The killed apply's clean-up is the next one's.
            env.delegate(&repo, ["apply"]).expect(0);
        } else {
            // Past the commit point: finished, said so, exit 1 (design §7 "Signals").
            assert_eq!(out.status.code(), Some(1), "{what}");
        }
        env.delegate(&repo, ["gc"]).expect(0);
        let common = common_dir(&env, &repo);
        let whole = assert_pool_whole(&env, &repo, &what);
        // Task 2's workspace goes idle in any case (by the next apply after a
        // kill); Ctrl-C only asks, so task 1's goes idle as well.
        let want = if sig == Signal::KILL { 1..=2 } else { 2..=2 };
        assert!(want.contains(&whole.len()), "{whole:?} {what}");
        assert_eq!(batch_folders(&common), Vec::<String>::new(), "{what}");
        let base = workspace_base(&env, &repo);
        let left: Vec<String> = names_in(&base)
            .into_iter()
            .filter(|n| n != "pool")
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{what}");
        // The next prepare reuses the idle ones or makes fresh ones: each clean.
        let next = prepare(&env, &repo, &["-n", "2"]);
        let tree = tree_of(&env, &repo, next["baseline"]["commit"].as_str().unwrap());
        let mut reused = 0;
        for i in 0..2 {
            let ws = task_root(&next, i);
            assert_eq!(env.git(&ws, ["status", "--porcelain"]), "", "{what}");
            assert_eq!(env.oracle_tree(&ws), tree, "{what}");
            let setup = std::fs::read_to_string(ws.join("build/setup.txt")).unwrap();
            reused += usize::from(setup.lines().count() == 2);
        }
        assert_eq!(reused, whole.len().min(2), "{what}");
        env.delegate(&repo, ["apply"]).expect(0);
        env.delegate(&repo, ["drop", "--pool"]).expect(0);
        assert_eq!(assert_pool_whole(&env, &repo, &what), Vec::<PathBuf>::new());
        assert_eq!(registrations(&common), Vec::<String>::new(), "{what}");
        assert!(!base.join("pool").exists(), "{what}");
        assert_eq!(
            names_in(&common.join("delegate/pool")),
            Vec::<String>::new(),
            "{what}"
        );
    }
}
