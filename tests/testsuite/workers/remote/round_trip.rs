//! The round trip: prepare on the remote, join (partial clones, inside
//! an existing clone, `--repo` and bad arguments), submit and resubmit,
//! apply; local and remote tasks in one batch.

use super::*;
use crate::common::assert_has;
use crate::common::fixtures::field_strs;
use crate::common::fixtures::id;

#[test]
fn round_trip_with_three_remote_tasks() {
    let t = Two::new();
    let doc = t.prepare(&["a", "b", "c"]);
    let id = id(&doc);
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
    let states = field_strs(&st["batches"][0]["tasks"], "state");
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
    let id = t.prepare_id(&["w"]);
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
    let id = t.prepare_id(&["x", "y"]);
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
    assert_has(&list, "locked");
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
    assert_has(&again.stderr, "already joined");
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
fn mixed_local_and_remote_tasks() {
    let t = Two::new();
    let doc = t.prepare(&["r", "l", "--local", "l"]);
    let id = id(&doc);
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
    assert_has(&p.stderr, "git delegate join");
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
fn join_with_repo_and_bad_arguments() {
    let t = Two::new();
    let clone = t.worker.path().join("clone");
    t.worker.git(
        t.worker.path(),
        ["clone", "-q", &t.url, clone.to_str().unwrap()],
    );
    let id = t.prepare_id(&["x"]);
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
    assert_has(&run.stderr, "delegate::bad_batch_id");
    let run = t
        .worker
        .delegate(t.worker.path(), ["join", &t.url, &id, "../x"])
        .expect(2);
    assert_has(&run.stderr, "delegate::bad_task_name");
    let run = t
        .user
        .delegate(
            &t.src,
            ["prepare", "--remote", "origin", "a", "--local", "b"],
        )
        .expect(2);
    assert_has(&run.stderr, "--local b");
}

/// How many objects the clone at `dir` lacks (a partial clone's blobs).
fn missing_objects(env: &Env, dir: &Path) -> usize {
    env.git(dir, ["rev-list", "--objects", "--all", "--missing=print"])
        .lines()
        .filter(|l| l.starts_with('?'))
        .count()
}
