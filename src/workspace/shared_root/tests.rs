//! Unit tests of `workspace::shared_root`: a symlink refused and never entered; made folders private, removed through their handle.
//!
//! Owns: those unit tests.
//! Never: reaches outside its own temporary folders.

use super::*;

#[test]
fn a_symlink_below_the_root_is_refused_and_never_entered() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("repo-0123456789ab");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("b")).unwrap();
    std::fs::write(elsewhere.join("b/f"), "x").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &base).unwrap();
    match open_base(&base).unwrap() {
        Opened::Refused(r) => {
            assert_eq!(r.reason, Reason::Symlink);
            assert_eq!(r.path, base);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        open_workspace(&base.join("b/f")).unwrap(),
        Opened::Refused(_)
    ));
    let e = make_batch_dir(&base, "abcd1234").unwrap_err();
    let e = crate::error::Error::from(e);
    assert_eq!(e.code, crate::error::Code::UnsafeWorkspaceRoot);
    assert!(!elsewhere.join("abcd1234").exists());
    assert!(elsewhere.join("b/f").exists());
}

#[test]
fn made_folders_are_private_and_removal_goes_through_the_handle() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("root/repo-0123456789ab");
    let batch = make_batch_dir(&base, "abcd1234").unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&base), 0o700);
    assert_eq!(mode(batch.path()), 0o700);
    let ws = base.join("abcd1234/1");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/f"), "12345").unwrap();
    let Opened::Ours(w) = open_workspace(&ws).unwrap() else {
        panic!("not ours");
    };
    assert_eq!(w.dir.size(), 5);
    assert_eq!(tree_size(&ws), 5);
    // Moved away after the check: what was checked goes, at its new place.
    let moved = t.path().join("moved");
    std::fs::rename(&ws, &moved).unwrap();
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("keep"), "k").unwrap();
    w.parents
        .batch
        .remove_child(OsStr::new("1"), w.dir.into_fd())
        .unwrap();
    assert!(std::fs::read_dir(&moved).unwrap().next().is_none());
    assert!(ws.join("keep").exists());
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::remove_dir(&moved).unwrap();
    remove_empty_parents(&ws);
    assert!(!base.exists());
}
