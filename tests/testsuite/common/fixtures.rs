//! Fixtures and checks shared by the areas, on top of `common`: prepared
//! batches and their documents, snapshots, git and state folders, listings,
//! waiting on events. A helper used by two test files lives here (or in
//! `files`, `procs`, `mounts`), never in two copies.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

pub use crate::common::{Env, Run};
use serde_json::Value;

/// Bytes and mtime of a file, to prove it was not touched.
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub bytes: Vec<u8>,
    pub mtime: SystemTime,
}

pub fn fingerprint(path: &Path) -> Fingerprint {
    Fingerprint {
        bytes: std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
        mtime: std::fs::metadata(path).unwrap().modified().unwrap(),
    }
}

/// `git delegate snapshot` in `dir`: (tree id, hashed count).
pub fn snapshot(env: &Env, dir: &Path) -> (String, usize) {
    let run = env.delegate(dir, ["snapshot"]).expect(0);
    let tree = run.stdout.trim().to_string();
    assert_eq!(tree.len(), 40, "not a tree id: {:?}", run.stdout);
    let hashed = run
        .stderr
        .split_whitespace()
        .skip_while(|w| *w != "hashed")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `hashed N` on stderr: {:?}", run.stderr));
    (tree, hashed)
}

/// The tree of a commit.
pub fn tree_of(env: &Env, repo: &Path, commit: &str) -> String {
    env.git(repo, ["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_string()
}

/// The git dir of a working tree.
pub fn git_dir(env: &Env, dir: &Path) -> PathBuf {
    PathBuf::from(env.git(dir, ["rev-parse", "--absolute-git-dir"]).trim())
}

/// The common dir of a working tree, as git prints it (joined to `dir`
/// when relative), not canonicalized.
pub fn common_dir_as_printed(env: &Env, dir: &Path) -> PathBuf {
    let out = env.git(dir, ["rev-parse", "--git-common-dir"]);
    let p = PathBuf::from(out.trim());
    if p.is_absolute() {
        p
    } else {
        dir.join(p)
    }
}

/// The common dir of a working tree.
pub fn common_dir(env: &Env, dir: &Path) -> PathBuf {
    let out = env.git(dir, ["rev-parse", "--git-common-dir"]);
    let p = PathBuf::from(out.trim());
    let p = if p.is_absolute() { p } else { dir.join(p) };
    std::fs::canonicalize(p).unwrap()
}

/// Prepare with `--json` and return the document.
pub fn prepare(env: &Env, dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["prepare", "--json"];
    all.extend_from_slice(args);
    env.delegate(dir, all).expect(0).json()
}

/// Task roots of a batch document.
pub fn roots(doc: &Value) -> Vec<PathBuf> {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| PathBuf::from(t["root"].as_str().unwrap()))
        .collect()
}

pub fn root(doc: &Value, i: usize) -> PathBuf {
    roots(doc)[i].clone()
}

pub fn id(doc: &Value) -> String {
    doc["batch"].as_str().unwrap().to_string()
}

/// Prepare with `--json`: the document and its task roots.
pub fn prepare_roots(env: &Env, dir: &Path, args: &[&str]) -> (Value, Vec<PathBuf>) {
    let doc = prepare(env, dir, args);
    let roots = roots(&doc);
    (doc, roots)
}

/// Prepare with `--json`: the batch id and the task roots.
pub fn prepare_batch(env: &Env, dir: &Path, args: &[&str]) -> (String, Vec<PathBuf>) {
    let (doc, roots) = prepare_roots(env, dir, args);
    (id(&doc), roots)
}

/// A JSON array of strings as strings.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// A JSON array of strings as `&str`s.
pub fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// The `key` of every element of the JSON array `v`, as text.
pub fn field_strs<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e[key].as_str().unwrap())
        .collect()
}

/// Write `repo`'s `.git/delegate.toml` naming `root` as the workspace root.
pub fn set_workspace_root(repo: &Path, root: &Path) {
    set_config(
        repo,
        &format!("[workspace]\nroot = \"{}\"\n", root.display()),
    );
}

/// The first of a document's `problems` (status, gc) of kind `kind`.
pub fn problem<'a>(doc: &'a Value, kind: &str) -> Option<&'a Value> {
    doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind)
}

/// The task named `name` in a document's `tasks` (apply, status, run).
pub fn task<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no task {name} in {doc:#}"))
}

/// Each task's name, status and reason (empty if none), in order.
pub fn task_fates(doc: &Value) -> Vec<(String, String, String)> {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Poll `status --json` until `batch`'s lease is stale (expired or
/// orphaned); the deadline only guards against a hang.
pub fn wait_stale(env: &Env, repo: &Path, batch: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let doc = env.delegate(repo, ["status", "--json"]).json();
        let state = doc["batches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["batch"] == batch)
            .map(|b| b["lease"]["state"].as_str().unwrap().to_string())
            .unwrap_or_default();
        if state == "expired" || state == "orphaned" {
            return;
        }
        assert!(Instant::now() < deadline, "batch {batch} never went stale");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every file and folder below `dir` (relative), sorted; empty when `dir` is absent.
pub fn listing(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_path_buf());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The names in `dir`, sorted; none when it is absent.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Registrations under `<common-dir>/worktrees/`.
pub fn registrations(common: &Path) -> Vec<String> {
    names_in(&common.join("worktrees"))
}

/// Batch folders under `<common-dir>/delegate/batches/`.
pub fn batch_folders(common: &Path) -> Vec<String> {
    names_in(&common.join("delegate/batches"))
}

/// Assert that no git-delegate artefact exists for `repo`: no private refs,
/// no worktree registrations, no batch folders, nothing under the workspace root.
pub fn assert_nothing_created(env: &Env, repo: &Path) {
    let common = common_dir(env, repo);
    assert_eq!(env.private_refs(repo), Vec::<String>::new(), "private refs");
    assert_eq!(
        registrations(&common),
        Vec::<String>::new(),
        "registrations"
    );
    assert_eq!(
        batch_folders(&common),
        Vec::<String>::new(),
        "batch folders"
    );
    assert_eq!(
        listing(&env.workspace_root()),
        Vec::<PathBuf>::new(),
        "workspace root"
    );
}

/// The error document of a failed `--json` run, checked for shape.
pub fn error_code(run: &Run) -> String {
    let doc = run.json();
    assert_eq!(doc["schema"], "git-delegate/v1", "{doc}");
    let err = &doc["error"];
    for k in ["code", "message", "help"] {
        assert!(
            err[k].as_str().is_some_and(|s| !s.is_empty()),
            "error.{k} missing: {doc}"
        );
    }
    err["code"].as_str().unwrap().to_string()
}

/// Run with `--json` (right after the subcommand); assert the exit code and
/// the error code.
pub fn expect_error(env: &Env, dir: &Path, args: &[&str], exit: i32, code: &str) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.insert(1.min(all.len()), "--json");
    let run = env.delegate(dir, &all).expect(exit);
    assert_eq!(error_code(&run), code, "stderr: {}", run.stderr);
    // The human diagnostic names the code too.
    assert!(run.stderr.contains(code), "stderr: {}", run.stderr);
    run
}

/// Poll `f` until it is true (generous timeout for a loaded machine).
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spawn `cmd` (a `git-delegate` command, its stdio set by the caller)
/// with the test-only pause point `point` (`GIT_DELEGATE_TEST_PAUSE`) and
/// wait until it reports that it waits there; asserts it neither ends nor
/// hangs first. Removing `env.path()/paused` lets it go on.
#[track_caller]
pub fn paused_at(env: &Env, mut cmd: std::process::Command, point: &str) -> std::process::Child {
    let paused = env.path().join("paused");
    let _ = std::fs::remove_file(&paused);
    let mut child = cmd
        .env("GIT_DELEGATE_TEST_PAUSE", point)
        .env("GIT_DELEGATE_TEST_PAUSED", &paused)
        .spawn()
        .unwrap_or_else(|e| panic!("start git-delegate: {e}"));
    let deadline = Instant::now() + Duration::from_secs(300);
    while !std::fs::read_to_string(&paused)
        .unwrap_or_default()
        .lines()
        .any(|l| l == point)
    {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "ended ({}) before {point}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "never paused at {point}");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// `git-delegate ARGS` started in `dir`, its stdout and stderr captured.
pub fn spawn_piped(env: &Env, dir: &Path, args: &[&str]) -> std::process::Child {
    env.delegate_cmd(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// `git-delegate ARGS` in `dir` with its stdout's reading end closed
/// before it writes anything (a reader gone, as `| head` leaves it): its
/// output, stderr captured.
pub fn run_with_stdout_closed(env: &Env, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut child = spawn_piped(env, dir, args);
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// Write a file, creating parent folders.
pub fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// Set or clear the executable bit.
pub fn set_exec(path: &Path, exec: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if exec { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Write `.git/delegate.toml` of `repo`.
pub fn config(env: &Env, repo: &Path, text: &str) {
    std::fs::write(common_dir(env, repo).join("delegate.toml"), text).unwrap();
}

/// The path of a batch's `batch.toml`.
pub fn batch_toml(env: &Env, repo: &Path, id: &str) -> PathBuf {
    common_dir(env, repo).join(format!("delegate/batches/{id}/batch.toml"))
}

/// `<root>/<repo-name>-<fp>` of design §2 for `repo` (root: the default one).
pub fn workspace_base(env: &Env, repo: &Path) -> PathBuf {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let common = common_dir(env, repo);
    let digest = sha2::Sha256::digest(common.as_os_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let name = common
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    env.workspace_root().join(format!("{name}-{}", &hex[..12]))
}

/// A git-delegate command with a fixed batch id (tests only).
pub fn delegate_with_id(env: &Env, dir: &Path, id: &str, args: &[&str]) -> Run {
    let out = env
        .delegate_cmd(dir)
        .env("GIT_DELEGATE_TEST_BATCH_ID", id)
        .args(args)
        .output()
        .unwrap();
    Run::from(out)
}

/// A child process that runs until killed (for `--owner-pid`).
pub struct Sleeper(pub std::process::Child);

impl Sleeper {
    pub fn new() -> Sleeper {
        Sleeper(
            std::process::Command::new("sleep")
                .arg("300")
                .spawn()
                .unwrap(),
        )
    }

    pub fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// Kill and reap it: its pid is then not running.
    pub fn end(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Seconds since the epoch of an RFC 3339 `YYYY-MM-DDTHH:MM:SSZ` string.
pub fn rfc3339_secs(s: &str) -> i64 {
    assert!(
        s.len() == 20 && s.ends_with('Z') && &s[10..11] == "T",
        "not RFC 3339 UTC: {s}"
    );
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // days from civil (Howard Hinnant)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The checkout of this crate (docs, completions, man pages, hooks).
pub fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bytes of `repo`'s `.git/index`.
pub fn index_bytes(repo: &Path) -> Vec<u8> {
    std::fs::read(repo.join(".git/index")).unwrap()
}

/// Write `repo`'s `.git/delegate.toml`.
pub fn set_config(repo: &Path, text: &str) {
    std::fs::write(repo.join(".git/delegate.toml"), text).unwrap();
}

/// The root of task `i` of a batch document.
pub fn task_root(doc: &Value, i: usize) -> PathBuf {
    PathBuf::from(doc["tasks"][i]["root"].as_str().unwrap())
}

/// Write `files` (path, text) in `repo`, making folders, then `git add`
/// exactly them and commit them with `message`.
pub fn commit_files(env: &Env, repo: &Path, files: &[(&str, &str)], message: &str) {
    let mut add = vec!["add", "--"];
    for (path, text) in files {
        write(&repo.join(path), text);
        add.push(path);
    }
    env.git(repo, add);
    env.git(repo, ["commit", "-q", "-m", message]);
}

/// `git add -A` and commit it all.
pub fn commit_all(env: &Env, repo: &Path) {
    env.git(repo, ["add", "-A"]);
    env.git(repo, ["commit", "-q", "-m", "fixture"]);
}

/// A repository `name` whose committed `a.dat` ("data\n") goes through the
/// required filter `x` (clean `cat`, smudge `sh SCRIPT`), by
/// `.gitattributes`, and the script, holding `smudge`. Prepare records the
/// command; rewriting the script changes what it does later (design §3.18
/// "Drivers": a driver whose command changed does not run).
pub fn filtered_repo(env: &Env, name: &str, smudge: &str) -> (PathBuf, PathBuf) {
    let repo = env.repo(name);
    std::fs::write(repo.join(".gitattributes"), "*.dat filter=x\n").unwrap();
    std::fs::write(repo.join("a.dat"), "data\n").unwrap();
    let script = env.path().join("smudge.sh");
    std::fs::write(&script, smudge).unwrap();
    env.git(&repo, ["config", "filter.x.clean", "cat"]);
    let command = format!("sh '{}'", script.display());
    env.git(&repo, ["config", "filter.x.smudge", &command]);
    env.git(&repo, ["config", "filter.x.required", "true"]);
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "filtered"]);
    (repo, script)
}

/// The (code, message, help) of a `--json` error document, empty where absent.
pub fn error_parts(run: &Run) -> (String, String, String) {
    let doc = run.json();
    let e = &doc["error"];
    let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
    (s("code"), s("message"), s("help"))
}

/// `git worktree add -q --detach PATH` in `repo`: a linked worktree at HEAD.
pub fn worktree_add(env: &Env, repo: &Path, path: &Path) {
    env.git(
        repo,
        ["worktree", "add", "-q", "--detach", path.to_str().unwrap()],
    );
}
