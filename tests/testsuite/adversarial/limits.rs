//! Adversarial cases: the process's own limits (see mod.rs). A command
//! that runs out of file descriptors (EMFILE: `ulimit -n`) says so and
//! names the limit, whichever step meets it, instead of calling a file
//! unreadable or a workspace not the one prepare made (`workspace::identify`
//! says `TooManyOpenFiles`, never `Replaced`, and apply fails with it).

use std::path::Path;

use serde_json::Value;

use crate::common::assert_has;
use crate::common::{Env, Run};

/// `git-delegate ARGS` in `dir` with its soft limit of open files at `n`.
fn with_open_files(env: &Env, dir: &Path, n: u32, args: &[&str]) -> Run {
    let out = env
        .command("sh", dir)
        .arg("-c")
        .arg(format!("ulimit -Sn {n} && exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_git-delegate"))
        .args(args)
        .output()
        .expect("run sh");
    Run::from(out)
}

#[test]
fn too_many_open_files_is_named_with_the_limit_and_nothing_is_made() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..50 {
        std::fs::write(repo.join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    crate::common::fixtures::commit_all(&env, &repo);
    std::fs::write(repo.join("f1"), "dirty\n").unwrap();
    for n in [4, 5, 6] {
        let run = with_open_files(&env, &repo, n, &["prepare", "-n", "2", "--json"]).expect(3);
        let doc: Value = run.json();
        let e = &doc["error"];
        assert_eq!(e["code"], "delegate::too_many_open_files", "{n}: {doc:#}");
        let message = e["message"].as_str().unwrap_or_default();
        assert_has(message, "too many open files (EMFILE, os error 24)");
        assert_has(message, &format!("at most {n} files open (`ulimit -n`)"));
        assert_has(e["help"].as_str().unwrap_or_default(), "`ulimit -n ");
        assert_has(&run.stderr, "delegate::too_many_open_files");
    }
    // Nothing was made: no batch is open, and the same prepare works with
    // the limit as it was.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"], Value::Array(vec![]), "{st:#}");
    env.delegate(&repo, ["prepare", "-n", "2"]).expect(0);
}

/// Apply under a limit of open files low enough to be met anywhere,
/// checking the task's workspace among others (design §3.18): wherever
/// it is met, apply exits 3 `delegate::too_many_open_files` naming the
/// limit, and nothing is removed or marked missing: never
/// `workspace_missing` for a workspace it could not open for want of a
/// file descriptor. With the limit raised step by step it lands the work.
#[test]
fn apply_out_of_open_files_names_the_limit_and_marks_no_workspace_missing() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..20 {
        std::fs::write(repo.join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    crate::common::fixtures::commit_all(&env, &repo);
    let doc = crate::common::fixtures::prepare(&env, &repo, &["-n", "2"]);
    let roots: Vec<std::path::PathBuf> = (0..2)
        .map(|i| crate::common::fixtures::task_root(&doc, i))
        .collect();
    std::fs::write(roots[0].join("f1"), "task one\n").unwrap();
    std::fs::write(roots[1].join("f2"), "task two\n").unwrap();
    let mut failed = 0;
    let mut landed = None;
    for n in 4..200u32 {
        let run = with_open_files(&env, &repo, n, &["apply", "--json"]);
        if run.code == 0 {
            landed = Some(run.json());
            break;
        }
        let doc: Value = run.json();
        assert_eq!(run.code, 3, "{n}: {doc:#}\n{}", run.stderr);
        let e = &doc["error"];
        assert_eq!(e["code"], "delegate::too_many_open_files", "{n}: {doc:#}");
        assert_has(
            e["message"].as_str().unwrap_or_default(),
            &format!("at most {n} files open (`ulimit -n`)"),
        );
        failed += 1;
        // Nothing removed, nothing marked missing: every task still open,
        // its workspace and its work where they were.
        for root in &roots {
            assert!(root.join(".git").exists(), "{n}: {}", root.display());
        }
        let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        let tasks = st["batches"][0]["tasks"].as_array().unwrap().clone();
        for t in &tasks {
            assert_eq!(t["state"], "open", "{n}: {st:#}");
        }
        assert_eq!(
            std::fs::read_to_string(roots[0].join("f1")).unwrap(),
            "task one\n"
        );
    }
    assert!(failed > 0, "apply never met the limit");
    let doc = landed.expect("apply never landed the work");
    for t in doc["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "applied", "{doc:#}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("f1")).unwrap(),
        "task one\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("f2")).unwrap(),
        "task two\n"
    );
}

/// `apply --discard` under a limit of open files low enough to be met:
/// it fails naming the limit, and no workspace is discarded unread.
#[test]
fn apply_discard_out_of_open_files_names_the_limit_and_discards_nothing() {
    let env = Env::new();
    let repo = env.repo("r");
    let doc = crate::common::fixtures::prepare(&env, &repo, &[]);
    let root = crate::common::fixtures::task_root(&doc, 0);
    std::fs::write(root.join("work.txt"), "work\n").unwrap();
    let mut failed = 0;
    for n in 4..200u32 {
        let run = with_open_files(&env, &repo, n, &["apply", "--json", "--discard", "1"]);
        if run.code == 0 {
            break;
        }
        let doc: Value = run.json();
        assert_eq!(run.code, 3, "{n}: {doc:#}\n{}", run.stderr);
        assert_eq!(
            doc["error"]["code"], "delegate::too_many_open_files",
            "{n}: {doc:#}"
        );
        failed += 1;
        assert_eq!(
            std::fs::read_to_string(root.join("work.txt")).unwrap(),
            "work\n",
            "{n}"
        );
    }
    assert!(failed > 0, "apply never met the limit");
}
