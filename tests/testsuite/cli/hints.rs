//! Every hint the tool prints works when followed literally (design §3.16
//! "Hints and the tests that follow them"): each test makes the situation,
//! takes the printed command out of the real output (`printed_command`),
//! runs it exactly as printed (`sh -c`, in the repository, the binary on
//! PATH: `Env::sh`) and checks it did what the hint says.
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use crate::common::fixtures::paused_at;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::files::read_lossy;
use crate::common::fixtures::prepare_batch;
use crate::common::killed_at;
use crate::common::{printed_command, Env, Run};
use serde_json::Value;

fn batch_doc(env: &Env, repo: &Path, batch: &str) -> Option<Value> {
    let doc = env.delegate(repo, ["status", "--json"]).expect(0).json();
    doc["batches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batch"] == batch)
        .cloned()
}

fn lease_state(env: &Env, repo: &Path, batch: &str) -> String {
    batch_doc(env, repo, batch)
        .map(|b| b["lease"]["state"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Poll `status --json` until `batch`'s lease is `state`.
fn wait_lease(env: &Env, repo: &Path, batch: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while lease_state(env, repo, batch) != state {
        assert!(
            Instant::now() < deadline,
            "batch {batch} never became {state}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Both streams of a run, for hints wherever they are printed.
fn all(r: &Run) -> String {
    format!("{}{}", r.stdout, r.stderr)
}

/// A process that stays until killed, started in `dir`.
fn sleeper(dir: &Path) -> Child {
    Command::new("sleep")
        .arg("1000")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

// prepare: "When the tasks are done: git delegate apply ID".
/// `apply` in `dir` fails (exit 3) naming `git delegate drop`; that
/// command, run as printed, removes `batch` and its refs.
#[track_caller]
fn apply_then_its_drop_hint(env: &Env, dir: &Path, batch: &str) {
    let err = env.delegate(dir, ["apply"]).expect(3).stderr;
    env.sh(dir, &printed_command(&err, "git delegate drop"))
        .expect(0);
    assert!(batch_doc(env, dir, batch).is_none());
    assert!(env.private_refs(dir).is_empty());
}

#[test]
fn prepare_apply_hint_applies_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    let text = env.delegate(&repo, ["prepare", "-n", "1"]).expect(0).stdout;
    let cmd = printed_command(&text, "git delegate apply");
    let (ws, batch) = {
        let doc = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        let b = &doc["batches"][0];
        (task_root(b, 0), id(b))
    };
    std::fs::write(ws.join("README"), "done\n").unwrap();
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "done\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(env.private_refs(&repo).is_empty());
}

// status, stale by expiry: "`git delegate renew ID`" makes the lease live.
#[test]
fn status_renew_hint_for_an_expired_lease_renews_it() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, _) = prepare_batch(&env, &repo, &["-n", "1", "--ttl", "1s"]);
    wait_lease(&env, &repo, &batch, "expired");
    let text = env.delegate(&repo, ["status"]).expect(0).stdout;
    let cmd = printed_command(&text, "git delegate renew");
    assert!(!cmd.contains("--owner-pid"), "{cmd}");
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(lease_state(&env, &repo, &batch), "live");
}

// status, the pre-commit hook and renew's own refusal, for an orphaned
// lease: each prints `git delegate renew ID --owner-pid $$`, which adopts
// the batch from the shell it runs in (plain `renew` is refused).
#[test]
fn renew_hints_for_an_orphaned_lease_adopt_it() {
    let (env, repo) = Env::with_repo("proj");
    let mut owner = sleeper(&repo);
    let pid = owner.id().to_string();
    let (batch, _) = prepare_batch(&env, &repo, &["-n", "1", "--owner-pid", &pid]);
    owner.kill().unwrap();
    owner.wait().unwrap();
    wait_lease(&env, &repo, &batch, "orphaned");
    let short = &batch[..8];
    let expected = format!("git delegate renew {short} --owner-pid $$");

    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert_eq!(printed_command(&status, "git delegate renew"), expected);
    let hook = env.delegate(&repo, ["hook", "pre-commit"]);
    assert_eq!(printed_command(&all(&hook), "git delegate renew"), expected);
    let refused = env.delegate(&repo, ["renew", short]).expect(2);
    assert_has(&refused.stderr, "delegate::orphaned_lease");
    let cmd = printed_command(&refused.stderr, "git delegate renew");
    assert_eq!(cmd, expected);

    // Run from a shell that stays: the batch is live and that shell owns it.
    let keep = format!("{cmd} && git delegate status --json > lease.json");
    env.sh(&repo, &keep).expect(0);
    let doc: Value = serde_json::from_str(&read_lossy(&repo.join("lease.json"))).unwrap();
    std::fs::remove_file(repo.join("lease.json")).unwrap();
    let lease = &doc["batches"][0]["lease"];
    assert_eq!(lease["state"], "live", "{doc:#}");
    assert_ne!(lease["owner_pid"].to_string(), pid);
    assert!(lease["owner_pid"].is_u64(), "{doc:#}");
    // And the command exactly as printed succeeds on its own.
    wait_lease(&env, &repo, &batch, "orphaned");
    env.sh(&repo, &cmd).expect(0);
}

// gc leaving a stale batch alone while a process runs in a workspace:
// "stop them, or `git delegate renew ID`".
#[test]
fn gc_renew_hint_for_a_busy_stale_batch_renews_it() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1", "--ttl", "1s"]);
    let mut inside = sleeper(&ws[0]);
    wait_lease(&env, &repo, &batch, "expired");
    let gc = env.delegate(&repo, ["gc"]);
    let cmd = printed_command(&all(&gc), "git delegate renew");
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(lease_state(&env, &repo, &batch), "live");
    inside.kill().unwrap();
    inside.wait().unwrap();
}

// status, a task's workspace gone while another task holds unapplied work:
// "`git delegate drop ID --force` ends the batch (apply the other tasks
// first: `git delegate apply ID`)". Plain `drop` would be refused.
#[test]
fn status_hints_for_a_missing_workspace_apply_the_rest_and_end_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[1].join("two.txt"), "task 2's work\n").unwrap();
    std::fs::remove_dir_all(&ws[0]).unwrap();
    let short = &batch[..8];
    env.delegate(&repo, ["drop", short]).expect(1);

    let text = env.delegate(&repo, ["status"]).expect(0).stdout;
    let apply = printed_command(&text, "git delegate apply");
    let drop = printed_command(&text, "git delegate drop");
    assert_eq!(drop, format!("git delegate drop {short} --force"));
    // The other task lands; the missing one fails and keeps the batch open.
    env.sh(&repo, &apply).expect(1);
    assert_eq!(read_lossy(&repo.join("two.txt")), "task 2's work\n");
    env.sh(&repo, &drop).expect(0);
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(env.private_refs(&repo).is_empty());

    // Straight to the drop: it works on its own too.
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::remove_dir_all(&ws[0]).unwrap();
    let text = env.delegate(&repo, ["status"]).expect(0).stdout;
    env.sh(&repo, &printed_command(&text, "git delegate drop"))
        .expect(0);
    assert!(batch_doc(&env, &repo, &batch).is_none());
}

// status, a workspace replaced by a symlink: the same drop ends the batch
// and leaves the symlink and what it points to alone.
#[test]
fn status_drop_hint_for_a_replaced_workspace_ends_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    let copy = env.path().join("copy");
    std::fs::rename(&ws[0], &copy).unwrap();
    std::os::unix::fs::symlink(&copy, &ws[0]).unwrap();
    let text = env.delegate(&repo, ["status"]).expect(0).stdout;
    let cmd = printed_command(&text, "git delegate drop");
    env.sh(&repo, &cmd).expect(0);
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(std::fs::symlink_metadata(&ws[0]).unwrap().is_symlink());
    assert_eq!(read_lossy(&copy.join("README")), "hello\n");
}

/// Task `i`'s workspace and the source both change README's one line.
fn conflicting(env: &Env, repo: &Path, n: usize) -> (String, Vec<PathBuf>) {
    let (batch, ws) = prepare_batch(env, repo, &["-n", &n.to_string()]);
    for (i, w) in ws.iter().enumerate() {
        std::fs::write(w.join("README"), format!("worker {}\n", i + 1)).unwrap();
    }
    std::fs::write(repo.join("README"), "the user's line\n").unwrap();
    (batch, ws)
}

/// Apply `n` conflicting tasks, follow the discard hint printed after
/// `give_up` (it must be `git delegate apply BATCH DISCARDS`, with no
/// `git apply --3way` line): the user's line stays, the batch is gone.
fn follow_the_discard_hint(n: usize, give_up: &str, discards: &str) -> (Env, PathBuf) {
    let (env, repo) = Env::with_repo("proj");
    let (batch, _) = conflicting(&env, &repo, n);
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    assert!(!text.contains("git apply"), "{text}");
    let give_up = &text[text.find(give_up).expect(&text)..];
    let cmd = printed_command(give_up, "git delegate apply");
    assert_eq!(
        cmd,
        format!("git delegate apply {} {discards}", &batch[..8])
    );
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "the user's line\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
    (env, repo)
}

// apply, one task in conflict: the discard hint names that task (no
// `TASK` placeholder) and no `git apply --3way` line is printed.
#[test]
fn apply_discard_hint_for_one_conflict_names_the_task() {
    let (env, repo) = follow_the_discard_hint(1, "give its work up", "--discard 1");
    // Given up, not lost: kept for apply --kept.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["kept"].as_array().unwrap().len(), 1, "{st:#}");
}

// apply, several tasks in conflict: one `--discard` per task.
#[test]
fn apply_discard_hint_for_several_conflicts_names_each_task() {
    follow_the_discard_hint(2, "give their work up", "--discard 1 --discard 2");
}

// apply refusing a batch whose baseline ref was deleted: both ways out.
#[test]
fn baseline_ref_missing_hints_restore_the_ref_or_end_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    let baseline = format!("refs/pi-delegate/batches/{batch}/baseline");
    env.git(&repo, ["update-ref", "-d", &baseline]);
    let err = env.delegate(&repo, ["apply"]).expect(3).stderr;
    // The help is one line, so a command in it copies whole.
    assert!(
        err.lines()
            .any(|l| l.contains("git delegate drop ") && l.contains("--force")),
        "{err}"
    );
    env.sh(&repo, &printed_command(&err, "git update-ref"))
        .expect(0);
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");

    let (batch, _) = prepare_batch(&env, &repo, &["-n", "1"]);
    let baseline = format!("refs/pi-delegate/batches/{batch}/baseline");
    env.git(&repo, ["update-ref", "-d", &baseline]);
    apply_then_its_drop_hint(&env, &repo, &batch);
}

// A batch whose batch.toml is corrupt: status, apply and drop all name
// `git delegate drop ID --force`, which removes it.
#[test]
fn corrupt_state_drop_hints_remove_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "saved first\n").unwrap();
    let state = repo.join(".git/delegate/batches").join(&batch);
    std::fs::write(state.join("batch.toml"), "not = [toml").unwrap();
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    let cmd = printed_command(&status, "git delegate drop");
    let apply = env.delegate(&repo, ["apply", &batch]);
    assert_eq!(printed_command(&all(&apply), "git delegate drop"), cmd);
    let drop = env.delegate(&repo, ["drop", &batch]).expect(1);
    assert_eq!(printed_command(&all(&drop), "git delegate drop"), cmd);
    let gc = env.delegate(&repo, ["gc"]);
    assert_eq!(printed_command(&all(&gc), "git delegate drop"), cmd);
    env.sh(&repo, &cmd).expect(0);
    assert!(!state.exists());
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["kept"].as_array().unwrap().len(), 1, "{st:#}");
}

// drop refusing unapplied work: "Apply them with `git delegate apply ID`,
// or drop anyway with `git delegate drop ID --force`".
#[test]
fn drop_refusal_hints_apply_or_force() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    let text = env.delegate(&repo, ["drop", &batch[..8]]).expect(1).stdout;
    env.sh(&repo, &printed_command(&text, "git delegate apply"))
        .expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());

    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "thrown away\n").unwrap();
    let text = env.delegate(&repo, ["drop", &batch[..8]]).expect(1).stdout;
    env.sh(&repo, &printed_command(&text, "git delegate drop"))
        .expect(0);
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
}

// apply --discard of a task whose worker made a git repository: its
// workspace stays as an ordinary worktree, and the printed
// `git worktree remove --force PATH` removes it.
#[test]
fn worktree_remove_hint_for_a_kept_nested_repository_removes_it() {
    let (env, repo) = Env::with_repo("proj");
    worktree_remove_hint(&env, &repo);
    // A workspace path a shell would split or unquote: printed quoted.
    let odd = env.repo("odd");
    let root = env.path().join("it's a root");
    std::fs::write(
        odd.join(".git/delegate.toml"),
        format!("[workspace]\nroot = {:?}\n", root.to_str().unwrap()),
    )
    .unwrap();
    worktree_remove_hint(&env, &odd);
    assert!(root.is_dir(), "the workspace was not made under {root:?}");
}

fn worktree_remove_hint(env: &Env, repo: &Path) {
    let (_batch, ws) = prepare_batch(env, repo, &["-n", "1"]);
    env.git(&ws[0], ["init", "-q", "inner"]);
    let text = env
        .delegate(repo, ["apply", "--discard", "1"])
        .expect(0)
        .stdout;
    let cmd = printed_command(&text, "git worktree remove");
    assert!(ws[0].exists());
    env.sh(repo, &cmd).expect(0);
    assert!(!ws[0].exists());
    assert!(!env
        .git(repo, ["worktree", "list"])
        .contains(ws[0].to_str().unwrap()));
}

// apply --dry-run refusing while an interrupted write-back is pending:
// "run `git delegate apply` or `git delegate gc`".
#[test]
fn pending_writeback_gc_hint_rolls_it_back() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    std::fs::write(ws[0].join("new.txt"), "new\n").unwrap();
    killed_at(env.delegate_cmd(&repo).arg("apply"), "after-rename:1");
    let err = env.delegate(&repo, ["apply", "--dry-run"]).expect(3).stderr;
    let cmd = printed_command(&err, "git delegate gc");
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert_eq!(printed_command(&status, "git delegate gc"), cmd);
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "hello\n");
    assert!(!repo.join("new.txt").exists());
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["problems"], serde_json::json!([]), "{st:#}");
    // The other way out, apply (here after the rollback): lands the batch.
    assert!(batch_doc(&env, &repo, &batch).is_some());
    env.sh(&repo, &printed_command(&err, "git delegate apply"))
        .expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
}

// gc and drop keeping several proposals: the hint names one of them (no
// `REF` placeholder), and it lands.
#[test]
fn kept_hints_of_gc_and_drop_name_a_real_proposal() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2", "--ttl", "1s"]);
    std::fs::write(ws[0].join("a.txt"), "a\n").unwrap();
    std::fs::write(ws[1].join("b.txt"), "b\n").unwrap();
    wait_lease(&env, &repo, &batch, "expired");
    let text = env.delegate(&repo, ["gc"]).expect(0).stdout;
    env.sh(&repo, &printed_command(&text, "git delegate apply --kept"))
        .expect(0);
    assert_eq!(read_lossy(&repo.join("a.txt")), "a\n");
    assert!(!repo.join("b.txt").exists());

    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "2"]);
    std::fs::write(ws[0].join("c.txt"), "c\n").unwrap();
    std::fs::write(ws[1].join("d.txt"), "d\n").unwrap();
    std::fs::write(
        repo.join(".git/delegate/batches")
            .join(&batch)
            .join("batch.toml"),
        "broken",
    )
    .unwrap();
    let text = env
        .delegate(&repo, ["drop", &batch, "--force"])
        .expect(0)
        .stdout;
    env.sh(&repo, &printed_command(&text, "git delegate apply --kept"))
        .expect(0);
    assert_eq!(read_lossy(&repo.join("c.txt")), "c\n");
    assert!(!repo.join("d.txt").exists());
}

// The pre-commit hook refusing a commit in a forbid-commit workspace:
// "`git delegate apply ID` in the source working tree brings them back".
#[test]
fn forbid_commit_apply_hint_brings_the_work_back() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1", "--forbid-commit"]);
    std::fs::write(ws[0].join("work.txt"), "work\n").unwrap();
    let refused = env.delegate(&ws[0], ["hook", "pre-commit"]).expect(1);
    let cmd = printed_command(&refused.stderr, "git delegate apply");
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("work.txt")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
}

/// A prepare killed once it recorded its marker.
fn killed_prepare(env: &Env, repo: &Path) {
    let mut prepare = env.delegate_cmd(repo);
    prepare
        .args(["prepare", "-n", "2", "--label", "work"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paused_at(env, prepare, "marked");
    child.kill().unwrap();
    child.wait().unwrap();
}

// A batch whose prepare was killed: status, apply's refusal and a prepare
// of the same label name `git delegate gc` or `git delegate drop ID
// --force`, and each removes it.
#[test]
fn killed_prepare_hints_remove_the_batch() {
    let (env, repo) = Env::with_repo("proj");
    for start in ["git delegate drop", "git delegate gc"] {
        killed_prepare(&env, &repo);
        let text = env.delegate(&repo, ["status"]).expect(0).stdout;
        let cmd = printed_command(&text, start);
        let apply = env.delegate(&repo, ["apply", "work"]).expect(3).stderr;
        assert_eq!(printed_command(&apply, start), cmd);
        let again = env
            .delegate(&repo, ["prepare", "--label", "work"])
            .expect(2)
            .stderr;
        assert_eq!(printed_command(&again, start), cmd);
        env.sh(&repo, &cmd).expect(0);
        let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        assert_eq!(st["batches"], serde_json::json!([]), "{cmd}: {st:#}");
        assert_eq!(st["problems"], serde_json::json!([]), "{cmd}: {st:#}");
        assert!(env.private_refs(&repo).is_empty());
    }
}

// apply refusing a source that moved: move it back and run the printed
// `git delegate apply ID` there, or give the batch up with the printed drop.
#[test]
fn source_moved_hints_apply_after_moving_back_or_drop() {
    let (env, repo) = Env::with_repo("proj");
    let moved = env.path().join("moved");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    std::fs::rename(&repo, &moved).unwrap();
    let err = env.delegate(&moved, ["apply"]).expect(3).stderr;
    assert!(
        err.contains(&format!("move it back to {}", repo.display())),
        "{err}"
    );
    let apply = printed_command(&err, "git delegate apply");
    std::fs::rename(&moved, &repo).unwrap();
    env.sh(&repo, &apply).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());

    let (batch, _) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::rename(&repo, &moved).unwrap();
    apply_then_its_drop_hint(&env, &moved, &batch);
}

// A rollback that left a path the user changed after a crash:
// rollback_failed's help and status both say "keep your version by
// deleting the kept file ... then run `git delegate gc`", which finishes.
#[test]
fn rollback_left_path_gc_hint_finishes_the_rollback() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(
        &env,
        &repo,
        &[("a.txt", "original a\n"), ("b.txt", "original b\n")],
        "files",
    );
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("a.txt"), "task a\n").unwrap();
    std::fs::write(ws[0].join("b.txt"), "task b\n").unwrap();
    // Renames in path order: a aside (1), a in place (2), ...
    killed_at(env.delegate_cmd(&repo).arg("apply"), "after-rename:2");
    assert_eq!(read_lossy(&repo.join("a.txt")), "task a\n");
    std::fs::write(repo.join("a.txt"), "the user's a\n").unwrap();
    let err = env.delegate(&repo, ["gc"]).expect(3).stderr;
    assert_has(&err, "rollback_failed");
    let cmd = printed_command(&err, "git delegate gc");
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert_eq!(printed_command(&status, "git delegate gc"), cmd);
    let doc = env.delegate(&repo, ["gc", "--json"]).expect(3).json();
    let kept = PathBuf::from(doc["error"]["paths"][0]["kept"].as_str().unwrap());
    // Keep mine: delete the kept file, then the printed command.
    std::fs::remove_file(&kept).unwrap();
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("a.txt")), "the user's a\n");
    assert_eq!(read_lossy(&repo.join("b.txt")), "original b\n");
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["problems"], serde_json::json!([]), "{st:#}");
    assert!(batch_doc(&env, &repo, &batch).is_some());
}

// An apply killed once its whole result was written: the next command
// says "`git delegate apply ID` records it", which ends the batch with the
// working tree as written.
#[test]
fn completed_writeback_apply_hint_records_it() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    killed_at(env.delegate_cmd(&repo).arg("apply"), "after-commit");
    let gc = env.delegate(&repo, ["gc"]).expect(0);
    assert_has(&gc.stderr, "had written its whole result");
    let cmd = printed_command(&gc.stderr, "git delegate apply");
    env.sh(&repo, &cmd).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(env.private_refs(&repo).is_empty());
}

// A required smudge filter failing during write-back: the help names the
// driver; `git config filter.x.required false` as printed makes it
// optional, and `git delegate apply` as printed then lands the task.
#[test]
fn failing_filter_hints_name_the_driver_and_work() {
    let env = Env::new();
    let (repo, smudge) = crate::common::fixtures::filtered_repo(&env, "proj", "cat\n");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("a.dat"), "data, task\n").unwrap();
    std::fs::write(&smudge, "exit 5\n").unwrap();
    let run = env.delegate(&repo, ["apply"]).expect(1);
    let text = all(&run);
    let config = printed_command(&text, "git config filter.x.required");
    assert_eq!(config, "git config filter.x.required false");
    let apply = printed_command(&text, "git delegate apply");
    assert_eq!(read_lossy(&repo.join("a.dat")), "data\n");
    env.sh(&repo, &config).expect(0);
    env.sh(&repo, &apply).expect(0);
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(read_lossy(&repo.join("a.dat")).starts_with("data, task"));
}

// prepare refusing a workspace folder that is already there, left by a
// batch whose state and refs are gone: as a registered worktree, the
// printed `git worktree remove --force --force PATH` frees it; as a folder
// git no longer knows (gc leaves it: nothing proves its files are no work,
// design §3.18), the printed `rm -rf PATH`; a registration whose folder is
// gone, `git delegate gc`.
#[test]
fn workspace_exists_hints_free_the_place() {
    let (env, repo) = Env::with_repo("proj");
    let id = "0badc0de-0000-4000-8000-000000000001";
    let prepare_as = |expect: i32| -> Run {
        let r = Run::from(
            env.delegate_cmd(&repo)
                .arg("prepare")
                .env("GIT_DELEGATE_TEST_BATCH_ID", id)
                .output()
                .unwrap(),
        );
        r.expect(expect)
    };
    let lose_state = || {
        std::fs::remove_dir_all(repo.join(".git/delegate/batches").join(id)).unwrap();
        for r in env.private_refs(&repo) {
            env.git(&repo, ["update-ref", "-d", &r]);
        }
    };
    let registration = repo.join(".git/worktrees/delegate-0badc0de-1");
    for case in ["registered", "folder", "registration"] {
        prepare_as(0);
        lose_state();
        let ws = env
            .workspace_root()
            .read_dir()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("0badc0de/1");
        assert!(ws.is_dir());
        let start = match case {
            "registered" => "git worktree remove",
            "folder" => {
                std::fs::remove_dir_all(&registration).unwrap();
                "rm -rf"
            }
            _ => {
                std::fs::remove_dir_all(&ws).unwrap();
                "git delegate gc"
            }
        };
        let refused = prepare_as(2);
        let cmd = printed_command(&refused.stderr, start);
        env.sh(&repo, &cmd).expect(0);
        assert!(!ws.exists(), "{case}: {cmd}");
        assert!(!registration.exists(), "{case}: {cmd}");
        prepare_as(0);
        env.delegate(&repo, ["drop", id, "--force"]).expect(0);
    }
}

// `apply --kept` of a ref that is no proposal (its commit has no parent):
// "look at it with `git show --stat REF`; `git update-ref -d REF` removes it".
#[test]
fn not_a_proposal_hints_show_and_remove_the_ref() {
    let (env, repo) = Env::with_repo("proj");
    let r = "refs/pi-delegate/batches/0badc0de-0000-4000-8000-000000000002/tasks/1/proposal";
    env.git(&repo, ["update-ref", r, "HEAD"]);
    let run = env.delegate(&repo, ["apply", "--kept", r]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let show = printed_command(&run.stderr, "git show");
    assert_eq!(
        env.sh(&repo, &show).expect(0).stdout,
        env.git(&repo, ["show", "--stat", "HEAD"])
    );
    let remove = printed_command(&run.stderr, "git update-ref");
    env.sh(&repo, &remove).expect(0);
    assert!(env.private_refs(&repo).is_empty());
}

// apply, a task whose workspace is missing: every command its advice
// prints works (here: the discard one gives the task up).
#[test]
fn apply_advice_for_a_missing_workspace_works() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::remove_dir_all(&ws[0]).unwrap();
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    let give_up = &text[text.find("give its work up").expect(&text)..];
    let cmd = printed_command(give_up, "git delegate apply");
    let run = env.sh(&repo, &cmd);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(batch_doc(&env, &repo, &batch).is_none());

    // Replaced by a symlink to a copy with work in it: given up too, and
    // the symlink and the copy are left alone.
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    let copy = env.path().join("copy");
    std::fs::rename(&ws[0], &copy).unwrap();
    std::fs::write(copy.join("README"), "work in the copy\n").unwrap();
    std::os::unix::fs::symlink(&copy, &ws[0]).unwrap();
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    let give_up = &text[text.find("give its work up").expect(&text)..];
    let cmd = printed_command(give_up, "git delegate apply");
    let run = env.sh(&repo, &cmd);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(batch_doc(&env, &repo, &batch).is_none());
    assert!(std::fs::symlink_metadata(&ws[0]).unwrap().is_symlink());
    assert_eq!(read_lossy(&copy.join("README")), "work in the copy\n");
}

// apply, a task whose workspace cannot be snapshotted (its HEAD is
// garbage; a garbage index would be rebuilt, design §3.2 step 1):
// `--discard` would refuse (it saves the work first), so it is not
// advised; once the cause is fixed, apply lands the task.
#[test]
fn apply_advice_for_an_unreadable_workspace_has_no_discard() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "work\n").unwrap();
    let id = format!("delegate-{}-1", &batch[..8]);
    let head = repo.join(".git/worktrees").join(id).join("HEAD");
    let good = read_bytes(&head);
    std::fs::write(&head, "garbage").unwrap();
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    assert_has(&text, "snapshot_failed");
    assert!(!text.contains("--discard"), "{text}");
    // The cause fixed (the workspace's HEAD put back), apply lands it.
    std::fs::write(&head, good).unwrap();
    env.delegate(&repo, ["apply"]).expect(0);
    assert_eq!(read_lossy(&repo.join("README")), "work\n");
    assert!(batch_doc(&env, &repo, &batch).is_none());
}

// apply, a task whose work conflicts with the user's edit: running apply
// again cannot succeed (the same line still differs), so the hint hands the
// conflict back to the worker with `refresh`; resolved there, the printed
// apply lands it (design §3.12, §3.16).
#[test]
fn apply_refresh_hint_hands_a_conflict_back_and_the_printed_apply_lands_it() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = conflicting(&env, &repo, 1);
    let short = &batch[..8];
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    let refresh = printed_command(&text, "git delegate refresh");
    assert_eq!(refresh, format!("git delegate refresh 1 --batch {short}"));
    env.sh(&repo, &refresh).expect(0);
    // The worker sees the conflict as after `git merge`.
    let st = env.git(&ws[0], ["status", "--porcelain"]);
    assert_has(&st, "UU README");
    assert!(read_lossy(&ws[0].join("README")).starts_with("<<<<<<< task\n"));
    // Running apply before the worker resolved it refuses the task again.
    env.delegate(&repo, ["apply"]).expect(1);
    assert_eq!(read_lossy(&repo.join("README")), "the user's line\n");
    // The worker resolves: both lines.
    std::fs::write(ws[0].join("README"), "the user's line\nworker 1\n").unwrap();
    env.git(&ws[0], ["add", "README"]);
    let after = &text[text.find("once the worker").expect(&text)..];
    let apply = printed_command(after, "git delegate apply");
    assert_eq!(apply, format!("git delegate apply {short}"));
    env.sh(&repo, &apply).expect(0);
    assert_eq!(
        read_lossy(&repo.join("README")),
        "the user's line\nworker 1\n"
    );
    assert!(batch_doc(&env, &repo, &batch).is_none());
}

// apply, several tasks in conflict: one refresh names them all.
#[test]
fn apply_refresh_hint_names_every_conflicting_task() {
    let (env, repo) = Env::with_repo("proj");
    let (batch, ws) = conflicting(&env, &repo, 2);
    let text = env.delegate(&repo, ["apply"]).expect(1).stdout;
    let refresh = printed_command(&text, "git delegate refresh");
    assert_eq!(
        refresh,
        format!("git delegate refresh 1 2 --batch {}", &batch[..8])
    );
    env.sh(&repo, &refresh).expect(0);
    for w in &ws {
        let st = env.git(w, ["status", "--porcelain"]);
        assert_has(&st, "UU README");
    }
    // Nothing of the source changed.
    assert_eq!(read_lossy(&repo.join("README")), "the user's line\n");
}
