//! Workspaces made from the first one (design §3.1 step 4): on a filesystem
//! that shares extents the files of later workspaces are cloned (FICLONE)
//! from the first, elsewhere copied; either way every workspace holds the
//! baseline exactly (bytes, modes, symlinks), `git status` in it is clean,
//! and its index carries its own stat data, so that its first snapshot
//! hashes nothing. The reflink test needs `GIT_DELEGATE_REFLINK_DIR` (see
//! scripts/reflink-fs); without it it says SKIPPED (and fails under CI=true).

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::fixtures::{prepare, roots, snapshot, tree_of, write};
use crate::common::mounts as sc;
use crate::common::Env;

/// A repository with small and big files, an executable, symlinks, a
/// dirty file and an untracked one.
fn mixed_repo(env: &Env) -> PathBuf {
    let repo = env.repo("mixed");
    for i in 0..150 {
        write(
            &repo.join(format!("src/m{}/f{i}.txt", i % 6)),
            &format!("small file {i}\n"),
        );
    }
    // Big enough to be cloned rather than copied.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(repo.join("big.bin"), &big).unwrap();
    std::fs::create_dir_all(repo.join("assets")).unwrap();
    std::fs::write(repo.join("assets/big2.bin"), &big[..150_000]).unwrap();
    write(&repo.join("run.sh"), "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(repo.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink("src/m1/f1.txt", repo.join("link")).unwrap();
    symlink("../big.bin", repo.join("assets/up")).unwrap();
    std::fs::write(repo.join("empty"), b"").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "mixed"]);
    write(&repo.join("src/m0/f0.txt"), "dirty in the source\n");
    write(&repo.join("new.txt"), "untracked\n");
    repo
}

/// Every path under `dir` (without `.git`) with its kind, mode and content.
fn contents(dir: &Path) -> Vec<(String, u32, Vec<u8>)> {
    sc::tree_listing(dir)
        .into_iter()
        .filter(|p| p != ".git")
        .map(|p| {
            let full = dir.join(&p);
            let md = std::fs::symlink_metadata(&full).unwrap();
            let data = if md.file_type().is_symlink() {
                std::fs::read_link(&full)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if md.is_file() {
                read_bytes(&full)
            } else {
                Vec::new()
            };
            (p, md.permissions().mode(), data)
        })
        .collect()
}

/// Every workspace holds the baseline, is clean, and hashes nothing.
fn check_workspaces(env: &Env, repo: &Path, doc: &serde_json::Value) -> Vec<PathBuf> {
    let baseline = tree_of(env, repo, doc["baseline"]["commit"].as_str().unwrap());
    let ws = roots(doc);
    let first = contents(&ws[0]);
    assert!(first.iter().any(|(p, _, _)| p == "new.txt"));
    for w in &ws {
        assert_eq!(contents(w), first, "{} differs from the first", w.display());
        assert_eq!(env.git(w, ["status", "--porcelain"]), "", "{}", w.display());
        let (tree, hashed) = snapshot(env, w);
        assert_eq!(tree, baseline, "{}", w.display());
        assert_eq!(
            hashed,
            0,
            "the first snapshot of {} read files",
            w.display()
        );
    }
    ws
}

#[test]
fn cloned_workspaces_are_exact_clean_and_hash_nothing() {
    let Some(env) = sc::reflink_env("cloned_workspaces_are_exact_clean_and_hash_nothing") else {
        return;
    };
    let repo = mixed_repo(&env);
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let ws = check_workspaces(&env, &repo, &doc);
    // Big files of later workspaces share their extents with the first's;
    // the first was checked out.
    for w in &ws[1..] {
        assert!(sc::shares_extents(&w.join("big.bin")), "{}", w.display());
        assert!(sc::shares_extents(&w.join("assets/big2.bin")));
    }
    // A clone is private: writing it changes no other workspace.
    std::fs::write(ws[1].join("big.bin"), b"changed\n").unwrap();
    assert_eq!(read_bytes(&ws[2].join("big.bin")).len(), 300_000);
    assert_eq!(read_bytes(&ws[0].join("big.bin")).len(), 300_000);
    let (_, hashed) = snapshot(&env, &ws[1]);
    assert_eq!(hashed, 1);
}

#[test]
fn copied_workspaces_are_exact_clean_and_hash_nothing() {
    // The same on a filesystem that cannot clone (the files are copied).
    let Some(env) = sc::no_reflink_env("copied_workspaces_are_exact_clean_and_hash_nothing") else {
        return;
    };
    let repo = mixed_repo(&env);
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let ws = check_workspaces(&env, &repo, &doc);
    std::fs::write(ws[2].join("src/m2/f2.txt"), b"edited, longer\n").unwrap();
    assert_eq!(read(&ws[1].join("src/m2/f2.txt")), "small file 2\n");
}
