//! Fixtures and checks shared by the areas, on top of `common`: prepared
//! batches and their documents, snapshots, git and state folders, listings,
//! waiting on events. A helper used by two test files lives here (or in
//! `mounts`), never in two copies.
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

/// The task named `name` in a document's `tasks` (apply, status, run).
pub fn task<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no task {name} in {doc:#}"))
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

/// Every path below `root` (its `.git` left out): mode and bytes (a
/// symlink's target, nothing for a folder).
pub type Tree = std::collections::BTreeMap<Vec<u8>, (u32, Vec<u8>)>;

pub fn tree(root: &Path) -> Tree {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if dir == root && e.file_name() == ".git" {
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if md.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec()
            } else if md.is_dir() {
                stack.push(p);
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(rel, (md.permissions().mode(), bytes));
        }
    }
    out
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

/// Is `program` on PATH (`command -v`)?
pub fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// git's bash completion script on this machine, if any.
pub fn git_completion_script() -> Option<PathBuf> {
    let mut candidates = vec![
        PathBuf::from("/usr/share/bash-completion/completions/git"),
        PathBuf::from("/usr/local/share/bash-completion/completions/git"),
        PathBuf::from("/etc/bash_completion.d/git"),
        PathBuf::from("/usr/share/git-core/contrib/completion/git-completion.bash"),
        PathBuf::from("/usr/share/git/completion/git-completion.bash"),
    ];
    if let Ok(out) = std::process::Command::new("git")
        .arg("--exec-path")
        .output()
    {
        let exec = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        for up in exec.ancestors().skip(1).take(3) {
            candidates.push(up.join("share/git-core/contrib/completion/git-completion.bash"));
            candidates.push(up.join("share/bash-completion/completions/git"));
        }
    }
    candidates
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("__git_complete_command")))
}

/// A process that exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// The controlling terminal of a process (`tty_nr` of /proc/PID/stat).
pub fn tty_nr(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(4)?.parse().ok()
}

/// A file's text, panicking with its path when it cannot be read.
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A file's bytes as text, invalid UTF-8 replaced.
pub fn read_lossy(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned()
}

/// `n` lines `line 1` .. `line n`.
pub fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// `text` with its line `which` (from 1) replaced by `new`.
pub fn with_line(text: &str, which: usize, new: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == which {
                format!("{new}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
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

/// Set a file's mode bits.
pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `git add -A` and commit it all.
pub fn commit_all(env: &Env, repo: &Path) {
    env.git(repo, ["add", "-A"]);
    env.git(repo, ["commit", "-q", "-m", "fixture"]);
}

/// Write an executable hook script, making its folders.
pub fn write_hook(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Bytes as an OS string.
pub fn os(bytes: &[u8]) -> &std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(bytes)
}

/// The (code, message, help) of a `--json` error document, empty where absent.
pub fn error_parts(run: &Run) -> (String, String, String) {
    let doc = run.json();
    let e = &doc["error"];
    let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
    (s("code"), s("message"), s("help"))
}

/// `n` files `<prefix>0`.. of `size` random-looking (incompressible) bytes.
pub fn noise_files(dir: &Path, prefix: &str, n: usize, size: usize) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ (n as u64) ^ prefix.len() as u64;
    for i in 0..n {
        let mut bytes = Vec::with_capacity(size);
        while bytes.len() < size {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        bytes.truncate(size);
        std::fs::write(dir.join(format!("{prefix}{i}")), bytes).unwrap();
    }
}

/// `git worktree add -q --detach PATH` in `repo`: a linked worktree at HEAD.
pub fn worktree_add(env: &Env, repo: &Path, path: &Path) {
    env.git(
        repo,
        ["worktree", "add", "-q", "--detach", path.to_str().unwrap()],
    );
}

/// Everything below `root` (relative paths, folders included, symlinks not
/// followed, a folder that cannot be read passed over) with its metadata
/// and content: a file's bytes, a symlink's target, nothing for a folder.
/// With `skip_top_git`, a `.git` folder right below `root` is left out.
pub fn entries_below(
    root: &Path,
    skip_top_git: bool,
) -> Vec<(PathBuf, std::fs::Metadata, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if skip_top_git
                && dir == root
                && p.file_name().is_some_and(|n| n == ".git")
                && p.is_dir()
            {
                continue;
            }
            let m = p.symlink_metadata().unwrap();
            let content = if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if m.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                stack.push(p.clone());
                Vec::new()
            };
            out.push((p.strip_prefix(root).unwrap().to_path_buf(), m, content));
        }
    }
    out
}

/// What a child's output stream carries, collected by a thread as it comes
/// (for a terminal driven by typing and waiting for what it shows).
pub fn read_in_background(
    mut from: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    std::thread::JoinHandle<()>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    (seen, reader)
}
