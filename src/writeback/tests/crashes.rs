//! Write-back tests: every kind of change, injected failures and crashes at
//! every point, and the recovery that follows them.

use super::*;

#[test]
fn writes_every_kind_of_change() {
    let (fx, writes, source, bd, before) = scenario_ready();
    check_and_write(&source, &bd, &writes);
    assert_eq!(fx.state(), expected_after(&before));
    no_leftovers(&fx, &bd);
    // The index and HEAD are untouched.
    assert_eq!(git(&fx.root, &["diff", "--cached", "--name-only"]), b"");
}

#[test]
fn injected_failure_at_every_rename_rolls_back() {
    let (fx, writes, source, bd, before) = scenario_ready();
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
                let e = Error::from(e);
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

#[test]
fn crash_at_every_point_recovers_to_s_or_f() {
    let mut points: Vec<String> = vec!["after-journal".into(), "after-temp-files".into()];
    points.extend((1..=40).map(|n| format!("after-rename:{n}")));
    points.push("after-commit".into());
    points.push("before-journal-remove".into());
    let mut renames_seen = 0;
    for point in points {
        let (fx, writes, source, bd, before) = scenario_ready();
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
    let (fx, source, bd, before) = crashed_at("after-rename:5");
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
    let (fx, source, bd, before) = crashed_at("after-rename:7");
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
