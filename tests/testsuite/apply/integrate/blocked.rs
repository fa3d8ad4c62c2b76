//! The write-back check inside `integrate::integrate`: a path it blocks
//! takes out the task that writes it (through a rename too) and the rest
//! is integrated again; an unwritable folder; nothing to write asks no
//! check; a blocked path no task touches is an error.

use super::*;

/// A write-back check that blocks every write to `path`, for `reason`.
fn blocking(
    path: &'static str,
    reason: BlockReason,
) -> impl FnMut(&[PathWrite]) -> Result<Vec<Blocked>> {
    move |w: &[PathWrite]| {
        Ok(w.iter()
            .filter(|w| w.path == path)
            .map(|w| Blocked {
                path: w.path.clone(),
                reason,
            })
            .collect())
    }
}

/// [`Fx::integrate`] (never `--strict`) with the write-back check `check`.
fn integrate_checked(
    fx: &Fx,
    base: ObjectId,
    s: ObjectId,
    cands: &[Candidate],
    check: &mut dyn FnMut(&[PathWrite]) -> Result<Vec<Blocked>>,
) -> Plan {
    integrate::integrate(&fx.repo, base, s, cands, false, check).unwrap()
}

/// The plan's `changed`: per task, the paths its merge changed.
fn changed(plan: &Plan) -> Vec<(usize, Vec<String>)> {
    plan.changed
        .iter()
        .map(|(t, p)| (*t, p.iter().map(|p| p.to_string()).collect()))
        .collect()
}

/// The write-back check blocks a path: the task that writes it is taken
/// out and the others are integrated again without it.
#[test]
fn a_blocked_path_takes_its_task_out_and_the_rest_is_redone() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(1, "zero")])))]);
    let p1 = fx.tree(&[("f", F(&text(&[(12, "one")]))), ("g", F("new\n"))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];
    let mut seen: Vec<Vec<String>> = Vec::new();
    let mut block = blocking("g", BlockReason::UntrackedInTheWay);
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        seen.push(w.iter().map(|w| w.path.to_string()).collect());
        block(w)
    };
    let plan = integrate_checked(&fx, base, base, &cands, &mut check);
    assert_eq!(
        seen,
        vec![vec!["f".to_string(), "g".into()], vec!["f".to_string()]]
    );
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(
            1,
            "would_overwrite_untracked",
            pairs(&[("g", "untracked file in the way")])
        )]
    );
    assert_eq!(writes(&plan), fx.writes_between(base, p0));
}

/// Task 1 conflicted only with task 0; when the write-back check takes task
/// 0 out, the redo applies task 1.
#[test]
fn the_redo_after_a_blocked_path_lets_a_later_task_apply() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(6, "zero")]))), ("g", F("zero\n"))]);
    let p1 = fx.tree(&[("f", F(&text(&[(6, "one")])))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];
    let mut calls = 0;
    let mut block = blocking("g", BlockReason::FolderInTheWay);
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        calls += 1;
        block(w)
    };
    let plan = integrate_checked(&fx, base, base, &cands, &mut check);
    assert_eq!(calls, 2);
    assert_eq!(plan.applied, vec![1]);
    assert_eq!(
        refused(&plan),
        vec![(
            0,
            "would_overwrite_untracked",
            pairs(&[("g", "folder in the way")])
        )]
    );
    assert_eq!(writes(&plan), fx.writes_between(base, p1));
}

/// The top folder refuses writing: the task writing a file there fails
/// (`write_failed`), the task writing only below a subfolder applies.
#[test]
fn an_unwritable_top_folder_fails_only_the_task_writing_there() {
    let fx = Fx::new();
    let base = fx.tree(&[("top", F("t\n")), ("d/x", F("x\n"))]);
    let p0 = fx.tree(&[("top", F("t by zero\n")), ("d/x", F("x\n"))]);
    let p1 = fx.tree(&[("top", F("t\n")), ("d/x", F("x by one\n"))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        Ok(if w.iter().any(|w| w.path == "top") {
            vec![Blocked {
                path: BString::default(),
                reason: BlockReason::NotWritable(13),
            }]
        } else {
            Vec::new()
        })
    };
    let plan = integrate_checked(&fx, base, base, &cands, &mut check);
    assert_eq!(plan.applied, vec![1]);
    assert_eq!(
        refused(&plan),
        vec![(
            0,
            "write_failed",
            pairs(&[(
                "",
                "folder not writable: permission denied (EACCES, os error 13)"
            )])
        )]
    );
    assert_eq!(writes(&plan), fx.writes_between(base, p1));
}

/// Nothing to write: the write-back check is not asked.
#[test]
fn nothing_to_write_asks_no_check() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let s = fx.tree(&[("f", F(&text(&[(1, "user")])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(1, "zero")])))]);
    let same = fx.tree(&[("f", F(&text(&[(1, "user")])))]);
    let mut calls = 0;
    let mut check = |_: &[PathWrite]| -> Result<Vec<Blocked>> {
        calls += 1;
        Ok(Vec::new())
    };
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, same)];
    let plan = integrate_checked(&fx, base, s, &cands, &mut check);
    assert_eq!(calls, 0);
    // Task 1 made the user's very edit: it applies, writing nothing.
    assert_outcome(
        &plan,
        &[1],
        &[(0, "source_changed", &[("f", "both modified")])],
    );
    assert!(plan.writes.is_empty());
}

/// The user renamed `a` to `b` and a task's edit of `a` follows the rename
/// into `b`; the write-back check then finds `b` changed since the
/// snapshot. Only that task writes `b`, so only it goes; a task that
/// wrote elsewhere still applies. `Plan::changed` names, per task, the
/// paths of `F` its merge changed (`b` for task 0, though its proposal
/// names `a`).
///
/// (Was a bug: no task's `paths` name `b`, so `integrate` took out the
/// last applied task (task 1, innocent), redid, found `b` blocked again and
/// then took out task 0: both were refused, each "source_changed" on `b`.)
#[test]
fn a_blocked_path_reached_through_a_rename_takes_out_the_task_that_wrote_it() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("c", F("c\n"))]);
    let s = fx.tree(&[("b", F(&text(&[]))), ("c", F("c\n"))]);
    let p0 = fx.tree(&[("a", F(&text(&[(5, "zero")]))), ("c", F("c\n"))]);
    let p1 = fx.tree(&[("a", F(&text(&[]))), ("c", F("c by one\n"))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];
    let mut check = blocking("b", BlockReason::ChangedSinceSnapshot);
    let plan = integrate_checked(&fx, base, s, &cands, &mut check);
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("b", "changed during apply")]))]
    );
    assert_eq!(plan.applied, vec![1]);
    let expected = fx.tree(&[("b", F(&text(&[]))), ("c", F("c by one\n"))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
    assert_eq!(changed(&plan), vec![(1, vec!["c".to_string()])]);

    // Without the check, both apply and task 0's change of `F` is `b`.
    let plan = fx.integrate(base, s, &cands, false);
    assert_eq!(plan.applied, vec![0, 1]);
    assert_eq!(
        changed(&plan),
        vec![(0, vec!["b".to_string()]), (1, vec!["c".to_string()])]
    );
}

/// A blocked path that no applied task touches (the check names a path
/// outside the writes) takes out no task on a guess: integration fails
/// with an internal error and nothing is planned. (It used to take out
/// the last applied task, which had not written it.)
#[test]
fn a_blocked_path_no_task_touches_is_an_error_not_a_guess() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F("a\n")), ("c", F("c\n"))]);
    let p0 = fx.tree(&[("a", F("a by zero\n")), ("c", F("c\n"))]);
    let cands = [fx.cand(0, base, p0)];
    let mut check = |_: &[PathWrite]| -> Result<Vec<Blocked>> {
        Ok(vec![Blocked {
            path: "elsewhere".into(),
            reason: BlockReason::ChangedSinceSnapshot,
        }])
    };
    let err = integrate::integrate(&fx.repo, base, base, &cands, false, &mut check)
        .expect_err("a blocked path no task touches must not take out a task");
    assert!(err.to_string().contains("no applied task changes"), "{err}");
}

/// The top folder refuses writing: a task that makes a new folder there
/// writes in it as much as one that writes a file there, and is the one
/// taken out; a task writing in an existing folder still applies. (The
/// blame used to look for top-level paths only, so the new folder's task
/// was missed and the last applied task, innocent, was taken out first.)
#[test]
fn a_new_folder_in_an_unwritable_top_folder_takes_out_the_task_that_makes_it() {
    let fx = Fx::new();
    let base = fx.tree(&[("sub/s", F("s\n"))]);
    let p0 = fx.tree(&[("sub/s", F("s\n")), ("newdir/n", F("n\n"))]);
    let p1 = fx.tree(&[("sub/s", F("s by one\n"))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];
    // As the write-back check: the folder a write changes is the deepest
    // one that exists; only the top folder refuses writing.
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        Ok(w.iter()
            .filter(|w| !w.path.starts_with(b"sub/"))
            .map(|_| Blocked {
                path: "".into(),
                reason: BlockReason::NotWritable(13),
            })
            .take(1)
            .collect())
    };
    let plan = integrate_checked(&fx, base, base, &cands, &mut check);
    assert_eq!(plan.applied, vec![1]);
    let got = refused(&plan);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (0, "write_failed"));
    assert_eq!(writes(&plan), fx.writes_between(base, p1));
}
