//! When the remote or a worker fails: a rejecting or unreachable remote,
//! `submit` outside a joined workspace, a proposal not on the baseline, a
//! task that fails on its submission, and how git is run for the
//! transport (never prompting, without the source's variables).

use super::*;
use crate::common::assert_has;
use crate::common::fixtures::id;
use crate::common::succeed;

/// The user's `status --json` lists no batch.
fn assert_no_batches(t: &Two) {
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["batches"], Value::Array(vec![]));
}

#[test]
fn a_rejecting_remote_undoes_the_prepare() {
    let t = Two::new();
    let hook = t.bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho refused by policy >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", "origin", "a", "--json"])
        .expect(3);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::remote_failed");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert_has(msg, "git push");
    assert_has(msg, "origin");
    assert_has(msg, "refused by policy");
    // Nothing left: no batch, no refs, the source as it was.
    assert_no_batches(&t);
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());
    assert_eq!(t.remote_refs(), Vec::<String>::new());
    assert_eq!(read(&t.src.join("README")), "hello\ndirty\n");
    assert_eq!(read(&t.src.join("untracked.txt")), "not yet added\n");
}

#[test]
fn an_unreachable_remote_loses_nothing() {
    let t = Two::new();
    // At prepare: refused, nothing made.
    let gone = format!("file://{}/nowhere.git", t.user.path().display());
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", &gone, "a"])
        .expect(3);
    assert_has(&run.stderr, "delegate::remote_failed");
    assert!(run.stderr.contains(&gone), "{}", run.stderr);
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());

    // A batch whose remote goes away: apply fails before changing anything.
    let doc = t.prepare(&["a", "b"]);
    let id = id(&doc);
    let wa = t.join(&id, "a");
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    t.submit(&wa);
    let moved = t.user.path().join("moved.git");
    std::fs::rename(&t.bare, &moved).unwrap();
    let ap = t.apply(&id, 3);
    assert_eq!(ap["error"]["code"], "delegate::remote_failed");
    assert!(ap["error"]["message"].as_str().unwrap().contains("origin"));
    assert!(!t.src.join("a.txt").exists());
    let st = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    assert_eq!(st["batches"][0]["batch"], id.as_str());
    // status --fetch warns, and says nothing it does not know.
    let st = t
        .user
        .delegate(&t.src, ["status", "--fetch", "--json"])
        .expect(0);
    assert_has(&st.stderr, "warning");
    assert!(st.json()["batches"][0]["tasks"][0]["submitted"].is_null());
    // The worker's submit to an unreachable remote: a clear error.
    let sub = t.worker.delegate(&wa, ["submit"]).expect(3);
    assert_has(&sub.stderr, "git push");

    // Back: the apply lands the work.
    std::fs::rename(&moved, &t.bare).unwrap();
    let ap = t.apply(&id, 0);
    assert_eq!(status_of(&ap, "a"), "applied");
    assert_eq!(read(&t.src.join("a.txt")), "a\n");

    // Dropped while the remote is away: a warning listing the refs, the
    // local batch removed whole.
    std::fs::rename(&t.bare, &moved).unwrap();
    let dr = t
        .user
        .delegate(&t.src, ["drop", &id, "--force", "--json"])
        .expect(0);
    let doc = dr.json();
    let w = &doc["warnings"][0];
    assert_eq!(w["code"], "remote_refs_left");
    assert!(w["refs"]
        .as_array()
        .unwrap()
        .contains(&Value::String(format!(
            "refs/pi-delegate/batches/{id}/baseline"
        ))));
    assert_has(&dr.stderr, "git push");
    assert_eq!(t.user.private_refs(&t.src), Vec::<String>::new());
    assert_no_batches(&t);
}

#[test]
fn submit_outside_a_joined_workspace_is_refused() {
    let t = Two::new();
    let run = t.user.delegate(&t.src, ["submit", "--json"]).expect(2);
    assert_eq!(run.json()["error"]["code"], "delegate::not_joined");
    let run = t
        .user
        .delegate(&t.src, ["prepare", "--remote", "nosuchremote", "a"])
        .expect(2);
    assert_has(&run.stderr, "delegate::unknown_remote");
}

#[test]
fn a_proposal_not_on_the_baseline_fails_and_a_dry_run_fetches_no_ref() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b"]);
    // Task a: pushed by hand, on the source's HEAD instead of the baseline.
    let wa = t.join(&id, "a");
    t.worker
        .git(&wa, ["checkout", "-q", "--detach", "origin/main"]);
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    t.worker.git(&wa, ["add", "a.txt"]);
    t.worker
        .git(&wa, ["commit", "-q", "-m", "not on the baseline"]);
    t.worker.git(
        &wa,
        [
            "push",
            "-q",
            "origin",
            &format!("HEAD:refs/pi-delegate/batches/{id}/tasks/a/proposal"),
        ],
    );
    let wb = t.join(&id, "b");
    std::fs::write(wb.join("b.txt"), "b\n").unwrap();
    t.submit(&wb);

    // A dry run: what would happen, with no ref written here.
    let before = t.user.private_refs(&t.src);
    let dry = t
        .user
        .delegate(&t.src, ["apply", &id, "--dry-run", "--json"])
        .expect(1)
        .json();
    assert_eq!(status_of(&dry, "b"), "applied");
    assert_eq!(t.user.private_refs(&t.src), before);
    assert!(!t.src.join("b.txt").exists());

    let ap = t.apply(&id, 1);
    assert_eq!(status_of(&ap, "a"), "failed");
    assert_eq!(ap["tasks"][0]["reason"], "snapshot_failed");
    assert!(ap["tasks"][0]["workspace"].is_null());
    assert_eq!(status_of(&ap, "b"), "applied");
    assert!(!t.src.join("a.txt").exists());
    assert_eq!(read(&t.src.join("b.txt")), "b\n");
    assert_eq!(ap["batch_open"], true);
}

#[test]
fn transport_runs_git_never_prompting_and_without_the_sources_variables() {
    let t = Two::new();
    // A `git` first on PATH that logs its environment, then runs the real one.
    let real = crate::common::procs::git_path();
    let bin = t.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = t.user.path().join("git.log");
    let script = format!(
        "#!/bin/sh\n{{ echo \"CALL $*\"; env | grep '^GIT_' | sort; }} >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        real
    );
    // Written by a child process (no ETXTBSY when another test thread forks).
    t.user
        .sh(
            t.user.path(),
            &format!("cat > bin/git <<'EOF'\n{script}EOF\nchmod +x bin/git"),
        )
        .expect(0);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = t.user.delegate_cmd(&t.src);
    cmd.env("PATH", &path)
        .env("GIT_DIR", t.src.join(".git"))
        .env("GIT_WORK_TREE", &t.src)
        .args(["prepare", "--remote", "origin", "a", "--json"]);
    succeed(cmd);
    let logged = read(&log);
    let push: Vec<&str> = logged
        .split("CALL ")
        .filter(|c| c.starts_with("push"))
        .collect();
    assert_eq!(push.len(), 1, "{logged}");
    let vars: Vec<&str> = push[0].lines().skip(1).collect();
    assert!(vars.contains(&"GIT_TERMINAL_PROMPT=0"), "{vars:?}");
    assert!(
        vars.contains(&format!("GIT_DIR={}", t.src.join(".git").display()).as_str()),
        "{vars:?}"
    );
    assert!(
        !vars.iter().any(|v| v.starts_with("GIT_WORK_TREE=")),
        "{vars:?}"
    );
}

/// A remote task whose submission cannot be applied (not a commit on the
/// baseline) has no workspace here to fix: the apply hint says to submit
/// again, and followed as printed (the worker's `git delegate submit` in
/// its workspace, then the user's `git delegate apply ID`), the work lands.
#[test]
fn a_remote_task_that_fails_on_its_submission_is_told_to_submit_again() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b"]);
    let wa = t.join(&id, "a");
    // Pushed by hand: the source's HEAD, not a commit on the baseline.
    t.worker.git(
        &wa,
        [
            "push",
            "-q",
            "origin",
            &format!("origin/main:refs/pi-delegate/batches/{id}/tasks/a/proposal"),
        ],
    );
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    let wb = t.join(&id, "b");
    std::fs::write(wb.join("b.txt"), "b\n").unwrap();
    t.submit(&wb);

    let run = t.user.delegate(&t.src, ["apply", &id]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    let line = text
        .lines()
        .find(|l| l.starts_with("  - task a:"))
        .unwrap_or_else(|| panic!("no hint for task a in:\n{text}"));
    assert!(!line.contains("fix the cause"), "{line}");
    assert!(!line.contains("make the work fit"), "{line}");
    assert_eq!(read(&t.src.join("b.txt")), "b\n");
    t.worker
        .sh(
            &wa,
            &crate::common::printed_command(line, "git delegate submit"),
        )
        .expect(0);
    t.user
        .sh(
            &t.src,
            &crate::common::printed_command(line, "git delegate apply"),
        )
        .expect(0);
    assert_eq!(read(&t.src.join("a.txt")), "a\n");
}
