//! Scratch workspaces (design §2, §3.1 step 4): reflink copies of the whole
//! source beside it, refused without reflink and when the copy would not be
//! self-contained, never leaking edits into the source, removed only when
//! still the copy that prepare made, and listed for the sweep once their
//! batch is gone. The reflink tests need `GIT_DELEGATE_REFLINK_DIR` (see
//! scripts/reflink-fs); without it they say SKIPPED (and fail under CI=true).

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::id;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::{commit_files, prepare, roots};
use crate::common::mounts as sc;
use crate::common::Env;

/// Every path and content under `dir` except `.git` (for "unchanged" checks).
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    sc::tree_listing(dir)
        .into_iter()
        .filter(|p| p != ".git" && !p.starts_with(".git/"))
        .map(|p| {
            let full = dir.join(&p);
            let meta = full.symlink_metadata().unwrap();
            let bytes = if meta.file_type().is_symlink() {
                std::fs::read_link(&full)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_file() {
                read_bytes(&full)
            } else {
                Vec::new()
            };
            (p, bytes)
        })
        .collect()
}

/// Nothing of a refused scratch prepare is left: no copies, refs or batches.
fn assert_nothing_left(env: &Env, source: &Path) {
    let parent = source.parent().unwrap();
    assert!(
        sc::scratch_dirs(parent).is_empty(),
        "left behind: {:?}",
        sc::scratch_dirs(parent)
    );
    assert!(env.private_refs(source).is_empty());
    let git_dir = PathBuf::from(env.git(source, ["rev-parse", "--git-common-dir"]).trim());
    let git_dir = if git_dir.is_absolute() {
        git_dir
    } else {
        source.join(git_dir)
    };
    assert!(sc::tree_listing(&git_dir.join("delegate/batches")).is_empty());
    let st = env.delegate(source, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"].as_array().unwrap().len(), 0, "{st}");
}

fn refused(env: &Env, dir: &Path, what: &str) -> serde_json::Value {
    let r = env.delegate(dir, ["prepare", "--mode", "scratch", "--json"]);
    assert_eq!(r.code, 3, "{what}: {}\n{}", r.stdout, r.stderr);
    r.json()["error"].clone()
}

#[test]
fn a_scratch_copy_is_a_whole_reflink_copy_of_the_source() {
    let Some(env) = sc::reflink_env("scratch: reflink copy") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    let before = contents(&repo);
    // A git operation in flight in the source: its lock stays behind.
    std::fs::write(repo.join(".git/index.lock"), "").unwrap();
    let doc = prepare(&env, &repo, &["--mode", "scratch", "-n", "2"]);
    assert_eq!(doc["mode"], "scratch");
    let id = doc["batch"].as_str().unwrap();
    let copies = roots(&doc);
    assert_eq!(copies.len(), 2);
    assert_ne!(copies[0], copies[1]);
    for (i, (t, root)) in doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&copies)
        .enumerate()
    {
        let container = root.parent().unwrap();
        assert_eq!(root.file_name().unwrap(), "project");
        assert_eq!(container.parent().unwrap(), repo.parent().unwrap());
        assert!(container
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".git-delegate-scratch-"));
        assert_eq!(t["exists"], true);
        // The owner marker names the batch, the task, the source and a pid.
        let marker = read(&container.join("owner.toml"));
        assert!(marker.contains(&format!("batch = \"{id}\"")), "{marker}");
        assert!(
            marker.contains(&format!("task = \"{}\"", i + 1)),
            "{marker}"
        );
        assert!(
            marker.contains(&format!("source = \"{}\"", repo.display())),
            "{marker}"
        );
        assert_has(&marker, "pid = ");
        // Everything, ignored and untracked files included, with modes and links.
        assert_eq!(contents(root), before);
        assert_eq!(sc::mode(&root.join("node_modules/pkg/run.sh")), 0o755);
        assert!(root
            .join("node_modules/.bin/tool")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink());
        // Cloned, never copied: the data shares the source's extents.
        let c = &t["scratch_copy"];
        assert_eq!(c["copied"], 0, "{c}");
        assert!(c["cloned"].as_u64().unwrap() > 6, "{c}");
        assert!(sc::shares_extents(&root.join("node_modules/pkg/big.bin")));
        // A repository of its own, seeing the same state as the source.
        assert!(root.join(".git").is_dir());
        assert!(
            !root.join(".git/delegate").exists(),
            "our state stays behind"
        );
        assert!(!root.join(".git/index.lock").exists(), "locks stay behind");
        assert_eq!(
            env.git(root, ["rev-parse", "--show-toplevel"]).trim(),
            root.to_str().unwrap()
        );
        assert_eq!(
            env.git(root, ["status", "--porcelain"]),
            env.git(&repo, ["status", "--porcelain"])
        );
    }
    std::fs::remove_file(repo.join(".git/index.lock")).unwrap();
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let tasks = st["batches"][0]["tasks"].as_array().unwrap();
    assert!(
        tasks
            .iter()
            .all(|t| t["exists"] == true && t["changed_paths"] == 0),
        "{st}"
    );
    assert_eq!(st["problems"].as_array().unwrap().len(), 0, "{st}");
}

#[test]
fn the_first_snapshot_of_an_untouched_copy_hashes_nothing() {
    let Some(env) = sc::reflink_env("scratch: refreshed index") else {
        return;
    };
    let repo = env.repo("proj");
    for i in 0..50 {
        std::fs::create_dir_all(repo.join(format!("d{}", i % 5))).unwrap();
        std::fs::write(repo.join(format!("d{}/f{i}.txt", i % 5)), format!("{i}\n")).unwrap();
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    // Files older than the index, as in any repository not edited this very second.
    let files = env.git(&repo, ["ls-files", "-z"]);
    let mut touch = std::process::Command::new("touch");
    touch
        .current_dir(&repo)
        .args(["-h", "-d", "2020-01-01T00:00:00"]);
    touch.args(files.split('\0').filter(|f| !f.is_empty()));
    assert!(touch.status().unwrap().success());
    env.git(&repo, ["update-index", "--refresh"]);
    let doc = prepare(&env, &repo, &["--mode", "scratch"]);
    let root = roots(&doc).remove(0);
    // diff-files does not refresh: it lists every entry whose stat data differ.
    assert_eq!(env.git(&root, ["diff-files", "--name-only"]), "");
    let snap = env.delegate(&root, ["snapshot"]).expect(0);
    assert_has(&snap.stderr, "hashed 0 ");
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        snap.stdout.trim(),
        env.git(&repo, ["rev-parse", &format!("{commit}^{{tree}}")])
            .trim()
    );
    // A real edit is still seen.
    std::fs::write(root.join("d1/f1.txt"), "changed\n").unwrap();
    let snap = env.delegate(&root, ["snapshot"]).expect(0);
    assert_has(&snap.stderr, "changed 1");
    assert_eq!(env.git(&root, ["status", "--porcelain"]), " M d1/f1.txt\n");
}

#[test]
fn workspace_mode_scratch_in_the_config_makes_scratch_copies() {
    let Some(env) = sc::reflink_env("scratch: workspace.mode") else {
        return;
    };
    let repo = env.repo("proj");
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[workspace]\nmode = \"scratch\"\n",
    )
    .unwrap();
    let doc = prepare(&env, &repo, &[]);
    assert_eq!(doc["mode"], "scratch");
    assert!(roots(&doc)[0].ends_with("project"));
    // The command line wins over the file.
    let doc = prepare(&env, &repo, &["--mode", "worktree"]);
    assert_eq!(doc["mode"], "worktree");
}

#[test]
fn edits_in_a_scratch_copy_never_reach_the_source() {
    let Some(env) = sc::reflink_env("scratch: edits stay in the copy") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    let before = contents(&repo);
    let doc = env
        .delegate(
            &repo,
            ["prepare", "--mode", "scratch", "--label", "one", "--json"],
        )
        .expect(0)
        .json();
    let root = roots(&doc).remove(0);
    std::fs::write(root.join("README"), "edited in scratch\n").unwrap();
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    std::fs::remove_file(root.join("sub/code.txt")).unwrap();
    // Writing a clone never writes the source's shared extents.
    std::fs::write(root.join("node_modules/pkg/big.bin"), "overwritten\n").unwrap();
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["tasks"][0]["changed_paths"], 3, "{st}");
    assert_eq!(contents(&repo), before);
    // drop refuses while the copy holds changes, then removes it with --force.
    env.delegate(&repo, ["drop", "one"]).expect(1);
    assert!(root.exists());
    let d = env
        .delegate(&repo, ["drop", "one", "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(d["workspaces_removed"], 1, "{d}");
    assert!(
        !root.parent().unwrap().exists(),
        "the container is removed too"
    );
    assert_eq!(contents(&repo), before);
    assert!(sc::scratch_dirs(repo.parent().unwrap()).is_empty());

    // apply marks scratch tasks discarded and removes their copies (design §3.2).
    let doc = prepare(&env, &repo, &["--mode", "scratch"]);
    let root = roots(&doc).remove(0);
    std::fs::write(root.join("README"), "edited in scratch\n").unwrap();
    let r = env.delegate(&repo, ["apply", "--json"]);
    if r.code == 2 && r.stdout.contains("delegate::not_implemented") {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"NOTE: scratch apply check not run: apply is not implemented in this build\n",
        );
        return;
    }
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let a = r.json();
    assert_eq!(a["tasks"][0]["status"], "discarded", "{a}");
    assert!(!root.exists() && !root.parent().unwrap().exists());
    assert_eq!(contents(&repo), before);
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn scratch_is_refused_where_the_filesystem_cannot_clone() {
    let Some(env) = sc::no_reflink_env("scratch: refusal without reflink") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    let err = refused(&env, &repo, "no reflink");
    assert_eq!(err["code"], "delegate::no_reflink", "{err}");
    let help = err["help"].as_str().unwrap();
    assert!(help.contains("XFS") && help.contains("Btrfs"), "{help}");
    assert_has(help, "--mode worktree");
    assert_nothing_left(&env, &repo);
    // Human form: a diagnostic on stderr, exit 3.
    let r = env
        .delegate(&repo, ["prepare", "--mode", "scratch"])
        .expect(3);
    assert_has(&r.stderr, "delegate::no_reflink");
    assert_nothing_left(&env, &repo);
}

#[test]
fn a_source_whose_git_is_a_file_is_refused() {
    let Some(env) = sc::reflink_env("scratch: gitfile sources") else {
        return;
    };
    // A linked worktree.
    let repo = env.repo("proj");
    let wt = env.path().join("linked");
    crate::common::fixtures::worktree_add(&env, &repo, &wt);
    let err = refused(&env, &wt, "linked worktree");
    assert_eq!(err["code"], "delegate::scratch_refused", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("linked worktree"),
        "{err}"
    );
    assert_nothing_left(&env, &wt);
    assert_nothing_left(&env, &repo);
    // A gitfile pointing at a separate git dir.
    let sep = env.path().join("sep");
    std::fs::create_dir_all(&sep).unwrap();
    env.git(
        &sep,
        [
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            "../sep.git",
            "proj",
        ],
    );
    let proj = sep.join("proj");
    commit_files(&env, &proj, &[("a", "a\n")], "a");
    let err = refused(&env, &proj, "gitfile");
    assert_eq!(err["code"], "delegate::scratch_refused", "{err}");
    assert_nothing_left(&env, &proj);
}

#[test]
fn a_nested_repository_is_refused() {
    let Some(env) = sc::reflink_env("scratch: nested repository") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    // Inside an ignored folder, where a status would never show it.
    env.git(&repo.join("build"), ["init", "-q", "inner"]);
    let err = refused(&env, &repo, "nested repository");
    assert_eq!(err["code"], "delegate::scratch_refused", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("build/inner/.git"),
        "{err}"
    );
    assert_nothing_left(&env, &repo);
}

#[test]
fn symlinks_out_of_the_copy_are_refused() {
    let Some(env) = sc::reflink_env("scratch: symlinks out") else {
        return;
    };
    let cases: [(&str, &str); 3] = [
        ("abs", "/etc/hostname"),
        ("rel", "../../outside.txt"),
        // Lexically inside, but `s` is the copy's root: `s/..` leaves it.
        ("chain", "s/.."),
    ];
    for (name, target) in cases {
        let repo = env.repo(&format!("{name}/proj"));
        std::fs::create_dir_all(repo.join("deep")).unwrap();
        std::os::unix::fs::symlink("..", repo.join("deep/s")).unwrap();
        std::os::unix::fs::symlink("../README", repo.join("deep/inside")).unwrap();
        let link = if name == "chain" {
            std::os::unix::fs::symlink(".", repo.join("s")).unwrap();
            repo.join("l")
        } else {
            repo.join("deep/escape")
        };
        std::os::unix::fs::symlink(target, &link).unwrap();
        let err = refused(&env, &repo, name);
        assert_eq!(err["code"], "delegate::scratch_refused", "{name}: {err}");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("points outside the copy"),
            "{name}: {err}"
        );
        assert_nothing_left(&env, &repo);
        // Without the escaping link, the same tree (links inside it) is accepted.
        std::fs::remove_file(&link).unwrap();
        env.delegate(&repo, ["prepare", "--mode", "scratch", "--json"])
            .expect(0);
    }
}

#[test]
fn git_config_redirecting_the_worktree_is_refused() {
    let Some(env) = sc::reflink_env("scratch: core.worktree") else {
        return;
    };
    let repo = env.repo("proj");
    env.git(&repo, ["config", "core.worktree", repo.to_str().unwrap()]);
    let err = refused(&env, &repo, "core.worktree");
    assert_eq!(err["code"], "delegate::scratch_refused", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("core.worktree"),
        "{err}"
    );
    assert_nothing_left(&env, &repo);
}

#[test]
fn a_replaced_copy_is_never_removed() {
    let Some(env) = sc::reflink_env("scratch: replaced copy") else {
        return;
    };
    let repo = env.repo("proj");
    let doc = prepare(&env, &repo, &["--mode", "scratch", "-n", "2"]);
    let copies = roots(&doc);
    // The user moves task 2's copy away and puts another folder in its place.
    let moved = copies[1].with_file_name("project.moved");
    std::fs::rename(&copies[1], &moved).unwrap();
    std::fs::create_dir(&copies[1]).unwrap();
    std::fs::write(copies[1].join("keep.txt"), "mine\n").unwrap();
    let st = env.delegate(&repo, ["status"]).expect(0);
    assert!(st.stdout.contains("replaced; not ours"), "{}", st.stdout);
    let d = env
        .delegate(
            &repo,
            ["drop", &doc["batch"].as_str().unwrap()[..8], "--force"],
        )
        .expect(0);
    assert_has(&d.stdout, "Left alone");
    assert!(
        !copies[0].parent().unwrap().exists(),
        "task 1's copy is removed"
    );
    assert_eq!(read(&copies[1].join("keep.txt")), "mine\n");
    assert!(
        moved.join("README").exists(),
        "the moved copy is not touched"
    );
}

#[test]
fn a_copy_whose_batch_is_gone_is_listed_for_the_sweep() {
    let Some(env) = sc::reflink_env("scratch: sweep candidates") else {
        return;
    };
    let repo = env.repo("proj");
    let doc = prepare(&env, &repo, &["--mode", "scratch"]);
    let id = id(&doc);
    let root = roots(&doc).remove(0);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["problems"].as_array().unwrap().len(), 0, "{st}");
    // The batch's owner died and its state went away (e.g. removed by hand).
    std::fs::remove_dir_all(repo.join(".git/delegate/batches").join(&id)).unwrap();
    env.git(
        &repo,
        [
            "update-ref",
            "-d",
            &format!("refs/pi-delegate/batches/{id}/baseline"),
        ],
    );
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let problems = st["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{st}");
    assert_eq!(problems[0]["kind"], "scratch_orphan");
    assert_eq!(problems[0]["batch"], id.as_str());
    let msg = problems[0]["message"].as_str().unwrap();
    assert_has(msg, root.parent().unwrap().to_str().unwrap());
    env.delegate(&repo, ["status", "--check"]).expect(1);
    // Another repository beside it does not see that copy.
    let other = env.repo("other");
    let st = env.delegate(&other, ["status", "--json"]).expect(0).json();
    assert_eq!(st["problems"].as_array().unwrap().len(), 0, "{st}");
}
