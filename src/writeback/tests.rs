//! Unit tests of the write-back: every kind of change, injected failures
//! and crashes at every point, recovery, `check`, filters and path encoding.

use super::journal::{dec, enc};
use super::*;
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

    fn state(&self) -> BTreeMap<Vec<u8>, (String, Vec<u8>)> {
        let mut out = BTreeMap::new();
        walk(&self.root, b"", &mut out);
        out
    }
}

fn walk(dir: &Path, rel: &[u8], out: &mut BTreeMap<Vec<u8>, (String, Vec<u8>)>) {
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
        pauses: false,
        recovery_steps: std::cell::Cell::new(0),
        after_each_rename: None,
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
    let b = |bytes: &[u8]| fx.blob(bytes);
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
    let writes = vec![
        pw(
            b"m.txt",
            Some((EntryKind::Blob, b(b"old\n"))),
            Some((EntryKind::Blob, b(b"new\n"))),
        ),
        pw(b"d.txt", Some((EntryKind::Blob, b(b"gone\n"))), None),
        pw(b"sub/deep/x", Some((EntryKind::Blob, b(b"x\n"))), None),
        pw(
            b"f2d",
            Some((EntryKind::Blob, b(b"file becomes folder\n"))),
            None,
        ),
        pw(b"f2d/inner/z", None, Some((EntryKind::Blob, b(b"z\n")))),
        pw(
            b"d2f",
            None,
            Some((EntryKind::BlobExecutable, b(b"now a file\n"))),
        ),
        pw(b"d2f/a", Some((EntryKind::Blob, b(b"a\n"))), None),
        pw(b"d2f/b/c", Some((EntryKind::Blob, b(b"c\n"))), None),
        pw(
            b"link",
            Some((EntryKind::Link, b(b"m.txt"))),
            Some((EntryKind::Link, b(b"keep/y"))),
        ),
        pw(
            b"exe",
            Some((EntryKind::Blob, b(b"#!/bin/sh\n"))),
            Some((EntryKind::BlobExecutable, b(b"#!/bin/sh\n"))),
        ),
        pw(
            b"new/dir/n",
            None,
            Some((EntryKind::Blob, b(b"n\x00bin\xff"))),
        ),
        pw(odd_name, None, Some((EntryKind::Blob, b(b"odd name\n")))),
        pw(
            b"odd",
            Some((EntryKind::Blob, b(b"o\n"))),
            Some((EntryKind::Link, b(b"sp ace"))),
        ),
        pw(
            b"was_x",
            Some((EntryKind::BlobExecutable, b(b"x bit goes\n"))),
            Some((EntryKind::Blob, b(b"x bit goes\n"))),
        ),
    ];
    (fx, writes)
}

fn expected_after(
    before: &BTreeMap<Vec<u8>, (String, Vec<u8>)>,
) -> BTreeMap<Vec<u8>, (String, Vec<u8>)> {
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

#[test]
fn writes_every_kind_of_change() {
    let (fx, writes) = scenario();
    let source = fx.source();
    let before = fx.state();
    assert_eq!(check(&source, &writes).unwrap(), vec![]);
    let bd = fx.batch_dir();
    write_with(&source, &bd, &writes, &[], &no_faults()).unwrap();
    assert_eq!(fx.state(), expected_after(&before));
    no_leftovers(&fx, &bd);
    // The index and HEAD are untouched.
    assert_eq!(git(&fx.root, &["diff", "--cached", "--name-only"]), b"");
}

#[test]
fn injected_failure_at_every_rename_rolls_back() {
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    let mut n = 1;
    loop {
        match write_with(
            &source,
            &bd,
            &writes,
            &[],
            &faults(&format!("fail-rename:{n}")),
        ) {
            Err(e) => {
                assert_eq!(e.code, Code::WriteFailed, "{}", e.message);
                assert_eq!(fx.state(), before, "after failing rename {n}");
                no_leftovers(&fx, &bd);
            }
            Ok(()) => {
                assert!(n > 10, "only {n} renames?");
                assert_eq!(fx.state(), expected_after(&before));
                break;
            }
        }
        n += 1;
    }
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

fn crash(source: &Source, bd: &Path, writes: &[PathWrite], point: &str) -> bool {
    let f = faults(point);
    quiet_crashes();
    let r = catch_unwind(AssertUnwindSafe(|| write_with(source, bd, writes, &[], &f)));
    match r {
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

fn recover_crashing(source: &Source, point: &str) -> bool {
    let f = faults(point);
    quiet_crashes();
    let r = catch_unwind(AssertUnwindSafe(|| recover_with(source, &f)));
    match r {
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

#[test]
fn crash_at_every_point_recovers_to_s_or_f() {
    let mut points: Vec<String> = vec!["after-journal".into(), "after-temp-files".into()];
    points.extend((1..=40).map(|n| format!("after-rename:{n}")));
    points.push("after-commit".into());
    points.push("before-journal-remove".into());
    let mut renames_seen = 0;
    for point in points {
        let (fx, writes) = scenario();
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        let after = expected_after(&before);
        if !crash(&source, &bd, &writes, &point) {
            // Fewer renames than that: the write completed.
            assert!(point.starts_with("after-rename"), "{point} never hit");
            assert_eq!(fx.state(), after);
            continue;
        }
        if point.starts_with("after-rename") {
            renames_seen += 1;
        }
        assert!(
            bd.join(batch::JOURNAL_FILE).exists(),
            "{point}: journal missing"
        );
        // A crash during recovery is recovered by the next run.
        let mut k = 1;
        while recover_crashing(&source, &format!("recover-abort:{k}")) {
            k += 1;
            assert!(k < 200);
        }
        let expect = if point == "after-commit" || point == "before-journal-remove" {
            &after
        } else {
            &before
        };
        assert_eq!(&fx.state(), expect, "after a crash at {point}");
        no_leftovers(&fx, &bd);
        // Once more: nothing left to do.
        assert_eq!(
            recover_with(&source, &no_faults()).unwrap(),
            Recovery::default()
        );
    }
    assert!(renames_seen > 10);
}

#[test]
fn recovery_reports_and_skips_a_live_writer() {
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    assert!(crash(&source, &bd, &writes, "after-rename:5"));
    // Pretend a live process (our parent) wrote it: left alone.
    let journal = bd.join(batch::JOURNAL_FILE);
    let text = std::fs::read_to_string(&journal).unwrap();
    let ppid = rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32);
    if let Some(ppid) = ppid {
        let start = crate::sys::process::process_start(ppid).unwrap();
        let me = std::process::id();
        let mine = crate::sys::process::process_start(me).unwrap();
        let live = text.replacen(
            &format!("\"pid\":{me},\"start\":{mine}"),
            &format!("\"pid\":{ppid},\"start\":{start}"),
            1,
        );
        assert_ne!(live, text);
        std::fs::write(&journal, live).unwrap();
        assert_eq!(
            recover_all_detailed(&source).unwrap().rolled_back,
            Vec::<String>::new()
        );
        assert!(journal.exists());
        std::fs::write(&journal, &text).unwrap();
    }
    // Our own pid counts as gone (we hold the lock and did not write it now).
    assert_eq!(
        recover_all_detailed(&source).unwrap().rolled_back,
        vec!["b1".to_string()]
    );
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
}

#[test]
fn journal_without_batch_toml_and_torn_tail_are_recovered() {
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    assert!(crash(&source, &bd, &writes, "after-rename:7"));
    let journal = bd.join(batch::JOURNAL_FILE);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    f.write_all(b"{\"t\":\"phase\",\"pha").unwrap();
    drop(f);
    assert!(!bd.join("batch.toml").exists());
    assert_eq!(
        recover_all_detailed(&source).unwrap().rolled_back,
        vec!["b1".to_string()]
    );
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
    // A journal without its `planned` marker: nothing was written, it just goes.
    std::fs::write(&journal, b"{\"t\":\"header\"").unwrap();
    assert_eq!(
        recover_all_detailed(&source).unwrap().rolled_back,
        vec!["b1".to_string()]
    );
    assert!(!journal.exists());
}

#[test]
fn check_finds_what_would_be_lost() {
    let fx = fixture();
    let b = |bytes: &[u8]| fx.blob(bytes);
    std::fs::write(fx.root.join(".gitignore"), "*.log\n").unwrap();
    fx.file("build.log", b"ignored\n");
    fx.file("busy/untracked", b"u\n");
    std::fs::create_dir_all(fx.root.join("empty")).unwrap();
    fx.file("edited", b"user edit\n");
    fx.file("gone/old", b"o\n");
    fx.file("plain", b"p\n");
    let outside = fx._tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    fx.link("escape", outside.to_str().unwrap());
    let n = Some((EntryKind::Blob, b(b"new\n")));
    let writes = vec![
        pw(b"build.log", None, n),
        pw(b"busy", None, n),
        pw(b"empty", None, n),
        pw(b"edited", Some((EntryKind::Blob, b(b"snapshot\n"))), n),
        pw(b"escape/evil", None, n),
        pw(b"plain/under", None, n),
        pw(b"plain", Some((EntryKind::BlobExecutable, b(b"p\n"))), n),
        pw(b"gone", None, n),
        pw(b"gone/old", Some((EntryKind::Blob, b(b"o\n"))), None),
        pw(b"fresh/file", None, n),
    ];
    let source = fx.source();
    let got: Vec<(String, BlockReason)> = check(&source, &writes)
        .unwrap()
        .into_iter()
        .map(|b| (b.path.to_string(), b.reason))
        .collect();
    use BlockReason::*;
    assert_eq!(
        got,
        vec![
            ("build.log".into(), UntrackedInTheWay),
            ("busy".into(), FolderInTheWay),
            ("edited".into(), ChangedSinceSnapshot),
            ("escape".into(), SymlinkInTheWay),
            ("plain/under".into(), UntrackedInTheWay),
            ("plain".into(), ChangedSinceSnapshot),
        ]
    );
}

#[test]
fn never_writes_through_a_symlinked_parent() {
    let fx = fixture();
    let outside = fx._tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    fx.link("escape", outside.to_str().unwrap());
    fx.file("a", b"a\n");
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    let writes = vec![
        pw(
            b"a",
            Some((EntryKind::Blob, fx.blob(b"a\n"))),
            Some((EntryKind::Blob, fx.blob(b"b\n"))),
        ),
        pw(
            b"escape/evil",
            None,
            Some((EntryKind::Blob, fx.blob(b"evil\n"))),
        ),
        pw(
            b"escape/deeper/evil",
            None,
            Some((EntryKind::Blob, fx.blob(b"evil\n"))),
        ),
    ];
    let e = write_with(&source, &bd, &writes, &[], &no_faults()).unwrap_err();
    assert_eq!(e.code, Code::WriteFailed);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
}

#[test]
fn content_changed_after_check_is_never_lost() {
    let fx = fixture();
    fx.file("a", b"snapshot\n");
    let source = fx.source();
    let bd = fx.batch_dir();
    let writes = vec![
        pw(b"b", None, Some((EntryKind::Blob, fx.blob(b"b\n")))),
        pw(
            b"a",
            Some((EntryKind::Blob, fx.blob(b"snapshot\n"))),
            Some((EntryKind::Blob, fx.blob(b"ours\n"))),
        ),
    ];
    assert_eq!(check(&source, &writes).unwrap(), vec![]);
    fx.file("a", b"the user typed this\n");
    let before = fx.state();
    let e = write_with(&source, &bd, &writes, &[], &no_faults()).unwrap_err();
    assert!(e.message.contains("changed on disk"), "{}", e.message);
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
}

#[test]
fn filters_and_crlf_round_trip() {
    let fx = fixture();
    std::fs::write(
        fx.root.join(".gitattributes"),
        "*.txt text eol=crlf\n*.rot filter=rot\n",
    )
    .unwrap();
    git(&fx.root, &["config", "filter.rot.clean", "tr a-z n-za-m"]);
    git(&fx.root, &["config", "filter.rot.smudge", "tr a-z n-za-m"]);
    fx.file("a.txt", b"one\r\ntwo\r\n");
    fx.file("s.rot", b"uryyb\n");
    let source = fx.source();
    let bd = fx.batch_dir();
    let writes = vec![
        pw(
            b"a.txt",
            Some((EntryKind::Blob, fx.blob(b"one\ntwo\n"))),
            Some((EntryKind::Blob, fx.blob(b"one\ntwo\nthree\n"))),
        ),
        pw(
            b"s.rot",
            Some((EntryKind::Blob, fx.blob(b"hello\n"))),
            Some((EntryKind::Blob, fx.blob(b"world\n"))),
        ),
    ];
    assert_eq!(check(&source, &writes).unwrap(), vec![]);
    write_with(&source, &bd, &writes, &[], &no_faults()).unwrap();
    assert_eq!(
        std::fs::read(fx.root.join("a.txt")).unwrap(),
        b"one\r\ntwo\r\nthree\r\n"
    );
    assert_eq!(std::fs::read(fx.root.join("s.rot")).unwrap(), b"jbeyq\n");
    no_leftovers(&fx, &bd);
}

#[test]
fn new_content_follows_the_results_gitattributes() {
    let fx = fixture();
    fx.file("sub/.gitattributes", b"*.txt text eol=crlf\n");
    fx.file("sub/old.txt", b"o\r\n");
    let source = fx.source();
    let bd = fx.batch_dir();
    let b = |bytes: &[u8]| fx.blob(bytes);
    let writes = vec![
        // A new rule at the root, a new file it applies to.
        pw(
            b".gitattributes",
            None,
            Some((EntryKind::Blob, b(b"*.md text eol=crlf\n"))),
        ),
        pw(b"doc.md", None, Some((EntryKind::Blob, b(b"a\nb\n")))),
        // The rule in sub/ goes; the file it governed is rewritten plainly.
        pw(
            b"sub/.gitattributes",
            Some((EntryKind::Blob, b(b"*.txt text eol=crlf\n"))),
            None,
        ),
        pw(
            b"sub/old.txt",
            Some((EntryKind::Blob, b(b"o\n"))),
            Some((EntryKind::Blob, b(b"o\np\n"))),
        ),
    ];
    assert_eq!(check(&source, &writes).unwrap(), vec![]);
    write_with(&source, &bd, &writes, &[], &no_faults()).unwrap();
    assert_eq!(
        std::fs::read(fx.root.join("doc.md")).unwrap(),
        b"a\r\nb\r\n"
    );
    assert_eq!(
        std::fs::read(fx.root.join("sub/old.txt")).unwrap(),
        b"o\np\n"
    );
    assert!(!fx.root.join("sub/.gitattributes").exists());
    no_leftovers(&fx, &bd);
}

#[test]
fn path_encoding_round_trips() {
    let raw: &[u8] = b"a%b/c\xe9\n\x01 d";
    assert_eq!(dec(&enc(raw)), raw);
    assert_eq!(enc(b"plain/path.txt"), "plain/path.txt");
    assert_eq!(dec("%zz%4"), b"%zz%4");
}

/// How many renames the whole scenario makes.
fn scenario_renames() -> usize {
    let (fx, writes) = scenario();
    let count = std::rc::Rc::new(std::cell::Cell::new(0));
    let c = count.clone();
    let mut f = no_faults();
    f.after_each_rename = Some(Box::new(move |n| c.set(n)));
    write_with(&fx.source(), &fx.batch_dir(), &writes, &[], &f).unwrap();
    count.get()
}

/// The `.gd-` files in the tree, with their content.
fn kept_files(fx: &Fx) -> BTreeMap<Vec<u8>, (String, Vec<u8>)> {
    fx.state()
        .into_iter()
        .filter(|(k, _)| k.contains_str(".gd-"))
        .collect()
}

/// In process: the last rename fails, and meanwhile the
/// user saved over a file the write had put in place (same length, in
/// place) and created a file where the write had removed one. Rollback
/// leaves both as the user left them, keeps their originals, restores
/// everything else, and keeps the journal until that is resolved.
#[test]
fn rollback_leaves_what_the_user_changed_between_the_renames() {
    let total = scenario_renames();
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    let root = fx.root.clone();
    let mut f = faults(&format!("fail-rename:{total}"));
    f.after_each_rename = Some(Box::new(move |_| {
        let m = root.join("m.txt");
        if std::fs::read(&m).is_ok_and(|b| b == b"new\n") {
            std::fs::write(&m, b"NEW\n").unwrap();
        }
        let d = root.join("d.txt");
        if std::fs::symlink_metadata(&d).is_err() {
            std::fs::write(&d, b"the user's d\n").unwrap();
        }
    }));
    let e = write_with(&source, &bd, &writes, &[], &f).unwrap_err();
    assert_eq!(e.code, Code::RollbackFailed, "{}", e.message);
    let details = e.details.as_ref().expect("details");
    let paths: Vec<(&str, &str)> = details["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["path"].as_str().unwrap(), p["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        paths,
        vec![("d.txt", "in_the_way"), ("m.txt", "changed_since_written")],
        "{}",
        e.message
    );
    let mut expect = before.clone();
    expect.insert(
        b"m.txt".to_vec(),
        ("file x=false".into(), b"NEW\n".to_vec()),
    );
    expect.insert(
        b"d.txt".to_vec(),
        ("file x=false".into(), b"the user's d\n".to_vec()),
    );
    let kept = kept_files(&fx);
    let mut now = fx.state();
    now.retain(|k, _| !k.contains_str(".gd-"));
    assert_eq!(now, expect);
    // The originals are kept, nothing else.
    let mut kept_bytes: Vec<&[u8]> = kept.values().map(|(_, b)| b.as_slice()).collect();
    kept_bytes.sort();
    assert_eq!(kept_bytes, vec![&b"gone\n"[..], &b"old\n"[..]]);
    assert!(bd.join(batch::JOURNAL_FILE).exists());
    let left = left_paths(&bd);
    assert_eq!(left.len(), 2, "{left:?}");
    // Resolved: the user keeps their m.txt, and takes d.txt's original back.
    for l in &left {
        if l.path == "m.txt" {
            std::fs::remove_file(&l.kept).unwrap();
        } else {
            std::fs::rename(&l.kept, fx.root.join("d.txt")).unwrap();
        }
    }
    assert_eq!(
        recover_with(&source, &no_faults()).unwrap().rolled_back,
        vec!["b1".to_string()]
    );
    let mut expect = before.clone();
    expect.insert(
        b"m.txt".to_vec(),
        ("file x=false".into(), b"NEW\n".to_vec()),
    );
    assert_eq!(fx.state(), expect);
    no_leftovers(&fx, &bd);
}

/// After a crash: recovery restores every path that still
/// holds what the write put there, and leaves one the user edited, replaced
/// by another kind, or whose permissions they changed, each with its
/// original kept; a re-run changes nothing until the user resolves it; a
/// path that again holds exactly what was written goes back normally.
#[test]
fn recovery_leaves_paths_changed_after_a_crash() {
    let total = scenario_renames();
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    let before = fx.state();
    // Killed after the last rename: every path is in place, not committed.
    assert!(crash(
        &source,
        &bd,
        &writes,
        &format!("after-rename:{total}")
    ));
    assert_eq!(std::fs::read(fx.root.join("m.txt")).unwrap(), b"new\n");
    std::fs::write(fx.root.join("m.txt"), b"NEW\n").unwrap();
    // `link` (a symlink the write made) replaced by a file.
    std::fs::remove_file(fx.root.join("link")).unwrap();
    fx.file("link", b"now a file\n");
    // `exe` (written executable): the user makes it private.
    std::fs::set_permissions(fx.root.join("exe"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // `new/dir/n` (added): edited, then edited back to the same bytes.
    std::fs::write(fx.root.join("new/dir/n"), b"other").unwrap();
    std::fs::write(fx.root.join("new/dir/n"), b"n\x00bin\xff").unwrap();

    let e = recover_with(&source, &no_faults()).unwrap_err();
    assert_eq!(e.code, Code::RollbackFailed, "{}", e.message);
    let details = e.details.as_ref().expect("details");
    let mut paths: Vec<&str> = details["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(paths, vec!["exe", "link", "m.txt"], "{}", e.message);
    for p in details["paths"].as_array().unwrap() {
        assert_eq!(p["reason"], "changed_since_written");
        assert_eq!(p["kept_is"], "original");
        assert!(Path::new(p["kept"].as_str().unwrap()).exists());
    }
    assert!(details["journal"].is_string());
    assert!(bd.join(batch::JOURNAL_FILE).exists());
    let after_first = fx.state();
    // Everything else is back; the added file that holds the written bytes again went.
    assert!(!fx.root.join("new").exists());
    assert_eq!(after_first[&b"d.txt"[..]], before[&b"d.txt"[..]]);
    assert_eq!(after_first[&b"d2f/b/c"[..]], before[&b"d2f/b/c"[..]]);
    assert_eq!(after_first[&b"m.txt"[..]].1, b"NEW\n");
    assert_eq!(after_first[&b"link"[..]].1, b"now a file\n");
    // A re-run changes nothing and says the same.
    let again = recover_with(&source, &no_faults()).unwrap_err();
    assert_eq!(again.code, Code::RollbackFailed);
    assert_eq!(fx.state(), after_first);
    // Resolved by the user: every kept original is moved over its path.
    for l in left_paths(&bd) {
        assert!(!l.yours);
        std::fs::rename(
            &l.kept,
            fx.root.join(crate::sys::paths::to_os(l.path.as_bstr())),
        )
        .unwrap();
    }
    assert_eq!(
        recover_with(&source, &no_faults()).unwrap().rolled_back,
        vec!["b1".to_string()]
    );
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
}

/// What the journal records of each path is what is on disk after the write.
#[test]
fn the_journal_records_what_was_written() {
    let total = scenario_renames();
    let (fx, writes) = scenario();
    let source = fx.source();
    let bd = fx.batch_dir();
    assert!(crash(
        &source,
        &bd,
        &writes,
        &format!("after-rename:{total}")
    ));
    let text = std::fs::read(bd.join(batch::JOURNAL_FILE)).unwrap();
    let plan = parse_journal(&text).unwrap();
    assert_eq!(plan.phase, Phase::Renaming);
    let mut dirs = Dirs::open(&fx.root).unwrap();
    let folders: Vec<BString> = plan
        .items
        .iter()
        .filter(|i| i.new.is_some())
        .flat_map(|i| {
            util::parents(i.path.as_bstr())
                .map(BString::from)
                .collect::<Vec<_>>()
        })
        .collect();
    for it in plan.items.iter().filter(|i| !i.covered) {
        let w = it
            .wrote
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no record", it.path));
        if folders.contains(&it.path) {
            // A file the result deletes to put a folder there.
            continue;
        }
        assert_eq!(
            matches!(w, journal::Wrote::Absent),
            it.new.is_none(),
            "{}",
            it.path
        );
        assert!(
            rollback::holds(&mut dirs, it.path.as_bstr(), Some(w)).unwrap(),
            "{} does not hold what was recorded",
            it.path
        );
    }
    // Settle the crash.
    recover_with(&source, &no_faults()).unwrap();
}

/// The cause of a failure is carried as data: a path whose name holds the
/// text of a full disk ("(os error 28)") or of a failing filter driver does
/// not turn a failure of another kind into `disk_full` or `filter_failed`.
#[test]
fn a_path_named_like_a_cause_does_not_classify_the_failure() {
    for name in [
        "a (os error 28)",
        "no space left on device (ENOSPC, os error 28)",
        crate::git::blob::FILTER_FAILED,
        crate::git::blob::FILTER_FAILED_CLEAN,
    ] {
        let fx = fixture();
        fx.file(name, b"old\n");
        let writes = vec![pw(
            name.as_bytes(),
            Some((EntryKind::Blob, fx.blob(b"old\n"))),
            Some((EntryKind::Blob, fx.blob(b"new\n"))),
        )];
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        let e = write_with(&source, &bd, &writes, &[], &faults("fail-rename:1")).unwrap_err();
        assert_eq!(e.code, Code::WriteFailed, "{name}: {}", e.message);
        assert_eq!(fx.state(), before);
        no_leftovers(&fx, &bd);
    }
}

#[test]
fn a_replaced_file_keeps_its_bits_and_only_the_exec_bits_follow_the_result() {
    use super::writer::result_perm;
    let id = ObjectId::null(gix::hash::Kind::Sha1);
    let plain = Some((EntryKind::Blob, id));
    let exec = Some((EntryKind::BlobExecutable, id));
    let link = Some((EntryKind::Link, id));
    // Same exec state: the bits as they are.
    assert_eq!(result_perm(0o600, plain, false), 0o600);
    assert_eq!(result_perm(0o754, exec, true), 0o754);
    // Set for `u` and wherever `r` is set.
    assert_eq!(result_perm(0o600, plain, true), 0o700);
    assert_eq!(result_perm(0o640, plain, true), 0o750);
    assert_eq!(result_perm(0o644, link, true), 0o755);
    assert_eq!(result_perm(0o200, plain, true), 0o300);
    // Cleared.
    assert_eq!(result_perm(0o750, exec, false), 0o640);
    assert_eq!(result_perm(0o711, exec, false), 0o600);
    // Set-id and sticky bits never carry over.
    assert_eq!(result_perm(0o4755, exec, true), 0o755);
}
