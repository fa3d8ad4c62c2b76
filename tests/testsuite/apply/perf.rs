//! What makes `apply` fast and lean (design §8), on real repositories:
//! workspaces removed through the trash by a background deleter (which
//! never deletes anything else), `gc` and later commands sweeping what a
//! killed deleter left, and big files streamed: their patch refers to the
//! blob instead of carrying it, and still applies with `git apply --3way`.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::fixtures::{prepare_roots, task};
use crate::common::Env;

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A repository with `n` committed files in a few folders (more than the
/// 128 index entries below which a workspace is removed in place).
fn repo_with_files(env: &Env, n: usize) -> PathBuf {
    let repo = env.repo("proj");
    for i in 0..n {
        let dir = repo.join(format!("d{}", i % 7));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    repo
}

/// `<root>/<repo>-<fp>`: the folder holding a workspace's batch folder.
fn base_of(ws: &Path) -> PathBuf {
    ws.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Running `purge-trash` processes that work below `under`.
fn deleters_under(under: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    for pid in crate::common::procs::pids() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.iter().any(|a| *a == b"purge-trash")
            && args
                .iter()
                .any(|a| Path::new(std::ffi::OsStr::from_bytes(a)).starts_with(under))
        {
            out.push(pid);
        }
    }
    out
}

/// Wait until no trash and no deleter is left under the env's workspace root.
fn wait_for_empty_trash(env: &Env, base: &Path) {
    wait_until("the background deleter to finish", || {
        !base.join(".trash").exists() && deleters_under(&env.workspace_root()).is_empty()
    });
}

/// A fake trash entry as apply leaves it: `<short>-<task>-<random>` with our
/// `.git` file, a few files and a folder.
fn fake_entry(trash: &Path, name: &str, gitdir: &str) -> PathBuf {
    let e = trash.join(name);
    std::fs::create_dir_all(e.join("sub/deeper")).unwrap();
    std::fs::write(e.join("a.txt"), "a\n").unwrap();
    std::fs::write(e.join("sub/deeper/b.txt"), "b\n").unwrap();
    std::fs::write(e.join(".git"), format!("gitdir: {gitdir}\n")).unwrap();
    e
}

fn tree_listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn large_workspaces_go_through_the_trash_and_are_deleted_in_the_background() {
    let env = Env::new();
    let repo = repo_with_files(&env, 300);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let short = &doc["batch"].as_str().unwrap()[..8];
    let base = base_of(&ws[0]);
    std::fs::write(ws[0].join("d0/f0.txt"), "changed by one\n").unwrap();
    std::fs::write(ws[1].join("d1/f1.txt"), "changed by two\n").unwrap();
    // Hold the deleter's lock on the trash, so what apply leaves can be seen.
    std::fs::create_dir(base.join(".trash")).unwrap();
    let held = std::fs::File::open(base.join(".trash")).unwrap();
    held.lock().unwrap();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "applied");
    // Gone from where they were at once (moved into the trash), registrations too.
    assert!(!ws[0].exists() && !ws[1].exists());
    let mut names: Vec<String> = std::fs::read_dir(base.join(".trash"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    for (name, t) in names.iter().zip(["1", "2"]) {
        let random = name
            .strip_prefix(&format!("{short}-{t}-"))
            .unwrap_or_else(|| panic!("{name}"));
        assert!(random.len() == 8 && random.bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(base.join(".trash").join(name).join("d0/f0.txt").exists());
    }
    assert_eq!(
        deleters_under(&base).len(),
        1,
        "one deleter waits for the lock"
    );
    drop(held);
    assert!(!ws[0].parent().unwrap().exists(), "the batch folder stayed");
    assert_eq!(
        env.git(&repo, ["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(read(&repo.join("d0/f0.txt")), "changed by one\n");
    assert_eq!(read(&repo.join("d1/f1.txt")), "changed by two\n");
    wait_for_empty_trash(&env, &base);
    // The emptied repository folder goes too, as a removal in place leaves it.
    wait_until("the emptied repository folder to go", || !base.exists());
}

#[test]
fn small_workspaces_are_removed_in_place_without_a_deleter() {
    let env = Env::new();
    let repo = repo_with_files(&env, 20);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("d0/f0.txt"), "changed\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    assert!(!ws[0].exists());
    // Removed before apply returned: no trash was ever made.
    assert!(!base_of(&ws[0]).join(".trash").exists());
    assert!(!base_of(&ws[0]).exists());
}

#[test]
fn the_deleter_deletes_only_our_renamed_workspaces() {
    let env = Env::new();
    let root = env.path().join("area");
    let trash = root.join(".trash");
    std::fs::create_dir_all(&trash).unwrap();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), "keep me\n").unwrap();

    // Ours: named `<8 hex>-<task>-<8 hex>`, `.git` naming a delegate-* registration.
    let ours = fake_entry(
        &trash,
        "0123abcd-task.1-89abcdef",
        "/r/.git/worktrees/delegate-0123abcd-task.1",
    );
    // ... even holding a symlink to a folder outside: the link goes, never what it points to.
    std::os::unix::fs::symlink(&outside, ours.join("sub/link-out")).unwrap();
    // An empty entry (a deleter was killed right after `.git` went).
    let emptied = trash.join("0123abcd-2-89abcdef");
    std::fs::create_dir(&emptied).unwrap();
    // Not ours: wrong names, a `.git` of another worktree, a plain file, a symlink.
    let badly_named = fake_entry(&trash, "notours", "/r/.git/worktrees/delegate-x");
    let foreign = fake_entry(&trash, "0123abcd-3-89abcdef", "/r/.git/worktrees/mine");
    let no_marker = trash.join("0123abcd-4-89abcdef");
    std::fs::create_dir_all(&no_marker).unwrap();
    std::fs::write(no_marker.join("data"), "x\n").unwrap();
    std::fs::write(trash.join("0123abcd-5-89abcdef"), "a file\n").unwrap();
    std::os::unix::fs::symlink(&outside, trash.join("0123abcd-6-89abcdef")).unwrap();
    // A folder that is not named `.trash` is never purged, whatever it holds.
    let elsewhere = root.join("not-trash");
    let elsewhere_entry = fake_entry(
        &elsewhere,
        "0123abcd-7-89abcdef",
        "/r/.git/worktrees/delegate-0123abcd-7",
    );

    let kept_before = [
        tree_listing(&badly_named),
        tree_listing(&foreign),
        tree_listing(&no_marker),
        tree_listing(&elsewhere),
        tree_listing(&outside),
    ];
    for dir in [&trash, &elsewhere] {
        let out = env
            .delegate(
                &root,
                [std::ffi::OsStr::new("purge-trash"), dir.as_os_str()],
            )
            .expect(0);
        assert!(out.stdout.is_empty());
    }
    assert!(!ours.exists() && !emptied.exists());
    assert_eq!(
        [
            tree_listing(&badly_named),
            tree_listing(&foreign),
            tree_listing(&no_marker),
            tree_listing(&elsewhere),
            tree_listing(&outside),
        ],
        kept_before
    );
    assert!(elsewhere_entry.join("a.txt").exists());
    assert_eq!(read(&outside.join("precious.txt")), "keep me\n");
    assert!(trash.join("0123abcd-5-89abcdef").is_file());
    assert!(trash.join("0123abcd-6-89abcdef").is_symlink());
    // A symlinked `.trash` is not followed either.
    let linked = root.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    let victim = fake_entry(
        &outside,
        "0123abcd-8-89abcdef",
        "/r/.git/worktrees/delegate-0123abcd-8",
    );
    std::os::unix::fs::symlink(&outside, linked.join(".trash")).unwrap();
    env.delegate(
        &root,
        [
            std::ffi::OsStr::new("purge-trash"),
            linked.join(".trash").as_os_str(),
        ],
    )
    .expect(0);
    assert!(victim.join("a.txt").exists());
}

/// The repository's folder under the workspace root (learnt from a batch
/// prepared and dropped), and the `gitdir:` line of a trash entry of task
/// `t` there.
fn trash_place(env: &Env, repo: &Path) -> (PathBuf, impl Fn(&str) -> String) {
    let common = std::fs::canonicalize(repo.join(".git")).unwrap();
    let (_, ws) = prepare_roots(env, repo, &["-n", "1", "--label", "probe"]);
    let base = base_of(&ws[0]);
    env.delegate(repo, ["drop", "probe", "--force"]).expect(0);
    let gitdir = move |t: &str| format!("{}/worktrees/delegate-0123abcd-{t}", common.display());
    (base, gitdir)
}

#[test]
fn gc_and_the_next_command_sweep_what_a_killed_deleter_left() {
    let env = Env::new();
    let repo = repo_with_files(&env, 10);
    let (base, gitdir) = trash_place(&env, &repo);

    // What a deleter killed half-way leaves: entries of ours in `.trash`.
    let trash = base.join(".trash");
    let a = fake_entry(&trash, "0123abcd-1-89abcdef", &gitdir("1"));
    let b = fake_entry(&trash, "0123abcd-2-89abcdef", &gitdir("2"));
    let foreign = fake_entry(&trash, "0123abcd-3-89abcdef", "/elsewhere/.git");
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["workspaces_removed"], 2, "{dry:#}");
    assert!(dry["bytes_freed"].as_u64().unwrap() >= 8, "{dry:#}");
    assert!(a.join("sub/deeper/b.txt").exists() && b.join("a.txt").exists());
    let doc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert!(!a.exists() && !b.exists());
    assert!(
        foreign.join("a.txt").exists(),
        "gc deleted a foreign folder"
    );
    assert_eq!(doc["dry_run"], false);
    std::fs::remove_dir_all(&foreign).unwrap();

    // The next mutating command starts a deleter in the background.
    let c = fake_entry(&trash, "0123abcd-4-89abcdef", &gitdir("4"));
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "1", "--label", "next"]);
    wait_until("the swept entry to go", || !c.exists());
    assert!(ws[0].exists(), "a live workspace was touched");
    wait_for_empty_trash(&env, &base);
    env.delegate(&repo, ["drop", "next", "--force"]).expect(0);
}

/// Deterministic bytes that zlib cannot shrink much.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    crate::common::files::xorshift_bytes(&mut x, len)
}

const MIB: usize = 1 << 20;

#[test]
fn big_files_apply_and_their_patch_refers_to_the_blobs() {
    let (env, repo) = Env::with_repo("big");
    std::fs::write(repo.join("old.bin"), noise(9 * MIB, 1)).unwrap();
    std::fs::write(repo.join("gone.bin"), noise(9 * MIB, 2)).unwrap();
    std::fs::write(repo.join("small.txt"), "one\ntwo\nthree\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "big"]);
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();

    // Task 1: a new big file, a rewritten one, a deleted one, and a small
    // edit that the source contradicts (so the task is kept with its patch).
    let mut changed = noise(9 * MIB, 1);
    changed[5 * MIB..5 * MIB + 4096].copy_from_slice(&noise(4096, 3));
    let added = noise(12 * MIB, 4);
    std::fs::write(ws[0].join("old.bin"), &changed).unwrap();
    std::fs::write(ws[0].join("new.bin"), &added).unwrap();
    std::fs::remove_file(ws[0].join("gone.bin")).unwrap();
    std::fs::write(ws[0].join("small.txt"), "one\nTWO by task\nthree\n").unwrap();
    std::fs::write(repo.join("small.txt"), "one\nTWO by user\nthree\n").unwrap();
    // Task 2: only big files.
    let other = noise(10 * MIB, 5);
    std::fs::write(ws[1].join("other.bin"), &other).unwrap();

    let out = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(task(&out, "1")["status"], "conflict");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_bytes(&repo.join("other.bin")), other);
    assert_eq!(read_bytes(&repo.join("old.bin")), noise(9 * MIB, 1));

    // The kept patch names the big blobs instead of carrying them.
    let patch = PathBuf::from(task(&out, "1")["patch"].as_str().unwrap());
    let text = read_bytes(&patch);
    assert!(
        text.len() < 4096,
        "the patch carries data: {} bytes",
        text.len()
    );
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("Binary files a/old.bin and b/old.bin differ\n"));
    assert!(text.contains("Binary files /dev/null and b/new.bin differ\n"));
    assert!(text.contains("Binary files a/gone.bin and /dev/null differ\n"));
    assert_has(&text, "+TWO by task\n");
    assert!(!text.contains("literal"));

    // It applies with `git apply --3way` on the baseline (the proposal ref
    // keeps the blobs), giving the task's files byte for byte.
    let check = env.path().join("check");
    env.git(
        &repo,
        [
            "worktree",
            "add",
            "-q",
            "--detach",
            check.to_str().unwrap(),
            &baseline,
        ],
    );
    env.git(&check, ["apply", "--3way", patch.to_str().unwrap()]);
    assert_eq!(read_bytes(&check.join("old.bin")), changed);
    assert_eq!(read_bytes(&check.join("new.bin")), added);
    assert!(!check.join("gone.bin").exists());
    assert_eq!(read(&check.join("small.txt")), "one\nTWO by task\nthree\n");
    env.git(
        &repo,
        ["worktree", "remove", "--force", check.to_str().unwrap()],
    );

    // Once the source agrees, the big changes apply, streamed both ways.
    std::fs::write(repo.join("small.txt"), "one\ntwo\nthree\n").unwrap();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(read_bytes(&repo.join("old.bin")), changed);
    assert_eq!(read_bytes(&repo.join("new.bin")), added);
    assert!(!repo.join("gone.bin").exists());
    wait_for_empty_trash(&env, &base_of(&ws[0]));
}

#[test]
fn a_big_file_the_user_changed_meanwhile_is_never_overwritten() {
    let (env, repo) = Env::with_repo("big-user");
    std::fs::write(repo.join("data.bin"), noise(9 * MIB, 7)).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "big"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "1"]);
    let mut theirs = noise(9 * MIB, 7);
    theirs[0..8].copy_from_slice(b"TASKTASK");
    std::fs::write(ws[0].join("data.bin"), &theirs).unwrap();
    let mut mine = noise(9 * MIB, 7);
    let end = mine.len();
    mine[end - 8..].copy_from_slice(b"USERUSER");
    std::fs::write(repo.join("data.bin"), &mine).unwrap();
    let out = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(task(&out, "1")["status"], "conflict");
    assert_eq!(task(&out, "1")["reason"], "source_changed");
    assert_eq!(read_bytes(&repo.join("data.bin")), mine);
}

/// `status --check --json` in `repo`: its exit code and its
/// `unattended_trash` problem, if any.
fn unattended(env: &Env, repo: &Path) -> (i32, Option<serde_json::Value>) {
    let run = env.delegate(repo, ["status", "--check", "--json"]);
    let doc = run.json();
    let p = crate::common::fixtures::problem(&doc, "unattended_trash").cloned();
    (run.code, p)
}

/// A repository with two tasks of 300 files each, a change in each.
fn two_large_tasks(env: &Env) -> (PathBuf, PathBuf) {
    let repo = repo_with_files(env, 300);
    let (_, ws) = prepare_roots(env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("d0/f0.txt"), "changed by one\n").unwrap();
    std::fs::write(ws[1].join("d1/f1.txt"), "changed by two\n").unwrap();
    let base = base_of(&ws[0]);
    (repo, base)
}

/// A deleter that cannot start leaves the trash as it is; `status --check`
/// names it and why (exit 1), and its hint, `git delegate gc`, deletes it.
/// The binary that ran apply is gone when the deleter is started (replaced
/// meanwhile, as an upgrade does): its program cannot be run.
#[test]
fn a_deleter_that_cannot_start_is_named_by_status_check() {
    let env = Env::new();
    let (repo, base) = two_large_tasks(&env);
    let trash = base.join(".trash");
    let bin = crate::common::procs::reachable_binary(&env.path().join("bin"));
    let mut cmd = env.command(&bin, &repo);
    cmd.args(["apply", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = crate::common::fixtures::paused_at(&env, cmd, "purger-spawn");
    std::fs::remove_file(&bin).unwrap();
    std::fs::remove_file(env.path().join("paused")).unwrap();
    let out = crate::common::Run::from(child.wait_with_output().unwrap()).expect(0);
    assert_eq!(task(&out.json(), "1")["status"], "applied");
    assert_eq!(read(&repo.join("d1/f1.txt")), "changed by two\n");
    assert_eq!(std::fs::read_dir(&trash).unwrap().count(), 2);

    let (code, p) = unattended(&env, &repo);
    assert_eq!(code, 1);
    let p = p.expect("an unattended_trash problem");
    assert_eq!(p["batch"], "");
    assert_eq!(p["path"], trash.to_str().unwrap());
    let msg = p["message"].as_str().unwrap();
    assert_has(msg, "2 removed workspaces");
    assert_has(msg, "could not start: cannot run");
    assert_has(msg, "No such file or directory");
    assert_has(msg, "`git delegate gc` deletes them now");
    // In words, too.
    let human = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_has(
        &format!("{}{}", human.stdout, human.stderr),
        "no deleter working on them",
    );

    // The hint, followed literally.
    env.delegate(&repo, ["gc"]).expect(0);
    assert!(!trash.exists());
    assert_eq!(unattended(&env, &repo), (0, None));
}

/// The trash a deleter killed half-way leaves (entries of ours, no
/// deleter alive) is named by `status --check` once it has waited longer
/// than a deleter takes to start; a deleter at work (its lock on the
/// repository folder), gc purging (its lock on the trash) or a command
/// holding the repository lock hide it.
#[test]
fn trash_a_killed_deleter_left_is_named_by_status_check() {
    let env = Env::new();
    let repo = repo_with_files(&env, 10);
    let (base, gitdir) = trash_place(&env, &repo);
    let trash = base.join(".trash");
    let started = Instant::now();
    fake_entry(&trash, "0123abcd-1-89abcdef", &gitdir("1"));
    let (code, p) = unattended(&env, &repo);
    if started.elapsed() < Duration::from_secs(10) {
        assert_eq!(
            (code, p),
            (0, None),
            "reported before a deleter could start"
        );
    }
    wait_until("status --check to name the trash", || {
        unattended(&env, &repo).0 == 1
    });
    let (_, p) = unattended(&env, &repo);
    let msg = p.unwrap()["message"].as_str().unwrap().to_string();
    assert_has(&msg, "1 removed workspace in");
    assert_has(&msg, "was killed, or gave up");
    // Each lock that says someone works on it hides it.
    let hold = |path: &Path, shared: bool| {
        let f = std::fs::File::open(path).unwrap();
        if shared {
            f.lock_shared().unwrap();
        } else {
            f.lock().unwrap();
        }
        f
    };
    for (path, shared) in [
        (base.clone(), true),
        (trash.clone(), false),
        (repo.join(".git/delegate/lock"), false),
    ] {
        let held = hold(&path, shared);
        assert_eq!(unattended(&env, &repo), (0, None), "{}", path.display());
        drop(held);
    }
    assert_eq!(unattended(&env, &repo).0, 1);
    env.delegate(&repo, ["gc"]).expect(0);
    assert!(!trash.exists());
    assert_eq!(unattended(&env, &repo), (0, None));
}

/// The case that made `.ci/run` fail in a checkout only root may enter:
/// the user (here `nobody`) may not reach the program it runs from (root
/// starts it for them with `setpriv`), so the deleter it starts gets
/// EACCES. `status --check` names that cause; `gc` deletes the trash.
#[test]
fn a_deleter_the_user_may_not_run_is_named_by_status_check() {
    if !crate::common::procs::is_root() {
        eprintln!("SKIPPED a_deleter_the_user_may_not_run_is_named_by_status_check: needs root (chown, setpriv)");
        return;
    }
    let env = Env::new();
    let repo = repo_with_files(&env, 300);
    crate::common::procs::give_to_nobody(env.path());
    // The program in a folder only root may enter, as in a `mktemp -d` clone.
    let private = env.path().join("private");
    let bin = crate::common::procs::reachable_binary(&private.join("bin"));
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = env.command(&bin, &repo);
        cmd.args(args);
        crate::common::Run::from(
            crate::common::procs::as_nobody(&cmd, &env.path().join("unused"))
                .output()
                .unwrap(),
        )
    };
    let doc = run(&["prepare", "--json", "-n", "2"]).expect(0).json();
    let ws = crate::common::fixtures::roots(&doc);
    let base = base_of(&ws[0]);
    run(&["apply", "--json"]).expect(0);
    assert!(base.join(".trash").exists());
    let check = run(&["status", "--check", "--json"]).expect(1).json();
    let p = crate::common::fixtures::problem(&check, "unattended_trash").unwrap();
    let msg = p["message"].as_str().unwrap();
    assert_has(msg, &format!("cannot run {}", bin.display()));
    assert_has(msg, "Permission denied");
    run(&["gc"]).expect(0);
    assert!(!base.join(".trash").exists());
    run(&["status", "--check"]).expect(0);
}
