//! `integrate::merge3`, one 3-way merge, against `git merge-tree
//! --write-tree` as the oracle: every kind of change on each side (lines,
//! adds and deletes, renames, files and folders, binary, modes, symlinks).

use super::*;

#[test]
fn disjoint_edits_merge_cleanly() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("h", F("h\n")), ("d/k", F("k\n"))]);
    let ours = fx.tree(&[("f", F(&text(&[(2, "ours")]))), ("d/k", F("k\n"))]);
    let theirs = fx.tree(&[
        ("f", F(&text(&[(10, "theirs")]))),
        ("h", F("h\n")),
        ("d/k", F("k\n")),
        ("g", F("new\n")),
    ]);
    let expected = fx.tree(&[
        ("f", F(&text(&[(2, "ours"), (10, "theirs")]))),
        ("d/k", F("k\n")),
        ("g", F("new\n")),
    ]);
    fx.merge_clean(base, ours, theirs, expected);
}

#[test]
fn same_line_edits_conflict() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let ours = fx.tree(&[("f", F(&text(&[(5, "ours")]))), ("g", F("g\n"))]);
    let theirs = fx.tree(&[("f", F(&text(&[(5, "theirs")]))), ("g", F("g2\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
    assert_eq!(got, pairs(&[("f", "both modified")]));
    assert_eq!(got, oracle.conflicts());
}

#[test]
fn add_add_same_content_is_clean() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F("f\n"))]);
    let ours = fx.tree(&[("f", F("f\n")), ("n/new", F("same\n"))]);
    let theirs = fx.tree(&[("f", F("f2\n")), ("n/new", F("same\n"))]);
    let expected = fx.tree(&[("f", F("f2\n")), ("n/new", F("same\n"))]);
    fx.merge_clean(base, ours, theirs, expected);
}

#[test]
fn add_add_different_content_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F("f\n"))]);
    let ours = fx.tree(&[("f", F("f\n")), ("new", F("ours\n"))]);
    let theirs = fx.tree(&[("f", F("f\n")), ("new", F("theirs\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
    assert_eq!(got, pairs(&[("new", "both added")]));
    assert_eq!(got, oracle.conflicts());
}

#[test]
fn modify_delete_conflicts_both_ways() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let modified = fx.tree(&[("f", F(&text(&[(3, "edit")]))), ("g", F("g\n"))]);
    let deleted = fx.tree(&[("g", F("g\n"))]);

    let (got, oracle) = fx.merge_conflicts(base, modified, deleted);
    assert_eq!(got, pairs(&[("f", "deleted by them")]));
    assert_eq!(got, oracle.conflicts());

    let (got, oracle) = fx.merge_conflicts(base, deleted, modified);
    assert_eq!(got, pairs(&[("f", "deleted by us")]));
    assert_eq!(got, oracle.conflicts());
}

#[test]
fn delete_delete_is_clean() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F("f\n")), ("d/g", F("g\n")), ("h", F("h\n"))]);
    let ours = fx.tree(&[("h", F("h\n"))]);
    let theirs = fx.tree(&[("h", F("h2\n"))]);
    let expected = fx.tree(&[("h", F("h2\n"))]);
    fx.merge_clean(base, ours, theirs, expected);
}

/// The merge detects renames (gix's default, like `git merge-tree`'s): an
/// edit follows the file to its new name.
#[test]
fn rename_vs_edit_follows_the_rename() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let renamed = fx.tree(&[("sub/b", F(&text(&[])))]);
    let edited = fx.tree(&[("a", F(&text(&[(7, "edit")])))]);
    let expected = fx.tree(&[("sub/b", F(&text(&[(7, "edit")])))]);
    fx.merge_clean(base, renamed, edited, expected);
    fx.merge_clean(base, edited, renamed, expected);
}

/// For every path git lists, the engine's reason is git's (`git status`'
/// word for the stages git leaves there); the engine may name more paths
/// (both ends of a rename).
fn assert_reasons_agree_with_git(got: &[(String, String)], oracle: &Oracle) {
    for (path, reason) in oracle.conflicts() {
        assert!(
            got.iter().any(|(p, r)| *p == path && *r == reason),
            "git says {path}: {reason}; the engine says {got:?}"
        );
    }
}

#[test]
fn rename_vs_delete_conflicts_at_both_ends() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let renamed = fx.tree(&[("b", F(&text(&[]))), ("z", F("z\n"))]);
    let deleted = fx.tree(&[("z", F("z\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, renamed, deleted);
    assert_eq!(oracle.conflicts(), pairs(&[("b", "deleted by them")]));
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a", "b"]);
}

/// A rename/delete conflict is "deleted by them" (or "by us") at the new
/// name, as git says, and the old name, where git leaves no stage, gets
/// the same word. (Was a bug: "added by us" at both ends, from gix's
/// entries of the conflict, which for a rename hold no base entry.)
#[test]
fn rename_vs_delete_reason_is_gits() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let renamed = fx.tree(&[("b", F(&text(&[]))), ("z", F("z\n"))]);
    let deleted = fx.tree(&[("z", F("z\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, renamed, deleted);
    assert_reasons_agree_with_git(&got, &oracle);
    assert_eq!(
        got,
        pairs(&[("a", "deleted by them"), ("b", "deleted by them")])
    );
    let (got, oracle) = fx.merge_conflicts(base, deleted, renamed);
    assert_reasons_agree_with_git(&got, &oracle);
    assert_eq!(
        got,
        pairs(&[("a", "deleted by us"), ("b", "deleted by us")])
    );
}

#[test]
fn rename_rename_to_different_names_conflicts_at_every_name() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let ours = fx.tree(&[("b", F(&text(&[])))]);
    let theirs = fx.tree(&[("c", F(&text(&[])))]);
    let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
    assert_eq!(
        oracle.conflicts(),
        pairs(&[
            ("a", "both deleted"),
            ("b", "added by us"),
            ("c", "added by them")
        ])
    );
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a", "b", "c"]);
}

/// A rename/rename conflict is "both deleted" at the old name, "added by
/// us" and "added by them" at the new ones, as git says. (Was a bug: every
/// name got the same word.)
#[test]
fn rename_rename_reasons_are_gits() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let ours = fx.tree(&[("b", F(&text(&[])))]);
    let theirs = fx.tree(&[("c", F(&text(&[])))]);
    let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
    assert_reasons_agree_with_git(&got, &oracle);
}

/// Renames on both sides of an edit, and edits on both sides of a rename.
#[test]
fn rename_with_edits_on_both_sides_merges() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let ours = fx.tree(&[("d/b", F(&text(&[(1, "ours")])))]);
    let theirs = fx.tree(&[("a", F(&text(&[(12, "theirs")])))]);
    let expected = fx.tree(&[("d/b", F(&text(&[(1, "ours"), (12, "theirs")])))]);
    fx.merge_clean(base, ours, theirs, expected);
}

/// A file that becomes a folder on one side, edited on the other.
#[test]
fn file_to_folder_vs_edit_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let edited = fx.tree(&[("a", F(&text(&[(2, "edit")]))), ("z", F("z\n"))]);
    let folder = fx.tree(&[("a/x", F("x\n")), ("z", F("z\n"))]);
    for (ours, theirs, reason) in [
        (edited, folder, "deleted by them"),
        (folder, edited, "deleted by us"),
    ] {
        // git moves the file aside (`a~<commit>`); the engine names the
        // path itself, since it never writes a conflicted tree.
        let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
        assert_eq!(got, pairs(&[("a", reason)]));
        assert_eq!(oracle.conflicts().len(), 1);
        assert!(oracle.conflicts()[0].0.starts_with("a~"), "{oracle:?}");
        assert_eq!(oracle.conflicts()[0].1, reason);
    }
}

/// A folder that becomes a file on one side, a file in it edited on the other.
#[test]
fn folder_to_file_vs_edit_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("a/x", F(&text(&[]))), ("a/y", F("y\n"))]);
    let edited = fx.tree(&[("a/x", F(&text(&[(2, "edit")]))), ("a/y", F("y\n"))]);
    let file = fx.tree(&[("a", F("now a file\n"))]);
    for (ours, theirs, file_reason, x_reason) in [
        (edited, file, "added by them", "deleted by them"),
        (file, edited, "added by us", "deleted by us"),
    ] {
        let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
        assert_eq!(got, pairs(&[("a", file_reason), ("a/x", x_reason)]));
        // git: the same, with the new file moved aside to `a~<commit>`.
        let git = oracle.conflicts();
        assert_eq!(git.len(), 2, "{git:?}");
        assert_eq!(git[0], ("a/x".to_string(), x_reason.to_string()));
        assert!(
            git[1].0.starts_with("a~") && git[1].1 == file_reason,
            "{git:?}"
        );
    }
}

/// Replacing a file by a folder (or back) merges with edits elsewhere.
#[test]
fn file_folder_switches_merge_with_other_edits() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F("a\n")), ("d/x", F("x\n")), ("z", F("z\n"))]);
    let switched = fx.tree(&[
        ("a/inner", F("in\n")),
        ("d", F("d file\n")),
        ("z", F("z\n")),
    ]);
    let other = fx.tree(&[("a", F("a\n")), ("d/x", F("x\n")), ("z", F("z2\n"))]);
    let expected = fx.tree(&[
        ("a/inner", F("in\n")),
        ("d", F("d file\n")),
        ("z", F("z2\n")),
    ]);
    fx.merge_clean(base, switched, other, expected);
    fx.merge_clean(base, other, switched, expected);
}

#[test]
fn binary_files_merge_one_side_and_conflict_on_both() {
    let fx = Fx::new();
    let bin = |n: u8| -> Vec<u8> { vec![0, 1, 2, n, 0, 255, 0, n] };
    let (b0, b1, b2) = (bin(0), bin(1), bin(2));
    let base = fx.tree(&[("img", B(&b0)), ("f", F("f\n"))]);
    let one = fx.tree(&[("img", B(&b1)), ("f", F("f\n"))]);
    let other = fx.tree(&[("img", B(&b0)), ("f", F("f2\n"))]);
    let expected = fx.tree(&[("img", B(&b1)), ("f", F("f2\n"))]);
    fx.merge_clean(base, one, other, expected);

    let two = fx.tree(&[("img", B(&b2)), ("f", F("f\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, one, two);
    assert_eq!(got, pairs(&[("img", "both modified")]));
    assert_eq!(got, oracle.conflicts());
}

#[test]
fn exec_bit_flip_merges_with_an_edit() {
    let fx = Fx::new();
    let base = fx.tree(&[("run.sh", F(&text(&[])))]);
    let flipped = fx.tree(&[("run.sh", X(&text(&[])))]);
    let edited = fx.tree(&[("run.sh", F(&text(&[(4, "edit")])))]);
    let expected = fx.tree(&[("run.sh", X(&text(&[(4, "edit")])))]);
    fx.merge_clean(base, flipped, edited, expected);
    fx.merge_clean(base, edited, flipped, expected);
}

#[test]
fn symlink_retarget_merges_one_side_and_conflicts_on_both() {
    let fx = Fx::new();
    let base = fx.tree(&[("link", L("target-a")), ("f", F("f\n"))]);
    let one = fx.tree(&[("link", L("target-b")), ("f", F("f\n"))]);
    let other = fx.tree(&[("link", L("target-a")), ("f", F("f2\n"))]);
    let expected = fx.tree(&[("link", L("target-b")), ("f", F("f2\n"))]);
    fx.merge_clean(base, one, other, expected);

    let two = fx.tree(&[("link", L("target-c")), ("f", F("f\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, one, two);
    assert_eq!(got, pairs(&[("link", "both modified")]));
    assert_eq!(got, oracle.conflicts());

    let gone = fx.tree(&[("f", F("f\n"))]);
    let (got, oracle) = fx.merge_conflicts(base, one, gone);
    assert_eq!(got, pairs(&[("link", "deleted by them")]));
    assert_eq!(got, oracle.conflicts());
}

/// A file that becomes a symlink on one side, edited on the other.
#[test]
fn file_to_symlink_vs_edit_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[])))]);
    let link = fx.tree(&[("f", L("elsewhere"))]);
    let edited = fx.tree(&[("f", F(&text(&[(1, "edit")])))]);
    let (got, oracle) = fx.merge_conflicts(base, edited, link);
    // git splits the path in two (the symlink at `f`, the edited file moved
    // to `f~<commit>`); the engine names the path once.
    assert_eq!(got, pairs(&[("f", "both modified")]));
    let git = oracle.conflicts();
    assert_eq!(git.len(), 2, "{git:?}");
    assert_eq!(git[0], ("f".to_string(), "added by them".to_string()));
}

/// A file added on one side where the other adds a folder of that name.
#[test]
fn file_and_folder_added_at_one_path_conflict() {
    let fx = Fx::new();
    let base = fx.tree(&[("z", F("z\n"))]);
    let file = fx.tree(&[("n", F("file\n")), ("z", F("z\n"))]);
    let folder = fx.tree(&[("n/x", F("x\n")), ("z", F("z\n"))]);
    // git moves the file aside to `n~<commit>`; the engine names `n` (and,
    // with the file on our side, the folder's file too).
    let (got, oracle) = fx.merge_conflicts(base, folder, file);
    assert_eq!(got, pairs(&[("n", "added by them")]));
    let git = oracle.conflicts();
    assert_eq!(git.len(), 1, "{git:?}");
    assert!(
        git[0].0.starts_with("n~") && git[0].1 == "added by them",
        "{git:?}"
    );

    let (got, oracle) = fx.merge_conflicts(base, file, folder);
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["n", "n/x"]);
    assert_eq!(got[0].1, "added by us");
    let git = oracle.conflicts();
    assert_eq!(git.len(), 1, "{git:?}");
    assert!(
        git[0].0.starts_with("n~") && git[0].1 == "added by us",
        "{git:?}"
    );

    // Through integrate: the later task is the one refused.
    let plan = fx.tasks(base, base, &[folder, file], false);
    assert_outcome(
        &plan,
        &[0],
        &[(1, "merge_conflict", &[("n", "added by them")])],
    );
    assert_eq!(writes(&plan), fx.writes_between(base, folder));
}

/// With the file on our side, the folder's file `n/x`, which only their
/// side added, is "added by them" (git leaves no stage there: the word is
/// what each side has at the path). (Was a bug: "added by us", the reason
/// of the conflict's first location copied to the others.)
#[test]
fn file_and_folder_added_reasons_name_the_side_that_added_each() {
    let fx = Fx::new();
    let base = fx.tree(&[("z", F("z\n"))]);
    let file = fx.tree(&[("n", F("file\n")), ("z", F("z\n"))]);
    let folder = fx.tree(&[("n/x", F("x\n")), ("z", F("z\n"))]);
    let (got, _) = fx.merge_conflicts(base, file, folder);
    assert_eq!(
        got,
        pairs(&[("n", "added by us"), ("n/x", "added by them")])
    );
}

/// A folder replaced by a file on one side while the other adds a file in
/// the folder.
#[test]
fn folder_to_file_vs_a_new_file_in_the_folder_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("d/x", F("x\n"))]);
    let file = fx.tree(&[("d", F("file\n"))]);
    let grown = fx.tree(&[("d/x", F("x\n")), ("d/y", F("y\n"))]);
    for (ours, theirs, reason) in [(file, grown, "added by us"), (grown, file, "added by them")] {
        // git keeps the folder (with the new file) and moves the file aside
        // to `d~<commit>`; the engine names `d`.
        let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
        assert_eq!(got, pairs(&[("d", reason)]));
        let git = oracle.conflicts();
        assert_eq!(git.len(), 1, "{git:?}");
        assert!(git[0].0.starts_with("d~") && git[0].1 == reason, "{git:?}");
    }
}

/// A folder the other side renamed: the new file follows the folder, as in
/// git's merge. git's default (`merge.directoryRenames=conflict`) reports
/// that placement as a conflict to confirm; the engine (gix) takes it as
/// resolved, like `merge.directoryRenames=true`. This pins that behaviour.
#[test]
fn a_file_added_in_a_renamed_folder_follows_the_folder() {
    let fx = Fx::new();
    let x = text(&[]);
    let y = text(&[(1, "y")]);
    let base = fx.tree(&[("d/x", F(&x)), ("d/y", F(&y)), ("z", F("z\n"))]);
    let moved = fx.tree(&[("e/x", F(&x)), ("e/y", F(&y)), ("z", F("z\n"))]);
    let grown = fx.tree(&[
        ("d/x", F(&x)),
        ("d/y", F(&y)),
        ("d/new", F("new\n")),
        ("z", F("z\n")),
    ]);
    let expected = fx.tree(&[
        ("e/x", F(&x)),
        ("e/y", F(&y)),
        ("e/new", F("new\n")),
        ("z", F("z\n")),
    ]);
    for (ours, theirs) in [(moved, grown), (grown, moved)] {
        let oracle = fx.oracle(base, ours, theirs);
        assert_eq!(oracle.tree, expected.to_string());
        assert_eq!(oracle.stages.keys().collect::<Vec<_>>(), ["e/new"]);
        match integrate::merge3(&fx.repo, base, ours, theirs).unwrap() {
            Merge::Clean(t) => assert_eq!(t, expected),
            Merge::Conflicts(c) => panic!("{c:?}"),
        }
    }

    // Through integrate: the user moved the folder, a task added a file in
    // it; the file is written in the moved folder.
    let plan = fx.tasks(base, moved, &[grown], false);
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(writes(&plan), fx.writes_between(moved, expected));
}

/// The merge reads the repository's rename setting (gix's
/// `tree_merge_options`: `merge.renames`, else `diff.renames`, else on):
/// with `merge.renames=false` a rename against an edit is a modify/delete
/// conflict. (git 2.47's `merge` and `merge-tree` still follow the rename
/// there, so git is no oracle here; the engine is the stricter one.)
#[test]
fn merge_renames_false_turns_rename_detection_off() {
    let fx = Fx::new();
    fx.git(&["config", "merge.renames", "false"]);
    let repo = gix::open_opts(&fx.dir, gix::open::Options::isolated())
        .unwrap()
        .with_object_memory();
    let base = fx.tree(&[("a", F(&text(&[])))]);
    let renamed = fx.tree(&[("b", F(&text(&[])))]);
    let edited = fx.tree(&[("a", F(&text(&[(7, "edit")])))]);
    match integrate::merge3(&repo, base, renamed, edited).unwrap() {
        Merge::Clean(t) => panic!("merged to {t} with renames off"),
        Merge::Conflicts(c) => {
            let got: Vec<(String, String)> = c
                .into_iter()
                .map(|k| (k.path.to_string(), k.reason))
                .collect();
            assert_eq!(got, pairs(&[("a", "deleted by us")]));
        }
    }
}

/// A rename with an edit on one side and an edit of the same lines on the
/// other conflicts at both names.
#[test]
fn rename_and_edit_vs_edit_of_the_same_line_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let moved = fx.tree(&[("b", F(&text(&[(1, "x")]))), ("z", F("z\n"))]);
    let edited = fx.tree(&[("a", F(&text(&[(1, "y")]))), ("z", F("z\n"))]);
    for (ours, theirs) in [(moved, edited), (edited, moved)] {
        let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
        assert_eq!(oracle.conflicts(), pairs(&[("b", "both modified")]));
        assert_eq!(
            got,
            pairs(&[("a", "both modified"), ("b", "both modified")])
        );
    }
}

/// A rename onto a path the other side added, and two files renamed to
/// one name, conflict at the contested name (as in git); the engine names
/// the sources of the renames too.
#[test]
fn renames_onto_a_contested_name_conflict() {
    let fx = Fx::new();
    let b_text = text(&[(1, "B"), (2, "B"), (3, "B"), (4, "B")]);
    let base = fx.tree(&[("a", F(&text(&[]))), ("b", F(&b_text))]);
    let renamed = fx.tree(&[("c", F(&text(&[]))), ("b", F(&b_text))]);
    let added = fx.tree(&[("a", F(&text(&[]))), ("b", F(&b_text)), ("c", F("other\n"))]);
    for (ours, theirs) in [(renamed, added), (added, renamed)] {
        let (got, oracle) = fx.merge_conflicts(base, ours, theirs);
        assert_eq!(oracle.conflicts(), pairs(&[("c", "both added")]));
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["a", "c"], "{got:?}");
    }
    let other = fx.tree(&[("a", F(&text(&[]))), ("c", F(&b_text))]);
    let (got, oracle) = fx.merge_conflicts(base, renamed, other);
    assert_eq!(oracle.conflicts(), pairs(&[("c", "both added")]));
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a", "b", "c"], "{got:?}");
}

/// Mode and type changes against a deletion are modify/delete conflicts.
#[test]
fn exec_bit_or_symlink_vs_delete_conflicts() {
    let fx = Fx::new();
    let base = fx.tree(&[("a", F(&text(&[]))), ("z", F("z\n"))]);
    let exec = fx.tree(&[("a", X(&text(&[]))), ("z", F("z\n"))]);
    let link = fx.tree(&[("a", L("t")), ("z", F("z\n"))]);
    let deleted = fx.tree(&[("z", F("z\n"))]);
    for changed in [exec, link] {
        let (got, oracle) = fx.merge_conflicts(base, changed, deleted);
        assert_eq!(got, pairs(&[("a", "deleted by them")]));
        assert_eq!(got, oracle.conflicts());
        let (got, oracle) = fx.merge_conflicts(base, deleted, changed);
        assert_eq!(got, pairs(&[("a", "deleted by us")]));
        assert_eq!(got, oracle.conflicts());
    }
}
