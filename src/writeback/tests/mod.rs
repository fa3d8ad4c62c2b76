//! Unit tests of the write-back: every kind of change, injected failures
//! and crashes at every point, recovery, `check`, filters and path encoding.
//! This file holds the fixture and the helpers the test files share; the
//! tests are by area: `crashes`, `checks`, `content`, `rollbacks`.

mod checks;
mod content;
mod crashes;
mod rollbacks;

use super::journal::{dec, enc, parse_journal, Phase};
use super::recover::recover_with;
use super::*;
use crate::error::{Code, Error};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The payload of a simulated `kill -9` (fault injection in unit tests).
pub struct Crash;

struct Fx {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

/// The tree's paths with their kind and content (`Fx::state`).
type State = BTreeMap<Vec<u8>, (String, Vec<u8>)>;

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    git_in(dir, args, None)
}

fn git_in(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("git runs");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        if let Some(i) = input {
            stdin.write_all(i).expect("write stdin");
        }
    }
    let out = child.wait_with_output().expect("git output");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn fixture() -> Fx {
    let tmp = tempfile::Builder::new()
        .prefix("gd-wb-")
        .tempdir()
        .expect("tempdir");
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README"), "hello\n").unwrap();
    git(&root, &["add", "README"]);
    git(&root, &["commit", "-q", "-m", "init"]);
    let root = std::fs::canonicalize(root).unwrap();
    Fx { _tmp: tmp, root }
}

impl Fx {
    fn source(&self) -> Source {
        Source::discover(&self.root).expect("source")
    }

    fn batch_dir(&self) -> PathBuf {
        let d = self.source().state_dir().join("batches/b1");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn blob(&self, bytes: &[u8]) -> ObjectId {
        let out = git_in(
            &self.root,
            &["hash-object", "-w", "--no-filters", "--stdin"],
            Some(bytes),
        );
        ObjectId::from_hex(out.trim_ascii()).unwrap()
    }

    /// The bytes of the file at `rel`.
    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }

    /// `bytes` stored as the entry of a regular file (`S`'s or `F`'s).
    fn file_of(&self, bytes: &[u8]) -> Option<(EntryKind, ObjectId)> {
        Some((EntryKind::Blob, self.blob(bytes)))
    }

    /// `bytes` stored as the entry of an executable file.
    fn exe_of(&self, bytes: &[u8]) -> Option<(EntryKind, ObjectId)> {
        Some((EntryKind::BlobExecutable, self.blob(bytes)))
    }

    /// `target` stored as the entry of a symlink.
    fn link_of(&self, target: &[u8]) -> Option<(EntryKind, ObjectId)> {
        Some((EntryKind::Link, self.blob(target)))
    }

    fn file(&self, rel: &str, bytes: &[u8]) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn chmod_x(&self, rel: &str) {
        let p = self.root.join(rel);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn link(&self, rel: &str, target: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    fn state(&self) -> State {
        let mut out = BTreeMap::new();
        walk(&self.root, b"", &mut out);
        out
    }
}

fn walk(dir: &Path, rel: &[u8], out: &mut State) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if rel.is_empty() && name == ".git" {
            continue;
        }
        let mut r = rel.to_vec();
        if !r.is_empty() {
            r.push(b'/');
        }
        r.extend_from_slice(name.as_bytes());
        let md = std::fs::symlink_metadata(e.path()).unwrap();
        if md.file_type().is_symlink() {
            let t = std::fs::read_link(e.path()).unwrap();
            out.insert(r, ("link".into(), t.as_os_str().as_bytes().to_vec()));
        } else if md.is_dir() {
            out.insert(r.clone(), ("dir".into(), Vec::new()));
            walk(&e.path(), &r, out);
        } else {
            let x = md.permissions().mode() & 0o111 != 0;
            out.insert(r, (format!("file x={x}"), std::fs::read(e.path()).unwrap()));
        }
    }
}

fn faults(point: &str) -> Faults {
    Faults {
        point: Some(point.to_string()),
        pauses: false,
        recovery_steps: std::cell::Cell::new(0),
        after_each_rename: None,
    }
}

fn no_faults() -> Faults {
    Faults {
        point: None,
        ..faults("")
    }
}

fn pw(
    path: &[u8],
    old: Option<(EntryKind, ObjectId)>,
    new: Option<(EntryKind, ObjectId)>,
) -> PathWrite {
    PathWrite {
        path: path.into(),
        old,
        new,
    }
}

/// A source with every kind of change, the writes, and the expected result.
fn scenario() -> (Fx, Vec<PathWrite>) {
    let fx = fixture();
    fx.file("m.txt", b"old\n");
    fx.file("d.txt", b"gone\n");
    fx.file("sub/deep/x", b"x\n");
    fx.file("f2d", b"file becomes folder\n");
    fx.file("d2f/a", b"a\n");
    fx.file("d2f/b/c", b"c\n");
    fx.link("link", "m.txt");
    fx.file("exe", b"#!/bin/sh\n");
    fx.file("keep/y", b"y\n");
    fx.file("odd", b"o\n");
    fx.file("was_x", b"x bit goes\n");
    fx.chmod_x("was_x");
    let odd_name: &[u8] = b"sp ace/caf\xe9\nname";
    let (f, x, l) = (
        |b: &[u8]| fx.file_of(b),
        |b: &[u8]| fx.exe_of(b),
        |b: &[u8]| fx.link_of(b),
    );
    let writes = vec![
        pw(b"m.txt", f(b"old\n"), f(b"new\n")),
        pw(b"d.txt", f(b"gone\n"), None),
        pw(b"sub/deep/x", f(b"x\n"), None),
        pw(b"f2d", f(b"file becomes folder\n"), None),
        pw(b"f2d/inner/z", None, f(b"z\n")),
        pw(b"d2f", None, x(b"now a file\n")),
        pw(b"d2f/a", f(b"a\n"), None),
        pw(b"d2f/b/c", f(b"c\n"), None),
        pw(b"link", l(b"m.txt"), l(b"keep/y")),
        pw(b"exe", f(b"#!/bin/sh\n"), x(b"#!/bin/sh\n")),
        pw(b"new/dir/n", None, f(b"n\x00bin\xff")),
        pw(odd_name, None, f(b"odd name\n")),
        pw(b"odd", f(b"o\n"), l(b"sp ace")),
        pw(b"was_x", x(b"x bit goes\n"), f(b"x bit goes\n")),
    ];
    (fx, writes)
}

fn expected_after(before: &State) -> State {
    let mut e = before.clone();
    let file = |b: &[u8]| ("file x=false".to_string(), b.to_vec());
    e.insert(b"m.txt".to_vec(), file(b"new\n"));
    e.remove(&b"d.txt"[..]);
    e.remove(&b"sub/deep/x"[..]);
    e.remove(&b"sub/deep"[..]);
    e.remove(&b"sub"[..]);
    e.insert(b"f2d".to_vec(), ("dir".into(), vec![]));
    e.insert(b"f2d/inner".to_vec(), ("dir".into(), vec![]));
    e.insert(b"f2d/inner/z".to_vec(), file(b"z\n"));
    for k in ["d2f/a", "d2f/b/c", "d2f/b"] {
        e.remove(k.as_bytes());
    }
    e.insert(
        b"d2f".to_vec(),
        ("file x=true".into(), b"now a file\n".to_vec()),
    );
    e.insert(b"link".to_vec(), ("link".into(), b"keep/y".to_vec()));
    e.insert(
        b"exe".to_vec(),
        ("file x=true".into(), b"#!/bin/sh\n".to_vec()),
    );
    e.insert(b"new".to_vec(), ("dir".into(), vec![]));
    e.insert(b"new/dir".to_vec(), ("dir".into(), vec![]));
    e.insert(b"new/dir/n".to_vec(), file(b"n\x00bin\xff"));
    e.insert(b"sp ace".to_vec(), ("dir".into(), vec![]));
    e.insert(b"sp ace/caf\xe9\nname".to_vec(), file(b"odd name\n"));
    e.insert(b"odd".to_vec(), ("link".into(), b"sp ace".to_vec()));
    e.insert(b"was_x".to_vec(), file(b"x bit goes\n"));
    e
}

fn no_leftovers(fx: &Fx, batch_dir: &Path) {
    for k in fx.state().keys() {
        assert!(!k.contains_str(".gd-"), "left over: {}", k.as_bstr());
    }
    assert!(
        !batch_dir.join(batch::JOURNAL_FILE).exists(),
        "journal left"
    );
}

/// Simulated crashes print nothing; real panics still do.
fn quiet_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Crash>() {
                default(info);
            }
        }));
    });
}

/// The scenario ready to write: the fixture, its writes, its source and
/// batch folder, and the tree as it is before the write.
fn scenario_ready() -> (Fx, Vec<PathWrite>, Source, PathBuf, State) {
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    (fx, writes, source, bd, before)
}

/// The scenario killed at `point` (a fault point): the fixture, its
/// source and batch folder, and the tree as it was before the write.
fn crashed_at(point: &str) -> (Fx, Source, PathBuf, State) {
    let (fx, writes, source, bd, before) = scenario_ready();
    assert!(crash(&source, &bd, &writes, point));
    (fx, source, bd, before)
}

fn crash(source: &Source, bd: &Path, writes: &[PathWrite], point: &str) -> bool {
    crashing(point, |f| write_with(source, bd, writes, &[], f))
}

fn recover_crashing(source: &Source, point: &str) -> bool {
    crashing(point, |f| recover_with(source, f).map(drop))
}

/// Check `writes` (nothing blocks) and write them, without faults.
fn check_and_write(source: &Source, bd: &Path, writes: &[PathWrite]) {
    assert_eq!(check(source, writes).unwrap(), vec![]);
    write_with(source, bd, writes, &[], &no_faults()).unwrap();
}

/// Whether `run`, with the fault `point` set, was killed there (a
/// simulated `kill -9`); a run that ends must succeed.
fn crashing(point: &str, run: impl FnOnce(&Faults) -> Result<()>) -> bool {
    let f = faults(point);
    quiet_crashes();
    match catch_unwind(AssertUnwindSafe(|| run(&f))) {
        Ok(res) => {
            res.unwrap();
            false
        }
        Err(payload) => {
            assert!(payload.is::<Crash>(), "a real panic at {point}");
            true
        }
    }
}
