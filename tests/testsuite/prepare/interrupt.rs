//! Killed and interrupted prepares (design §3.15 "Killed commands"). A source of a few thousand files, with uncommitted
//! changes and ignored folders carried into the workspaces; `prepare -n 3`
//! is paused at a named point (`GIT_DELEGATE_TEST_PAUSE`, test-only) and
//! then signalled there:
//! - Ctrl-C (SIGINT to the whole process group, once or twice, directly or
//!   through `git delegate` so git and git-delegate both get it), SIGTERM:
//!   everything the prepare made is gone again (refs, registrations,
//!   folders, state) and the source is byte-identical;
//! - SIGKILL at every point: `apply` refuses the batch (exit 3,
//!   `delegate::incomplete_batch`) and changes nothing, `status --check`
//!   reports it (exit 1), and `gc` (without rescuing anything) or `drop`
//!   (with or without `--force`) removes it whole.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::files::{tree, Tree};
use crate::common::fixtures::{field_strs, prepare};
use crate::common::Env;

const ID: &str = "0badc0de-0000-4000-8000-000000000001";
const SHORT: &str = "0badc0de";

/// The user's files and index, to compare before and after.
fn snapshot(repo: &Path) -> (Tree, Vec<u8>) {
    (tree(repo), std::fs::read(repo.join(".git/index")).unwrap())
}

/// 2,000 tracked files in 40 folders, a handful of uncommitted changes,
/// and two ignored folders (`build/`, `cache/`) that `.worktreeinclude` carries.
fn fixture(env: &Env) -> PathBuf {
    let repo = env.repo("src");
    for d in 0..40 {
        let dir = repo.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            std::fs::write(
                dir.join(format!("f{f:02}.txt")),
                format!("folder {d} file {f}\n").repeat(8),
            )
            .unwrap();
        }
    }
    std::fs::write(repo.join(".gitignore"), "build/\ncache/\n").unwrap();
    std::fs::write(repo.join(".worktreeinclude"), "build/\ncache/\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    for i in 0..10 {
        std::fs::write(
            repo.join(format!("d00/f{i:02}.txt")),
            format!("edited {i}\n"),
        )
        .unwrap();
    }
    for i in 0..5 {
        std::fs::remove_file(repo.join(format!("d01/f{i:02}.txt"))).unwrap();
        std::fs::write(repo.join(format!("new{i}.txt")), "untracked\n").unwrap();
    }
    for dir in ["build", "cache"] {
        std::fs::create_dir_all(repo.join(dir)).unwrap();
        for i in 0..200 {
            std::fs::write(repo.join(format!("{dir}/o{i}.bin")), format!("{dir} {i}\n")).unwrap();
        }
    }
    repo
}

/// A prepare running in its own process group, paused at named points.
struct Prepare {
    child: Child,
    pgid: rustix::process::Pid,
    paused: PathBuf,
}

impl Prepare {
    fn start(env: &Env, repo: &Path, points: &str, via_git: bool) -> Prepare {
        let paused = env
            .path()
            .join(format!("paused-{}", points.replace(',', "-")));
        let _ = std::fs::remove_file(&paused);
        let mut cmd = if via_git {
            let bin = Path::new(env!("CARGO_BIN_EXE_git-delegate"))
                .parent()
                .unwrap();
            let mut path = std::ffi::OsString::from(bin);
            path.push(":");
            path.push(std::env::var_os("PATH").unwrap_or_default());
            let mut cmd = env.git_cmd(repo);
            cmd.env("PATH", path).arg("delegate");
            cmd
        } else {
            env.delegate_cmd(repo)
        };
        cmd.args(["prepare", "-n", "3", "--label", "work"])
            .env("GIT_DELEGATE_TEST_PAUSE", points)
            .env("GIT_DELEGATE_TEST_PAUSED", &paused)
            .env("GIT_DELEGATE_TEST_BATCH_ID", ID)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let child = cmd.spawn().expect("start prepare");
        let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        Prepare {
            child,
            pgid,
            paused,
        }
    }

    /// Wait until the prepare reports that it waits at `point`.
    fn wait_for(&mut self, point: &str) {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let text = std::fs::read_to_string(&self.paused).unwrap_or_default();
            if text.lines().any(|l| l == point) {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                let out = std::mem::replace(
                    &mut self.child,
                    std::process::Command::new("true").spawn().unwrap(),
                )
                .wait_with_output()
                .unwrap();
                panic!(
                    "prepare ended ({status}) before reaching {point}; reached {text:?}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(Instant::now() < deadline, "prepare never reached {point}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn signal(&self, sig: rustix::process::Signal) {
        rustix::process::kill_process_group(self.pgid, sig).expect("signal the prepare");
    }

    /// Wait for the prepare (and every process of its group) to end.
    fn finish(self) -> (std::process::ExitStatus, String) {
        let out = self.child.wait_with_output().unwrap();
        let deadline = Instant::now() + Duration::from_secs(180);
        while rustix::process::test_kill_process_group(self.pgid).is_ok() {
            assert!(
                Instant::now() < deadline,
                "the prepare's processes never ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn common_dir(repo: &Path) -> PathBuf {
    repo.join(".git")
}

/// Nothing of the batch is left: no ref, no state, no registration, no folder.
fn assert_nothing_left(env: &Env, repo: &Path, context: &str) {
    assert_eq!(
        env.private_refs(repo),
        Vec::<String>::new(),
        "{context}: refs left"
    );
    let state = common_dir(repo).join("delegate/batches").join(ID);
    assert!(
        !state.exists(),
        "{context}: state folder {} left",
        state.display()
    );
    let regs: Vec<_> = std::fs::read_dir(common_dir(repo).join("worktrees"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(regs.is_empty(), "{context}: registrations left: {regs:?}");
    let root = env.workspace_root();
    if let Ok(rd) = std::fs::read_dir(&root) {
        for repo_dir in rd.flatten() {
            let short = repo_dir.path().join(SHORT);
            assert!(
                !short.exists(),
                "{context}: workspace folders left in {}",
                short.display()
            );
        }
    }
    let list = env.git(repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.lines().filter(|l| l.starts_with("worktree ")).count(),
        1,
        "{context}: worktrees left:\n{list}"
    );
}

fn assert_undone(env: &Env, repo: &Path, before: &(Tree, Vec<u8>), p: Prepare, context: &str) {
    let (status, stderr) = p.finish();
    assert!(
        !status.success(),
        "{context}: an interrupted prepare must fail, got {status}\nstderr:\n{stderr}"
    );
    assert_nothing_left(env, repo, context);
    assert!(snapshot(repo) == *before, "{context}: the source changed");
    // Nothing to apply, nothing for gc.
    env.delegate(repo, ["status", "--check"]).expect(0);
}

#[test]
fn ctrl_c_once_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    for point in ["marked", "checked-out", "replicating", "complete-pending"] {
        let mut p = Prepare::start(&env, &repo, point, false);
        p.wait_for(point);
        p.signal(rustix::process::Signal::INT);
        assert_undone(&env, &repo, &before, p, &format!("SIGINT at {point}"));
    }
}

#[test]
fn ctrl_c_twice_does_not_cut_the_undo_short() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let mut p = Prepare::start(&env, &repo, "replicating,undo", false);
    p.wait_for("replicating");
    p.signal(rustix::process::Signal::INT);
    p.wait_for("undo");
    p.signal(rustix::process::Signal::INT);
    assert_undone(&env, &repo, &before, p, "SIGINT twice");
}

#[test]
fn ctrl_c_through_git_delegate_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    // git passes its own SIGINT on to git-delegate: two signals at once.
    for point in ["checked-out", "replicating", "carrying"] {
        let mut p = Prepare::start(&env, &repo, point, true);
        p.wait_for(point);
        p.signal(rustix::process::Signal::INT);
        assert_undone(
            &env,
            &repo,
            &before,
            p,
            &format!("git delegate, SIGINT at {point}"),
        );
    }
}

#[test]
fn ctrl_c_while_carrying_ignored_files_undoes_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let mut p = Prepare::start(&env, &repo, "carrying", false);
    p.wait_for("carrying");
    p.signal(rustix::process::Signal::INT);
    assert_undone(&env, &repo, &before, p, "SIGINT while carrying");
}

#[test]
fn sigterm_and_sighup_undo_everything() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    for (sig, name) in [
        (rustix::process::Signal::TERM, "SIGTERM"),
        (rustix::process::Signal::HUP, "SIGHUP"),
    ] {
        let mut p = Prepare::start(&env, &repo, "checked-out", false);
        p.wait_for("checked-out");
        p.signal(sig);
        assert_undone(&env, &repo, &before, p, name);
    }
}

#[test]
fn killed_prepare_is_refused_reported_and_removed_whole() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let points = [
        ("marked", "gc"),
        ("registered", "drop"),
        ("checked-out", "gc"),
        ("replicating", "drop --force"),
        ("carrying", "gc"),
        ("complete-pending", "drop"),
    ];
    for (point, removal) in points {
        let context = format!("SIGKILL at {point}");
        let mut p = Prepare::start(&env, &repo, point, false);
        p.wait_for(point);
        if point == "checked-out" {
            // While it runs, status shows it as being prepared, not as work.
            let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
            assert_eq!(st["batches"][0]["state"], "preparing", "{context}: {st}");
            assert_eq!(
                st["batches"][0]["tasks"][0]["state"], "incomplete",
                "{context}: {st}"
            );
        }
        p.signal(rustix::process::Signal::KILL);
        let _ = p.finish();

        // apply refuses it and changes nothing.
        let run = env.delegate(&repo, ["apply", "--json"]);
        assert_eq!(
            run.code, 3,
            "{context}: apply\n{}\n{}",
            run.stdout, run.stderr
        );
        assert_eq!(
            run.json()["error"]["code"],
            "delegate::incomplete_batch",
            "{context}"
        );
        assert!(run.json()["error"]["help"]
            .as_str()
            .unwrap()
            .contains("git delegate gc"));
        let run = env.delegate(&repo, ["apply", SHORT]).expect(3);
        assert!(
            run.stderr
                .contains(&format!("git delegate drop {SHORT} --force")),
            "{}",
            run.stderr
        );
        assert!(
            snapshot(&repo) == before,
            "{context}: apply changed the source"
        );

        // status reports it as interrupted, never as open work.
        let st = env.delegate(&repo, ["status", "--json"]).json();
        let b = &st["batches"][0];
        assert_eq!(b["state"], "interrupted", "{context}: {st}");
        assert_ne!(b["lease"]["state"], "live", "{context}: {st}");
        for t in b["tasks"].as_array().unwrap() {
            assert_eq!(t["state"], "incomplete", "{context}: {st}");
        }
        assert!(
            st["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["kind"] == "interrupted_prepare" && p["batch"] == ID),
            "{context}: {st}"
        );
        let check = env.delegate(&repo, ["status", "--check"]).expect(1);
        assert!(check.stdout.contains(SHORT), "{context}: {}", check.stdout);
        // Its lease is not renewed either.
        let run = env.delegate(&repo, ["renew", SHORT, "--json"]);
        assert_eq!(run.code, 3, "{context}: renew\n{}", run.stderr);
        assert_eq!(run.json()["error"]["code"], "delegate::incomplete_batch");

        if point == "registered" {
            // Run again with the same label: told how the killed one goes.
            let run = env
                .delegate(&repo, ["prepare", "--label", "work"])
                .expect(2);
            assert!(
                run.stderr
                    .contains(&format!("git delegate drop {SHORT} --force")),
                "{context}: {}",
                run.stderr
            );
        }
        if point == "replicating" {
            // With another batch open, `apply` without BATCH means that one.
            let other = prepare(&env, &repo, &[]);
            assert_eq!(other["state"], "ready");
            let dry = env
                .delegate(&repo, ["apply", "--dry-run", "--json"])
                .expect(0)
                .json();
            assert_eq!(dry["batch"], other["batch"], "{context}: {dry}");
            env.delegate(&repo, ["drop", other["batch"].as_str().unwrap()])
                .expect(0);
        }
        if removal == "gc" {
            // A dry run reports it and changes nothing.
            let refs = env.private_refs(&repo);
            let dry = env
                .delegate(&repo, ["gc", "--dry-run", "--json"])
                .expect(0)
                .json();
            assert!(
                dry["incomplete"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b == ID),
                "{context}: {dry}"
            );
            assert_eq!(dry["rescued"], serde_json::json!([]), "{context}: {dry}");
            assert_eq!(
                env.private_refs(&repo),
                refs,
                "{context}: gc --dry-run changed refs"
            );
            assert!(common_dir(&repo).join("delegate/batches").join(ID).exists());
        }

        // gc or drop removes it whole; gc rescues nothing.
        match removal {
            "gc" => {
                let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
                assert_eq!(gc["rescued"], serde_json::json!([]), "{context}: {gc}");
                assert!(
                    gc["batches"].as_array().unwrap().iter().any(|b| b == ID),
                    "{context}: {gc}"
                );
                assert!(
                    gc["incomplete"].as_array().unwrap().iter().any(|b| b == ID),
                    "{context}: {gc}"
                );
            }
            "drop" => {
                env.delegate(&repo, ["drop", SHORT]).expect(0);
            }
            _ => {
                env.delegate(&repo, ["drop", SHORT, "--force"]).expect(0);
            }
        }
        assert_nothing_left(&env, &repo, &format!("{context}, then {removal}"));
        assert!(
            snapshot(&repo) == before,
            "{context}: {removal} changed the source"
        );
        env.delegate(&repo, ["status", "--check"]).expect(0);
    }
    // No proposal was ever kept.
    assert!(!common_dir(&repo).join("delegate/kept").exists());
}

/// The workspace folders of the batch, by task, as prepare lays them out.
fn task_roots(env: &Env) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for repo_dir in std::fs::read_dir(env.workspace_root()).unwrap().flatten() {
        if let Ok(rd) = std::fs::read_dir(repo_dir.path().join(SHORT)) {
            roots.extend(rd.flatten().map(|e| e.path()));
        }
    }
    roots.sort();
    roots
}

/// A killed prepare's workspace folders swapped (while it was paused) for
/// symlinks, one to a copy of the folder it made, one to an empty folder:
/// `gc` and `drop` remove the batch but never the symlinks nor what they
/// lead to (nothing recorded a folder identity yet: the checks must hold
/// without it).
#[test]
fn killed_prepare_removal_leaves_swapped_folders_alone() {
    let env = Env::new();
    let repo = fixture(&env);
    for removal in ["gc", "drop"] {
        let context = format!("SIGKILL at registered, then {removal}");
        let mut p = Prepare::start(&env, &repo, "registered", false);
        p.wait_for("registered");
        let roots = task_roots(&env);
        assert_eq!(roots.len(), 3, "{context}: {roots:?}");
        let keep = env.path().join(format!("kept-{removal}"));
        std::fs::create_dir_all(&keep).unwrap();
        let copy = keep.join("copy");
        std::fs::rename(&roots[0], &copy).unwrap();
        std::fs::write(copy.join("mine.txt"), "user data\n").unwrap();
        std::os::unix::fs::symlink(&copy, &roots[0]).unwrap();
        let empty = keep.join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::remove_file(roots[1].join(".git")).unwrap();
        std::fs::remove_dir(&roots[1]).unwrap();
        std::os::unix::fs::symlink(&empty, &roots[1]).unwrap();
        p.signal(rustix::process::Signal::KILL);
        let _ = p.finish();

        // A dry run says what the removal will do.
        let dry = env
            .delegate(&repo, ["gc", "--dry-run", "--json"])
            .expect(0)
            .json();
        assert_eq!(dry["workspaces_removed"], 1, "{context}: {dry}");
        let mut left: Vec<&str> = dry["left_alone"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [roots[0].to_str().unwrap(), roots[1].to_str().unwrap()],
            "{context}: {dry}"
        );
        match removal {
            "gc" => {
                let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
                assert_eq!(gc["workspaces_removed"], 1, "{context}: {gc}");
                assert_eq!(gc["left_alone"], dry["left_alone"], "{context}: {gc}");
            }
            _ => {
                let d = env
                    .delegate(&repo, ["drop", SHORT, "--force", "--json"])
                    .expect(0)
                    .json();
                assert_eq!(d["workspaces_removed"], 1, "{context}: {d}");
                assert_eq!(
                    d["left_alone"].as_array().unwrap().len(),
                    2,
                    "{context}: {d}"
                );
            }
        }
        // A later gc, which no longer knows the batch, leaves them too.
        env.delegate(&repo, ["gc", "--json"]).expect(0);
        for (link, target) in [(&roots[0], &copy), (&roots[1], &empty)] {
            let meta = std::fs::symlink_metadata(link)
                .unwrap_or_else(|e| panic!("{context}: {} removed: {e}", link.display()));
            assert!(
                meta.file_type().is_symlink(),
                "{context}: {}",
                link.display()
            );
            assert_eq!(&std::fs::read_link(link).unwrap(), target, "{context}");
        }
        assert_eq!(
            std::fs::read(copy.join("mine.txt")).unwrap(),
            b"user data\n",
            "{context}"
        );
        assert!(copy.join(".git").is_file(), "{context}");
        assert!(empty.is_dir(), "{context}");
        assert!(
            !roots[2].exists(),
            "{context}: the folder prepare made is left"
        );
        assert!(
            !common_dir(&repo).join("delegate/batches").join(ID).exists(),
            "{context}: state left"
        );
        assert_eq!(env.private_refs(&repo), Vec::<String>::new(), "{context}");
        // Clear the way for the next round.
        for r in &roots[..2] {
            std::fs::remove_file(r).unwrap();
        }
    }
}

/// A corrupt batch, an interrupted one and an ordinary one in one
/// repository: `apply` without BATCH means the ordinary one, `status
/// --check` reports both problems (JSON as docs/json.md says), and `gc`
/// removes the interrupted one whole and reports the corrupt one.
#[test]
fn corrupt_interrupted_and_ordinary_batches_together() {
    let env = Env::new();
    let repo = fixture(&env);
    let mut p = Prepare::start(&env, &repo, "checked-out", false);
    p.wait_for("checked-out");
    p.signal(rustix::process::Signal::KILL);
    let _ = p.finish();
    let good = prepare(&env, &repo, &[]);
    let good = good["batch"].as_str().unwrap().to_string();
    let bad = prepare(&env, &repo, &[]);
    let bad = bad["batch"].as_str().unwrap().to_string();
    let toml = common_dir(&repo)
        .join("delegate/batches")
        .join(&bad)
        .join("batch.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    // Cut inside a string, so the rest never parses whatever the paths'
    // lengths (a cut at a line's end can leave a valid, shorter batch).
    let cut = text[..text.len() / 2].rfind(" = \"").unwrap() + 4;
    std::fs::write(&toml, &text[..cut]).unwrap();

    let dry = env
        .delegate(&repo, ["apply", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["batch"], good.as_str(), "{dry}");

    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    let problems = st["problems"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = problems
        .iter()
        .map(|p| (p["batch"].as_str().unwrap(), p["kind"].as_str().unwrap()))
        .collect();
    assert!(kinds.contains(&(ID, "interrupted_prepare")), "{st}");
    assert!(kinds.contains(&(bad.as_str(), "broken_state")), "{st}");
    assert!(
        !kinds.iter().any(|(b, _)| *b == good),
        "the ordinary batch has no problem: {st}"
    );
    for p in problems {
        assert!(p["message"].as_str().is_some_and(|m| !m.is_empty()), "{p}");
    }
    let batches = st["batches"].as_array().unwrap();
    let find = |id: &str| batches.iter().find(|b| b["batch"] == id);
    let killed = find(ID).unwrap_or_else(|| panic!("interrupted batch not listed: {st}"));
    assert_eq!(killed["state"], "interrupted", "{killed}");
    assert_eq!(killed["lease"]["state"], "orphaned", "{killed}");
    assert_eq!(killed["label"], "work", "{killed}");
    for t in killed["tasks"].as_array().unwrap() {
        assert_eq!(t["state"], "incomplete", "{t}");
        assert!(t["changed_paths"].is_null(), "{t}");
    }
    let ordinary = find(&good).unwrap_or_else(|| panic!("ordinary batch not listed: {st}"));
    assert_eq!(ordinary["state"], "ready", "{ordinary}");
    assert_eq!(ordinary["lease"]["state"], "live", "{ordinary}");
    assert_eq!(ordinary["tasks"][0]["state"], "open", "{ordinary}");
    assert_eq!(ordinary["tasks"][0]["exists"], true, "{ordinary}");
    // The text form names both.
    let check = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_has(&check.stdout, SHORT);
    assert!(check.stdout.contains(&bad[..8]), "{}", check.stdout);

    let gc = env.delegate(&repo, ["gc", "--json"]);
    assert_eq!(gc.code, 1, "{}\n{}", gc.stdout, gc.stderr);
    let gc = gc.json();
    assert_eq!(gc["batches"], serde_json::json!([ID]), "{gc}");
    assert_eq!(gc["incomplete"], serde_json::json!([ID]), "{gc}");
    assert_eq!(gc["rescued"], serde_json::json!([]), "{gc}");
    let skipped = gc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{gc}");
    assert_eq!(skipped[0]["batch"], bad.as_str(), "{gc}");
    assert!(
        skipped[0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("git delegate drop {bad} --force")),
        "{gc}"
    );
    assert!(!common_dir(&repo).join("delegate/batches").join(ID).exists());
    assert!(toml.exists(), "gc must not remove the corrupt batch");
    assert!(common_dir(&repo)
        .join("delegate/batches")
        .join(&good)
        .join("batch.toml")
        .exists());
    let st = env.delegate(&repo, ["status", "--json"]).json();
    let kinds = field_strs(&st["problems"], "kind");
    assert_eq!(kinds, ["broken_state"], "{st}");
}

/// A batch prepared inside a workspace whose prepare was killed holds no
/// work: it does not keep the outer workspace (which `drop` then removes
/// without --force, as it would with no inner batch), and it is still
/// removed whole afterwards by gc. Nothing of the outer batch's is lost.
#[test]
fn an_interrupted_inner_batch_does_not_keep_the_outer_workspace() {
    let env = Env::new();
    let repo = fixture(&env);
    let before = snapshot(&repo);
    let outer = prepare(&env, &repo, &[]);
    let outer_id = outer["batch"].as_str().unwrap().to_string();
    let ws = PathBuf::from(outer["tasks"][0]["root"].as_str().unwrap());
    let mut p = Prepare::start(&env, &ws, "checked-out", false);
    p.wait_for("checked-out");
    p.signal(rustix::process::Signal::KILL);
    let _ = p.finish();
    let st = env.delegate(&repo, ["status", "--json"]).json();
    assert!(
        st["batches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["batch"] == ID && b["state"] == "interrupted"),
        "{st}"
    );

    let run = env.delegate(&repo, ["drop", &outer_id, "--json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc = run.json();
    assert_eq!(doc["dropped"], true, "{doc}");
    assert_eq!(doc["workspaces_removed"], 1, "{doc}");
    assert!(doc.get("kept_workspaces").is_none(), "{doc}");
    assert!(!ws.exists(), "the outer workspace is left: {doc}");
    assert!(!common_dir(&repo)
        .join("delegate/batches")
        .join(&outer_id)
        .exists());
    // The interrupted batch is still reported, and gc removes it whole.
    let check = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    assert_eq!(
        check["problems"][0]["kind"], "interrupted_prepare",
        "{check}"
    );
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["incomplete"], serde_json::json!([ID]), "{gc}");
    assert_nothing_left(&env, &repo, "after gc");
    assert!(snapshot(&repo) == before, "the source changed");
    env.delegate(&repo, ["status", "--check"]).expect(0);
}

/// The same in one gc run: a stale outer batch whose workspace hosts an
/// interrupted batch is reclaimed (workspace removed, not kept as an
/// ordinary worktree), and the interrupted one is removed whole.
#[test]
fn gc_reclaims_a_stale_outer_batch_hosting_an_interrupted_one() {
    let env = Env::new();
    let repo = fixture(&env);
    let outer = prepare(&env, &repo, &["--ttl", "1s"]);
    let ws = PathBuf::from(outer["tasks"][0]["root"].as_str().unwrap());
    let mut p = Prepare::start(&env, &ws, "checked-out", false);
    p.wait_for("checked-out");
    p.signal(rustix::process::Signal::KILL);
    let _ = p.finish();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = env.delegate(&repo, ["status", "--json"]).json();
        let b = st["batches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["batch"] == outer["batch"])
            .cloned()
            .unwrap();
        if b["lease"]["state"] == "expired" {
            break;
        }
        assert!(Instant::now() < deadline, "the lease never expired: {b}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["incomplete"], serde_json::json!([ID]), "{gc}");
    assert_eq!(gc["batches"].as_array().unwrap().len(), 2, "{gc}");
    assert_eq!(gc["kept_workspaces"], serde_json::json!([]), "{gc}");
    assert!(!ws.exists(), "the outer workspace is left: {gc}");
    assert_nothing_left(&env, &repo, "after gc");
}

/// A batch made by prepare (worktree mode) records each workspace's
/// identity (design §3.2), and no longer the marker; a killed one has none yet.
#[test]
fn a_complete_batch_records_its_folders_and_a_killed_one_none() {
    let (env, repo) = Env::with_repo("small");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let id = doc["batch"].as_str().unwrap();
    let text = std::fs::read_to_string(
        common_dir(&repo)
            .join("delegate/batches")
            .join(id)
            .join("batch.toml"),
    )
    .unwrap();
    assert_eq!(text.matches("[tasks.folder]").count(), 2, "{text}");
    assert!(!text.contains("[preparing]"), "{text}");
    for (i, t) in doc["tasks"].as_array().unwrap().iter().enumerate() {
        let root = std::fs::canonicalize(t["root"].as_str().unwrap()).unwrap();
        let line = format!("path = {:?}", root.to_str().unwrap());
        assert!(text.contains(&line), "task {i}: {line} not in {text}");
    }
    let mut p = Prepare::start(&env, &repo, "complete-pending", false);
    p.wait_for("complete-pending");
    p.signal(rustix::process::Signal::KILL);
    let _ = p.finish();
    let text = std::fs::read_to_string(
        common_dir(&repo)
            .join("delegate/batches")
            .join(ID)
            .join("batch.toml"),
    )
    .unwrap();
    assert_has(&text, "[preparing]");
    assert!(!text.contains("[tasks.folder]"), "{text}");
}

/// What a prepare killed before its batch folder appeared (`.<id>.new`)
/// and a removal killed after hiding a state folder (`.<id>.removed-PID`)
/// leave in the state folder: never read as batches, and removed by gc
/// (not by a dry run).
#[test]
fn gc_removes_hidden_state_left_by_killed_commands() {
    let (env, repo) = Env::with_repo("small");
    let live = prepare(&env, &repo, &[]);
    let batches = common_dir(&repo).join("delegate/batches");
    let new = batches.join(format!(".{ID}.new"));
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(new.join("batch.toml"), "half").unwrap();
    let removed = batches.join(format!(".{ID}.removed-4242"));
    std::fs::create_dir_all(removed.join("sub")).unwrap();
    std::fs::write(removed.join("sub/x.patch"), "old").unwrap();
    env.delegate(&repo, ["status", "--check"]).expect(0);
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert!(dry["bytes_freed"].as_u64().unwrap() >= 7, "{dry}");
    assert!(new.exists() && removed.exists());
    env.delegate(&repo, ["gc", "--json"]).expect(0);
    assert!(!new.exists(), "{} left", new.display());
    assert!(!removed.exists(), "{} left", removed.display());
    let id = live["batch"].as_str().unwrap();
    assert!(
        batches.join(id).join("batch.toml").exists(),
        "the live batch must stay"
    );
}

/// A hidden state folder (a removal killed half-way) that still holds a
/// write-back journal is not a batch: no command recovers it or reports it
/// as pending, and gc removes it.
#[test]
fn a_journal_in_a_hidden_state_folder_is_not_recovered() {
    let (env, repo) = Env::with_repo("small");
    let batches = common_dir(&repo).join("delegate/batches");
    let hidden = batches.join(format!(".{ID}.removed-4242"));
    std::fs::create_dir_all(&hidden).unwrap();
    std::fs::write(hidden.join("writeback.journal"), "not a journal\n").unwrap();
    let st = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["problems"], serde_json::json!([]), "{st}");
    let dry = env
        .delegate(&repo, ["gc", "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(dry["pending_writebacks"], serde_json::json!([]), "{dry}");
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["recovered_writebacks"], serde_json::json!([]), "{gc}");
    assert!(!hidden.exists());
}
