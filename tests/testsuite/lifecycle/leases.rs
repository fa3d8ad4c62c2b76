//! Leases (design §1, §3.6) as status, `status --check`, renew and gc see
//! them: expiry, an owner that exited, a live owner, a recycled pid.
use crate::common::files::read;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::assert_has;
use crate::common::fixtures::prepare;
use crate::common::Env;

/// The lease state of `batch` as `status --json` reports it.
fn lease_state(env: &Env, repo: &Path, batch: &str) -> String {
    let doc = env.delegate(repo, ["status", "--json"]).json();
    doc["batches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["batch"] == batch)
        .unwrap_or_else(|| panic!("batch {batch} not in {doc}"))["lease"]["state"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Poll until the lease of `batch` is `want` (generous timeout for loaded machines).
fn wait_for_state(env: &Env, repo: &Path, batch: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = lease_state(env, repo, batch);
        if state == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "lease of {batch} stayed {state}, wanted {want}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn batch_toml(repo: &Path, batch: &str) -> PathBuf {
    repo.join(".git/delegate/batches")
        .join(batch)
        .join("batch.toml")
}

#[test]
fn expired_lease_is_stale_until_renewed() {
    let (env, repo) = Env::with_repo("proj");
    let doc = prepare(&env, &repo, &["--ttl", "1s"]);
    let id = id(&doc);
    let short = &id[..8];
    wait_for_state(&env, &repo, &id, "expired");

    // `status --check` prints only the problem and exits 1.
    let check = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert_has(&check.stdout, short);
    assert_has(&check.stdout, "expired");
    assert!(!check.stdout.contains("task"), "{}", check.stdout);
    let doc = env
        .delegate(&repo, ["status", "--check", "--json"])
        .expect(1)
        .json();
    assert_eq!(doc["problems"][0]["batch"], id.as_str());
    assert_eq!(doc["problems"][0]["kind"], "expired");

    // renew extends an expired lease; the check is clean again.
    let renewed = env
        .delegate(&repo, ["renew", short, "--ttl", "1h", "--json"])
        .expect(0)
        .json();
    assert_eq!(renewed["lease"]["state"], "live");
    assert_eq!(lease_state(&env, &repo, &id), "live");
    let check = env.delegate(&repo, ["status", "--check"]).expect(0);
    assert_eq!(check.stdout, "");
}

#[test]
fn owner_that_exited_orphans_the_lease() {
    let (env, repo) = Env::with_repo("proj");
    // A process that lives exactly as long as we keep its stdin open.
    let mut owner = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = owner.id().to_string();
    let doc = prepare(&env, &repo, &["--owner-pid", &pid, "--ttl", "1h"]);
    let id = id(&doc);
    assert_eq!(doc["lease"]["owner_pid"].as_u64(), Some(owner.id() as u64));
    assert_eq!(lease_state(&env, &repo, &id), "live");
    env.delegate(&repo, ["status", "--check"]).expect(0);

    drop(owner.stdin.take());
    owner.wait().unwrap();
    assert_eq!(lease_state(&env, &repo, &id), "orphaned");
    let check = env.delegate(&repo, ["status", "--check"]).expect(1);
    assert!(check.stdout.contains(&id[..8]), "{}", check.stdout);

    // An orphaned lease is renewed only with a new owner.
    let refused = env.delegate(&repo, ["renew", "--json"]).expect(2).json();
    assert_eq!(refused["error"]["code"], "delegate::orphaned_lease");
    assert_eq!(lease_state(&env, &repo, &id), "orphaned");
    let me = std::process::id().to_string();
    let renewed = env
        .delegate(&repo, ["renew", "--owner-pid", &me, "--json"])
        .expect(0)
        .json();
    assert_eq!(renewed["lease"]["state"], "live");
    assert_eq!(lease_state(&env, &repo, &id), "live");
}

/// A batch whose owner is this test process, its lease live: (env, repo,
/// batch id, the task's workspace).
fn owned_by_this_process() -> (Env, PathBuf, String, PathBuf) {
    let (env, repo) = Env::with_repo("proj");
    let me = std::process::id().to_string();
    let doc = prepare(&env, &repo, &["--owner-pid", &me, "--ttl", "1h"]);
    let id = id(&doc);
    let ws = task_root(&doc, 0);
    assert_eq!(lease_state(&env, &repo, &id), "live");
    (env, repo, id, ws)
}

#[test]
fn live_owner_keeps_the_lease_and_gc_away() {
    let (env, repo, _, ws) = owned_by_this_process();
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"].as_array().unwrap().len(), 0);
    assert!(ws.join("README").exists());
    assert_eq!(env.private_refs(&repo).len(), 1);
}

#[test]
fn recycled_pid_counts_as_gone() {
    let (env, repo, id, ws) = owned_by_this_process();

    // Same pid, another start time: the process holding that pid now is
    // not the one that owned the batch.
    let path = batch_toml(&repo, &id);
    let text = read(&path);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("owner_start"))
        .expect("owner_start recorded")
        .to_string();
    let start: u64 = line.split('=').nth(1).unwrap().trim().parse().unwrap();
    let edited = text.replace(&line, &format!("owner_start = {}", start + 12_345));
    std::fs::write(&path, edited).unwrap();
    assert_eq!(lease_state(&env, &repo, &id), "orphaned");
    env.delegate(&repo, ["status", "--check"]).expect(1);

    // gc treats it as stale: the (unchanged) workspace goes, nothing to rescue.
    let gc = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(gc["batches"][0], id.as_str());
    assert_eq!(gc["rescued"].as_array().unwrap().len(), 0);
    assert!(!ws.exists());
    assert!(env.private_refs(&repo).is_empty());
}
