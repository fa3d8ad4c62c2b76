//! SIGKILL at every point: `apply` and `renew` refuse the batch, `status`
//! reports it, `gc` or `drop` removes it whole (leaving swapped folders
//! alone); a complete batch records its folders, a killed one none.
use crate::common::files::read_bytes;

use super::*;
use crate::common::fixtures::strs;

#[test]
fn killed_prepare_is_refused_reported_and_removed_whole() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let points = [
        ("marked", "gc"),
        ("registered", "drop"),
        ("checked-out", "gc"),
        ("replicating", "drop --force"),
        ("carrying", "gc"),
        ("complete-pending", "drop"),
    ];
    for (point, removal) in points {
        let context = format!("SIGKILL at {point}");
        let mut p = Prepare::start(&env, &repo, point, false);
        p.wait_for(point);
        if point == "checked-out" {
            // While it runs, status shows it as being prepared, not as work.
            let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
            assert_eq!(st["batches"][0]["state"], "preparing", "{context}: {st}");
            assert_eq!(
                st["batches"][0]["tasks"][0]["state"], "incomplete",
                "{context}: {st}"
            );
        }
        p.signal(rustix::process::Signal::KILL);
        let _ = p.finish();

        assert_refused_and_reported(&env, &repo, &before, &context);

        if point == "registered" {
            // Run again with the same label: told how the killed one goes.
            let run = env
                .delegate(&repo, ["prepare", "--label", "work"])
                .expect(2);
            assert!(
                run.stderr
                    .contains(&format!("git delegate drop {SHORT} --force")),
                "{context}: {}",
                run.stderr
            );
        }
        if point == "replicating" {
            // With another batch open, `apply` without BATCH means that one.
            let other = prepare(&env, &repo, &[]);
            assert_eq!(other["state"], "ready");
            let dry = env
                .delegate(&repo, ["apply", "--dry-run", "--json"])
                .expect(0)
                .json();
            assert_eq!(dry["batch"], other["batch"], "{context}: {dry}");
            env.delegate(&repo, ["drop", other["batch"].as_str().unwrap()])
                .expect(0);
        }
        remove_whole(&env, &repo, removal, &context);
        assert_nothing_left(&env, &repo, &format!("{context}, then {removal}"));
        assert!(
            snapshot(&repo) == before,
            "{context}: {removal} changed the source"
        );
        env.delegate(&repo, ["status", "--check"]).expect(0);
    }
    // No proposal was ever kept.
    assert!(!common_dir(&repo).join("delegate/kept").exists());
}

/// A killed batch: `apply` refuses it (and changes nothing), `status`
/// reports it as interrupted, never as open work, and `renew` refuses it.
fn assert_refused_and_reported(env: &Env, repo: &Path, before: &(Tree, Vec<u8>), context: &str) {
    // apply refuses it and changes nothing.
    let run = env.delegate(repo, ["apply", "--json"]);
    assert_eq!(
        run.code, 3,
        "{context}: apply\n{}\n{}",
        run.stdout, run.stderr
    );
    assert_eq!(
        run.json()["error"]["code"],
        "delegate::incomplete_batch",
        "{context}"
    );
    assert!(run.json()["error"]["help"]
        .as_str()
        .unwrap()
        .contains("git delegate gc"));
    let run = env.delegate(repo, ["apply", SHORT]).expect(3);
    assert!(
        run.stderr
            .contains(&format!("git delegate drop {SHORT} --force")),
        "{}",
        run.stderr
    );
    assert!(
        snapshot(repo) == *before,
        "{context}: apply changed the source"
    );

    // status reports it as interrupted, never as open work.
    let st = env.delegate(repo, ["status", "--json"]).json();
    let b = &st["batches"][0];
    assert_eq!(b["state"], "interrupted", "{context}: {st}");
    assert_ne!(b["lease"]["state"], "live", "{context}: {st}");
    for t in b["tasks"].as_array().unwrap() {
        assert_eq!(t["state"], "incomplete", "{context}: {st}");
    }
    assert!(
        st["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "interrupted_prepare" && p["batch"] == ID),
        "{context}: {st}"
    );
    let check = env.delegate(repo, ["status", "--check"]).expect(1);
    assert!(check.stdout.contains(SHORT), "{context}: {}", check.stdout);
    // Its lease is not renewed either.
    let run = env.delegate(repo, ["renew", SHORT, "--json"]);
    assert_eq!(run.code, 3, "{context}: renew\n{}", run.stderr);
    assert_eq!(run.json()["error"]["code"], "delegate::incomplete_batch");
}

/// `removal` (`gc`, `drop` or `drop --force`) removes the killed batch
/// whole; gc's dry run first reports it and changes nothing.
fn remove_whole(env: &Env, repo: &Path, removal: &str, context: &str) {
    if removal == "gc" {
        // A dry run reports it and changes nothing.
        let refs = env.private_refs(repo);
        let dry = env
            .delegate(repo, ["gc", "--dry-run", "--json"])
            .expect(0)
            .json();
        assert!(
            dry["incomplete"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b == ID),
            "{context}: {dry}"
        );
        assert_eq!(dry["rescued"], serde_json::json!([]), "{context}: {dry}");
        assert_eq!(
            env.private_refs(repo),
            refs,
            "{context}: gc --dry-run changed refs"
        );
        assert!(common_dir(repo).join("delegate/batches").join(ID).exists());
    }

    // gc or drop removes it whole; gc rescues nothing.
    match removal {
        "gc" => {
            let gc = env.delegate(repo, ["gc", "--json"]).expect(0).json();
            assert_eq!(gc["rescued"], serde_json::json!([]), "{context}: {gc}");
            assert!(
                gc["batches"].as_array().unwrap().iter().any(|b| b == ID),
                "{context}: {gc}"
            );
            assert!(
                gc["incomplete"].as_array().unwrap().iter().any(|b| b == ID),
                "{context}: {gc}"
            );
        }
        "drop" => {
            env.delegate(repo, ["drop", SHORT]).expect(0);
        }
        _ => {
            env.delegate(repo, ["drop", SHORT, "--force"]).expect(0);
        }
    }
}

/// The workspace folders of the batch, by task, as prepare lays them out.
fn task_roots(env: &Env) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for repo_dir in std::fs::read_dir(env.workspace_root()).unwrap().flatten() {
        if let Ok(rd) = std::fs::read_dir(repo_dir.path().join(SHORT)) {
            roots.extend(rd.flatten().map(|e| e.path()));
        }
    }
    roots.sort();
    roots
}

/// A killed prepare's workspace folders swapped (while it was paused) for
/// symlinks, one to a copy of the folder it made, one to an empty folder:
/// `gc` and `drop` remove the batch but never the symlinks nor what they
/// lead to (nothing recorded a folder identity yet: the checks must hold
/// without it).
#[test]
fn killed_prepare_removal_leaves_swapped_folders_alone() {
    let env = Env::new();
    let repo = fixture(&env);
    for removal in ["gc", "drop"] {
        let context = format!("SIGKILL at registered, then {removal}");
        let mut p = Prepare::start(&env, &repo, "registered", false);
        p.wait_for("registered");
        let roots = task_roots(&env);
        assert_eq!(roots.len(), 3, "{context}: {roots:?}");
        let keep = env.path().join(format!("kept-{removal}"));
        std::fs::create_dir_all(&keep).unwrap();
        let copy = keep.join("copy");
        std::fs::rename(&roots[0], &copy).unwrap();
        std::fs::write(copy.join("mine.txt"), "user data\n").unwrap();
        std::os::unix::fs::symlink(&copy, &roots[0]).unwrap();
        let empty = keep.join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::remove_file(roots[1].join(".git")).unwrap();
        std::fs::remove_dir(&roots[1]).unwrap();
        std::os::unix::fs::symlink(&empty, &roots[1]).unwrap();
        p.signal(rustix::process::Signal::KILL);
        let _ = p.finish();

        // A dry run says what the removal will do.
        let dry = env
            .delegate(&repo, ["gc", "--dry-run", "--json"])
            .expect(0)
            .json();
        assert_eq!(dry["workspaces_removed"], 1, "{context}: {dry}");
        let mut left: Vec<&str> = strs(&dry["left_alone"]);
        left.sort();
        assert_eq!(
            left,
            [roots[0].to_str().unwrap(), roots[1].to_str().unwrap()],
            "{context}: {dry}"
        );
        match removal {
            "gc" => {
                let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
                assert_eq!(gc["workspaces_removed"], 1, "{context}: {gc}");
                assert_eq!(gc["left_alone"], dry["left_alone"], "{context}: {gc}");
            }
            _ => {
                let d = env
                    .delegate(&repo, ["drop", SHORT, "--force", "--json"])
                    .expect(0)
                    .json();
                assert_eq!(d["workspaces_removed"], 1, "{context}: {d}");
                assert_eq!(
                    d["left_alone"].as_array().unwrap().len(),
                    2,
                    "{context}: {d}"
                );
            }
        }
        // A later gc, which no longer knows the batch, leaves them too.
        env.delegate(&repo, ["gc", "--json"]).expect(0);
        for (link, target) in [(&roots[0], &copy), (&roots[1], &empty)] {
            let meta = std::fs::symlink_metadata(link)
                .unwrap_or_else(|e| panic!("{context}: {} removed: {e}", link.display()));
            assert!(
                meta.file_type().is_symlink(),
                "{context}: {}",
                link.display()
            );
            assert_eq!(&std::fs::read_link(link).unwrap(), target, "{context}");
        }
        assert_eq!(
            read_bytes(&copy.join("mine.txt")),
            b"user data\n",
            "{context}"
        );
        assert!(copy.join(".git").is_file(), "{context}");
        assert!(empty.is_dir(), "{context}");
        assert!(
            !roots[2].exists(),
            "{context}: the folder prepare made is left"
        );
        assert!(
            !common_dir(&repo).join("delegate/batches").join(ID).exists(),
            "{context}: state left"
        );
        assert_eq!(env.private_refs(&repo), Vec::<String>::new(), "{context}");
        // Clear the way for the next round.
        for r in &roots[..2] {
            std::fs::remove_file(r).unwrap();
        }
    }
}

/// A batch made by prepare (worktree mode) records each workspace's
/// identity (design §3.2), and no longer the marker; a killed one has none yet.
#[test]
fn a_complete_batch_records_its_folders_and_a_killed_one_none() {
    let (env, repo) = Env::with_repo("small");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let id = doc["batch"].as_str().unwrap();
    let text = std::fs::read_to_string(
        common_dir(&repo)
            .join("delegate/batches")
            .join(id)
            .join("batch.toml"),
    )
    .unwrap();
    assert_eq!(text.matches("[tasks.folder]").count(), 2, "{text}");
    assert!(!text.contains("[preparing]"), "{text}");
    for (i, t) in doc["tasks"].as_array().unwrap().iter().enumerate() {
        let root = std::fs::canonicalize(t["root"].as_str().unwrap()).unwrap();
        let line = format!("path = {:?}", root.to_str().unwrap());
        assert!(text.contains(&line), "task {i}: {line} not in {text}");
    }
    let mut p = Prepare::start(&env, &repo, "complete-pending", false);
    p.wait_for("complete-pending");
    p.signal(rustix::process::Signal::KILL);
    let _ = p.finish();
    let text = std::fs::read_to_string(
        common_dir(&repo)
            .join("delegate/batches")
            .join(ID)
            .join("batch.toml"),
    )
    .unwrap();
    assert_has(&text, "[preparing]");
    assert!(!text.contains("[tasks.folder]"), "{text}");
}
