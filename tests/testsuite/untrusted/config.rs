//! Commands from the shared git dir (design §3.18): a worker's workspace is
//! a linked worktree sharing `<common-dir>/delegate.toml`, so a worker can
//! plant `[apply] verify` or `[workspace] setup` there. Neither runs until
//! the user confirms the file (`git delegate config --trust`); apply reports
//! the change as a side effect and leaves the verification out (exit 1, its
//! tasks landed), prepare refuses before anything is made (exit 3,
//! `delegate::untrusted_config`). The user's own edits made while no batch
//! is open need no confirmation, and a config error always names its line.

use std::path::{Path, PathBuf};

use crate::common::fixtures::{
    batch_folders, common_dir, error_code, prepare, registrations, task_root,
};
use crate::common::{assert_has, printed_command, Env};
use serde_json::Value;

/// What a worker does from its workspace: append `text` to the
/// delegate.toml of the common dir git names there.
fn plant(env: &Env, ws: &Path, text: &str) -> PathBuf {
    let common = common_dir(env, ws);
    let file = common.join("delegate.toml");
    let mut was = std::fs::read_to_string(&file).unwrap_or_default();
    was.push_str(text);
    std::fs::write(&file, was).unwrap();
    file
}

/// A batch of one task whose worker changed `README` and planted `text`.
fn planted(env: &Env, repo: &Path, text: &str) -> (PathBuf, PathBuf) {
    let ws = task_root(&prepare(env, repo, &[]), 0);
    std::fs::write(ws.join("README"), "by the task\n").unwrap();
    let file = plant(env, &ws, text);
    (ws, file)
}

/// `touch MARKER` for a marker file in the test's folder (the verification
/// runs in a workspace of its own: only an absolute path tells it ran).
fn touch(env: &Env, name: &str) -> (PathBuf, String) {
    let marker = env.path().join(name);
    let cmd = format!("touch {}", marker.display());
    (marker, cmd)
}

/// The command a warning or error prints to confirm the file, as printed.
fn confirm_hint(text: &str) -> String {
    let at = text
        .find("confirm the file with `")
        .unwrap_or_else(|| panic!("no confirmation hint in:\n{text}"));
    let cmd = printed_command(&text[at..], "git -C");
    assert_has(&cmd, "delegate config --trust");
    cmd
}

/// What a prepare makes: private refs, worktree registrations (as `git
/// worktree list` counts them too), batch folders.
fn made(env: &Env, repo: &Path) -> (Vec<String>, Vec<String>, usize, Vec<String>) {
    let common = common_dir(env, repo);
    let listed = env.git(repo, ["worktree", "list", "--porcelain"]);
    (
        env.private_refs(repo),
        registrations(&common),
        listed.matches("worktree ").count(),
        batch_folders(&common),
    )
}

/// The delegate.toml side effects of an apply document: (change, detail).
fn delegate_effects(doc: &Value) -> Vec<(String, String)> {
    doc["side_effects"]
        .as_array()
        .unwrap_or_else(|| panic!("no side_effects in {doc}"))
        .iter()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/delegate.toml"))
        })
        .map(|e| {
            assert_eq!(e["kind"], "config", "{e}");
            assert!(e["task"].is_null(), "{e}");
            (
                e["change"].as_str().unwrap().to_string(),
                e["detail"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_verify_a_worker_plants_is_not_run_by_a_plain_apply_and_is_reported() {
    let (env, repo) = Env::with_repo("proj");
    let (pwned, cmd) = touch(&env, "PWNED");
    let (_ws, file) = planted(&env, &repo, &format!("[apply]\nverify = {cmd:?}\n"));
    let file = std::fs::canonicalize(file).unwrap();

    // The dry run says the same, running nothing.
    let dry = env
        .delegate(&repo, ["apply", "--dry-run", "--json"])
        .expect(1);
    assert_eq!(
        dry.json()["untrusted_config"]["left_out"][0]["key"],
        "apply.verify"
    );
    assert!(!pwned.exists());

    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let doc = run.json();
    // The task landed; the planted command did not run.
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(
        std::fs::read_to_string(repo.join("README")).unwrap(),
        "by the task\n"
    );
    assert!(!pwned.exists(), "the planted verify ran");
    // Reported as a side effect of the shared git dir, the key named.
    assert_eq!(
        delegate_effects(&doc),
        vec![("created".to_string(), "apply.verify".to_string())],
        "{doc}"
    );
    let effect = doc["side_effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["detail"] == "apply.verify")
        .unwrap();
    assert_eq!(effect["path"], file.to_str().unwrap());
    // Left out, said in the document: no verification ran.
    let u = &doc["untrusted_config"];
    assert_eq!(u["path"], file.to_str().unwrap(), "{doc}");
    assert_eq!(u["left_out"][0]["value"], cmd.as_str());
    assert_eq!(u["left_out"][0]["confirmed"], "");
    assert_eq!(doc["verify"]["outcome"], "not_run", "{doc}");
    assert_eq!(doc["verify"]["reason"], "untrusted_config", "{doc}");
    assert_eq!(doc["verify"]["command"], cmd.as_str());
    // The human warning names the key and how to confirm.
    assert_has(&run.stderr, "apply.verify");
    confirm_hint(&run.stderr);
    // The warning's way to look works as printed, and shows the key.
    let look = printed_command(&run.stderr, "git -C");
    assert!(look.ends_with("delegate config"), "{look}");
    let shown = env.sh(&repo, &look).expect(1);
    assert_has(&shown.stdout, "apply.verify");
}

#[test]
fn after_config_trust_the_planted_verify_runs_and_the_hint_works_from_a_task_folder() {
    let (env, repo) = Env::with_repo("proj");
    let (ran, cmd) = touch(&env, "RAN");
    let (ws, _) = planted(&env, &repo, &format!("[apply]\nverify = {cmd:?}\n"));
    let dry = env.delegate(&repo, ["apply", "--dry-run"]).expect(1);
    let confirm = confirm_hint(&dry.stderr);

    // `config --trust` itself is refused inside the task's workspace (its
    // worker could run it there), with the command for the user's tree.
    let refused = env.delegate(&ws, ["config", "--trust", "--json"]).expect(2);
    assert_eq!(error_code(&refused), "delegate::usage");
    let shown = env.delegate(&repo, ["config", "--json"]).expect(1).json();
    assert_eq!(shown["confirmed"], false, "{shown}");
    assert_eq!(shown["changes"][0]["key"], "apply.verify", "{shown}");
    assert_eq!(shown["changes"][0]["command"], true);
    assert_eq!(shown["left_out"][0]["key"], "apply.verify");

    // The printed hint works where the user may read it: in the task folder.
    env.sh(&ws, &confirm).expect(0);
    let shown = env.delegate(&repo, ["config", "--json"]).expect(0).json();
    assert_eq!(shown["confirmed"], true, "{shown}");
    assert!(!ran.exists());

    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(doc["verify"]["outcome"], "passed", "{doc}");
    assert!(doc.get("untrusted_config").is_none(), "{doc}");
    assert!(ran.exists(), "the confirmed verify did not run");
    // Still reported: it changed while the batch lived.
    assert_eq!(
        delegate_effects(&doc),
        vec![("created".to_string(), "apply.verify".to_string())]
    );
}

#[test]
fn verify_on_the_command_line_is_the_users_and_runs() {
    let (env, repo) = Env::with_repo("proj");
    let (pwned, planted_cmd) = touch(&env, "PWNED");
    let (mine, my_cmd) = touch(&env, "MINE");
    planted(&env, &repo, &format!("[apply]\nverify = {planted_cmd:?}\n"));
    let doc = env
        .delegate(&repo, ["apply", "--verify", &my_cmd, "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(doc["verify"]["command"], my_cmd.as_str());
    assert!(mine.exists());
    assert!(!pwned.exists());
    assert!(doc.get("untrusted_config").is_none(), "{doc}");
    assert_eq!(delegate_effects(&doc).len(), 1, "{doc}");
}

#[test]
fn a_verify_the_user_confirmed_runs_in_place_of_the_one_a_worker_changed() {
    let (env, repo) = Env::with_repo("proj");
    let (mine, my_cmd) = touch(&env, "MINE");
    let (pwned, planted_cmd) = touch(&env, "PWNED");
    let file = repo.join(".git/delegate.toml");
    // The user's own, written while no batch is open.
    std::fs::write(&file, format!("[apply]\nverify = {my_cmd:?}\n")).unwrap();
    let ws = task_root(&prepare(&env, &repo, &[]), 0);
    std::fs::write(ws.join("README"), "by the task\n").unwrap();
    // The worker swaps it for its own (a second table would not parse).
    std::fs::write(&file, format!("[apply]\nverify = {planted_cmd:?}\n")).unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(doc["verify"]["command"], my_cmd.as_str(), "{doc}");
    assert_eq!(doc["verify"]["outcome"], "passed", "{doc}");
    assert!(mine.exists());
    assert!(!pwned.exists());
    let left = &doc["untrusted_config"]["left_out"][0];
    assert_eq!(left["value"], planted_cmd.as_str(), "{doc}");
    assert_eq!(left["confirmed"], my_cmd.as_str(), "{doc}");
    assert_eq!(
        delegate_effects(&doc),
        vec![("changed".to_string(), "apply.verify".to_string())]
    );
}

#[test]
fn a_setup_a_worker_plants_stops_the_next_prepare_until_the_user_confirms_it() {
    let (env, repo) = Env::with_repo("proj");
    let (ran, cmd) = touch(&env, "SETUP-RAN");
    planted(&env, &repo, &format!("[workspace]\nsetup = {cmd:?}\n"));
    // The batch ends (applied, nothing left out: apply runs no setup).
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(
        delegate_effects(&doc),
        vec![("created".to_string(), "workspace.setup".to_string())]
    );
    let before = made(&env, &repo);
    assert_eq!(before.3, Vec::<String>::new());

    // No batch is open now, but the change was made while one was.
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    assert_eq!(error_code(&run), "delegate::untrusted_config");
    let err = &run.json()["error"];
    assert_eq!(err["left_out"][0]["key"], "workspace.setup", "{err}");
    assert_eq!(err["left_out"][0]["value"], cmd.as_str());
    assert_has(&run.stderr, "delegate::untrusted_config");
    assert!(!ran.exists(), "the planted setup ran");
    assert_eq!(made(&env, &repo), before, "prepare made something");
    // run too, before any worker.
    let run = env
        .delegate(&repo, ["run", "--json", "--", "true"])
        .expect(3);
    assert_eq!(error_code(&run), "delegate::untrusted_config");
    assert_eq!(made(&env, &repo), before, "run made something");

    // The hint, as printed (human output), confirms it; then it runs.
    let human = env.delegate(&repo, ["prepare"]).expect(3);
    let confirm = confirm_hint(&human.stderr);
    env.sh(&repo, &confirm).expect(0);
    prepare(&env, &repo, &[]);
    assert!(ran.exists(), "the confirmed setup did not run");
}

#[test]
fn a_setup_planted_while_another_batch_is_open_is_refused_too() {
    let (env, repo) = Env::with_repo("proj");
    let (ran, cmd) = touch(&env, "SETUP-RAN");
    planted(&env, &repo, &format!("[workspace]\nsetup = {cmd:?}\n"));
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(3);
    assert_eq!(error_code(&run), "delegate::untrusted_config");
    assert!(!ran.exists());
    // Only the first batch is there.
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["batches"].as_array().unwrap().len(), 1, "{status}");
}

#[test]
fn the_users_own_edits_while_no_batch_is_open_need_no_confirmation() {
    let (env, repo) = Env::with_repo("proj");
    let file = repo.join(".git/delegate.toml");
    // An existing repository with a setup, used before any record existed.
    let (first, cmd) = touch(&env, "FIRST");
    std::fs::write(&file, format!("[workspace]\nsetup = {cmd:?}\n")).unwrap();
    let ws = task_root(&prepare(&env, &repo, &[]), 0);
    assert!(first.exists());
    std::fs::write(ws.join("README"), "by the task\n").unwrap();
    env.delegate(&repo, ["apply"]).expect(0);

    // Between batches the user changes it, and adds a verification.
    let (second, setup) = touch(&env, "SECOND");
    let (verified, verify) = touch(&env, "VERIFIED");
    std::fs::write(
        &file,
        format!("[workspace]\nsetup = {setup:?}\n[apply]\nverify = {verify:?}\n"),
    )
    .unwrap();
    let ws = task_root(&prepare(&env, &repo, &[]), 0);
    assert!(second.exists(), "the user's own setup did not run");
    std::fs::write(ws.join("README"), "again\n").unwrap();
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert!(verified.exists(), "the user's own verify did not run");
    assert!(doc.get("untrusted_config").is_none(), "{doc}");
    assert_eq!(delegate_effects(&doc), vec![], "{doc}");
    let shown = env.delegate(&repo, ["config", "--json"]).expect(0).json();
    assert_eq!(shown["confirmed"], true, "{shown}");
}

/// Two workers each append an `[apply]` table (unconfined workers: a
/// contained one cannot): `run` itself still reports what it landed, and
/// every command after it names the line.
#[test]
fn a_table_two_workers_append_breaks_no_run_and_the_error_names_the_line() {
    let (env, repo) = Env::with_repo("proj");
    let (pwned, cmd) = touch(&env, "PWNED");
    let script = format!(
        "printf '[apply]\\nverify = \"{cmd}\"\\n' >> \"$(git rev-parse --path-format=absolute --git-common-dir)/delegate.toml\"; \
         echo x > \"$GIT_DELEGATE_TASK.txt\""
    );
    let run = env
        .delegate(
            &repo,
            [
                // Unconfined: a contained worker cannot write the file at
                // all (design §3.22, `workers::sandbox`).
                "run",
                "-n",
                "2",
                "--jobs",
                "1",
                "--json",
                "--no-sandbox",
                "--",
                "sh",
                "-c",
                &script,
            ],
        )
        .expect(0);
    let doc = run.json();
    let apply = &doc["apply"];
    assert_eq!(apply["tasks"][0]["status"], "applied", "{doc}");
    assert_eq!(apply["tasks"][1]["status"], "applied", "{doc}");
    assert!(repo.join("1.txt").exists() && repo.join("2.txt").exists());
    assert!(!pwned.exists());
    // The file no longer parses: one side effect naming the file.
    assert_eq!(
        delegate_effects(apply),
        vec![("changed".to_string(), String::new())],
        "{doc}"
    );

    // Every command now points at the second `[apply]`, line 3.
    let run = env.delegate(&repo, ["status", "--json"]).expect(2);
    let err = &run.json()["error"];
    assert_eq!(err["code"], "delegate::config", "{err}");
    assert_eq!(err["line"], 3, "{err}");
    assert_eq!(err["column"], 2, "{err}");
    let file = std::fs::canonicalize(repo.join(".git/delegate.toml")).unwrap();
    assert_eq!(err["path"], file.to_str().unwrap());
    assert_has(err["message"].as_str().unwrap(), "at line 3, column 2");
    assert_has(err["message"].as_str().unwrap(), "duplicate key");
    assert_has(err["help"].as_str().unwrap(), "given twice");
    let human = env.delegate(&repo, ["status"]).expect(2);
    assert_has(&human.stderr, &format!("{}:3:2", file.display()));
}

/// A worker breaks the file while a batch is open: apply names the line and
/// changes nothing (the work stays in the open batch), the help says how to
/// put the confirmed file back, and that works as printed.
#[test]
fn a_file_a_worker_breaks_keeps_the_work_and_the_help_restores_it() {
    let (env, repo) = Env::with_repo("proj");
    let file = repo.join(".git/delegate.toml");
    std::fs::write(&file, "[lease]\nttl = \"2h\"\n").unwrap();
    let readme = std::fs::read(repo.join("README")).ok();
    let (ws, _) = planted(&env, &repo, "[lease]\nttl = \"3h\"\n");
    let run = env.delegate(&repo, ["apply", "--json"]).expect(2);
    let err = &run.json()["error"];
    assert_eq!(err["code"], "delegate::config", "{err}");
    assert_eq!(err["line"], 3, "{err}");
    // Nothing changed: the work is where it was.
    assert_eq!(std::fs::read(repo.join("README")).ok(), readme);
    assert_eq!(
        std::fs::read_to_string(ws.join("README")).unwrap(),
        "by the task\n"
    );
    let help = err["help"].as_str().unwrap();
    let restore = printed_command(help, "cp ");
    env.sh(&ws, &restore).expect(0);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[lease]\nttl = \"2h\"\n"
    );
    let doc = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"][0]["status"], "applied", "{doc}");
}

/// `status --check` reports a `delegate.toml` whose commands differ from
/// the file the user confirmed (design §3.3, §3.18), kind
/// `untrusted_config`, with the command that confirms it; followed
/// literally, the problem is gone.
#[test]
fn status_check_reports_an_unconfirmed_delegate_toml_until_it_is_confirmed() {
    let (env, repo) = Env::with_repo("proj");
    let (marker, cmd) = touch(&env, "verified");
    let (_ws, file) = planted(&env, &repo, &format!("[apply]\nverify = {cmd:?}\n"));
    let run = env.delegate(&repo, ["status", "--check"]).expect(1);
    let text = format!("{}{}", run.stdout, run.stderr);
    assert_has(&text, "apply.verify");
    let doc = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let p = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "untrusted_config")
        .cloned()
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(p["path"], file.to_str().unwrap(), "{doc:#}");
    assert!(!marker.exists(), "status ran the command");
    let confirm = confirm_hint(&text);
    env.sh(&repo, &confirm).expect(0);
    env.delegate(&repo, ["status", "--check"]).expect(0);
    assert!(!marker.exists());
}
