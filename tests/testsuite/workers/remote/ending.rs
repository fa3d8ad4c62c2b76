//! The end of a remote batch: `drop` and `gc` delete the remote refs (gc
//! rescuing submitted work first), a discarded task keeps what it
//! submitted.

use super::*;
use crate::common::fixtures::strs;
use crate::common::fixtures::wait_stale;

#[test]
fn drop_deletes_the_remote_refs() {
    let t = Two::new();
    // Another open batch: a remote task hosts none (it has no folder here).
    let other = t.prepare_id(&["o", "--label", "other"]);
    let id = t.prepare_id(&["a"]);
    let wa = t.join(&id, "a");
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    t.submit(&wa);
    assert_eq!(t.remote_refs().len(), 3);
    // What a worker submitted is unapplied work: drop refuses without --force.
    let refused = t
        .user
        .delegate(&t.src, ["drop", &id, "--json"])
        .expect(1)
        .json();
    assert_eq!(refused["unapplied"], serde_json::json!(["a"]));
    assert!(refused.get("hosts_open_batches").is_none(), "{refused}");
    // Nothing submitted: nothing stands in the way.
    t.user.delegate(&t.src, ["drop", &other]).expect(0);
    t.user.delegate(&t.src, ["drop", &id, "--force"]).expect(0);
    assert_eq!(t.remote_refs(), Vec::<String>::new());
}

#[test]
fn gc_rescues_submitted_work_and_deletes_the_remote_refs() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b", "--ttl", "1s"]);
    let wa = t.join(&id, "a");
    std::fs::write(wa.join("a.txt"), "rescue me\n").unwrap();
    let pa = t.submit(&wa)["proposal"].as_str().unwrap().to_string();
    // A second batch through another remote, which is away when gc runs.
    let far = t.user.path().join("far.git");
    t.user.git(
        t.user.path(),
        ["clone", "-q", "--bare", t.bare.to_str().unwrap(), "far.git"],
    );
    let far_url = format!("file://{}", far.display());
    let other = t
        .user
        .delegate(
            &t.src,
            [
                "prepare", "--remote", &far_url, "z", "--ttl", "1s", "--label", "other", "--json",
            ],
        )
        .expect(0)
        .json()["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let wz = t
        .worker
        .delegate(t.worker.path(), ["join", &far_url, &other, "z", "--json"])
        .expect(0)
        .json()["root"]
        .as_str()
        .map(PathBuf::from)
        .unwrap();
    std::fs::write(wz.join("z.txt"), "z\n").unwrap();
    t.submit(&wz);
    wait_stale(&t.user, &t.src, &id);
    wait_stale(&t.user, &t.src, &other);
    let moved = t.user.path().join("moved.git");
    std::fs::rename(&far, &moved).unwrap();

    let gc = t.user.delegate(&t.src, ["gc", "--json"]).expect(0).json();
    let mut ended: Vec<&str> = strs(&gc["batches"]);
    ended.sort();
    let mut both = vec![id.as_str(), other.as_str()];
    both.sort();
    assert_eq!(ended, both);
    // What a reachable remote held was rescued, and its refs there deleted.
    let rescued = gc["rescued"].as_array().unwrap();
    assert_eq!(rescued.len(), 1, "{gc}");
    assert_eq!(rescued[0]["task"], "a");
    let kept_ref = format!("refs/pi-delegate/batches/{id}/tasks/a/proposal");
    assert_eq!(rescued[0]["ref"], kept_ref.as_str());
    assert_eq!(t.user.git(&t.src, ["rev-parse", &kept_ref]).trim(), pa);
    assert_eq!(t.remote_refs(), Vec::<String>::new());
    // The unreachable one: a warning naming its refs, kept there for later.
    let w = &gc["warnings"][0];
    assert_eq!(w["code"], "remote_refs_left");
    assert_eq!(w["remote"], far_url.as_str());
    assert!(w["refs"]
        .as_array()
        .unwrap()
        .contains(&Value::String(format!(
            "refs/pi-delegate/batches/{other}/tasks/z/proposal"
        ))));
    std::fs::rename(&moved, &far).unwrap();
    assert_eq!(
        t.user
            .git(
                &far,
                ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"]
            )
            .lines()
            .count(),
        2
    );
    // The rescued work lands like any kept proposal.
    t.user
        .delegate(&t.src, ["apply", "--kept", &kept_ref])
        .expect(0);
    assert_eq!(read(&t.src.join("a.txt")), "rescue me\n");
}

#[test]
fn a_discarded_remote_task_keeps_what_it_submitted() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b"]);
    let wa = t.join(&id, "a");
    std::fs::write(wa.join("a.txt"), "keep me\n").unwrap();
    t.submit(&wa);
    let ap = t
        .user
        .delegate(
            &t.src,
            ["apply", &id, "--discard", "a", "--discard", "b", "--json"],
        )
        .expect(0)
        .json();
    assert_eq!(status_of(&ap, "a"), "discarded");
    assert_eq!(ap["batch_open"], false);
    let kept_ref = format!("refs/pi-delegate/batches/{id}/tasks/a/proposal");
    assert_eq!(ap["tasks"][0]["proposal_ref"], kept_ref.as_str());
    assert!(!t.src.join("a.txt").exists());
    // The remote refs are gone; the work is kept here and lands on request.
    assert_eq!(t.remote_refs(), Vec::<String>::new());
    t.user
        .delegate(&t.src, ["apply", "--kept", &kept_ref])
        .expect(0);
    assert_eq!(read(&t.src.join("a.txt")), "keep me\n");
}
