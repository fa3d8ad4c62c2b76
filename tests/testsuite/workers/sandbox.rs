//! Contained workers (design §3.22): `run`'s workers and `exec`'s command
//! under Landlock, through the binary, with real worker scripts that try
//! every write they must not make and every one they may, and record what
//! the kernel answered. A kernel without Landlock skips them, saying so
//! (a failure under `CI=true`); `run.sandbox = "on"` there is played with
//! the test-only switch `GIT_DELEGATE_TEST_NO_LANDLOCK`.

use std::path::{Path, PathBuf};

use crate::common::files::read;
use crate::common::fixtures::{id, set_config, task};
use crate::common::{assert_has, Env};
use serde_json::Value;

/// The kernel's Landlock ABI, or `None` after saying SKIPPED.
fn landlock(test: &str) -> Option<u8> {
    match git_delegate::sys::sandbox::support() {
        git_delegate::sys::sandbox::Support::Landlock(abi) => Some(abi),
        git_delegate::sys::sandbox::Support::Absent => {
            crate::common::mounts::skip(test, "this kernel has no Landlock (design §3.22)");
            None
        }
    }
}

/// The error code a command printed: its document's with `--json`, else
/// the first line of its diagnostic.
fn error_code(run: &crate::common::Run) -> String {
    if run.stdout.trim_start().starts_with('{') {
        return crate::common::fixtures::error_code(run);
    }
    run.stderr.lines().next().unwrap_or("").trim().to_string()
}

fn worker<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no worker {name} in {doc:#}"))
}

/// The worker that probes its fence. Each line of `probe-<task>.txt` (in
/// its workspace, so applied into the source) is `NAME ok` or `NAME denied:
/// MESSAGE` (the last line the failing command wrote on stderr).
const PROBE: &str = r#"
t=$GIT_DELEGATE_TASK
s=$GIT_DELEGATE_SOURCE
other=$(dirname "$GIT_DELEGATE_WORKSPACE")/$OTHER
out="$GIT_DELEGATE_WORKSPACE/probe-$t.txt"
try() {
  name=$1; shift
  if err=$("$@" 2>&1 >/dev/null); then echo "$name ok" >> "$out"
  else echo "$name denied: $(printf '%s\n' "$err" | tail -n 1)" >> "$out"; fi
}
: > "$out"
try delegate.toml sh -c "echo '# planted' >> '$s/.git/delegate.toml'"
try hook sh -c "echo 'echo planted' > '$s/.git/hooks/pre-commit'"
try config git config delegate.planted yes
try branch git branch "planted-$t"
try packed-refs sh -c "echo >> '$s/.git/packed-refs'"
try info sh -c "echo planted >> '$s/.git/info/exclude'"
try state sh -c "echo planted > '$s/.git/delegate/planted'"
try source sh -c "echo planted > '$s/a.txt'"
try source-rename mv "$s/a.txt" "$s/a-moved.txt"
try other-workspace sh -c "echo planted > '$other/planted.txt'"
try object-delete rm -f "$OBJECT"
try object-truncate sh -c ": > '$OBJECT'"
try own sh -c "echo mine > own-$t.txt"
try commit sh -c "git add own-$t.txt && git commit -q -m 'work of $t'"
try worktree-ref git update-ref refs/worktree/mine HEAD
try tmpdir sh -c 'echo t > "$TMPDIR/t"'
try devnull sh -c 'echo t > /dev/null'
try status git delegate status
"#;

/// What each probe must say: (name, allowed).
const PROBES: [(&str, bool); 18] = [
    ("delegate.toml", false),
    ("hook", false),
    ("config", false),
    ("branch", false),
    ("packed-refs", false),
    ("info", false),
    ("state", false),
    ("source", false),
    ("source-rename", false),
    ("other-workspace", false),
    ("object-delete", false),
    ("object-truncate", false),
    ("own", true),
    ("commit", true),
    ("worktree-ref", true),
    ("tmpdir", true),
    ("devnull", true),
    // git-delegate's read-only commands work there (its own object folder
    // in GIT_OBJECT_DIRECTORY is the repository's, design §3.22).
    ("status", true),
];

/// A loose object file of `repo`'s store.
fn loose_object(repo: &Path) -> PathBuf {
    let objects = repo.join(".git/objects");
    for fan in std::fs::read_dir(&objects).unwrap().flatten() {
        let name = fan.file_name().to_string_lossy().into_owned();
        if name.len() == 2 {
            if let Some(f) = std::fs::read_dir(fan.path()).unwrap().flatten().next() {
                return f.path();
            }
        }
    }
    panic!("no loose object in {}", objects.display());
}

#[test]
fn contained_workers_write_only_their_own_folders_and_their_commits_land() {
    let Some(abi) = landlock("contained_workers_write_only_their_own_folders") else {
        return;
    };
    let (env, repo) = Env::with_repo("r");
    std::fs::write(repo.join("a.txt"), "source\n").unwrap();
    env.git(&repo, ["add", "a.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "a"]);
    // The pre-commit hook runs `git delegate hook pre-commit` inside the
    // worker's commit: it must accept the worker's own object folder.
    env.delegate(&repo, ["hooks", "install"]).expect(0);
    set_config(&repo, "[lease]\nttl = \"2h\"\n");
    let object = loose_object(&repo);
    let object_bytes = std::fs::read(&object).unwrap();
    let hook = std::fs::read(repo.join(".git/hooks/pre-commit")).unwrap();
    let config = std::fs::read(repo.join(".git/config")).unwrap();
    let delegate_toml = std::fs::read(repo.join(".git/delegate.toml")).unwrap();
    let script = format!(
        "case $GIT_DELEGATE_TASK in 1) OTHER=2;; *) OTHER=1;; esac; OBJECT='{}'; {PROBE}",
        object.display()
    );
    let run = env
        .delegate_cmd(&repo)
        .env("PATH", env.path_with_delegate())
        .args(["run", "-n", "2", "--json", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let run = crate::common::Run::from(run).expect(0);
    let doc = run.json();
    for name in ["1", "2"] {
        let s = &worker(&doc, name)["sandbox"];
        assert_eq!(s["kind"], "landlock", "{doc:#}");
        assert_eq!(s["abi"], abi, "{doc:#}");
        assert_eq!(s["network"], true, "{doc:#}");
        assert_eq!(task(&doc["apply"], name)["status"], "applied", "{doc:#}");
    }
    for t in ["1", "2"] {
        let probe = read(&repo.join(format!("probe-{t}.txt")));
        for (name, allowed) in PROBES {
            let line = probe
                .lines()
                .find(|l| l.split(' ').next() == Some(name))
                .unwrap_or_else(|| panic!("no probe {name} in:\n{probe}"));
            if allowed {
                assert_eq!(line, format!("{name} ok"), "task {t}:\n{probe}");
            } else {
                // Landlock refuses with EACCES.
                assert!(
                    line.starts_with(&format!("{name} denied: ")),
                    "task {t}:\n{probe}"
                );
                assert!(line.contains("Permission denied"), "task {t}:\n{probe}");
            }
        }
        // The work, committed in the workspace, landed.
        assert_eq!(read(&repo.join(format!("own-{t}.txt"))), "mine\n");
    }
    // Nothing outside the workspaces changed.
    assert_eq!(std::fs::read(&object).unwrap(), object_bytes);
    assert_eq!(
        std::fs::read(repo.join(".git/hooks/pre-commit")).unwrap(),
        hook
    );
    assert_eq!(std::fs::read(repo.join(".git/config")).unwrap(), config);
    assert_eq!(
        std::fs::read(repo.join(".git/delegate.toml")).unwrap(),
        delegate_toml
    );
    assert_eq!(read(&repo.join("a.txt")), "source\n");
    assert!(!repo.join("a-moved.txt").exists());
    assert!(!repo.join(".git/delegate/planted").exists());
    assert!(!read(&repo.join(".git/info/exclude")).contains("planted"));
    assert_eq!(env.git(&repo, ["branch", "--list", "planted-*"]), "");
    assert!(!repo.join("planted.txt").exists());
    // The human report says it once, and no private TMPDIR outlives run.
    let id = id(&doc);
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("git-delegate-{}-", &id[..8]))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn run_writable_folders_are_writable_the_rest_is_not() {
    if landlock("run_writable_folders_are_writable_the_rest_is_not").is_none() {
        return;
    }
    let (env, repo) = Env::with_repo("r");
    let cache = env.home().join("cache");
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // `~` is expanded; a folder that does not exist is left out.
    set_config(&repo, "[run]\nwritable = [\"~/cache\", \"~/not-there\"]\n");
    let script = format!(
        "echo c > '{}/c.txt'; {{ echo e > '{}/e.txt'; }} 2> err.txt; echo done > done.txt",
        cache.display(),
        elsewhere.display()
    );
    let out = env
        .delegate(&repo, ["run", "--", "sh", "-c", &script])
        .expect(0);
    assert_has(&out.stdout, "Workers were contained (Landlock ABI");
    assert_eq!(read(&cache.join("c.txt")), "c\n");
    assert!(!elsewhere.join("e.txt").exists());
    assert_has(&read(&repo.join("err.txt")), "Permission denied");
    assert_eq!(read(&repo.join("done.txt")), "done\n");
}

/// The probe: connect to `port` on 127.0.0.1 with bash's `/dev/tcp`,
/// writing `connected` or the error into `net.txt`.
fn net_probe(port: u16) -> String {
    format!(
        "if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo connected > net.txt; else echo refused > net.txt; fi 2> net-err.txt"
    )
}

#[test]
fn no_network_denies_tcp_connections_and_without_it_the_same_probe_connects() {
    let Some(abi) = landlock("no_network_denies_tcp_connections") else {
        return;
    };
    if abi < 4 {
        crate::common::mounts::skip(
            "no_network_denies_tcp_connections",
            "this kernel's Landlock has no network rules (ABI below 4)",
        );
        return;
    }
    if !crate::common::procs::have("bash") {
        crate::common::mounts::skip("no_network_denies_tcp_connections", "no bash");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (env, repo) = Env::with_repo("r");
    let probe = net_probe(port);
    let doc = env
        .delegate(
            &repo,
            ["run", "--no-network", "--json", "--", "bash", "-c", &probe],
        )
        .expect(0)
        .json();
    assert_eq!(worker(&doc, "1")["sandbox"]["network"], false, "{doc:#}");
    assert_eq!(read(&repo.join("net.txt")), "refused\n");
    assert_has(&read(&repo.join("net-err.txt")), "Permission denied");
    // The same through the config.
    set_config(&repo, "[run]\nnetwork = false\n");
    std::fs::remove_file(repo.join("net.txt")).unwrap();
    std::fs::remove_file(repo.join("net-err.txt")).unwrap();
    env.delegate(&repo, ["run", "--", "bash", "-c", &probe])
        .expect(0);
    assert_eq!(read(&repo.join("net.txt")), "refused\n");
    // Without it, the same probe connects.
    set_config(&repo, "");
    std::fs::remove_file(repo.join("net.txt")).unwrap();
    std::fs::remove_file(repo.join("net-err.txt")).unwrap();
    let doc = env
        .delegate(&repo, ["run", "--json", "--", "bash", "-c", &probe])
        .expect(0)
        .json();
    assert_eq!(worker(&doc, "1")["sandbox"]["network"], true, "{doc:#}");
    assert_eq!(read(&repo.join("net.txt")), "connected\n");
    drop(listener);
}

#[test]
fn no_sandbox_starts_workers_unconfined() {
    if landlock("no_sandbox_starts_workers_unconfined").is_none() {
        return;
    }
    let (env, repo) = Env::with_repo("r");
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let script = format!("echo free > '{}/free.txt'", outside.display());
    let doc = env
        .delegate(
            &repo,
            ["run", "--no-sandbox", "--json", "--", "sh", "-c", &script],
        )
        .expect(0)
        .json();
    let s = &worker(&doc, "1")["sandbox"];
    assert_eq!(
        (s["kind"].as_str(), s["abi"].clone()),
        (Some("none"), Value::Null)
    );
    assert_eq!(read(&outside.join("free.txt")), "free\n");
    // run.sandbox = "off" is the same; the human report says so.
    set_config(&repo, "[run]\nsandbox = \"off\"\n");
    std::fs::remove_file(outside.join("free.txt")).unwrap();
    let out = env
        .delegate(&repo, ["run", "--", "sh", "-c", &script])
        .expect(0);
    assert_has(&out.stdout, "Workers ran unconfined.");
    assert_eq!(read(&outside.join("free.txt")), "free\n");
}

#[test]
fn sandbox_on_without_landlock_refuses_before_anything_is_made_and_auto_says_it_once() {
    let (env, repo) = Env::with_repo("r");
    set_config(&repo, "[run]\nsandbox = \"on\"\n");
    let refs_before = env.git(&repo, ["for-each-ref"]);
    for args in [
        &["run", "-n", "2", "--json", "--", "true"][..],
        &["run", "-n", "2", "--", "true"][..],
    ] {
        let out = env
            .delegate_cmd(&repo)
            .env(git_delegate::sys::sandbox::TEST_NO_LANDLOCK, "1")
            .args(args)
            .output()
            .unwrap();
        let out = crate::common::Run::from(out).expect(3);
        assert_eq!(
            error_code(&out),
            "delegate::sandbox_unavailable",
            "{}",
            out.stderr
        );
        // Nothing made: no batch, no ref, no workspace.
        let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        assert_eq!(status["batches"], serde_json::json!([]), "{status:#}");
        assert_eq!(env.git(&repo, ["for-each-ref"]), refs_before);
        assert!(!repo.join(".git/worktrees").exists());
        assert!(!env.workspace_root().exists());
    }
    // exec refuses the same way.
    let prepared = env.delegate(&repo, ["prepare", "--json"]).expect(0).json();
    let out = env
        .delegate_cmd(&repo)
        .env(git_delegate::sys::sandbox::TEST_NO_LANDLOCK, "1")
        .args(["exec", "1", "--", "true"])
        .output()
        .unwrap();
    let out = crate::common::Run::from(out).expect(3);
    assert_eq!(error_code(&out), "delegate::sandbox_unavailable");
    env.delegate(&repo, ["drop", &id(&prepared), "--force"])
        .expect(0);
    // Under "auto": one line on stderr, workers unconfined, no error.
    set_config(&repo, "");
    let out = env
        .delegate_cmd(&repo)
        .env(git_delegate::sys::sandbox::TEST_NO_LANDLOCK, "1")
        .args(["run", "-n", "2", "--json", "--", "true"])
        .output()
        .unwrap();
    let out = crate::common::Run::from(out).expect(0);
    assert_eq!(
        out.stderr.matches("this kernel has no Landlock").count(),
        1,
        "{}",
        out.stderr
    );
    let doc = out.json();
    for name in ["1", "2"] {
        assert_eq!(worker(&doc, name)["sandbox"]["kind"], "none", "{doc:#}");
        assert_eq!(worker(&doc, name)["sandbox"]["abi"], Value::Null);
    }
}

#[test]
fn exec_runs_one_contained_command_and_exits_with_its_status() {
    let Some(_) = landlock("exec_runs_one_contained_command") else {
        return;
    };
    let (env, repo) = Env::with_repo("r");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/f.txt"), "f\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    let doc = env
        .delegate(&repo.join("sub"), ["prepare", "-n", "2", "--json"])
        .expect(0)
        .json();
    let root1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    let exec = |args: &[&str]| env.delegate(&repo, [&["exec"][..], args].concat());
    // Its status, as the command's: 0, 7, a signal as 128 + its number.
    exec(&["1", "--", "true"]).expect(0);
    exec(&["1", "--", "sh", "-c", "exit 7"]).expect(7);
    exec(&["1", "--", "sh", "-c", "kill -TERM $$"]).expect(128 + 15);
    let out = exec(&["1", "--", "no-such-command-here"]).expect(127);
    assert_has(&out.stderr, "no-such-command-here");
    // In the task's cwd, with run's environment; stdin is the caller's.
    let out = env
        .delegate_cmd(&repo)
        .args([
            "exec",
            "2",
            "--",
            "sh",
            "-c",
            "echo \"$GIT_DELEGATE_TASK $GIT_DELEGATE_TASK_INDEX $(pwd) ${GIT_DIR-unset}\"; cat",
        ])
        .env("GIT_DIR", repo.join(".git"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"from stdin\n")?;
            c.wait_with_output()
        })
        .unwrap();
    let out = crate::common::Run::from(out).expect(0);
    let root2 = PathBuf::from(doc["tasks"][1]["root"].as_str().unwrap());
    assert_eq!(
        out.stdout,
        format!("2 1 {} unset\nfrom stdin\n", root2.join("sub").display())
    );
    // Contained like a worker: its workspace yes, the source no.
    let out = exec(&[
        "1",
        "--",
        "sh",
        "-c",
        &format!("echo w > w.txt; echo x > '{}/a.txt'", repo.display()),
    ])
    .expect(2);
    assert_has(&out.stderr, "Permission denied");
    assert_eq!(read(&root1.join("sub/w.txt")), "w\n");
    assert!(!repo.join("a.txt").exists());
    // Its commit: once it ended, git run by the user in the workspace
    // (without its object folder) reads that commit too.
    exec(&["1", "--", "sh", "-c", "git add w.txt && git commit -q -m w"]).expect(0);
    assert_eq!(env.git(&root1, ["log", "-1", "--format=%s"]), "w\n");
    assert_eq!(env.git(&root1, ["status", "--porcelain"]), "");
    // --no-sandbox: unconfined.
    exec(&[
        "1",
        "--no-sandbox",
        "--",
        "sh",
        "-c",
        &format!("echo x > '{}/free.txt'", env.path().display()),
    ])
    .expect(0);
    assert_eq!(read(&env.path().join("free.txt")), "x\n");
    // Refusals, before anything runs.
    let out = exec(&["9", "--", "true"]).expect(2);
    assert_eq!(error_code(&out), "delegate::unknown_task");
    let out = exec(&["--batch", "nope", "1", "--", "true"]).expect(2);
    assert_eq!(error_code(&out), "delegate::unknown_batch");
    env.delegate(&repo, ["apply", "--only", "1"]).expect(0);
    let out = exec(&["1", "--", "true"]).expect(2);
    assert_eq!(error_code(&out), "delegate::task_not_open");
    std::fs::remove_dir_all(&root2).unwrap();
    let out = exec(&["2", "--", "true"]).expect(3);
    assert_eq!(error_code(&out), "delegate::workspace_missing");
    env.delegate(&repo, ["drop", &id(&doc), "--force"])
        .expect(0);
    let out = exec(&["1", "--", "true"]).expect(2);
    assert_eq!(error_code(&out), "delegate::no_batch");
}

#[test]
fn a_contained_workers_packed_objects_are_taken_in_too() {
    if landlock("a_contained_workers_packed_objects_are_taken_in_too").is_none() {
        return;
    }
    let (env, repo) = Env::with_repo("r");
    // The worker commits, then packs its own object folder (as `git gc`
    // or `git repack` there would): only a pack holds the blob its index
    // names, and a `gc --auto` it starts fails harmlessly.
    let script = "echo packed > p.txt && git add p.txt \
        && git -c gc.auto=1 -c gc.autoDetach=false commit -q -m p \
        && git repack -a -d -q 2>/dev/null; \
        ls \"$GIT_OBJECT_DIRECTORY/pack\" | grep -c '[.]pack$' > packs.txt; \
        find \"$GIT_OBJECT_DIRECTORY\" -path '*/[0-9a-f][0-9a-f]/*' -type f | wc -l > loose.txt";
    let doc = env
        .delegate(&repo, ["run", "--json", "--", "sh", "-c", script])
        .expect(0)
        .json();
    assert_eq!(task(&doc["apply"], "1")["status"], "applied", "{doc:#}");
    assert_eq!(read(&repo.join("packs.txt")).trim(), "1");
    assert_eq!(read(&repo.join("loose.txt")).trim(), "0");
    assert_eq!(read(&repo.join("p.txt")), "packed\n");
}

#[test]
fn a_contained_workers_workspace_goes_to_the_pool_and_is_reused() {
    if landlock("a_contained_workers_workspace_goes_to_the_pool_and_is_reused").is_none() {
        return;
    }
    let (env, repo) = Env::with_repo("r");
    set_config(&repo, "[workspace]\npool = 1\n");
    // Its registration holds its own object folder now.
    env.delegate(
        &repo,
        [
            "run",
            "--",
            "sh",
            "-c",
            "echo c > c.txt && git add c.txt && git commit -q -m c",
        ],
    )
    .expect(0);
    assert_eq!(read(&repo.join("c.txt")), "c\n");
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["idle_workspaces"], 1, "{status:#}");
    env.delegate(&repo, ["prepare", "--json"]).expect(0);
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    assert_eq!(status["idle_workspaces"], Value::Null, "{status:#}");
}

/// A containment key planted in `delegate.toml` while a batch is open (by
/// an unconfined worker: a subagent, or one started by hand) loosens
/// nothing (design §3.18 "Commands from the shared git dir", §3.22):
/// `run.sandbox = "off"`, `run.network = true` over a confirmed `false`
/// and a folder added to `run.writable` are left out, the workers are
/// contained as the user confirmed, `run` and `exec` warn once naming the
/// keys and how to confirm; after `config --trust` they hold.
#[test]
fn containment_keys_a_worker_plants_hold_only_once_confirmed() {
    if landlock("containment_keys_a_worker_plants_hold_only_once_confirmed").is_none() {
        return;
    }
    let (env, repo) = Env::with_repo("r");
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // The user's own file, confirmed while no batch is open.
    set_config(&repo, "[run]\nnetwork = true\n");
    env.delegate(&repo, ["config"]).expect(0);
    // An open batch; its worker (unconfined here) plants the keys.
    env.delegate(&repo, ["prepare", "--label", "open"])
        .expect(0);
    set_config(
        &repo,
        &format!(
            "[run]\nsandbox = \"off\"\nnetwork = true\nwritable = [\"{}\"]\n",
            outside.display()
        ),
    );
    let script = format!(
        "echo free > '{}/free.txt' || echo denied > denied.txt",
        outside.display()
    );
    let out = env
        .delegate(&repo, ["run", "--json", "--", "sh", "-c", &script])
        .expect(0);
    let doc = out.json();
    assert_eq!(worker(&doc, "1")["sandbox"]["kind"], "landlock", "{doc:#}");
    assert!(!outside.join("free.txt").exists(), "the planted keys held");
    assert_eq!(read(&repo.join("denied.txt")), "denied\n");
    assert_has(&out.stderr, "run.sandbox = `off`");
    assert_has(&out.stderr, "run.writable = `");
    assert_has(&out.stderr, "delegate config --trust");
    assert_eq!(out.stderr.matches("is not what you confirmed").count(), 1);
    // exec the same: contained, warned once.
    let b = env.delegate(&repo, ["status", "--json"]).expect(0).json()["batches"][0]["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.delegate(
        &repo,
        ["exec", "--batch", &b, "1", "--", "sh", "-c", &script],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !outside.join("free.txt").exists(),
        "exec: the planted keys held"
    );
    assert_has(&out.stderr, "run.sandbox = `off`");
    // Once the batch has ended the file is not the user's either: a
    // change found at a batch's end stays left out.
    env.delegate(&repo, ["drop", &b, "--force"]).expect(0);
    let out = env
        .delegate(&repo, ["run", "--json", "--", "sh", "-c", &script])
        .expect(0);
    assert_eq!(worker(&out.json(), "1")["sandbox"]["kind"], "landlock");
    assert!(
        !outside.join("free.txt").exists(),
        "the planted keys held after the batch"
    );
    assert_has(&out.stderr, "run.sandbox = `off`");
    // Confirmed by the user: they hold.
    env.delegate(&repo, ["config", "--trust"]).expect(0);
    let doc = env
        .delegate(&repo, ["run", "--json", "--", "sh", "-c", &script])
        .expect(0)
        .json();
    assert_eq!(worker(&doc, "1")["sandbox"]["kind"], "none", "{doc:#}");
    assert_eq!(read(&outside.join("free.txt")), "free\n");
}
