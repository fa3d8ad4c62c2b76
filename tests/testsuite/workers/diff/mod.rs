//! `git delegate diff` and `git delegate path` (design §3.16): a task's
//! changes as `git diff` prints them, computed without writing anything;
//! a task's working folder.
//!
//! Here: the batch, the work and the oracles the files share; the tests are
//! in `tasks` (a task's diff against git's), `path`, `source` (`--source`:
//! what apply would write) and `terminal` (colour and the pager).
use crate::common::files::read_bytes;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::{field_strs, prepare, roots};
use crate::common::procs::{alive, tty_nr};
use crate::common::Env;

mod path;
mod source;
mod tasks;
mod terminal;

/// A repository with a few files, a batch of two tasks; returns
/// (repo, baseline commit, task roots).
fn setup(env: &Env) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    std::fs::write(
        repo.join("a.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let roots = roots(&doc);
    (repo, baseline, roots)
}

/// Edits, an add, a delete, a binary add, an exec bit, a symlink.
fn work(ws: &Path) {
    std::fs::write(
        ws.join("a.txt"),
        "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\n",
    )
    .unwrap();
    std::fs::write(ws.join("new.txt"), "fresh\n").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 3, 255, 0, 7, 8, 9]).unwrap();
    let mut perm = std::fs::metadata(ws.join("run.sh")).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(ws.join("run.sh"), perm).unwrap();
    std::os::unix::fs::symlink("sub/b.txt", ws.join("link")).unwrap();
    std::fs::write(ws.join("sub/b.txt"), "b\nc\n").unwrap();
}

/// git's own diff of the baseline against the workspace as `git add -A`
/// would take it (computed by the test, with the git CLI, on a copy of the
/// workspace's index).
fn git_diff(env: &Env, ws: &Path, baseline: &str, extra: &[&str]) -> String {
    let tree = env.oracle_tree(ws);
    let mut args = vec!["diff", "--no-renames"];
    args.extend_from_slice(extra);
    args.push(baseline);
    args.push(&tree);
    env.git(ws, args)
}

/// What `diff` must leave alone: refs, index bytes, workspace files.
fn fingerprint(env: &Env, repo: &Path, ws: &Path) -> (String, Vec<u8>, String) {
    let refs = env.git(repo, ["for-each-ref"]);
    let git_dir = PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim());
    let index = std::fs::read(git_dir.join("index")).unwrap_or_default();
    let mut files = String::new();
    for name in ["a.txt", "new.txt", "blob.bin", "run.sh", "sub/b.txt"] {
        let p = ws.join(name);
        let m = std::fs::metadata(&p).unwrap();
        files.push_str(&format!(
            "{name} {:o} {:?}\n",
            m.permissions().mode(),
            read_bytes(&p)
        ));
    }
    (refs, index, files)
}

/// Every file under `root` (`.git` left out) with its mode and bytes.
fn tree_bytes(root: &Path) -> Vec<(String, u32, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u32, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.file_name().unwrap() == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if m.is_dir() {
                walk(root, &p, out);
            } else if m.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((rel, 0o120000, target.to_string_lossy().as_bytes().to_vec()));
            } else {
                out.push((rel, m.permissions().mode() & 0o111, read_bytes(&p)));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}
