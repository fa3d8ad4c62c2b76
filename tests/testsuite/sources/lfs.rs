//! Git LFS round trips (design §3.15 "Git LFS") against real repositories
//! made with git and git-lfs: files tracked by LFS enter the baseline and
//! the proposals through the clean filter (pointers), reach workspaces and
//! the source through the smudge filter (real content), and the source ends
//! as it would after the same edits made by hand (`git status`, `git lfs
//! status`, the index after `git add -A`). The filters run through the
//! project's own filter code (`blob`, `writeback::hash`), which runs the
//! `filter.lfs.*` drivers as git does.
//!
//! Without git-lfs on PATH the tests say SKIPPED (a failure under
//! `CI=true`, where .ci/run installs it).
use crate::common::files::read_bytes;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::prepare_roots;
use crate::common::with_fault;
use crate::common::Env;
use serde_json::Value;

const POINTER_START: &[u8] = b"version https://git-lfs.github.com/spec/v1\n";

/// Whether `git lfs` runs here; says SKIPPED (and fails under CI=true) when not.
fn have_lfs(test: &str) -> bool {
    let ok = std::process::Command::new("git")
        .args(["lfs", "version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        use std::io::Write;
        let line = format!("SKIPPED: {test}: git-lfs is not installed (`git lfs version` fails)\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "{} (CI=true: .ci/run must install git-lfs)",
                line.trim_end()
            );
        }
    }
    ok
}

/// Bytes no text conversion would leave alone (a NUL), distinct per `tag`.
fn binary(tag: &str, len: usize) -> Vec<u8> {
    let mut out = format!("{tag}\0").into_bytes();
    let mut x: u32 = tag.bytes().fold(7, |a, b| a.wrapping_mul(31) ^ b as u32);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.push(x as u8);
    }
    out.truncate(len.max(tag.len() + 1));
    out
}

/// A repository with LFS installed locally, `*.bin` tracked, and committed
/// `a.bin`, `keep.bin` (LFS) and `t.txt`; the same calls make the same
/// commits (the environment fixes the dates).
fn lfs_repo(env: &Env, name: &str) -> PathBuf {
    let dir = env.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    env.git(&dir, ["init", "-q", "-b", "main"]);
    env.git(&dir, ["lfs", "install", "--local"]);
    env.git(&dir, ["lfs", "track", "*.bin"]);
    std::fs::write(dir.join("a.bin"), binary("a", 3000)).unwrap();
    std::fs::write(dir.join("keep.bin"), binary("keep", 100)).unwrap();
    std::fs::write(dir.join("t.txt"), "text\n").unwrap();
    env.git(&dir, ["add", "."]);
    env.git(&dir, ["commit", "-q", "-m", "lfs"]);
    dir
}

fn blob(env: &Env, repo: &Path, spec: &str) -> Vec<u8> {
    let out = env
        .git_cmd(repo)
        .args(["cat-file", "blob", spec])
        .output()
        .unwrap();
    assert!(out.status.success(), "no blob {spec}");
    out.stdout
}

/// The pointer git-lfs writes for `content` (its oid is the SHA-256 of it).
fn assert_pointer_of(pointer: &[u8], content: &[u8], what: &str) {
    assert!(
        pointer.starts_with(POINTER_START),
        "{what} is not an LFS pointer: {:?}",
        String::from_utf8_lossy(&pointer[..pointer.len().min(80)])
    );
    let text = String::from_utf8_lossy(pointer);
    assert!(
        text.contains(&format!("\nsize {}\n", content.len())),
        "{what}: {text}"
    );
    assert!(pointer.len() < 200, "{what} holds content, not a pointer");
}

/// What the source's state looks like to git and git-lfs: `git status`,
/// `git lfs status --porcelain`, then the same after `git add -A` with the
/// index's entries (`git ls-files -s`).
fn observed(env: &Env, repo: &Path) -> Vec<String> {
    let mut out = vec![
        env.git(repo, ["status", "--porcelain"]),
        env.git(repo, ["lfs", "status", "--porcelain"]),
    ];
    env.git(repo, ["add", "-A"]);
    out.push(env.git(repo, ["status", "--porcelain"]));
    out.push(env.git(repo, ["lfs", "status", "--porcelain"]));
    out.push(env.git(repo, ["ls-files", "-s"]));
    out
}

/// LFS files are pointers in the baseline and real content in the
/// workspaces; a worker's changed and new LFS files land in the source as
/// real content, and the source then looks to git and git-lfs exactly as
/// after the same edits made by hand; the proposal holds pointers.
#[test]
fn lfs_round_trip_lands_real_content_as_a_hand_edit_would() {
    if !have_lfs("lfs_round_trip_lands_real_content_as_a_hand_edit_would") {
        return;
    }
    let env = Env::new();
    let repo = lfs_repo(&env, "src");
    let hand = lfs_repo(&env, "hand");
    // An uncommitted LFS file of the user's goes into the baseline too.
    for r in [&repo, &hand] {
        std::fs::write(r.join("mine.bin"), binary("mine", 500)).unwrap();
    }

    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    for (path, content) in [
        ("a.bin", binary("a", 3000)),
        ("keep.bin", binary("keep", 100)),
        ("mine.bin", binary("mine", 500)),
    ] {
        assert_pointer_of(
            &blob(&env, &repo, &format!("{baseline}:{path}")),
            &content,
            &format!("the baseline's {path}"),
        );
        for w in &ws {
            assert_eq!(
                read_bytes(&w.join(path)),
                content,
                "{path} smudged in {}",
                w.display()
            );
        }
    }
    assert_eq!(blob(&env, &repo, &format!("{baseline}:t.txt")), b"text\n");
    for w in &ws {
        assert_eq!(
            env.git(w, ["status", "--porcelain"]),
            "",
            "a fresh workspace is clean for git"
        );
    }

    // Task 1 changes an LFS file and adds two (one big enough to be
    // streamed, one in a new folder); task 2 adds one more.
    let big = binary("big", (9 << 20) + 17);
    let edits: Vec<(usize, &str, Vec<u8>)> = vec![
        (0, "a.bin", binary("a changed", 4000)),
        (0, "new.bin", binary("new", 700)),
        (0, "deep/er/big.bin", big),
        (1, "two.bin", binary("two", 64)),
    ];
    for (task, path, content) in &edits {
        let p = ws[*task].join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        let p = hand.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
    }
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    for t in out["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "applied", "{out:#}");
    }
    for (_, path, content) in &edits {
        assert_eq!(
            &read_bytes(&repo.join(path)),
            content,
            "{path}: real content in the source"
        );
    }
    assert_eq!(read_bytes(&repo.join("mine.bin")), binary("mine", 500));
    // What git and git-lfs see equals the hand edit, before and after `git add`.
    let got = observed(&env, &repo);
    let want = observed(&env, &hand);
    assert_eq!(
        got, want,
        "the source after apply vs the same edits by hand"
    );
    assert!(
        got[1].contains("a.bin"),
        "git lfs status names a.bin: {got:?}"
    );
    // Every object those pointers name is in the repository's LFS store.
    env.git(&repo, ["lfs", "fsck"]);
    for (_, path, content) in &edits {
        assert_pointer_of(
            &blob(&env, &repo, &format!(":{path}")),
            content,
            &format!("{path} staged by `git add`"),
        );
    }
}

/// An LFS file the user changed while a worker changed it too is a
/// conflict like any binary file (the user's bytes stay, the worker's work
/// is kept); a user's change to another LFS file merges with the worker's.
#[test]
fn an_lfs_file_changed_on_both_sides_conflicts_like_any_binary() {
    if !have_lfs("an_lfs_file_changed_on_both_sides_conflicts_like_any_binary") {
        return;
    }
    let env = Env::new();
    let repo = lfs_repo(&env, "src");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let batch = id(&doc);
    // Task 1 changes a.bin, which the user changes too.
    std::fs::write(ws[0].join("a.bin"), binary("worker", 3000)).unwrap();
    // Task 2 changes keep.bin, which the user leaves alone.
    std::fs::write(ws[1].join("keep.bin"), binary("keep, worker", 120)).unwrap();
    std::fs::write(repo.join("a.bin"), binary("user", 3001)).unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let tasks = out["tasks"].as_array().unwrap();
    let t1 = tasks.iter().find(|t| t["name"] == "1").unwrap();
    let t2 = tasks.iter().find(|t| t["name"] == "2").unwrap();
    assert_eq!(t1["status"], "conflict", "{out:#}");
    assert_eq!(
        t1["conflicts"],
        serde_json::json!([{"path": "a.bin", "reason": "both modified"}]),
        "{out:#}"
    );
    assert_eq!(t2["status"], "applied", "{out:#}");
    assert_eq!(
        read_bytes(&repo.join("a.bin")),
        binary("user", 3001),
        "the user's bytes stay"
    );
    assert_eq!(
        read_bytes(&repo.join("keep.bin")),
        binary("keep, worker", 120)
    );
    // The worker's work is kept: its workspace and a proposal holding a pointer.
    assert_eq!(read_bytes(&ws[0].join("a.bin")), binary("worker", 3000));
    let proposal = t1["proposal_ref"].as_str().unwrap();
    assert_pointer_of(
        &blob(&env, &repo, &format!("{proposal}:a.bin")),
        &binary("worker", 3000),
        "the proposal's a.bin",
    );
    // As git sees it: the user's a.bin modified, keep.bin modified, nothing else.
    assert_eq!(
        env.git(&repo, ["status", "--porcelain"]),
        " M a.bin\n M keep.bin\n"
    );
    // Once the user gives the task up, the batch closes.
    env.delegate(&repo, ["apply", &batch, "--discard", "1", "--json"])
        .expect(0);
}

/// A clone made without LFS content (`GIT_LFS_SKIP_SMUDGE=1`) whose LFS
/// server cannot be reached: checking out a workspace runs the smudge
/// filter, which fails as it fails for `git worktree add`. The error names
/// the filter driver (never "check free disk space"), nothing is left
/// behind, and `GIT_LFS_SKIP_SMUDGE=1` hands out pointers, as for git.
#[test]
fn a_missing_lfs_object_is_named_as_the_smudge_filter_failing() {
    if !have_lfs("a_missing_lfs_object_is_named_as_the_smudge_filter_failing") {
        return;
    }
    let env = Env::new();
    let origin = lfs_repo(&env, "origin");
    let out = env
        .git_cmd(env.path())
        .env("GIT_LFS_SKIP_SMUDGE", "1")
        .args(["clone", "-q"])
        .arg(&origin)
        .arg("clone")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let repo = env.path().join("clone");
    env.git(&repo, ["lfs", "install", "--local"]);
    env.git(
        &repo,
        ["remote", "set-url", "origin", "/nonexistent/gd-test-origin"],
    );
    let pointer = read_bytes(&repo.join("a.bin"));
    assert_pointer_of(&pointer, &binary("a", 3000), "the clone's a.bin");
    // git itself cannot check the commit out.
    let by_git = env
        .git_cmd(&repo)
        .args(["worktree", "add", "-q", "--detach"])
        .arg(env.path().join("by-git"))
        .output()
        .unwrap();
    assert!(!by_git.status.success(), "git worktree add fails too");
    env.git(&repo, ["worktree", "prune"]);

    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    let err = &run.json()["error"];
    assert_eq!(err["code"], "delegate::filter_failed", "{err}");
    let msg = err["message"].as_str().unwrap();
    assert_has(msg, "`lfs`");
    assert_has(msg, "git-lfs filter-process");
    assert!(
        !err["help"].as_str().unwrap().contains("disk space"),
        "{err}"
    );
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert!(
        !env.workspace_root().exists()
            || std::fs::read_dir(env.workspace_root()).unwrap().all(|e| {
                let e = e.unwrap().path();
                std::fs::read_dir(&e)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true)
            })
    );

    // Without smudging, the workspaces get the pointers, as `git worktree
    // add` with GIT_LFS_SKIP_SMUDGE=1 gives them.
    let doc = env
        .delegate_cmd(&repo)
        .env("GIT_LFS_SKIP_SMUDGE", "1")
        .args(["prepare", "--json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&doc.stdout).unwrap();
    let root = task_root(&doc, 0);
    assert_eq!(read_bytes(&root.join("a.bin")), pointer);
}

/// An apply killed in the middle of writing LFS files back is rolled back
/// by the next command (the source's LFS files as they were, `git status`
/// clean), and applying again lands the real content.
#[test]
fn an_interrupted_lfs_write_back_rolls_back_and_lands_again() {
    if !have_lfs("an_interrupted_lfs_write_back_rolls_back_and_lands_again") {
        return;
    }
    let env = Env::new();
    let repo = lfs_repo(&env, "src");
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    let batch = id(&doc);
    std::fs::write(ws[0].join("a.bin"), binary("a, worker", 2000)).unwrap();
    std::fs::write(ws[0].join("new.bin"), binary("new", 300)).unwrap();
    let killed = with_fault(
        env.delegate_cmd(&repo).args(["apply", "--json"]),
        "after-rename:1",
    );
    assert!(!killed.status.success(), "the fault kills the apply");
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(
        gc["recovered_writebacks"],
        serde_json::json!([batch]),
        "{gc:#}"
    );
    assert_eq!(read_bytes(&repo.join("a.bin")), binary("a", 3000));
    assert!(!repo.join("new.bin").exists());
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
    assert_eq!(env.git(&repo, ["lfs", "status", "--porcelain"]), "");

    env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert_eq!(read_bytes(&repo.join("a.bin")), binary("a, worker", 2000));
    assert_eq!(read_bytes(&repo.join("new.bin")), binary("new", 300));
    assert_eq!(
        env.git(&repo, ["status", "--porcelain"]),
        " M a.bin\n?? new.bin\n"
    );
}

/// A repository that uses LFS on a machine where git-lfs is not on PATH:
/// git cannot add its LFS files (`git add` fails), and git delegate names
/// the filter it could not start and the program to install, never "make
/// the file readable" or "check the repository with git fsck".
#[test]
fn without_git_lfs_the_filter_that_cannot_start_is_named() {
    if !have_lfs("without_git_lfs_the_filter_that_cannot_start_is_named") {
        return;
    }
    let env = Env::new();
    let repo = lfs_repo(&env, "src");
    // A PATH with git alone.
    let git = crate::common::procs::git_path();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(git, bin.join("git")).unwrap();
    let no_lfs = |cmd: &mut std::process::Command| {
        cmd.env("PATH", &bin);
    };
    // A changed LFS file (hashed while snapshotting), then one that is only
    // stat-dirty (found by the status walk).
    for (what, content) in [
        ("changed", binary("changed", 10)),
        ("touched", binary("a", 3000)),
    ] {
        std::fs::write(repo.join("a.bin"), &content).unwrap();
        let mut add = env.git_cmd(&repo);
        no_lfs(&mut add);
        let add = add.args(["add", "a.bin"]).output().unwrap();
        assert!(
            !add.status.success(),
            "{what}: git add fails without git-lfs"
        );
        let mut cmd = env.delegate_cmd(&repo);
        no_lfs(&mut cmd);
        let run =
            crate::common::Run::from(cmd.args(["prepare", "--json"]).output().unwrap()).expect(3);
        let err = &run.json()["error"];
        assert_eq!(err["code"], "delegate::filter_failed", "{what}: {err}");
        let msg = err["message"].as_str().unwrap();
        assert!(
            msg.contains("`lfs`") && msg.contains("git-lfs"),
            "{what}: {msg}"
        );
        assert!(
            err["help"].as_str().unwrap().contains("install"),
            "{what}: {err}"
        );
        assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    }
}
