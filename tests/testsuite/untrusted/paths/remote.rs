//! Hostile trees from a remote worker: pushed as a submission (every
//! shape refused alone, the other tasks land, with `--verify` and kept
//! proposals too), overlong names, bad symlink targets, duplicate or
//! unsorted entries, gitlinks, a path bomb; and `submit` refusing them
//! before they leave.
use crate::common::files::read_bytes;
use crate::common::fixtures::id;

use super::*;
use crate::common::assert_has;

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
    assert_has(&run.stdout, "invalid_path");
    assert_has(&run.stdout, path);
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
    assert_eq!(read_bytes(&t.src.join("fine.txt")), b"fine\n");
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
    let id = id(&doc);
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
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
    assert_eq!(read_bytes(&t.src.join("l.txt")), b"local\n");
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
    let id = id(&doc);
    let local = PathBuf::from(task(&doc, "l")["root"].as_str().unwrap());
    let (extra, path, _) = shapes().remove(0);
    t.push(&id, "h", extra);
    std::fs::write(local.join("l.txt"), "local\n").unwrap();
    let doc = t.apply(&[&id, "--verify", "true"], 1);
    assert_refused(task(&doc, "h"), path);
    assert_eq!(task(&doc, "l")["status"], "applied", "{doc}");
    assert_eq!(doc["verify"]["outcome"], "passed", "{doc}");
    assert_eq!(read_bytes(&t.src.join("l.txt")), b"local\n");
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
    invalid_path_error(&run, ".GIT/config");
    let refs = t.user.git(
        &t.bare,
        ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
    );
    assert!(!refs.contains("/tasks/w/proposal"), "{refs}");
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
    assert_eq!(read_bytes(&t.src.join("d3/f7")), b"x\n");
}
