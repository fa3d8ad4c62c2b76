//! Write-back tests: rollbacks and recoveries that meet paths the user
//! changed, and what the journal records of each write.

use super::*;

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
fn kept_files(fx: &Fx) -> State {
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
    let (fx, writes, source, bd, before) = scenario_ready();
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
    let e = Error::from(write_with(&source, &bd, &writes, &[], &f).unwrap_err());
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
    let (fx, source, bd, before) = crashed_at(&format!("after-rename:{}", scenario_renames()));
    assert_eq!(fx.read("m.txt"), b"new\n");
    std::fs::write(fx.root.join("m.txt"), b"NEW\n").unwrap();
    // `link` (a symlink the write made) replaced by a file.
    std::fs::remove_file(fx.root.join("link")).unwrap();
    fx.file("link", b"now a file\n");
    // `exe` (written executable): the user makes it private.
    std::fs::set_permissions(fx.root.join("exe"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // `new/dir/n` (added): edited, then edited back to the same bytes.
    std::fs::write(fx.root.join("new/dir/n"), b"other").unwrap();
    std::fs::write(fx.root.join("new/dir/n"), b"n\x00bin\xff").unwrap();

    let e = Error::from(recover_with(&source, &no_faults()).unwrap_err());
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
    let again = Error::from(recover_with(&source, &no_faults()).unwrap_err());
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
    let (fx, source, bd, _) = crashed_at(&format!("after-rename:{}", scenario_renames()));
    let text = std::fs::read(bd.join(batch::JOURNAL_FILE)).unwrap();
    let plan = parse_journal(&text).unwrap();
    assert_eq!(plan.phase, Phase::Renaming);
    let mut dirs = Dirs::open(&fx.root).unwrap();
    let folders: Vec<BString> = plan
        .items
        .iter()
        .filter(|i| i.new.is_some())
        .flat_map(|i| {
            super::super::paths::parents(i.path.as_bstr())
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
