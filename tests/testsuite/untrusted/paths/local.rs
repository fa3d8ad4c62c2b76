//! Paths git refuses made on disk: by a local worker in its workspace
//! (refused for its task alone, by apply, refresh and `diff --source`),
//! in the source itself, and hooks planted in the source.
use crate::common::files::read_bytes;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use super::*;
use crate::common::assert_has;
use crate::common::fixtures::prepare;

/// Task 1 of a batch of two writes `a.txt` and a folder `.GIT` (on Linux
/// an ordinary folder; git refuses it), task 2 writes `b.txt`: task 1's
/// workspace.
fn dot_git_in_capitals_beside_a_plain_task(doc: &serde_json::Value) -> PathBuf {
    let ws1 = task_root(doc, 0);
    let ws2 = task_root(doc, 1);
    std::fs::create_dir(ws1.join(".GIT")).unwrap();
    std::fs::write(ws1.join(".GIT/config"), "x\n").unwrap();
    std::fs::write(ws1.join("a.txt"), "mine\n").unwrap();
    std::fs::write(ws2.join("b.txt"), "theirs\n").unwrap();
    ws1
}

#[test]
fn a_local_workspace_folder_named_dot_git_in_capitals_is_refused_for_its_task_alone() {
    let (env, src) = Env::with_repo("src");
    let before = hooks(&src);
    let doc = prepare(&env, &src, &["-n", "2"]);
    let id = id(&doc);
    let ws1 = dot_git_in_capitals_beside_a_plain_task(&doc);
    let doc = env
        .delegate(&src, ["apply", &id, "--json"])
        .expect(1)
        .json();
    let one = task(&doc, "1");
    assert_refused(one, ".GIT/config");
    assert_eq!(conflict_paths(one), vec![".GIT/config"]);
    assert_eq!(task(&doc, "2")["status"], "applied", "{doc}");
    assert_eq!(read_bytes(&src.join("b.txt")), b"theirs\n");
    assert!(absent(&src, ".GIT"));
    assert!(absent(&src, "a.txt"));
    assert_eq!(hooks(&src), before);
    // Its work is kept: the workspace as it was, and the rest of it in the
    // proposal.
    assert_eq!(read_bytes(&ws1.join(".GIT/config")), b"x\n");
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
    assert_eq!(read_bytes(&src.join("a.txt")), b"mine\n");
}

#[test]
fn every_shape_a_local_worker_can_make_on_disk_is_refused() {
    let (env, src) = Env::with_repo("src");
    let before = hooks(&src);
    // (the path the worker makes, a link's target or none for a file "x",
    // what must never appear in the source)
    let cases: [(&str, Option<&str>, &str); 6] = [
        (".GIT/config", None, ".GIT"),
        ("sub/.Git/config", None, "sub"),
        ("git~1/x", None, "git~1"),
        (".git./x", None, ".git."),
        (".gitmodules", Some("README"), ".gitmodules"),
        (".gitattributes", Some("/etc/passwd"), ".gitattributes"),
    ];
    for (path, link_to, never) in cases {
        let doc = prepare(&env, &src, &[]);
        let id = id(&doc);
        let ws = task_root(&doc, 0);
        match link_to {
            Some(target) => std::os::unix::fs::symlink(target, ws.join(path)).unwrap(),
            None => crate::common::fixtures::write(&ws.join(path), "x"),
        }
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
    let (env, src) = Env::with_repo("src");
    let doc = prepare(&env, &src, &[]);
    let ws = task_root(&doc, 0);
    std::fs::create_dir(ws.join(".GIT")).unwrap();
    std::fs::write(ws.join(".GIT/config"), "x\n").unwrap();
    // Something for refresh to bring over.
    std::fs::write(src.join("README"), "hello\nmore\n").unwrap();
    let head = env.git(&ws, ["rev-parse", "HEAD"]);
    let run = env.delegate(&src, ["refresh", "--json"]).expect(3);
    let e = &invalid_path_error(&run, ".GIT/config");
    assert!(!e["help"].as_str().unwrap().contains("fsck"), "{e}");
    assert_eq!(read_bytes(&ws.join("README")), b"hello\n");
    assert_eq!(env.git(&ws, ["rev-parse", "HEAD"]), head);
}

#[test]
fn a_source_holding_a_path_git_refuses_gets_a_diagnostic_naming_it() {
    let (env, src) = Env::with_repo("src");
    std::fs::create_dir(src.join(".GIT")).unwrap();
    std::fs::write(src.join(".GIT/x"), "x\n").unwrap();
    let run = env.delegate(&src, ["prepare", "--json"]).expect(3);
    let e = &invalid_path_error(&run, ".GIT/x");
    assert!(!e["help"].as_str().unwrap().contains("fsck"), "{e}");
    assert_eq!(
        e["invalid_paths"],
        serde_json::json!([{"path": ".GIT/x", "reason": ".git or an alias of it"}]),
        "{e}"
    );
    let run = env.delegate(&src, ["prepare"]).expect(3);
    assert_has(&run.stderr, ".GIT/x");
    assert!(!run.stderr.contains("fsck"), "{}", run.stderr);
    assert!(env.private_refs(&src).is_empty());
    std::fs::remove_dir_all(src.join(".GIT")).unwrap();

    // One that appears after prepare: apply names it and writes nothing.
    let doc = prepare(&env, &src, &[]);
    let id = id(&doc);
    let ws = task_root(&doc, 0);
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
    invalid_path_error(&run, "git~1/x");
    assert!(absent(&src, "c.txt"));
}

#[test]
fn diff_source_leaves_out_a_task_holding_a_path_git_refuses() {
    let (env, src) = Env::with_repo("src");
    let doc = prepare(&env, &src, &["-n", "2"]);
    dot_git_in_capitals_beside_a_plain_task(&doc);
    let run = env.delegate(&src, ["diff", "--source"]).expect(0);
    assert_has(&run.stdout, "b.txt");
    assert!(!run.stdout.contains("a.txt"), "{}", run.stdout);
    assert!(
        run.stderr.contains("note: task 1 left out") && run.stderr.contains("invalid_path"),
        "{}",
        run.stderr
    );
    assert_has(&run.stderr, ".GIT/config");
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
    assert_eq!(read_bytes(&t.src.join("fine.txt")), b"fine\n");
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
