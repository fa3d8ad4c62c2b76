//! Paths git refuses to check out (design §3.18 "Paths"): hostile trees
//! built with git plumbing as an attacker would build them, pushed to a
//! batch's remote as a remote worker's submission, or made on disk by a
//! local worker; and the same paths in the source itself.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common::fixtures::task;
use crate::common::Env;

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
    let mut child = env
        .git_cmd(repo)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        Node::Dir(children) => {
            let entries = children
                .iter()
                .map(|(name, n)| {
                    let (mode, id) = write_node(env, repo, n);
                    (mode, name.to_vec(), id)
                })
                .collect();
            ("40000".into(), write_tree(env, repo, entries))
        }
        Node::Gitlink(id) => ("160000".into(), id.to_string()),
        Node::RawDir(children) => {
            let entries = children
                .iter()
                .map(|(name, n)| {
                    let (mode, id) = write_node(env, repo, n);
                    (mode, name.to_vec(), id)
                })
                .collect();
            ("40000".into(), write_raw_tree(env, repo, entries))
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
    std::fs::write(src.join("lib.txt"), "one\ntwo\n").unwrap();
    user.git(&src, ["add", "lib.txt"]);
    user.git(&src, ["commit", "-q", "-m", "lib"]);
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

    fn apply(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["apply", "--json"];
        all.extend_from_slice(args);
        self.user.delegate(&self.src, all).expect(code).json()
    }
}

#[test]
fn a_remote_proposal_writing_into_dot_git_hooks_is_refused_with_one_task() {
    let t = remote_setup();
    let before = hooks(&t.src);
    let id = t.prepare(&["r"])["batch"].as_str().unwrap().to_string();
    let (extra, path, never) = shapes().remove(0);
    let commit = t.push(&id, "r", extra);
    // The dry run says so too.
    let dry = t.apply(&[&id, "--dry-run"], 1);
    assert_eq!(task(&dry, "r")["reason"], "invalid_path", "{dry}");
    let doc = t.apply(&[&id], 1);
    let r = task(&doc, "r");
    assert_refused(r, path);
    assert_eq!(doc["applied_paths"], serde_json::json!([]));
    assert_eq!(doc["batch_open"], true);
    for p in never {
        assert!(absent(&t.src, p), "{p} was written");
    }
    assert_eq!(hooks(&t.src), before);
    // Its work is kept: the proposal ref holds what the worker submitted.
    let kept = t.user.git(
        &t.src,
        [
            "rev-parse",
            &format!("refs/pi-delegate/batches/{id}/tasks/r/proposal"),
        ],
    );
    assert_eq!(kept.trim(), commit);
    // The human text names the path and never suggests `git fsck`.
    let run = t.user.delegate(&t.src, ["apply", &id]).expect(1);
    assert!(run.stdout.contains("invalid_path"), "{}", run.stdout);
    assert!(run.stdout.contains(path), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("task r: git refuses to check out the paths named above"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("fsck") && !run.stderr.contains("fsck"));
    assert_eq!(hooks(&t.src), before);
}

#[test]
fn every_hostile_shape_is_refused_alone_and_nothing_of_it_is_written() {
    let t = remote_setup();
    let before = hooks(&t.src);
    let outside = t.src.parent().unwrap().join("x");
    for (extra, path, never) in shapes() {
        let id = t.prepare(&["r"])["batch"].as_str().unwrap().to_string();
        t.push(&id, "r", extra);
        let dry = t.apply(&[&id, "--dry-run"], 1);
        assert_eq!(task(&dry, "r")["reason"], "invalid_path", "{path}: {dry}");
        let doc = t.apply(&[&id], 1);
        assert_refused(task(&doc, "r"), path);
        for p in &never {
            assert!(absent(&t.src, p), "{path}: {p} was written");
        }
        assert!(!outside.exists(), "{path}: wrote outside the source");
        assert_eq!(hooks(&t.src), before, "{path}");
        t.user.delegate(&t.src, ["drop", &id, "--force"]).expect(0);
    }
    // The source takes later applies.
    let id = t.prepare(&["r"])["batch"].as_str().unwrap().to_string();
    t.push(&id, "r", vec![(b"fine.txt", Node::File(b"fine\n"))]);
    t.apply(&[&id], 0);
    assert_eq!(std::fs::read(t.src.join("fine.txt")).unwrap(), b"fine\n");
}

#[test]
fn hostile_remote_proposals_are_refused_and_every_other_task_lands() {
    let t = remote_setup();
    let before = hooks(&t.src);
    let shapes = shapes();
    let names: Vec<String> = (0..shapes.len()).map(|i| format!("h{i}")).collect();
    let mut args: Vec<&str> = names.iter().map(String::as_str).collect();
    args.extend(["good", "l", "--local", "l"]);
    let doc = t.prepare(&args);
    let id = doc["batch"].as_str().unwrap().to_string();
    let local = PathBuf::from(task(&doc, "l")["root"].as_str().unwrap());
    let mut expected = Vec::new();
    for ((extra, path, never), name) in shapes.into_iter().zip(&names) {
        t.push(&id, name, extra);
        expected.push((name.clone(), path, never));
    }
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    std::fs::write(local.join("l.txt"), "local\n").unwrap();
    let doc = t.apply(&[&id], 1);
    for (name, path, never) in &expected {
        assert_refused(task(&doc, name), path);
        for p in never {
            assert!(absent(&t.src, p), "{name}: {p} was written");
        }
    }
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert_eq!(task(&doc, "l")["status"], "applied", "{doc}");
    assert_eq!(std::fs::read(t.src.join("good.txt")).unwrap(), b"good\n");
    assert_eq!(std::fs::read(t.src.join("l.txt")).unwrap(), b"local\n");
    assert!(!t.src.parent().unwrap().join("x").exists());
    assert_eq!(hooks(&t.src), before);
    // The refused tasks stay open with their work; applying again refuses
    // them again and changes nothing.
    let again = t.apply(&[&id], 1);
    assert_eq!(again["applied_paths"], serde_json::json!([]));
    for (name, path, _) in &expected {
        assert_refused(task(&again, name), path);
    }
    assert_eq!(hooks(&t.src), before);
}

#[test]
fn apply_verify_refuses_a_hostile_proposal_and_verifies_the_rest() {
    let t = remote_setup();
    let before = hooks(&t.src);
    let doc = t.prepare(&["h", "l", "--local", "l"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    let local = PathBuf::from(task(&doc, "l")["root"].as_str().unwrap());
    let (extra, path, _) = shapes().remove(0);
    t.push(&id, "h", extra);
    std::fs::write(local.join("l.txt"), "local\n").unwrap();
    let doc = t.apply(&[&id, "--verify", "true"], 1);
    assert_refused(task(&doc, "h"), path);
    assert_eq!(task(&doc, "l")["status"], "applied", "{doc}");
    assert_eq!(doc["verify"]["outcome"], "passed", "{doc}");
    assert_eq!(std::fs::read(t.src.join("l.txt")).unwrap(), b"local\n");
    assert_eq!(hooks(&t.src), before);
}

#[test]
fn apply_kept_refuses_a_hostile_kept_proposal() {
    let t = remote_setup();
    let before = hooks(&t.src);
    let id = t.prepare(&["h"])["batch"].as_str().unwrap().to_string();
    let (extra, path, never) = shapes().remove(0);
    let commit = t.push(&id, "h", extra);
    // Given up: its submitted work is kept as a proposal for gc.keep-failed.
    let doc = t.apply(&[&id, "--discard", "h"], 0);
    let kept_ref = task(&doc, "h")["proposal_ref"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(hooks(&t.src), before);
    let doc = t.apply(&["--kept", &kept_ref], 1);
    let h = &doc["tasks"][0];
    assert_eq!(h["status"], "conflict", "{doc}");
    assert_eq!(h["reason"], "invalid_path", "{doc}");
    assert!(conflict_paths(h).iter().any(|p| p == path), "{doc}");
    for p in never {
        assert!(absent(&t.src, p), "{p} was written");
    }
    assert_eq!(hooks(&t.src), before);
    // Still kept (its clock restarted when it was discarded: same tree).
    assert_eq!(
        t.user
            .git(&t.src, ["rev-parse", &format!("{kept_ref}^{{tree}}")])
            .trim(),
        t.user
            .git(&t.src, ["rev-parse", &format!("{commit}^{{tree}}")])
            .trim()
    );
}

#[test]
fn a_local_workspace_folder_named_dot_git_in_capitals_is_refused_for_its_task_alone() {
    let env = Env::new();
    let src = env.repo("src");
    let before = hooks(&src);
    let doc = env
        .delegate(&src, ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let id = doc["batch"].as_str().unwrap().to_string();
    let ws1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    let ws2 = PathBuf::from(doc["tasks"][1]["root"].as_str().unwrap());
    // On Linux an ordinary folder; git refuses it.
    std::fs::create_dir(ws1.join(".GIT")).unwrap();
    std::fs::write(ws1.join(".GIT/config"), "x\n").unwrap();
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    std::fs::write(ws2.join("b.txt"), "theirs\n").unwrap();
    let doc = env
        .delegate(&src, ["apply", &id, "--json"])
        .expect(1)
        .json();
    let one = task(&doc, "1");
    assert_refused(one, ".GIT/config");
    assert_eq!(conflict_paths(one), vec![".GIT/config"]);
    assert_eq!(task(&doc, "2")["status"], "applied", "{doc}");
    assert_eq!(std::fs::read(src.join("b.txt")).unwrap(), b"theirs\n");
    assert!(absent(&src, ".GIT"));
    assert!(absent(&src, "a.txt"));
    assert_eq!(hooks(&src), before);
    // Its work is kept: the workspace as it was, and the rest of it in the
    // proposal.
    assert_eq!(std::fs::read(ws1.join(".GIT/config")).unwrap(), b"x\n");
    let r = one["proposal_ref"].as_str().unwrap();
    assert_eq!(env.git(&src, ["show", &format!("{r}:a.txt")]), "mine\n");
    assert!(!env
        .git(&src, ["ls-tree", "-r", "--name-only", r])
        .contains(".GIT"));
    // The human text says what to do; once the worker removed it, the
    // command it prints lands the rest.
    let run = env.delegate(&src, ["apply", &id]).expect(1);
    assert!(
        run.stdout
            .contains("task 1: git refuses to check out the paths named above"),
        "{}",
        run.stdout
    );
    let again = crate::common::printed_command(&run.stdout, "git delegate apply");
    std::fs::remove_dir_all(ws1.join(".GIT")).unwrap();
    env.sh(&src, &again).expect(0);
    assert_eq!(std::fs::read(src.join("a.txt")).unwrap(), b"mine\n");
}

#[test]
fn every_shape_a_local_worker_can_make_on_disk_is_refused() {
    let env = Env::new();
    let src = env.repo("src");
    let before = hooks(&src);
    type Make = fn(&Path);
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            ".GIT/config",
            |ws| {
                std::fs::create_dir(ws.join(".GIT")).unwrap();
                std::fs::write(ws.join(".GIT/config"), "x").unwrap();
            },
            ".GIT",
        ),
        (
            "sub/.Git/config",
            |ws| {
                std::fs::create_dir_all(ws.join("sub/.Git")).unwrap();
                std::fs::write(ws.join("sub/.Git/config"), "x").unwrap();
            },
            "sub",
        ),
        (
            "git~1/x",
            |ws| {
                std::fs::create_dir(ws.join("git~1")).unwrap();
                std::fs::write(ws.join("git~1/x"), "x").unwrap();
            },
            "git~1",
        ),
        (
            ".git./x",
            |ws| {
                std::fs::create_dir(ws.join(".git.")).unwrap();
                std::fs::write(ws.join(".git./x"), "x").unwrap();
            },
            ".git.",
        ),
        (
            ".gitmodules",
            |ws| std::os::unix::fs::symlink("README", ws.join(".gitmodules")).unwrap(),
            ".gitmodules",
        ),
        (
            ".gitattributes",
            |ws| std::os::unix::fs::symlink("/etc/passwd", ws.join(".gitattributes")).unwrap(),
            ".gitattributes",
        ),
    ];
    for (path, make, never) in cases {
        let doc = env.delegate(&src, ["prepare", "--json"]).expect(0).json();
        let id = doc["batch"].as_str().unwrap().to_string();
        let ws = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
        make(&ws);
        let dry = env
            .delegate(&src, ["apply", &id, "--dry-run", "--json"])
            .expect(1)
            .json();
        assert_eq!(task(&dry, "1")["reason"], "invalid_path", "{path}: {dry}");
        let doc = env
            .delegate(&src, ["apply", &id, "--json"])
            .expect(1)
            .json();
        let t = task(&doc, "1");
        assert_eq!(t["status"], "conflict", "{path}: {doc}");
        assert_eq!(t["reason"], "invalid_path", "{path}: {doc}");
        assert_eq!(conflict_paths(t), vec![path.to_string()], "{doc}");
        assert!(absent(&src, never), "{path} was written");
        assert_eq!(hooks(&src), before);
        env.delegate(&src, ["drop", &id, "--force"]).expect(0);
    }
}

#[test]
fn refresh_of_a_workspace_holding_a_dot_git_alias_names_it_and_writes_nothing() {
    let env = Env::new();
    let src = env.repo("src");
    let doc = env.delegate(&src, ["prepare", "--json"]).expect(0).json();
    let ws = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    std::fs::create_dir(ws.join(".GIT")).unwrap();
    std::fs::write(ws.join(".GIT/config"), "x\n").unwrap();
    // Something for refresh to bring over.
    std::fs::write(src.join("README"), "hello\nmore\n").unwrap();
    let head = env.git(&ws, ["rev-parse", "HEAD"]);
    let run = env.delegate(&src, ["refresh", "--json"]).expect(3);
    let e = &run.json()["error"];
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains(".GIT/config"),
        "{e}"
    );
    assert!(!e["help"].as_str().unwrap().contains("fsck"), "{e}");
    assert_eq!(std::fs::read(ws.join("README")).unwrap(), b"hello\n");
    assert_eq!(env.git(&ws, ["rev-parse", "HEAD"]), head);
}

#[test]
fn undo_of_an_entry_moved_to_a_hostile_commit_writes_nothing() {
    let env = Env::new();
    let src = env.repo("src");
    let before = hooks(&src);
    let doc = env
        .delegate(&src, ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let id = doc["batch"].as_str().unwrap().to_string();
    let ws1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    let ws2 = PathBuf::from(doc["tasks"][1]["root"].as_str().unwrap());
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    let doc = env
        .delegate(&src, ["apply", &id, "--only", "1", "--json"])
        .expect(0)
        .json();
    let apply_id = doc["apply_id"].as_str().unwrap().to_string();
    // The worker of task 2 shares the repository: it points the undo entry
    // at an `S` that holds a hook, so that undoing "restores" it.
    let blob = git_in(&env, &ws2, &["hash-object", "-w", "--stdin"], b"mine\n");
    let f_tree = write_tree(&env, &ws2, vec![("100644".into(), b"a.txt".to_vec(), blob)]);
    let (mode, hooks_dir) = write_node(
        &env,
        &ws2,
        &dir(vec![(
            b"hooks",
            dir(vec![(
                b"pre-commit",
                Node::Exec(b"#!/bin/sh\necho pwned\n"),
            )]),
        )]),
    );
    let s_tree = write_tree(&env, &ws2, vec![(mode, b".git".to_vec(), hooks_dir)]);
    let s = env.git(&ws2, ["commit-tree", &s_tree, "-m", "S"]);
    let f = env.git(&ws2, ["commit-tree", &f_tree, "-p", s.trim(), "-m", "F"]);
    env.git(
        &ws2,
        [
            "update-ref",
            &format!("refs/pi-delegate/undo/{apply_id}/entry"),
            f.trim(),
        ],
    );
    let run = env.delegate(&src, ["undo", "--json"]).expect(3);
    let e = &run.json()["error"];
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(".git/hooks/pre-commit"),
        "{e}"
    );
    assert_eq!(hooks(&src), before);
    assert_eq!(std::fs::read(src.join("a.txt")).unwrap(), b"mine\n");
}

#[test]
fn a_source_holding_a_path_git_refuses_gets_a_diagnostic_naming_it() {
    let env = Env::new();
    let src = env.repo("src");
    std::fs::create_dir(src.join(".GIT")).unwrap();
    std::fs::write(src.join(".GIT/x"), "x\n").unwrap();
    let run = env.delegate(&src, ["prepare", "--json"]).expect(3);
    let e = &run.json()["error"];
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(e["message"].as_str().unwrap().contains(".GIT/x"), "{e}");
    assert!(!e["help"].as_str().unwrap().contains("fsck"), "{e}");
    assert_eq!(
        e["invalid_paths"],
        serde_json::json!([{"path": ".GIT/x", "reason": ".git or an alias of it"}]),
        "{e}"
    );
    let run = env.delegate(&src, ["prepare"]).expect(3);
    assert!(run.stderr.contains(".GIT/x"), "{}", run.stderr);
    assert!(!run.stderr.contains("fsck"), "{}", run.stderr);
    assert!(env.private_refs(&src).is_empty());
    std::fs::remove_dir_all(src.join(".GIT")).unwrap();

    // One that appears after prepare: apply names it and writes nothing.
    let doc = env.delegate(&src, ["prepare", "--json"]).expect(0).json();
    let id = doc["batch"].as_str().unwrap().to_string();
    let ws = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    std::fs::write(ws.join("c.txt"), "c\n").unwrap();
    std::fs::create_dir(src.join("git~1")).unwrap();
    std::fs::write(src.join("git~1/x"), "x\n").unwrap();
    let run = env
        .delegate_cmd(&src)
        .env("GIT_DELEGATE_FULL_SOURCE_SNAPSHOT", "1")
        .args(["apply", &id, "--json"])
        .output()
        .unwrap();
    let run = crate::common::Run::from(run).expect(3);
    let e = &run.json()["error"];
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(e["message"].as_str().unwrap().contains("git~1/x"), "{e}");
    assert!(absent(&src, "c.txt"));
}

#[test]
fn submit_refuses_a_workspace_holding_a_path_git_refuses() {
    let t = remote_setup();
    let id = t.prepare(&["w"])["batch"].as_str().unwrap().to_string();
    let worker = Env::new();
    let doc = worker
        .delegate(worker.path(), ["join", &t.url, &id, "w", "--json"])
        .expect(0)
        .json();
    let ws = PathBuf::from(doc["root"].as_str().unwrap());
    std::fs::create_dir(ws.join(".GIT")).unwrap();
    std::fs::write(ws.join(".GIT/config"), "x\n").unwrap();
    let run = worker.delegate(&ws, ["submit", "--json"]).expect(3);
    let e = &run.json()["error"];
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains(".GIT/config"),
        "{e}"
    );
    let refs = t.user.git(
        &t.bare,
        ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
    );
    assert!(!refs.contains("/tasks/w/proposal"), "{refs}");
}

#[test]
fn apply_from_undo_refuses_a_kept_proposal_moved_to_a_hostile_commit() {
    let env = Env::new();
    let src = env.repo("src");
    let before = hooks(&src);
    let doc = env
        .delegate(&src, ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let id = doc["batch"].as_str().unwrap().to_string();
    let ws1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    let ws2 = PathBuf::from(doc["tasks"][1]["root"].as_str().unwrap());
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    let doc = env
        .delegate(&src, ["apply", &id, "--only", "1", "--json"])
        .expect(0)
        .json();
    let apply_id = doc["apply_id"].as_str().unwrap().to_string();
    env.delegate(&src, ["undo", "--json"]).expect(0);
    assert!(absent(&src, "a.txt"));
    // The worker of task 2 moves the undone apply's kept proposal to a
    // commit on the baseline that writes a hook.
    let baseline = env.git(
        &ws2,
        [
            "rev-parse",
            &format!("refs/pi-delegate/batches/{id}/baseline"),
        ],
    );
    let (extra, path, _) = shapes().remove(0);
    let hostile = commit_on(&env, &ws2, baseline.trim(), extra);
    env.git(
        &ws2,
        [
            "update-ref",
            &format!("refs/pi-delegate/undo/{apply_id}/tasks/1"),
            &hostile,
        ],
    );
    let doc = env
        .delegate(&src, ["apply", "--from-undo", &apply_id, "--json"])
        .expect(1)
        .json();
    let t = &doc["tasks"][0];
    assert_eq!(t["reason"], "invalid_path", "{doc}");
    assert!(conflict_paths(t).iter().any(|p| p == path), "{doc}");
    assert_eq!(doc["applied_paths"], serde_json::json!([]), "{doc}");
    assert_eq!(hooks(&src), before);
}

#[test]
fn diff_source_leaves_out_a_task_holding_a_path_git_refuses() {
    let env = Env::new();
    let src = env.repo("src");
    let doc = env
        .delegate(&src, ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let ws1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    let ws2 = PathBuf::from(doc["tasks"][1]["root"].as_str().unwrap());
    std::fs::create_dir(ws1.join(".GIT")).unwrap();
    std::fs::write(ws1.join(".GIT/config"), "x\n").unwrap();
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    std::fs::write(ws2.join("b.txt"), "theirs\n").unwrap();
    let run = env.delegate(&src, ["diff", "--source"]).expect(0);
    assert!(run.stdout.contains("b.txt"), "{}", run.stdout);
    assert!(!run.stdout.contains("a.txt"), "{}", run.stdout);
    assert!(
        run.stderr.contains("note: task 1 left out") && run.stderr.contains("invalid_path"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(".GIT/config"), "{}", run.stderr);
}

/// Tree entries to add at the top of a proposal.
type Extra = Vec<(&'static [u8], Node)>;

/// Bytes that live for the test (tree entries take `'static` names).
fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

#[test]
fn overlong_names_and_bad_symlink_targets_from_a_remote_are_refused_alone() {
    let t = remote_setup();
    let long = leak(vec![b'n'; 256]);
    let long_target = leak(vec![b'a'; 4096]);
    let cases: Vec<(&str, Extra, String)> = vec![
        (
            "long",
            vec![(b"d", dir(vec![(long, Node::File(b"x\n"))]))],
            format!("d/{}", "n".repeat(256)),
        ),
        ("empty", vec![(b"e", Node::Link(b""))], "e".into()),
        ("nul", vec![(b"z", Node::Link(b"a\0b"))], "z".into()),
        ("far", vec![(b"f", Node::Link(long_target))], "f".into()),
    ];
    let mut args: Vec<&str> = cases.iter().map(|c| c.0).collect();
    args.push("good");
    let id = t.prepare(&args)["batch"].as_str().unwrap().to_string();
    let mut expected = Vec::new();
    for (name, extra, path) in cases {
        t.push(&id, name, extra);
        expected.push((name, path));
    }
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let doc = t.apply(&[&id], 1);
    for (name, path) in &expected {
        assert_refused(task(&doc, name), path);
    }
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    for p in ["d", "e", "z", "f"] {
        assert!(absent(&t.src, p), "{p} was written");
    }
}

#[test]
fn duplicate_or_unsorted_tree_entries_from_a_remote_are_refused_alone() {
    let t = remote_setup();
    let id = t.prepare(&["dup", "order", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.push(
        &id,
        "dup",
        vec![(
            b"d",
            Node::RawDir(vec![
                (b"x", Node::File(b"first\n")),
                (b"x", Node::File(b"second\n")),
            ]),
        )],
    );
    t.push(
        &id,
        "order",
        vec![(
            b"o",
            Node::RawDir(vec![(b"b", Node::File(b"b\n")), (b"a", Node::File(b"a\n"))]),
        )],
    );
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let doc = t.apply(&[&id], 1);
    let dup = task(&doc, "dup");
    assert_refused(dup, "d/x");
    assert_eq!(
        dup["conflicts"][0]["reason"], "duplicate tree entry",
        "{dup}"
    );
    let order = task(&doc, "order");
    assert_refused(order, "o/a");
    assert_eq!(
        order["conflicts"][0]["reason"], "tree entries out of order",
        "{order}"
    );
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert!(absent(&t.src, "d") && absent(&t.src, "o"), "{doc}");
}

#[test]
fn a_gitlink_from_a_remote_proposal_is_a_submodule_conflict_keeping_the_work() {
    let t = remote_setup();
    let id = t.prepare(&["sub", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.push(
        &id,
        "sub",
        vec![
            (
                b"m",
                Node::Gitlink("0123456789abcdef0123456789abcdef01234567"),
            ),
            (b"with.txt", Node::File(b"with\n")),
        ],
    );
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let doc = t.apply(&[&id], 1);
    let sub = task(&doc, "sub");
    assert_eq!(sub["status"], "conflict", "{sub}");
    assert_eq!(sub["reason"], "submodule_changed", "{sub}");
    assert_eq!(conflict_paths(sub), vec!["m".to_string()], "{sub}");
    assert!(sub["proposal_ref"].is_string(), "{sub}");
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert!(absent(&t.src, "m") && absent(&t.src, "with.txt"), "{doc}");
    let ls = t.user.git(&t.src, ["ls-files", "-s"]);
    assert!(!ls.contains("160000"), "{ls}");
}

#[test]
fn hooks_planted_in_the_source_never_run_during_the_products_git_calls() {
    let t = remote_setup();
    let marker = t.user.path().join("hook-ran");
    let hook = t.src.join(".git/hooks/reference-transaction");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The user's own configuration through the environment is kept.
    let id = t.prepare(&["r"])["batch"].as_str().unwrap().to_string();
    t.push(&id, "r", vec![(b"fine.txt", Node::File(b"fine\n"))]);
    t.apply(&[&id], 0);
    assert_eq!(std::fs::read(t.src.join("fine.txt")).unwrap(), b"fine\n");
    assert!(
        !marker.exists(),
        "a hook ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    // The hook itself works (git runs it for the user's own ref updates).
    t.user
        .git(&t.src, ["update-ref", "refs/heads/probe", "HEAD"]);
    assert!(marker.exists());
}

#[test]
fn a_path_bomb_from_a_remote_proposal_is_refused_and_nothing_of_it_is_written() {
    let t = remote_setup();
    let id = t.prepare(&["bomb", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    // 4 folders sharing one tree of 8 files: 32 changed paths, 8 objects.
    let files = || {
        dir((0..8)
            .map(|i| (leak(format!("f{i}").into_bytes()), Node::File(b"x\n")))
            .collect())
    };
    t.push(
        &id,
        "bomb",
        (0..4)
            .map(|i| (leak(format!("d{i}").into_bytes()), files()))
            .collect(),
    );
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let apply = |bound: &str| {
        let out = t
            .user
            .delegate_cmd(&t.src)
            .env("GIT_DELEGATE_TEST_MAX_CHANGED_PATHS", bound)
            .args(["apply", "--json", &id])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    // The bound counts each name a shared tree appears under.
    let doc = apply("20");
    let bomb = task(&doc, "bomb");
    assert_eq!(bomb["status"], "conflict", "{bomb}");
    assert_eq!(bomb["reason"], "invalid_path", "{bomb}");
    assert_eq!(
        bomb["conflicts"][0]["reason"], "too many changed paths (more than 1000000)",
        "{bomb}"
    );
    assert!(bomb["proposal_ref"].is_string(), "{bomb}");
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    for i in 0..4 {
        assert!(absent(&t.src, &format!("d{i}")), "{doc}");
    }
    // Under the bound it lands.
    let doc = apply("32");
    assert_eq!(task(&doc, "bomb")["status"], "applied", "{doc}");
    assert_eq!(std::fs::read(t.src.join("d3/f7")).unwrap(), b"x\n");
}
