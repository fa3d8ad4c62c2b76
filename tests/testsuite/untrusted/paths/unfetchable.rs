//! Remote proposals git will not fetch (design §3.18 "Bounded work on
//! remote bytes"): a tree entry with an empty name, and folders nested
//! deeper than git's maximum tree depth (`core.maxTreeDepth`, 4096), both
//! written straight into the bare remote, where the remote's upload-pack
//! refuses to send them. Each fails its own task (`failed`,
//! `invalid_path`, git's words quoted); the other tasks, local and remote,
//! land; `--discard` ends them without their objects; gc rescues the
//! rest; and none of it is worded as an unreachable remote.
use crate::common::assert_has;
use crate::common::files::read_bytes;
use crate::common::fixtures::{task_root, wait_stale};

use super::*;

impl Remote {
    fn set_proposal(&self, id: &str, task: &str, commit: &str) {
        self.attacker.git(
            &self.bare,
            [
                "update-ref",
                &format!("refs/pi-delegate/batches/{id}/tasks/{task}/proposal"),
                commit,
            ],
        );
    }

    /// Task `task`'s proposal, written into the bare remote: the baseline
    /// with a folder `evil` holding a file whose name is empty.
    fn empty_name(&self, id: &str, task: &str) {
        let a = &self.attacker;
        let blob = git_in(a, &self.bare, &["hash-object", "-w", "--stdin"], b"x\n");
        let evil = write_raw_tree(a, &self.bare, vec![("100644".into(), Vec::new(), blob)]);
        let base = self.baseline_in_remote(id);
        let commit = with_folder(a, &self.bare, &base, "evil", &evil);
        self.set_proposal(id, task, &commit);
    }
}

/// Task `name` of `doc` failed alone on what git said (`said`).
fn assert_unfetchable(doc: &Value, name: &str, said: &str) {
    let t = task(doc, name);
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["reason"], "invalid_path", "{t}");
    let message = t["message"].as_str().unwrap();
    assert_has(message, said);
    assert_has(message, "git refuses to fetch");
    assert!(!message.contains("reachable"), "{t}");
}

#[test]
fn one_unfetchable_proposal_fails_alone_and_the_others_land() {
    let t = remote_setup();
    let doc = t.prepare(&["empty", "deep", "good", "here", "--local", "here"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    std::fs::write(task_root(&doc, 3).join("here.txt"), "local\n").unwrap();
    t.empty_name(&id, "empty");
    t.nested(&id, "deep", "d", 5000);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);

    // The dry run fetches objects only, one at a time the same way.
    let dry = t.apply(&[&id, "--dry-run"], 1);
    assert_unfetchable(&dry, "empty", "empty filename in tree entry");
    assert_eq!(task(&dry, "good")["status"], "applied", "{dry}");
    assert!(absent(&t.src, "good.txt"));
    let doc = t.apply(&[&id], 1);
    assert_unfetchable(&doc, "empty", "empty filename in tree entry");
    assert_unfetchable(&doc, "deep", "exceeded maximum allowed tree depth");
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert_eq!(task(&doc, "here")["status"], "applied", "{doc}");
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
    assert_eq!(read_bytes(&t.src.join("here.txt")), b"local\n");
    assert_eq!(doc["batch_open"], true);
    assert!(absent(&t.src, "evil") && absent(&t.src, "d"));

    // People read what git said, and that the worker submits again; never
    // that the remote is unreachable.
    let run = t.user.delegate(&t.src, ["apply", &id]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    assert_has(&text, "empty filename in tree entry");
    assert_has(&text, "exceeded maximum allowed tree depth");
    assert!(!text.contains("reachable"), "{text}");

    // `status --fetch` lists both as submitted.
    let st = t
        .user
        .delegate(&t.src, ["status", "--fetch", "--json"])
        .expect(0)
        .json();
    for name in ["empty", "deep"] {
        let x = st["batches"][0]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap();
        assert_eq!(x["submitted"], true, "{st}");
    }

    // Discarded, they end the batch without their objects; their refs on
    // the remote go (nothing can fetch them), with nothing left to report.
    let doc = t.apply(&[&id, "--discard", "empty", "--discard", "deep"], 0);
    for name in ["empty", "deep"] {
        let x = task(&doc, name);
        assert_eq!(x["status"], "discarded", "{doc}");
        assert_has(x["message"].as_str().unwrap(), "git refuses to fetch");
    }
    assert_eq!(doc["batch_open"], false, "{doc}");
    assert!(doc["warnings"]
        .as_array()
        .is_none_or(|w| w.iter().all(|w| w["code"] != "remote_refs_left")));
    let left = t.user.git(
        &t.bare,
        ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
    );
    assert_eq!(left, "", "{left}");
}

#[test]
fn branch_of_an_unfetchable_proposal_names_what_git_said() {
    let t = remote_setup();
    let id = t.prepare(&["empty", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.empty_name(&id, "empty");
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let run = t
        .user
        .delegate(&t.src, ["branch", "empty", "--json"])
        .expect(3);
    let e = run.json()["error"].clone();
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert_has(
        e["message"].as_str().unwrap(),
        "empty filename in tree entry",
    );
    assert!(!e["help"].as_str().unwrap().contains("reachable"), "{e}");
    // The good one publishes.
    t.user
        .delegate(&t.src, ["branch", "good", "--json"])
        .expect(0);
}

#[test]
fn gc_rescues_the_rest_of_a_batch_with_an_unfetchable_proposal() {
    let t = remote_setup();
    let id = t.prepare(&["deep", "good", "--ttl", "1s"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.nested(&id, "deep", "d", 5000);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    wait_stale(&t.user, &t.src, &id);
    let gc = t.user.delegate(&t.src, ["gc", "--json"]).expect(0).json();
    let rescued: Vec<&str> = gc["rescued"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task"].as_str().unwrap())
        .collect();
    assert_eq!(rescued, vec!["good"], "{gc}");
    let left = t.user.git(
        &t.bare,
        ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
    );
    assert_eq!(left, "", "{left}");
    let good = format!("refs/pi-delegate/batches/{id}/tasks/good/proposal");
    t.user
        .delegate(&t.src, ["apply", "--kept", &good])
        .expect(0);
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
}

#[test]
fn a_remote_that_stops_answering_after_the_listing_is_still_unreachable() {
    // The remote answers `git ls-remote` once, then nothing: every fetch
    // fails and so does the listing again, so the remote is the cause.
    let t = remote_setup();
    let id = t.prepare(&["a", "b"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.push(&id, "a", vec![(b"a.txt", Node::File(b"a\n"))]);
    t.push(&id, "b", vec![(b"b.txt", Node::File(b"b\n"))]);
    let mark = t.user.path().join("answered");
    let script = t.user.path().join("upload-pack-once");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ -e '{m}' ] && exit 1\n: > '{m}'\nexec git-upload-pack \"$@\"\n",
            m = mark.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    t.user.git(
        &t.src,
        [
            "config",
            "remote.origin.uploadpack",
            script.to_str().unwrap(),
        ],
    );
    let doc = t.apply(&[&id], 3);
    assert_eq!(doc["error"]["code"], "delegate::remote_failed", "{doc}");
    assert!(absent(&t.src, "a.txt") && absent(&t.src, "b.txt"));
}
