//! Write-back tests: `check` finds what a write would lose, and nothing is
//! written through a symlink or over content changed after the check.

use super::*;

#[test]
fn check_finds_what_would_be_lost() {
    let fx = fixture();
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
    let n = fx.file_of(b"new\n");
    let writes = vec![
        pw(b"build.log", None, n),
        pw(b"busy", None, n),
        pw(b"empty", None, n),
        pw(b"edited", fx.file_of(b"snapshot\n"), n),
        pw(b"escape/evil", None, n),
        pw(b"plain/under", None, n),
        pw(b"plain", fx.exe_of(b"p\n"), n),
        pw(b"gone", None, n),
        pw(b"gone/old", fx.file_of(b"o\n"), None),
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
        pw(b"a", fx.file_of(b"a\n"), fx.file_of(b"b\n")),
        pw(b"escape/evil", None, fx.file_of(b"evil\n")),
        pw(b"escape/deeper/evil", None, fx.file_of(b"evil\n")),
    ];
    let e = Error::from(write_with(&source, &bd, &writes, &[], &no_faults()).unwrap_err());
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
        pw(b"b", None, fx.file_of(b"b\n")),
        pw(b"a", fx.file_of(b"snapshot\n"), fx.file_of(b"ours\n")),
    ];
    assert_eq!(check(&source, &writes).unwrap(), vec![]);
    fx.file("a", b"the user typed this\n");
    let before = fx.state();
    let e = Error::from(write_with(&source, &bd, &writes, &[], &no_faults()).unwrap_err());
    assert!(e.message.contains("changed on disk"), "{}", e.message);
    assert_eq!(fx.state(), before);
    no_leftovers(&fx, &bd);
}
