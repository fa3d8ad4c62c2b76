//! `git delegate prepare` (design §3.1, §6.1): the batch document, the
//! baseline commit and ref, the state, the registered and locked worktrees,
//! the options, and that a failure or an interruption leaves nothing behind.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::path::PathBuf;

use crate::common::assert_has;
use crate::common::fixtures::field_strs;
use crate::common::fixtures::*;
use serde_json::Value;

fn is_hex40(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn batch_document_fields_and_types() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[("src/lib.rs", "fn main() {}\n")], "src");
    write(&repo.join("src/lib.rs"), "fn main() { dirty() }\n");
    let owner = Sleeper::new();
    let before = now_secs();
    let run = env
        .delegate(
            &repo.join("src"),
            [
                "prepare",
                "lint",
                "docs",
                "--label",
                "my work",
                "--ttl",
                "2h",
                "--owner-pid",
                &owner.pid(),
                "--forbid-commit",
                "--json",
            ],
        )
        .expect(0);
    let doc = run.json();
    let obj = doc.as_object().unwrap();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "baseline",
            "batch",
            "created_at",
            "forbid_commit",
            "label",
            "lease",
            "mode",
            "schema",
            "source",
            "source_head",
            "state",
            "tasks",
            // --forbid-commit without the pre-commit hook installed.
            "warnings"
        ]
    );
    assert_eq!(doc["schema"], "git-delegate/v1");
    // A UUID v4, canonical form.
    let id = id(&doc);
    let parts: Vec<&str> = id.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12],
        "{id}"
    );
    assert!(id
        .bytes()
        .all(|b| b == b'-' || b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(&parts[2][..1], "4", "version nibble: {id}");
    assert_eq!(doc["label"], "my work");
    let created = rfc3339_secs(doc["created_at"].as_str().unwrap());
    assert!(created >= before - 1 && created <= now_secs() + 1);
    let canon = std::fs::canonicalize(&repo).unwrap();
    assert_eq!(doc["source"], canon.to_str().unwrap());
    assert_eq!(
        doc["source_head"],
        env.git(&repo, ["rev-parse", "HEAD"]).trim()
    );
    assert!(is_hex40(&doc["baseline"]["commit"]));
    assert_eq!(
        doc["baseline"]["ref"],
        format!("refs/pi-delegate/batches/{id}/baseline")
    );
    assert_eq!(
        env.git(
            &repo,
            ["rev-parse", doc["baseline"]["ref"].as_str().unwrap()]
        )
        .trim(),
        doc["baseline"]["commit"]
    );
    assert_eq!(doc["mode"], "worktree");
    assert_eq!(doc["forbid_commit"], true);
    let lease = &doc["lease"];
    assert_eq!(lease["state"], "live");
    let expires = rfc3339_secs(lease["expires_at"].as_str().unwrap());
    assert!((expires - created - 7200).abs() <= 2, "{lease}");
    assert_eq!(lease["owner_pid"], owner.0.id());
    assert!(lease["host"].as_str().is_some_and(|h| !h.is_empty()));

    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    let base = workspace_base(&env, &repo).join(&id[..8]);
    for (t, name) in tasks.iter().zip(["lint", "docs"]) {
        let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "carried_ignored",
                "changed_paths",
                "cwd",
                "exists",
                "name",
                "root",
                "state"
            ]
        );
        assert_eq!(t["name"], name);
        assert_eq!(t["state"], "open");
        assert_eq!(t["root"], base.join(name).to_str().unwrap());
        assert_eq!(t["cwd"], base.join(name).join("src").to_str().unwrap());
        assert_eq!(t["exists"], true);
        assert_eq!(t["changed_paths"], 0);
        assert_eq!(
            read(&base.join(name).join("src/lib.rs")),
            "fn main() { dirty() }\n"
        );
    }
    // Human text went to stderr, nothing but the document to stdout.
    assert!(run.stderr.contains(&id[..8]), "{}", run.stderr);

    // batch.toml is there and says the same.
    let text = read(&batch_toml(&env, &repo, &id));
    let state: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(state["id"].as_str(), Some(id.as_str()));
    assert_eq!(state["label"].as_str(), Some("my work"));
    assert_eq!(state["forbid_commit"].as_bool(), Some(true));
    assert_eq!(
        state["lease"]["owner_pid"].as_integer(),
        Some(i64::from(owner.0.id()))
    );
    assert!(state["lease"]["owner_start"].as_integer().is_some());
    assert_eq!(state["tasks"].as_array().unwrap().len(), 2);
}

#[test]
fn baseline_commit_identity_parent_and_message() {
    let (env, repo) = Env::with_repo("commit");
    write(&repo.join("new"), "n\n");
    let doc = prepare(&env, &repo, &[]);
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    let text = env.git(&repo, ["cat-file", "-p", commit]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("tree {}", env.oracle_tree(&repo))
    );
    assert_eq!(lines.next().unwrap(), format!("parent {}", head.trim()));
    for who in ["author", "committer"] {
        let line = lines.next().unwrap();
        let rest = line
            .strip_prefix(&format!("{who} git-delegate <git-delegate@localhost> "))
            .unwrap_or_else(|| panic!("{line}"));
        assert!(rest.ends_with(" +0000"), "{line}");
    }
    assert_eq!(lines.next().unwrap(), "");
    assert_eq!(
        lines.collect::<Vec<_>>(),
        [format!("git-delegate baseline {}", id(&doc))]
    );
    // The ref is private: no branch or tag sees it.
    assert_eq!(env.git(&repo, ["branch", "--list"]).trim(), "* main");
    assert_eq!(env.git(&repo, ["tag", "--list"]), "");
    assert!(!env
        .git(&repo, ["log", "--branches", "--tags", "--format=%H"])
        .contains(commit));
}

#[test]
fn workspaces_are_registered_locked_clean_and_the_source_is_untouched() {
    let (env, repo) = Env::with_repo("reg");
    write(&repo.join("dirty"), "d\n");
    write(&repo.join("README"), "staged\n");
    env.git(&repo, ["add", "README"]);
    let status_before = env.git(&repo, ["status", "--porcelain"]);
    let git_dir = git_dir(&env, &repo);
    let config = fingerprint(&git_dir.join("config"));
    let index = fingerprint(&git_dir.join("index"));
    let head = fingerprint(&git_dir.join("HEAD"));
    let refs_before = env.git(&repo, ["for-each-ref"]);

    let doc = prepare(&env, &repo, &["-n", "3"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(fingerprint(&git_dir.join("config")), config);
    assert_eq!(fingerprint(&git_dir.join("index")), index);
    assert_eq!(fingerprint(&git_dir.join("HEAD")), head);
    // (git status may refresh the index: only after the fingerprints.)
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), status_before);
    let refs_after: Vec<String> = env
        .git(&repo, ["for-each-ref"])
        .lines()
        .filter(|l| !l.contains("refs/pi-delegate/"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(refs_after.concat(), refs_before);
    assert_eq!(env.git(&repo, ["stash", "list"]), "");

    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    let names = field_strs(&doc["tasks"], "name");
    assert_eq!(names, ["1", "2", "3"]);
    for ws in roots(&doc) {
        let block = list
            .split("\n\n")
            .find(|b| b.starts_with(&format!("worktree {}\n", ws.display())))
            .unwrap_or_else(|| panic!("{} not registered:\n{list}", ws.display()));
        assert!(block.contains(&format!("HEAD {baseline}")), "{block}");
        assert_has(block, "\ndetached");
        assert!(
            block.contains(&format!("locked git-delegate batch {}", id(&doc))),
            "{block}"
        );
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
        assert_eq!(env.git(&ws, ["rev-parse", "HEAD"]).trim(), baseline);
        // The index carries stat data (not zeroed), so status needs no re-hash.
        let debug = env.git(&ws, ["ls-files", "--debug", "README"]);
        assert!(!debug.contains("mtime: 0:0"), "{debug}");
        assert!(!debug.contains("size: 0\t"), "{debug}");
    }
    // Locked: prune keeps them even when a folder is gone, remove refuses.
    let first = root(&doc, 0);
    std::fs::remove_dir_all(&first).unwrap();
    env.git(&repo, ["worktree", "prune"]);
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert!(list.contains(&format!("worktree {}\n", first.display())));
    let second = root(&doc, 1);
    let out = env
        .git_cmd(&repo)
        .args(["worktree", "remove", second.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(second.join("README").exists());
}

#[test]
fn task_cwd_mirrors_the_callers_folder() {
    let (env, repo) = Env::with_repo("cwd");
    write(&repo.join("a/b/file"), "f\n");
    write(&repo.join(".gitignore"), "build/\n");
    write(&repo.join("build/out/x.o"), "o\n");
    let doc = prepare(&env, &repo.join("a/b"), &["-n", "2"]);
    for t in doc["tasks"].as_array().unwrap() {
        let root = PathBuf::from(t["root"].as_str().unwrap());
        assert_eq!(t["cwd"], root.join("a/b").to_str().unwrap());
        assert!(root.join("a/b/file").exists());
    }
    // A folder the baseline has no file in still exists in the workspace.
    let doc = prepare(&env, &repo.join("build/out"), &[]);
    let cwd = PathBuf::from(doc["tasks"][0]["cwd"].as_str().unwrap());
    assert!(cwd.ends_with("build/out"), "{}", cwd.display());
    assert!(cwd.is_dir());
    assert_eq!(env.git(&cwd, ["status", "--porcelain"]), "");
    // At the root and inside .git, cwd is the workspace root (no trailing slash).
    for dir in [repo.clone(), repo.join(".git"), repo.join(".git/refs")] {
        let doc = prepare(&env, &dir, &[]);
        assert_eq!(doc["tasks"][0]["cwd"], doc["tasks"][0]["root"]);
    }
    // `git -C DIR delegate` finds the binary through PATH and mirrors DIR.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_git-delegate"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let out = crate::common::succeed(env.git_cmd(env.path()).env("PATH", path).args([
        "-C",
        repo.join("a").to_str().unwrap(),
        "delegate",
        "prepare",
        "--json",
    ]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["tasks"][0]["cwd"].as_str().unwrap().ends_with("/1/a"));
}

#[test]
fn task_names_counts_and_order() {
    let (env, repo) = Env::with_repo("names");
    let doc = prepare(&env, &repo, &[]);
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(doc["tasks"][0]["name"], "1");
    let doc = prepare(&env, &repo, &["-n", "4"]);
    let names = field_strs(&doc["tasks"], "name");
    assert_eq!(names, ["1", "2", "3", "4"]);
    let long = "a".repeat(64);
    let doc = prepare(&env, &repo, &["zeta", "Alpha.2", "m_x-y", &long]);
    let names = field_strs(&doc["tasks"], "name");
    assert_eq!(names, ["zeta", "Alpha.2", "m_x-y", long.as_str()]);
    for ws in roots(&doc) {
        assert!(ws.join("README").exists());
    }
}

#[test]
fn ttl_and_mode_from_config_and_command_line() {
    let (env, repo) = Env::with_repo("cfg");
    config(
        &env,
        &repo,
        "[lease]\nttl = \"3h\"\n[workspace]\nmode = \"worktree\"\n",
    );
    let doc = prepare(&env, &repo, &[]);
    let d = rfc3339_secs(doc["lease"]["expires_at"].as_str().unwrap())
        - rfc3339_secs(doc["created_at"].as_str().unwrap());
    assert!((d - 3 * 3600).abs() <= 2, "{d}");
    let doc = prepare(&env, &repo, &["--ttl", "90s", "--label", "x"]);
    let d = rfc3339_secs(doc["lease"]["expires_at"].as_str().unwrap())
        - rfc3339_secs(doc["created_at"].as_str().unwrap());
    assert!((d - 90).abs() <= 2, "{d}");
    // Default: 24h.
    let (env, repo) = Env::with_repo("dflt");
    let doc = prepare(&env, &repo, &[]);
    let d = rfc3339_secs(doc["lease"]["expires_at"].as_str().unwrap())
        - rfc3339_secs(doc["created_at"].as_str().unwrap());
    assert!((d - 86_400).abs() <= 2, "{d}");
    assert_eq!(doc["lease"]["owner_pid"], Value::Null);
    assert_eq!(doc["forbid_commit"], false);
    assert_eq!(doc["label"], Value::Null);
    // hooks.forbid-commit in the config is recorded too.
    config(&env, &repo, "[hooks]\nforbid-commit = true\n");
    assert_eq!(prepare(&env, &repo, &[])["forbid_commit"], true);
}

#[test]
fn workspace_root_from_config() {
    let (env, repo) = Env::with_repo("rooted");
    let elsewhere = env.path().join("elsewhere");
    config(
        &env,
        &repo,
        &format!("[workspace]\nroot = \"{}\"\n", elsewhere.display()),
    );
    let doc = prepare(&env, &repo, &[]);
    assert!(root(&doc, 0).starts_with(&elsewhere), "{doc}");
    // `~/` means HOME.
    config(&env, &repo, "[workspace]\nroot = \"~/ws\"\n");
    let doc = prepare(&env, &repo, &[]);
    assert!(root(&doc, 0).starts_with(env.home().join("ws")), "{doc}");
}

#[test]
fn human_output_names_batch_baseline_tasks_lease_and_apply() {
    let (env, repo) = Env::with_repo("human");
    write(&repo.join("a"), "a\n");
    write(&repo.join("b"), "b\n");
    write(&repo.join("README"), "changed\n");
    let run = env.delegate(&repo, ["prepare", "-n", "2"]).expect(0);
    let head = env.git(&repo, ["rev-parse", "--short=7", "HEAD"]);
    assert!(
        run.stdout
            .contains(&format!("HEAD {} + 3 uncommitted changes", head.trim())),
        "{}",
        run.stdout
    );
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let doc = &st["batches"][0];
    let short = &id(doc)[..8];
    assert!(run.stdout.contains(&format!("Prepared batch {short}")));
    for ws in roots(doc) {
        assert!(
            run.stdout.contains(&format!("{}\n", ws.display())),
            "{}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("Lease expires"));
    assert!(run.stdout.contains(&format!("git delegate apply {short}")));
    assert_eq!(run.stderr, "");
    // Unborn.
    let unborn = env.empty_repo("unborn");
    let run = env.delegate(&unborn, ["prepare"]).expect(0);
    assert_has(&run.stdout, "from an unborn branch");
}

#[test]
fn owner_pid_must_be_running() {
    let (env, repo) = Env::with_repo("owner");
    let gone = Sleeper::new();
    let pid = gone.pid();
    gone.end();
    expect_error(
        &env,
        &repo,
        &["prepare", "--owner-pid", &pid],
        2,
        "delegate::owner_not_running",
    );
    assert_nothing_created(&env, &repo);
    let alive = Sleeper::new();
    let doc = prepare(&env, &repo, &["--owner-pid", &alive.pid()]);
    assert_eq!(doc["lease"]["state"], "live");
}

#[test]
fn nested_repository_is_left_out_with_a_warning() {
    let (env, repo) = Env::with_repo("outer");
    let inner = repo.join("vendor/inner");
    std::fs::create_dir_all(&inner).unwrap();
    env.git(&inner, ["init", "-q"]);
    write(&inner.join("f"), "f\n");
    env.git(&inner, ["add", "f"]);
    env.git(&inner, ["commit", "-q", "-m", "inner"]);
    let run = env.delegate(&repo, ["prepare", "--json"]).expect(0);
    assert_has(&run.stderr, "vendor/inner");
    let ws = root(&run.json(), 0);
    assert!(!ws.join("vendor").exists());
    assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
}

#[test]
fn concurrent_prepares_are_serialised_and_all_succeed() {
    let (env, repo) = Env::with_repo("parallel");
    for i in 0..50 {
        write(&repo.join(format!("f{i}")), "x\n");
    }
    let children: Vec<_> = (0..3)
        .map(|_| spawn_piped(&env, &repo, &["prepare", "-n", "2", "--json"]))
        .collect();
    let mut ids = Vec::new();
    for c in children {
        let run = Run::from(c.wait_with_output().unwrap()).expect(0);
        ids.push(id(&run.json()));
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    let common = common_dir(&env, &repo);
    assert_eq!(registrations(&common).len(), 6);
    assert_eq!(batch_folders(&common).len(), 3);
    assert_eq!(env.private_refs(&repo).len(), 3);
}

/// A failure half-way (one task's checkout fails while the others succeed)
/// undoes everything: refs, state, folders, registrations.
#[test]
fn failure_half_way_undoes_everything() {
    let (env, repo) = Env::with_repo("halfway");
    // A file whose path fits under a short task name but not under a
    // 64-character one (PATH_MAX is 4096).
    let long_task = "t".repeat(64);
    let base = workspace_base(&env, &repo);
    // <base>/<short>/<task>/<path>: choose <path> so that task "a" fits.
    let room = 4095 - (base.as_os_str().len() + 1 + 8 + 1 + 1 + 1) - 30;
    let mut rel = String::new();
    while rel.len() + 201 < room {
        rel.push_str(&"d".repeat(200));
        rel.push('/');
    }
    rel.push_str(&"e".repeat(room - rel.len()));
    assert!(repo.as_os_str().len() + 1 + rel.len() + 8 < 4095);
    write(&repo.join(&rel), "deep\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "deep"]);
    write(&repo.join("dirty"), "d\n");
    let index = fingerprint(&git_dir(&env, &repo).join("index"));
    let run = env
        .delegate(&repo, ["prepare", "a", "b", &long_task, "--json"])
        .expect(3);
    assert_eq!(
        error_code(&run),
        "delegate::checkout_failed",
        "{}",
        run.stderr
    );
    assert_nothing_created(&env, &repo);
    assert_eq!(fingerprint(&git_dir(&env, &repo).join("index")), index);
    assert_eq!(env.git(&repo, ["worktree", "list"]).lines().count(), 1);
    // The next prepare works.
    prepare(&env, &repo, &["a", "b"]);
}

#[test]
fn failure_creating_registrations_undoes_everything() {
    let (env, repo) = Env::with_repo("noreg");
    // `.git/worktrees` is a file: no registration can be made.
    std::fs::write(git_dir(&env, &repo).join("worktrees"), "in the way\n").unwrap();
    let run = env
        .delegate(&repo, ["prepare", "-n", "2", "--json"])
        .expect(3);
    assert_eq!(error_code(&run), "delegate::io");
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert_eq!(
        batch_folders(&common_dir(&env, &repo)),
        Vec::<String>::new()
    );
    assert_eq!(listing(&env.workspace_root()), Vec::<PathBuf>::new());
    assert_eq!(
        read(&git_dir(&env, &repo).join("worktrees")),
        "in the way\n"
    );
}

#[test]
fn a_file_where_the_workspace_folders_go_undoes_everything() {
    let (env, repo) = Env::with_repo("blocked");
    let base = workspace_base(&env, &repo);
    std::fs::create_dir_all(base.parent().unwrap()).unwrap();
    std::fs::write(&base, "a file where the repository's folder goes\n").unwrap();
    let run = env
        .delegate(&repo, ["prepare", "-n", "2", "--json"])
        .expect(3);
    assert_eq!(error_code(&run), "delegate::io");
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    let common = common_dir(&env, &repo);
    assert_eq!(registrations(&common), Vec::<String>::new());
    assert_eq!(batch_folders(&common), Vec::<String>::new());
    assert_eq!(listing(&env.workspace_root()).len(), 1);
    std::fs::remove_file(&base).unwrap();
    prepare(&env, &repo, &[]);
}

/// Ctrl-C at any moment: either the batch is complete, or nothing is left.
#[test]
fn interrupted_prepare_is_all_or_nothing() {
    let (env, repo) = Env::with_repo("interrupt");
    for i in 0..1500 {
        write(
            &repo.join(format!("d{}/f{i}", i % 20)),
            &format!("content {i}\n"),
        );
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "many"]);
    let mut outcomes = Vec::new();
    for delay_ms in [0u64, 5, 20, 50, 100, 200, 400] {
        let child = spawn_piped(&env, &repo, &["prepare", "-n", "3", "--json"]);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        let out = child.wait_with_output().unwrap();
        let run = Run::from(out);
        if run.code == 0 {
            let doc = run.json();
            for ws in roots(&doc) {
                assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
            }
            env.delegate(&repo, ["drop", &id(&doc), "--force"])
                .expect(0);
            outcomes.push("complete");
        } else {
            if run.code == 3 {
                assert_eq!(error_code(&run), "delegate::interrupted", "{}", run.stderr);
            } else {
                // Killed by the signal before the handler was installed.
                assert_eq!(run.code, -1, "{}", run.stderr);
            }
            outcomes.push(if run.code == 3 {
                "undone"
            } else {
                "killed early"
            });
        }
        assert_nothing_created(&env, &repo);
    }
    eprintln!("outcomes: {outcomes:?}");
}

#[test]
fn source_with_spaces_and_unicode_in_its_path() {
    let (env, repo) = Env::with_repo("my project ü");
    write(&repo.join("x"), "x\n");
    let doc = prepare(&env, &repo, &[]);
    let ws = root(&doc, 0);
    assert!(ws
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("my project ü-"));
    assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    assert!(ws.join("x").exists());
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    assert_nothing_created(&env, &repo);
}

// A label must never shadow a batch id.
#[test]
fn a_label_that_reads_as_a_batch_id_or_prefix_is_refused() {
    let (env, repo) = Env::with_repo("labels");
    let first = prepare(&env, &repo, &[]);
    let full = id(&first);
    let common = common_dir(&env, &repo);
    let refs_before = env.private_refs(&repo);
    for label in [
        full.clone(),
        full[..8].to_string(),
        full.to_uppercase(),
        full.replace('-', ""),
        "abcd".to_string(),
        "DEAD-beef".to_string(),
        "0123".to_string(),
        "12345678-".to_string(),
    ] {
        let run = expect_error(
            &env,
            &repo,
            &["prepare", "--label", &label],
            2,
            "delegate::bad_label",
        );
        let message = run.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains("batch id"), "{label}: {message}");
        assert_eq!(batch_folders(&common), vec![full.clone()], "{label}");
        assert_eq!(env.private_refs(&repo), refs_before, "{label}");
    }
    // Labels that can never be read as an id are fine.
    for label in ["fix-the-bug", "abc", "v2 refactor", "x1234"] {
        let doc = prepare(&env, &repo, &["--label", label]);
        assert_eq!(doc["label"], label);
    }
}

#[test]
fn a_full_id_resolves_before_a_label_that_shadows_it() {
    let (env, repo) = Env::with_repo("shadow");
    let a = id(&prepare(&env, &repo, &[]));
    let b = id(&prepare(&env, &repo, &[]));
    // A label written before prepare refused such labels (or by hand).
    let toml = batch_toml(&env, &repo, &b);
    let text = read(&toml);
    let edited = text.replacen(
        &format!("id = \"{b}\"\n"),
        &format!("id = \"{b}\"\nlabel = \"{a}\"\n"),
        1,
    );
    assert_ne!(text, edited);
    std::fs::write(&toml, edited).unwrap();
    let doc = env
        .delegate(&repo, ["drop", &a, "--force", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["batch"], a.as_str());
    assert_eq!(batch_folders(&common_dir(&env, &repo)), vec![b.clone()]);
    assert_eq!(
        env.private_refs(&repo),
        vec![format!("refs/pi-delegate/batches/{b}/baseline")]
    );
}

#[test]
fn the_apply_hint_of_prepare_names_this_batch_even_when_short_ids_collide() {
    let (env, repo) = Env::with_repo("collide");
    let a = "12345678-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
    let b = "12345678-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
    delegate_with_id(&env, &repo, a, &["prepare", "one"]).expect(0);
    let run = delegate_with_id(&env, &repo, b, &["prepare", "two"]).expect(0);
    let hint = run
        .stdout
        .lines()
        .find_map(|l| l.split("git delegate apply ").nth(1))
        .unwrap_or_else(|| panic!("no apply hint in {}", run.stdout))
        .trim()
        .to_string();
    let doc = env
        .delegate(&repo, ["apply", &hint, "--dry-run", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["batch"], b, "the hint {hint:?} named another batch");
}

// A lease the calendar cannot hold is refused, never expired at birth.
#[test]
fn durations_the_calendar_cannot_hold_are_refused() {
    let (env, repo) = Env::with_repo("ttl");
    for ttl in [
        "9999999d",
        "3000000d",
        "500000w",
        "9223372036854775807s",
        "99999999999999999999s",
        "153722867280912930m",
    ] {
        let run = expect_error(
            &env,
            &repo,
            &["prepare", "--ttl", ttl],
            2,
            "delegate::bad_duration",
        );
        assert_has(&run.stderr, ttl);
        assert_nothing_created(&env, &repo);
    }
    // A long lease that fits is kept as given, and round-trips.
    let doc = prepare(&env, &repo, &["--ttl", "100000d"]);
    assert_eq!(doc["lease"]["state"], "live");
    let expires = doc["lease"]["expires_at"].as_str().unwrap().to_string();
    assert!(rfc3339_secs(&expires) >= now_secs() + 100_000 * 86_400 - 60);
    // renew refuses too, and changes nothing.
    let toml = batch_toml(&env, &repo, &id(&doc));
    let before = read_bytes(&toml);
    expect_error(
        &env,
        &repo,
        &["renew", "--ttl", "9999999d"],
        2,
        "delegate::bad_duration",
    );
    assert_eq!(read_bytes(&toml), before);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["lease"]["state"], "live");
    env.delegate(&repo, ["drop", &id(&doc)]).expect(0);

    // From the configuration: an error pointing at the line.
    let file = common_dir(&env, &repo).join("delegate.toml");
    for (text, line_col) in [
        ("[lease]\nttl = \"9999999d\"\n", ":2:7"),
        ("[gc]\nkeep-failed = \"9999999d\"\n", ":2:15"),
    ] {
        std::fs::write(&file, text).unwrap();
        for args in [&["prepare"][..], &["gc"]] {
            let run = expect_error(&env, &repo, args, 2, "delegate::config");
            let located = format!("{}{line_col}", file.display());
            assert!(run.stderr.contains(&located), "{text:?}:\n{}", run.stderr);
            assert_has(&run.stderr, "9999");
        }
        assert_nothing_created(&env, &repo);
    }
}
