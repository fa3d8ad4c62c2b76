//! Snapshot workspaces on btrfs (design §3.17): where the workspace root is
//! on btrfs, the first workspace of a batch is a subvolume and the others
//! are snapshots of it; each is registered, detached, locked, clean, a
//! valid stat cache (`git status` rewrites no index, our snapshot hashes
//! nothing), carries the ignored files, and every command removes it
//! (apply, drop, gc, the trash), also as a user without privileges.
//! `apply --verify`'s verification workspaces are snapshots of a pristine
//! template moved to their own commit, checked inside CMD. These
//! tests need `GIT_DELEGATE_BTRFS_DIR` (see scripts/btrfs-fs); without it
//! they say SKIPPED (and fail under CI=true).

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::paused_at;
use crate::common::fixtures::task_fates;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::fixtures::{field_strs, id, prepare, roots, snapshot, strs, tree_of, write};
use crate::common::mounts::btrfs_env;
use crate::common::procs::as_nobody;
use crate::common::Env;

/// The root folder of every btrfs subvolume has this inode number.
const SUBVOL_ROOT_INO: u64 = 256;

/// A repository with enough files that apply moves its workspaces to the
/// trash, a symlink, an executable, a dirty and an untracked file, and an
/// ignored `node_modules/`.
fn repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    for i in 0..200 {
        write(
            &repo.join(format!("src/m{}/f{i}.txt", i % 7)),
            &format!("file {i}\n"),
        );
    }
    write(&repo.join(".gitignore"), "node_modules/\ntarget/\n");
    write(&repo.join("run.sh"), "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(
        repo.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("src/m1/f1.txt", repo.join("link")).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    write(&repo.join("src/m0/f0.txt"), "dirty in the source\n");
    write(&repo.join("new.txt"), "untracked\n");
    write(
        &repo.join("node_modules/dep/index.js"),
        "module.exports = 1;\n",
    );
    repo
}

/// The worktree registration (git dir) of a workspace.
fn git_dir(env: &Env, ws: &Path) -> PathBuf {
    PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim())
}

fn is_subvolume(path: &Path) -> bool {
    std::fs::symlink_metadata(path).unwrap().ino() == SUBVOL_ROOT_INO
}

/// Wait until the background deleters working on the trash folder `path`
/// (`git-delegate purge-trash PATH ...`, started before the command that
/// made them returned) have exited, then check that they removed it. The
/// event waited for is the deleters' exit, not a clock: a deleter that gave
/// up leaves the trash, and the failure says what is in it.
fn wait_gone(path: &Path) {
    // Matched by the repository's folder name (`<repo>-<fingerprint>`,
    // one per source), whatever spelling of the path the command used.
    let needle = path
        .parent()
        .and_then(Path::file_name)
        .expect("a trash folder has a parent")
        .as_encoded_bytes()
        .to_vec();
    // A guard against a hang only (a deleter retries for about a minute).
    let guard = Instant::now() + Duration::from_secs(900);
    while deleters_of(&needle) > 0 {
        assert!(
            Instant::now() < guard,
            "the deleter of {} never ended",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    if path.symlink_metadata().is_ok() {
        let left: Vec<_> = std::fs::read_dir(path)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        panic!(
            "{} was not removed by its deleters; it holds {left:?}",
            path.display()
        );
    }
}

/// How many live processes run `purge-trash` on a trash folder in the
/// repository folder named `needle`.
fn deleters_of(needle: &[u8]) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| {
            p.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|c| c.is_ascii_digit()))
        })
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .filter(|cmd| {
            let args: Vec<&[u8]> = cmd.split(|&c| c == 0).collect();
            args.windows(2).any(|w| {
                use std::os::unix::ffi::OsStrExt;
                let trash = Path::new(std::ffi::OsStr::from_bytes(w[1]));
                w[0] == b"purge-trash"
                    && trash
                        .parent()
                        .and_then(Path::file_name)
                        .map(|n| n.as_encoded_bytes())
                        == Some(needle)
            })
        })
        .count()
}

#[test]
fn snapshot_workspaces_are_subvolumes_clean_and_read_nothing() {
    let Some(env) = btrfs_env("snapshot_workspaces_are_subvolumes_clean_and_read_nothing") else {
        return;
    };
    let repo = repo(&env);
    let doc = prepare(&env, &repo, &["-n", "4", "--copy-ignored", "node_modules/"]);
    let ws = roots(&doc);
    let baseline = tree_of(&env, &repo, doc["baseline"]["commit"].as_str().unwrap());
    let mut devs = Vec::new();
    for w in &ws {
        // A subvolume of its own (the first made as one, the others its snapshots).
        assert!(is_subvolume(w), "{} is not a subvolume", w.display());
        devs.push(std::fs::metadata(w).unwrap().dev());
        // Its own `.git` file, registration, lock, detached HEAD.
        let gd = git_dir(&env, w);
        assert_eq!(read(&w.join(".git")), format!("gitdir: {}\n", gd.display()));
        assert!(gd.join("locked").is_file(), "{}", w.display());
        assert_eq!(
            read(&gd.join("gitdir")),
            format!("{}\n", w.join(".git").display())
        );
        assert_eq!(
            env.git(w, ["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            "HEAD"
        );
        // The carried ignored files came with the snapshot.
        assert_eq!(
            read(&w.join("node_modules/dep/index.js")),
            "module.exports = 1;\n"
        );
        assert_eq!(read(&w.join("src/m0/f0.txt")), "dirty in the source\n");
        // A valid stat cache: `git status` is clean and rewrites no index
        // (git refreshes and writes the index back when any entry had to
        // be read), and our snapshot hashes nothing.
        let index = gd.join("index");
        let before = (
            read_bytes(&index),
            std::fs::metadata(&index).unwrap().mtime_nsec(),
        );
        assert_eq!(env.git(w, ["status", "--porcelain"]), "", "{}", w.display());
        let after = (
            read_bytes(&index),
            std::fs::metadata(&index).unwrap().mtime_nsec(),
        );
        assert!(
            before == after,
            "git status rewrote the index of {}",
            w.display()
        );
        let (tree, hashed) = snapshot(&env, w);
        assert_eq!(tree, baseline, "{}", w.display());
        assert_eq!(
            hashed,
            0,
            "the first snapshot of {} read files",
            w.display()
        );
    }
    devs.sort();
    devs.dedup();
    assert_eq!(
        devs.len(),
        ws.len(),
        "each subvolume has its own device number"
    );
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    for w in &ws {
        let block = list
            .split("\n\n")
            .find(|b| b.starts_with(&format!("worktree {}\n", w.display())))
            .unwrap_or_else(|| panic!("{} is not registered:\n{list}", w.display()));
        assert!(
            block.contains("\ndetached") && block.contains("\nlocked"),
            "{block}"
        );
    }
    // A snapshot is private: writing one changes no other.
    std::fs::write(ws[1].join("src/m2/f2.txt"), "edited in 2\n").unwrap();
    for w in [&ws[0], &ws[2], &ws[3]] {
        assert_eq!(read(&w.join("src/m2/f2.txt")), "file 2\n");
    }
    let (_, hashed) = snapshot(&env, &ws[1]);
    assert_eq!(hashed, 1);
}

#[test]
fn snapshots_never_makes_plain_folders() {
    let Some(env) = btrfs_env("snapshots_never_makes_plain_folders") else {
        return;
    };
    let repo = repo(&env);
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[workspace]\nsnapshots = \"never\"\n",
    )
    .unwrap();
    let doc = prepare(&env, &repo, &["-n", "2"]);
    for w in roots(&doc) {
        assert!(!is_subvolume(&w), "{} is a subvolume", w.display());
        assert_eq!(env.git(&w, ["status", "--porcelain"]), "");
    }
}

#[test]
fn apply_drop_and_gc_remove_snapshot_workspaces() {
    let Some(env) = btrfs_env("apply_drop_and_gc_remove_snapshot_workspaces") else {
        return;
    };
    let repo = repo(&env);
    // apply: the workspaces go (through the trash: 200 files each).
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let ws = roots(&doc);
    std::fs::write(ws[1].join("src/m3/f3.txt"), "from task 2\n").unwrap();
    std::fs::write(ws[2].join("added.txt"), "from task 3\n").unwrap();
    env.delegate(&repo, ["apply", &id(&doc)]).expect(0);
    assert_eq!(read(&repo.join("src/m3/f3.txt")), "from task 2\n");
    assert_eq!(read(&repo.join("added.txt")), "from task 3\n");
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }
    let base = ws[0].parent().unwrap().parent().unwrap().to_path_buf();
    wait_gone(&base.join(".trash"));

    // drop --force: removed in place.
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    std::fs::write(ws[0].join("work.txt"), "unapplied\n").unwrap();
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }

    // gc: a stale batch's workspaces go.
    let doc = prepare(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    let ws = roots(&doc);
    std::thread::sleep(Duration::from_millis(2100));
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], serde_json::json!([id(&doc)]), "{gc}");
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }
    assert_eq!(env.git(&repo, ["worktree", "list"]).lines().count(), 1);
    // Nothing left under the workspace root but what the purger removes.
    if base.exists() {
        wait_gone(&base.join(".trash"));
    }
}

#[test]
fn a_leftover_snapshot_is_left_alone_by_gc() {
    let Some(env) = btrfs_env("a_leftover_snapshot_is_left_alone_by_gc") else {
        return;
    };
    let repo = repo(&env);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    // The batch's state and registrations vanish (a lost .git/delegate):
    // nothing proves the subvolumes hold no work any more, so gc leaves
    // them and reports them (design §3.18).
    let common = PathBuf::from(env.git(&repo, ["rev-parse", "--git-common-dir"]).trim());
    let common = if common.is_absolute() {
        common
    } else {
        repo.join(common)
    };
    std::fs::remove_dir_all(common.join("delegate/batches")).unwrap();
    for w in &ws {
        std::fs::remove_dir_all(git_dir(&env, w)).unwrap();
    }
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["workspaces_removed"], 0, "{gc}");
    let left: Vec<&str> = strs(&gc["left_alone"]);
    for w in &ws {
        assert!(w.join("run.sh").is_file(), "{} is gone", w.display());
        assert!(left.contains(&w.to_str().unwrap()), "{gc}");
    }
}

#[test]
fn the_identity_check_survives_a_new_device_number() {
    // A subvolume's device number is handed out anew after a remount; the
    // workspace is still recognised by its subvolume id, and a copy put in
    // its place is not.
    let Some(env) = btrfs_env("the_identity_check_survives_a_new_device_number") else {
        return;
    };
    let repo = repo(&env);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    let state = std::fs::read_dir(repo.join(".git/delegate/batches"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("batch.toml");
    let text = read(&state);
    assert_has(&text, "subvolume = \"");
    let dev = std::fs::metadata(&ws[0]).unwrap().dev();
    let moved = text.replace(&format!("dev = {dev}\n"), "dev = 4242\n");
    assert_ne!(moved, text);
    std::fs::write(&state, moved).unwrap();
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    for t in status["batches"][0]["tasks"].as_array().unwrap() {
        assert_eq!(t["exists"], true, "{status}");
    }
    // Replaced by a plain copy: not ours.
    let aside = ws[1].with_extension("aside");
    std::fs::rename(&ws[1], &aside).unwrap();
    let out = Command::new("cp")
        .arg("-a")
        .arg(&aside)
        .arg(&ws[1])
        .output()
        .unwrap();
    assert!(out.status.success());
    let status = env.delegate(&repo, ["status", "--json"]).json();
    assert_eq!(
        status["batches"][0]["tasks"][1]["exists"], false,
        "{status}"
    );
}

#[test]
fn an_unprivileged_user_makes_and_removes_snapshot_workspaces() {
    let Some(env) = btrfs_env("an_unprivileged_user_makes_and_removes_snapshot_workspaces") else {
        return;
    };
    if !crate::common::procs::is_root() {
        // Already unprivileged: the other tests prove it.
        return;
    }
    let repo = repo(&env);
    crate::common::procs::give_to_nobody(env.path());
    // A copy of the binary nobody can reach wherever the checkout is: the
    // background deleter is started from its path (made after the chown:
    // a hard link shares the built binary's owner).
    let bin = env.path().join("bin");
    let run = |args: &[&str]| {
        let mut cmd = env.delegate_cmd(&repo);
        cmd.args(args);
        let out = as_nobody(&cmd, &bin).output().unwrap();
        crate::common::Run::from(out)
    };
    let doc = run(&["prepare", "--json", "-n", "3"]).expect(0).json();
    let ws = roots(&doc);
    for w in &ws {
        assert!(is_subvolume(w), "{}", w.display());
        assert_eq!(std::fs::metadata(w).unwrap().uid(), 65534);
    }
    std::fs::write(ws[0].join("x.txt"), "x\n").unwrap();
    run(&["drop", &id(&doc), "--force"]).expect(0);
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }
    let doc = run(&["prepare", "--json", "-n", "2"]).expect(0).json();
    let ws = roots(&doc);
    run(&["apply", &id(&doc)]).expect(0);
    for w in &ws {
        assert!(w.symlink_metadata().is_err(), "{} is left", w.display());
    }
    let base = ws[0].parent().unwrap().parent().unwrap().to_path_buf();
    wait_gone(&base.join(".trash"));
}

/// CMD for the verification test: inside each verification workspace, the
/// tree is exactly its commit (every file's content and mode, the links),
/// `git status` is clean and rewrites no index, only the carried ignored
/// files are there (nothing an earlier run made: the template is never
/// run in), then it leaves a build output and an untracked file behind.
/// Fails when a `t*.txt` holds `BAD`.
const VERIFY_CHECK: &str = r#"#!/bin/sh
top=$(git rev-parse --show-toplevel) || exit 9
cd "$top" || exit 9
idx="$(git rev-parse --absolute-git-dir)/index"
before=$(stat -c '%i %Y %y' "$idx")
st=$(git status --porcelain)
[ -z "$st" ] || { echo "not clean: $st"; exit 10; }
[ "$before" = "$(stat -c '%i %Y %y' "$idx")" ] || { echo "index rewritten"; exit 11; }
ign=$(git status --porcelain --ignored)
[ "$ign" = "!! node_modules/" ] || { echo "unexpected: $ign"; exit 14; }
git ls-files -s | while read -r mode oid stage path; do
  case $mode in
    120000) [ "$(readlink "$path")" = "$(git cat-file blob "$oid")" ] || { echo "link $path"; exit 12; } ;;
    100755) [ -x "$path" ] && [ "$(git hash-object "$path")" = "$oid" ] || { echo "file $path"; exit 12; } ;;
    100644) [ ! -x "$path" ] && [ "$(git hash-object "$path")" = "$oid" ] || { echo "file $path"; exit 12; } ;;
  esac
done || exit 12
[ "$(git ls-files | wc -l)" = "$(git ls-tree -r --name-only HEAD | wc -l)" ] || exit 13
echo "$(stat -c %i .) [$GIT_DELEGATE_TASKS]" >> "@RUNS@"
mkdir -p target && echo built > target/out
echo junk > untracked.txt
if cat t*.txt 2>/dev/null | grep -q BAD; then echo "found BAD"; exit 4; fi
exit 0
"#;

/// One `apply --verify` of 5 tasks with 1 culprit (task 3) whose tasks
/// change, delete, add, chmod and link paths; `never` sets
/// `workspace.snapshots = "never"`. Returns the apply's JSON, the lines
/// CMD recorded, the source's files afterwards, and the batch folder.
fn verify_five(env: &Env, never: bool) -> (serde_json::Value, Vec<String>, String, PathBuf) {
    let repo = env.repo(if never { "plain" } else { "snap" });
    write(&repo.join("a.txt"), "a\n");
    write(&repo.join("gone.txt"), "gone\n");
    write(&repo.join("tool.sh"), "#!/bin/sh\n");
    write(&repo.join("dir/x.txt"), "x\n");
    for i in 0..150 {
        write(&repo.join(format!("src/f{i}.txt")), &format!("{i}\n"));
    }
    write(&repo.join(".gitignore"), "node_modules/\ntarget/\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    write(&repo.join("node_modules/dep.js"), "dep\n");
    let mut toml = "[workspace]\ncopy-ignored = [\"node_modules/\"]\n".to_string();
    if never {
        toml.push_str("snapshots = \"never\"\n");
    }
    std::fs::write(repo.join(".git/delegate.toml"), toml).unwrap();
    let runs = repo.parent().unwrap().join(format!("runs-{never}.txt"));
    let script = repo.parent().unwrap().join(format!("check-{never}.sh"));
    std::fs::write(
        &script,
        VERIFY_CHECK.replace("@RUNS@", &runs.display().to_string()),
    )
    .unwrap();
    let doc = prepare(env, &repo, &["-n", "5"]);
    let ws = roots(&doc);
    write(&ws[0].join("a.txt"), "a from task 1\n");
    std::fs::remove_file(ws[1].join("gone.txt")).unwrap();
    std::fs::set_permissions(
        ws[2].join("tool.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("a.txt", ws[3].join("ln")).unwrap();
    std::fs::remove_file(ws[4].join("dir/x.txt")).unwrap();
    write(&ws[4].join("dir/sub/y.txt"), "y\n");
    for (i, w) in ws.iter().enumerate() {
        let body = if i == 2 { "BAD\n" } else { "ok\n" };
        write(&w.join(format!("t{}.txt", i + 1)), body);
    }
    let cmd = format!("sh {}", script.display());
    let out = env
        .delegate(&repo, ["apply", "--json", "--verify", &cmd])
        .expect(1)
        .json();
    let lines: Vec<String> = std::fs::read_to_string(&runs)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let mut state = String::new();
    for name in [
        "a.txt",
        "gone.txt",
        "ln",
        "dir/x.txt",
        "dir/sub/y.txt",
        "t1.txt",
        "t3.txt",
    ] {
        let p = repo.join(name);
        state.push_str(&format!(
            "{name}: {:?}\n",
            std::fs::read_link(&p)
                .map(|l| l.display().to_string())
                .or_else(|_| std::fs::read_to_string(&p))
                .ok()
        ));
    }
    (out, lines, state, ws[0].parent().unwrap().to_path_buf())
}

#[test]
fn verification_workspaces_are_snapshots_of_a_pristine_template() {
    let Some(env) = btrfs_env("verification_workspaces_are_snapshots_of_a_pristine_template")
    else {
        return;
    };
    let (snap, snap_runs, snap_state, batch_dir) = verify_five(&env, false);
    let (plain, plain_runs, plain_state, _) = verify_five(&env, true);
    // Every run passed the checks inside its workspace (else the culprit
    // search would have rejected others or failed without tasks).
    let statuses = |doc: &serde_json::Value| -> Vec<(String, String)> {
        task_fates(doc)
            .into_iter()
            .map(|(n, s, _)| (n, s))
            .collect()
    };
    assert_eq!(statuses(&snap), statuses(&plain), "{snap:#}\n{plain:#}");
    assert_eq!(
        statuses(&snap)
            .iter()
            .filter(|(_, s)| s == "rejected")
            .count(),
        1,
        "{snap:#}"
    );
    assert_eq!(snap_state, plain_state);
    assert_has(&snap_state, "a.txt: Some(\"a from task 1\\n\")");
    assert_has(&snap_state, "gone.txt: None");
    assert_has(&snap_state, "ln: Some(\"a.txt\")");
    assert_has(&snap_state, "dir/x.txt: None");
    assert_has(&snap_state, "t3.txt: None");
    // The same runs, with the same sets; on btrfs each in a subvolume
    // (a snapshot of the template), never so without.
    let sets = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .collect()
    };
    assert!(snap_runs.len() >= 3, "{snap_runs:?}");
    assert_eq!(sets(&snap_runs), sets(&plain_runs));
    for l in &snap_runs {
        assert!(l.starts_with("256 "), "not a subvolume: {l}");
    }
    for l in &plain_runs {
        assert!(!l.starts_with("256 "), "a subvolume: {l}");
    }
    // Nothing of the verification is left: no folder, no registration, no
    // subvolume (the trash's deleter removes what was moved there).
    let base = batch_dir.parent().unwrap();
    if base.join(".trash").exists() {
        wait_gone(&base.join(".trash"));
    }
    for e in std::fs::read_dir(&batch_dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        assert!(!name.starts_with(".verify"), "left: {name}");
    }
    let repo = env.path().join("snap");
    let wt = env.git(&repo, ["worktree", "list"]);
    assert!(!wt.contains(".verify"), "{wt}");
    let regs = std::fs::read_dir(repo.join(".git/worktrees")).unwrap();
    for e in regs.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        assert!(!name.contains("--verify"), "registration left: {name}");
    }
}

/// An apply killed right after a verification workspace was snapshotted
/// (its `.git` still the template's) leaves the template and that
/// snapshot; the next verification of the batch removes both and lands.
#[test]
fn a_verification_killed_between_snapshot_and_git_file_leaves_nothing_behind() {
    let Some(env) =
        btrfs_env("a_verification_killed_between_snapshot_and_git_file_leaves_nothing_behind")
    else {
        return;
    };
    let repo = env.repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    write(&ws[0].join("one.txt"), "one\n");
    write(&ws[1].join("two.txt"), "two\n");
    let mut apply = env.delegate_cmd(&repo);
    apply
        .args(["apply", "--verify", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = paused_at(&env, apply, "verify-snapshotted");
    child.kill().unwrap();
    child.wait().unwrap();
    let batch_dir = ws[0].parent().unwrap().to_path_buf();
    let template = batch_dir.join(".verify-template");
    assert!(is_subvolume(&template), "no template");
    let half = batch_dir.join(".verify-1");
    assert!(is_subvolume(&half), "no snapshot");
    // Its `.git` is still the template's.
    assert_eq!(
        read_bytes(&half.join(".git")),
        read_bytes(&template.join(".git"))
    );
    env.delegate(&repo, ["apply", "--verify", "true"]).expect(0);
    assert_eq!(read(&repo.join("one.txt")), "one\n");
    assert_eq!(read(&repo.join("two.txt")), "two\n");
    for p in [&template, &half] {
        assert!(p.symlink_metadata().is_err(), "{} is left", p.display());
    }
    let wt = env.git(&repo, ["worktree", "list"]);
    assert_eq!(wt.lines().count(), 1, "{wt}");
    let base = batch_dir.parent().unwrap();
    if base.join(".trash").exists() {
        wait_gone(&base.join(".trash"));
    }
    if batch_dir.exists() {
        let left: Vec<_> = std::fs::read_dir(&batch_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A verification workspace whose tree differs from the template's in a
/// `.gitattributes` is checked out instead (unchanged files may need
/// other bytes there), with the carried ignored files; the others are
/// snapshots. CMD checks every file against its commit.
#[test]
fn a_verification_workspace_with_other_attributes_is_checked_out() {
    let Some(env) = btrfs_env("a_verification_workspace_with_other_attributes_is_checked_out")
    else {
        return;
    };
    let repo = env.repo("proj");
    commit_files(
        &env,
        &repo,
        &[("a.txt", "a\nb\n"), (".gitignore", "node_modules/\n")],
        "a",
    );
    write(&repo.join("node_modules/dep.js"), "dep\n");
    std::fs::write(
        repo.join(".git/delegate.toml"),
        "[workspace]\ncopy-ignored = [\"node_modules/\"]\n",
    )
    .unwrap();
    let runs = env.path().join("runs.txt");
    let script = env.path().join("check.sh");
    std::fs::write(
        &script,
        format!(
            r#"cd "$(git rev-parse --show-toplevel)" || exit 9
git ls-files -s | while read -r mode oid stage path; do
  [ "$(git hash-object "$path")" = "$oid" ] || {{ echo "file $path"; exit 12; }}
done || exit 12
[ -z "$(git status --porcelain)" ] || exit 10
[ -f node_modules/dep.js ] || exit 14
echo "$(stat -c %i .) [$GIT_DELEGATE_TASKS]" >> "{}"
if cat t*.txt 2>/dev/null | grep -q BAD; then exit 4; fi
exit 0
"#,
            runs.display()
        ),
    )
    .unwrap();
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws = roots(&doc);
    // Task 1 changes how every text file is checked out.
    write(&ws[0].join(".gitattributes"), "*.txt eol=crlf\n");
    write(&ws[0].join("t1.txt"), "ok\n");
    write(&ws[1].join("t2.txt"), "BAD\n");
    let cmd = format!("sh {}", script.display());
    let out = env
        .delegate(&repo, ["apply", "--json", "--verify", &cmd])
        .expect(1)
        .json();
    let lines = read(&runs);
    let names = field_strs(&doc["tasks"], "name");
    let all = format!("[{} {}]", names[0], names[1]);
    let none = "[]".to_string();
    let first = format!("[{}]", names[0]);
    let mut saw = Vec::new();
    for l in lines.lines() {
        let (ino, set) = l.split_once(' ').unwrap();
        // Only the set without task 1 has other attributes than the
        // template (made at the first set, all tasks).
        assert_eq!(ino == "256", set != none, "{lines}");
        saw.push(set.to_string());
    }
    assert!(
        saw.contains(&all) && saw.contains(&none) && saw.contains(&first),
        "{lines}"
    );
    assert!(out.to_string().contains("rejected"), "{out:#}");
    assert_eq!(read(&repo.join("t1.txt")), "ok\r\n");
    assert!(!repo.join("t2.txt").exists());
}
