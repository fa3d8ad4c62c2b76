//! Shared workspace roots (design §3.18 "Shared workspace roots"): with
//! `workspace.root` in a folder other users can write (a sticky `/tmp`-like
//! one), another user can predict this repository's folder there
//! (`<root>/<repo-name>-<fp>`) and make it first, or put a symlink where a
//! folder of ours is expected. prepare refuses such a folder (exit 3,
//! `delegate::unsafe_workspace_root`, naming it and its owner) and makes
//! nothing through it; gc and drop report it (`unsafe_folders`) and never
//! enter it, so a symlink's target keeps every byte; the folders prepare
//! makes are `0700`; and a folder swapped for a symlink after gc checked it
//! is removed through the handle gc checked, never through the symlink.
//!
//! The other user is real where it matters: `setpriv --reuid=12345` makes
//! the folders and links an attacker would make. The tests need root for
//! that (and for `chown`); run as another user they say SKIPPED.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::paused_at;
use crate::common::fixtures::strs;
use crate::common::succeed_as;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::assert_has;
use crate::common::files::chmod;
use crate::common::fixtures::{id, prepare, roots, set_workspace_root, wait_stale};
use crate::common::Env;

/// The other user of the machine (no account needed).
const OTHER: u32 = 12345;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `None` (after saying SKIPPED) when these tests cannot act as another user.
fn env(name: &str) -> Option<Env> {
    if !is_root() {
        eprintln!("SKIPPED {name}: needs root (chown, setpriv)");
        return None;
    }
    Some(Env::new())
}

fn mode_of(p: &Path) -> u32 {
    p.symlink_metadata().unwrap().mode() & 0o7777
}

/// `sh -c script` as the other user, as an attacker would run it.
fn other_user(script: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={OTHER}"),
        &format!("--regid={OTHER}"),
        "--clear-groups",
        "--",
        "sh",
        "-c",
        script,
    ]);
    cmd
}

/// Run `script` in `dir` as the other user; it must succeed.
fn as_other(dir: &Path, script: &str) {
    let mut cmd = other_user(script);
    cmd.current_dir(dir);
    succeed_as(cmd, &format!("as uid {OTHER}: {script}"));
}

/// A repository with a few files, its workspace root `<env>/shared` with
/// `mode` (1777: a shared sticky folder like `/tmp`). The test's own
/// temp folder is opened for others to reach it, as `/tmp` is.
fn setup(env: &Env, mode: u32) -> (PathBuf, PathBuf) {
    chmod(env.path(), 0o755);
    let repo = env.repo("proj");
    commit_files(env, &repo, &[("src/lib.rs", "pub fn f() {}\n")], "files");
    let root = env.path().join("shared");
    std::fs::create_dir(&root).unwrap();
    chmod(&root, mode);
    set_workspace_root(&repo, &root);
    (repo, root)
}

/// This repository's folder under `root`: `<root>/proj-<fp>`, the first 12
/// hex digits of the SHA-256 of the canonical common dir (design §2): a
/// name anyone can work out.
fn repo_folder(repo: &Path, root: &Path) -> PathBuf {
    let common = std::fs::canonicalize(repo.join(".git")).unwrap();
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        use std::os::unix::ffi::OsStrExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(common.as_os_str().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let hex = String::from_utf8_lossy(&out.stdout);
    root.join(format!("proj-{}", &hex[..12]))
}

/// Everything below `root`: per path, its mode, owner, size and bytes (a
/// symlink's target).
fn files(root: &Path) -> BTreeMap<PathBuf, (u32, u32, u64, Vec<u8>)> {
    crate::common::files::entries_below(root, false)
        .into_iter()
        .map(|(p, m, content)| (p, (m.mode(), m.uid(), m.size(), content)))
        .collect()
}

/// A folder of precious files someone wants deleted.
fn victim(env: &Env) -> PathBuf {
    let v = env.path().join("victim");
    for task in ["1", "2"] {
        std::fs::create_dir_all(v.join(task).join("sub")).unwrap();
        std::fs::write(v.join(task).join("precious.txt"), format!("keep {task}\n")).unwrap();
        std::fs::write(v.join(task).join("sub/deep.txt"), "deep\n").unwrap();
    }
    v
}

/// Nothing of a refused prepare is left: no batch, no ref, no registration.
fn nothing_prepared(env: &Env, repo: &Path) {
    let status = env.delegate(repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"], serde_json::json!([]), "{status}");
    assert!(env.private_refs(repo).is_empty());
    assert!(std::fs::read_dir(repo.join(".git/worktrees")).map_or(true, |mut d| d.next().is_none()));
}

fn unsafe_error(run: &crate::common::Run) -> Value {
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::unsafe_workspace_root",
        "{doc}"
    );
    doc["error"].clone()
}

/// `doc` (gc, drop) names exactly one unsafe folder: `path`, owned by
/// `owner`, for `reason`.
#[track_caller]
fn assert_one_unsafe_folder(doc: &Value, path: &Path, owner: u64, reason: &str) {
    assert_eq!(
        unsafe_folders(doc),
        vec![(
            path.to_string_lossy().into_owned(),
            owner,
            reason.to_string()
        )],
        "{doc}"
    );
}

#[test]
fn prepare_refuses_a_repository_folder_another_user_made() {
    let Some(env) = env("prepare_refuses_a_repository_folder_another_user_made") else {
        return;
    };
    let (repo, root) = setup(&env, 0o1777);
    let folder = repo_folder(&repo, &root);
    // The other user makes it first, open to everyone, to plant links in later.
    as_other(&root, &format!("mkdir -m 777 '{}'", folder.display()));
    assert_eq!(folder.metadata().unwrap().uid(), OTHER);

    let run = env
        .delegate(&repo, ["prepare", "--json", "-n", "2"])
        .expect(3);
    let error = unsafe_error(&run);
    let msg = error["message"].as_str().unwrap();
    assert_has(msg, folder.to_str().unwrap());
    assert!(msg.contains(&format!("uid {OTHER}")), "{msg}");
    assert!(
        error["help"].as_str().unwrap().contains("workspace.root"),
        "{error}"
    );
    assert_eq!(error["unsafe_folder"]["path"], folder.to_str().unwrap());
    assert_eq!(error["unsafe_folder"]["owner"], OTHER);
    assert_eq!(error["unsafe_folder"]["reason"], "other_owner");
    // Nothing was made through it.
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    nothing_prepared(&env, &repo);

    // The human diagnostic names it and its owner too.
    let run = env.delegate(&repo, ["prepare"]).expect(3);
    assert_has(&run.stderr, "unsafe_workspace_root");
    assert!(
        run.stderr.contains(&format!("uid {OTHER}")),
        "{}",
        run.stderr
    );

    // chown'd the same way (a folder of ours given away) is refused the same.
    std::fs::remove_dir(&folder).unwrap();
    std::fs::create_dir(&folder).unwrap();
    let out = Command::new("chown")
        .arg(OTHER.to_string())
        .arg(&folder)
        .status()
        .unwrap();
    assert!(out.success());
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    assert_eq!(unsafe_error(&run)["unsafe_folder"]["owner"], OTHER);
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    nothing_prepared(&env, &repo);
}

#[test]
fn prepare_refuses_a_repository_folder_replaced_by_a_symlink() {
    let Some(env) = env("prepare_refuses_a_repository_folder_replaced_by_a_symlink") else {
        return;
    };
    let (repo, root) = setup(&env, 0o1777);
    let folder = repo_folder(&repo, &root);
    // The other user's link to a folder of theirs, where ours would be.
    let theirs = root.join("theirs");
    as_other(
        &root,
        &format!(
            "mkdir -m 777 '{}' && ln -s '{}' '{}'",
            theirs.display(),
            theirs.display(),
            folder.display()
        ),
    );
    let run = env
        .delegate(&repo, ["prepare", "--json", "-n", "2"])
        .expect(3);
    let error = unsafe_error(&run);
    let msg = error["message"].as_str().unwrap();
    assert_has(msg, folder.to_str().unwrap());
    assert_has(msg, "symbolic link");
    assert!(msg.contains(&format!("uid {OTHER}")), "{msg}");
    assert_eq!(error["unsafe_folder"]["path"], folder.to_str().unwrap());
    assert_eq!(error["unsafe_folder"]["owner"], OTHER);
    assert_eq!(error["unsafe_folder"]["reason"], "symlink");
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    nothing_prepared(&env, &repo);

    // A link of our own to a folder of ours is no folder either.
    std::fs::remove_file(&folder).unwrap();
    let mine = env.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::os::unix::fs::symlink(&mine, &folder).unwrap();
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    assert_eq!(unsafe_error(&run)["unsafe_folder"]["reason"], "symlink");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 0);
    nothing_prepared(&env, &repo);
}

#[test]
fn prepare_refuses_a_root_everyone_can_change() {
    let Some(env) = env("prepare_refuses_a_root_everyone_can_change") else {
        return;
    };
    // World-writable without the sticky bit: anyone could rename our
    // folder away and put theirs in its place between two commands.
    let (repo, root) = setup(&env, 0o777);
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    let error = unsafe_error(&run);
    assert_eq!(error["unsafe_folder"]["path"], root.to_str().unwrap());
    assert_eq!(error["unsafe_folder"]["reason"], "writable_by_others");
    assert!(
        error["help"].as_str().unwrap().contains("chmod +t"),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
    nothing_prepared(&env, &repo);
    // Sticky, it is fine.
    chmod(&root, 0o1777);
    prepare(&env, &repo, &[]);
}

#[test]
fn a_sticky_shared_root_works_and_what_prepare_makes_there_is_private() {
    let Some(env) = env("a_sticky_shared_root_works_and_what_prepare_makes_there_is_private")
    else {
        return;
    };
    let (repo, root) = setup(&env, 0o1777);
    let folder = repo_folder(&repo, &root);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    let batch_folder = ws[0].parent().unwrap().to_path_buf();
    assert_eq!(batch_folder.parent().unwrap(), folder);
    assert_eq!(mode_of(&folder), 0o700);
    assert_eq!(mode_of(&batch_folder), 0o700);
    // The other user can neither look in nor make anything there.
    let probe = other_user(&format!(
        "ls '{}' || mkdir '{}/x'",
        folder.display(),
        folder.display()
    ))
    .output()
    .unwrap();
    assert!(!probe.status.success());
    assert!(!folder.join("x").exists());

    // The whole cycle works: work, apply, gc.
    std::fs::write(ws[0].join("src/lib.rs"), "pub fn f() -> u8 { 1 }\n").unwrap();
    std::fs::write(ws[1].join("new.txt"), "new\n").unwrap();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    for t in out["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "applied", "{out}");
    }
    assert_eq!(read(&repo.join("src/lib.rs")), "pub fn f() -> u8 { 1 }\n");
    assert_eq!(read(&repo.join("new.txt")), "new\n");
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }
    env.delegate(&repo, ["gc", "--json"]).expect(0);

    // A repository folder of ours that an earlier version left open to
    // everyone is made private before anything goes in it.
    std::fs::create_dir_all(&folder).unwrap();
    chmod(&folder, 0o777);
    let doc = prepare(&env, &repo, &[]);
    assert_eq!(mode_of(&folder), 0o700);
    assert_eq!(mode_of(roots(&doc)[0].parent().unwrap()), 0o700);
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
}

/// Put a symlink to `target` where `batch_folder` is, owned by the other
/// user; the folder is moved aside, out of the workspace root.
fn swap_for_link(env: &Env, batch_folder: &Path, target: &Path) -> PathBuf {
    let aside = env.path().join(format!(
        "aside-{}",
        batch_folder.file_name().unwrap().to_string_lossy()
    ));
    std::fs::rename(batch_folder, &aside).unwrap();
    std::os::unix::fs::symlink(target, batch_folder).unwrap();
    let out = Command::new("chown")
        .args(["-h", &OTHER.to_string()])
        .arg(batch_folder)
        .status()
        .unwrap();
    assert!(out.success());
    aside
}

fn unsafe_folders(doc: &Value) -> Vec<(String, u64, String)> {
    doc["unsafe_folders"]
        .as_array()
        .unwrap_or_else(|| panic!("no unsafe_folders in {doc}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["owner"].as_u64().unwrap(),
                f["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn drop_and_gc_never_enter_a_batch_folder_replaced_by_a_symlink() {
    let Some(env) = env("drop_and_gc_never_enter_a_batch_folder_replaced_by_a_symlink") else {
        return;
    };
    let (repo, _root) = setup(&env, 0o1777);
    let victim = victim(&env);

    // drop: what is at the workspaces' paths is no workspace of the batch,
    // so it holds none of its work either.
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    let batch_folder = ws[0].parent().unwrap().to_path_buf();
    // The link's target even holds copies of the workspaces, `.git` files
    // and all: they are not the folders prepare made.
    for (w, task) in ws.iter().zip(["1", "2"]) {
        std::fs::copy(w.join(".git"), victim.join(task).join(".git")).unwrap();
    }
    let before = files(&victim);
    swap_for_link(&env, &batch_folder, &victim);
    let out = env
        .delegate(&repo, ["drop", &id(&doc), "--json"])
        .expect(0)
        .json();
    assert_one_unsafe_folder(&out, &batch_folder, u64::from(OTHER), "symlink");
    let left: Vec<&str> = strs(&out["left_alone"]);
    for w in &ws {
        assert!(left.contains(&w.to_str().unwrap()), "{out}");
    }
    assert_eq!(out["workspaces_removed"], 0, "{out}");
    assert_eq!(files(&victim), before);
    assert!(batch_folder
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    std::fs::remove_file(&batch_folder).unwrap();

    // gc of a stale batch: reported, never entered.
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    let ws = roots(&doc);
    let batch_folder = ws[0].parent().unwrap().to_path_buf();
    swap_for_link(&env, &batch_folder, &victim);
    wait_stale(&env, &repo, &id(&doc));
    let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_one_unsafe_folder(&out, &batch_folder, u64::from(OTHER), "symlink");
    assert_eq!(out["workspaces_removed"], 0, "{out}");
    assert_eq!(files(&victim), before);
    // The human report says so too.
    let run = env.delegate(&repo, ["gc"]).expect(0);
    assert!(
        run.stdout.contains(batch_folder.to_str().unwrap()) && run.stdout.contains("symbolic link"),
        "{}",
        run.stdout
    );
    assert_eq!(files(&victim), before);
}

#[test]
fn drop_and_gc_leave_a_batch_folder_another_user_owns_alone() {
    let Some(env) = env("drop_and_gc_leave_a_batch_folder_another_user_owns_alone") else {
        return;
    };
    let (repo, _root) = setup(&env, 0o1777);
    for stale in [false, true] {
        let args: &[&str] = if stale { &["--ttl", "1s"] } else { &[] };
        let doc = prepare(&env, &repo, args);
        let ws = roots(&doc);
        std::fs::write(ws[0].join("work.txt"), "the worker's\n").unwrap();
        let batch_folder = ws[0].parent().unwrap().to_path_buf();
        // Given to the other user whole (their folder now, as the user
        // could not tell it apart from one they made).
        let out = Command::new("chown")
            .args(["-R", &OTHER.to_string()])
            .arg(&batch_folder)
            .status()
            .unwrap();
        assert!(out.success());
        let before = files(&batch_folder);
        let out = if stale {
            wait_stale(&env, &repo, &id(&doc));
            env.delegate(&repo, ["gc", "--json"]).expect(0).json()
        } else {
            env.delegate(&repo, ["drop", &id(&doc), "--force", "--json"])
                .expect(0)
                .json()
        };
        assert_one_unsafe_folder(&out, &batch_folder, u64::from(OTHER), "other_owner");
        assert_eq!(out["workspaces_removed"], 0, "{out}");
        assert_eq!(files(&batch_folder), before);
        std::fs::remove_dir_all(&batch_folder).unwrap();
    }
}

#[test]
fn gc_removes_a_leftover_through_the_handle_it_checked_not_a_symlink_swapped_in() {
    let Some(env) =
        env("gc_removes_a_leftover_through_the_handle_it_checked_not_a_symlink_swapped_in")
    else {
        return;
    };
    let (repo, _root) = setup(&env, 0o1777);
    let victim = victim(&env);
    let before = files(&victim);
    // A batch whose state and registration are gone, its workspace an
    // empty folder (as a prepare that died before its checkout leaves
    // one): a leftover gc removes (a folder holding anything is left
    // alone: nothing proves its files are no work, design §3.18).
    let doc = prepare(&env, &repo, &[]);
    let batch = id(&doc);
    let ws = roots(&doc).remove(0);
    std::fs::remove_dir_all(repo.join(".git/delegate/batches").join(&batch)).unwrap();
    std::fs::remove_dir_all(repo.join(format!(".git/worktrees/delegate-{}-1", &batch[..8])))
        .unwrap();
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::create_dir(&ws).unwrap();

    // gc stops once it has checked the folder, before it removes it; the
    // batch folder is swapped for a symlink to the victim then.
    let mut gc = env.delegate_cmd(&repo);
    gc.args(["gc", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = paused_at(&env, gc, "gc-leftover-checked");
    let paused = env.path().join("paused");
    let batch_folder = ws.parent().unwrap().to_path_buf();
    let aside = swap_for_link(&env, &batch_folder, &victim);
    // Removing the file lets gc go on.
    std::fs::remove_file(&paused).unwrap();
    let out = crate::common::Run::from(child.wait_with_output().unwrap()).expect(0);
    let doc = out.json();
    assert_eq!(files(&victim), before, "{doc}");
    // What it checked is what went: the folder it held, wherever it is now.
    assert_eq!(doc["workspaces_removed"], 1, "{doc}");
    assert!(!aside.join("1").exists());
}

#[test]
fn gc_never_enters_a_trash_replaced_by_a_symlink() {
    let Some(env) = env("gc_never_enters_a_trash_replaced_by_a_symlink") else {
        return;
    };
    let (repo, root) = setup(&env, 0o1777);
    let doc = prepare(&env, &repo, &[]);
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);
    let folder = repo_folder(&repo, &root);
    std::fs::create_dir_all(&folder).unwrap();
    // What looks like a trash entry of ours, in a folder of the victim's.
    let victim = env.path().join("victim-trash");
    let entry = victim.join("0123abcd-1-89abcdef");
    std::fs::create_dir_all(entry.join("sub")).unwrap();
    std::fs::write(entry.join("sub/precious.txt"), "keep\n").unwrap();
    std::fs::write(
        entry.join(".git"),
        format!(
            "gitdir: {}\n",
            repo.join(".git/worktrees/delegate-0123abcd-1").display()
        ),
    )
    .unwrap();
    let before = files(&victim);
    let trash = folder.join(".trash");
    std::os::unix::fs::symlink(&victim, &trash).unwrap();
    let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_one_unsafe_folder(&out, &trash, 0, "symlink");
    assert_eq!(out["workspaces_removed"], 0, "{out}");
    // Nor does the next command's background sweep, nor prepare's trash.
    prepare(&env, &repo, &[]);
    assert_eq!(files(&victim), before);
}

// ---------------------------------------------------------------------------
// A batch record pointing a task at another folder (design §3.18).

/// Rewrite task 0 of the batch record so its workspace is `outside`, with
/// `outside`'s own identity (device, inode, real path) recorded, and make
/// `outside` look like the workspace: a `.git` file pointing at the task's
/// registration.
fn point_task_at(env: &Env, repo: &Path, id: &str, outside: &Path) {
    let file = crate::common::fixtures::batch_toml(env, repo, id);
    let mut state: toml::Value = toml::from_str(&read(&file)).unwrap();
    let task = &mut state["tasks"].as_array_mut().unwrap()[0];
    let ws = std::path::PathBuf::from(task["root"].as_str().unwrap());
    let dotgit = read_bytes(&ws.join(".git"));
    std::fs::write(outside.join(".git"), dotgit).unwrap();
    let t = task.as_table_mut().unwrap();
    t.insert(
        "root".into(),
        toml::Value::String(outside.to_str().unwrap().into()),
    );
    let m = std::fs::metadata(outside).unwrap();
    let mut folder = toml::map::Map::new();
    folder.insert("dev".into(), toml::Value::Integer(m.dev() as i64));
    folder.insert("ino".into(), toml::Value::Integer(m.ino() as i64));
    folder.insert(
        "path".into(),
        toml::Value::String(
            std::fs::canonicalize(outside)
                .unwrap()
                .to_str()
                .unwrap()
                .into(),
        ),
    );
    t.insert("folder".into(), toml::Value::Table(folder));
    std::fs::write(&file, toml::to_string(&state).unwrap()).unwrap();
}

#[test]
fn a_task_root_edited_to_point_outside_the_workspace_root_is_never_read_nor_removed() {
    for cmd in [&["apply"][..], &["gc"][..], &["drop", "--force"][..]] {
        let (env, repo) = Env::with_repo("proj");
        let doc = prepare(&env, &repo, &["--ttl", "1s"]);
        let id = id(&doc);
        // A folder of the user's, with a file in it.
        let outside = env.home().join("important");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("thesis.txt"), "years of work\n").unwrap();
        point_task_at(&env, &repo, &id, &outside);
        let before = crate::common::files::tree(&outside);
        if cmd[0] == "gc" {
            wait_stale(&env, &repo, &id);
        }
        let mut args: Vec<&str> = cmd.to_vec();
        if cmd[0] != "gc" {
            args.push(&id);
        }
        let run = env.delegate(&repo, &args);
        assert_eq!(
            crate::common::files::tree(&outside),
            before,
            "{cmd:?} changed the outside folder: {} {}",
            run.stdout,
            run.stderr
        );
        // Never read as the task's work either.
        assert!(
            !repo.join("thesis.txt").exists(),
            "{cmd:?} read the outside folder"
        );
        assert!(
            format!("{}{}", run.stdout, run.stderr).contains("not where prepare puts a workspace"),
            "{cmd:?} (exit {:?}) does not say why: {} {}",
            run.code,
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn the_pool_under_a_shared_root_is_private_and_a_pool_folder_swapped_for_a_symlink_is_never_entered(
) {
    let Some(env) = env(
        "the_pool_under_a_shared_root_is_private_and_a_pool_folder_swapped_for_a_symlink_is_never_entered",
    ) else {
        return;
    };
    let (repo, root) = setup(&env, 0o1777);
    crate::common::fixtures::set_config(
        &repo,
        &format!("[workspace]\nroot = \"{}\"\npool = 2\n", root.display()),
    );
    let folder = repo_folder(&repo, &root);
    let pool = folder.join("pool");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    // Workspaces of the pool live in `<root>/<repo>-<fp>/pool`, private.
    for w in &ws {
        assert_eq!(w.parent().unwrap(), pool);
    }
    assert_eq!(mode_of(&folder), 0o700);
    assert_eq!(mode_of(&pool), 0o700);
    let probe = other_user(&format!("ls '{}'", pool.display()))
        .output()
        .unwrap();
    assert!(!probe.status.success());
    std::fs::write(ws[0].join("src/lib.rs"), "pub fn f() -> u8 { 1 }\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    // Idle where they were, and reused there.
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let mut again = roots(&doc);
    again.sort();
    let mut before = ws.clone();
    before.sort();
    assert_eq!(again, before);
    env.delegate(&repo, ["apply"]).expect(0);

    // The pool folder swapped for another user's symlink to a victim's
    // folder holding copies of the idle workspaces: prepare refuses it,
    // gc reports it, and neither enters it.
    let victim = victim(&env);
    for (w, task) in ws.iter().zip(["1", "2"]) {
        std::fs::copy(w.join(".git"), victim.join(task).join(".git")).unwrap();
    }
    let files_before = files(&victim);
    swap_for_link(&env, &pool, &victim);
    let run = env
        .delegate(&repo, ["prepare", "-n", "2", "--json"])
        .expect(3);
    let err = unsafe_error(&run);
    assert_eq!(
        err["unsafe_folder"]["path"],
        pool.to_str().unwrap(),
        "{err}"
    );
    nothing_prepared_but_idle(&env, &repo);
    assert_eq!(files(&victim), files_before);
    let out = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_one_unsafe_folder(&out, &pool, u64::from(OTHER), "symlink");
    let out = env
        .delegate(&repo, ["drop", "--pool", "--json"])
        .expect(0)
        .json();
    // The idle records went with the refused prepare's proof: nothing left.
    assert_eq!(out["idle_workspaces_removed"], 0, "{out}");
    assert_eq!(files(&victim), files_before);
}

/// No batch and no private ref after a refused prepare (the pool's
/// registrations may stay: they are gc's).
fn nothing_prepared_but_idle(env: &Env, repo: &Path) {
    let status = env.delegate(repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"], serde_json::json!([]), "{status}");
    assert!(env.private_refs(repo).is_empty());
}
