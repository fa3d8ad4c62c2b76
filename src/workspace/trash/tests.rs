//! Unit tests of `workspace::trash`: the names and markers of its entries.
//!
//! Owns: those unit tests.
//! Never: reaches outside its own temporary folders.

use super::*;

#[test]
fn entry_names_and_markers() {
    let tmp = std::env::temp_dir().join(format!("gd-trash-unit-{}", std::process::id()));
    let trash = tmp.join(TRASH);
    std::fs::create_dir_all(&trash).unwrap();
    let ours = trash.join("0123abcd-1-89abcdef");
    std::fs::create_dir_all(ours.join("sub")).unwrap();
    std::fs::write(ours.join("sub/file"), "x").unwrap();
    std::fs::write(
        ours.join(".git"),
        "gitdir: /r/.git/worktrees/delegate-0123abcd-1\n",
    )
    .unwrap();
    let badly_named = trash.join("notours");
    std::fs::create_dir_all(&badly_named).unwrap();
    let foreign = trash.join("0123abcd-2-89abcdef");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join(".git"), "gitdir: /r/.git/worktrees/mine\n").unwrap();
    std::fs::write(foreign.join("keep"), "x").unwrap();
    let empty = trash.join("0123abcd-3-89abcdef");
    std::fs::create_dir_all(&empty).unwrap();
    let (_, dir) = open_trash(&trash).unwrap();
    let entry = |p: &Path| {
        let name = p.file_name().unwrap();
        match dir.child(name).unwrap() {
            Opened::Ours(e) => is_entry(name, &e),
            _ => false,
        }
    };
    assert!(entry(&ours) && entry(&empty));
    assert!(!entry(&badly_named) && !entry(&foreign));
    // A symlink to an entry is none.
    let link = trash.join("0123abcd-4-89abcdef");
    std::os::unix::fs::symlink(&ours, &link).unwrap();
    assert!(!entry(&link));
    drop(dir);
    let got = purge(&trash, true, false, true).unwrap();
    assert_eq!(got.entries, 2);
    assert!(!ours.exists() && !empty.exists());
    assert!(badly_named.exists() && foreign.join("keep").exists());
    assert!(link.symlink_metadata().is_ok());
    // An entry of ours that cannot be deleted (an immutable folder,
    // where the filesystem and our privileges allow making one) is
    // counted as failed, so the background deleter tries it again.
    let stuck = trash.join("0123abcd-5-89abcdef");
    std::fs::create_dir_all(&stuck).unwrap();
    std::fs::write(stuck.join("f"), "x").unwrap();
    std::fs::write(
        stuck.join(".git"),
        "gitdir: /r/.git/worktrees/delegate-0123abcd-5\n",
    )
    .unwrap();
    let chattr = |flag: &str| {
        std::process::Command::new("chattr")
            .arg(flag)
            .arg(&stuck)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if chattr("+i") {
        let got = purge(&trash, false, false, true).unwrap();
        assert!(chattr("-i"));
        assert_eq!((got.entries, got.failed), (0, 1));
        let got = purge(&trash, false, false, true).unwrap();
        assert_eq!((got.entries, got.failed), (1, 0));
    } else {
        std::fs::remove_dir_all(&stuck).unwrap();
    }
    // A folder not named .trash is never purged.
    assert_eq!(purge(&foreign, false, false, true), Some(Purged::default()));
    std::fs::remove_dir_all(&tmp).unwrap();
}
