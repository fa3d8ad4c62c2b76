//! What `workspace.setup` made keeps working after a reuse, because a
//! workspace of the pool never moves (design §3.20): a virtual
//! environment's scripts (their `#!` names the interpreter by absolute
//! path) and an absolute symlink; and a setup failing on a reused
//! workspace costs that workspace alone, the other idle ones staying in
//! the pool, its error naming the task, its log and the likely cause.

use std::path::Path;

use super::{idle, repo};
use crate::common::files::read;
use crate::common::fixtures::{config, id, prepare, task_root};
use crate::common::procs::have;
use crate::common::Env;

/// Made once per workspace (later runs find them): a virtual environment
/// with a console script as pip writes them (`#!<venv>/bin/python`), and
/// an absolute symlink to the workspace's `src`.
const VENV_SETUP: &str = r#"set -e
mkdir -p build
if [ ! -d .venv ]; then
  python3 -m venv --without-pip .venv
  printf '#!%s/.venv/bin/python\nimport sys\nprint(sys.prefix)\n' "$PWD" > .venv/bin/hello
  chmod +x .venv/bin/hello
  ln -s "$PWD/src" build/src-link
  echo made >> build/made
fi
echo "$GIT_DELEGATE_TASK" >> build/runs
"#;

#[test]
fn a_venv_and_an_absolute_symlink_setup_made_still_work_after_reuse() {
    if !have("python3") {
        eprintln!("SKIPPED: no python3");
        return;
    }
    let env = Env::new();
    let repo = repo(&env, 2);
    std::fs::write(repo.join(".gitignore"), "build/\n.venv/\n").unwrap();
    env.git(&repo, ["commit", "-q", "-am", "ignore the venv"]);
    config(
        &env,
        &repo,
        &format!("[workspace]\npool = 2\nsetup = {VENV_SETUP:?}\n"),
    );
    let first = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&first, 0);
    let check = |ws: &Path, what: &str| {
        let out = std::process::Command::new(ws.join(".venv/bin/hello"))
            .output()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.status.success(), "{what}: {out:?}");
        let prefix = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(Path::new(&prefix), ws.join(".venv"), "{what}");
        assert_eq!(read(&ws.join("build/src-link/a.txt")), "a\n", "{what}");
    };
    check(&ws, "fresh");
    for round in 0..2 {
        env.delegate(&repo, ["apply"]).expect(0);
        let doc = prepare(&env, &repo, &["-n", "1"]);
        assert_eq!(task_root(&doc, 0), ws, "round {round}");
        check(&ws, &format!("reused, round {round}"));
        assert_eq!(read(&ws.join("build/made")), "made\n", "made once");
        assert_eq!(read(&ws.join("build/runs")).lines().count(), round + 2);
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    }
    env.delegate(&repo, ["apply"]).expect(0);
}

/// Fails for task 2 in a workspace an earlier setup ran in.
const STALE_SETUP: &str = r#"mkdir -p build
if [ "$GIT_DELEGATE_TASK" = 2 ] && [ -f build/done ]; then echo "stale cache in $PWD" >&2; exit 7; fi
touch build/done"#;

#[test]
fn a_setup_failing_on_a_reused_workspace_costs_that_workspace_only() {
    let env = Env::new();
    let repo = repo(&env, 3);
    config(
        &env,
        &repo,
        &format!("[workspace]\npool = 3\nsetup = {STALE_SETUP:?}\n"),
    );
    prepare(&env, &repo, &["-n", "3"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let before = idle(&env, &repo);
    assert_eq!(before.len(), 3);

    let run = env
        .delegate(&repo, ["prepare", "-n", "3", "--json"])
        .expect(3);
    let err = run.json();
    assert_eq!(err["error"]["code"], "delegate::setup_failed", "{err:#}");
    assert_eq!(err["error"]["task"], "2", "{err:#}");
    assert_eq!(err["error"]["reused"], true, "{err:#}");
    let log = err["error"]["log"].as_str().unwrap();
    assert!(read(Path::new(log)).contains("stale cache in"), "{log}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("taken from the pool"), "{message}");
    assert!(message.contains("stale cache"), "{message}");
    // That workspace is gone; the two others are idle again, where they were.
    let mut after = idle(&env, &repo);
    after.sort();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        after.iter().all(|p| before.contains(p)),
        "{after:?} {before:?}"
    );
    let gone: Vec<_> = before.iter().filter(|p| !after.contains(p)).collect();
    assert_eq!(gone.len(), 1);
    assert!(!gone[0].exists(), "{}", gone[0].display());
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"], serde_json::json!([]), "{status:#}");
    assert_eq!(status["idle_workspaces"], 2);
    super::assert_pool_whole(&env, &repo, "after the failed setup");

    // They are proven and reused as any idle workspace.
    config(&env, &repo, "[workspace]\npool = 3\n");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let mut roots: Vec<_> = (0..2).map(|i| task_root(&doc, i)).collect();
    roots.sort();
    assert_eq!(roots, after);
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
}
