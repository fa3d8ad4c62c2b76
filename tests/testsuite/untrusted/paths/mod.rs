//! Paths git refuses to check out (design §3.18 "Paths"): hostile trees
//! built with git plumbing as an attacker would build them, pushed to a
//! batch's remote as a remote worker's submission, or made on disk by a
//! local worker; and the same paths in the source itself.
//!
//! Here: trees as an attacker writes them, the hostile shapes, the remote
//! setup and the checks; the tests are in `remote`, `local`, `undo`,
//! `bomb` (path bombs, in bounded memory) and `unfetchable` (proposals git
//! will not fetch).

use crate::common::fixtures::id;
use crate::common::fixtures::task_root;
use crate::common::succeed_with_input;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::fixtures::{commit_files, prepare, task};
use crate::common::{Env, Run};

mod bomb;
mod local;
mod remote;
mod undo;
mod unfetchable;

/// One entry of a tree an attacker writes.
enum Node {
    File(&'static [u8]),
    Exec(&'static [u8]),
    Link(&'static [u8]),
    Dir(Vec<(&'static [u8], Node)>),
    /// A gitlink (submodule entry) naming this commit id.
    Gitlink(&'static str),
    /// A folder whose entries are written in the order given, unsorted.
    RawDir(Vec<(&'static [u8], Node)>),
}

fn dir(entries: Vec<(&'static [u8], Node)>) -> Node {
    Node::Dir(entries)
}

/// Run git with `input` on stdin; its trimmed stdout.
fn git_in(env: &Env, repo: &Path, args: &[&str], input: &[u8]) -> String {
    let mut git = env.git_cmd(repo);
    git.args(args);
    let out = succeed_with_input(git, input, &format!("git {args:?}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A tree object from raw entries (mode, name, hex id), in git's order,
/// written as is: `git hash-object -t tree --literally` checks no name.
fn write_tree(env: &Env, repo: &Path, mut entries: Vec<(String, Vec<u8>, String)>) -> String {
    let key = |mode: &str, name: &[u8]| {
        let mut k = name.to_vec();
        if mode == "40000" {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_key(|e| key(&e.0, &e.1));
    write_raw_tree(env, repo, entries)
}

/// A tree object from raw entries in the order given.
fn write_raw_tree(env: &Env, repo: &Path, entries: Vec<(String, Vec<u8>, String)>) -> String {
    let mut bytes = Vec::new();
    for (mode, name, hex) in &entries {
        bytes.extend_from_slice(mode.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(name);
        bytes.push(0);
        for i in (0..hex.len()).step_by(2) {
            bytes.push(u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
        }
    }
    git_in(
        env,
        repo,
        &["hash-object", "-t", "tree", "--literally", "-w", "--stdin"],
        &bytes,
    )
}

fn write_node(env: &Env, repo: &Path, node: &Node) -> (String, String) {
    let blob = |c: &[u8]| git_in(env, repo, &["hash-object", "-w", "--stdin"], c);
    match node {
        Node::File(c) => ("100644".into(), blob(c)),
        Node::Exec(c) => ("100755".into(), blob(c)),
        Node::Link(t) => ("120000".into(), blob(t)),
        Node::Gitlink(id) => ("160000".into(), id.to_string()),
        Node::Dir(children) | Node::RawDir(children) => {
            let entries = children
                .iter()
                .map(|(name, n)| {
                    let (mode, id) = write_node(env, repo, n);
                    (mode, name.to_vec(), id)
                })
                .collect();
            let tree = if matches!(node, Node::RawDir(_)) {
                write_raw_tree(env, repo, entries)
            } else {
                write_tree(env, repo, entries)
            };
            ("40000".into(), tree)
        }
    }
}

/// A commit on `base` whose tree is `base`'s with `extra` added at the top.
fn commit_on(env: &Env, repo: &Path, base: &str, extra: Vec<(&'static [u8], Node)>) -> String {
    let listing = env.git(repo, ["ls-tree", "-z", base]);
    let mut entries: Vec<(String, Vec<u8>, String)> = Vec::new();
    for rec in listing.split('\0').filter(|r| !r.is_empty()) {
        let (meta, name) = rec.split_once('\t').unwrap();
        let mut it = meta.split(' ');
        let mode = it.next().unwrap().trim_start_matches('0').to_string();
        let _kind = it.next();
        let id = it.next().unwrap().to_string();
        entries.push((mode, name.as_bytes().to_vec(), id));
    }
    for (name, node) in &extra {
        entries.retain(|e| e.1 != *name);
        let (mode, id) = write_node(env, repo, node);
        entries.push((mode, name.to_vec(), id));
    }
    let tree = write_tree(env, repo, entries);
    env.git(repo, ["commit-tree", &tree, "-p", base, "-m", "worker"])
        .trim()
        .to_string()
}

/// A commit on `base` in `repo` whose tree is `base`'s with the folder
/// `name` (the tree `folder`) added at the top.
fn with_folder(env: &Env, repo: &Path, base: &str, name: &str, folder: &str) -> String {
    let listing = env.git(repo, ["ls-tree", base]);
    let mut entries = listing.trim_end().to_string();
    entries.push_str(&format!("\n040000 tree {folder}\t{name}\n"));
    let tree = git_in(env, repo, &["mktree"], entries.as_bytes());
    env.git(repo, ["commit-tree", &tree, "-p", base, "-m", "bomb"])
        .trim()
        .to_string()
}

/// The hostile shapes: the tree entries, the path apply must name, and
/// what must never appear (relative to the source root).
/// Tree entries to add at the top, the path apply must name, and what
/// must never appear.
type Shape = (Vec<(&'static [u8], Node)>, &'static str, Vec<&'static str>);

fn shapes() -> Vec<Shape> {
    const EVIL: &[u8] = b"#!/bin/sh\necho pwned > /tmp/pwned\n";
    vec![
        (
            vec![(
                b".git",
                dir(vec![(
                    b"hooks",
                    dir(vec![(b"pre-commit", Node::Exec(EVIL))]),
                )]),
            )],
            ".git/hooks/pre-commit",
            vec![".git/hooks/pre-commit"],
        ),
        (
            vec![(b".GIT", dir(vec![(b"x", Node::File(b"x\n"))]))],
            ".GIT/x",
            vec![".GIT"],
        ),
        (
            vec![(
                b"sub",
                dir(vec![(
                    b".Git",
                    dir(vec![(b"config", Node::File(b"[core]\n"))]),
                )]),
            )],
            "sub/.Git/config",
            vec!["sub"],
        ),
        (
            vec![(b"git~1", dir(vec![(b"x", Node::File(b"x\n"))]))],
            "git~1/x",
            vec!["git~1"],
        ),
        (
            vec![(b".git.", dir(vec![(b"x", Node::File(b"x\n"))]))],
            ".git./x",
            vec![".git."],
        ),
        (
            vec![(b"..", dir(vec![(b"x", Node::File(b"outside\n"))]))],
            "../x",
            vec!["../x"],
        ),
        (
            vec![(
                b"a",
                dir(vec![(
                    b"..",
                    dir(vec![(b"..", dir(vec![(b"x", Node::File(b"outside\n"))]))]),
                )]),
            )],
            "a/../../x",
            vec!["a", "../x"],
        ),
        (
            vec![(b".gitmodules", Node::Link(b"/etc/passwd"))],
            ".gitmodules",
            vec![".gitmodules"],
        ),
    ]
}

/// Every file of the source's `.git/hooks`: name, bytes, mode.
fn hooks(src: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out: Vec<(String, Vec<u8>, u32)> = std::fs::read_dir(src.join(".git/hooks"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
                md.permissions().mode(),
            )
        })
        .collect();
    out.sort();
    out
}

fn absent(src: &Path, rel: &str) -> bool {
    std::fs::symlink_metadata(src.join(rel)).is_err()
}

fn conflict_paths(t: &Value) -> Vec<String> {
    t["conflicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no conflicts in {t}"))
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

/// An invalid_path conflict naming `path`, its work kept as a proposal
/// ref and patch.
fn assert_refused(t: &Value, path: &str) {
    assert_eq!(t["status"], "conflict", "{t}");
    assert_eq!(t["reason"], "invalid_path", "{t}");
    assert!(
        conflict_paths(t).iter().any(|p| p == path),
        "{path} not named in {t}"
    );
    assert!(t["proposal_ref"].is_string(), "{t}");
    let patch = PathBuf::from(t["patch"].as_str().unwrap());
    assert!(patch.is_file(), "{}", patch.display());
}

/// The user's machine with a remote, and an attacker's repository.
struct Remote {
    user: Env,
    attacker: Env,
    bare: PathBuf,
    src: PathBuf,
    url: String,
    evil: PathBuf,
}

fn remote_setup() -> Remote {
    let user = Env::new();
    let attacker = Env::new();
    let bare = user.path().join("project.git");
    user.git(
        user.path(),
        ["init", "-q", "--bare", "-b", "main", "project.git"],
    );
    let src = user.path().join("work").join("src");
    std::fs::create_dir_all(&src).unwrap();
    user.git(&src, ["init", "-q", "-b", "main"]);
    commit_files(&user, &src, &[("lib.txt", "one\ntwo\n")], "lib");
    let url = format!("file://{}", bare.display());
    user.git(&src, ["remote", "add", "origin", &url]);
    user.git(&src, ["push", "-q", "origin", "main"]);
    let evil = attacker.path().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    attacker.git(&evil, ["init", "-q"]);
    Remote {
        user,
        attacker,
        bare,
        src,
        url,
        evil,
    }
}

impl Remote {
    fn prepare(&self, args: &[&str]) -> Value {
        let mut all = vec!["prepare", "--remote", "origin", "--json"];
        all.extend_from_slice(args);
        self.user.delegate(&self.src, all).expect(0).json()
    }

    /// The attacker submits, as task `task`, a commit on the batch's
    /// baseline with `extra` in its tree.
    fn push(&self, id: &str, task: &str, extra: Vec<(&'static [u8], Node)>) -> String {
        let a = &self.attacker;
        a.git(
            &self.evil,
            [
                "fetch",
                "-q",
                &self.url,
                &format!("refs/pi-delegate/batches/{id}/baseline"),
            ],
        );
        let base = a.git(&self.evil, ["rev-parse", "FETCH_HEAD"]);
        let commit = commit_on(a, &self.evil, base.trim(), extra);
        a.git(
            &self.evil,
            [
                "push",
                "-q",
                &self.url,
                &format!("{commit}:refs/pi-delegate/batches/{id}/tasks/{task}/proposal"),
            ],
        );
        commit
    }

    fn baseline_in_remote(&self, id: &str) -> String {
        self.attacker
            .git(
                &self.bare,
                [
                    "rev-parse",
                    &format!("refs/pi-delegate/batches/{id}/baseline"),
                ],
            )
            .trim()
            .to_string()
    }

    /// Task `task`'s proposal, written into the bare remote: the baseline
    /// with a file below `depth` nested folders, each named `folder`.
    fn nested(&self, id: &str, task: &str, folder: &str, depth: usize) {
        let base = self.baseline_in_remote(id);
        let name = format!("refs/pi-delegate/batches/{id}/tasks/{task}/proposal");
        nested_commit(&self.attacker, &self.bare, &name, &base, (folder, depth));
    }

    fn apply(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["apply", "--json"];
        all.extend_from_slice(args);
        self.user.delegate(&self.src, all).expect(code).json()
    }
}

/// Write, with `git fast-import` in `repo`, the ref `name` at a commit on
/// `base` whose tree is `base`'s with a file below `depth` nested folders,
/// each named `folder`.
fn nested_commit(env: &Env, repo: &Path, name: &str, base: &str, (folder, depth): (&str, usize)) {
    let path = vec![folder; depth].join("/");
    let script = format!(
        "commit {name}\n\
         committer Evil <evil@example.com> 0 +0000\ndata 5\ndeep\n\
         from {base}\nM 100644 inline {path}/f\ndata 5\ndeep\n\n"
    );
    git_in(env, repo, &["fast-import", "--quiet"], script.as_bytes());
}

/// Tree entries to add at the top of a proposal.
type Extra = Vec<(&'static [u8], Node)>;

/// Bytes that live for the test (tree entries take `'static` names).
fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

/// The error of a run refused for a path git refuses (`delegate::invalid_path`)
/// whose message names `path`.
fn invalid_path_error(run: &Run, path: &str) -> Value {
    let e = run.json()["error"].clone();
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(e["message"].as_str().unwrap().contains(path), "{e}");
    e
}

/// A source with two tasks, task 1 (`a.txt` "mine") applied alone: the
/// source, its hooks before, the batch id, task 2's workspace and the
/// apply id.
struct AppliedOne {
    env: Env,
    src: PathBuf,
    hooks_before: Vec<(String, Vec<u8>, u32)>,
    id: String,
    ws2: PathBuf,
    apply_id: String,
}

fn applied_one() -> AppliedOne {
    let (env, src) = Env::with_repo("src");
    let hooks_before = hooks(&src);
    let doc = prepare(&env, &src, &["-n", "2"]);
    let id = id(&doc);
    let ws1 = task_root(&doc, 0);
    let ws2 = task_root(&doc, 1);
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    let doc = env
        .delegate(&src, ["apply", &id, "--only", "1", "--json"])
        .expect(0)
        .json();
    let apply_id = doc["apply_id"].as_str().unwrap().to_string();
    AppliedOne {
        env,
        src,
        hooks_before,
        id,
        ws2,
        apply_id,
    }
}
