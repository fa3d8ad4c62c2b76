//! `gc --dry-run` and `gc` agree (design §3.4): for the states a kill or
//! an attacker leaves, what the dry run says it would remove is what the
//! real run then removes, and both counts are true to what goes from the
//! disk and from `git worktree list`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::common::fixtures::{
    common_dir, id, paused_at, prepare, registrations, task_root, wait_stale, wait_until,
    workspace_base,
};
use crate::common::Env;

/// Registrations whose folder (what their `gitdir` names) is gone.
fn dead_registrations(common: &Path) -> Vec<String> {
    registrations(common)
        .into_iter()
        .filter(|r| {
            let gitdir = std::fs::read_to_string(common.join("worktrees").join(r).join("gitdir"))
                .unwrap_or_default();
            let target = PathBuf::from(gitdir.trim_end());
            !target.parent().is_some_and(|f| f.exists())
        })
        .collect()
}

/// What a gc document says it removes, without the fields that only the
/// real run fills (`dry_run`).
fn removes(doc: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in [
        "batches",
        "workspaces_removed",
        "registrations_removed",
        "refs_removed",
        "refs_kept",
        "left_alone",
        "incomplete",
        "skipped",
        "idle_workspaces_removed",
        "bytes_freed",
    ] {
        out.insert(k.into(), doc.get(k).cloned().unwrap_or(Value::Null));
    }
    let rescued: Vec<Value> = doc["rescued"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["batch"], r["task"], r["ref"]]))
        .collect();
    out.insert("rescued".into(), Value::from(rescued));
    let skipped: Vec<Value> = doc["skipped"]
        .as_array()
        .map(|s| s.iter().map(|x| x["batch"].clone()).collect())
        .unwrap_or_default();
    out.insert("skipped".into(), Value::from(skipped));
    Value::Object(out)
}

#[test]
fn gc_dry_run_and_gc_agree_and_count_truly_on_the_states_kills_leave() {
    let (env, repo) = Env::with_repo("proj");
    let common = common_dir(&env, &repo);
    let base = workspace_base(&env, &repo);

    // 1. A stale batch whose workspace folder the user deleted: its
    // registration is left.
    let a = prepare(&env, &repo, &["--ttl", "1s"]);
    std::fs::remove_dir_all(task_root(&a, 0)).unwrap();

    // 2. A registration `delegate-*` whose folder is gone and that no batch
    // owns (its batch's state was lost too).
    let b = prepare(&env, &repo, &[]);
    std::fs::remove_dir_all(task_root(&b, 0)).unwrap();
    std::fs::remove_dir_all(common.join("delegate/batches").join(id(&b))).unwrap();

    // 3. A prepare killed after `marked`.
    let mut cmd = env.delegate_cmd(&repo);
    cmd.args(["prepare", "-n", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paused_at(&env, cmd, "marked");
    child.kill().unwrap();
    child.wait().unwrap();

    // 4. An apply killed (last: every command that takes the lock
    // puts back what a killed one left aside) at `prove-aside` (its workspace left `.aside` in
    // the trash), the batch then stale.
    let c = prepare(&env, &repo, &["--ttl", "2s"]);
    std::fs::write(task_root(&c, 0).join("c.txt"), "c\n").unwrap();
    let mut cmd = env.delegate_cmd(&repo);
    cmd.args(["apply", &id(&c)[..8]])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paused_at(&env, cmd, "prove-aside");
    child.kill().unwrap();
    child.wait().unwrap();
    let aside = |base: &Path| -> Vec<String> {
        std::fs::read_dir(base.join(".trash"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".aside"))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(aside(&base).len(), 1);

    wait_stale(&env, &repo, &id(&a));
    wait_stale(&env, &repo, &id(&c));
    // Leases are told in whole seconds.
    wait_until("the leases to pass", || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        true
    });

    let regs_before = registrations(&common);
    let dead_before = dead_registrations(&common);
    let refs_before = env.private_refs(&repo);
    let dry = env.delegate(&repo, ["gc", "--dry-run", "--json"]).json();
    // The dry run changed nothing.
    assert_eq!(registrations(&common), regs_before);
    assert_eq!(env.private_refs(&repo), refs_before);
    assert_eq!(aside(&base).len(), 1);

    let real = env.delegate(&repo, ["gc", "--json"]).json();
    assert_eq!(
        removes(&dry),
        removes(&real),
        "dry:\n{dry:#}\nreal:\n{real:#}"
    );

    // The counts are true.
    let regs_after = registrations(&common);
    // (The workspace left aside goes back to its place first, and then
    // counts as a workspace removed, its registration with it.)
    let c_reg = format!("delegate-{}-", &id(&c)[..8]);
    let dead_gone = dead_before
        .iter()
        .filter(|r| !regs_after.contains(r) && !r.starts_with(&c_reg))
        .count();
    assert_eq!(
        real["registrations_removed"].as_u64().unwrap() as usize,
        dead_gone,
        "{dead_before:?} {regs_after:?} {real:#}"
    );
    assert_eq!(regs_after, Vec::<String>::new(), "{real:#}");
    let refs_after = env.private_refs(&repo);
    assert_eq!(
        real["refs_removed"].as_u64().unwrap() as usize,
        refs_before.len() - refs_after.len(),
        "{refs_before:?} {refs_after:?} {real:#}"
    );
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(aside(&base).is_empty(), "{real:#}");
    assert_eq!(real["workspaces_removed"], 1, "{real:#}");
    assert_eq!(real["registrations_removed"], 2, "{real:#}");
    // A second gc finds nothing left.
    let again = env.delegate(&repo, ["gc", "--json"]).expect(0).json();
    assert_eq!(again["workspaces_removed"], 0, "{again:#}");
    assert_eq!(again["registrations_removed"], 0, "{again:#}");
    assert_eq!(again["batches"], json!([]), "{again:#}");
}

/// The kinds of the problems `status --json` reports.
fn problem_kinds(env: &Env, repo: &Path) -> Vec<String> {
    let doc = env.delegate(repo, ["status", "--json"]).expect(0).json();
    doc["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|x| x["kind"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `status --check` reports, without waiting for gc, a workspace a killed
/// apply left aside in the trash and a registration of ours whose folder
/// is gone (design §3.3); each message names `git delegate gc`, which,
/// followed literally, clears it.
#[test]
fn status_check_reports_a_workspace_left_aside_and_a_dead_registration_until_gc() {
    let (env, repo) = Env::with_repo("proj");
    let common = common_dir(&env, &repo);
    let base = workspace_base(&env, &repo);

    // A registration of ours whose folder is gone, that no batch owns.
    let b = prepare(&env, &repo, &[]);
    std::fs::remove_dir_all(task_root(&b, 0)).unwrap();
    std::fs::remove_dir_all(common.join("delegate/batches").join(id(&b))).unwrap();
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    crate::common::assert_has(&text, &format!("delegate-{}-1", &id(&b)[..8]));
    assert_eq!(problem_kinds(&env, &repo), ["dead_registration"]);
    let gc = crate::common::printed_command(&text, "git delegate gc");
    env.sh(&repo, &gc).expect(0);
    env.delegate(&repo, ["status", "--check"]).expect(0);
    assert_eq!(registrations(&common), Vec::<String>::new());

    // A live batch's workspace left aside by an apply killed while it
    // proved it.
    let c = prepare(&env, &repo, &[]);
    let ws = task_root(&c, 0);
    std::fs::write(ws.join("c.txt"), "c\n").unwrap();
    let mut cmd = env.delegate_cmd(&repo);
    cmd.args(["apply"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paused_at(&env, cmd, "prove-aside");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!ws.exists());
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    crate::common::assert_has(&text, ".aside");
    assert_eq!(problem_kinds(&env, &repo), ["workspace_aside"]);
    let doc = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let p = &doc["problems"][0];
    assert_eq!(p["batch"], id(&c).as_str(), "{doc:#}");
    assert!(
        p["path"]
            .as_str()
            .is_some_and(|p| p.starts_with(base.join(".trash").to_str().unwrap())),
        "{doc:#}"
    );
    let gc = crate::common::printed_command(&text, "git delegate gc");
    env.sh(&repo, &gc).expect(0);
    assert_eq!(std::fs::read_to_string(ws.join("c.txt")).unwrap(), "c\n");
    env.delegate(&repo, ["status", "--check"]).expect(0);
}
