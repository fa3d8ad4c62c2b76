//! Every document the commands print, checked against its field list in
//! docs/json.md: one test per group of commands (run in order on one
//! fixture, as a user would), and the kept, undo and remote documents.

use super::*;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

/// [`fixture`] with a batch whose state cannot be read (status'
/// `broken_state` problem; gc reports it in `skipped`, exit 1): the fixture
/// and the common dir.
fn broken_fixture() -> (Fixture, PathBuf) {
    let f = fixture();
    let common_dir = PathBuf::from(
        f.env
            .git(
                &f.repo,
                ["rev-parse", "--path-format=absolute", "--git-common-dir"],
            )
            .trim(),
    );
    let broken = common_dir.join("delegate/batches/00000000-0000-4000-8000-000000000000");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("batch.toml"), "this is [not valid").unwrap();
    (f, common_dir)
}

/// Run `cases` in order in the fixture's `src` folder and check each
/// document: its exit status, its field list, its error code in the table.
/// Every case must be checked (none answers "not implemented").
fn check_documents(f: &Fixture, cases: &[Case]) {
    let specs = specs();
    let mut errors = Vec::new();
    let mut skipped = Vec::new();
    let mut checked = 0;
    for c in cases {
        let (doc, code, stderr) = run_case(f, c, &f.repo.join("src"));
        if doc["error"]["code"] == NOT_IMPLEMENTED && c.block != "error" {
            skipped.push(c.what);
            continue;
        }
        if code != c.exit {
            errors.push(format!(
                "{}: exit {code}, expected {}\n{doc:#}\n{stderr}",
                c.what, c.exit
            ));
        }
        errors.extend(validate(&specs, c.block, &doc, c.what));
        if let Some(code) = doc["error"]["code"].as_str() {
            if !json_md().contains(&format!("| `{code}` |")) {
                errors.push(format!("{}: error code {code} is not in the table", c.what));
            }
        }
        checked += 1;
    }
    for what in &skipped {
        eprintln!("SKIPPED (command not implemented yet): {what}");
    }
    assert_eq!(checked, cases.len(), "not implemented: {skipped:?}");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The orphaned batch renewed with a new owner (this process).
fn renew_orphaned(b: &str) -> Case {
    case(
        "renew orphaned with a new owner",
        &[
            "renew",
            b,
            "--owner-pid",
            &std::process::id().to_string(),
            "--json",
        ],
        "batch",
        0,
    )
}

#[test]
fn status_and_renew_documents_match_the_documented_field_lists() {
    let (f, _) = broken_fixture();
    let (a, b) = (&f.batch_a[..8], &f.batch_b[..8]);
    check_documents(
        &f,
        &[
            case("status of all batches", &["status", "--json"], "status", 0),
            case(
                "status --check with problems",
                &["status", "--check", "--json"],
                "status",
                1,
            ),
            case("status of one batch", &["status", a, "--json"], "status", 0),
            case("ambiguous default batch", &["renew", "--json"], "error", 2),
            case("renew", &["renew", a, "--ttl", "2h", "--json"], "batch", 0),
            renew_orphaned(b),
        ],
    );
}

#[test]
fn workspace_documents_match_the_documented_field_lists() {
    let f = fixture();
    let a = &f.batch_a[..8];
    check_documents(
        &f,
        &[
            case("diff", &["diff", "--batch", a, "--json"], "diff", 0),
            case(
                "diff --source",
                &["diff", "--source", "--batch", a, "--json"],
                "diff",
                0,
            ),
            case("path", &["path", "2", "--batch", a, "--json"], "path", 0),
            case(
                "branch",
                &["branch", "1", "--batch", a, "--json"],
                "branch",
                0,
            ),
            case(
                "unknown task",
                &["path", "9", "--batch", a, "--json"],
                "error",
                2,
            ),
            case(
                "apply dry run",
                &["apply", a, "--dry-run", "--json"],
                "apply",
                0,
            ),
            case(
                "refresh",
                &["refresh", "--batch", a, "--json"],
                "refresh",
                0,
            ),
        ],
    );
}

#[test]
fn hooks_install_documents_match_the_documented_field_lists() {
    let f = fixture();
    check_documents(
        &f,
        &[
            case(
                "hooks install",
                &["hooks", "install", "--json"],
                "hooks-install",
                0,
            ),
            case(
                "hooks install --claude",
                &["hooks", "install", "--claude", "--json"],
                "hooks-install-claude",
                0,
            ),
            case(
                "hooks install --claude --uninstall",
                &["hooks", "install", "--claude", "--uninstall", "--json"],
                "hooks-install-claude",
                0,
            ),
        ],
    );
}

#[test]
fn drop_and_gc_documents_match_the_documented_field_lists() {
    let (f, _) = broken_fixture();
    let (a, b) = (&f.batch_a[..8], &f.batch_b[..8]);
    check_documents(
        &f,
        &[
            case("drop refused", &["drop", a, "--json"], "drop-refused", 1),
            // As before gc in the whole sequence: the orphaned batch has an owner again.
            renew_orphaned(b),
            // The corrupt batch is reported in `skipped` (exit 1).
            case("gc dry run", &["gc", "--dry-run", "--json"], "gc", 1),
            case("gc", &["gc", "--json"], "gc", 1),
            case("drop --pool", &["drop", "--pool", "--json"], "drop-pool", 0),
            case("drop forced", &["drop", a, "--force", "--json"], "drop", 0),
        ],
    );
}

#[test]
fn error_documents_match_the_documented_field_lists() {
    let (f, common_dir) = broken_fixture();
    check_documents(
        &f,
        &[
            case("unknown batch", &["status", "zzzz", "--json"], "error", 2),
            case(
                "bad task name",
                &["prepare", "bad..name", "--json"],
                "error",
                2,
            ),
            case(
                "bad duration",
                &["prepare", "--ttl", "soon", "--json"],
                "error",
                2,
            ),
            case(
                "unknown option",
                &["status", "--json", "--bogus"],
                "error",
                2,
            ),
            case("missing argument", &["drop", "--json"], "error", 2),
            case(
                "value out of range",
                &["prepare", "-n", "0", "--json"],
                "error",
                2,
            ),
            case(
                "--json before the command",
                &["--json", "status"],
                "error",
                2,
            ),
        ],
    );

    // Outside a repository (exit 3), and a bad config file (exit 2).
    let specs = specs();
    let mut errors = Vec::new();
    let outside = f.env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let c = case("not a repository", &["status", "--json"], "error", 3);
    let (doc, code, _) = run_case(&f, &c, &outside);
    assert_eq!(code, 3, "{doc:#}");
    errors.extend(validate(&specs, "error", &doc, c.what));
    std::fs::write(common_dir.join("delegate.toml"), "[lease]\nttl = 5\n").unwrap();
    let c = case(
        "bad config",
        &["renew", &f.batch_b[..8], "--json"],
        "error",
        2,
    );
    let (doc, code, _) = run_case(&f, &c, &f.repo);
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["error"]["code"], "delegate::config");
    errors.extend(validate(&specs, "error", &doc, c.what));
    std::fs::remove_file(common_dir.join("delegate.toml")).unwrap();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn prepare_and_run_documents_match_the_documented_field_lists() {
    let f = fixture();
    check_documents(
        &f,
        &[
            case(
                "prepare",
                &["prepare", "x", "y", "--label", "c", "--json"],
                "batch",
                0,
            ),
            case(
                "run",
                &["run", "r1", "--label", "d", "--json", "--", "true"],
                "run",
                0,
            ),
            case(
                "run with a failing worker",
                &["run", "r2", "--label", "e", "--json", "--", "false"],
                "run",
                1,
            ),
            case(
                "run --no-apply",
                &[
                    "run",
                    "r3",
                    "--label",
                    "f",
                    "--no-apply",
                    "--json",
                    "--",
                    "true",
                ],
                "run",
                0,
            ),
        ],
    );
}

#[test]
fn kept_proposal_documents_match_the_documented_field_lists() {
    let specs = specs();
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "kept work\n").unwrap();
    env.delegate(&repo, ["apply", "--discard", "1", "--json"])
        .expect(0);
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let name = status["kept"][0]["name"].as_str().unwrap().to_string();
    let mut errors = validate(&specs, "status", &status, "status with kept");
    for (what, args, block, exit) in [
        ("apply --kept dry run", vec!["--dry-run"], "apply", 0),
        ("apply --kept", vec![], "apply", 0),
        ("unknown kept", vec![], "error", 2),
    ] {
        let mut all = vec!["apply", "--kept", &name, "--json"];
        all.extend(args);
        let doc = env.delegate(&repo, all).expect(exit).json();
        errors.extend(validate(&specs, block, &doc, what));
    }
    // A conflict: `workspace` is null, the proposal stays kept.
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    std::fs::write(ws.join("README"), "more work\n").unwrap();
    env.delegate(&repo, ["apply", "--discard", "1", "--json"])
        .expect(0);
    std::fs::write(repo.join("README"), "the user's\n").unwrap();
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let r = status["kept"][0]["ref"].as_str().unwrap().to_string();
    let doc = env
        .delegate(&repo, ["apply", "--kept", &r, "--json"])
        .expect(1)
        .json();
    errors.extend(validate(&specs, "apply", &doc, "apply --kept conflict"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn status_document_lists_problems_of_each_kind() {
    let specs = specs();
    let f = fixture();
    let doc = f
        .env
        .delegate(&f.repo, ["status", "--json"])
        .expect(0)
        .json();
    let kinds = field_strs(&doc["problems"], "kind");
    assert_eq!(kinds, ["orphaned"], "{doc:#}");
    assert_eq!(doc["batches"].as_array().unwrap().len(), 2);
    assert!(validate(&specs, "status", &doc, "status").is_empty());
    // The documented kinds are the ones the code can produce.
    let text = json_md();
    for kind in ["expired", "orphaned", "journal", "broken_state"] {
        assert!(text.contains(&format!("\"{kind}\"")), "{kind} undocumented");
    }
}

#[test]
fn undo_documents_match_the_documented_field_lists() {
    let specs = specs();
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    for (i, t) in doc["tasks"].as_array().unwrap().iter().enumerate() {
        let root = PathBuf::from(t["root"].as_str().unwrap());
        std::fs::write(root.join(format!("t{i}.txt")), "x\n").unwrap();
        std::fs::write(root.join("README"), format!("task {i}\n")).unwrap();
    }
    let mut errors = Vec::new();
    let mut check = |what: &str, args: &[&str], block: &str, exit: i32| -> Value {
        let run = env.delegate(&repo, args);
        let doc: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{what}: not one document ({e}): {}", run.stdout));
        if run.code != exit {
            errors.push(format!(
                "{what}: exit {}, expected {exit}\n{doc:#}",
                run.code
            ));
        }
        errors.extend(validate(&specs, block, &doc, what));
        doc
    };
    // Task 2 conflicts with task 1 (both rewrite README): apply exits 1.
    let applied = check("apply", &["apply", "--json"], "apply", 1);
    let id = applied["apply_id"].as_str().unwrap().to_string();
    check("undo list", &["undo", "--list", "--json"], "undo-list", 0);
    check("undo dry run", &["undo", "--dry-run", "--json"], "undo", 0);
    check("status", &["status", "--json"], "status", 0);
    std::fs::write(repo.join("README"), "the user rewrote it\n").unwrap();
    check("undo refused", &["undo", "--json"], "undo", 1);
    std::fs::write(repo.join("README"), "task 0\n").unwrap();
    check("undo", &["undo", &id[..8], "--json"], "undo", 0);
    check("nothing to undo", &["undo", "--json"], "error", 2);
    check("unknown apply", &["undo", "ffff0000", "--json"], "error", 2);
    check(
        "apply --from-undo",
        &["apply", "--from-undo", &id, "--json"],
        "apply",
        0,
    );
    check(
        "not undone",
        &["apply", "--from-undo", &id, "--json"],
        "error",
        2,
    );
    check("gc", &["gc", "--json"], "gc", 0);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The documents of remote batches (design §3.14): prepare --remote, join,
/// submit, status --fetch, an apply that leaves a task not_submitted, and a
/// drop whose remote is away (its `warnings`).
#[test]
fn remote_documents_match_the_documented_field_lists() {
    let specs = specs();
    let env = crate::common::Env::new();
    let worker = crate::common::Env::new();
    let repo = env.repo("proj");
    env.git(
        env.path(),
        ["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let bare = env.path().join("remote.git");
    let url = format!("file://{}", bare.display());
    env.git(&repo, ["remote", "add", "origin", &url]);
    let mut errors = Vec::new();
    let mut check = |block: &str, doc: &Value, what: &str| {
        errors.extend(validate(&specs, block, doc, what));
    };
    let prepared = env
        .delegate(
            &repo,
            [
                "prepare", "--remote", "origin", "a", "b", "l", "--local", "l", "--json",
            ],
        )
        .expect(0)
        .json();
    check("batch", &prepared, "prepare --remote");
    let id = id(&prepared);
    let joined = worker
        .delegate(worker.path(), ["join", &url, &id, "a", "--json"])
        .expect(0)
        .json();
    check("join", &joined, "join");
    let root = PathBuf::from(joined["root"].as_str().unwrap());
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    let submitted = worker
        .delegate(&root, ["submit", "--json"])
        .expect(0)
        .json();
    check("join", &submitted, "submit");
    let status = env
        .delegate(&repo, ["status", "--fetch", "--json"])
        .expect(0)
        .json();
    check("status", &status, "status --fetch");
    let applied = env
        .delegate(&repo, ["apply", "--only", "a", "--only", "b", "--json"])
        .expect(0)
        .json();
    check("apply", &applied, "apply (not_submitted)");
    std::fs::rename(&bare, env.path().join("away.git")).unwrap();
    let dropped = env
        .delegate(&repo, ["drop", &id, "--force", "--json"])
        .expect(0)
        .json();
    assert!(dropped.get("warnings").is_some(), "{dropped}");
    check("drop", &dropped, "drop (remote away)");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
