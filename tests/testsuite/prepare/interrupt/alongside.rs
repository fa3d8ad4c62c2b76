//! An interrupted batch beside others: a corrupt and an ordinary batch,
//! and an outer batch whose workspace hosts it (dropped, or stale and
//! reclaimed by gc).

use super::*;
use crate::common::files::read;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

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
    let good = id(&good);
    let bad = prepare(&env, &repo, &[]);
    let bad = id(&bad);
    let toml = common_dir(&repo)
        .join("delegate/batches")
        .join(&bad)
        .join("batch.toml");
    let text = read(&toml);
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
    let outer_id = id(&outer);
    let ws = task_root(&outer, 0);
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
    let ws = task_root(&outer, 0);
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
