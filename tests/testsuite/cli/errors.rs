//! Every design §5 error that reaches prepare, status, drop and renew: the
//! exit status, the error code in the `--json` error document, a miette
//! diagnostic on stderr, and nothing created afterwards.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::path::Path;

use crate::common::assert_has;
use crate::common::fixtures::*;

const ID_A: &str = "aaaa1111-0000-4000-8000-000000000001";
const ID_B: &str = "aaaa2222-0000-4000-8000-000000000002";

#[test]
fn not_a_repository() {
    let env = Env::new();
    let plain = env.path().join("plain/sub");
    std::fs::create_dir_all(&plain).unwrap();
    for args in [
        &["prepare"][..],
        &["status"],
        &["status", "--check"],
        &["drop", "abcd"],
        &["renew"],
        &["snapshot"],
    ] {
        let run = env.delegate(&plain, args).expect(3);
        assert!(
            run.stderr.contains("delegate::not_a_repository"),
            "{args:?}"
        );
        assert!(run.stderr.contains("is not inside a git repository"));
        if args[0] != "snapshot" {
            expect_error(&env, &plain, args, 3, "delegate::not_a_repository");
        }
    }
    assert_eq!(listing(&env.path().join("plain")), [Path::new("sub")]);
    assert_eq!(listing(&env.workspace_root()).len(), 0);
}

#[test]
fn bare_repository() {
    let (env, repo) = Env::with_repo("src");
    let bare = env.path().join("bare.git");
    env.git(
        env.path(),
        [
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let before = listing(&bare);
    for args in [&["prepare"][..], &["status"], &["drop", "abcd"], &["renew"]] {
        let run = expect_error(&env, &bare, args, 3, "delegate::bare_repository");
        assert!(run.stderr.contains("bare repository"));
    }
    assert_eq!(listing(&bare), before);
    assert_eq!(listing(&env.workspace_root()).len(), 0);
}

#[test]
fn invalid_task_names() {
    let (env, repo) = Env::with_repo("names");
    let long = "a".repeat(65);
    for name in [
        "", ".hidden", "_x", "a/b", "a b", "a..b", "x.lock", "x.", "ä", "a\\b", "a:b", "a*",
        "-dash", &long,
    ] {
        expect_error(
            &env,
            &repo,
            &["prepare", "ok", "--", name],
            2,
            "delegate::bad_task_name",
        );
    }
    assert_nothing_created(&env, &repo);
}

#[test]
fn duplicate_task_names() {
    let (env, repo) = Env::with_repo("dups");
    let run = expect_error(
        &env,
        &repo,
        &["prepare", "a", "b", "a"],
        2,
        "delegate::duplicate_task",
    );
    assert!(run.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("\"a\""));
    assert_nothing_created(&env, &repo);
    // -n together with names is a usage error (clap), also an error document.
    let run = env
        .delegate(&repo, ["prepare", "a", "-n", "2", "--json"])
        .expect(2);
    assert_eq!(error_code(&run), "delegate::usage");
    let run = env
        .delegate(&repo, ["prepare", "-n", "0", "--json"])
        .expect(2);
    assert_eq!(error_code(&run), "delegate::usage");
    assert_nothing_created(&env, &repo);
}

#[test]
fn workspace_root_inside_the_source() {
    let (env, repo) = Env::with_repo("inside");
    for root in [
        repo.join("ws").display().to_string(),
        repo.display().to_string(),
        repo.join("deep/er/ws").display().to_string(),
        repo.join("src/..").display().to_string(),
    ] {
        config(&env, &repo, &format!("[workspace]\nroot = \"{root}\"\n"));
        let run = expect_error(
            &env,
            &repo,
            &["prepare"],
            2,
            "delegate::workspace_root_inside_source",
        );
        assert_has(&run.stderr, "outside the project");
        assert!(!repo.join("ws").exists() && !repo.join("deep").exists());
    }
    // Through a symlink that resolves into the source.
    let link = env.path().join("link-to-repo");
    std::os::unix::fs::symlink(&repo, &link).unwrap();
    config(
        &env,
        &repo,
        &format!("[workspace]\nroot = \"{}/ws\"\n", link.display()),
    );
    expect_error(
        &env,
        &repo,
        &["prepare"],
        2,
        "delegate::workspace_root_inside_source",
    );
    // A linked-worktree source: inside the main working tree is refused too.
    let linked = env.path().join("linked");
    crate::common::fixtures::worktree_add(&env, &repo, &linked);
    config(
        &env,
        &repo,
        &format!("[workspace]\nroot = \"{}/ws\"\n", repo.display()),
    );
    expect_error(
        &env,
        &linked,
        &["prepare"],
        2,
        "delegate::workspace_root_inside_source",
    );
    std::fs::remove_file(common_dir(&env, &repo).join("delegate.toml")).unwrap();
    let common = common_dir(&env, &repo);
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert_eq!(registrations(&common), ["linked"]);
    assert_eq!(batch_folders(&common), Vec::<String>::new());
}

#[test]
fn workspace_folder_or_registration_that_already_exists() {
    let (env, repo) = Env::with_repo("exists");
    let folder = workspace_base(&env, &repo).join(&ID_A[..8]).join("2");
    write(&folder.join("precious"), "mine\n");
    let run = delegate_with_id(&env, &repo, ID_A, &["prepare", "-n", "3", "--json"]).expect(2);
    assert_eq!(error_code(&run), "delegate::workspace_exists");
    assert_has(&run.stderr, folder.to_str().unwrap());
    assert_eq!(read(&folder.join("precious")), "mine\n");
    assert_eq!(listing(&folder), [Path::new("precious")]);
    let common = common_dir(&env, &repo);
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert_eq!(registrations(&common), Vec::<String>::new());
    assert_eq!(batch_folders(&common), Vec::<String>::new());
    assert_eq!(listing(folder.parent().unwrap()).len(), 2);
    std::fs::remove_dir_all(workspace_base(&env, &repo)).unwrap();

    // A registration of that name.
    let reg = common.join(format!("worktrees/delegate-{}-1", &ID_A[..8]));
    write(&reg.join("gitdir"), "/nowhere/.git\n");
    let run = delegate_with_id(&env, &repo, ID_A, &["prepare", "--json"]).expect(2);
    assert_eq!(error_code(&run), "delegate::workspace_exists");
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    assert_eq!(batch_folders(&common), Vec::<String>::new());
    assert_eq!(listing(&env.workspace_root()).len(), 0);
    assert!(reg.join("gitdir").exists());
    std::fs::remove_dir_all(&reg).unwrap();

    // A batch with that id exists already: refused, and that batch kept whole.
    let doc = delegate_with_id(&env, &repo, ID_A, &["prepare", "x", "--json"])
        .expect(0)
        .json();
    let run = delegate_with_id(&env, &repo, ID_A, &["prepare", "y", "--json"]).expect(2);
    assert_eq!(error_code(&run), "delegate::batch_exists");
    assert_eq!(
        env.private_refs(&repo),
        [format!("refs/pi-delegate/batches/{ID_A}/baseline")]
    );
    assert_eq!(
        registrations(&common),
        [format!("delegate-{}-x", &ID_A[..8])]
    );
    assert!(root(&doc, 0).join("README").exists());
}

#[test]
fn unknown_and_ambiguous_batches() {
    let (env, repo) = Env::with_repo("select");
    // No batch at all.
    for args in [&["drop", "abcd"][..], &["renew"], &["status", "abcd"]] {
        let code = if args.len() == 1 {
            "delegate::no_batch"
        } else {
            "delegate::unknown_batch"
        };
        expect_error(&env, &repo, args, 2, code);
    }
    delegate_with_id(&env, &repo, ID_A, &["prepare"]).expect(0);
    // A label that reads as another batch's id prefix: prepare refuses one
    // now, but state written before may hold one.
    let toml = batch_toml(&env, &repo, ID_A);
    let text = read(&toml);
    std::fs::write(
        &toml,
        text.replacen(
            &format!("id = \"{ID_A}\"\n"),
            &format!("id = \"{ID_A}\"\nlabel = \"aaaa2222\"\n"),
            1,
        ),
    )
    .unwrap();
    delegate_with_id(&env, &repo, ID_B, &["prepare", "--label", "second"]).expect(0);
    let before = (
        env.private_refs(&repo),
        read_bytes(&batch_toml(&env, &repo, ID_A)),
        read_bytes(&batch_toml(&env, &repo, ID_B)),
    );
    for cmd in ["status", "drop", "renew"] {
        // Unknown.
        for arg in ["bbbb", "nope", "aaaa3", "aaa", "second-label"] {
            let run = expect_error(&env, &repo, &[cmd, arg], 2, "delegate::unknown_batch");
            if arg == "aaa" {
                assert_has(&run.stderr, "at least 4 characters");
            }
        }
        // Ambiguous: a prefix of both.
        let run = expect_error(&env, &repo, &[cmd, "aaaa"], 2, "delegate::ambiguous_batch");
        assert!(run.stderr.contains("aaaa1111") && run.stderr.contains("aaaa2222"));
    }
    // Omitted with two open batches: ambiguous, and both are listed.
    let run = expect_error(&env, &repo, &["renew"], 2, "delegate::ambiguous_batch");
    assert!(run.stderr.contains("aaaa1111 (aaaa2222)") && run.stderr.contains("aaaa2222 (second)"));
    assert_eq!(
        before,
        (
            env.private_refs(&repo),
            read_bytes(&batch_toml(&env, &repo, ID_A)),
            read_bytes(&batch_toml(&env, &repo, ID_B)),
        )
    );
    // What does select: the full id, then a label (even one that looks like
    // another batch's id prefix), then a unique prefix in any case, hyphens included.
    let pick = |arg: &str| {
        env.delegate(&repo, ["status", arg, "--json"])
            .expect(0)
            .json()["batches"][0]["batch"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(pick("aaaa2222"), ID_A);
    assert_eq!(pick("second"), ID_B);
    assert_eq!(pick(ID_B), ID_B);
    assert_eq!(pick(&ID_B.to_uppercase()), ID_B);
    assert_eq!(pick("AAAA1"), ID_A);
    assert_eq!(pick("aaaa2222-0"), ID_B);
}

#[test]
fn malformed_config_names_file_and_line() {
    let (env, repo) = Env::with_repo("config");
    let file = common_dir(&env, &repo).join("delegate.toml");
    for (text, line_col, what) in [
        (
            "[workspace]\nflavour = \"x\"\n",
            ":2:1",
            "unknown field `flavour`",
        ),
        ("[nope]\nx = 1\n", ":1:", "unknown field `nope`"),
        ("[lease]\nttl = 5\n", ":2:7", "invalid type"),
        (
            "[lease]\nttl = \"5 parsecs\"\n",
            ":2:7",
            "must be a duration",
        ),
        (
            "\n\n[lock]\ntimeout = \"soon\"\n",
            ":4:11",
            "must be a duration",
        ),
        (
            "[gc]\nkeep-failed = \"-1d\"\n",
            ":2:15",
            "must be a duration",
        ),
        ("[apply]\nstrict = \"yes\"\n", ":2:10", "invalid type"),
        (
            "[hooks]\nstale-leases = \"shout\"\n",
            ":2:16",
            "unknown variant",
        ),
        ("[workspace]\nmode = \"copy\"\n", ":2:8", "unknown variant"),
        (
            "[workspace]\nroot = \"relative/dir\"\n",
            ":2:8",
            "absolute path",
        ),
        ("[workspace\n", ":1:", "invalid"),
    ] {
        std::fs::write(&file, text).unwrap();
        for args in [&["prepare"][..], &["status"], &["drop", "abcd"], &["renew"]] {
            let run = expect_error(&env, &repo, args, 2, "delegate::config");
            let message = run.json()["error"]["message"].as_str().unwrap().to_string();
            assert_has(&message, file.to_str().unwrap());
            assert!(message.contains(what), "{text:?}: {message}");
            // The human diagnostic points at file, line and column.
            let located = format!("{}{line_col}", file.display());
            assert!(run.stderr.contains(&located), "{text:?}:\n{}", run.stderr);
        }
        assert_nothing_created(&env, &repo);
    }
}

#[test]
fn duplicate_label() {
    let (env, repo) = Env::with_repo("labels");
    prepare(&env, &repo, &["--label", "refactor"]);
    let refs = env.private_refs(&repo);
    let run = expect_error(
        &env,
        &repo,
        &["prepare", "--label", "refactor"],
        2,
        "delegate::duplicate_label",
    );
    assert!(run.stderr.contains("refactor"));
    assert_eq!(env.private_refs(&repo), refs);
    assert_eq!(batch_folders(&common_dir(&env, &repo)).len(), 1);
    for bad in ["", "  ", "tab\there"] {
        expect_error(
            &env,
            &repo,
            &["prepare", "--label", bad],
            2,
            "delegate::bad_label",
        );
    }
    // Labels are case-sensitive and may be reused once the batch is gone.
    prepare(&env, &repo, &["--label", "Refactor"]);
    env.delegate(&repo, ["drop", "refactor"]).expect(0);
    prepare(&env, &repo, &["--label", "refactor"]);
}

#[test]
fn bad_durations_and_pids_on_the_command_line() {
    let (env, repo) = Env::with_repo("args");
    for ttl in ["0s", "5", "2 hours", "-1h", "1y", ""] {
        let arg = format!("--ttl={ttl}");
        expect_error(&env, &repo, &["prepare", &arg], 2, "delegate::bad_duration");
    }
    let run = env
        .delegate(&repo, ["prepare", "--owner-pid", "notapid", "--json"])
        .expect(2);
    assert_eq!(error_code(&run), "delegate::usage");
    expect_error(
        &env,
        &repo,
        &["prepare", "--owner-pid", "4000000"],
        2,
        "delegate::owner_not_running",
    );
    assert_nothing_created(&env, &repo);
    let doc = prepare(&env, &repo, &[]);
    let before = read_bytes(&batch_toml(&env, &repo, &id(&doc)));
    expect_error(
        &env,
        &repo,
        &["renew", "--ttl", "soon"],
        2,
        "delegate::bad_duration",
    );
    expect_error(
        &env,
        &repo,
        &["renew", "--owner-pid", "4000000"],
        2,
        "delegate::owner_not_running",
    );
    assert_eq!(read_bytes(&batch_toml(&env, &repo, &id(&doc))), before);
}

/// Hold the repository lock from another process with util-linux `flock`.
struct LockHolder(std::process::Child);

impl LockHolder {
    fn new(env: &Env, repo: &Path) -> LockHolder {
        let dir = common_dir(env, repo).join("delegate");
        std::fs::create_dir_all(&dir).unwrap();
        let lock = dir.join("lock");
        // Its own process group, so the sleeping child goes with it.
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("flock")
            .arg(&lock)
            .args(["sleep", "120"])
            .process_group(0)
            .spawn()
            .expect("util-linux flock");
        wait_until("flock to hold the lock", || {
            !std::process::Command::new("flock")
                .args(["-n"])
                .arg(&lock)
                .arg("true")
                .status()
                .unwrap()
                .success()
        });
        LockHolder(child)
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        if let Some(pgid) = rustix::process::Pid::from_raw(self.0.id() as i32) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.0.wait();
    }
}

#[test]
fn lock_held_past_the_timeout() {
    let (env, repo) = Env::with_repo("locked");
    let doc = prepare(&env, &repo, &[]);
    let state = read_bytes(&batch_toml(&env, &repo, &id(&doc)));
    let refs = env.private_refs(&repo);
    config(&env, &repo, "[lock]\ntimeout = \"1s\"\n");
    let holder = LockHolder::new(&env, &repo);
    for args in [&["prepare"][..], &["drop", &id(&doc)], &["renew"]] {
        let run = expect_error(&env, &repo, args, 3, "delegate::locked");
        // Not a git-delegate process: no (stale) pid is named.
        assert!(
            run.stderr
                .contains("another process holds the repository lock"),
            "{}",
            run.stderr
        );
    }
    // status takes no lock.
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"].as_array().unwrap().len(), 1);
    assert_eq!(read_bytes(&batch_toml(&env, &repo, &id(&doc))), state);
    assert_eq!(env.private_refs(&repo), refs);
    assert_eq!(registrations(&common_dir(&env, &repo)).len(), 1);
    drop(holder);
    // Released: it works again.
    prepare(&env, &repo, &[]);
}

#[test]
fn a_waiting_command_gets_the_lock_when_it_is_released() {
    let (env, repo) = Env::with_repo("wait");
    config(&env, &repo, "[lock]\ntimeout = \"60s\"\n");
    let holder = LockHolder::new(&env, &repo);
    let child = spawn_piped(&env, &repo, &["prepare", "--json"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(env.private_refs(&repo), Vec::<String>::new());
    drop(holder);
    Run::from(child.wait_with_output().unwrap())
        .expect(0)
        .json();
    assert_eq!(env.private_refs(&repo).len(), 1);
}

#[test]
fn deleted_baseline_ref_is_reported_by_status() {
    let (env, repo) = Env::with_repo("deleted");
    let doc = prepare(&env, &repo, &[]);
    let ref_name = doc["baseline"]["ref"].as_str().unwrap();
    env.git(&repo, ["update-ref", "-d", ref_name]);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["batches"][0]["batch"], doc["batch"]);
    let problems = st["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{st}");
    assert_eq!(problems[0]["kind"], "ref_missing");
    assert_eq!(problems[0]["batch"], doc["batch"]);
    assert!(problems[0]["message"].as_str().unwrap().contains(ref_name));
    let human = env.delegate(&repo, ["status"]).expect(0);
    assert_has(&human.stdout, "was deleted");
    // A moved ref is reported as such.
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    env.git(&repo, ["update-ref", ref_name, head.trim()]);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(st["problems"][0]["kind"], "ref_moved");
    env.git(&repo, ["update-ref", "-d", ref_name]);
    // drop still ends the batch.
    let dropped = env
        .delegate(&repo, ["drop", &id(&doc), "--json"])
        .expect(0)
        .json();
    assert_eq!(dropped["refs_removed"], 0);
    assert_eq!(dropped["workspaces_removed"], 1);
    assert_nothing_created(&env, &repo);
}

#[test]
fn errors_print_one_document_and_nothing_else() {
    let (env, repo) = Env::with_repo("onedoc");
    for args in [
        &["prepare", "bad/name", "--json"][..],
        &["status", "nope", "--json"],
        &["prepare", "--bogus", "--json"],
        &["drop", "--json"],
    ] {
        let run = env.delegate(&repo, args).expect(2);
        let doc = run.json();
        assert_eq!(doc.as_object().unwrap().len(), 2, "{doc}");
        assert!(doc["error"]["code"]
            .as_str()
            .unwrap()
            .starts_with("delegate::"));
        assert!(!run.stderr.is_empty());
    }
    // Without --json, nothing on stdout for an error.
    let run = env.delegate(&repo, ["status", "nope"]).expect(2);
    assert_eq!(run.stdout, "");
}

#[test]
fn ctrl_c_while_waiting_for_the_lock_ends_the_wait() {
    let (env, repo) = Env::with_repo("waitint");
    config(&env, &repo, "[lock]\ntimeout = \"600s\"\n");
    let _holder = LockHolder::new(&env, &repo);
    let mut child = spawn_piped(&env, &repo, &["prepare", "--json"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let started = std::time::Instant::now();
    wait_until("prepare to stop waiting", || {
        child.try_wait().unwrap().is_some()
    });
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let run = Run::from(child.wait_with_output().unwrap());
    if run.code != -1 {
        assert_eq!(run.code, 3, "{}", run.stderr);
        assert_eq!(error_code(&run), "delegate::interrupted");
    }
    assert_nothing_created(&env, &repo);
}

#[test]
fn a_failing_required_clean_filter_is_named_not_an_unreadable_file() {
    let (env, repo) = Env::with_repo("src");
    env.git(&repo, ["config", "filter.x.clean", "false"]);
    env.git(&repo, ["config", "filter.x.required", "true"]);
    write(&repo.join(".gitattributes"), "*.dat filter=x\n");
    write(&repo.join("a.dat"), "data\n");
    let run = expect_error(&env, &repo, &["prepare"], 3, "delegate::filter_failed");
    let doc = run.json();
    let message = doc["error"]["message"].as_str().unwrap();
    let help = doc["error"]["help"].as_str().unwrap();
    assert_has(message, "clean filter `x`");
    assert_has(message, "(false)");
    assert_has(message, "a.dat");
    assert_has(message, "exit status: 1");
    assert_has(help, "git config filter.x.required false");
    assert!(!help.contains("readable"), "{help}");
    assert_nothing_created(&env, &repo);
}

#[test]
fn a_failing_required_smudge_filter_on_checkout_is_named() {
    let env = Env::new();
    let (repo, _) = crate::common::fixtures::filtered_repo(&env, "src", "exit 4\n");
    let run = expect_error(&env, &repo, &["prepare"], 3, "delegate::filter_failed");
    let message = run.json()["error"]["message"].as_str().unwrap().to_string();
    assert_has(&message, "smudge filter `x`");
    assert_has(&message, "a.dat");
    assert_has(&message, "exit status: 4");
    assert_nothing_created(&env, &repo);
}
