//! The patch a kept proposal leaves behind: `git apply` (plain and
//! `--3way --index`) of it on a checkout of the baseline reproduces the
//! proposal tree exactly, and for text changes it is byte-identical to
//! `git diff --full-index --binary --no-renames`.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::task_root;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::files::os;
use crate::common::fixtures::prepare;
use crate::common::Env;

fn chmod_x(p: &Path) {
    let mut perm = std::fs::metadata(p).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(p, perm).unwrap();
}

/// Prepare one task, let `edit` change its workspace, make the source
/// conflict on `conflict.txt` so the proposal is kept, and return
/// (baseline commit, proposal ref, patch path).
fn kept_proposal(env: &Env, repo: &Path, edit: impl FnOnce(&Path)) -> (String, String, PathBuf) {
    let doc = prepare(env, repo, &[]);
    let ws = task_root(&doc, 0);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    edit(&ws);
    std::fs::write(ws.join("conflict.txt"), "task\n").unwrap();
    std::fs::write(repo.join("conflict.txt"), "user\n").unwrap();
    let run = env.delegate(repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let task = &out["tasks"][0];
    assert_eq!(task["status"], "conflict", "{}", run.stdout);
    assert_eq!(task["reason"], "source_changed");
    let r = task["proposal_ref"].as_str().unwrap().to_string();
    let patch = PathBuf::from(task["patch"].as_str().unwrap());
    assert!(patch.is_file());
    (baseline, r, patch)
}

/// Check the patch out on fresh worktrees of the baseline, both ways.
fn assert_patch_reproduces(env: &Env, repo: &Path, baseline: &str, proposal: &str, patch: &Path) {
    let want = env
        .git(repo, ["rev-parse", &format!("{proposal}^{{tree}}")])
        .trim()
        .to_string();
    for (i, args) in [vec!["apply", "--3way", "--index"], vec!["apply"]]
        .into_iter()
        .enumerate()
    {
        let dir = env.path().join(format!("check-{i}"));
        env.git(
            repo,
            [
                "worktree".as_ref(),
                "add".as_ref(),
                "-q".as_ref(),
                "--detach".as_ref(),
                dir.as_os_str(),
                baseline.as_ref(),
            ],
        );
        let mut full: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        full.push(patch.as_os_str());
        env.git(&dir, full);
        if i == 1 {
            env.git(&dir, ["add", "-A"]);
        }
        let got = env.git(&dir, ["write-tree"]).trim().to_string();
        assert_eq!(
            got, want,
            "git {args:?} of the patch did not reproduce the proposal"
        );
        env.git(
            repo,
            [
                "worktree".as_ref(),
                "remove".as_ref(),
                "--force".as_ref(),
                dir.as_os_str(),
            ],
        );
    }
}

fn base_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("text.txt"), &lines).unwrap();
    std::fs::write(repo.join("conflict.txt"), "base\n").unwrap();
    std::fs::write(
        repo.join("bin.dat"),
        [0u8, 1, 2, 3, 255, 254, 0, 7].repeat(40),
    )
    .unwrap();
    std::fs::write(repo.join("exec.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("gone.bin"), [0u8, 9, 9]).unwrap();
    std::fs::write(repo.join("noeol.txt"), "a\nb").unwrap();
    std::fs::write(repo.join("with space.txt"), "s\n").unwrap();
    std::fs::write(repo.join("filedir"), "file\n").unwrap();
    std::fs::create_dir_all(repo.join("dirfile")).unwrap();
    std::fs::write(repo.join("dirfile/inner.txt"), "inner\n").unwrap();
    std::fs::write(repo.join("typechange"), "regular\n").unwrap();
    symlink("text.txt", repo.join("link")).unwrap();
    std::fs::write(repo.join(os(b"caf\xc3\xa9.txt")), "cafe\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    repo
}

/// A worker's edits both patch tests make: `typechange` becomes a link to
/// `new.txt`, `link` points at `exec.sh`, and two files with a non-ASCII
/// name and a tab in the name appear.
fn retarget_links_and_add_odd_names(ws: &Path) {
    std::fs::remove_file(ws.join("typechange")).unwrap();
    symlink("new.txt", ws.join("typechange")).unwrap();
    std::fs::remove_file(ws.join("link")).unwrap();
    symlink("exec.sh", ws.join("link")).unwrap();
    std::fs::write(ws.join(os(b"caf\xc3\xa9.txt")), "café\n").unwrap();
    std::fs::write(ws.join(os(b"tab\there")), "tab\n").unwrap();
}

#[test]
fn patch_round_trips_every_kind_of_change() {
    let env = Env::new();
    let repo = base_repo(&env);
    // Uncommitted and untracked state is part of the baseline too.
    std::fs::write(repo.join("untracked.txt"), "u\n").unwrap();
    let (baseline, proposal, patch) = kept_proposal(&env, &repo, |ws| {
        let mut lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        lines = lines
            .replace("line 3\n", "line three\n")
            .replace("line 27\n", "");
        std::fs::write(ws.join("text.txt"), lines).unwrap();
        let mut bin = [0u8, 1, 2, 3, 255, 254, 0, 7].repeat(40);
        bin[100] = 42;
        std::fs::write(ws.join("bin.dat"), bin).unwrap();
        std::fs::write(ws.join("new.bin"), [0u8, 200, 13, 10, 0]).unwrap();
        std::fs::write(ws.join("new.txt"), "fresh\n").unwrap();
        std::fs::write(ws.join("empty"), "").unwrap();
        chmod_x(&ws.join("exec.sh"));
        std::fs::remove_file(ws.join("gone.txt")).unwrap();
        std::fs::remove_file(ws.join("gone.bin")).unwrap();
        std::fs::write(ws.join("noeol.txt"), "a\nB").unwrap();
        std::fs::write(ws.join("with space.txt"), "s2\n").unwrap();
        std::fs::remove_file(ws.join("filedir")).unwrap();
        std::fs::create_dir(ws.join("filedir")).unwrap();
        std::fs::write(ws.join("filedir/now.txt"), "dir now\n").unwrap();
        std::fs::remove_dir_all(ws.join("dirfile")).unwrap();
        std::fs::write(ws.join("dirfile"), "file now\n").unwrap();
        retarget_links_and_add_odd_names(ws);
        std::fs::write(ws.join(os(b"new\nline")), "nl\n").unwrap();
        std::fs::write(ws.join(os(b"quote\"back\\slash")), "q\n").unwrap();
        std::fs::write(ws.join(os(b"bad-\xff-utf8")), "raw\n").unwrap();
        std::fs::write(ws.join("-leading-dash"), "dash\n").unwrap();
        std::fs::remove_file(ws.join("untracked.txt")).unwrap();
    });
    assert_patch_reproduces(&env, &repo, &baseline, &proposal, &patch);
}

#[test]
fn text_patch_is_byte_identical_to_git_diff() {
    let env = Env::new();
    let repo = base_repo(&env);
    let (baseline, proposal, patch) = kept_proposal(&env, &repo, |ws| {
        let lines: String = (1..=30)
            .map(|i| match i {
                5 => "changed five\n".to_string(),
                20 => String::new(),
                _ => format!("line {i}\n"),
            })
            .collect();
        std::fs::write(ws.join("text.txt"), lines).unwrap();
        std::fs::write(ws.join("new.txt"), "fresh\nsecond\n").unwrap();
        std::fs::write(ws.join("empty"), "").unwrap();
        chmod_x(&ws.join("exec.sh"));
        std::fs::remove_file(ws.join("gone.txt")).unwrap();
        std::fs::write(ws.join("noeol.txt"), "a\nB").unwrap();
        std::fs::write(ws.join("with space.txt"), "s2\n").unwrap();
        retarget_links_and_add_odd_names(ws);
        std::fs::remove_file(ws.join("filedir")).unwrap();
        std::fs::create_dir(ws.join("filedir")).unwrap();
        std::fs::write(ws.join("filedir/now.txt"), "dir now\n").unwrap();
    });
    let ours = read_bytes(&patch);
    let out = env
        .git_cmd(&repo)
        .args([
            "diff",
            "--full-index",
            "--binary",
            "--no-renames",
            &baseline,
            &proposal,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(ours, out.stdout);
    assert_patch_reproduces(&env, &repo, &baseline, &proposal, &patch);
}

/// The patch is written when the task keeps its proposal (design §3.2
/// step 5): a task that conflicts again after more work has the patch of
/// its new proposal, never the one of the apply before; a task that
/// applies leaves none.
#[test]
fn a_task_that_conflicts_again_keeps_the_patch_of_its_new_proposal() {
    let env = Env::new();
    let repo = base_repo(&env);
    let mut ws = PathBuf::new();
    let (baseline, proposal, patch) = kept_proposal(&env, &repo, |w| {
        ws = w.to_path_buf();
        std::fs::write(w.join("new.txt"), "first\n").unwrap();
    });
    std::fs::write(ws.join("new.txt"), "second\n").unwrap();
    std::fs::write(ws.join("more.txt"), "more\n").unwrap();
    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let task = &run.json()["tasks"][0];
    assert_eq!(task["status"], "conflict", "{}", run.stdout);
    assert_eq!(task["patch"].as_str(), patch.to_str());
    let text = read(&patch);
    assert!(
        text.contains("+second") && text.contains("more.txt"),
        "{text}"
    );
    assert_patch_reproduces(&env, &repo, &baseline, &proposal, &patch);
    // Resolved in the source: the task applies, and its patch goes.
    std::fs::write(repo.join("conflict.txt"), "base\n").unwrap();
    let run = env.delegate(&repo, ["apply", "--json"]).expect(0);
    let task = &run.json()["tasks"][0];
    assert_eq!(task["status"], "applied", "{}", run.stdout);
    assert!(task["patch"].is_null());
    assert!(!patch.exists());
    assert_eq!(read(&repo.join("more.txt")), "more\n");
}
