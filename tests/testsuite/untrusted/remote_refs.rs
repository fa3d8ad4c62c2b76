//! Remote refs are compared before they are changed (design §3.14 "Remote
//! refs"): `submit` to a batch that ended is refused and pushes nothing;
//! apply, drop and gc delete a ref on the remote only while it holds what
//! they fetched, a ref that moved meanwhile is a newer submission, kept and
//! reported, and no command they print deletes it. Two machines in one
//! test, as in workers::remote: a bare repository over `file://` as the
//! remote, the user's clone (the source), a worker with its own HOME. A
//! newer submission arrives at a known moment: a pre-receive hook on the
//! remote moves the proposal ref when the batch's end asks to delete it.
use crate::common::files::read;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::assert_has;
use crate::common::remote::Two;
use crate::common::Run;
use serde_json::Value;

const ZEROS: &str = "0000000000000000000000000000000000000000";

fn baseline_ref(id: &str) -> String {
    format!("refs/pi-delegate/batches/{id}/baseline")
}

fn proposal_ref(id: &str, task: &str) -> String {
    format!("refs/pi-delegate/batches/{id}/tasks/{task}/proposal")
}

impl Two {
    /// The worker writes `a.txt` and submits: the proposal's commit.
    fn submit_a(&self, ws: &Path, content: &str) -> String {
        std::fs::write(ws.join("a.txt"), content).unwrap();
        self.submit(ws)["proposal"].as_str().unwrap().to_string()
    }

    /// The remote's refs under refs/pi-delegate/, as `git ls-remote` lists them.
    fn ls_remote(&self) -> BTreeMap<String, String> {
        self.user
            .git(&self.src, ["ls-remote", &self.url, "refs/pi-delegate/*"])
            .lines()
            .filter_map(|l| {
                let (id, name) = l.split_once('\t')?;
                Some((name.to_string(), id.to_string()))
            })
            .collect()
    }

    fn hook(&self, script: &str) {
        let hook = self.bare.join("hooks/pre-receive");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, script).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn no_hook(&self) {
        std::fs::remove_file(self.bare.join("hooks/pre-receive")).unwrap();
    }

    /// A newer submission of `task`, staged on the remote (`refs/test/newer`)
    /// and put in place by the pre-receive hook at the moment the batch's
    /// end asks the remote to delete the task's proposal: exactly between
    /// what the end listed and what it deletes.
    fn newer_arrives_at_the_end(&self, id: &str, task: &str, newer: &str) {
        self.user
            .git(&self.bare, ["update-ref", "refs/test/newer", newer]);
        self.hook(&format!(
            "#!/bin/sh\n\
             while read old new ref; do\n\
             \x20 if [ \"$ref\" = '{}' ] && [ \"$new\" = {ZEROS} ]; then\n\
             \x20   env -u GIT_QUARANTINE_PATH git update-ref \"$ref\" \"$(git rev-parse refs/test/newer)\" || exit 1\n\
             \x20 fi\n\
             done\n\
             exit 0\n",
            proposal_ref(id, task)
        ));
    }

    /// Run every `git ...` command `run` printed between backticks, exactly
    /// as printed, in the source (whatever each exits with).
    fn run_printed(&self, run: &Run) -> Vec<String> {
        let text = format!("{}{}", run.stdout, run.stderr);
        let cmds: Vec<String> = text
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|c| c.starts_with("git "))
            .map(str::to_string)
            .collect();
        for c in &cmds {
            self.user.sh(&self.src, c);
        }
        cmds
    }
}

/// The `remote_refs_left` warnings of a document, by reason.
fn warning<'a>(doc: &'a Value, reason: &str) -> &'a Value {
    doc["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings in {doc}"))
        .iter()
        .find(|w| w["code"] == "remote_refs_left" && w["reason"] == reason)
        .unwrap_or_else(|| panic!("no remote_refs_left warning with reason {reason} in {doc}"))
}

fn lists(w: &Value, name: &str) -> bool {
    w["refs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str() == Some(name))
}

fn refused_as_ended(t: &Two, ws: &Path) {
    let before = t.ls_remote();
    std::fs::write(ws.join("a.txt"), "too late\n").unwrap();
    let run = t.worker.delegate(ws, ["submit", "--json"]).expect(3);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::batch_ended", "{doc}");
    assert_eq!(t.ls_remote(), before);
    let human = t.worker.delegate(ws, ["submit"]).expect(3);
    assert!(
        !human.stdout.contains("Submitted"),
        "{}{}",
        human.stdout,
        human.stderr
    );
    assert_has(&human.stderr, "delegate::batch_ended");
    assert_eq!(t.ls_remote(), before);
}

#[test]
fn submit_after_apply_is_refused_and_pushes_nothing() {
    let t = Two::new();
    let id = t.prepare_id(&["a"]);
    let ws = t.join(&id, "a");
    t.submit_a(&ws, "a\n");
    t.user.delegate(&t.src, ["apply", &id]).expect(0);
    assert_eq!(t.ls_remote(), BTreeMap::new());
    refused_as_ended(&t, &ws);
}

#[test]
fn submit_after_drop_is_refused_and_pushes_nothing() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b"]);
    let ws = t.join(&id, "a");
    t.user.delegate(&t.src, ["drop", &id]).expect(0);
    assert_eq!(t.ls_remote(), BTreeMap::new());
    refused_as_ended(&t, &ws);
}

#[test]
fn a_submission_arriving_while_apply_ends_the_batch_is_kept_and_reported() {
    let t = Two::new();
    let id = t.prepare_id(&["a"]);
    let ws = t.join(&id, "a");
    let newer = t.submit_a(&ws, "newer\n");
    let fetched = t.submit_a(&ws, "first\n");
    t.newer_arrives_at_the_end(&id, "a", &newer);
    let run = t.user.delegate(&t.src, ["apply", &id, "--json"]).expect(0);
    let doc = run.json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(read(&t.src.join("a.txt")), "first\n");
    let remote = t.ls_remote();
    assert_eq!(remote.get(&proposal_ref(&id, "a")), Some(&newer), "{doc}");
    assert!(!remote.contains_key(&baseline_ref(&id)), "{remote:?}");
    assert_ne!(newer, fetched);
    let w = warning(&doc, "newer_submission");
    assert!(lists(w, &proposal_ref(&id, "a")), "{w}");
    assert!(!lists(w, &baseline_ref(&id)), "{w}");
    assert_has(&run.stderr, "newer");
    // What it prints, run as printed, leaves the newer work where it is.
    t.run_printed(&run);
    assert_eq!(t.ls_remote().get(&proposal_ref(&id, "a")), Some(&newer));
}

#[test]
fn the_command_printed_for_a_failing_remote_never_deletes_a_newer_submission() {
    let t = Two::new();
    let id = t.prepare_id(&["a"]);
    let ws = t.join(&id, "a");
    t.submit_a(&ws, "first\n");
    t.hook(&format!(
        "#!/bin/sh\n\
         while read old new ref; do\n\
         \x20 if [ \"$new\" = {ZEROS} ]; then echo deletions refused by policy >&2; exit 1; fi\n\
         done\n\
         exit 0\n"
    ));
    let run = t.user.delegate(&t.src, ["apply", &id, "--json"]).expect(0);
    let doc = run.json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    let w = warning(&doc, "remote_failed");
    assert!(lists(w, &baseline_ref(&id)), "{w}");
    assert!(lists(w, &proposal_ref(&id, "a")), "{w}");
    let help = w["help"].as_str().unwrap().to_string();
    assert_has(&help, "--force-with-lease=");
    // The worker submits again before the remote is cleaned up.
    let newer = t.submit_a(&ws, "newer\n");
    t.no_hook();
    let cmd = crate::common::printed_command(&help, "git push");
    t.user.sh(&t.src, &cmd);
    let remote = t.ls_remote();
    assert!(
        !remote.contains_key(&baseline_ref(&id)),
        "{cmd}: {remote:?}"
    );
    assert_eq!(remote.get(&proposal_ref(&id, "a")), Some(&newer), "{cmd}");
    // The same command on stderr.
    assert!(run.stderr.contains(&cmd), "{}", run.stderr);
}

#[test]
fn drop_keeps_a_submission_that_arrives_while_it_deletes() {
    let t = Two::new();
    let id = t.prepare_id(&["a"]);
    let ws = t.join(&id, "a");
    let newer = t.submit_a(&ws, "newer\n");
    t.submit_a(&ws, "first\n");
    t.newer_arrives_at_the_end(&id, "a", &newer);
    let run = t
        .user
        .delegate(&t.src, ["drop", &id, "--force", "--json"])
        .expect(0);
    let doc = run.json();
    let w = warning(&doc, "newer_submission");
    assert!(lists(w, &proposal_ref(&id, "a")), "{w}");
    let remote = t.ls_remote();
    assert_eq!(remote.get(&proposal_ref(&id, "a")), Some(&newer));
    assert!(!remote.contains_key(&baseline_ref(&id)), "{remote:?}");
    t.run_printed(&run);
    assert_eq!(t.ls_remote().get(&proposal_ref(&id, "a")), Some(&newer));
}

#[test]
fn gc_keeps_a_submission_that_arrives_after_its_rescue() {
    let t = Two::new();
    // An owner that is gone: the batch is orphaned at once.
    let mut owner = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = owner.id().to_string();
    let id = t.prepare_id(&["a", "--owner-pid", &pid]);
    owner.kill().unwrap();
    owner.wait().unwrap();
    let ws = t.join(&id, "a");
    let newer = t.submit_a(&ws, "newer\n");
    let rescued = t.submit_a(&ws, "first\n");
    t.newer_arrives_at_the_end(&id, "a", &newer);
    let run = t.user.delegate(&t.src, ["gc", "--json"]).expect(0);
    let doc = run.json();
    assert_eq!(doc["rescued"][0]["task"], "a", "{doc}");
    let kept = proposal_ref(&id, "a");
    assert_eq!(t.user.git(&t.src, ["rev-parse", &kept]).trim(), rescued);
    let w = warning(&doc, "newer_submission");
    assert!(lists(w, &kept), "{w}");
    assert_eq!(t.ls_remote().get(&kept), Some(&newer));
    t.run_printed(&run);
    assert_eq!(t.ls_remote().get(&kept), Some(&newer));
}

#[test]
fn submit_from_the_batchs_own_repository_asks_its_record_first() {
    let t = Two::new();
    let id = t.prepare_id(&["a", "b"]);
    // Joined into the source's own repository: a linked worktree of it.
    let ws = t.user.path().join("ws-a");
    t.user
        .delegate(&t.src, ["join", &t.url, &id, "a", ws.to_str().unwrap()])
        .expect(0);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    t.user.delegate(&ws, ["submit"]).expect(0);
    // Task a lands; b keeps the batch open, its baseline still on the remote.
    t.user
        .delegate(&t.src, ["apply", &id, "--only", "a"])
        .expect(0);
    let before = t.ls_remote();
    assert!(before.contains_key(&baseline_ref(&id)), "{before:?}");
    std::fs::write(ws.join("a.txt"), "a again\n").unwrap();
    let run = t.user.delegate(&ws, ["submit", "--json"]).expect(3);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::batch_ended", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("applied"),
        "{doc}"
    );
    assert_eq!(t.ls_remote(), before);
    // The batch ends while the remote refuses deletions: its baseline stays
    // there, but this repository's copy is gone, so submit still refuses.
    t.hook(&format!(
        "#!/bin/sh\n\
         while read old new ref; do\n\
         \x20 if [ \"$new\" = {ZEROS} ]; then exit 1; fi\n\
         done\n\
         exit 0\n"
    ));
    t.user.delegate(&t.src, ["drop", &id, "--force"]).expect(0);
    let before = t.ls_remote();
    assert!(before.contains_key(&baseline_ref(&id)), "{before:?}");
    let run = t.user.delegate(&ws, ["submit", "--json"]).expect(3);
    assert_eq!(run.json()["error"]["code"], "delegate::batch_ended");
    assert_eq!(t.ls_remote(), before);
}
