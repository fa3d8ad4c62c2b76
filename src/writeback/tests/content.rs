//! Write-back tests: filters and line endings, the result's attributes, path
//! encoding in the journal, failure classification, and permission bits.

use super::*;

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
            fx.file_of(b"one\ntwo\n"),
            fx.file_of(b"one\ntwo\nthree\n"),
        ),
        pw(b"s.rot", fx.file_of(b"hello\n"), fx.file_of(b"world\n")),
    ];
    check_and_write(&source, &bd, &writes);
    assert_eq!(fx.read("a.txt"), b"one\r\ntwo\r\nthree\r\n");
    assert_eq!(fx.read("s.rot"), b"jbeyq\n");
    no_leftovers(&fx, &bd);
}

#[test]
fn new_content_follows_the_results_gitattributes() {
    let fx = fixture();
    fx.file("sub/.gitattributes", b"*.txt text eol=crlf\n");
    fx.file("sub/old.txt", b"o\r\n");
    let source = fx.source();
    let bd = fx.batch_dir();
    let writes = vec![
        // A new rule at the root, a new file it applies to.
        pw(b".gitattributes", None, fx.file_of(b"*.md text eol=crlf\n")),
        pw(b"doc.md", None, fx.file_of(b"a\nb\n")),
        // The rule in sub/ goes; the file it governed is rewritten plainly.
        pw(
            b"sub/.gitattributes",
            fx.file_of(b"*.txt text eol=crlf\n"),
            None,
        ),
        pw(b"sub/old.txt", fx.file_of(b"o\n"), fx.file_of(b"o\np\n")),
    ];
    check_and_write(&source, &bd, &writes);
    assert_eq!(fx.read("doc.md"), b"a\r\nb\r\n");
    assert_eq!(fx.read("sub/old.txt"), b"o\np\n");
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
            fx.file_of(b"old\n"),
            fx.file_of(b"new\n"),
        )];
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        let e = Error::from(
            write_with(&source, &bd, &writes, &[], &faults("fail-rename:1")).unwrap_err(),
        );
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
