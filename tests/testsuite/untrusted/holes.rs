//! The smaller holes of design §3.18 ("Leftovers" and the hints): no
//! temporary file outlives a failed command (a full disk included), old
//! ones are reported by `status --check` and removed by gc; running out of
//! inodes is named as such; the help for refused object and common dirs,
//! a dirty or moved nested submodule, and a remote task whose proposal
//! cannot be applied works when followed literally; a config file that is
//! not UTF-8 (or holds a NUL) is pointed at by file, line and column.
//!
//! The full-disk and inode cases need the small filesystems
//! `scripts/small-fs` mounts (as root; `.ci/run` does it), named in
//! `GIT_DELEGATE_SMALL_FS_DIR` and `GIT_DELEGATE_FEW_INODES_DIR`. Without
//! them these tests say SKIPPED, and fail under `CI=true`. They fill that
//! filesystem, so they run one at a time (`common::mounts::Small` holds the
//! lock every test that fills a small filesystem takes), each in its own
//! folder there, removed at the end.
use crate::common::files::read_bytes;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::noise_files;
use crate::common::fixtures::{
    commit_files, common_dir_as_printed, error_parts, prepare, set_workspace_root,
};
use crate::common::mounts::Small;
use crate::common::{printed_command, Env};

/// Every file below `dir` (folders walked, symlinks not followed).
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(_) => out.push(p),
                Err(_) => {}
            }
        }
    }
    out.sort();
    out
}

/// The files below `dir` whose name says they are temporary.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    files_below(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.contains(".tmp") || name.ends_with(".new") || name.starts_with(".gd-")
        })
        .collect()
}

fn source_on(env: &Env, dir: &Path) -> PathBuf {
    env.repo_at(&dir.join("src"), &[("a.txt", "one\n")])
}

// ---------------------------------------------------------------------------
// a. No temporary file outlives its command.

/// An apply whose task does not fit on the disk that holds the source and
/// its state folder fails (the work kept), and leaves no temporary file in
/// the state folder or the object store: freeing space and running it
/// again (as the help says) then works. (An applied task writes no patch,
/// design §3.2, so what runs out of space is the write-back, which rolls
/// back.)
#[test]
fn a_failed_apply_on_a_full_disk_leaves_no_temp_file_in_the_state_folder() {
    let Some(small) = Small::new(
        "a_failed_apply_on_a_full_disk_leaves_no_temp_file",
        "GIT_DELEGATE_SMALL_FS_DIR",
        "scripts/small-fs",
    ) else {
        return;
    };
    let env = Env::new();
    let repo = source_on(&env, small.path());
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    // Incompressible: its blob (1.5 MiB) fits in what is left, the file
    // written into the source (as much again) does not after it.
    noise_files(&ws, "big", 1, 1536 << 10);
    std::fs::write(ws.join("a.txt"), "one, edited\n").unwrap();
    small.fill(2300 << 10);
    let common = common_dir_as_printed(&env, &repo);
    let state = common.join("delegate");
    assert_eq!(temp_files(&state), Vec::<PathBuf>::new());

    let run = env.delegate(&repo, ["apply", "--json"]);
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let out = run.json();
    let t = &out["tasks"][0];
    assert_eq!(t["status"], "failed", "{out:#}");
    let message = t["message"].as_str().unwrap_or_default();
    assert_has(message, "no space left on device");
    assert!(
        message.contains("write-back failed") && message.contains("rolled back"),
        "the write-back did not fit and was rolled back: {message}"
    );
    assert_eq!(read_bytes(&repo.join("a.txt")), b"one\n");
    assert!(!repo.join("big0").exists());
    assert_eq!(temp_files(&state), Vec::<PathBuf>::new(), "{out:#}");
    assert_eq!(temp_files(&common.join("objects")), Vec::<PathBuf>::new());
    // The work is kept, and with space again the same apply lands it.
    assert!(ws.join("big0").exists());
    small.unfill();
    env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert_eq!(read_bytes(&repo.join("a.txt")), b"one, edited\n");
    assert_eq!(temp_files(&state), Vec::<PathBuf>::new());
}

/// Plant `name` in `dir` with `len` bytes, last written `age` ago.
fn plant(dir: &Path, name: &str, len: usize, age: std::time::Duration) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, vec![b'x'; len]).unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(std::time::SystemTime::now() - age).unwrap();
    p
}

fn names(doc: &serde_json::Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {doc:#}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// Temporary files a killed command left in the state folder: `status
/// --check` names each one older than an hour (exit 1) and gc removes
/// exactly those (`temp_files_removed`); younger ones (a command may still
/// be writing them) and files that are not git-delegate's stay.
#[test]
fn old_temp_files_are_reported_by_status_check_and_removed_by_gc() {
    let (env, repo) = Env::with_repo("src");
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let id = id(&doc);
    let state = common_dir_as_printed(&env, &repo).join("delegate");
    let batch_dir = state.join("batches").join(&id);
    let hours = |h: u64| std::time::Duration::from_secs(h * 3600);
    let old = vec![
        plant(&batch_dir, ".1.patch.tmp-4242", 3 << 20, hours(2)),
        plant(&batch_dir, "source-index.4242-17.tmp", 100, hours(30)),
        plant(&state, ".lock.tmp-4242", 10, hours(2)),
    ];
    let young = plant(
        &batch_dir,
        ".batch.toml.tmp-4243",
        10,
        std::time::Duration::ZERO,
    );
    let not_ours = [
        plant(&batch_dir, "notes.tmp-4242", 10, hours(2)),
        plant(&batch_dir, ".x.tmp-abc", 10, hours(2)),
    ];
    let shown = |paths: &[PathBuf]| {
        let mut v: Vec<String> = paths
            .iter()
            .map(|p| p.to_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };

    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    for p in &old {
        assert_has(&run.stdout, p.to_str().unwrap());
    }
    assert_has(&run.stdout, "git delegate gc");
    assert!(
        !run.stdout.contains(young.to_str().unwrap()),
        "{}",
        run.stdout
    );
    for p in &not_ours {
        assert!(!run.stdout.contains(p.to_str().unwrap()), "{}", run.stdout);
    }
    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    let problems = st["problems"].as_array().unwrap();
    let temp: Vec<&serde_json::Value> = problems
        .iter()
        .filter(|p| p["kind"] == "temp_file")
        .collect();
    assert_eq!(temp.len(), 3, "{st:#}");
    let mut paths: Vec<String> = temp
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    assert_eq!(paths, shown(&old), "{st:#}");
    let patch = temp
        .iter()
        .find(|p| p["path"].as_str().unwrap().ends_with(".1.patch.tmp-4242"))
        .unwrap();
    assert_eq!(patch["batch"], id.as_str());
    assert_eq!(patch["bytes"], 3 << 20);
    let lock = temp
        .iter()
        .find(|p| p["path"].as_str().unwrap().ends_with(".lock.tmp-4242"))
        .unwrap();
    assert_eq!(lock["batch"], "");

    // A dry run removes nothing and says what it would.
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(names(&dry, "temp_files_removed"), shown(&old));
    assert!(old.iter().all(|p| p.exists()));

    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(names(&gc, "temp_files_removed"), shown(&old), "{gc:#}");
    assert!(gc["bytes_freed"].as_u64().unwrap() >= 3 << 20, "{gc:#}");
    assert_eq!(names(&gc, "batches"), Vec::<String>::new());
    for p in &old {
        assert!(!p.exists(), "{}", p.display());
    }
    assert!(young.exists());
    for p in &not_ours {
        assert!(p.exists(), "{}", p.display());
    }
    // The live batch is untouched; nothing is left to report.
    assert!(batch_dir.join("batch.toml").is_file());
    env.delegate(&repo, ["status", "--check"]).expect(0);
    let human = env.delegate(&repo, ["gc"]).expect(0);
    assert_has(&human.stdout, "Nothing to reclaim");
}

// ---------------------------------------------------------------------------
// b. Running out of inodes is named as such.

/// A workspace root whose filesystem has free blocks but no free inodes:
/// prepare says that (not "free space"), with what to do, and leaves
/// nothing made.
#[test]
fn prepare_onto_a_root_without_free_inodes_names_them() {
    let Some(small) = Small::few_inodes("prepare_onto_a_root_without_free_inodes") else {
        return;
    };
    let (env, repo) = Env::with_repo("src");
    for d in 0..10 {
        std::fs::create_dir(repo.join(format!("d{d}"))).unwrap();
        noise_files(&repo.join(format!("d{d}")), "f", 5, 100);
    }
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let root = small.path().join("root");
    set_workspace_root(&repo, &root);
    small.use_inodes(4);
    let mount = PathBuf::from(std::env::var_os("GIT_DELEGATE_FEW_INODES_DIR").unwrap());

    let run = env
        .delegate(&repo, ["prepare", "--json", "-n", "2"])
        .expect(3);
    let (code, message, help) = error_parts(&run);
    assert_eq!(code, "delegate::disk_full", "{}", run.stdout);
    let named = format!(
        "no free inodes on the filesystem mounted at {}",
        mount.display()
    );
    assert!(message.contains(&named), "{message}");
    assert_has(&message, "ENOSPC");
    assert!(!help.contains("free space"), "{help}");
    assert!(
        help.contains(&format!(
            "free inodes on the filesystem mounted at {}",
            mount.display()
        )),
        "{help}"
    );
    assert!(
        help.contains(&format!("df -i {}", mount.display())),
        "{help}"
    );
    assert_has(&help, "workspace.root");
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    // With inodes again (as the help says), the same prepare works.
    small.unfill();
    env.delegate(&repo, ["prepare", "--json", "-n", "2"])
        .expect(0);
}

/// An apply into a source whose filesystem has no free inodes left: the
/// task fails, rolled back, and the message names the inodes.
#[test]
fn apply_onto_a_source_without_free_inodes_names_them() {
    let Some(small) = Small::few_inodes("apply_onto_a_source_without_free_inodes") else {
        return;
    };
    let env = Env::new();
    let repo = source_on(&env, small.path());
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    std::fs::create_dir_all(ws.join("new/deeper")).unwrap();
    // One blob for all of them: the proposal's objects take few inodes,
    // its files many.
    for i in 0..100 {
        std::fs::write(ws.join(format!("new/deeper/f{i}")), "same\n").unwrap();
    }
    std::fs::write(ws.join("a.txt"), "one, edited\n").unwrap();
    // Room for the proposal's objects, its patch and the journal, not for
    // the files.
    small.use_inodes(40);
    let mount = PathBuf::from(std::env::var_os("GIT_DELEGATE_FEW_INODES_DIR").unwrap());

    let run = env.delegate(&repo, ["apply", "--json"]);
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let out = run.json();
    let (message, help) = match out["tasks"][0]["message"].as_str() {
        Some(m) => (m.to_string(), run.stderr.clone()),
        None => {
            let (code, m, h) = error_parts(&run);
            assert_eq!(code, "delegate::disk_full", "{out:#}");
            (m, h)
        }
    };
    let named = format!(
        "no free inodes on the filesystem mounted at {}",
        mount.display()
    );
    assert!(message.contains(&named), "{message}\n{out:#}");
    assert!(!help.contains("free space on"), "{help}");
    assert_has(&help, "free inodes on the filesystem");
    assert_eq!(read_bytes(&repo.join("a.txt")), b"one\n");
    assert!(!repo.join("new").exists());
    small.unfill();
    env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert_eq!(read_bytes(&repo.join("new/deeper/f3")), b"same\n");
}

// ---------------------------------------------------------------------------
// c. The refusals of object and common dirs: their help works as printed.

fn delegate_with(
    env: &Env,
    dir: &Path,
    vars: &[(&str, &Path)],
    args: &[&str],
) -> crate::common::Run {
    let mut cmd = env.delegate_cmd(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    crate::common::Run::from(cmd.args(args).output().expect("run git-delegate"))
}

/// The help's commands run as printed in a shell that still has `vars`
/// exported (as the user's has), then `then` in that shell.
fn follow(
    env: &Env,
    dir: &Path,
    vars: &[(&str, &Path)],
    cmds: &[String],
    then: &str,
) -> crate::common::Run {
    let q = |p: &Path| format!("'{}'", p.display());
    let mut script: Vec<String> = vars
        .iter()
        .map(|(k, v)| format!("export {k}={}", q(v)))
        .collect();
    script.extend(cmds.iter().cloned());
    script.push(then.to_string());
    env.sh(dir, &script.join(" && "))
}

/// `GIT_OBJECT_DIRECTORY` naming another folder: the help lists it as an
/// alternate and unsets the variable; followed as printed, the commit whose
/// objects only that folder holds is prepared.
#[test]
fn object_directory_refusal_help_works_as_printed() {
    let (env, repo) = Env::with_repo("src");
    let objects = repo.join(".git/objects");
    let elsewhere = env.path().join("objects-elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // A commit git writes into the other folder only.
    std::fs::write(repo.join("new.txt"), "only elsewhere\n").unwrap();
    let out = env
        .git_cmd(&repo)
        .env("GIT_OBJECT_DIRECTORY", &elsewhere)
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &objects)
        .args(["-c", "gc.auto=0", "add", "new.txt"])
        .output()
        .unwrap();
    assert!(out.status.success());
    crate::common::succeed(
        env.git_cmd(&repo)
            .env("GIT_OBJECT_DIRECTORY", &elsewhere)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &objects)
            .args(["commit", "-q", "-m", "elsewhere"]),
    );
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    let missing = env
        .git_cmd(&repo)
        .args(["cat-file", "-e", head.trim()])
        .output()
        .unwrap();
    assert!(
        !missing.status.success(),
        "the commit is only in the other folder"
    );

    let vars = [("GIT_OBJECT_DIRECTORY", elsewhere.as_path())];
    let run = delegate_with(&env, &repo, &vars, &["prepare", "--json"]).expect(3);
    let (code, message, help) = error_parts(&run);
    assert_eq!(code, "delegate::unsupported_environment", "{message}");
    assert!(!help.contains("or list that folder"), "{help}");
    let cmds = vec![
        printed_command(&help, "echo "),
        printed_command(&help, "unset GIT_OBJECT_DIRECTORY"),
    ];
    let run = follow(&env, &repo, &vars, &cmds, "git delegate prepare --json").expect(0);
    let ws = PathBuf::from(run.json()["tasks"][0]["root"].as_str().unwrap());
    assert_eq!(read_bytes(&ws.join("new.txt")), b"only elsewhere\n");
}

/// `GIT_COMMON_DIR` naming another folder: unset as the help says, the
/// command runs on this working tree's repository.
#[test]
fn common_dir_refusal_help_works_as_printed() {
    let (env, repo) = Env::with_repo("src");
    let nowhere = env.path().join("nowhere");
    let vars = [("GIT_COMMON_DIR", nowhere.as_path())];
    let run = delegate_with(&env, &repo, &vars, &["prepare", "--json"]).expect(3);
    let (code, message, help) = error_parts(&run);
    assert_eq!(code, "delegate::unsupported_environment", "{message}");
    assert!(!help.contains("alternates"), "{help}");
    let cmds = vec![printed_command(&help, "unset GIT_COMMON_DIR")];
    let run = follow(&env, &repo, &vars, &cmds, "git delegate prepare --json").expect(0);
    assert_eq!(
        run.json()["source"],
        repo.canonicalize().unwrap().to_str().unwrap()
    );
}

/// `GIT_ALTERNATE_OBJECT_DIRECTORIES` naming a folder the repository does
/// not list: listed as the help says, the same command (the variable still
/// exported) runs, and the workspaces read the objects there.
#[test]
fn alternate_object_directories_refusal_help_works_as_printed() {
    let (env, repo) = Env::with_repo("src");
    let other = env.repo("other");
    commit_files(&env, &other, &[("o.txt", "from the other store\n")], "o");
    let alt = other.join(".git/objects");
    let vars = [("GIT_ALTERNATE_OBJECT_DIRECTORIES", alt.as_path())];
    let run = delegate_with(&env, &repo, &vars, &["prepare", "--json"]).expect(3);
    let (code, _, help) = error_parts(&run);
    assert_eq!(code, "delegate::unsupported_environment");
    let cmds = vec![printed_command(&help, "echo ")];
    follow(&env, &repo, &vars, &cmds, "git delegate prepare --json").expect(0);
}

// ---------------------------------------------------------------------------
// f. A config file that is not UTF-8, or holds a NUL.

/// `.git/delegate.toml` with a byte that is not UTF-8, or a NUL: a config
/// error (exit 2) pointing at the file, line and column, as any other.
#[test]
fn a_config_file_with_invalid_utf8_or_a_nul_is_pointed_at_by_line_and_column() {
    let (env, repo) = Env::with_repo("src");
    let file = common_dir_as_printed(&env, &repo).join("delegate.toml");
    for (bytes, line, column, what) in [
        (
            &b"[lease]\nttl = \"2h\"\n# caf\xe9\n"[..],
            3,
            6,
            "not UTF-8 (0xe9)",
        ),
        (
            &b"[lease]\n\xff\xfettl = \"2h\"\n"[..],
            2,
            1,
            "not UTF-8 (0xff)",
        ),
        (&b"[lease]\nttl = \"2\x00h\"\n"[..], 2, 9, "a NUL byte"),
        (&b"\x00"[..], 1, 1, "a NUL byte"),
    ] {
        std::fs::write(&file, bytes).unwrap();
        for args in [&["status", "--json"][..], &["prepare", "--json"]] {
            let run = env.delegate(&repo, args).expect(2);
            let (code, message, help) = error_parts(&run);
            assert_eq!(code, "delegate::config", "{bytes:?}: {message}");
            assert_has(&message, file.to_str().unwrap());
            assert!(message.contains(what), "{bytes:?}: {message}");
            assert!(
                message.contains(&format!("line {line}, column {column}")),
                "{bytes:?}: {message}"
            );
            assert!(!help.contains("check that path"), "{help}");
            let located = format!("{}:{line}:{column}", file.display());
            assert!(run.stderr.contains(&located), "{bytes:?}:\n{}", run.stderr);
            assert!(!run.stderr.contains('\0'), "{:?}", run.stderr);
        }
    }
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
}
