//! `integrate::integrate` on top of the merge: proposals in task order
//! (the first wins), all or nothing per task, the merge with the source as
//! it is now (`source_changed`), `--strict`, and later tasks once an
//! earlier one is out.

use super::*;

#[test]
fn proposals_apply_in_task_order_and_the_first_wins() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let first = fx.tree(&[("f", F(&text(&[(6, "first")]))), ("g", F("g\n"))]);
    let second = fx.tree(&[("f", F(&text(&[(6, "second")]))), ("g", F("g\n"))]);

    let plan = fx.tasks(base, base, &[first, second], false);
    assert_outcome(
        &plan,
        &[0],
        &[(1, "merge_conflict", &[("f", "both modified")])],
    );
    assert_eq!(writes(&plan), fx.writes_between(base, first));

    // The same proposals the other way round: now the other one wins.
    let plan = fx.tasks(base, base, &[second, first], false);
    assert_outcome(
        &plan,
        &[0],
        &[(1, "merge_conflict", &[("f", "both modified")])],
    );
    assert_eq!(writes(&plan), fx.writes_between(base, second));
}

#[test]
fn disjoint_proposals_all_apply_and_the_result_is_their_merge() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n")), ("old", F("o\n"))]);
    let p0 = fx.tree(&[
        ("f", F(&text(&[(1, "zero")]))),
        ("g", F("g\n")),
        ("old", F("o\n")),
        ("same", F("both add this\n")),
    ]);
    let p1 = fx.tree(&[
        ("f", F(&text(&[(12, "one")]))),
        ("g", X("g\n")),
        ("same", F("both add this\n")),
    ]);
    let p2 = fx.tree(&[
        ("f", F(&text(&[]))),
        ("g", F("g\n")),
        ("old", F("o\n")),
        ("ln", L("g")),
    ]);
    let plan = fx.tasks(base, base, &[p0, p1, p2], false);
    assert_outcome(&plan, &[0, 1, 2], &[]);
    let expected = fx.tree(&[
        ("f", F(&text(&[(1, "zero"), (12, "one")]))),
        ("g", X("g\n")),
        ("same", F("both add this\n")),
        ("ln", L("g")),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(base, expected));
}

/// A proposal that conflicts on one path brings none of its other paths.
#[test]
fn a_conflicting_proposal_applies_nothing() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let p0 = fx.tree(&[("f", F(&text(&[(3, "zero")]))), ("g", F("g\n"))]);
    let p1 = fx.tree(&[
        ("f", F(&text(&[(3, "one")]))),
        ("g", F("g changed by one\n")),
        ("new", F("added by one\n")),
    ]);
    let plan = fx.tasks(base, base, &[p0, p1], false);
    assert_outcome(
        &plan,
        &[0],
        &[(1, "merge_conflict", &[("f", "both modified")])],
    );
    assert_eq!(writes(&plan), fx.writes_between(base, p0));
}

/// The user's edits in other lines and other paths merge with the tasks.
#[test]
fn user_edits_elsewhere_merge_with_the_tasks() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let s = fx.tree(&[
        ("f", F(&text(&[(11, "user")]))),
        ("g", F("g\n")),
        ("mine", F("user file\n")),
    ]);
    let p0 = fx.tree(&[("f", F(&text(&[(2, "task")]))), ("g", F("g by task\n"))]);
    let plan = fx.tasks(base, s, &[p0], false);
    assert_outcome(&plan, &[0], &[]);
    let expected = fx.tree(&[
        ("f", F(&text(&[(2, "task"), (11, "user")]))),
        ("g", F("g by task\n")),
        ("mine", F("user file\n")),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
    // The same result as git's merge of the source with the proposal.
    assert_eq!(fx.oracle(base, s, p0).tree, expected.to_string());
}

/// A task whose lines the user changed too is `source_changed`, whole; the
/// other tasks still apply.
#[test]
fn user_edit_in_the_same_lines_takes_the_task_out() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("h", F("h\n"))]);
    let s = fx.tree(&[("f", F(&text(&[(5, "user")]))), ("h", F("h\n"))]);
    let p0 = fx.tree(&[("f", F(&text(&[(1, "zero")]))), ("h", F("h\n"))]);
    let p1 = fx.tree(&[
        ("f", F(&text(&[(5, "one")]))),
        ("h", F("h\n")),
        ("added", F("by one\n")),
    ]);
    let p2 = fx.tree(&[("f", F(&text(&[]))), ("h", F("h by two\n"))]);
    let plan = fx.tasks(base, s, &[p0, p1, p2], false);
    assert_outcome(
        &plan,
        &[0, 2],
        &[(1, "source_changed", &[("f", "both modified")])],
    );
    let expected = fx.tree(&[
        ("f", F(&text(&[(1, "zero"), (5, "user")]))),
        ("h", F("h by two\n")),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
}

/// The user deleted a file a task edits: `source_changed`, "deleted by us"
/// (us: the working tree).
#[test]
fn user_deleted_what_a_task_edits() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let s = fx.tree(&[("g", F("g\n"))]);
    let p0 = fx.tree(&[("f", F(&text(&[(1, "task")]))), ("g", F("g\n"))]);
    let plan = fx.tasks(base, s, &[p0], false);
    assert!(plan.applied.is_empty());
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("f", "deleted by us")]))]
    );
    assert!(plan.writes.is_empty());
}

/// The user renamed a file a task edits: the edit lands in the renamed file.
#[test]
fn user_rename_vs_task_edit_follows_the_rename() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let s = fx.tree(&[("moved/a", F(&text(&[])))]);
    let p0 = fx.tree(&[("a", F(&text(&[(9, "task")])))]);
    let plan = fx.tasks(base, s, &[p0], false);
    assert_outcome(&plan, &[0], &[]);
    let expected = fx.tree(&[("moved/a", F(&text(&[(9, "task")])))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
}

/// A task renamed a file the user edited: the user's edit moves with it.
#[test]
fn task_rename_vs_user_edit_keeps_the_users_edit() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let s = fx.tree(&[("a", F(&text(&[(9, "user")])))]);
    let p0 = fx.tree(&[("b", F(&text(&[])))]);
    let plan = fx.tasks(base, s, &[p0], false);
    assert_eq!(plan.applied, vec![0]);
    let expected = fx.tree(&[("b", F(&text(&[(9, "user")])))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
}

/// A task turned a file into a folder while the user edited the file.
#[test]
fn task_file_to_folder_vs_user_edit_is_source_changed() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let s = fx.tree(&[("a", F(&text(&[(2, "user")]))), ("z", F("z\n"))]);
    let p0 = fx.tree(&[("a/x", F("x\n")), ("z", F("z by task\n"))]);
    let p1 = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n")), ("n", F("n\n"))]);
    let plan = fx.tasks(base, s, &[p0, p1], false);
    assert_eq!(plan.applied, vec![1]);
    let r = refused(&plan);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].0, r[0].1), (0, "source_changed"));
    assert!(
        r[0].2
            .iter()
            .any(|(p, why)| p == "a" && why == "deleted by them"),
        "{r:?}"
    );
    assert_eq!(
        writes(&plan),
        fx.writes_between(
            s,
            fx.tree(&[
                ("a", F(&text(&[(2, "user")]))),
                ("z", F("z\n")),
                ("n", F("n\n")),
            ])
        )
    );
}

/// The user turned a folder into a file while a task edited a file in it.
#[test]
fn user_folder_to_file_vs_task_edit_is_source_changed() {
    let fx = Fx::new();
    let base = fx.tree(&[("d/x", F(&text(&[]))), ("z", F("z\n"))]);
    let s = fx.tree(&[("d", F("user file\n")), ("z", F("z\n"))]);
    let p0 = fx.tree(&[("d/x", F(&text(&[(3, "task")]))), ("z", F("z\n"))]);
    let plan = fx.tasks(base, s, &[p0], false);
    assert!(plan.applied.is_empty());
    let r = refused(&plan);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].0, r[0].1), (0, "source_changed"));
    assert!(
        r[0].2
            .iter()
            .any(|(p, why)| p == "d/x" && why == "deleted by us"),
        "{r:?}"
    );
    assert!(plan.writes.is_empty());
}

/// `--strict` refuses a task touching a path the user changed, even where
/// the merge would be clean; without it the task applies.
#[test]
fn strict_refuses_a_clean_merge_on_a_path_the_user_changed() {
    let fx = Fx::new();
    let base = fx.tree(&[
        ("f", F(&text(&[]))),
        ("lib/x", F("x\n")),
        ("lib/y", F("y\n")),
    ]);
    let s = fx.tree(&[
        ("f", F(&text(&[(12, "user")]))),
        ("lib/x", F("x by user\n")),
        ("lib/y", F("y\n")),
    ]);
    let p0 = fx.tree(&[
        ("f", F(&text(&[(1, "zero")]))),
        ("lib/x", F("x\n")),
        ("lib/y", F("y\n")),
    ]);
    let p1 = fx.tree(&[("f", F(&text(&[]))), ("lib", F("lib is a file\n"))]);
    let p2 = fx.tree(&[
        ("f", F(&text(&[]))),
        ("lib/x", F("x\n")),
        ("lib/y", F("y\n")),
        ("other", F("o\n")),
    ]);
    let cands = [
        fx.cand(0, base, p0),
        fx.cand(1, base, p1),
        fx.cand(2, base, p2),
    ];

    let plan = fx.integrate(base, s, &cands, true);
    assert_eq!(plan.applied, vec![2]);
    assert_eq!(
        refused(&plan),
        vec![
            (0, "source_changed", pairs(&[("f", "both modified")])),
            (
                1,
                "source_changed",
                pairs(&[
                    ("lib", "changed in the working tree"),
                    ("lib/x", "deleted by them")
                ])
            ),
        ]
    );
    assert_eq!(writes(&plan), fx.writes_between(base, p2));

    // Without --strict task 0 merges with the user's edit.
    let plan = fx.integrate(base, s, &cands[..1], false);
    assert_eq!(plan.applied, vec![0]);
    let expected = fx.tree(&[
        ("f", F(&text(&[(1, "zero"), (12, "user")]))),
        ("lib/x", F("x by user\n")),
        ("lib/y", F("y\n")),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
}

/// `--strict` with an unchanged source refuses nothing.
#[test]
fn strict_with_an_unchanged_source_applies_everything() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(1, "zero")])))]);
    let plan = fx.tasks(base, base, &[p0], true);
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(writes(&plan), fx.writes_between(base, p0));
}

/// Task 1 conflicts with task 0 only; once task 0 is out (the user changed
/// its lines), task 1 applies, as if integrated without task 0.
#[test]
fn a_later_task_applies_once_the_earlier_one_is_out() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let s = fx.tree(&[("f", F(&text(&[(2, "user")])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(2, "zero"), (9, "zero")])))]);
    let p1 = fx.tree(&[("f", F(&text(&[(9, "one")])))]);
    let cands = [fx.cand(0, base, p0), fx.cand(1, base, p1)];

    let plan = fx.integrate(base, s, &cands, false);
    assert_outcome(
        &plan,
        &[1],
        &[(0, "source_changed", &[("f", "both modified")])],
    );
    let expected = fx.tree(&[("f", F(&text(&[(2, "user"), (9, "one")])))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));

    // With the source unchanged task 0 applies and task 1 conflicts with it.
    let plan = fx.integrate(base, base, &cands, false);
    assert_outcome(
        &plan,
        &[0],
        &[(1, "merge_conflict", &[("f", "both modified")])],
    );
}

/// A later task that builds on what an earlier, refused task added (the
/// same new file, and more in it) stands on its own: it brings the file.
#[test]
fn a_later_task_carrying_a_refused_tasks_file_brings_it_alone() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let s = fx.tree(&[("f", F(&text(&[(4, "user")])))]);
    let p0 = fx.tree(&[("f", F(&text(&[(4, "zero")]))), ("lib", F(&text(&[])))]);
    let p1 = fx.tree(&[("f", F(&text(&[]))), ("lib", F(&text(&[(12, "one")])))]);
    let plan = fx.tasks(base, s, &[p0, p1], false);
    assert_outcome(
        &plan,
        &[1],
        &[(0, "source_changed", &[("f", "both modified")])],
    );
    let expected = fx.tree(&[
        ("f", F(&text(&[(4, "user")]))),
        ("lib", F(&text(&[(12, "one")]))),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
}

/// One task renames a file, a later one edits it at its old name: both
/// apply, the edit lands under the new name.
#[test]
fn a_rename_and_an_edit_from_two_tasks_both_apply() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let p0 = fx.tree(&[("src/a", F(&text(&[]))), ("z", F("z\n"))]);
    let p1 = fx.tree(&[("a", F(&text(&[(10, "one")]))), ("z", F("z\n"))]);
    let plan = fx.tasks(base, base, &[p0, p1], false);
    assert_eq!(plan.applied, vec![0, 1]);
    let expected = fx.tree(&[("src/a", F(&text(&[(10, "one")]))), ("z", F("z\n"))]);
    assert_eq!(writes(&plan), fx.writes_between(base, expected));
}
