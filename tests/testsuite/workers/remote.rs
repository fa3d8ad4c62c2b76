//! Workers on other machines through a git remote (design §3.14): two
//! machines simulated in one test: a bare repository reached over
//! `file://` as the remote, the user's clone (the source), and a worker with
//! its own HOME and folder (another `Env`).

use std::path::{Path, PathBuf};

use crate::common::files::read;
use crate::common::remote::Two;
use crate::common::Env;
use serde_json::Value;

impl Two {
    fn remote_refs(&self) -> Vec<String> {
        self.user
            .git(
                &self.bare,
                ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
            )
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn apply(&self, id: &str, code: i32) -> Value {
        self.user
            .delegate(&self.src, ["apply", id, "--json"])
            .expect(code)
            .json()
    }
}

fn status_of<'a>(doc: &'a Value, task: &str) -> &'a str {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == task)
        .unwrap_or_else(|| panic!("no task {task} in {doc}"))["status"]
        .as_str()
        .unwrap()
}

#[test]
fn round_trip_with_three_remote_tasks() {
    let t = Two::new();
    let doc = t.prepare(&["a", "b", "c"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    assert_eq!(doc["remote"]["name"], "origin");
    assert_eq!(doc["remote"]["url"], t.url.as_str());
    for task in doc["tasks"].as_array().unwrap() {
        assert_eq!(task["remote"], true);
        assert!(task["root"].is_null() && task["cwd"].is_null());
        assert_eq!(task["exists"], false);
        assert_eq!(
            task["join"].as_str().unwrap(),
            format!(
                "git delegate join {} {id} {}",
                t.url,
                task["name"].as_str().unwrap()
            )
        );
    }
    // No local workspace was made; the baseline is on the remote, same name.
    assert!(
        !t.user.workspace_root().exists()
            || std::fs::read_dir(t.user.workspace_root())
                .unwrap()
                .all(|e| {
                    let p = e.unwrap().path();
                    walk_empty(&p)
                })
    );
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        t.user
            .git(
                &t.bare,
                [
                    "rev-parse",
                    &format!("refs/pi-delegate/batches/{id}/baseline")
                ]
            )
            .trim(),
        baseline
    );

    // A server that allows filters: the workers' clones are partial.
    t.user
        .git(&t.bare, ["config", "uploadpack.allowFilter", "true"]);
    let wa = t.join(&id, "a");
    let wb = t.join(&id, "b");
    let wc = t.join(&id, "c");
    assert!(missing_objects(&t.worker, &wa) > 0, "not a partial clone");
    // Default folder: <repo-name>-<batch-short>-<task> in the worker's folder.
    assert_eq!(wa, t.worker.path().join(format!("project-{}-a", &id[..8])));
    for ws in [&wa, &wb, &wc] {
        assert_eq!(read(&ws.join("README")), "hello\ndirty\n");
        assert_eq!(read(&ws.join("untracked.txt")), "not yet added\n");
        assert_eq!(read(&ws.join("lib.txt")), "one\ntwo\nthree\n");
        // Exactly the baseline, detached.
        assert_eq!(t.worker.git(ws, ["rev-parse", "HEAD"]).trim(), baseline);
        assert_eq!(t.worker.git(ws, ["status", "--porcelain"]), "");
    }

    std::fs::write(wa.join("a.txt"), "from a\n").unwrap();
    std::fs::write(wb.join("lib.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    let sa = t.submit(&wa);
    assert_eq!(sa["task"], "a");
    let pa = sa["proposal"].as_str().unwrap();
    assert_eq!(
        t.user
            .git(
                &t.bare,
                [
                    "rev-parse",
                    &format!("refs/pi-delegate/batches/{id}/tasks/a/proposal")
                ]
            )
            .trim(),
        pa
    );
    assert_eq!(
        t.user.git(&t.bare, ["rev-parse", &format!("{pa}^")]).trim(),
        baseline
    );
    t.submit(&wb);

    // status --fetch asks the remote.
    let st = t
        .user
        .delegate(&t.src, ["status", "--fetch", "--json"])
        .expect(0)
        .json();
    let tasks = st["batches"][0]["tasks"].as_array().unwrap();
    let sub: Vec<(String, Value)> = tasks
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["submitted"].clone(),
            )
        })
        .collect();
    assert_eq!(
        sub,
        vec![
            ("a".to_string(), Value::Bool(true)),
            ("b".to_string(), Value::Bool(true)),
            ("c".to_string(), Value::Bool(false))
        ]
    );
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert!(st["batches"][0]["tasks"][0]["submitted"].is_null());

    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "a"), "applied");
    assert_eq!(status_of(&ap, "b"), "applied");
    assert_eq!(status_of(&ap, "c"), "not_submitted");
    assert_eq!(ap["batch_open"], true);
    assert_eq!(read(&t.src.join("a.txt")), "from a\n");
    assert_eq!(read(&t.src.join("lib.txt")), "one\ntwo\nthree\nfour\n");
    // The user's own uncommitted work is untouched.
    assert_eq!(read(&t.src.join("README")), "hello\ndirty\n");
    assert_eq!(read(&t.src.join("untracked.txt")), "not yet added\n");
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    let states: Vec<&str> = st["batches"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["applied", "applied", "open"]);

    // c submits later; a second apply lands it and ends the batch.
    std::fs::write(wc.join("c.txt"), "from c\n").unwrap();
    t.submit(&wc);
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "c"), "applied");
    assert_eq!(ap["batch_open"], false);
    assert_eq!(read(&t.src.join("c.txt")), "from c\n");
    assert_eq!(read(&t.src.join("a.txt")), "from a\n");
    // The batch's refs are gone, here and on the remote.
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());
    assert_eq!(t.remote_refs(), Vec::<String>::new());
    // The remote's own branches are untouched.
    assert!(!t.user.git(&t.bare, ["rev-parse", "main"]).trim().is_empty());
}

fn walk_empty(p: &Path) -> bool {
    match std::fs::read_dir(p) {
        Ok(rd) => rd.into_iter().all(|e| walk_empty(&e.unwrap().path())),
        Err(_) => false,
    }
}

#[test]
fn only_the_files_count_and_resubmission_replaces() {
    let t = Two::new();
    let id = t.prepare(&["w"])["batch"].as_str().unwrap().to_string();
    let ws = t.join(&id, "w");
    // A server that does not allow filters: a full clone.
    assert_eq!(missing_objects(&t.worker, &ws), 0);
    // The worker commits, then changes the file again and adds another.
    std::fs::write(ws.join("lib.txt"), "committed\n").unwrap();
    t.worker.git(&ws, ["add", "lib.txt"]);
    t.worker.git(
        &ws,
        [
            "-c",
            "user.name=W",
            "-c",
            "user.email=w@example.com",
            "commit",
            "-q",
            "-m",
            "worker commit",
        ],
    );
    std::fs::write(ws.join("lib.txt"), "on disk\n").unwrap();
    let first = t.submit(&ws)["proposal"].as_str().unwrap().to_string();
    let baseline = t.user.git(
        &t.bare,
        [
            "rev-parse",
            &format!("refs/pi-delegate/batches/{id}/baseline"),
        ],
    );
    assert_eq!(
        t.user
            .git(&t.bare, ["rev-list", "--parents", "-n1", &first])
            .trim(),
        format!("{first} {}", baseline.trim())
    );
    assert_eq!(
        t.user.git(&t.bare, ["show", &format!("{first}:lib.txt")]),
        "on disk\n"
    );
    // Submitting again replaces the task's proposal.
    std::fs::write(ws.join("lib.txt"), "second\n").unwrap();
    let second = t.submit(&ws)["proposal"].as_str().unwrap().to_string();
    assert_ne!(first, second);
    let proposal_ref = format!("refs/pi-delegate/batches/{id}/tasks/w/proposal");
    assert_eq!(
        t.user.git(&t.bare, ["rev-parse", &proposal_ref]).trim(),
        second
    );
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "w"), "applied");
    assert_eq!(read(&t.src.join("lib.txt")), "second\n");
    assert_eq!(t.remote_refs(), Vec::<String>::new());
}

#[test]
fn join_inside_an_existing_clone_fetches_only_the_baseline() {
    let t = Two::new();
    // The worker's clone, made before the batch.
    let clone = t.worker.path().join("clone");
    t.worker.git(
        t.worker.path(),
        ["clone", "-q", &t.url, clone.to_str().unwrap()],
    );
    let id = t.prepare(&["x", "y"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    // Something else lands on the remote meanwhile: not fetched by join.
    t.user
        .git(&t.src, ["push", "-q", "origin", "main:refs/heads/other"]);
    let refs = |dir: &Path| {
        t.worker
            .git(dir, ["for-each-ref", "--format=%(objectname) %(refname)"])
    };
    let before = refs(&clone);
    let doc = t
        .worker
        .delegate(&clone, ["join", &format!("{}/", t.url), &id, "x", "--json"])
        .expect(0)
        .json();
    let root = PathBuf::from(doc["root"].as_str().unwrap());
    assert_eq!(root, clone.join(format!("project-{}-x", &id[..8])));
    let after = refs(&clone);
    let added: Vec<&str> = after.lines().filter(|l| !before.contains(l)).collect();
    assert_eq!(added.len(), 1, "{after}");
    assert!(added[0].ends_with(&format!("refs/pi-delegate/batches/{id}/baseline")));
    assert!(before.lines().all(|l| after.contains(l)));
    // A linked worktree of the clone, locked, detached at the baseline.
    let list = t.worker.git(&clone, ["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}", root.display())),
        "{list}"
    );
    assert!(list.contains("locked"), "{list}");
    assert_eq!(read(&root.join("README")), "hello\ndirty\n");
    assert_eq!(t.worker.git(&root, ["status", "--porcelain"]), "");
    // The user's config is not where it is remembered.
    assert!(!read(&clone.join(".git/config")).contains(&id));
    // A second join of the same task into the same place is refused.
    let again = t
        .worker
        .delegate(&clone, ["join", &t.url, &id, "x", "--json"])
        .expect(2)
        .json();
    assert_eq!(again["error"]["code"], "delegate::already_joined");
    // Its help, followed literally, starts over.
    let help = again["error"]["help"].as_str().unwrap();
    let remove = crate::common::printed_command(help, "git worktree remove");
    t.worker.sh(&clone, &remove).expect(0);
    assert!(!root.exists());
    t.worker
        .delegate(&clone, ["join", &t.url, &id, "x"])
        .expect(0);
    // A fresh clone's second join is refused the same way.
    let ws = t.join(&id, "y");
    let again = t
        .worker
        .delegate(t.worker.path(), ["join", &t.url, &id, "y"])
        .expect(2);
    assert!(again.stderr.contains("already joined"), "{}", again.stderr);
    assert!(ws.exists());
    // Submit from the linked worktree works like from a clone.
    std::fs::write(root.join("x.txt"), "x\n").unwrap();
    t.submit(&root);
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "x"), "applied");
    assert_eq!(status_of(&ap, "y"), "not_submitted");
    assert_eq!(read(&t.src.join("x.txt")), "x\n");
}

#[test]
fn a_rejecting_remote_undoes_the_prepare() {
    let t = Two::new();
    let hook = t.bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho refused by policy >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", "origin", "a", "--json"])
        .expect(3);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::remote_failed");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert!(msg.contains("git push"), "{msg}");
    assert!(msg.contains("origin"), "{msg}");
    assert!(msg.contains("refused by policy"), "{msg}");
    // Nothing left: no batch, no refs, the source as it was.
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["batches"], Value::Array(vec![]));
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());
    assert_eq!(t.remote_refs(), Vec::<String>::new());
    assert_eq!(read(&t.src.join("README")), "hello\ndirty\n");
    assert_eq!(read(&t.src.join("untracked.txt")), "not yet added\n");
}

#[test]
fn an_unreachable_remote_loses_nothing() {
    let t = Two::new();
    // At prepare: refused, nothing made.
    let gone = format!("file://{}/nowhere.git", t.user.path().display());
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", &gone, "a"])
        .expect(3);
    assert!(
        run.stderr.contains("delegate::remote_failed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&gone), "{}", run.stderr);
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());

    // A batch whose remote goes away: apply fails before changing anything.
    let doc = t.prepare(&["a", "b"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    let wa = t.join(&id, "a");
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    t.submit(&wa);
    let moved = t.user.path().join("moved.git");
    std::fs::rename(&t.bare, &moved).unwrap();
    let ap = t.apply(&id, 3);
    assert_eq!(ap["error"]["code"], "delegate::remote_failed");
    assert!(ap["error"]["message"].as_str().unwrap().contains("origin"));
    assert!(!t.src.join("a.txt").exists());
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["batches"][0]["batch"], id.as_str());
    // status --fetch warns, and says nothing it does not know.
    let st = t
        .user
        .delegate(&t.src, ["status", "--fetch", "--json"])
        .expect(0);
    assert!(st.stderr.contains("warning"), "{}", st.stderr);
    assert!(st.json()["batches"][0]["tasks"][0]["submitted"].is_null());
    // The worker's submit to an unreachable remote: a clear error.
    let sub = t.worker.delegate(&wa, ["submit"]).expect(3);
    assert!(sub.stderr.contains("git push"), "{}", sub.stderr);

    // Back: the apply lands the work.
    std::fs::rename(&moved, &t.bare).unwrap();
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "a"), "applied");
    assert_eq!(read(&t.src.join("a.txt")), "a\n");

    // Dropped while the remote is away: a warning listing the refs, the
    // local batch removed whole.
    std::fs::rename(&t.bare, &moved).unwrap();
    let dr = t
        .user
        .delegate(&t.src, ["drop", &id, "--force", "--json"])
        .expect(0);
    let doc = dr.json();
    let w = &doc["warnings"][0];
    assert_eq!(w["code"], "remote_refs_left");
    assert!(w["refs"]
        .as_array()
        .unwrap()
        .contains(&Value::String(format!(
            "refs/pi-delegate/batches/{id}/baseline"
        ))));
    assert!(dr.stderr.contains("git push"), "{}", dr.stderr);
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["batches"], Value::Array(vec![]));
}

#[test]
fn drop_deletes_the_remote_refs() {
    let t = Two::new();
    // Another open batch: a remote task hosts none (it has no folder here).
    let other = t.prepare(&["o", "--label", "other"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let id = t.prepare(&["a"])["batch"].as_str().unwrap().to_string();
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
fn mixed_local_and_remote_tasks() {
    let t = Two::new();
    let doc = t.prepare(&["r", "l", "--local", "l"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["remote"], true);
    assert!(tasks[1].get("remote").is_none());
    let local = PathBuf::from(tasks[1]["root"].as_str().unwrap());
    assert_eq!(read(&local.join("README")), "hello\ndirty\n");
    // `path`: the local task's folder; a remote task has none here, and the
    // source is in no task's workspace (an empty root must match nothing).
    let p = t.user.delegate(&t.src, ["path", "l"]).expect(0);
    assert_eq!(p.stdout.trim_end(), local.to_str().unwrap());
    let p = t.user.delegate(&t.src, ["path", "r"]).expect(2);
    assert!(p.stderr.contains("git delegate join"), "{}", p.stderr);
    t.user.delegate(&t.src, ["path"]).expect(2);
    t.user.delegate(&t.src, ["refresh"]).expect(0);
    t.user.delegate(&t.src, ["diff"]).expect(0);
    t.user.delegate(&t.src, ["diff", "--source"]).expect(0);
    let wr = t.join(&id, "r");
    std::fs::write(wr.join("r.txt"), "remote\n").unwrap();
    std::fs::write(local.join("l.txt"), "local\n").unwrap();
    t.submit(&wr);
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "r"), "applied");
    assert_eq!(status_of(&ap, "l"), "applied");
    assert_eq!(ap["batch_open"], false);
    assert_eq!(read(&t.src.join("r.txt")), "remote\n");
    assert_eq!(read(&t.src.join("l.txt")), "local\n");
    assert!(!local.exists());
    assert_eq!(t.remote_refs(), Vec::<String>::new());
}

#[test]
fn submit_outside_a_joined_workspace_is_refused() {
    let t = Two::new();
    let run = t.user.delegate(&t.src, ["submit", "--json"]).expect(2);
    assert_eq!(run.json()["error"]["code"], "delegate::not_joined");
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", "nosuchremote", "a"])
        .expect(2);
    assert!(
        run.stderr.contains("delegate::unknown_remote"),
        "{}",
        run.stderr
    );
}

fn wait_stale(t: &Two, id: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let doc = t.user.delegate(&t.src, ["status", "--json"]).json();
        let state = doc["batches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["batch"] == id)
            .map(|b| b["lease"]["state"].as_str().unwrap().to_string())
            .unwrap_or_default();
        if state == "expired" || state == "orphaned" {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "batch {id} never went stale"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn gc_rescues_submitted_work_and_deletes_the_remote_refs() {
    let t = Two::new();
    let id = t.prepare(&["a", "b", "--ttl", "1s"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
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
    wait_stale(&t, &id);
    wait_stale(&t, &other);
    let moved = t.user.path().join("moved.git");
    std::fs::rename(&far, &moved).unwrap();

    let gc = t.user.delegate(&t.src, ["gc", "--json"]).expect(0).json();
    let mut ended: Vec<&str> = gc["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
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
    let id = t.prepare(&["a", "b"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
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

#[test]
fn a_proposal_not_on_the_baseline_fails_and_a_dry_run_fetches_no_ref() {
    let t = Two::new();
    let id = t.prepare(&["a", "b"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    // Task a: pushed by hand, on the source's HEAD instead of the baseline.
    let wa = t.join(&id, "a");
    t.worker
        .git(&wa, ["checkout", "-q", "--detach", "origin/main"]);
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    t.worker.git(&wa, ["add", "a.txt"]);
    t.worker
        .git(&wa, ["commit", "-q", "-m", "not on the baseline"]);
    t.worker.git(
        &wa,
        [
            "push",
            "-q",
            "origin",
            &format!("HEAD:refs/pi-delegate/batches/{id}/tasks/a/proposal"),
        ],
    );
    let wb = t.join(&id, "b");
    std::fs::write(wb.join("b.txt"), "b\n").unwrap();
    t.submit(&wb);

    // A dry run: what would happen, with no ref written here.
    let before = t.user.private_refs(&t.src);
    let dry = t
        .user
        .delegate(&t.src, ["apply", &id, "--dry-run", "--json"])
        .expect(1)
        .json();
    assert_eq!(status_of(&dry, "b"), "applied");
    assert_eq!(t.user.private_refs(&t.src), before);
    assert!(!t.src.join("b.txt").exists());

    let ap = t.apply(&id, 1);
    assert_eq!(status_of(&ap, "a"), "failed");
    assert_eq!(ap["tasks"][0]["reason"], "snapshot_failed");
    assert!(ap["tasks"][0]["workspace"].is_null());
    assert_eq!(status_of(&ap, "b"), "applied");
    assert!(!t.src.join("a.txt").exists());
    assert_eq!(read(&t.src.join("b.txt")), "b\n");
    assert_eq!(ap["batch_open"], true);
}

#[test]
fn join_with_repo_and_bad_arguments() {
    let t = Two::new();
    let clone = t.worker.path().join("clone");
    t.worker.git(
        t.worker.path(),
        ["clone", "-q", &t.url, clone.to_str().unwrap()],
    );
    let id = t.prepare(&["x"])["batch"].as_str().unwrap().to_string();
    // --repo from outside the clone: a linked worktree of it, where DIR says.
    let dir = t.worker.path().join("elsewhere");
    let doc = t
        .worker
        .delegate(
            t.worker.path(),
            [
                "join",
                &t.url,
                &id,
                "x",
                dir.to_str().unwrap(),
                "--repo",
                "clone",
                "--json",
            ],
        )
        .expect(0)
        .json();
    assert_eq!(doc["root"], dir.to_str().unwrap());
    let list = t.worker.git(&clone, ["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}", dir.display())),
        "{list}"
    );
    // A batch that is not on the remote: nothing is left behind.
    let other = "00000000-0000-4000-8000-000000000000";
    let run = t
        .worker
        .delegate(t.worker.path(), ["join", &t.url, other, "x", "--json"])
        .expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::remote_failed");
    assert!(!t.worker.path().join("project-00000000-x").exists());
    // Malformed arguments.
    let run = t
        .worker
        .delegate(t.worker.path(), ["join", &t.url, "nope", "x"])
        .expect(2);
    assert!(
        run.stderr.contains("delegate::bad_batch_id"),
        "{}",
        run.stderr
    );
    let run = t
        .worker
        .delegate(t.worker.path(), ["join", &t.url, &id, "../x"])
        .expect(2);
    assert!(
        run.stderr.contains("delegate::bad_task_name"),
        "{}",
        run.stderr
    );
    let run = t
        .user
        .delegate(
            &t.src,
            ["prepare", "--remote", "origin", "a", "--local", "b"],
        )
        .expect(2);
    assert!(run.stderr.contains("--local b"), "{}", run.stderr);
}

/// How many objects the clone at `dir` lacks (a partial clone's blobs).
fn missing_objects(env: &Env, dir: &Path) -> usize {
    env.git(dir, ["rev-list", "--objects", "--all", "--missing=print"])
        .lines()
        .filter(|l| l.starts_with('?'))
        .count()
}

#[test]
fn transport_runs_git_never_prompting_and_without_the_sources_variables() {
    let t = Two::new();
    // A `git` first on PATH that logs its environment, then runs the real one.
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = t.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = t.user.path().join("git.log");
    let script = format!(
        "#!/bin/sh\n{{ echo \"CALL $*\"; env | grep '^GIT_' | sort; }} >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        real.trim()
    );
    // Written by a child process (no ETXTBSY when another test thread forks).
    t.user
        .sh(
            t.user.path(),
            &format!("cat > bin/git <<'EOF'\n{script}EOF\nchmod +x bin/git"),
        )
        .expect(0);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = t
        .user
        .delegate_cmd(&t.src)
        .env("PATH", &path)
        .env("GIT_DIR", t.src.join(".git"))
        .env("GIT_WORK_TREE", &t.src)
        .args(["prepare", "--remote", "origin", "a", "--json"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let logged = read(&log);
    let push: Vec<&str> = logged
        .split("CALL ")
        .filter(|c| c.starts_with("push"))
        .collect();
    assert_eq!(push.len(), 1, "{logged}");
    let vars: Vec<&str> = push[0].lines().skip(1).collect();
    assert!(vars.contains(&"GIT_TERMINAL_PROMPT=0"), "{vars:?}");
    assert!(
        vars.contains(&format!("GIT_DIR={}", t.src.join(".git").display()).as_str()),
        "{vars:?}"
    );
    assert!(
        !vars.iter().any(|v| v.starts_with("GIT_WORK_TREE=")),
        "{vars:?}"
    );
}

/// A remote task whose submission cannot be applied (not a commit on the
/// baseline) has no workspace here to fix: the apply hint says to submit
/// again, and followed as printed (the worker's `git delegate submit` in
/// its workspace, then the user's `git delegate apply ID`), the work lands.
#[test]
fn a_remote_task_that_fails_on_its_submission_is_told_to_submit_again() {
    let t = Two::new();
    let id = t.prepare(&["a", "b"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let wa = t.join(&id, "a");
    // Pushed by hand: the source's HEAD, not a commit on the baseline.
    t.worker.git(
        &wa,
        [
            "push",
            "-q",
            "origin",
            &format!("origin/main:refs/pi-delegate/batches/{id}/tasks/a/proposal"),
        ],
    );
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    let wb = t.join(&id, "b");
    std::fs::write(wb.join("b.txt"), "b\n").unwrap();
    t.submit(&wb);

    let run = t.user.delegate(&t.src, ["apply", &id]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    let line = text
        .lines()
        .find(|l| l.starts_with("  - task a:"))
        .unwrap_or_else(|| panic!("no hint for task a in:\n{text}"));
    assert!(!line.contains("fix the cause"), "{line}");
    assert!(!line.contains("make the work fit"), "{line}");
    assert_eq!(read(&t.src.join("b.txt")), "b\n");
    t.worker
        .sh(
            &wa,
            &crate::common::printed_command(line, "git delegate submit"),
        )
        .expect(0);
    t.user
        .sh(
            &t.src,
            &crate::common::printed_command(line, "git delegate apply"),
        )
        .expect(0);
    assert_eq!(read(&t.src.join("a.txt")), "a\n");
}
