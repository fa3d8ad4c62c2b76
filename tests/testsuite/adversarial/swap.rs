//! Adversarial cases: a task workspace swapped for something else (design
//! §3.2 "no longer the folder prepare made"). The workspace is
//! moved aside and replaced by a symlink to a copy of it (its `.git` file
//! included, some files missing, a process sitting in it), or by a real
//! copy at the same path (another inode). Every command must see that it
//! is not the folder prepare made: never read it (the missing files would
//! become deletions in the source), never signal a process in it, never
//! remove it; apply reports the task `failed` with reason `workspace_missing`.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::id;
use crate::common::fixtures::problem;
use crate::common::fixtures::task_root;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::assert_has;
use crate::common::fixtures::prepare;
use crate::common::Env;

/// A repository with a few files in folders.
fn repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    commit_files(
        env,
        &repo,
        &[
            ("a.txt", "a\n"),
            ("b.txt", "b\n"),
            ("src/lib.rs", "pub fn f() {}\n"),
            ("src/deep/x.rs", "// x\n"),
        ],
        "files",
    );
    repo
}

/// Every file below `root` (`.git` excluded at the top): path, mode, size,
/// mtime and bytes (a symlink's target).
fn files(root: &Path) -> BTreeMap<PathBuf, (u32, u64, i64, i64, Vec<u8>)> {
    crate::common::files::entries_below(root, true)
        .into_iter()
        .map(|(p, m, content)| (p, (m.mode(), m.size(), m.mtime(), m.mtime_nsec(), content)))
        .collect()
}

fn cp_a(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp -a {} {}", from.display(), to.display());
}

/// A process sitting with its cwd in `dir`, in a session of its own (no
/// controlling terminal, so apply would stop it, design §3.16).
fn sleeper(dir: &Path) -> Child {
    Command::new("setsid")
        .args(["sleep", "300"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn setsid sleep")
}

/// Wait (generously) until `child` sits in `dir`.
fn wait_in(child: &Child, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let dir = std::fs::canonicalize(dir).unwrap();
    while !std::fs::read_link(format!("/proc/{}/cwd", child.id())).is_ok_and(|c| c == dir) {
        assert!(Instant::now() < deadline, "the sleeper never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Swapped {
    env: Env,
    repo: PathBuf,
    batch: String,
    /// The task's workspace path (a symlink now).
    root: PathBuf,
    /// Where the symlink leads: a copy of the workspace, files missing.
    copy: PathBuf,
    /// The real workspace, moved aside (the worker's edit is in it).
    moved: PathBuf,
    sleeper: Child,
    source_before: BTreeMap<PathBuf, (u32, u64, i64, i64, Vec<u8>)>,
    copy_before: BTreeMap<PathBuf, (u32, u64, i64, i64, Vec<u8>)>,
}

impl Drop for Swapped {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
    }
}

impl Swapped {
    /// Prepare one task, let it edit a.txt, then swap its workspace for a
    /// symlink to a copy that lacks b.txt and src/ and holds a process.
    fn new(prepare_args: &[&str]) -> Swapped {
        let env = Env::new();
        let repo = repo(&env);
        let mut args = vec!["prepare", "--json"];
        args.extend_from_slice(prepare_args);
        let doc = env.delegate(&repo, args).expect(0).json();
        let batch = id(&doc);
        let root = task_root(&doc, 0);
        std::fs::write(root.join("a.txt"), "the worker's a\n").unwrap();

        let copy = env.path().join("elsewhere");
        cp_a(&root, &copy);
        std::fs::remove_file(copy.join("b.txt")).unwrap();
        std::fs::remove_dir_all(copy.join("src")).unwrap();
        assert!(copy.join(".git").is_file());
        let moved = env.path().join("moved-aside");
        std::fs::rename(&root, &moved).unwrap();
        std::os::unix::fs::symlink(&copy, &root).unwrap();
        let sleeper = sleeper(&copy);
        wait_in(&sleeper, &copy);
        Swapped {
            source_before: files(&repo),
            copy_before: files(&copy),
            env,
            repo,
            batch,
            root,
            copy,
            moved,
            sleeper,
        }
    }

    fn run(&self, args: &[&str], code: i32) -> Value {
        self.env.delegate(&self.repo, args).expect(code).json()
    }

    /// Nothing was read, signalled nor removed.
    fn assert_untouched(&mut self, after: &str) {
        assert_eq!(
            files(&self.repo),
            self.source_before,
            "the source changed after {after}"
        );
        assert_eq!(
            files(&self.copy),
            self.copy_before,
            "the copy changed after {after}"
        );
        assert!(
            self.root
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink(),
            "the symlink went after {after}"
        );
        assert!(
            self.sleeper.try_wait().unwrap().is_none(),
            "the process in the copy was stopped by {after}"
        );
        assert_eq!(read_bytes(&self.moved.join("a.txt")), b"the worker's a\n");
    }
}

fn left_alone(doc: &Value) -> Vec<String> {
    doc["left_alone"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn a_workspace_swapped_for_a_symlink_is_never_read_nor_signalled_by_apply_or_status() {
    let mut s = Swapped::new(&[]);

    let doc = s.run(&["status", "--json"], 0);
    let task = &doc["batches"][0]["tasks"][0];
    assert_eq!(task["exists"], false, "{doc:#}");
    assert_eq!(task["changed_paths"], 0, "{doc:#}");
    assert!(problem(&doc, "workspace_replaced").is_some(), "{doc:#}");
    s.assert_untouched("status");

    for args in [
        &["apply", "--json", "--dry-run"][..],
        &["apply", "--json"][..],
    ] {
        let doc = s.run(args, 1);
        let task = &doc["tasks"][0];
        assert_eq!(task["status"], "failed", "{args:?}: {doc:#}");
        assert_eq!(task["reason"], "workspace_missing", "{args:?}: {doc:#}");
        assert_eq!(task["proposed_paths"], serde_json::json!([]), "{doc:#}");
        assert_eq!(doc["applied_paths"], serde_json::json!([]), "{doc:#}");
        assert_eq!(doc["batch_open"], true);
        s.assert_untouched(&format!("{args:?}"));
    }
    // Nothing of the copy became a proposal.
    assert!(
        !s.env
            .private_refs(&s.repo)
            .iter()
            .any(|r| r.ends_with("/proposal")),
        "{:?}",
        s.env.private_refs(&s.repo)
    );
    // Still failed on a second try; drop --force ends the batch, leaving it alone.
    let doc = s.run(&["apply", "--json"], 1);
    assert_eq!(doc["tasks"][0]["reason"], "workspace_missing");
    let doc = s.run(&["drop", &s.batch.clone(), "--force", "--json"], 0);
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(left_alone(&doc), [s.root.to_str().unwrap()], "{doc:#}");
    s.assert_untouched("drop --force");
}

#[test]
fn drop_leaves_a_workspace_swapped_for_a_symlink_alone() {
    let mut s = Swapped::new(&[]);
    // Not the workspace prepare made: never read, so nothing in it counts
    // as unapplied work; the batch is dropped and the folder left alone.
    let doc = s.run(&["drop", &s.batch.clone(), "--json"], 0);
    assert_eq!(doc["dropped"], true, "{doc:#}");
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(left_alone(&doc), [s.root.to_str().unwrap()], "{doc:#}");
    s.assert_untouched("drop");
}

#[test]
fn drop_force_leaves_a_workspace_swapped_for_a_symlink_alone() {
    let mut s = Swapped::new(&[]);
    let doc = s.run(&["drop", &s.batch.clone(), "--force", "--json"], 0);
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(left_alone(&doc), [s.root.to_str().unwrap()], "{doc:#}");
    s.assert_untouched("drop --force");
}

#[test]
fn gc_neither_rescues_nor_removes_a_workspace_swapped_for_a_symlink() {
    let mut s = Swapped::new(&["--ttl", "1s"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let doc = s.run(&["status", "--json"], 0);
        let state = doc["batches"][0]["lease"]["state"]
            .as_str()
            .unwrap()
            .to_string();
        if state == "expired" || state == "orphaned" {
            break;
        }
        assert!(Instant::now() < deadline, "the batch never went stale");
        std::thread::sleep(Duration::from_millis(200));
    }
    let dry = s.run(&["gc", "--json", "--dry-run"], 0);
    assert_eq!(dry["rescued"], serde_json::json!([]), "{dry:#}");
    s.assert_untouched("gc --dry-run");
    let doc = s.run(&["gc", "--json"], 0);
    assert_eq!(doc["batches"], serde_json::json!([s.batch]), "{doc:#}");
    assert_eq!(doc["rescued"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["skipped"], serde_json::json!([]), "{doc:#}");
    assert!(
        left_alone(&doc).contains(&s.root.to_str().unwrap().to_string()),
        "{doc:#}"
    );
    s.assert_untouched("gc");
}

#[test]
fn a_workspace_replaced_by_a_copy_at_the_same_path_is_workspace_missing() {
    let env = Env::new();
    let repo = repo(&env);
    let doc = prepare(&env, &repo, &[]);
    let root = task_root(&doc, 0);
    std::fs::write(root.join("a.txt"), "the worker's a\n").unwrap();
    // A copy made while the workspace exists has another inode; it takes
    // the workspace's place (same path, same `.git` file), lacking b.txt.
    let copy = env.path().join("copy");
    cp_a(&root, &copy);
    std::fs::remove_file(copy.join("b.txt")).unwrap();
    let ino = root.metadata().unwrap().ino();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::rename(&copy, &root).unwrap();
    assert_ne!(root.metadata().unwrap().ino(), ino);
    let source_before = files(&repo);
    let copy_before = files(&root);

    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["status"], "failed", "{doc:#}");
    assert_eq!(doc["tasks"][0]["reason"], "workspace_missing", "{doc:#}");
    assert_eq!(files(&repo), source_before);
    assert_eq!(files(&root), copy_before);
    let doc = env
        .delegate(
            &repo,
            ["drop", doc["batch"].as_str().unwrap(), "--force", "--json"],
        )
        .expect(0)
        .json();
    assert_eq!(doc["workspaces_removed"], 0, "{doc:#}");
    assert_eq!(files(&root), copy_before);
}

/// Strip the `[tasks.folder]` tables from a batch's `batch.toml`, as a
/// batch recorded before identities were kept has none.
fn forget_identity(env: &Env, repo: &Path, batch: &str) {
    let common = PathBuf::from(
        env.git(
            repo,
            ["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .trim(),
    );
    let path = common
        .join("delegate/batches")
        .join(batch)
        .join("batch.toml");
    let text = read(&path);
    assert_has(&text, "[tasks.folder]");
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skipping = line == "[tasks.folder]";
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    std::fs::write(&path, out).unwrap();
}

#[test]
fn a_batch_recorded_without_identities_still_applies_and_still_refuses_a_symlink() {
    let env = Env::new();
    let repo = repo(&env);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let batch = id(&doc);
    let roots: Vec<PathBuf> = (0..2)
        .map(|i| PathBuf::from(doc["tasks"][i]["root"].as_str().unwrap()))
        .collect();
    forget_identity(&env, &repo, &batch);
    std::fs::write(roots[0].join("a.txt"), "the worker's a\n").unwrap();
    // Task 2's workspace becomes a symlink to a copy lacking b.txt.
    let copy = env.path().join("elsewhere");
    cp_a(&roots[1], &copy);
    std::fs::remove_file(copy.join("b.txt")).unwrap();
    std::fs::rename(&roots[1], env.path().join("moved-aside")).unwrap();
    std::os::unix::fs::symlink(&copy, &roots[1]).unwrap();
    let copy_before = files(&copy);

    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert_eq!(doc["tasks"][1]["status"], "failed", "{doc:#}");
    assert_eq!(doc["tasks"][1]["reason"], "workspace_missing", "{doc:#}");
    assert_eq!(read_bytes(&repo.join("a.txt")), b"the worker's a\n");
    assert_eq!(read_bytes(&repo.join("b.txt")), b"b\n");
    assert!(!roots[0].exists());
    assert_eq!(files(&copy), copy_before);
    assert!(roots[1]
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_workspace_root_reached_through_a_symlinked_folder_is_still_ours() {
    // The workspace root configured through a symlink (a home folder on
    // another disk, say): the real path recorded at prepare time is where
    // the symlink led then, and the workspace is found to be ours.
    let env = Env::new();
    let repo = repo(&env);
    let real = env.path().join("real-data");
    std::fs::create_dir_all(&real).unwrap();
    let link = env.path().join("data-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = |args: &[&str], code: i32| -> Value {
        let out = env
            .delegate_cmd(&repo)
            .env("XDG_DATA_HOME", &link)
            .args(args)
            .output()
            .unwrap();
        crate::common::Run::from(out).expect(code).json()
    };
    let doc = run(&["prepare", "--json"], 0);
    let root = task_root(&doc, 0);
    assert!(root.starts_with(&link));
    std::fs::write(root.join("a.txt"), "the worker's a\n").unwrap();
    let doc = run(&["status", "--json"], 0);
    assert_eq!(doc["batches"][0]["tasks"][0]["exists"], true, "{doc:#}");
    assert_eq!(doc["batches"][0]["tasks"][0]["changed_paths"], 1, "{doc:#}");
    let doc = run(&["apply", "--json"], 0);
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert_eq!(read_bytes(&repo.join("a.txt")), b"the worker's a\n");
    assert!(!root.exists());
}
