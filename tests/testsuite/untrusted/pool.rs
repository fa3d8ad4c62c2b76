//! The pool's proof against a hostile worker (design §3.20, §3.18): the
//! stat data git-delegate trusts are its own record's, never the
//! worktree's index (which a worker forges: its new file's stat data
//! beside the old blob id), compared by fixed rules (ctime, inode, size,
//! mtime to the nanosecond) whatever `core.trustctime` and
//! `core.checkStat` say; and nothing is read or written through a
//! registration whose `commondir` a worker redirected to a copy of the
//! git dir.

use std::path::{Path, PathBuf};

use crate::common::files::read;
use crate::common::fixtures::{commit_files, config, id, prepare, task_root, write};
use crate::common::Env;

const BUILD: &str = "#!/bin/sh\necho building\n";
/// The same size as [`BUILD`].
const TAMPERED: &str = "#!/bin/sh\necho pwned!!!\n";

/// A repository with `build.sh`, ignoring `build/`, the pool on.
fn repo(env: &Env) -> PathBuf {
    assert_eq!(BUILD.len(), TAMPERED.len());
    let repo = env.repo("proj");
    commit_files(
        env,
        &repo,
        &[
            (".gitignore", "build/\n"),
            ("build.sh", BUILD),
            ("src/a.txt", "a\n"),
        ],
        "files",
    );
    config(env, &repo, "[workspace]\npool = 2\n");
    repo
}

/// The worktree's index file of `ws`.
fn index_of(env: &Env, ws: &Path) -> PathBuf {
    let p = PathBuf::from(env.git(ws, ["rev-parse", "--git-path", "index"]).trim());
    if p.is_absolute() {
        p
    } else {
        ws.join(p)
    }
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Rewrite `build.sh` in `ws` and forge its worktree's index as an
/// attacker would: `git add` (the new file's stat data), then the new
/// blob id replaced by the old one, the checksum nulled (git reads such an
/// index: `index.skipHash`). git there then says nothing changed.
fn tamper_and_forge(env: &Env, ws: &Path) {
    let old = env
        .git(ws, ["rev-parse", "HEAD:build.sh"])
        .trim()
        .to_string();
    write(&ws.join("build.sh"), TAMPERED);
    // Dated back, so git's racy-git check trusts the forged entry.
    set_mtime_back(&ws.join("build.sh"), 10);
    env.git(ws, ["add", "build.sh"]);
    let new = env.git(ws, ["rev-parse", ":build.sh"]).trim().to_string();
    let index = index_of(env, ws);
    let mut bytes = std::fs::read(&index).unwrap();
    let (old, new) = (unhex(&old), unhex(&new));
    let at = bytes
        .windows(new.len())
        .position(|w| w == new.as_slice())
        .unwrap();
    bytes[at..at + new.len()].copy_from_slice(&old);
    let len = bytes.len();
    bytes[len - 20..].fill(0);
    std::fs::write(&index, bytes).unwrap();
    assert_eq!(
        env.git(ws, ["status", "--porcelain"]),
        "",
        "the forgery fools git"
    );
    assert_eq!(read(&ws.join("build.sh")), TAMPERED);
}

/// Set `path`'s modification time `secs` seconds back (its ctime moves on).
fn set_mtime_back(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    f.set_modified(t).unwrap();
}

/// The idle workspaces `git worktree list` shows.
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

#[test]
fn a_forged_index_hides_no_change_from_apply_and_none_reaches_the_next_task() {
    let env = Env::new();
    let repo = repo(&env);
    // Applied: the change the forged index hides is seen, and lands.
    let doc = prepare(&env, &repo, &["-n", "1"]);
    tamper_and_forge(&env, &task_root(&doc, 0));
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied", "{apply:#}");
    assert_eq!(read(&repo.join("build.sh")), TAMPERED);
    env.git(&repo, ["checkout", "--", "build.sh"]);

    // Discarded: its work is kept as a proposal, and the workspace that
    // goes idle does not hand the file to the next task.
    let doc = prepare(&env, &repo, &["-n", "1"]);
    tamper_and_forge(&env, &task_root(&doc, 0));
    let apply = env
        .delegate(&repo, ["apply", "--discard", "1", "--json"])
        .expect(0)
        .json();
    assert_eq!(apply["tasks"][0]["status"], "discarded", "{apply:#}");
    let kept = env.git(
        &repo,
        [
            "show",
            &format!(
                "refs/pi-delegate/batches/{}/tasks/1/proposal:build.sh",
                id(&doc)
            ),
        ],
    );
    assert_eq!(kept, TAMPERED, "the discarded work is kept");
    let next = prepare(&env, &repo, &["-n", "2"]);
    for i in 0..2 {
        let ws = task_root(&next, i);
        assert_eq!(read(&ws.join("build.sh")), BUILD, "{}", ws.display());
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    }
    env.delegate(&repo, ["drop", &id(&next)]).expect(0);
}

#[test]
fn a_file_changed_while_idle_behind_a_forged_index_is_never_reused() {
    let env = Env::new();
    let repo = repo(&env);
    prepare(&env, &repo, &["-n", "2"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 2);
    // A worker still running writes into the idle workspace it knows, and
    // forges that workspace's index.
    tamper_and_forge(&env, &pooled[0]);
    let next = prepare(&env, &repo, &["-n", "2"]);
    for i in 0..2 {
        let ws = task_root(&next, i);
        assert_eq!(read(&ws.join("build.sh")), BUILD, "{}", ws.display());
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    }
    env.delegate(&repo, ["drop", &id(&next)]).expect(0);
}

/// Set `path`'s modification time to `to` (seconds and nanoseconds since
/// the epoch): its ctime moves on.
fn set_mtime(path: &Path, to: std::time::SystemTime) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(to).unwrap();
}

#[test]
fn the_proof_keeps_its_own_stat_rules_whatever_the_shared_config_says() {
    let env = Env::new();
    let repo = repo(&env);
    prepare(&env, &repo, &["-n", "1"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let pooled = idle(&env, &repo);
    assert_eq!(pooled.len(), 1);
    // While its workspace is idle, a worker weakens git's stat checks in
    // the shared config, rewrites a file with content of the same size and
    // puts its mtime back: git there sees nothing.
    env.git(&pooled[0], ["config", "core.trustctime", "false"]);
    env.git(&pooled[0], ["config", "core.checkStat", "minimal"]);
    let file = pooled[0].join("build.sh");
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&file, TAMPERED);
    set_mtime(&file, mtime);
    assert_eq!(env.git(&pooled[0], ["status", "--porcelain"]), "");
    let next = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&next, 0);
    assert_eq!(read(&ws.join("build.sh")), BUILD, "{}", ws.display());
    // The worker takes its settings back: the next apply lands nothing.
    env.git(&repo, ["config", "--unset", "core.trustctime"]);
    env.git(&repo, ["config", "--unset", "core.checkStat"]);
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "no_changes", "{apply:#}");
    assert_eq!(read(&repo.join("build.sh")), BUILD);
}

/// Every file below `dir` (the object store of a git dir).
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn nothing_is_written_through_a_registration_a_worker_redirected() {
    for how in ["commondir", "dotgit"] {
        let env = Env::new();
        let repo = repo(&env);
        config(&env, &repo, "");
        let doc = prepare(&env, &repo, &["-n", "1"]);
        let ws = task_root(&doc, 0);
        let common = crate::common::fixtures::common_dir(&env, &repo);
        let reg = common
            .join("worktrees")
            .join(format!("delegate-{}-1", &id(&doc)[..8]));
        assert!(reg.join("commondir").is_file(), "{}", reg.display());
        // The worker copies the git dir and sends its workspace there.
        let copy = env.path().join("copy.git");
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(&common)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(copied.success());
        match how {
            "commondir" => {
                std::fs::write(reg.join("commondir"), format!("{}\n", copy.display())).unwrap()
            }
            _ => std::fs::write(
                ws.join(".git"),
                format!(
                    "gitdir: {}\n",
                    copy.join("worktrees")
                        .join(reg.file_name().unwrap())
                        .display()
                ),
            )
            .unwrap(),
        }
        write(&ws.join("src/a.txt"), "work of a worker gone astray\n");
        write(&ws.join("new.txt"), "a new file\n");
        let before = files_below(&copy.join("objects"));
        let apply = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
        let task = &apply["tasks"][0];
        assert_eq!(task["status"], "failed", "{how}: {apply:#}");
        assert_eq!(task["reason"], "workspace_missing", "{how}: {apply:#}");
        assert_eq!(
            files_below(&copy.join("objects")),
            before,
            "{how}: objects were written into the copy"
        );
        assert_eq!(read(&repo.join("src/a.txt")), "a\n");
        assert_eq!(
            read(&ws.join("src/a.txt")),
            "work of a worker gone astray\n"
        );
        env.delegate(&repo, ["drop", &id(&doc), "--force"])
            .expect(0);
    }
}
