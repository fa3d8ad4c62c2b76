//! The workspace pool (design §3.20): with `workspace.pool` on, a
//! workspace lives at a slot of the pool (`<base>/pool/<id>`) for its whole
//! life; those of tasks that ended applied, no_changes or discarded go
//! idle there (registered, locked `git-delegate pool`), and prepare reuses
//! them where they are, moved to the new baseline with their ignored files
//! in place and `workspace.setup` run again (`reuse`); one holding work is
//! never pooled; one swapped or written into while idle is never reused
//! with that content; gc trims the pool, `gc --pool` and `drop --pool`
//! empty it (`trim`); what setup made keeps working after a reuse, and a
//! setup failing on a reused workspace costs that one only (`setup`); a
//! kill at any step of parking or reusing leaves nothing gc does not clean
//! up (`killed`).

mod killed;
mod reuse;
mod setup;
mod trim;

use std::path::{Path, PathBuf};

use crate::common::fixtures::{commit_files, config, id, task_root};
use crate::common::Env;

/// Setup appends the task, batch and workspace to `build/setup.txt` (ignored).
pub const SETUP: &str = r#"mkdir -p build && echo "$GIT_DELEGATE_TASK $GIT_DELEGATE_BATCH $GIT_DELEGATE_WORKSPACE" >> build/setup.txt"#;

/// A repository ignoring `build/`, with a few files, and the pool on.
pub fn repo(env: &Env, pool: usize) -> PathBuf {
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
pub fn setup_line(doc: &serde_json::Value, i: usize) -> String {
    format!("{} {} {}\n", i + 1, id(doc), task_root(doc, i).display())
}

pub fn pool_config(env: &Env, repo: &Path, pool: usize, more: &str) {
    config(
        env,
        repo,
        &format!("[workspace]\npool = {pool}\nsetup = {SETUP:?}\n{more}"),
    );
}

/// The idle workspaces `git worktree list --porcelain` shows, with the
/// lock reason `git-delegate pool`.
pub fn idle(env: &Env, repo: &Path) -> Vec<PathBuf> {
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

pub fn idle_count(env: &Env, repo: &Path) -> u64 {
    let doc = env.delegate(repo, ["status", "--json"]).expect(0).json();
    doc["idle_workspaces"].as_u64().unwrap_or(0)
}

/// The pool is whole (no batch open): every record names `<base>/pool/<id>`
/// with its stat record beside it, a worktree registered as
/// `delegate-pool-<id>`, locked `git-delegate pool`, whose `.git` names
/// that registration; every pool folder and every registration has its
/// record. Returns the idle workspaces.
pub fn assert_pool_whole(env: &Env, repo: &Path, what: &str) -> Vec<PathBuf> {
    use crate::common::fixtures::{common_dir, names_in, registrations, workspace_base};
    let common = common_dir(env, repo);
    let pool = workspace_base(env, repo).join("pool");
    let mut ids = Vec::new();
    let names = names_in(&common.join("delegate/pool"));
    for name in names.iter().filter(|n| n.ends_with(".toml")) {
        let text = std::fs::read_to_string(common.join("delegate/pool").join(name)).unwrap();
        let rec: toml::Value = toml::from_str(&text).unwrap();
        let id = rec["id"].as_str().unwrap().to_string();
        assert_eq!(name, &format!("{id}.toml"), "{what}");
        // git-delegate's own stat record of it (design §3.20).
        assert!(names.contains(&format!("{id}.index")), "{what}");
        assert_eq!(Path::new(rec["root"].as_str().unwrap()), pool.join(&id));
        ids.push(id);
    }
    assert_eq!(names.len(), 2 * ids.len(), "stray files: {names:?} {what}");
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

/// `git delegate ARGS` in its own process group, paused at `point`
/// (test-only `GIT_DELEGATE_TEST_PAUSE`) and sent `sig` there: its output.
pub fn signalled_at(
    env: &Env,
    repo: &Path,
    args: &[&str],
    point: &str,
    sig: rustix::process::Signal,
) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut cmd = env.delegate_cmd(repo);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = crate::common::fixtures::paused_at(env, cmd, point);
    let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process_group(pgid, sig).unwrap();
    child.wait_with_output().unwrap()
}
