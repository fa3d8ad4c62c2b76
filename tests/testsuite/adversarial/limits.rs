//! Adversarial cases: the process's own limits (see mod.rs). A command
//! that runs out of file descriptors (EMFILE: `ulimit -n`) says so and
//! names the limit, whichever step meets it, instead of calling a file
//! unreadable or a workspace not the one prepare made.

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
