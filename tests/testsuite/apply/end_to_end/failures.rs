//! What fails and what is left: a workspace missing, replaced or not
//! snapshotted, a deleted baseline ref, a failed or rolled-back
//! write-back, folders that refuse writing, an ignored symlink in the way,
//! a failing smudge filter, control characters in what is printed, and
//! workspaces an interrupted clean-up left.

use super::*;
use crate::common::assert_has;
use crate::common::files::read;
use crate::common::fixtures::commit_files;
use crate::common::killed_at;
use crate::common::with_fault;

#[test]
fn a_missing_or_replaced_workspace_fails_and_is_never_deleted() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[2].join("c.txt"), "c\n").unwrap();
    std::fs::remove_dir_all(&ws[0]).unwrap();
    std::fs::remove_dir_all(&ws[1]).unwrap();
    std::fs::create_dir(&ws[1]).unwrap();
    std::fs::write(ws[1].join("someone-elses.txt"), "precious\n").unwrap();

    let out = apply(&env, &repo, &[], 1);
    for name in ["1", "2"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed");
        assert_eq!(t["reason"], "workspace_missing");
    }
    assert_eq!(task(&out, "3")["status"], "applied");
    assert_eq!(read_lossy(&ws[1].join("someone-elses.txt")), "precious\n");
    let out = apply(&env, &repo, &["--discard", "1", "--discard", "2"], 0);
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert_eq!(read_lossy(&ws[1].join("someone-elses.txt")), "precious\n");
    assert_eq!(out["batch_open"], false);
}

#[test]
fn a_workspace_that_cannot_be_snapshotted_fails_and_keeps_what_was_recorded() {
    let env = Env::new();
    let repo = repo_with_lines(&env);
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("f.txt"), lines_with(10, 1, "task")).unwrap();
    std::fs::write(repo.join("f.txt"), lines_with(10, 1, "user")).unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["reason"], "source_changed");
    let r = t["proposal_ref"].as_str().unwrap().to_string();
    let patch = t["patch"].as_str().unwrap().to_string();
    // Break the workspace's HEAD: the next snapshot cannot be taken (a
    // broken index would be rebuilt: design §3.2 step 1).
    let id = format!("delegate-{}-1", &doc["batch"].as_str().unwrap()[..8]);
    std::fs::write(repo.join(".git/worktrees").join(id).join("HEAD"), "garbage").unwrap();
    let out = apply(&env, &repo, &[], 1);
    let t = task(&out, "1");
    assert_eq!(t["status"], "failed");
    assert_eq!(t["reason"], "snapshot_failed");
    assert_eq!(t["proposal_ref"], r.as_str());
    assert_eq!(t["patch"], patch.as_str());
    assert!(env.private_refs(&repo).contains(&r));
    assert!(Path::new(&patch).is_file());
    assert_eq!(read_lossy(&repo.join("f.txt")), lines_with(10, 1, "user"));
}

#[test]
fn a_deleted_baseline_ref_is_exit_3_and_changes_nothing() {
    let (env, repo) = Env::with_repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    let r = doc["baseline"]["ref"].as_str().unwrap();
    env.git(&repo, ["update-ref", "-d", r]);
    let err = env.delegate(&repo, ["apply", "--json"]).expect(3).json();
    assert_eq!(err["error"]["code"], "delegate::baseline_ref_missing");
    assert!(!repo.join("a.txt").exists());
    assert!(ws[0].join("a.txt").exists());
}

#[test]
fn a_failed_write_back_fails_every_task_it_was_writing_and_keeps_the_proposals() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::create_dir(repo.join("locked")).unwrap();
    std::fs::write(repo.join("locked/old.txt"), "old\n").unwrap();
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("ok.txt"), "ok\n").unwrap();
    std::fs::write(ws[1].join("locked/new.txt"), "new\n").unwrap();
    let before = digest(&repo, true);
    // The second rename of the write-back fails (test-only fault injection):
    // a failure the check before writing cannot foresee (a folder that
    // refuses writing is one it does: see
    // a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there).
    let out = with_fault(
        env.delegate_cmd(&repo).args(["apply", "--json"]),
        "fail-rename:2",
    );
    let out = crate::common::Run::from(out).expect(1).json();
    for name in ["1", "2"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{t:#}");
        assert_eq!(t["reason"], "write_failed");
        assert!(t["proposal_ref"].is_string() && t["patch"].is_string());
        assert_eq!(strings(&t["applied_paths"]), Vec::<String>::new());
    }
    assert_eq!(task(&out, "3")["status"], "no_changes");
    assert_eq!(strings(&out["applied_paths"]), Vec::<String>::new());
    assert!(
        digest(&repo, true) == before,
        "a failed write-back left changes"
    );
    assert!(ws[0].exists() && ws[1].exists());
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "2")["status"], "applied");
    assert_eq!(read_lossy(&repo.join("locked/new.txt")), "new\n");
}

#[test]
fn workspaces_left_by_an_interrupted_clean_up_are_removed_later_kept_ones_are_not() {
    let (env, repo) = Env::with_repo("proj");
    let (doc, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[2].join("c.txt"), "c\n").unwrap();
    let out = apply(&env, &repo, &["--only", "3", "--keep"], 0);
    assert_eq!(task(&out, "3")["status"], "applied");
    // As if an apply had recorded task 1 as applied and then died before
    // removing its workspace.
    let toml = repo
        .join(".git/delegate/batches")
        .join(doc["batch"].as_str().unwrap())
        .join("batch.toml");
    let text = read(&toml);
    std::fs::write(
        &toml,
        text.replacen("state = \"open\"", "state = \"applied\"", 1),
    )
    .unwrap();
    assert!(ws[0].exists());
    let out = apply(&env, &repo, &["--discard", "2"], 0);
    // Task 1 is listed applied, by that earlier apply (design §7 "What
    // recovery finishes"): nothing written for it now.
    assert_eq!(out["tasks"].as_array().unwrap().len(), 2, "{out:#}");
    assert_eq!(task(&out, "1")["status"], "applied");
    assert_eq!(task(&out, "1")["applied_paths"], serde_json::json!([]));
    assert!(task(&out, "1")["message"].is_string(), "{out:#}");
    assert_eq!(task(&out, "2")["status"], "discarded");
    assert_eq!(out["batch_open"], false);
    assert!(!ws[0].exists(), "the left-over workspace is still there");
    assert!(!ws[1].exists());
    assert!(
        ws[2].join("c.txt").exists(),
        "the --keep workspace was removed"
    );
    assert!(env.private_refs(&repo).is_empty());
}

/// A folder that refuses writing even to root, undone on drop: `chattr +i`
/// (ext4, xfs), else a read-only bind mount (root), else, for a user that
/// is not root, `chmod 555`. `None` after saying SKIPPED (a failure under
/// `CI=true`) when none of them works here.
struct Unwritable {
    dir: PathBuf,
    how: &'static str,
}

impl Unwritable {
    fn new(test: &str, dir: &Path) -> Option<Unwritable> {
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(cmd)
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let d = dir.as_os_str();
        let refuses = || {
            let refused = std::fs::write(dir.join(".probe"), "x").is_err();
            let _ = std::fs::remove_file(dir.join(".probe"));
            refused
        };
        let is_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let attempts: [(&'static str, &dyn Fn() -> bool); 3] = [
            ("chmod", &|| {
                !is_root
                    && std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).is_ok()
            }),
            ("chattr", &|| is_root && run("chattr", &["+i".as_ref(), d])),
            ("mount", &|| {
                is_root
                    && run("mount", &["--bind".as_ref(), d, d])
                    && (run("mount", &["-o".as_ref(), "remount,bind,ro".as_ref(), d])
                        || !run("umount", &[d]))
            }),
        ];
        for (how, attempt) in attempts {
            if attempt() {
                let u = Unwritable {
                    dir: dir.to_path_buf(),
                    how,
                };
                if refuses() {
                    return Some(u);
                }
            }
        }
        crate::common::mounts::skip(
            test,
            "neither chmod 555 (not root), chattr +i nor a read-only bind mount stops writing here",
        );
        None
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        let d = self.dir.as_os_str();
        let _ = match self.how {
            "chattr" => std::process::Command::new("chattr")
                .args(["-i".as_ref(), d])
                .status(),
            "mount" => std::process::Command::new("umount").arg(d).status(),
            _ => std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755))
                .map(|_| std::process::ExitStatus::default()),
        };
    }
}

/// A source with the folders `locked` (`a.txt`) and `open` (`b.txt`) and
/// three tasks: task 1 edits `locked/a.txt`, task 2 `open/b.txt`, task 3
/// nothing yet. The env, the source and the task roots.
fn two_folders() -> (Env, PathBuf, Vec<PathBuf>) {
    let (env, repo) = Env::with_repo("proj");
    commit_files(
        &env,
        &repo,
        &[("locked/a.txt", "a\n"), ("open/b.txt", "b\n")],
        "folders",
    );
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("locked/a.txt"), "a, task 1\n").unwrap();
    std::fs::write(ws[1].join("open/b.txt"), "b, task 2\n").unwrap();
    (env, repo, ws)
}

#[test]
fn a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there() {
    let (env, repo, ws) = two_folders();
    std::fs::write(ws[2].join("locked/new.txt"), "new, task 3\n").unwrap();
    std::fs::write(ws[2].join("top.txt"), "top, task 3\n").unwrap();
    let Some(guard) = Unwritable::new(
        "a_folder_that_refuses_writing_fails_only_the_tasks_that_write_there",
        &repo.join("locked"),
    ) else {
        return;
    };
    let out = apply(&env, &repo, &[], 1);
    drop(guard);
    for name in ["1", "3"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{out:#}");
        assert_eq!(t["reason"], "write_failed", "{out:#}");
        assert_eq!(t["conflicts"][0]["path"], "locked", "{out:#}");
        let reason = t["conflicts"][0]["reason"].as_str().unwrap();
        assert!(reason.starts_with("folder not writable: "), "{reason}");
        assert!(
            reason.contains("os error 1)")
                || reason.contains("os error 13)")
                || reason.contains("os error 30)"),
            "{reason}"
        );
        let message = t["message"].as_str().unwrap();
        assert_has(message, "the folder locked");
        assert!(t["proposal_ref"].is_string());
    }
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("open/b.txt")), "b, task 2\n");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a\n");
    assert!(!repo.join("locked/new.txt").exists());
    assert!(!repo.join("top.txt").exists());
    // Writable again: the two tasks apply.
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a, task 1\n");
    assert_eq!(read_lossy(&repo.join("locked/new.txt")), "new, task 3\n");
}

#[test]
fn an_ignored_symlink_in_the_way_is_named_and_never_written_through() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[(".gitignore", "dir\n")], "ignore");
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "2"]);
    std::fs::create_dir(ws[0].join("dir")).unwrap();
    std::fs::write(ws[0].join("dir/f"), "task\n").unwrap();
    env.git(&ws[0], ["add", "-f", "dir/f"]);
    std::fs::write(ws[1].join("ok.txt"), "ok\n").unwrap();
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, repo.join("dir")).unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let t = task(&out, "1");
    assert_eq!(t["status"], "conflict", "{out:#}");
    assert_eq!(t["reason"], "would_overwrite_untracked", "{out:#}");
    assert_eq!(
        t["conflicts"],
        serde_json::json!([{"path": "dir", "reason": "ignored symlink in the way"}]),
        "{out:#}"
    );
    assert_has(&run.stderr, "dir (ignored symlink in the way)");
    assert!(!run.stderr.contains("dir/f"), "{}", run.stderr);
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(repo.join("dir"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_failing_smudge_filter_in_write_back_is_named_and_rolled_back() {
    let env = Env::new();
    let (repo, smudge) = crate::common::fixtures::filtered_repo(&env, "proj", "cat\n");
    let (_, ws) = prepare_roots(&env, &repo, &[]);
    std::fs::write(ws[0].join("a.dat"), "data, task\n").unwrap();
    std::fs::write(&smudge, "exit 5\n").unwrap();
    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let t = task(&out, "1");
    assert_eq!(t["status"], "failed", "{out:#}");
    assert_eq!(t["reason"], "write_failed", "{out:#}");
    let message = t["message"].as_str().unwrap();
    assert_has(message, "smudge filter");
    assert_has(message, "a.dat");
    assert_has(message, "exit status: 5");
    assert_eq!(read_lossy(&repo.join("a.dat")), "data\n");
}

#[test]
fn control_characters_in_the_source_path_are_escaped_for_the_terminal() {
    let env = Env::new();
    let dir = env.repo_at(
        &env.path().join(os(b"bad\x1b[31mname\nx")),
        &[("README", "hello\n")],
    );
    let run = env.delegate(&dir, ["prepare"]).expect(0);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(run.stdout.contains("bad_[31mname_x-"), "{:?}", run.stdout);
    let (_, ws) = prepare_roots(&env, &dir, &["--label", "b"]);
    // The workspace folder name has no control characters.
    let base = ws[0].parent().unwrap().parent().unwrap();
    let name = base.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("bad_[31mname_x-"), "{name:?}");
    std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
    let run = env.delegate(&dir, ["apply", "b"]).expect(0);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(!run.stdout.contains("name\nx"), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("bad\\e[31mname\\nx"),
        "{:?}",
        run.stdout
    );
    // JSON keeps the exact string.
    let doc = env.delegate(&dir, ["status", "--json"]).expect(0).json();
    let source = doc["batches"][0]["source"].as_str().unwrap_or_default();
    assert!(
        source.is_empty() || source.ends_with("bad\x1b[31mname\nx"),
        "{doc:#}"
    );
    // An error that names the path is escaped too.
    std::fs::write(dir.join(".git/delegate.toml"), "[workspace\n").unwrap();
    let run = env.delegate(&dir, ["status"]).expect(2);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
    assert!(
        run.stderr.contains("bad\\e[31mname\\nx"),
        "{:?}",
        run.stderr
    );
}

#[test]
fn a_top_folder_that_refuses_writing_fails_only_the_tasks_that_write_in_it() {
    let env = Env::new();
    // The git dir lives apart, so a read-only mount of the working tree
    // (the fallback where chattr +i does not work) leaves it writable.
    let repo = env.path().join("proj");
    std::fs::create_dir(&repo).unwrap();
    let git_dir = env.path().join("proj.git");
    env.git(
        &repo,
        [
            "init".as_ref(),
            "-q".as_ref(),
            "-b".as_ref(),
            "main".as_ref(),
            "--separate-git-dir".as_ref(),
            git_dir.as_os_str(),
        ],
    );
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/s.txt"), "s\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    let (_, ws) = prepare_roots(&env, &repo, &["-n", "3"]);
    std::fs::write(ws[0].join("README"), "task 1\n").unwrap();
    std::fs::write(ws[1].join("sub/s.txt"), "s, task 2\n").unwrap();
    std::fs::create_dir(ws[2].join("newdir")).unwrap();
    std::fs::write(ws[2].join("newdir/n.txt"), "n\n").unwrap();
    let test = "a_top_folder_that_refuses_writing_fails_only_the_tasks_that_write_in_it";
    let Some(guard) = Unwritable::new(test, &repo) else {
        return;
    };
    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    drop(guard);
    let out = run.json();
    for name in ["1", "3"] {
        let t = task(&out, name);
        assert_eq!(t["status"], "failed", "{out:#}");
        assert_eq!(t["reason"], "write_failed", "{out:#}");
        assert_eq!(t["conflicts"][0]["path"], "", "{out:#}");
    }
    assert!(
        run.stderr.contains("the top folder (folder not writable"),
        "{}",
        run.stderr
    );
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("sub/s.txt")), "s, task 2\n");
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");
    assert!(!repo.join("newdir").exists());
}

/// A folder that refuses writing (task 1) and a write-back of the other
/// tasks that fails and is rolled back: every task fails, nothing changes,
/// no journal is left; the next apply writes only the other tasks, and
/// task 1 applies once the folder is writable.
#[test]
fn an_unwritable_folder_and_a_rolled_back_write_leave_a_clean_journal() {
    let (env, repo, ws) = two_folders();
    std::fs::write(ws[2].join("top.txt"), "top, task 3\n").unwrap();
    let journals = |repo: &Path| -> usize {
        let dir = repo.join(".git/delegate/batches");
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().join("writeback.journal").exists())
                    .count()
            })
            .unwrap_or(0)
    };
    let Some(guard) = Unwritable::new(
        "an_unwritable_folder_and_a_rolled_back_write_leave_a_clean_journal",
        &repo.join("locked"),
    ) else {
        return;
    };
    let before = digest(&repo, true);
    let run = with_fault(
        env.delegate_cmd(&repo).args(["apply", "--json"]),
        "fail-rename:2",
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(run.status.code(), Some(1), "{out:#}");
    for name in ["1", "2", "3"] {
        assert_eq!(task(&out, name)["status"], "failed", "{out:#}");
        assert_eq!(task(&out, name)["reason"], "write_failed", "{out:#}");
    }
    assert_eq!(task(&out, "1")["conflicts"][0]["path"], "locked", "{out:#}");
    assert_eq!(digest(&repo, true), before);
    assert_eq!(journals(&repo), 0);
    env.delegate(&repo, ["status", "--check"]).expect(0);

    let out = apply(&env, &repo, &[], 1);
    assert_eq!(task(&out, "1")["status"], "failed", "{out:#}");
    assert_eq!(task(&out, "2")["status"], "applied", "{out:#}");
    assert_eq!(task(&out, "3")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("open/b.txt")), "b, task 2\n");
    assert_eq!(read_lossy(&repo.join("top.txt")), "top, task 3\n");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a\n");
    assert_eq!(journals(&repo), 0);
    drop(guard);
    let out = apply(&env, &repo, &[], 0);
    assert_eq!(task(&out, "1")["status"], "applied", "{out:#}");
    assert_eq!(read_lossy(&repo.join("locked/a.txt")), "a, task 1\n");
    assert_eq!(journals(&repo), 0);
    env.delegate(&repo, ["status", "--check"]).expect(0);
}

/// The messages of the interrupted write-back (status --check, apply
/// --dry-run, rollback_failed) and of a moved source are escaped for the
/// terminal when the source path and a file name hold control characters.
#[test]
fn write_back_and_moved_source_messages_escape_control_characters() {
    let env = Env::new();
    let dir = env.path().join(os(b"src\x1b[31mred"));
    std::fs::create_dir(&dir).unwrap();
    env.git(&dir, ["init", "-q", "-b", "main"]);
    let bad = os(b"f\x1b[2Jname\x07");
    for i in 1..=2 {
        std::fs::write(dir.join(format!("f{i}")), format!("original {i}\n")).unwrap();
    }
    std::fs::write(dir.join(bad), "original bad\n").unwrap();
    env.git(&dir, ["add", "-A"]);
    env.git(&dir, ["commit", "-q", "-m", "init"]);
    let (_, ws) = prepare_roots(&env, &dir, &[]);
    for i in 1..=2 {
        std::fs::write(ws[0].join(format!("f{i}")), format!("task {i}\n")).unwrap();
    }
    std::fs::write(ws[0].join(bad), "task bad\n").unwrap();
    // Path order: "f\e..." (1 aside, 2 in place), f1, f2; killed after f1 is in.
    killed_at(env.delegate_cmd(&dir).args(["apply"]), "after-rename:4");
    std::fs::write(dir.join(bad), "USER\n").unwrap();
    let clean = |run: &crate::common::Run| {
        for s in [&run.stdout, &run.stderr] {
            assert!(
                !s.contains('\x1b') && !s.contains('\x07'),
                "{:?}\n{:?}",
                run.stdout,
                run.stderr
            );
        }
    };
    let run = env.delegate(&dir, ["status", "--check"]).expect(1);
    clean(&run);
    let run = env.delegate(&dir, ["apply", "--dry-run"]).expect(3);
    clean(&run);
    let run = env.delegate(&dir, ["apply"]).expect(3);
    assert_has(&run.stderr, "rollback_failed");
    clean(&run);
    let run = env.delegate(&dir, ["status", "--check"]).expect(1);
    clean(&run);
    let run = env.delegate(&dir, ["gc"]).expect(3);
    clean(&run);
    // Resolved (the user keeps theirs), then the source moves.
    let doc = env.delegate(&dir, ["apply", "--json"]).expect(3).json();
    let kept = doc["error"]["paths"][0]["kept"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(kept).unwrap();
    env.delegate(&dir, ["gc"]).expect(0);
    let moved = env.path().join(os(b"moved\x1b[32mgreen"));
    std::fs::rename(&dir, &moved).unwrap();
    let run = env.delegate(&moved, ["apply"]).expect(3);
    assert_has(&run.stderr, "source_moved");
    clean(&run);
}
