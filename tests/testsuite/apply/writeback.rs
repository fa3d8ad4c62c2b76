//! Write-back (design §3.2 step 4, §7) through the real binary: filters and
//! `eol`, exec bits, symlinks, binary data, file<->folder switches, emptied
//! folders, things in the way, symlinked parents, and failures that must
//! roll every path back.
use crate::common::files::read_bytes;
use crate::common::fixtures::spawn_piped;
use crate::common::fixtures::task_root;
use crate::common::mounts::Tmpfs;

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::chmod;
use crate::common::fixtures::{commit_all, field_strs};
use crate::common::with_fault;
use crate::common::Env;
use serde_json::Value;

/// Path -> (kind, bytes) for everything below `root` (its `.git` left out).
type Tree = BTreeMap<Vec<u8>, (String, Vec<u8>)>;

fn tree(root: &Path) -> Tree {
    crate::common::files::tree(root)
        .into_iter()
        .map(|(path, (mode, bytes))| {
            let kind = match mode & 0o170000 {
                0o120000 => "link".to_string(),
                0o040000 => "dir".to_string(),
                _ => format!("file {:o}", mode & 0o777),
            };
            (path, (kind, bytes))
        })
        .collect()
}

fn no_temp_names(t: &Tree) {
    for k in t.keys() {
        let name = String::from_utf8_lossy(k);
        assert!(!name.contains(".gd-"), "write-back left {name}");
    }
}

fn index_bytes(repo: &Path) -> Vec<u8> {
    std::fs::read(repo.join(".git/index")).unwrap_or_default()
}

fn prepare(env: &Env, repo: &Path) -> PathBuf {
    let doc = env.delegate(repo, ["prepare", "--json"]).expect(0).json();
    task_root(&doc, 0)
}

fn apply(env: &Env, repo: &Path, code: i32) -> Value {
    env.delegate(repo, ["apply", "--json"]).expect(code).json()
}

fn umask() -> u32 {
    let out = std::process::Command::new("sh")
        .args(["-c", "umask"])
        .output()
        .unwrap();
    u32::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 8).unwrap()
}

fn write(p: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// Deterministic pseudo-random bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn smudge_filters_and_crlf_come_back_as_a_checkout_writes_them() {
    let (env, repo) = Env::with_repo("r");
    write(
        &repo.join(".gitattributes"),
        "*.txt text eol=crlf\n*.rot filter=rot\n",
    );
    env.git(&repo, ["config", "filter.rot.clean", "tr a-z n-za-m"]);
    env.git(&repo, ["config", "filter.rot.smudge", "tr a-z n-za-m"]);
    write(&repo.join("a.txt"), "one\r\ntwo\r\n");
    write(&repo.join("s.rot"), "hello\n");
    commit_all(&env, &repo);
    // The blob holds the clean form.
    assert_eq!(env.git(&repo, ["cat-file", "-p", "HEAD:s.rot"]), "uryyb\n");
    assert_eq!(
        env.git(&repo, ["cat-file", "-p", "HEAD:a.txt"]),
        "one\ntwo\n"
    );

    let ws = prepare(&env, &repo);
    assert_eq!(read_bytes(&ws.join("s.rot")), b"hello\n");
    write(&ws.join("a.txt"), "one\r\ntwo\r\nthree\r\n");
    write(&ws.join("s.rot"), "hello\nworld\n");
    write(&ws.join("new.txt"), "x\ny\n");
    let index = index_bytes(&repo);
    let doc = apply(&env, &repo, 0);
    assert_eq!(doc["tasks"][0]["status"], "applied");

    assert_eq!(read_bytes(&repo.join("a.txt")), b"one\r\ntwo\r\nthree\r\n");
    assert_eq!(read_bytes(&repo.join("s.rot")), b"hello\nworld\n");
    assert_eq!(read_bytes(&repo.join("new.txt")), b"x\r\ny\r\n");
    // git sees exactly the worker's edits, not a whole-file rewrite.
    let diff = env.git(&repo, ["diff", "--numstat"]);
    assert_eq!(diff, "1\t0\ta.txt\n1\t0\ts.rot\n");
    assert_eq!(index_bytes(&repo), index);
    no_temp_names(&tree(&repo));
}

#[test]
fn exec_bits_symlinks_and_binary_content_are_reproduced() {
    let (env, repo) = Env::with_repo("r");
    write(&repo.join("run.sh"), "#!/bin/sh\necho run\n");
    write(&repo.join("tool"), "#!/bin/sh\necho tool\n");
    chmod(&repo.join("tool"), 0o755);
    write(&repo.join("a"), "a\n");
    write(&repo.join("b"), "b\n");
    symlink("a", repo.join("ln")).unwrap();
    write(&repo.join("bin.dat"), noise(4096, 1));
    commit_all(&env, &repo);

    let ws = prepare(&env, &repo);
    chmod(&ws.join("run.sh"), 0o755);
    chmod(&ws.join("tool"), 0o644);
    std::fs::remove_file(ws.join("ln")).unwrap();
    symlink("b", ws.join("ln")).unwrap();
    std::fs::remove_file(ws.join("a")).unwrap();
    symlink("dir/../b", ws.join("a")).unwrap();
    symlink("../../outside", ws.join("newln")).unwrap();
    let mut bin = noise(300_000, 2);
    bin[10] = 0;
    bin[11] = 0xff;
    write(&ws.join("bin.dat"), &bin);
    write(&ws.join("big/blob.bin"), noise(1 << 20, 3));
    let mut w = tree(&ws);
    w.remove(&b".git"[..]);
    let index = index_bytes(&repo);
    apply(&env, &repo, 0);

    let t = tree(&repo);
    let mask = umask();
    let exec = format!("file {:o}", 0o777 & !mask);
    let plain = format!("file {:o}", 0o666 & !mask);
    assert_eq!(t[&b"run.sh"[..]].0, exec);
    assert_eq!(t[&b"tool"[..]].0, plain);
    assert_eq!(t[&b"ln"[..]], ("link".into(), b"b".to_vec()));
    assert_eq!(t[&b"a"[..]], ("link".into(), b"dir/../b".to_vec()));
    assert_eq!(t[&b"newln"[..]], ("link".into(), b"../../outside".to_vec()));
    assert_eq!(t[&b"bin.dat"[..]], (plain.clone(), bin));
    assert_eq!(t[&b"big/blob.bin"[..]], (plain, noise(1 << 20, 3)));
    assert_eq!(index_bytes(&repo), index);
    no_temp_names(&t);
    // The source now equals the workspace, file for file.
    assert_eq!(t, w);
}

#[test]
fn file_folder_switches_and_folders_emptied_by_deletions() {
    let (env, repo) = Env::with_repo("r");
    write(&repo.join("f"), "file becomes folder\n");
    write(&repo.join("d/1"), "1\n");
    write(&repo.join("d/sub/2"), "2\n");
    write(&repo.join("gone/deep/er/f"), "f\n");
    write(&repo.join("half/x"), "x\n");
    write(&repo.join("half/y"), "y\n");
    commit_all(&env, &repo);

    let ws = prepare(&env, &repo);
    std::fs::remove_file(ws.join("f")).unwrap();
    write(&ws.join("f/inner/z"), "z\n");
    std::fs::remove_dir_all(ws.join("d")).unwrap();
    write(&ws.join("d"), "folder becomes file\n");
    std::fs::remove_dir_all(ws.join("gone")).unwrap();
    std::fs::remove_file(ws.join("half/x")).unwrap();
    let mut w = tree(&ws);
    w.remove(&b".git"[..]);
    apply(&env, &repo, 0);

    let t = tree(&repo);
    assert_eq!(t, w);
    assert!(!repo.join("gone").exists(), "emptied folders are removed");
    assert!(repo.join("half/y").exists());
    assert_eq!(read_bytes(&repo.join("d")), b"folder becomes file\n");
    assert_eq!(read_bytes(&repo.join("f/inner/z")), b"z\n");
}

#[test]
fn an_ignored_file_or_folder_in_the_way_is_a_conflict_and_stays_intact() {
    let (env, repo) = Env::with_repo("r");
    write(&repo.join(".gitignore"), "*.tmp\n");
    commit_all(&env, &repo);
    let ws = prepare(&env, &repo);
    // The worker adds files where the user, meanwhile, keeps ignored things.
    write(&ws.join("out.log"), "worker's log\n");
    write(&ws.join("cache"), "worker's cache file\n");
    write(&ws.join("fine.txt"), "fine\n");
    write(&repo.join(".gitignore"), "*.tmp\nout.log\ncache/\n");
    write(&repo.join("out.log"), "the user's precious log\n");
    write(&repo.join("cache/data"), "the user's cache\n");
    let before = tree(&repo);
    let index = index_bytes(&repo);

    let doc = apply(&env, &repo, 1);
    let t = &doc["tasks"][0];
    assert_eq!(t["status"], "conflict", "{doc:#}");
    assert_eq!(t["reason"], "would_overwrite_untracked", "{doc:#}");
    let conflicts = field_strs(&t["conflicts"], "path");
    assert!(conflicts.contains(&"out.log"), "{doc:#}");
    assert!(conflicts.contains(&"cache"), "{doc:#}");
    // All or nothing: the task's other path was not written either.
    assert_eq!(tree(&repo), before);
    assert_eq!(index_bytes(&repo), index);
    assert!(t["proposal_ref"].is_string() && t["patch"].is_string());
}

#[test]
fn a_symlinked_folder_pointing_outside_is_never_written_through() {
    let (env, repo) = Env::with_repo("r");
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let ws = prepare(&env, &repo);
    write(&ws.join("vendor/evil.txt"), "must not land outside\n");
    write(&ws.join("vendor/sub/deeper.txt"), "nor here\n");
    // The user keeps an ignored symlink where the worker made a folder.
    write(&repo.join(".gitignore"), "vendor\n");
    symlink(&outside, repo.join("vendor")).unwrap();
    let before = tree(&repo);

    let doc = apply(&env, &repo, 1);
    assert_eq!(doc["tasks"][0]["status"], "conflict", "{doc:#}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(tree(&repo), before);
}

#[test]
fn a_failed_write_rolls_everything_back_and_a_rerun_applies() {
    let (env, repo) = Env::with_repo("r");
    for i in 0..20 {
        write(&repo.join(format!("m/{i}")), format!("{i}\n"));
    }
    write(&repo.join("f"), "f\n");
    commit_all(&env, &repo);
    let ws = prepare(&env, &repo);
    for i in 0..20 {
        write(&ws.join(format!("m/{i}")), format!("{i} changed\n"));
    }
    write(&ws.join("new/n"), "n\n");
    std::fs::remove_file(ws.join("f")).unwrap();
    write(&ws.join("f/now/a/folder"), "x\n");
    let before = tree(&repo);
    let index = index_bytes(&repo);
    let mut w = tree(&ws);
    w.remove(&b".git"[..]);

    for n in [1, 7, 23] {
        let run = with_fault(
            env.delegate_cmd(&repo).args(["apply", "--json"]),
            &format!("fail-rename:{n}"),
        );
        let doc: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(run.status.code(), Some(1), "{doc:#}");
        let t = &doc["tasks"][0];
        assert_eq!(t["status"], "failed", "{doc:#}");
        assert_eq!(t["reason"], "write_failed", "{doc:#}");
        assert!(t["proposal_ref"].is_string());
        assert_eq!(tree(&repo), before, "rename {n}");
        assert_eq!(index_bytes(&repo), index);
        let state = env.git(&repo, ["rev-parse", "--git-common-dir"]);
        let batches = repo.join(state.trim()).join("delegate/batches");
        for b in std::fs::read_dir(&batches).unwrap() {
            assert!(!b.unwrap().path().join("writeback.journal").exists());
        }
        env.delegate(&repo, ["status", "--check"]).expect(0);
    }
    let doc = apply(&env, &repo, 0);
    assert_eq!(doc["tasks"][0]["status"], "applied");
    assert_eq!(tree(&repo), w);
}

/// A tmpfs mounted for one test, unmounted when dropped.
#[test]
fn a_full_disk_rolls_back_and_the_tasks_fail_with_write_failed() {
    let env = Env::new();
    let mnt = env.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .output();
    match mounted {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!(
                "SKIPPED a_full_disk_rolls_back_and_the_tasks_fail_with_write_failed: cannot mount a tmpfs here ({:?})",
                other.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            );
            return;
        }
    }
    let _mount = Tmpfs(mnt.clone());
    // The working tree on the tiny filesystem, its .git (objects, state) elsewhere.
    let repo = mnt.join("r");
    let gitdir = env.path().join("r.git");
    env.git(
        env.path(),
        [
            "init".as_ref(),
            "-q".as_ref(),
            "-b".as_ref(),
            "main".as_ref(),
            "--separate-git-dir".as_ref(),
            gitdir.as_os_str(),
            repo.as_os_str(),
        ],
    );
    for i in 0..10 {
        write(&repo.join(format!("f{i}")), format!("{i}\n"));
    }
    commit_all(&env, &repo);
    let ws = prepare(&env, &repo);
    for i in 0..10 {
        write(&ws.join(format!("f{i}")), format!("{i} changed\n"));
    }
    write(&ws.join("huge.bin"), noise(3 << 20, 9));
    let before = tree(&repo);
    let index = read_bytes(&gitdir.join("index"));

    // Exit 3, the apply document carrying the error (design §3 "Exit
    // status": a filesystem error after which everything was rolled back).
    let doc = apply(&env, &repo, 3);
    let t = &doc["tasks"][0];
    assert_eq!(t["status"], "failed", "{doc:#}");
    assert_eq!(t["reason"], "write_failed", "{doc:#}");
    let message = t["message"].as_str().unwrap_or_default();
    assert!(message.contains("no space left on device"), "{doc:#}");
    assert_eq!(doc["error"]["code"], "delegate::disk_full", "{doc:#}");
    let help = doc["error"]["help"].as_str().unwrap_or_default();
    assert!(
        help.contains(&format!("the filesystem mounted at {}", mnt.display())),
        "{doc:#}"
    );
    assert_eq!(tree(&repo), before);
    assert_eq!(read_bytes(&gitdir.join("index")), index);
    assert!(!gitdir
        .join("delegate/batches")
        .read_dir()
        .unwrap()
        .any(|b| b.unwrap().path().join("writeback.journal").exists()));
    // Every byte the failed write took is free again.
    let df = std::process::Command::new("df")
        .args(["--output=used", "-B1"])
        .arg(&mnt)
        .output()
        .unwrap();
    let used: u64 = String::from_utf8_lossy(&df.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(used < 200_000, "tmpfs still holds {used} bytes");
}

/// The batch state folder of `repo`'s only batch.
fn batch_dirs(env: &Env, repo: &Path) -> Vec<PathBuf> {
    let common = env.git(repo, ["rev-parse", "--git-common-dir"]);
    let batches = repo.join(common.trim()).join("delegate/batches");
    std::fs::read_dir(&batches)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn journal_left(env: &Env, repo: &Path) -> bool {
    batch_dirs(env, repo)
        .iter()
        .any(|b| b.join("writeback.journal").exists())
}

/// Four files under a slow clean filter, a task changing them all, and an
/// apply during which the user saves over f1.txt as soon as apply wrote it
/// (and edits f4.txt): returns the index before, the apply's exit code, its
/// JSON document and its stderr.
fn apply_while_the_user_saves_over_f1(
    env: &Env,
    repo: &Path,
) -> (Vec<u8>, Option<i32>, Value, String) {
    // A slow clean filter: every check of an `S` file takes a second, so
    // the renames are spread over seconds and the user's edits land
    // between them, deterministically.
    write(&repo.join(".gitattributes"), "f*.txt filter=slow\n");
    env.git(
        repo,
        ["config", "filter.slow.clean", "sh -c \"sleep 1; cat\""],
    );
    for i in 1..=4 {
        write(&repo.join(format!("f{i}.txt")), format!("original {i}\n"));
    }
    commit_all(env, repo);
    let ws = prepare(env, repo);
    for i in 1..=4 {
        write(&ws.join(format!("f{i}.txt")), format!("task 000 {i}\n"));
    }
    let index = index_bytes(repo);

    let child = spawn_piped(env, repo, &["apply", "--json"]);
    // The user: as soon as f1.txt shows the task's content, save over it
    // (in place, same length: only the bytes tell), and edit f4.txt.
    let f1 = repo.join("f1.txt");
    let f4 = repo.join("f4.txt");
    let user = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        loop {
            if std::fs::read(&f1).is_ok_and(|b| b == b"task 000 1\n") {
                std::fs::write(&f1, "USER EDIT1\n").unwrap();
                std::fs::write(&f4, "the user's f4\n").unwrap();
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
    let out = child.wait_with_output().unwrap();
    assert!(
        user.join().unwrap(),
        "f1.txt never showed the task's content"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (index, out.status.code(), doc, stderr.into_owned())
}

/// Write-back fails after some paths were renamed into
/// place (the fourth path's check finds the user's edit), and meanwhile the
/// user saved over the first file apply had just written. Rollback must
/// leave that edit (never move it away and delete it), keep the original
/// it replaced, report `rollback_failed` naming the path, and keep the
/// journal until the user resolves it.
#[test]
fn rollback_leaves_a_file_the_user_saved_over_after_it_was_written() {
    let (env, repo) = Env::with_repo("r");
    let (index, code, doc, stderr) = apply_while_the_user_saves_over_f1(&env, &repo);

    // Nothing the user wrote is lost; the others are back to what they were.
    assert_eq!(
        read_bytes(&repo.join("f1.txt")),
        b"USER EDIT1\n",
        "{doc:#}\n{stderr}"
    );
    assert_eq!(
        read_bytes(&repo.join("f4.txt")),
        b"the user's f4\n",
        "{doc:#}"
    );
    assert_eq!(read_bytes(&repo.join("f2.txt")), b"original 2\n");
    assert_eq!(read_bytes(&repo.join("f3.txt")), b"original 3\n");
    assert_eq!(index_bytes(&repo), index);
    // Reported: exit 3, rollback_failed, the path and where its original is kept.
    assert_eq!(code, Some(3), "{doc:#}\n{stderr}");
    assert_eq!(doc["error"]["code"], "delegate::rollback_failed", "{doc:#}");
    let left = doc["error"]["paths"].as_array().expect("error.paths");
    let f1_left = left
        .iter()
        .find(|l| l["path"] == "f1.txt")
        .unwrap_or_else(|| panic!("f1.txt not named: {doc:#}"));
    assert_eq!(f1_left["reason"], "changed_since_written", "{doc:#}");
    assert_eq!(f1_left["kept_is"], "original", "{doc:#}");
    let kept = PathBuf::from(f1_left["kept"].as_str().expect("kept"));
    assert_eq!(read_bytes(&kept), b"original 1\n", "{doc:#}");
    // f4.txt's edit is normally seen by its check (rolled back: not left);
    // on a machine so loaded that the user's write lands after f4.txt was
    // moved aside, it stands in the way of its original, which is kept.
    let mut kept_files = vec![kept.clone()];
    for l in left.iter().filter(|l| l["path"] != "f1.txt") {
        assert_eq!(l["path"], "f4.txt", "{doc:#}");
        assert_eq!(l["reason"], "in_the_way", "{doc:#}");
        kept_files.push(PathBuf::from(l["kept"].as_str().expect("kept")));
    }
    let message = doc["error"]["message"].as_str().unwrap();
    assert_has(message, "f1.txt");
    assert!(message.contains(&*kept.to_string_lossy()), "{message}");
    // Nothing else is left over besides the kept originals.
    let extra: Vec<String> = tree(&repo)
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| k.contains(".gd-"))
        .collect();
    assert_eq!(extra.len(), kept_files.len(), "{extra:?}");
    // The journal stays until it is resolved; status says so.
    assert!(journal_left(&env, &repo));
    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    let problem = st["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "journal")
        .unwrap_or_else(|| panic!("{st:#}"))
        .clone();
    let text = problem["message"].as_str().unwrap();
    assert!(
        text.contains("f1.txt") && text.contains(&*kept.to_string_lossy()),
        "{st:#}"
    );
    // Any mutating command re-checks and reports it again, changing nothing.
    let before = tree(&repo);
    let again = env.delegate(&repo, ["gc", "--json"]).expect(3).json();
    assert_eq!(
        again["error"]["code"], "delegate::rollback_failed",
        "{again:#}"
    );
    assert_eq!(again["error"]["paths"][0]["path"], "f1.txt", "{again:#}");
    assert_eq!(tree(&repo), before);

    // The user keeps their version: deletes the kept original. The next
    // command finishes the rollback and the journal goes.
    for k in &kept_files {
        std::fs::remove_file(k).unwrap();
    }
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(
        gc["recovered_writebacks"].as_array().map(Vec::len),
        Some(1),
        "{gc:#}"
    );
    // The task failed (write_failed) and keeps its work for a later apply.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["tasks"][0]["state"], "failed", "{st:#}");
    assert_eq!(
        st["batches"][0]["tasks"][0]["reason"], "write_failed",
        "{st:#}"
    );
    assert!(!journal_left(&env, &repo));
    assert_eq!(read_bytes(&repo.join("f1.txt")), b"USER EDIT1\n");
    env.delegate(&repo, ["status", "--check"]).expect(0);
    no_temp_names(&tree(&repo));
}

/// The cause of a failed write-back is carried as data, not read back out
/// of the message: a path whose name reads like a full disk or a failing
/// filter driver does not change the error code of a failure it did not
/// cause.
#[test]
fn a_path_named_like_an_os_error_or_a_filter_failure_does_not_change_the_reason() {
    for name in [
        "a (os error 28)",
        "no space left on device (ENOSPC, os error 28)",
        "a smudge filter driver failed",
        "a clean filter driver failed",
    ] {
        let (env, repo) = Env::with_repo("r");
        write(&repo.join(name), "old\n");
        commit_all(&env, &repo);
        let ws = prepare(&env, &repo);
        write(&ws.join(name), "new\n");
        let before = tree(&repo);
        let run = with_fault(
            env.delegate_cmd(&repo).args(["apply", "--json"]),
            "fail-rename:1",
        );
        let doc: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(run.status.code(), Some(1), "{name}: {doc:#}");
        let t = &doc["tasks"][0];
        assert_eq!(t["status"], "failed", "{name}: {doc:#}");
        assert_eq!(t["reason"], "write_failed", "{name}: {doc:#}");
        assert_eq!(tree(&repo), before, "{name}");
        let doc = apply(&env, &repo, 0);
        assert_eq!(doc["tasks"][0]["status"], "applied", "{name}");
        assert_eq!(read_bytes(&repo.join(name)), b"new\n");
    }
}
