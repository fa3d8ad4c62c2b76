//! A signal during a write-back is a request, not a crash (design §7
//! "Signals"), and a write-back that recovery finished is told and recorded
//! truly (design §7 "What recovery finishes").
//!
//! Four tasks of 120 paths each (modifications, deletions, additions in new
//! folders): `apply`, `undo` and `refresh` into a workspace are paused at a
//! write-back's test-only pause points (`GIT_DELEGATE_TEST_PAUSE`: after the
//! journal, before the first rename, after the Nth rename, just past the
//! commit point) and sent SIGINT or SIGTERM there. After the process exits,
//! the tree is byte for byte the before or the after state, `git status
//! --porcelain` is the oracle's, no `.gd-*` file is left, stderr says which
//! (rolled back, finished), the exit is non-zero and the `--json` document is
//! still one valid document. A SIGKILL past the commit point: `status` says
//! the next command finishes it, `gc` does, `undo --list` shows the entry,
//! a re-run of apply says the tasks are applied, and `undo` takes it back.

use crate::common::fixtures::id;
use crate::common::fixtures::problem;
use crate::common::fixtures::task_root;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::Value;

use crate::common::assert_has;
use crate::common::files::{tree, tree_differences, Tree};
use crate::common::fixtures::roots;
use crate::common::killed_at;
use crate::common::{Env, Run};

const TASKS: usize = 4;
const FILES: usize = 120;

/// Names of write-back temp and aside files (`.gd-*`) below `root`.
fn temp_files(root: &Path) -> Vec<String> {
    tree(root)
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| k.rsplit('/').next().is_some_and(|n| n.starts_with(".gd-")))
        .collect()
}

/// Which of `before` and `after` the tree at `root` is, or what mixes them.
fn which(root: &Path, before: &Tree, after: &Tree) -> Result<&'static str, String> {
    let t = tree(root);
    if t == *before {
        return Ok("before");
    }
    if t == *after {
        return Ok("after");
    }
    let (b, a) = (tree_differences(&t, before), tree_differences(&t, after));
    Err(format!(
        "a mix: {} paths differ from before (e.g. {:?}), {} from after (e.g. {:?})",
        b.len(),
        &b[..b.len().min(5)],
        a.len(),
        &a[..a.len().min(5)]
    ))
}

/// Task `i`'s edits: 70 files modified, 20 deleted, 30 added in a new folder.
fn edits(i: usize) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for j in 0..70 {
        out.push((
            format!("t{i}/f{j:03}.txt"),
            Some(format!("task {i} rewrote file {j}\n")),
        ));
    }
    for j in 70..90 {
        out.push((format!("t{i}/f{j:03}.txt"), None));
    }
    for j in 0..30 {
        out.push((
            format!("t{i}/new/sub{}/a{j:02}.txt", j % 3),
            Some(format!("task {i} added {j}\n")),
        ));
    }
    out
}

fn edit(root: &Path, changes: &[(String, Option<String>)]) {
    for (path, content) in changes {
        let p = root.join(path);
        match content {
            Some(c) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, c).unwrap();
            }
            None => std::fs::remove_file(&p).unwrap(),
        }
    }
}

fn porcelain(env: &Env, dir: &Path) -> String {
    env.git(dir, ["status", "--porcelain", "--untracked-files=all"])
}

/// A source of 4 x 120 committed files plus an untracked file, and a clone
/// of it with every task's edits made by hand: the oracle of the applied
/// tree and of its `git status --porcelain`.
struct Rig {
    env: Env,
    repo: PathBuf,
    before: Tree,
    after: Tree,
    before_status: String,
    after_status: String,
}

impl Rig {
    /// `git-delegate ARGS` in the source, paused at `point`, sent `sig`
    /// `times` times, then waited for.
    fn interrupt(&self, args: &[&str], point: &str, sig: Signal, times: usize) -> Run {
        let p = Paused::start(&self.env, &self.repo, args, point);
        p.signal(sig, times);
        p.finish()
    }

    /// `status --json` (exit 0) and its `journal` problem, which must be there.
    fn journal_problem(&self) -> (Value, Value) {
        let doc = self
            .env
            .delegate(&self.repo, ["status", "--json"])
            .expect(0)
            .json();
        let journal = problem(&doc, "journal")
            .cloned()
            .unwrap_or_else(|| panic!("{doc:#}"));
        (doc, journal)
    }

    fn new() -> Rig {
        let (env, repo) = Env::with_repo("src");
        for i in 0..TASKS {
            for j in 0..FILES {
                let p = repo.join(format!("t{i}/f{j:03}.txt"));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, format!("folder {i} file {j}\nsecond line\n")).unwrap();
            }
        }
        env.git(&repo, ["add", "-A"]);
        env.git(&repo, ["commit", "-q", "-m", "files"]);
        std::fs::write(repo.join("notes.txt"), "the user's own notes\n").unwrap();
        let oracle = env.path().join("oracle");
        env.git(
            env.path(),
            [
                "clone",
                "-q",
                repo.to_str().unwrap(),
                oracle.to_str().unwrap(),
            ],
        );
        std::fs::write(oracle.join("notes.txt"), "the user's own notes\n").unwrap();
        for i in 0..TASKS {
            edit(&oracle, &edits(i));
        }
        let rig = Rig {
            before: tree(&repo),
            after: tree(&oracle),
            before_status: porcelain(&env, &repo),
            after_status: porcelain(&env, &oracle),
            env,
            repo,
        };
        assert_ne!(rig.before, rig.after);
        rig
    }

    /// A batch of 4 tasks, each workspace holding its task's edits.
    fn prepare(&self) -> (String, Vec<PathBuf>) {
        let doc = self
            .env
            .delegate(&self.repo, ["prepare", "-n", "4", "--json"])
            .expect(0)
            .json();
        let roots: Vec<PathBuf> = roots(&doc);
        for (i, root) in roots.iter().enumerate() {
            edit(root, &edits(i));
        }
        (id(&doc), roots)
    }

    /// The source is exactly `state` ("before" or "after"), bytes and
    /// `git status --porcelain`, with no temp file left.
    fn assert_source(&self, state: &str, when: &str) {
        assert_eq!(
            temp_files(&self.repo),
            Vec::<String>::new(),
            "{when}: write-back temp files left in the source"
        );
        assert_eq!(
            which(&self.repo, &self.before, &self.after),
            Ok(state),
            "{when}"
        );
        let want = if state == "before" {
            &self.before_status
        } else {
            &self.after_status
        };
        assert_eq!(
            &porcelain(&self.env, &self.repo),
            want,
            "{when}: git status"
        );
    }

    fn undo_list(&self) -> Vec<Value> {
        self.env
            .delegate(&self.repo, ["undo", "--list", "--json"])
            .expect(0)
            .json()["entries"]
            .as_array()
            .unwrap()
            .clone()
    }
}

/// A git-delegate command in its own process group, paused at a pause point.
struct Paused {
    child: Child,
    pgid: rustix::process::Pid,
    paused: PathBuf,
}

impl Paused {
    fn start(env: &Env, dir: &Path, args: &[&str], point: &str) -> Paused {
        let paused = env
            .path()
            .join(format!("paused-{}", point.replace([':', ','], "-")));
        let _ = std::fs::remove_file(&paused);
        let child = env
            .delegate_cmd(dir)
            .args(args)
            .env("GIT_DELEGATE_TEST_PAUSE", point)
            .env("GIT_DELEGATE_TEST_PAUSED", &paused)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start git-delegate");
        let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let mut p = Paused {
            child,
            pgid,
            paused,
        };
        p.wait_for(point, args);
        p
    }

    /// Wait until the command reports that it waits at `point`.
    fn wait_for(&mut self, point: &str, args: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let text = std::fs::read_to_string(&self.paused).unwrap_or_default();
            if text.lines().any(|l| l == point) {
                return;
            }
            if self.child.try_wait().unwrap().is_some() {
                let out = std::mem::replace(
                    &mut self.child,
                    std::process::Command::new("true").spawn().unwrap(),
                )
                .wait_with_output()
                .unwrap();
                panic!(
                    "{args:?} ended ({}) before reaching {point}\nstdout:\n{}\nstderr:\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(Instant::now() < deadline, "{args:?} never reached {point}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Send `sig` to the command's process group, `times` times.
    fn signal(&self, sig: Signal, times: usize) {
        for _ in 0..times {
            rustix::process::kill_process_group(self.pgid, sig).expect("signal");
        }
    }

    fn finish(self) -> Run {
        let out = self.child.wait_with_output().unwrap();
        assert!(
            out.status.signal().is_none(),
            "the signal killed the command instead of being handled ({})\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Run::from(out)
    }
}

/// An interrupted command that rolled its write-back back: exit 3, one
/// error document (`delegate::interrupted`, `interrupted: "rolled_back"`),
/// and stderr saying so.
fn assert_rolled_back(run: &Run, when: &str) {
    assert_eq!(run.code, 3, "{when}: exit\nstderr:\n{}", run.stderr);
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::interrupted",
        "{when}: {doc:#}"
    );
    assert_eq!(
        doc["error"]["interrupted"], "rolled_back",
        "{when}: {doc:#}"
    );
    assert!(
        run.stderr.contains("rolled back"),
        "{when}: stderr does not say it was rolled back:\n{}",
        run.stderr
    );
}

/// An interrupted command that finished its write-back: exit 1, its own
/// document with `interrupted: "finished"`, and stderr saying so.
fn assert_finished(run: &Run, when: &str) -> Value {
    assert_eq!(run.code, 1, "{when}: exit\nstderr:\n{}", run.stderr);
    let doc = run.json();
    assert_eq!(doc["interrupted"], "finished", "{when}: {doc:#}");
    assert!(
        run.stderr.contains("finished"),
        "{when}: stderr does not say it was finished:\n{}",
        run.stderr
    );
    doc
}

#[test]
fn a_signal_during_apply_or_undo_rolls_back_or_finishes_never_half() {
    let rig = Rig::new();
    let (batch, roots) = rig.prepare();
    let workspaces: Vec<Tree> = roots.iter().map(|r| tree(r)).collect();
    let apply = ["apply", "--json"];
    // Before the commit point: rolled back, every task still open with
    // its workspace as it was; the next trial applies the same batch.
    for (point, sig, times) in [
        ("writeback-after-journal", Signal::INT, 1),
        ("writeback-after-temp-files", Signal::TERM, 1),
        ("writeback-after-rename:1", Signal::INT, 1),
        ("writeback-after-rename:300", Signal::INT, 2),
        ("writeback-after-rename:700", Signal::TERM, 1),
    ] {
        let when = format!("apply, {sig:?} x{times} at {point}");
        let run = rig.interrupt(&apply, point, sig, times);
        assert_rolled_back(&run, &when);
        rig.assert_source("before", &when);
        for (root, t) in roots.iter().zip(&workspaces) {
            assert!(
                tree(root) == *t,
                "{when}: workspace {} changed",
                root.display()
            );
        }
        assert!(
            rig.undo_list().is_empty(),
            "{when}: an undo entry for nothing"
        );
        let status = rig.env.delegate(&rig.repo, ["status", "--check"]).expect(0);
        assert!(status.stderr.is_empty(), "{when}: {}", status.stderr);
    }
    // Just past the commit point: finished, recorded, cleaned up.
    let when = "apply, SIGTERM just past the commit point";
    let run = rig.interrupt(&apply, "writeback-after-commit", Signal::TERM, 1);
    let doc = assert_finished(&run, when);
    rig.assert_source("after", when);
    assert_eq!(doc["batch"], batch.as_str());
    assert_eq!(doc["batch_open"], false, "{when}: {doc:#}");
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), TASKS, "{when}: {doc:#}");
    assert!(
        tasks.iter().all(|t| t["status"] == "applied"),
        "{when}: {doc:#}"
    );
    let id = doc["apply_id"].as_str().expect("apply_id").to_string();
    let entries = rig.undo_list();
    assert_eq!(entries.len(), 1, "{when}: {entries:#?}");
    assert_eq!(entries[0]["apply_id"], id.as_str());
    assert_eq!(entries[0]["paths"], TASKS * 120);
    assert!(!rig.repo.join(".git/delegate/batches").join(&batch).exists());
    for root in &roots {
        assert!(!root.exists(), "{when}: workspace {} left", root.display());
    }

    // undo: rolled back (still applied), then finished (undone).
    let undo = ["undo", "--json"];
    for (point, sig) in [
        ("writeback-after-temp-files", Signal::INT),
        ("writeback-after-rename:200", Signal::TERM),
    ] {
        let when = format!("undo, {sig:?} at {point}");
        let run = rig.interrupt(&undo, point, sig, 1);
        assert_rolled_back(&run, &when);
        rig.assert_source("after", &when);
        assert_eq!(rig.undo_list()[0]["undone"], false, "{when}");
    }
    let when = "undo, SIGINT just past the commit point";
    let run = rig.interrupt(&undo, "writeback-after-commit", Signal::INT, 1);
    let doc = assert_finished(&run, when);
    assert_eq!(doc["undone"], true, "{when}: {doc:#}");
    rig.assert_source("before", when);
    assert_eq!(rig.undo_list()[0]["undone"], true, "{when}");
}

#[test]
fn a_signal_during_a_refresh_rolls_the_workspace_back_or_finishes_it() {
    let rig = Rig::new();
    let doc = rig
        .env
        .delegate(&rig.repo, ["prepare", "-n", "1", "--json"])
        .expect(0)
        .json();
    let batch = id(&doc);
    let task = doc["tasks"][0]["name"].as_str().unwrap().to_string();
    let ws = task_root(&doc, 0);
    // The user's edits in the source since prepare: what refresh brings in.
    let mut changes = Vec::new();
    for i in 0..TASKS {
        changes.extend(edits(i));
    }
    edit(&rig.repo, &changes);
    let before = tree(&ws);
    let after = tree(&rig.repo);
    let base_ref = format!("refs/pi-delegate/batches/{batch}/tasks/{task}/base");
    let refresh = ["refresh", task.as_str(), "--json"];
    for (point, sig) in [
        ("writeback-after-temp-files", Signal::TERM),
        ("writeback-after-rename:250", Signal::INT),
    ] {
        let when = format!("refresh, {sig:?} at {point}");
        let run = rig.interrupt(&refresh, point, sig, 1);
        assert_rolled_back(&run, &when);
        assert_eq!(temp_files(&ws), Vec::<String>::new(), "{when}");
        assert_eq!(which(&ws, &before, &after), Ok("before"), "{when}");
        assert_eq!(
            porcelain(&rig.env, &ws),
            "",
            "{when}: git status in the workspace"
        );
        let refs = rig.env.git(
            &rig.repo,
            ["for-each-ref", "--format=%(refname)", &base_ref],
        );
        assert_eq!(
            refs, "",
            "{when}: the task's base moved though its workspace did not"
        );
    }
    let when = "refresh, SIGTERM just past the commit point";
    let run = rig.interrupt(&refresh, "writeback-after-commit", Signal::TERM, 1);
    let doc = assert_finished(&run, when);
    assert_eq!(doc["tasks"][0]["state"], "open", "{when}: {doc:#}");
    assert_eq!(temp_files(&ws), Vec::<String>::new(), "{when}");
    assert_eq!(which(&ws, &before, &after), Ok("after"), "{when}");
    // Its index and HEAD moved with it: the workspace shows no change.
    assert_eq!(
        porcelain(&rig.env, &ws),
        "",
        "{when}: git status in the workspace"
    );
    let base = rig.env.git(&rig.repo, ["rev-parse", &base_ref]);
    assert_eq!(doc["tasks"][0]["base"], base.trim(), "{when}: {doc:#}");
}

#[test]
fn a_write_back_killed_past_its_commit_point_is_finished_recorded_and_told_so() {
    let rig = Rig::new();
    // Killed before the commit point: status says it is rolled back.
    let (batch, _) = rig.prepare();
    killed_at(
        rig.env.delegate_cmd(&rig.repo).args(["apply"]),
        "after-rename:100",
    );
    let status = rig.env.delegate(&rig.repo, ["status"]).expect(0);
    assert_has(&status.stdout, "rolls it back");
    let (doc, journal) = rig.journal_problem();
    assert_eq!(journal["recovery"], "roll_back", "{doc:#}");
    let gc = rig
        .env
        .delegate(&rig.repo, ["gc", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        gc["recovered_writebacks"],
        serde_json::json!([batch]),
        "{gc:#}"
    );
    rig.assert_source("before", "killed before the commit point, after gc");

    // Killed just past it.
    killed_at(
        rig.env.delegate_cmd(&rig.repo).args(["apply"]),
        "after-commit",
    );
    let status = rig.env.delegate(&rig.repo, ["status"]).expect(0);
    assert!(
        status.stdout.contains("finishes it") && !status.stdout.contains("rolls it back"),
        "status must say the next command finishes the write-back:\n{}",
        status.stdout
    );
    let (doc, journal) = rig.journal_problem();
    assert_eq!(journal["recovery"], "finish", "{doc:#}");
    assert!(
        journal["message"].as_str().unwrap().contains("finishes it"),
        "{doc:#}"
    );

    // The next command finishes it, and the apply is recorded.
    let gc = rig.env.delegate(&rig.repo, ["gc", "--json"]).expect(0);
    let gc_doc = gc.json();
    assert_eq!(
        gc_doc["completed_writebacks"],
        serde_json::json!([batch]),
        "{gc_doc:#}"
    );
    rig.assert_source("after", "killed past the commit point, after gc");
    let entries = rig.undo_list();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(entries[0]["batch"], batch.as_str());
    assert_eq!(entries[0]["paths"], TASKS * 120);
    assert_eq!(entries[0]["tasks"].as_array().unwrap().len(), TASKS);
    let text = rig
        .env
        .delegate(&rig.repo, ["undo", "--list"])
        .expect(0)
        .stdout;
    assert!(!text.contains("No undo entries"), "{text}");

    // A re-run of apply: the tasks are applied, nothing is written again.
    let run = rig.env.delegate(&rig.repo, ["apply", "--json"]).expect(0);
    let doc = run.json();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), TASKS, "{doc:#}");
    assert!(tasks.iter().all(|t| t["status"] == "applied"), "{doc:#}");
    assert_eq!(doc["batch_open"], false, "{doc:#}");
    assert!(!rig.repo.join(".git/delegate/batches").join(&batch).exists());
    rig.assert_source("after", "re-run of apply");

    // And `undo` takes it back.
    rig.env.delegate(&rig.repo, ["undo"]).expect(0);
    rig.assert_source("before", "undo of the recovered apply");
}

#[test]
fn a_signal_while_a_kept_proposal_lands_rolls_back_or_finishes() {
    let rig = Rig::new();
    let doc = rig
        .env
        .delegate(&rig.repo, ["prepare", "-n", "1", "--json"])
        .expect(0)
        .json();
    let ws = task_root(&doc, 0);
    edit(&ws, &edits(0));
    let doc = rig
        .env
        .delegate(&rig.repo, ["apply", "--discard", "1", "--json"])
        .expect(0)
        .json();
    let kept = doc["tasks"][0]["proposal_ref"]
        .as_str()
        .unwrap()
        .to_string();
    let before = tree(&rig.repo);
    // The source with task 0's edits only.
    let one = rig.env.path().join("one");
    rig.env.git(
        rig.env.path(),
        [
            "clone",
            "-q",
            rig.repo.to_str().unwrap(),
            one.to_str().unwrap(),
        ],
    );
    std::fs::write(one.join("notes.txt"), "the user's own notes\n").unwrap();
    edit(&one, &edits(0));
    let after = tree(&one);
    let args = ["apply", "--kept", kept.as_str(), "--json"];
    let run = rig.interrupt(&args, "writeback-after-rename:60", Signal::INT, 1);
    assert_rolled_back(&run, "apply --kept, SIGINT midway");
    assert_eq!(temp_files(&rig.repo), Vec::<String>::new());
    assert_eq!(which(&rig.repo, &before, &after), Ok("before"));
    assert!(rig.undo_list().is_empty());
    let status = rig
        .env
        .delegate(&rig.repo, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        status["kept"].as_array().map(Vec::len),
        Some(1),
        "{status:#}"
    );

    let run = rig.interrupt(&args, "writeback-after-commit", Signal::TERM, 1);
    let doc = assert_finished(&run, "apply --kept, SIGTERM past the commit point");
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc:#}");
    assert_eq!(temp_files(&rig.repo), Vec::<String>::new());
    assert_eq!(which(&rig.repo, &before, &after), Ok("after"));
    let entries = rig.undo_list();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(doc["apply_id"], entries[0]["apply_id"]);
}
