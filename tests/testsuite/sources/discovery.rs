//! Finding the source as git finds it, and naming why not (design §3.15
//! "Object formats" and "Discovery errors"): SHA-256 repositories work end
//! to end; an object format the git library cannot read, a `.git` that
//! points nowhere, cannot be read or is no repository, a repository owned by
//! someone else (`safe.directory`), `GIT_CEILING_DIRECTORIES` and
//! `GIT_DISCOVERY_ACROSS_FILESYSTEM` each get their own message, never a
//! bare "not inside a git repository", and each case is compared with what
//! git itself does in the same folder.
use crate::common::files::read;
use crate::common::fixtures::spawn_piped;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::fixtures::{prepare, roots};
use crate::common::mounts::skip;
use crate::common::{Env, Run};
use serde_json::Value;

fn is_root() -> bool {
    euid() == 0
}

fn euid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
}

/// Whether git itself finds a repository from `dir` (`git rev-parse --git-dir`).
fn git_finds(env: &Env, dir: &Path, vars: &[(&str, &OsStr)]) -> bool {
    let mut cmd = env.git_cmd(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["rev-parse", "--git-dir"])
        .output()
        .unwrap()
        .status
        .success()
}

/// `git delegate status --json` in `dir`, expecting an error document with
/// exit 3; returns its `error` object.
fn refused(env: &Env, dir: &Path, vars: &[(&str, &OsStr)]) -> Value {
    let mut cmd = env.delegate_cmd(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let run = Run::from(cmd.args(["status", "--json"]).output().unwrap()).expect(3);
    let doc = run.json();
    let msg = doc["error"]["message"].as_str().unwrap().to_string();
    // Never the bare "... is not inside a git repository": the cause is named.
    assert!(!msg.ends_with("is not inside a git repository"), "{msg}");
    assert!(!doc["error"]["help"].as_str().unwrap().is_empty());
    doc["error"].clone()
}

fn folder(env: &Env, name: &str) -> PathBuf {
    let dir = env.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A SHA-256 repository (`git init --object-format=sha256`) works end to
/// end: prepare from a dirty source, workspaces at the baseline, apply
/// with a clean 3-way merge and a conflict, undo, and git's own fsck.
#[test]
fn a_sha256_repository_prepares_and_applies() {
    let env = Env::new();
    let repo = folder(&env, "sha");
    env.git(
        &repo,
        ["init", "-q", "-b", "main", "--object-format=sha256"],
    );
    std::fs::write(repo.join("m.txt"), "1\n2\n3\n4\n5\n6\n7\n").unwrap();
    std::fs::write(repo.join("b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "init"]);
    // Uncommitted work of the user's goes into the baseline.
    std::fs::write(repo.join("b.txt"), "b, user\n").unwrap();
    std::fs::write(repo.join("untracked.txt"), "u\n").unwrap();

    let doc = prepare(&env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(baseline.len(), 64, "a SHA-256 id: {baseline}");
    assert_eq!(doc["source_head"].as_str().unwrap().len(), 64);
    let ws: Vec<PathBuf> = roots(&doc);
    for w in &ws {
        assert_eq!(read(&w.join("b.txt")), "b, user\n");
        assert_eq!(read(&w.join("untracked.txt")), "u\n");
        assert_eq!(env.git(w, ["rev-parse", "HEAD"]).trim(), baseline);
        assert_eq!(env.git(w, ["status", "--porcelain"]), "");
    }
    // Task 1: line 1 and a new file; task 2: line 4, which the user changes too.
    std::fs::write(ws[0].join("m.txt"), "one\n2\n3\n4\n5\n6\n7\n").unwrap();
    std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
    std::fs::write(ws[1].join("m.txt"), "1\n2\n3\nfour, task\n5\n6\n7\n").unwrap();
    std::fs::write(repo.join("m.txt"), "1\n2\n3\nfour, user\n5\n6\nseven\n").unwrap();

    let out = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    let tasks = out["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["status"], "applied", "{out:#}");
    assert_eq!(tasks[1]["status"], "conflict", "{out:#}");
    assert_eq!(
        tasks[1]["conflicts"],
        serde_json::json!([{"path": "m.txt", "reason": "both modified"}])
    );
    assert_eq!(
        read(&repo.join("m.txt")),
        "one\n2\n3\nfour, user\n5\n6\nseven\n"
    );
    assert_eq!(read(&repo.join("new.txt")), "new\n");
    let proposal = tasks[1]["proposal_ref"].as_str().unwrap();
    assert_eq!(env.git(&repo, ["rev-parse", proposal]).trim().len(), 64);
    // The kept patch names SHA-256 blobs git can read.
    let patch = read(Path::new(tasks[1]["patch"].as_str().unwrap()));
    let index = patch.lines().find(|l| l.starts_with("index ")).unwrap();
    let old = index[6..].split("..").next().unwrap();
    assert_eq!(old.len(), 64, "{index}");
    assert_eq!(env.git(&repo, ["cat-file", "-t", old]).trim(), "blob");

    // Undo takes the apply back.
    env.delegate(&repo, ["undo", "--json"]).expect(0);
    assert_eq!(
        read(&repo.join("m.txt")),
        "1\n2\n3\nfour, user\n5\n6\nseven\n"
    );
    assert!(!repo.join("new.txt").exists());
    let batch = out["batch"].as_str().unwrap();
    env.delegate(&repo, ["drop", batch, "--force", "--json"])
        .expect(0);
    env.git(&repo, ["fsck", "--no-dangling"]);
    assert_eq!(
        env.git(&repo, ["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

/// An object format the git library cannot read is refused as such (git
/// refuses it too), never as "not a repository".
#[test]
fn an_unknown_object_format_is_refused_as_unsupported() {
    let (env, repo) = Env::with_repo("odd");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    env.git(&repo, ["config", "core.repositoryformatversion", "1"]);
    env.git(&repo, ["config", "extensions.objectFormat", "sha512"]);
    assert!(!git_finds(&env, &repo.join("sub"), &[]));
    for args in [
        &["prepare", "--json"][..],
        &["status", "--json"],
        &["gc", "--json"],
    ] {
        let run = env.delegate(&repo.join("sub"), args).expect(3);
        let doc = run.json();
        assert_eq!(
            doc["error"]["code"], "delegate::unsupported_object_format",
            "{doc}"
        );
        assert!(
            doc["error"]["message"].as_str().unwrap().contains("sha512"),
            "{doc}"
        );
    }
    assert!(!repo.join(".git/delegate").exists());
}

/// A `.git` file pointing nowhere, a `.git` file that is no `gitdir:` file,
/// a dangling `.git` symlink, a `.git` folder that is no repository, and a
/// FIFO named `.git` (never read: it would block) are each named.
#[test]
fn a_broken_dot_git_is_named_by_what_is_wrong() {
    let env = Env::new();
    type Make<'a> = &'a dyn Fn(&Path);
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "nowhere",
            &|d| std::fs::write(d.join(".git"), "gitdir: /nonexistent/gd-test-gitdir\n").unwrap(),
            "points to /nonexistent/gd-test-gitdir, which does not exist",
        ),
        (
            "garbage",
            &|d| std::fs::write(d.join(".git"), "hello\n").unwrap(),
            "does not start with `gitdir: PATH`",
        ),
        (
            "dangling",
            &|d| std::os::unix::fs::symlink("/nonexistent/gd-test-link", d.join(".git")).unwrap(),
            "is a symbolic link to /nonexistent/gd-test-link, which does not exist",
        ),
        (
            "nohead",
            &|d| std::fs::create_dir_all(d.join(".git/objects")).unwrap(),
            "is a folder but not a git repository",
        ),
        (
            "fifo",
            &|d| {
                let st = Command::new("mkfifo").arg(d.join(".git")).status().unwrap();
                assert!(st.success());
            },
            "is neither a folder nor a file",
        ),
    ];
    for (name, make, says) in cases {
        let dir = folder(&env, name);
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        make(&dir);
        assert!(
            !git_finds(&env, &sub, &[]),
            "{name}: git finds no repository"
        );
        // Never waits on the FIFO: the run ends by itself.
        let mut child = spawn_piped(&env, &sub, &["status", "--json"]);
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("{name}: git-delegate still runs after 120 s (reading the .git?)");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let run = Run::from(child.wait_with_output().unwrap()).expect(3);
        let doc = run.json();
        assert_eq!(
            doc["error"]["code"], "delegate::not_a_repository",
            "{name}: {doc}"
        );
        let msg = doc["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&dir.join(".git").display().to_string()),
            "{name}: {msg}"
        );
        assert!(msg.contains(says), "{name}: {msg}");
    }
}

/// A `.git` that cannot be read is named as such: a symbolic link leading
/// back to itself (unreadable for root too), and a `.git` folder the user
/// may not read (run as `nobody` when the tests run as root).
#[test]
fn an_unreadable_dot_git_is_named() {
    let env = Env::new();
    let dir = folder(&env, "loop");
    std::os::unix::fs::symlink(".git", dir.join(".git")).unwrap();
    assert!(!git_finds(&env, &dir, &[]));
    let err = refused(&env, &dir, &[]);
    assert_eq!(err["code"], "delegate::unreadable_git_dir", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("cannot be read"),
        "{err}"
    );
    assert!(
        err["help"]
            .as_str()
            .unwrap()
            .contains("leads back to itself"),
        "{err}"
    );

    // A `.git` folder with mode 700 of another user.
    let repo = env.repo("private");
    std::fs::set_permissions(repo.join(".git"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // nobody runs a copy of the binary it can reach, wherever the checkout is.
    let bin = env.path().join("bin");
    let as_other = |cmd: &mut Command| -> Option<Run> {
        if !is_root() {
            return None;
        }
        crate::common::procs::as_nobody(cmd, &bin)
            .output()
            .ok()
            .map(Run::from)
    };
    if !is_root() {
        // Not root: the test's own user is locked out by mode 000.
        std::fs::set_permissions(repo.join(".git"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        let err = refused(&env, &repo, &[]);
        std::fs::set_permissions(repo.join(".git"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        assert_eq!(err["code"], "delegate::unreadable_git_dir", "{err}");
        return;
    }
    // Root reads any folder: run as nobody, who may reach the repository
    // (the temp folder is opened up) but not read its `.git`.
    for p in [env.path(), &env.path().join("gitconfig")] {
        let mode = if p.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let Some(git) = as_other(env.git_cmd(&repo).args(["rev-parse", "--git-dir"])) else {
        return skip(
            "an_unreadable_dot_git_is_named",
            "setpriv cannot run as nobody",
        );
    };
    if git.stderr.contains("setpriv") {
        return skip("an_unreadable_dot_git_is_named", &git.stderr);
    }
    assert_ne!(git.code, 0, "git as nobody cannot read it either");
    let run = as_other(env.delegate_cmd(&repo).args(["status", "--json"]))
        .unwrap()
        .expect(3);
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::unreadable_git_dir",
        "{doc}"
    );
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{doc}"
    );
}

/// A repository owned by another user: git refuses it ("dubious
/// ownership") unless `safe.directory` lists it, and so does git delegate,
/// with git's remedy as its help; followed literally, the help lets both in.
#[test]
fn a_repository_of_another_user_is_refused_as_git_refuses_it() {
    if !is_root() {
        return skip(
            "a_repository_of_another_user_is_refused_as_git_refuses_it",
            "needs root to give the repository to another user (chown)",
        );
    }
    let (env, repo) = Env::with_repo("theirs");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    let st = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&repo)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(!git_finds(&env, &repo.join("sub"), &[]), "git refuses it");
    let err = refused(&env, &repo.join("sub"), &[]);
    assert_eq!(err["code"], "delegate::dubious_ownership", "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("uid 65534"),
        "{err}"
    );
    assert!(!repo.join(".git/delegate").exists());
    // The help, run as printed, lets git and git delegate in.
    let help = err["help"].as_str().unwrap();
    let command = &help[help.find("git config").expect("a command in the help")..];
    let ran = env.sh(&repo.join("sub"), command);
    assert_eq!(ran.code, 0, "{command}: {}", ran.stderr);
    assert!(git_finds(&env, &repo.join("sub"), &[]));
    let doc = env
        .delegate(&repo.join("sub"), ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["batches"], serde_json::json!([]));
    // `safe.directory=*` counts as git counts it.
    std::fs::write(env.path().join("gitconfig"), "[safe]\n\tdirectory = *\n").unwrap();
    env.delegate(&repo, ["status", "--json"]).expect(0);
    std::fs::write(env.path().join("gitconfig"), "").unwrap();
    assert!(!git_finds(&env, &repo, &[]));
    refused(&env, &repo, &[]);
}

/// `GIT_CEILING_DIRECTORIES` as git reads it: a ceiling at the repository's
/// root hides it, one above does not.
#[test]
fn ceiling_directories_decide_as_for_git() {
    let (env, repo) = Env::with_repo("src");
    let sub = repo.join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    for (ceiling, found) in [(repo.clone(), false), (env.path().to_path_buf(), true)] {
        let vars = [("GIT_CEILING_DIRECTORIES", ceiling.as_os_str())];
        assert_eq!(git_finds(&env, &sub, &vars), found, "{}", ceiling.display());
        if found {
            let mut cmd = env.delegate_cmd(&sub);
            cmd.env("GIT_CEILING_DIRECTORIES", &ceiling);
            Run::from(cmd.args(["status", "--json"]).output().unwrap()).expect(0);
        } else {
            let err = refused(&env, &sub, &vars);
            assert_eq!(err["code"], "delegate::not_a_repository");
            assert!(
                err["message"]
                    .as_str()
                    .unwrap()
                    .contains("GIT_CEILING_DIRECTORIES"),
                "{err}"
            );
        }
    }
}

/// `GIT_DISCOVERY_ACROSS_FILESYSTEM`: from a folder on another filesystem
/// (a tmpfs mounted inside the working tree) git stops at the boundary
/// unless the variable is true, and so does git delegate.
#[test]
fn a_filesystem_boundary_stops_discovery_as_for_git() {
    let (env, repo) = Env::with_repo("src");
    let mnt = repo.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = is_root()
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        return skip(
            "a_filesystem_boundary_stops_discovery_as_for_git",
            "cannot mount a tmpfs here (needs root)",
        );
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let sub = mnt.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    assert!(!git_finds(&env, &sub, &[]));
    let err = refused(&env, &sub, &[]);
    assert_eq!(err["code"], "delegate::not_a_repository");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("GIT_DISCOVERY_ACROSS_FILESYSTEM=1"),
        "{err}"
    );
    for value in ["1", "true"] {
        let vars = [("GIT_DISCOVERY_ACROSS_FILESYSTEM", OsStr::new(value))];
        assert!(git_finds(&env, &sub, &vars));
        let mut cmd = env.delegate_cmd(&sub);
        cmd.env("GIT_DISCOVERY_ACROSS_FILESYSTEM", value);
        Run::from(cmd.args(["status", "--json"]).output().unwrap()).expect(0);
    }
    let vars = [("GIT_DISCOVERY_ACROSS_FILESYSTEM", OsStr::new("0"))];
    assert!(!git_finds(&env, &sub, &vars));
    refused(&env, &sub, &vars);
}

/// A repository keeping its refs in git's `reftable` format, which the git
/// library cannot read, is refused as such (before: a status that showed
/// nothing and a prepare failing on "HEAD could not be decoded"); the help,
/// followed literally, converts it and git delegate then works.
#[test]
fn a_reftable_repository_is_refused_as_unsupported() {
    let env = Env::new();
    let repo = folder(&env, "rt");
    let made = env
        .git_cmd(&repo)
        .args(["init", "-q", "-b", "main", "--ref-format=reftable"])
        .output()
        .unwrap();
    if !made.status.success() {
        // An older git makes no such repositories (nor can its users have them).
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"SKIPPED: a_reftable_repository_is_refused_as_unsupported: this git cannot create reftable repositories\n",
        );
        return;
    }
    std::fs::write(repo.join("f"), "x\n").unwrap();
    env.git(&repo, ["add", "f"]);
    // No reflogs: `git refs migrate` (git 2.47) cannot move them yet.
    env.git(
        &repo,
        [
            "-c",
            "core.logAllRefUpdates=false",
            "commit",
            "-q",
            "-m",
            "c",
        ],
    );
    for args in [&["prepare", "--json"][..], &["status", "--json"]] {
        let run = env.delegate(&repo, args).expect(3);
        let err = &run.json()["error"];
        assert_eq!(err["code"], "delegate::unsupported_ref_format", "{err}");
        assert!(
            err["message"].as_str().unwrap().contains("reftable"),
            "{err}"
        );
    }
    assert_eq!(env.git(&repo, ["for-each-ref", "refs/pi-delegate/"]), "");
    let help = env.delegate(&repo, ["status", "--json"]).json()["error"]["help"]
        .as_str()
        .unwrap()
        .to_string();
    let command = &help[help
        .find("git refs migrate")
        .expect("a command in the help")..];
    let command = &command[..command.find('`').unwrap_or(command.len())];
    let ran = env.sh(&repo, command);
    assert_eq!(ran.code, 0, "{command}: {}", ran.stderr);
    env.delegate(&repo, ["prepare", "--json"]).expect(0);
}
