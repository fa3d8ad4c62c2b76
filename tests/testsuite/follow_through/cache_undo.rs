//! A workspace's index is a cache (design §3.2 step 1): a truncated or
//! garbled one never makes a task's work stuck; undo after the applied
//! result was committed (design §3.11 "HEAD moved"); conflicted files are
//! named by status and apply (design §3.12).

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::id;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::assert_has;
use crate::common::fixtures::{prepare, roots, wait_stale};
use crate::common::Env;

/// What the worker leaves in `f.txt`: CRLF, a NUL, a byte that is not
/// UTF-8, no final newline.
const WORK_F: &[u8] = b"one\r\ntwo\x00\xff\nlast line without newline";
/// A new file the worker makes.
const NEW_BIN: &[u8] = b"\x00\x01\x02 new\n";

/// A repository with `f.txt`, `gone.txt` and `README`, and a batch of one
/// task prepared with `extra` arguments: (source, batch id, workspaces).
fn setup(env: &Env, extra: &[&str]) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    commit_files(
        env,
        &repo,
        &[("f.txt", "one\ntwo\n"), ("gone.txt", "to be deleted\n")],
        "files",
    );
    let mut args = vec!["prepare", "--json"];
    args.extend_from_slice(extra);
    let doc = env.delegate(&repo, args).expect(0).json();
    (repo, batch_of(&doc), roots(&doc))
}

fn batch_of(doc: &Value) -> String {
    id(doc)
}

/// The worker edits `f.txt`, adds `new.bin` and deletes `gone.txt`.
fn work(ws: &Path) {
    std::fs::write(ws.join("f.txt"), WORK_F).unwrap();
    std::fs::write(ws.join("new.bin"), NEW_BIN).unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
}

/// The work as the source must hold it after an apply.
fn assert_work_landed(repo: &Path) {
    assert_eq!(read_bytes(&repo.join("f.txt")), WORK_F);
    assert_eq!(read_bytes(&repo.join("new.bin")), NEW_BIN);
    assert!(!repo.join("gone.txt").exists());
    assert_eq!(read_bytes(&repo.join("README")), b"hello\n");
}

/// The index file of a workspace.
fn index_of(env: &Env, ws: &Path) -> PathBuf {
    PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim()).join("index")
}

#[derive(Clone, Copy)]
enum Damage {
    /// `truncate -s 100`.
    Truncated,
    /// 4 KiB of garbage (no `DIRC` signature).
    Garbage,
    /// One byte of the first entry's (`README`'s) object id flipped: the
    /// index still decodes, its checksum no longer matches.
    BitFlip,
}

fn damage(env: &Env, ws: &Path, how: Damage) {
    let index = index_of(env, ws);
    match how {
        Damage::Truncated => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&index)
                .unwrap();
            f.set_len(100).unwrap();
        }
        Damage::Garbage => {
            let mut x: u32 = 0x2545_f491;
            let bytes: Vec<u8> = (0..4096)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x >> 24) as u8
                })
                .collect();
            assert_ne!(&bytes[..4], b"DIRC");
            std::fs::write(&index, bytes).unwrap();
        }
        Damage::BitFlip => {
            let mut bytes = read_bytes(&index);
            // 12 bytes of header, 40 of stat data, then the object id.
            bytes[12 + 40 + 5] ^= 0x40;
            std::fs::write(&index, bytes).unwrap();
        }
    }
    // git itself cannot read garbage (a truncated index it may read in
    // part, and rewrite; a checksum it does not verify outside fsck: so it
    // is not asked about those).
    if let Damage::Garbage = how {
        let st = env
            .git_cmd(ws)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(!st.status.success(), "git still reads the damaged index");
    }
}

/// The bytes of `spec` (`REV:PATH`) in `repo`'s object store.
fn blob(env: &Env, repo: &Path, spec: &str) -> Vec<u8> {
    let out = env.git_cmd(repo).args(["show", spec]).output().unwrap();
    assert!(out.status.success(), "git show {spec}");
    out.stdout
}

fn apply_keeps_the_work_exactly(how: Damage) {
    let env = Env::new();
    let (repo, _, ws) = setup(&env, &[]);
    work(&ws[0]);
    damage(&env, &ws[0], how);
    // status reads it too, and counts the work.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["tasks"][0]["changed_paths"], 3, "{st}");
    let doc = env
        .delegate(&repo, ["apply", "--keep", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(
        doc["tasks"][0]["applied_paths"],
        json!(["f.txt", "gone.txt", "new.bin"])
    );
    assert_work_landed(&repo);
    // The kept workspace's index was rebuilt from its HEAD (the baseline):
    // git reads it again and sees the worker's changes as changes.
    assert_eq!(
        env.git(&ws[0], ["status", "--porcelain"]),
        " M f.txt\n D gone.txt\n?? new.bin\n"
    );
}

#[test]
fn a_truncated_workspace_index_still_applies_the_work_exactly() {
    apply_keeps_the_work_exactly(Damage::Truncated);
}

#[test]
fn a_garbage_workspace_index_still_applies_the_work_exactly() {
    apply_keeps_the_work_exactly(Damage::Garbage);
}

#[test]
fn a_workspace_index_failing_its_checksum_is_not_trusted() {
    apply_keeps_the_work_exactly(Damage::BitFlip);
}

#[test]
fn discard_keeps_the_work_of_a_task_whose_index_is_garbage() {
    let env = Env::new();
    let (repo, _, ws) = setup(&env, &[]);
    work(&ws[0]);
    damage(&env, &ws[0], Damage::Garbage);
    let doc = env
        .delegate(&repo, ["apply", "--discard", "1", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "discarded", "{doc}");
    let r = doc["tasks"][0]["proposal_ref"].as_str().unwrap();
    assert_eq!(blob(&env, &repo, &format!("{r}:f.txt")), WORK_F);
    assert_eq!(blob(&env, &repo, &format!("{r}:new.bin")), NEW_BIN);
    let gone = env
        .git_cmd(&repo)
        .args(["cat-file", "-e", &format!("{r}:gone.txt")])
        .output()
        .unwrap();
    assert!(
        !gone.status.success(),
        "the deletion is part of the proposal"
    );
    // Nothing reached the source; the workspace is gone.
    assert_eq!(read_bytes(&repo.join("f.txt")), b"one\ntwo\n".to_vec());
    assert!(!ws[0].exists());
}

#[test]
fn gc_rescues_a_stale_task_whose_index_is_truncated() {
    let env = Env::new();
    let (repo, batch, ws) = setup(&env, &["--ttl", "1s"]);
    work(&ws[0]);
    damage(&env, &ws[0], Damage::Truncated);
    wait_stale(&env, &repo, &batch);
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"], json!([batch]), "{gc}");
    let rescued = gc["rescued"].as_array().unwrap();
    assert_eq!(rescued.len(), 1, "{gc}");
    let r = rescued[0]["ref"].as_str().unwrap();
    assert_eq!(blob(&env, &repo, &format!("{r}:f.txt")), WORK_F);
    assert_eq!(blob(&env, &repo, &format!("{r}:new.bin")), NEW_BIN);
    assert!(!ws[0].exists());
}

#[test]
fn a_sparse_workspace_with_a_broken_index_keeps_what_it_leaves_out() {
    let (env, repo) = Env::with_repo("proj");
    for (p, text) in [("a/x/1", "one\n"), ("b/2", "two\n"), ("top", "top\n")] {
        let p = repo.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "tree"]);
    let doc = prepare(&env, &repo, &["--sparse", "a/x"]);
    let ws = roots(&doc);
    assert!(!ws[0].join("b/2").exists());
    std::fs::write(ws[0].join("a/x/1"), "edited\n").unwrap();
    damage(&env, &ws[0], Damage::Truncated);
    let doc = env
        .delegate(&repo, ["apply", "--keep", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["applied_paths"], json!(["a/x/1"]), "{doc}");
    assert_eq!(read_bytes(&repo.join("a/x/1")), b"edited\n");
    // What the workspace leaves out is not a deletion.
    assert_eq!(read_bytes(&repo.join("b/2")), b"two\n");
    // The rebuilt index marks it skip-worktree again.
    let flags = env.git(&ws[0], ["ls-files", "-t"]);
    assert_has(&flags, "S b/2\n");
    assert_has(&flags, "H a/x/1\n");
    assert_eq!(env.git(&ws[0], ["status", "--porcelain"]), " M a/x/1\n");
}

const LINES: &str = "one\ntwo\nthree\nfour\nfive\n";

/// Two tasks rewrite line 3 of `a.txt` (task 2 also line 1 of `b.txt`);
/// task 1 lands, task 2 is refreshed into a conflict in both files.
fn refreshed_conflict(env: &Env) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    std::fs::write(repo.join("a.txt"), LINES).unwrap();
    std::fs::write(repo.join("b.txt"), LINES).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(env, &repo, &["-n", "2"]);
    let (batch, ws) = (batch_of(&doc), roots(&doc));
    std::fs::write(ws[0].join("a.txt"), "one\ntwo\nTHREE-1\nfour\nfive\n").unwrap();
    std::fs::write(ws[0].join("b.txt"), "ONE-1\ntwo\nthree\nfour\nfive\n").unwrap();
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nTHREE-2\nfour\nfive\n").unwrap();
    std::fs::write(ws[1].join("b.txt"), "ONE-2\ntwo\nthree\nfour\nfive\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(1);
    let doc = env
        .delegate(&repo, ["refresh", "2", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["state"], "conflicted", "{doc}");
    assert_eq!(
        doc["tasks"][0]["conflicted_paths"],
        json!(["a.txt", "b.txt"])
    );
    (repo, batch, ws)
}

#[test]
fn a_refreshed_conflict_stays_unresolved_through_a_broken_index() {
    let env = Env::new();
    let (repo, _, ws) = refreshed_conflict(&env);
    let before = read_bytes(&repo.join("a.txt"));
    damage(&env, &ws[1], Damage::Garbage);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["status"], "conflict", "{doc}");
    assert_eq!(doc["tasks"][0]["reason"], "unresolved_conflicts");
    assert_eq!(read_bytes(&repo.join("a.txt")), before);
    // The rebuilt index holds the conflicted files unmerged again (their
    // base unknown: "both added"), so git shows them and `git add` resolves.
    assert_eq!(
        env.git(&ws[1], ["status", "--porcelain"]),
        "AA a.txt\nAA b.txt\n"
    );
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nTHREE-1+2\nfour\nfive\n").unwrap();
    std::fs::write(ws[1].join("b.txt"), "ONE-1+2\ntwo\nthree\nfour\nfive\n").unwrap();
    env.git(&ws[1], ["add", "a.txt", "b.txt"]);
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(
        read(&repo.join("a.txt")),
        "one\ntwo\nTHREE-1+2\nfour\nfive\n"
    );
}

/// The `conflicted_paths` status shows for the task named `task`.
fn status_conflicts(env: &Env, repo: &Path, task: &str) -> (Value, String) {
    let st = env.delegate(repo, ["status", "--json"]).expect(0).json();
    let t = st["batches"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == task)
        .unwrap()
        .clone();
    assert_eq!(t["state"], "conflicted", "{st}");
    let human = env.delegate(repo, ["status"]).expect(0).stdout;
    (t["conflicted_paths"].clone(), human)
}

#[test]
fn status_names_the_files_still_conflicted_after_a_refresh() {
    let env = Env::new();
    let (repo, batch, ws) = refreshed_conflict(&env);
    let (paths, human) = status_conflicts(&env, &repo, "2");
    assert_eq!(paths, json!(["a.txt", "b.txt"]));
    assert!(
        human
            .contains("conflicts for its worker to resolve (edit, then `git add`): a.txt, b.txt\n"),
        "{human}"
    );
    // The worker resolves one of them: status names the other only.
    std::fs::write(ws[1].join("a.txt"), "one\ntwo\nTHREE-1+2\nfour\nfive\n").unwrap();
    env.git(&ws[1], ["add", "a.txt"]);
    let (paths, human) = status_conflicts(&env, &repo, "2");
    assert_eq!(paths, json!(["b.txt"]));
    assert_has(
        &human,
        "conflicts for its worker to resolve (edit, then `git add`): b.txt\n",
    );
    // And the other: status says so, and what lands it.
    std::fs::write(ws[1].join("b.txt"), "ONE-1+2\ntwo\nthree\nfour\nfive\n").unwrap();
    env.git(&ws[1], ["add", "b.txt"]);
    let (paths, human) = status_conflicts(&env, &repo, "2");
    assert_eq!(paths, json!([]));
    let short = &batch[..8];
    let hint = format!(
        "its conflicts are resolved in its workspace: `git delegate apply {short}` lands it\n"
    );
    assert!(human.contains(&hint), "{human}");
    env.sh(
        &repo,
        &crate::common::printed_command(&human, "git delegate apply"),
    )
    .expect(0);
    assert_eq!(
        read(&repo.join("b.txt")),
        "ONE-1+2\ntwo\nthree\nfour\nfive\n"
    );
}

#[test]
fn status_and_apply_name_the_files_of_a_conflict_the_worker_made() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::write(repo.join("a.txt"), LINES).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(&env, &repo, &[]);
    let ws = roots(&doc).remove(0);
    // The worker's own `git stash pop` conflicts.
    std::fs::write(ws.join("a.txt"), "one\ntwo\nX\nfour\nfive\n").unwrap();
    env.git(&ws, ["stash", "-q"]);
    std::fs::write(ws.join("a.txt"), "one\ntwo\nY\nfour\nfive\n").unwrap();
    env.git(&ws, ["commit", "-q", "-am", "Y"]);
    let pop = env.git_cmd(&ws).args(["stash", "pop"]).output().unwrap();
    assert!(!pop.status.success());
    assert_eq!(env.git(&ws, ["status", "--porcelain"]), "UU a.txt\n");
    let out = env.delegate(&repo, ["apply"]).expect(1);
    assert!(
        out.stdout
            .contains("unresolved_conflicts: a.txt (unmerged)"),
        "{}",
        out.stdout
    );
    let (paths, human) = status_conflicts(&env, &repo, "1");
    assert_eq!(paths, json!(["a.txt"]));
    assert_has(
        &human,
        "conflicts for its worker to resolve (edit, then `git add`): a.txt\n",
    );
}

/// A committed source with `a.txt`, one task that rewrites it, applied.
fn applied(env: &Env) -> (PathBuf, String) {
    let repo = env.repo("proj");
    std::fs::write(repo.join("a.txt"), LINES).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(env, &repo, &[]);
    let ws = roots(&doc).remove(0);
    std::fs::write(ws.join("a.txt"), "one\ntwo\nTHREE\nfour\nfive\n").unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    (repo, doc["apply_id"].as_str().unwrap().to_string())
}

fn head(env: &Env, repo: &Path) -> String {
    env.git(repo, ["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn undo_after_the_result_was_committed_refuses_and_force_takes_it_back() {
    let env = Env::new();
    let (repo, id) = applied(&env);
    let at_apply = head(&env, &repo);
    env.git(&repo, ["commit", "-q", "-am", "the applied work"]);
    let now = head(&env, &repo);
    let refused = env.delegate(&repo, ["undo", "--json"]).expect(3);
    let err = refused.json();
    assert_eq!(err["error"]["code"], "delegate::head_moved", "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains(&at_apply[..7]), "{message}");
    assert!(message.contains(&now[..7]), "{message}");
    assert_has(message, "committed");
    assert_eq!(err["error"]["apply_head"], at_apply.as_str());
    assert_eq!(err["error"]["head"], now.as_str());
    let help = err["error"]["help"].as_str().unwrap();
    let force = crate::common::printed_command(help, "git delegate undo");
    assert_eq!(force, format!("git delegate undo {} --force", &id[..8]));
    // Nothing changed: the tree, the index, HEAD, the entry.
    assert_eq!(read(&repo.join("a.txt")), "one\ntwo\nTHREE\nfour\nfive\n");
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
    assert_eq!(head(&env, &repo), now);
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"][0]["undone"], false);
    assert_eq!(list["entries"][0]["head"], at_apply.as_str());
    // The human text says it too (stderr), and a dry run refuses alike.
    let human = env.delegate(&repo, ["undo"]).expect(3);
    assert_has(&human.stderr, "delegate::head_moved");
    env.delegate(&repo, ["undo", "--dry-run"]).expect(3);
    // --force, as the help says: the committed lines come back out as
    // uncommitted changes.
    env.sh(&repo, &force).expect(0);
    let list = env
        .delegate(&repo, ["undo", "--list", "--json"])
        .expect(0)
        .json();
    assert_eq!(list["entries"][0]["undone"], true);
    assert_eq!(read(&repo.join("a.txt")), LINES);
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), " M a.txt\n");
    assert_eq!(head(&env, &repo), now);
}

#[test]
fn undo_with_head_unmoved_needs_no_force() {
    let env = Env::new();
    let (repo, _) = applied(&env);
    // A branch switched to at the same commit is not a move.
    env.git(&repo, ["switch", "-q", "-c", "other"]);
    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(read(&repo.join("a.txt")), LINES);
}

#[test]
fn an_entry_recorded_without_its_head_is_undone_as_before() {
    let env = Env::new();
    let (repo, id) = applied(&env);
    // An entry written before HEAD was recorded.
    let file = repo.join(format!(".git/delegate/undo/{id}/entry.json"));
    let mut entry: Value = serde_json::from_slice(&read_bytes(&file)).unwrap();
    assert!(entry.as_object_mut().unwrap().remove("head").is_some());
    std::fs::write(&file, serde_json::to_vec_pretty(&entry).unwrap()).unwrap();
    env.git(&repo, ["commit", "-q", "-am", "the applied work"]);
    env.delegate(&repo, ["undo"]).expect(0);
    assert_eq!(read(&repo.join("a.txt")), LINES);
}
