//! The snapshot (design §3.1 step 2) against git's own answer: for every kind
//! of working-tree state, the tree git-delegate writes equals what
//! `cp .git/index T; GIT_INDEX_FILE=T git add -A; git write-tree` gives, and
//! the user's index stays byte-identical with the same mtime.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;

use crate::common::fixtures::*;

/// The snapshot, and the baseline of a real prepare, both equal the oracle;
/// the index is untouched by either. Returns the batch document.
fn assert_matches_oracle(env: &Env, repo: &Path) -> serde_json::Value {
    let index = git_dir(env, repo).join("index");
    let before = index.exists().then(|| fingerprint(&index));
    let (tree, _) = snapshot(env, repo);
    let doc = prepare(env, repo, &[]);
    let after = index.exists().then(|| fingerprint(&index));
    assert_eq!(before, after, "the user's index changed");
    let oracle = env.oracle_tree(repo);
    if tree != oracle {
        let d = env.git(repo, ["diff-tree", "-r", &tree, &oracle]);
        let ls = env.git(repo, ["ls-files", "--debug"]);
        let st = env.git(repo, ["status", "--porcelain", "--ignored"]);
        panic!("snapshot {tree} != git add -A {oracle}:\n{d}\n{ls}\n{st}");
    }
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(tree_of(env, repo, baseline), oracle, "baseline tree");
    // The workspace holds exactly that tree, and git sees it clean.
    let ws = root(&doc, 0);
    assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    assert_eq!(snapshot(env, &ws).0, oracle, "workspace snapshot");
    doc
}

#[test]
fn messy_repository_matches_git_add_all() {
    let (env, repo) = Env::with_repo("messy");
    for (p, t) in [
        ("both", "one\n"),
        ("staged", "s\n"),
        ("del-staged", "x\n"),
        ("del-unstaged", "y\n"),
        ("exe", "#!/bin/sh\n"),
        ("plain", "p\n"),
        ("to-folder", "f\n"),
        ("to-link", "l\n"),
        ("dir/a", "a\n"),
        ("dir/b", "b\n"),
        ("keep/k", "k\n"),
        ("cached", "c\n"),
    ] {
        write(&repo.join(p), t);
    }
    set_exec(&repo.join("exe"), true);
    symlink("plain", repo.join("link")).unwrap();
    symlink("plain", repo.join("link-to-file")).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "base"]);

    // Staged and unstaged edits of one file.
    write(&repo.join("both"), "two\n");
    env.git(&repo, ["add", "both"]);
    write(&repo.join("both"), "three\n");
    // Staged only.
    write(&repo.join("staged"), "s2\n");
    env.git(&repo, ["add", "staged"]);
    // Deletions, staged and unstaged.
    env.git(&repo, ["rm", "-q", "del-staged"]);
    std::fs::remove_file(repo.join("del-unstaged")).unwrap();
    // Mode flips both ways.
    set_exec(&repo.join("exe"), false);
    set_exec(&repo.join("plain"), true);
    // Symlinks: retargeted, added, file -> symlink, symlink -> file.
    std::fs::remove_file(repo.join("link")).unwrap();
    symlink("dir/a", repo.join("link")).unwrap();
    symlink("../nowhere", repo.join("new-link")).unwrap();
    std::fs::remove_file(repo.join("to-link")).unwrap();
    symlink("plain", repo.join("to-link")).unwrap();
    std::fs::remove_file(repo.join("link-to-file")).unwrap();
    write(&repo.join("link-to-file"), "now a file\n");
    // File -> folder, folder -> file.
    std::fs::remove_file(repo.join("to-folder")).unwrap();
    write(&repo.join("to-folder/inside"), "i\n");
    std::fs::remove_dir_all(repo.join("dir")).unwrap();
    write(&repo.join("dir"), "dir is a file\n");
    // Untracked nested folders, and an empty one (git ignores it).
    write(&repo.join("new/deeper/still/file"), "u\n");
    write(&repo.join("keep/sub/untracked"), "u2\n");
    std::fs::create_dir_all(repo.join("empty/folder")).unwrap();
    // Intent to add, and a file removed from the index but kept on disk.
    write(&repo.join("ita"), "intent\n");
    env.git(&repo, ["add", "-N", "ita"]);
    env.git(&repo, ["rm", "-q", "--cached", "cached"]);

    let doc = assert_matches_oracle(&env, &repo);
    let ws = root(&doc, 0);
    // Spot checks on the workspace's disk.
    assert_eq!(read(&ws.join("both")), "three\n");
    assert_eq!(
        std::fs::read_link(ws.join("link")).unwrap(),
        Path::new("dir/a")
    );
    assert!(!ws.join("del-staged").exists() && !ws.join("del-unstaged").exists());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| std::fs::metadata(ws.join(p)).unwrap().permissions().mode() & 0o111;
    assert_eq!(mode("exe"), 0);
    assert_ne!(mode("plain"), 0);
    assert_eq!(read(&ws.join("new/deeper/still/file")), "u\n");
    assert_eq!(read(&ws.join("cached")), "c\n");
    assert_eq!(read(&ws.join("ita")), "intent\n");
}

#[test]
fn ignored_files_stay_out() {
    let (env, repo) = Env::with_repo("ign");
    let excludes = env.path().join("global-excludes");
    std::fs::write(&excludes, "*.global\n").unwrap();
    env.git(
        &repo,
        ["config", "core.excludesFile", excludes.to_str().unwrap()],
    );
    write(&repo.join(".gitignore"), "*.log\nbuild/\n");
    write(&repo.join("sub/.gitignore"), "local-only\n");
    write(&git_dir(&env, &repo).join("info/exclude"), "secret*\n");
    for p in [
        "a.log",
        "build/out.o",
        "sub/local-only",
        "secret.txt",
        "x.global",
        "sub/deep/y.global",
    ] {
        write(&repo.join(p), "ignored\n");
    }
    write(&repo.join("kept.txt"), "kept\n");
    write(&repo.join("sub/kept"), "kept\n");
    // A tracked file that matches an ignore pattern stays tracked.
    write(&repo.join("tracked.log"), "v1\n");
    env.git(&repo, ["add", "-f", "tracked.log"]);
    env.git(&repo, ["commit", "-q", "-m", "tracked log"]);
    // (A different size: git compares whole seconds, so a same-size edit
    // within the second of `git add` can escape the oracle itself.)
    write(&repo.join("tracked.log"), "version 2\n");

    let doc = assert_matches_oracle(&env, &repo);
    let ws = root(&doc, 0);
    for p in [
        "a.log",
        "build",
        "sub/local-only",
        "secret.txt",
        "x.global",
        "sub/deep",
    ] {
        assert!(!ws.join(p).exists(), "{p} was carried");
    }
    assert_eq!(read(&ws.join("tracked.log")), "version 2\n");
    assert!(ws.join("kept.txt").exists() && ws.join("sub/kept").exists());
}

#[test]
fn crlf_and_text_attributes_are_cleaned_like_git_add() {
    let (env, repo) = Env::with_repo("eol");
    write(
        &repo.join(".gitattributes"),
        "*.auto text=auto\n*.crlf text eol=crlf\n*.bin -text\n",
    );
    std::fs::write(repo.join("win.auto"), "a\r\nb\r\n").unwrap();
    std::fs::write(repo.join("mixed.auto"), "a\r\nb\n").unwrap();
    std::fs::write(repo.join("lf.crlf"), "a\nb\n").unwrap();
    std::fs::write(repo.join("cr.crlf"), "a\r\nb\r\n").unwrap();
    std::fs::write(repo.join("raw.bin"), "a\r\nb\r\n").unwrap();
    std::fs::write(repo.join("binary.auto"), b"\0\r\n\xff").unwrap();
    assert_matches_oracle(&env, &repo);
    // The blobs really are LF-normalised (the oracle could share a bug otherwise).
    let doc = prepare(&env, &repo, &[]);
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["cat-file", "-p", &format!("{commit}:win.auto")]),
        "a\nb\n"
    );
    assert_eq!(
        env.git(&repo, ["cat-file", "-p", &format!("{commit}:raw.bin")]),
        "a\r\nb\r\n"
    );
    // A text eol=crlf file is checked out with CRLF in the workspace.
    assert_eq!(read_bytes(&root(&doc, 0).join("lf.crlf")), b"a\r\nb\r\n");
}

#[test]
fn core_autocrlf_without_attributes() {
    for setting in ["true", "input"] {
        let (env, repo) = Env::with_repo("autocrlf");
        env.git(&repo, ["config", "core.autocrlf", setting]);
        std::fs::write(repo.join("dos.txt"), "x\r\ny\r\n").unwrap();
        std::fs::write(repo.join("README"), "hello\r\nworld\r\n").unwrap();
        assert_matches_oracle(&env, &repo);
    }
}

#[test]
fn filter_drivers_clean_like_git_add() {
    let (env, repo) = Env::with_repo("filter");
    env.git(&repo, ["config", "filter.upper.clean", "tr a-z A-Z"]);
    env.git(&repo, ["config", "filter.upper.smudge", "cat"]);
    write(&repo.join(".gitattributes"), "*.up filter=upper\n");
    write(&repo.join("x.up"), "hello\n");
    let doc = assert_matches_oracle(&env, &repo);
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["cat-file", "-p", &format!("{commit}:x.up")]),
        "HELLO\n"
    );
}

#[test]
fn unusual_file_names() {
    let (env, repo) = Env::with_repo("names");
    for name in [
        "with space",
        " leading space",
        "-leading-dash",
        "--double",
        "new\nline",
        "tab\there",
        "quote\"s",
        "back\\slash",
        "star*?[x]",
        "ünïcödé",
        "dir with space/-dash/file name",
    ] {
        write(&repo.join(name), &format!("{name}\n"));
    }
    // Non-UTF-8 bytes, as a file and as a folder.
    std::fs::write(repo.join(OsStr::from_bytes(b"bad\xff\xfename")), "x\n").unwrap();
    let dir = repo.join(OsStr::from_bytes(b"dir\xc3("));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("inner"), "y\n").unwrap();
    // Some of them tracked and then modified or deleted.
    env.git(
        &repo,
        ["add", "--", "-leading-dash", "new\nline", "with space"],
    );
    env.git(&repo, ["commit", "-q", "-m", "names"]);
    write(&repo.join("-leading-dash"), "changed\n");
    std::fs::remove_file(repo.join("new\nline")).unwrap();
    let doc = assert_matches_oracle(&env, &repo);
    let ws = root(&doc, 0);
    assert_eq!(
        read_bytes(&ws.join(OsStr::from_bytes(b"bad\xff\xfename"))),
        b"x\n"
    );
    assert_eq!(
        read(&ws.join("dir with space/-dash/file name")),
        "dir with space/-dash/file name\n"
    );
}

#[test]
fn unborn_branch_without_and_with_staged_files() {
    let env = Env::new();
    let repo = env.empty_repo("unborn");
    // Nothing at all: the empty tree.
    let (tree, _) = snapshot(&env, &repo);
    assert_eq!(tree, env.oracle_tree(&repo));
    assert_eq!(tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    // Untracked only.
    write(&repo.join("a"), "a\n");
    assert_matches_oracle(&env, &repo);
    // Staged, then changed again, plus untracked.
    write(&repo.join("s/staged"), "1\n");
    env.git(&repo, ["add", "s/staged"]);
    write(&repo.join("s/staged"), "second\n");
    write(&repo.join("b"), "b\n");
    let doc = assert_matches_oracle(&env, &repo);
    assert_eq!(doc["source_head"], serde_json::Value::Null);
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    // No parent on an unborn branch.
    assert_eq!(
        env.git(&repo, ["rev-list", "--parents", "-n", "1", commit])
            .trim(),
        commit
    );
    // Still unborn, nothing staged changed.
    assert!(env
        .git_cmd(&repo)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .output()
        .unwrap()
        .stdout
        .is_empty());
    assert_eq!(
        env.git(&repo, ["diff", "--cached", "--name-only"]),
        "s/staged\n"
    );
}

#[test]
fn linked_worktree_as_source() {
    let (env, repo) = Env::with_repo("main");
    let linked = env.path().join("linked");
    crate::common::fixtures::worktree_add(&env, &repo, &linked);
    write(&linked.join("README"), "changed in linked\n");
    write(&linked.join("new"), "new\n");
    write(&repo.join("only-in-main"), "main\n");
    let doc = assert_matches_oracle(&env, &linked);
    assert_eq!(
        doc["source"].as_str().unwrap(),
        std::fs::canonicalize(&linked).unwrap().to_str().unwrap()
    );
    let ws = root(&doc, 0);
    assert!(!ws.join("only-in-main").exists());
    // Workspaces are named after the main working tree's folder (design §2).
    let parent = ws.parent().unwrap().parent().unwrap();
    assert!(
        parent
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("main-"),
        "{}",
        parent.display()
    );
    // The batch belongs to the repository: the main worktree sees it too.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["batch"], doc["batch"]);
}

#[test]
fn merge_conflicts_in_the_index() {
    let (env, repo) = Env::with_repo("conflict");
    commit_files(&env, &repo, &[("f", "base\n"), ("g", "g\n")], "base");
    env.git(&repo, ["checkout", "-q", "-b", "other"]);
    write(&repo.join("f"), "other\n");
    env.git(&repo, ["rm", "-q", "g"]);
    write(&repo.join("n"), "other n\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "other"]);
    env.git(&repo, ["checkout", "-q", "main"]);
    write(&repo.join("f"), "main\n");
    write(&repo.join("g"), "main g\n");
    write(&repo.join("n"), "main n\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "main"]);
    let merge = env
        .git_cmd(&repo)
        .args(["merge", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge must conflict");
    assert_matches_oracle(&env, &repo);
}

#[test]
fn first_snapshot_of_a_fresh_workspace_hashes_nothing() {
    let (env, repo) = Env::with_repo("fresh");
    for i in 0..200 {
        write(
            &repo.join(format!("d{}/f{i}.txt", i % 7)),
            &format!("file {i}\n"),
        );
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "many"]);
    write(&repo.join("d1/f1.txt"), "dirty\n");
    write(&repo.join("untracked"), "u\n");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    for ws in roots(&doc) {
        let (tree, hashed) = snapshot(&env, &ws);
        assert_eq!(hashed, 0, "{}", ws.display());
        assert_eq!(
            tree,
            tree_of(&env, &repo, doc["baseline"]["commit"].as_str().unwrap())
        );
    }
}

#[test]
fn an_edit_right_after_prepare_is_seen() {
    // Same size, same second: only the stat data can tell, and they must.
    for _ in 0..3 {
        let (env, repo) = Env::with_repo("quick");
        write(&repo.join("f"), "aaaa\n");
        let doc = prepare(&env, &repo, &[]);
        let ws = root(&doc, 0);
        std::fs::write(ws.join("f"), "bbbb\n").unwrap();
        let (tree, hashed) = snapshot(&env, &ws);
        assert!(hashed >= 1);
        assert_eq!(tree, env.oracle_tree(&ws));
        assert_ne!(
            tree,
            tree_of(&env, &repo, doc["baseline"]["commit"].as_str().unwrap())
        );
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), " M f\n");
    }
}

#[test]
fn source_index_is_only_read() {
    // A stat-dirty index (every file touched) is re-hashed, never refreshed:
    // the user's index keeps its bytes and mtime.
    let (env, repo) = Env::with_repo("statdirty");
    for i in 0..20 {
        write(&repo.join(format!("f{i}")), "x\n");
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for i in 0..20 {
        let p = repo.join(format!("f{i}"));
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
    }
    let index = git_dir(&env, &repo).join("index");
    let first = fingerprint(&index);
    let (tree, hashed) = snapshot(&env, &repo);
    assert_eq!(hashed, 20, "every stat-dirty file is read");
    assert_eq!(tree, env.oracle_tree(&repo));
    let (_, again) = snapshot(&env, &repo);
    assert_eq!(again, 20, "the snapshot must not refresh the user's index");
    assert_eq!(fingerprint(&index), first);
    prepare(&env, &repo, &[]);
    assert_eq!(fingerprint(&index), first);
}

#[test]
fn same_size_edit_in_the_same_second_is_seen() {
    // git compares whole seconds and would call this file clean; the
    // snapshot compares nanoseconds and must see the edit.
    let (env, repo) = Env::with_repo("nsec");
    let at = |p: &Path, secs: u64, nanos: u32| {
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos))
            .unwrap();
    };
    let t = repo.join("t");
    std::fs::write(&t, "v1\n").unwrap();
    at(&t, 1_790_000_000, 100_000_000);
    env.git(&repo, ["add", "t"]);
    env.git(&repo, ["commit", "-q", "-m", "t"]);
    at(
        &git_dir(&env, &repo).join("index"),
        1_790_000_000,
        200_000_000,
    );
    std::fs::write(&t, "v2\n").unwrap();
    at(&t, 1_790_000_000, 300_000_000);
    let (tree, _) = snapshot(&env, &repo);
    let blob = env.git(&repo, ["rev-parse", &format!("{tree}:t")]);
    assert_eq!(blob.trim(), env.git(&repo, ["hash-object", "t"]).trim());
}

#[test]
fn missing_index_and_intent_to_add_then_deleted() {
    let (env, repo) = Env::with_repo("noindex");
    write(&repo.join("gone-ita"), "x\n");
    env.git(&repo, ["add", "-N", "gone-ita"]);
    std::fs::remove_file(repo.join("gone-ita")).unwrap();
    write(&repo.join("kept-ita"), "kept\n");
    env.git(&repo, ["add", "-N", "kept-ita"]);
    assert_matches_oracle(&env, &repo);
    // No index at all: everything on disk counts as untracked.
    let (env, repo) = Env::with_repo("noindex2");
    write(&repo.join("extra"), "e\n");
    std::fs::remove_file(git_dir(&env, &repo).join("index")).unwrap();
    let (tree, _) = snapshot(&env, &repo);
    assert_eq!(tree, env.oracle_tree(&repo));
    assert!(!git_dir(&env, &repo).join("index").exists());
}

/// The source keeps git's meaning of its own index flags (design §3.1: exactly
/// the files `git status` would look at): an `assume-unchanged` or
/// `skip-worktree` entry counts at its index content, edited or deleted on
/// disk, as `git add -A` records it. (A workspace's flags hide nothing: see
/// apply::end_to_end.)
#[test]
fn index_flags_in_the_source_keep_their_git_meaning() {
    let (env, repo) = Env::with_repo("proj");
    for f in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(repo.join(f), format!("{f}\n")).unwrap();
    }
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    env.git(&repo, ["update-index", "--assume-unchanged", "a.txt"]);
    env.git(&repo, ["update-index", "--skip-worktree", "b.txt", "c.txt"]);
    std::fs::write(repo.join("a.txt"), "a.txt edited\n").unwrap();
    std::fs::write(repo.join("b.txt"), "b.txt edited\n").unwrap();
    std::fs::remove_file(repo.join("c.txt")).unwrap();
    let doc = assert_matches_oracle(&env, &repo);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(
            env.git(&repo, ["show", &format!("{baseline}:{f}")]),
            format!("{f}\n")
        );
    }
}
