//! Modes, `core.symlinks = false` and `ident`: a file write-back replaces
//! keeps its permission bits (only the exec bits follow the result), new
//! files get git's modes under the umask, a symlink is a plain file where
//! git makes it one, and `$Id$` expands to git's bytes. Through apply,
//! undo, refresh and `apply --kept`, with git itself as the oracle.
use crate::common::files::read_bytes;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::files::{chmod, read};
use crate::common::fixtures::{commit_all, prepare_batch};
use crate::common::with_fault;
use crate::common::Env;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn is_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).unwrap().file_type().is_file()
}

/// Run `git delegate ARGS` with the umask `mask` (as a user's shell would).
fn delegate_with_umask(env: &Env, dir: &Path, mask: &str, args: &str) -> crate::common::Run {
    env.sh(dir, &format!("umask {mask} && exec git delegate {args}"))
}

/// A repository with `priv.txt` (tracked, `0600` on disk), `secret.env`
/// (untracked, `0600`) and `README`.
fn private_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    std::fs::write(repo.join("priv.txt"), "private\n").unwrap();
    commit_all(env, &repo);
    chmod(&repo.join("priv.txt"), 0o600);
    std::fs::write(repo.join("secret.env"), "TOKEN=1\n").unwrap();
    chmod(&repo.join("secret.env"), 0o600);
    repo
}

#[test]
fn apply_keeps_a_private_file_private_tracked_or_untracked() {
    let env = Env::new();
    let repo = private_repo(&env);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("priv.txt"), "private\nchanged\n").unwrap();
    std::fs::write(ws[0].join("secret.env"), "TOKEN=2\n").unwrap();
    let doc = delegate_with_umask(&env, &repo, "022", "apply --json")
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert_eq!(read(&repo.join("priv.txt")), "private\nchanged\n");
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=2\n");
    assert_eq!(mode(&repo.join("priv.txt")), 0o600);
    assert_eq!(mode(&repo.join("secret.env")), 0o600);
    // git sees a content change only (the mode in git's terms is unchanged).
    assert_eq!(env.git(&repo, ["diff", "--name-status"]), "M\tpriv.txt\n");
}

#[test]
fn the_temp_file_of_a_private_file_is_never_readable() {
    let env = Env::new();
    let repo = private_repo(&env);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("secret.env"), "TOKEN=2\n").unwrap();
    // Killed once every temp file is written: what is on disk then.
    let out = with_fault(env.delegate_cmd(&repo).args(["apply"]), "after-temp-files");
    assert!(!out.status.success());
    let temps: Vec<PathBuf> = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert_eq!(temps.len(), 1, "{temps:?}");
    assert_eq!(read(&temps[0]), "TOKEN=2\n");
    assert_eq!(mode(&temps[0]), 0o600);
    // The next command rolls back: the original, still private.
    env.delegate(&repo, ["status"]).expect(0);
    env.delegate(&repo, ["gc"]).expect(0);
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=1\n");
    assert_eq!(mode(&repo.join("secret.env")), 0o600);
}

#[test]
fn a_rollback_puts_private_originals_back_private() {
    // Renames: 1 priv.txt aside, 2 its new content in place, 3 secret.env
    // aside. In-process rollback after a failed third rename; recovery by
    // the next command after a kill at the second.
    for (fault, code) in [("fail-rename:3", Some(1)), ("after-rename:2", None)] {
        let env = Env::new();
        let repo = private_repo(&env);
        let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
        std::fs::write(ws[0].join("priv.txt"), "private\nchanged\n").unwrap();
        std::fs::write(ws[0].join("secret.env"), "TOKEN=2\n").unwrap();
        let out = with_fault(env.delegate_cmd(&repo).args(["apply"]), fault);
        assert_eq!(out.status.code(), code, "{fault}");
        if code.is_none() {
            env.delegate(&repo, ["gc"]).expect(0);
        }
        assert_eq!(read(&repo.join("priv.txt")), "private\n", "{fault}");
        assert_eq!(read(&repo.join("secret.env")), "TOKEN=1\n", "{fault}");
        assert_eq!(mode(&repo.join("priv.txt")), 0o600, "{fault}");
        assert_eq!(mode(&repo.join("secret.env")), 0o600, "{fault}");
    }
}

#[test]
fn exec_bits_follow_the_result_and_the_other_bits_stay() {
    let (env, repo) = Env::with_repo("proj");
    for f in ["a", "b", "c", "d"] {
        std::fs::write(repo.join(f), format!("{f}\n")).unwrap();
    }
    chmod(&repo.join("c"), 0o755);
    chmod(&repo.join("d"), 0o755);
    commit_all(&env, &repo);
    chmod(&repo.join("a"), 0o640);
    chmod(&repo.join("b"), 0o600);
    chmod(&repo.join("c"), 0o750);
    chmod(&repo.join("d"), 0o700);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    chmod(&ws[0].join("a"), 0o755);
    std::fs::write(ws[0].join("b"), "b\nmore\n").unwrap();
    chmod(&ws[0].join("b"), 0o755);
    chmod(&ws[0].join("c"), 0o644);
    chmod(&ws[0].join("d"), 0o644);
    std::fs::write(ws[0].join("d"), "d\nmore\n").unwrap();
    delegate_with_umask(&env, &repo, "022", "apply").expect(0);
    // Set for `u` and wherever `r` is set, or cleared; the rest kept.
    assert_eq!(mode(&repo.join("a")), 0o750);
    assert_eq!(mode(&repo.join("b")), 0o700);
    assert_eq!(mode(&repo.join("c")), 0o640);
    assert_eq!(mode(&repo.join("d")), 0o600);
    assert_eq!(read(&repo.join("b")), "b\nmore\n");
    assert_eq!(read(&repo.join("d")), "d\nmore\n");
    // git agrees on what changed: the modes of a, b, c, d.
    let raw = env.git(&repo, ["diff", "--raw"]);
    let modes: Vec<&str> = raw
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(modes, ["100755", "100755", "100644", "100644"], "{raw}");
}

#[test]
fn undo_puts_a_private_file_back_private() {
    let env = Env::new();
    let repo = private_repo(&env);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("priv.txt"), "private\nchanged\n").unwrap();
    std::fs::write(ws[0].join("secret.env"), "TOKEN=2\n").unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    let id = doc["apply_id"].as_str().unwrap().to_string();
    assert_eq!(mode(&repo.join("priv.txt")), 0o600);
    delegate_with_umask(&env, &repo, "022", "undo").expect(0);
    assert_eq!(read(&repo.join("priv.txt")), "private\n");
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=1\n");
    assert_eq!(mode(&repo.join("priv.txt")), 0o600);
    assert_eq!(mode(&repo.join("secret.env")), 0o600);
    // And again forward.
    delegate_with_umask(&env, &repo, "022", &format!("apply --from-undo {id}")).expect(0);
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=2\n");
    assert_eq!(mode(&repo.join("secret.env")), 0o600);
}

#[test]
fn refresh_keeps_a_private_workspace_file_private() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join("conf.txt"), "one\ntwo\nthree\n").unwrap();
    commit_all(&env, &repo);
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    // Task 2's worker made its copy private and edits the last line;
    // task 1 edits the first line and lands.
    chmod(&ws[1].join("conf.txt"), 0o600);
    std::fs::write(ws[1].join("conf.txt"), "one\ntwo\nTHREE\n").unwrap();
    std::fs::write(ws[0].join("conf.txt"), "ONE\ntwo\nthree\n").unwrap();
    env.delegate(&repo, ["apply", "--only", "1"]).expect(0);
    let doc = delegate_with_umask(&env, &repo, "022", "refresh 2 --json")
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["refreshed"], true, "{doc:#}");
    assert_eq!(read(&ws[1].join("conf.txt")), "ONE\ntwo\nTHREE\n");
    assert_eq!(mode(&ws[1].join("conf.txt")), 0o600);
}

#[test]
fn apply_kept_keeps_a_private_file_private() {
    let env = Env::new();
    let repo = private_repo(&env);
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("README"), "one\n").unwrap();
    std::fs::write(ws[1].join("secret.env"), "TOKEN=2\n").unwrap();
    std::fs::write(ws[1].join("priv.txt"), "private\nchanged\n").unwrap();
    env.delegate(&repo, ["apply", "--only", "1", "--discard", "2"])
        .expect(0);
    let r = format!("refs/pi-delegate/batches/{batch}/tasks/2/proposal");
    let doc = delegate_with_umask(&env, &repo, "022", &format!("apply --kept {r} --json"))
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert_eq!(read(&repo.join("secret.env")), "TOKEN=2\n");
    assert_eq!(read(&repo.join("priv.txt")), "private\nchanged\n");
    assert_eq!(mode(&repo.join("secret.env")), 0o600);
    assert_eq!(mode(&repo.join("priv.txt")), 0o600);
}

#[test]
fn new_files_get_gits_modes_under_the_umask() {
    for (mask, plain, exec) in [("022", 0o644, 0o755), ("077", 0o600, 0o700)] {
        let (env, repo) = Env::with_repo("proj");
        let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
        std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
        std::fs::create_dir(ws[0].join("dir")).unwrap();
        std::fs::write(ws[0].join("dir/run.sh"), "#!/bin/sh\n").unwrap();
        chmod(&ws[0].join("dir/run.sh"), 0o755);
        // An existing file keeps its bits whatever the umask.
        std::fs::write(ws[0].join("README"), "hello\nworld\n").unwrap();
        let before = mode(&repo.join("README"));
        delegate_with_umask(&env, &repo, mask, "apply").expect(0);
        assert_eq!(mode(&repo.join("new.txt")), plain, "umask {mask}");
        assert_eq!(mode(&repo.join("dir/run.sh")), exec, "umask {mask}");
        assert_eq!(mode(&repo.join("dir")), exec, "umask {mask}");
        assert_eq!(mode(&repo.join("README")), before, "umask {mask}");
        assert_eq!(read(&repo.join("README")), "hello\nworld\n");
    }
}

/// A repository whose `link` is a symlink to `target.txt` in git (made with
/// plumbing, as on a system without symlinks), with `core.symlinks =
/// false`: the working tree has a plain file holding `target.txt`.
fn stand_in_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    env.git(&repo, ["config", "core.symlinks", "false"]);
    std::fs::write(repo.join("target.txt"), "the target\n").unwrap();
    env.git(&repo, ["add", "target.txt"]);
    let out = env
        .git_cmd(&repo)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"target.txt")?;
            c.wait_with_output()
        })
        .unwrap();
    let blob = String::from_utf8(out.stdout).unwrap().trim().to_string();
    env.git(
        &repo,
        [
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("120000,{blob},link"),
        ],
    );
    env.git(&repo, ["commit", "-q", "-m", "link"]);
    env.git(&repo, ["checkout", "--", "link"]);
    assert!(is_file(&repo.join("link")));
    assert_eq!(read(&repo.join("link")), "target.txt");
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
    repo
}

/// `path`'s entry in `tree` as `ls-tree` prints it, and its blob's bytes.
fn entry(env: &Env, repo: &Path, tree: &str, path: &str) -> (String, String) {
    let line = env.git(repo, ["ls-tree", tree, path]);
    let mode = line.split_whitespace().next().unwrap_or("").to_string();
    let bytes = env.git(repo, ["cat-file", "blob", &format!("{tree}:{path}")]);
    (mode, bytes)
}

#[test]
fn with_core_symlinks_false_a_link_is_a_plain_file_everywhere_and_its_edit_applies() {
    let env = Env::new();
    let repo = stand_in_repo(&env);
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    // The baseline keeps the link a link.
    let baseline = format!("refs/pi-delegate/batches/{batch}/baseline");
    assert_eq!(
        entry(&env, &repo, &baseline, "link"),
        ("120000".into(), "target.txt".into())
    );
    for w in &ws {
        assert!(is_file(&w.join("link")), "{}", w.display());
        assert_eq!(read(&w.join("link")), "target.txt");
        assert_eq!(env.git(w, ["status", "--porcelain"]), "");
    }
    // Task 1 retargets the link by editing its stand-in; task 2 leaves it.
    std::fs::write(ws[0].join("link"), "README").unwrap();
    std::fs::write(ws[1].join("other.txt"), "other\n").unwrap();
    // The task's work is a retargeted link, not a link replaced by a file.
    let diff = env.delegate(&repo, ["diff", "1"]).expect(0).stdout;
    assert!(!diff.contains("file mode"), "{diff}");
    assert!(
        diff.lines()
            .any(|l| l.starts_with("index ") && l.ends_with(" 120000")),
        "{diff}"
    );
    assert!(
        diff.contains("-target.txt\n") && diff.contains("+README\n"),
        "{diff}"
    );
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    for t in doc["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "applied", "{doc:#}");
    }
    assert!(is_file(&repo.join("link")));
    assert_eq!(read(&repo.join("link")), "README");
    assert_eq!(read(&repo.join("other.txt")), "other\n");
    // git sees the link retargeted, as if the user had edited the stand-in.
    assert_eq!(
        env.git(&repo, ["status", "--porcelain"]),
        " M link\n?? other.txt\n"
    );
    let tree = env.oracle_tree(&repo);
    assert_eq!(
        entry(&env, &repo, &tree, "link"),
        ("120000".into(), "README".into())
    );
}

#[test]
fn with_core_symlinks_false_the_users_own_edit_of_a_stand_in_is_kept_and_merged() {
    let env = Env::new();
    let repo = stand_in_repo(&env);
    // The user retargets the link before the batch: its stand-in differs.
    std::fs::write(repo.join("link"), "elsewhere").unwrap();
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    let baseline = format!("refs/pi-delegate/batches/{batch}/baseline");
    assert_eq!(
        entry(&env, &repo, &baseline, "link"),
        ("120000".into(), "elsewhere".into())
    );
    assert_eq!(read(&ws[0].join("link")), "elsewhere");
    // A task that changes something else lands; the link is untouched.
    std::fs::write(ws[0].join("README"), "hello\nworld\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(read(&repo.join("link")), "elsewhere");
    // A real symlink a worker makes arrives as git would write it here.
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::remove_file(ws[0].join("link")).unwrap();
    std::os::unix::fs::symlink("README", ws[0].join("link")).unwrap();
    std::os::unix::fs::symlink("README", ws[0].join("newlink")).unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    assert!(is_file(&repo.join("link")));
    assert!(is_file(&repo.join("newlink")));
    assert_eq!(read(&repo.join("link")), "README");
    assert_eq!(read(&repo.join("newlink")), "README");
    let tree = env.oracle_tree(&repo);
    assert_eq!(
        entry(&env, &repo, &tree, "link"),
        ("120000".into(), "README".into())
    );
}

/// The bytes of `path` in `root`, as text for readable failures.
fn bytes(root: &Path, path: &str) -> String {
    String::from_utf8_lossy(&read_bytes(&root.join(path))).into_owned()
}

#[test]
fn ident_expands_to_the_bytes_git_checkout_writes() {
    let (env, repo) = Env::with_repo("proj");
    // `ident` set in the tree and in `info/attributes`; `ident=yes` is not
    // set for git (gix would expand it).
    std::fs::write(repo.join(".gitattributes"), "*.c ident\n*.h ident=yes\n").unwrap();
    std::fs::write(repo.join(".git/info/attributes"), "*.inf ident\n").unwrap();
    let text = "/* $Id$ */\nint x;\n/* $Id: stale $ and $Id: old$ */\n$Id:\nno $Id\n";
    let files = ["a.c", "b.h", "c.inf", "plain.txt"];
    for f in files {
        std::fs::write(repo.join(f), text).unwrap();
    }
    // (gix's clean filter takes `ident=yes` for set: only `$Id$` there.)
    std::fs::write(repo.join("b.h"), "/* $Id$ */\nint x;\n").unwrap();
    commit_all(&env, &repo);
    // The oracle: git's own checkout of the same commit.
    let oracle = env.path().join("oracle");
    crate::common::fixtures::worktree_add(&env, &repo, &oracle);
    assert!(
        bytes(&oracle, "a.c").contains(" $ */\nint x;"),
        "{}",
        bytes(&oracle, "a.c")
    );
    assert!(bytes(&oracle, "c.inf").contains(" $ */\nint x;"));
    assert!(bytes(&oracle, "b.h").starts_with("/* $Id$ */"));
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    for w in &ws {
        for f in files {
            assert_eq!(bytes(w, f), bytes(&oracle, f), "{f} in {}", w.display());
        }
        assert_eq!(env.git(w, ["status", "--porcelain"]), "");
    }
    env.git(
        &repo,
        ["worktree", "remove", "--force", oracle.to_str().unwrap()],
    );
    // Write-back: a task's new file and its edit of a.c come out as git
    // writes them.
    std::fs::write(ws[0].join("new.c"), "$Id$\n").unwrap();
    let edited = text.replace("int x;", "int y;");
    for f in ["a.c", "c.inf"] {
        std::fs::write(ws[0].join(f), &edited).unwrap();
    }
    std::fs::write(ws[0].join("b.h"), "/* $Id$ */\nint y;\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "task"]);
    let check = env.path().join("check");
    crate::common::fixtures::worktree_add(&env, &repo, &check);
    for f in ["a.c", "b.h", "c.inf", "new.c"] {
        assert_eq!(bytes(&repo, f), bytes(&check, f), "{f}");
    }
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
}

#[test]
fn ident_named_only_outside_the_tree_is_expanded_as_git_does() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join(".git/info/attributes"), "*.inf ident\n").unwrap();
    std::fs::write(repo.join("c.inf"), "$Id$\n").unwrap();
    commit_all(&env, &repo);
    let oracle = env.path().join("oracle");
    crate::common::fixtures::worktree_add(&env, &repo, &oracle);
    assert!(
        bytes(&oracle, "c.inf").ends_with(" $\n"),
        "{}",
        bytes(&oracle, "c.inf")
    );
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    assert_eq!(bytes(&ws[0], "c.inf"), bytes(&oracle, "c.inf"));
}
