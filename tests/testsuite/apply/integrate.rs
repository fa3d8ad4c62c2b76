//! The integration rules (docs/design.md §3.2 steps 2-3) called in-process
//! on real repositories: `integrate::merge3` against `git merge-tree
//! --write-tree` as the oracle for every kind of 3-way merge, and
//! `integrate::integrate` for what it adds on top (task order,
//! all-or-nothing, the merge with the source as it is now, `--strict`, the
//! redo after a blocked write-back).
//!
//! Blobs and trees are made with the git CLI in a hermetic repository; the
//! engine opens it with gix isolated from the user's configuration (so the
//! merge uses gix's defaults: rename detection on, as `git merge-tree`'s),
//! with object memory as `apply` does. Expected results are trees built by
//! hand and compared by id.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::Env;
use git_delegate::error::Result;
use git_delegate::merge::integrate::{self, Candidate, Merge, Plan};
use git_delegate::writeback::{BlockReason, Blocked, PathWrite};
use gix::bstr::BString;
use gix::ObjectId;

/// One entry of a tree to build.
#[derive(Clone, Copy)]
enum E<'a> {
    /// A regular file.
    F(&'a str),
    /// An executable file.
    X(&'a str),
    /// A symlink to the given target.
    L(&'a str),
    /// A regular file with binary content.
    B(&'a [u8]),
}

use E::*;

/// Twelve lines `l1`..`l12`, with the given ones replaced.
fn text(edits: &[(usize, &str)]) -> String {
    (1..=12)
        .map(|n| {
            let line = edits
                .iter()
                .find(|(k, _)| *k == n)
                .map_or(format!("l{n}"), |(_, s)| s.to_string());
            line + "\n"
        })
        .collect()
}

/// What `git merge-tree --write-tree` says.
#[derive(Debug)]
struct Oracle {
    clean: bool,
    tree: String,
    /// Conflicted path -> the stages git lists for it.
    stages: BTreeMap<String, BTreeSet<u8>>,
}

impl Oracle {
    /// Conflicted paths with `git status`' word for their stages.
    fn conflicts(&self) -> Vec<(String, String)> {
        self.stages
            .iter()
            .map(|(p, s)| {
                let has = |n| s.contains(&n);
                let reason = match (has(1), has(2), has(3)) {
                    (true, true, true) => "both modified",
                    (false, true, true) => "both added",
                    (true, false, true) => "deleted by us",
                    (true, true, false) => "deleted by them",
                    (false, true, false) => "added by us",
                    (false, false, true) => "added by them",
                    (true, false, false) => "both deleted",
                    (false, false, false) => "conflict",
                };
                (p.clone(), reason.to_string())
            })
            .collect()
    }
}

struct Fx {
    env: Env,
    dir: PathBuf,
    repo: gix::Repository,
}

static NEXT_INDEX: AtomicUsize = AtomicUsize::new(0);

impl Fx {
    fn new() -> Fx {
        let env = Env::new();
        let dir = env.empty_repo("src");
        let repo = gix::open_opts(&dir, gix::open::Options::isolated())
            .expect("open the repository")
            .with_object_memory();
        Fx { env, dir, repo }
    }

    fn git(&self, args: &[&str]) -> String {
        self.env.git(&self.dir, args)
    }

    /// Run git with `stdin`, and `GIT_INDEX_FILE` when given.
    fn git_in(&self, args: &[&str], stdin: &[u8], index: Option<&Path>) -> String {
        let mut cmd = self.env.git_cmd(&self.dir);
        if let Some(i) = index {
            cmd.env("GIT_INDEX_FILE", i);
        }
        let mut child = cmd
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git");
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn blob(&self, bytes: &[u8]) -> String {
        self.git_in(&["hash-object", "-w", "--stdin"], bytes, None)
            .trim()
            .to_string()
    }

    /// A tree holding exactly `entries`, written with `git update-index` and
    /// `git write-tree` on a fresh index.
    fn tree(&self, entries: &[(&str, E)]) -> ObjectId {
        let n = NEXT_INDEX.fetch_add(1, Ordering::SeqCst);
        let idx = self.env.path().join(format!("index-{n}"));
        let mut info = String::new();
        for (path, e) in entries {
            let (mode, bytes): (&str, &[u8]) = match e {
                F(s) => ("100644", s.as_bytes()),
                X(s) => ("100755", s.as_bytes()),
                L(s) => ("120000", s.as_bytes()),
                B(b) => ("100644", b),
            };
            info.push_str(&format!("{mode} {}\t{path}\n", self.blob(bytes)));
        }
        self.git_in(
            &["update-index", "--index-info"],
            info.as_bytes(),
            Some(&idx),
        );
        let tree = self.git_in(&["write-tree"], b"", Some(&idx));
        let _ = std::fs::remove_file(&idx);
        ObjectId::from_hex(tree.trim().as_bytes()).unwrap()
    }

    fn oracle(&self, base: ObjectId, ours: ObjectId, theirs: ObjectId) -> Oracle {
        let out = self
            .env
            .git_cmd(&self.dir)
            .args([
                "merge-tree".to_string(),
                "--write-tree".into(),
                format!("--merge-base={base}"),
                ours.to_string(),
                theirs.to_string(),
            ])
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "git merge-tree: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let mut lines = stdout.lines();
        let tree = lines.next().unwrap().to_string();
        let mut stages: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
        for line in lines.take_while(|l| !l.is_empty()) {
            let (meta, path) = line.split_once('\t').unwrap();
            let stage: u8 = meta.rsplit(' ').next().unwrap().parse().unwrap();
            stages.entry(path.to_string()).or_default().insert(stage);
        }
        Oracle {
            clean: code == Some(0),
            tree,
            stages,
        }
    }

    /// `merge3` must give `expected` and agree with `git merge-tree`.
    fn merge_clean(&self, base: ObjectId, ours: ObjectId, theirs: ObjectId, expected: ObjectId) {
        let oracle = self.oracle(base, ours, theirs);
        assert!(oracle.clean, "git merge-tree conflicts: {oracle:?}");
        assert_eq!(oracle.tree, expected.to_string(), "the oracle's tree");
        match integrate::merge3(&self.repo, base, ours, theirs).expect("merge3") {
            Merge::Clean(t) => assert_eq!(t, expected, "merge3's tree"),
            Merge::Conflicts(c) => panic!("merge3 conflicts where git merges: {c:?}"),
        }
    }

    /// `merge3`'s conflicts, as (path, reason).
    fn merge_conflicts(
        &self,
        base: ObjectId,
        ours: ObjectId,
        theirs: ObjectId,
    ) -> (Vec<(String, String)>, Oracle) {
        let oracle = self.oracle(base, ours, theirs);
        assert!(!oracle.clean, "git merge-tree merges cleanly: {oracle:?}");
        match integrate::merge3(&self.repo, base, ours, theirs).expect("merge3") {
            Merge::Clean(t) => panic!("merge3 merged to {t} where git conflicts: {oracle:?}"),
            Merge::Conflicts(c) => (
                c.into_iter()
                    .map(|k| (k.path.to_string(), k.reason))
                    .collect(),
                oracle,
            ),
        }
    }

    /// A candidate whose `paths` are what `git diff-tree` lists.
    fn cand(&self, task: usize, base: ObjectId, tree: ObjectId) -> Candidate {
        let out = self.git(&[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-only",
            &base.to_string(),
            &tree.to_string(),
        ]);
        Candidate {
            task,
            tree,
            paths: out.lines().map(BString::from).collect(),
            base: None,
        }
    }

    fn integrate(
        &self,
        base: ObjectId,
        s: ObjectId,
        candidates: &[Candidate],
        strict: bool,
    ) -> Plan {
        let mut check = |_: &[PathWrite]| -> Result<Vec<Blocked>> { Ok(Vec::new()) };
        integrate::integrate(&self.repo, base, s, candidates, strict, &mut check)
            .expect("integrate")
    }

    /// [`Fx::integrate`] of one task per tree of `proposals`, in that order,
    /// each made on `base`.
    fn tasks(&self, base: ObjectId, s: ObjectId, proposals: &[ObjectId], strict: bool) -> Plan {
        let candidates: Vec<Candidate> = proposals
            .iter()
            .enumerate()
            .map(|(i, p)| self.cand(i, base, *p))
            .collect();
        self.integrate(base, s, &candidates, strict)
    }

    /// What `git diff-tree` says turns `s` into `f`, as [`writes`] shows it.
    fn writes_between(&self, s: ObjectId, f: ObjectId) -> Vec<String> {
        self.git(&[
            "diff-tree",
            "-r",
            "--no-renames",
            &s.to_string(),
            &f.to_string(),
        ])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let m: Vec<&str> = meta.split(' ').collect();
            if m[4] == "D" {
                format!("{path} deleted")
            } else {
                format!("{path} {} {}", m[1], m[3])
            }
        })
        .collect()
    }
}

/// The plan's writes as `path mode id` or `path deleted`.
fn writes(plan: &Plan) -> Vec<String> {
    plan.writes
        .iter()
        .map(|w| match w.new {
            Some((kind, id)) => format!("{} {} {id}", w.path, mode(kind)),
            None => format!("{} deleted", w.path),
        })
        .collect()
}

fn mode(kind: gix::objs::tree::EntryKind) -> &'static str {
    use gix::objs::tree::EntryKind as K;
    match kind {
        K::Tree => "040000",
        K::Blob => "100644",
        K::BlobExecutable => "100755",
        K::Link => "120000",
        K::Commit => "160000",
    }
}

/// A refusal as (task, reason, [(path, why)]).
type Refusal = (usize, &'static str, Vec<(String, String)>);

/// The plan's refusals.
fn refused(plan: &Plan) -> Vec<Refusal> {
    plan.refused
        .iter()
        .map(|r| {
            (
                r.task,
                r.reason.as_str(),
                r.conflicts
                    .iter()
                    .map(|k| (k.path.to_string(), k.reason.clone()))
                    .collect(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------
// merge3: one 3-way merge, against `git merge-tree --write-tree`.

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

// ---------------------------------------------------------------------------
// integrate: proposals in task order, then the source.

#[test]
fn proposals_apply_in_task_order_and_the_first_wins() {
    let fx = Fx::new();
    let base = fx.tree(&[("f", F(&text(&[]))), ("g", F("g\n"))]);
    let first = fx.tree(&[("f", F(&text(&[(6, "first")]))), ("g", F("g\n"))]);
    let second = fx.tree(&[("f", F(&text(&[(6, "second")]))), ("g", F("g\n"))]);

    let plan = fx.tasks(base, base, &[first, second], false);
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(1, "merge_conflict", pairs(&[("f", "both modified")]))]
    );
    assert_eq!(writes(&plan), fx.writes_between(base, first));

    // The same proposals the other way round: now the other one wins.
    let plan = fx.tasks(base, base, &[second, first], false);
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(1, "merge_conflict", pairs(&[("f", "both modified")]))]
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
    assert_eq!(plan.applied, vec![0, 1, 2]);
    assert!(plan.refused.is_empty(), "{:?}", refused(&plan));
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
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(1, "merge_conflict", pairs(&[("f", "both modified")]))]
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
    assert_eq!(plan.applied, vec![0]);
    assert!(plan.refused.is_empty(), "{:?}", refused(&plan));
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
    assert_eq!(plan.applied, vec![0, 2]);
    assert_eq!(
        refused(&plan),
        vec![(1, "source_changed", pairs(&[("f", "both modified")]))]
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
    assert_eq!(plan.applied, vec![0]);
    assert!(plan.refused.is_empty(), "{:?}", refused(&plan));
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
    assert_eq!(plan.applied, vec![1]);
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("f", "both modified")]))]
    );
    let expected = fx.tree(&[("f", F(&text(&[(2, "user"), (9, "one")])))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));

    // With the source unchanged task 0 applies and task 1 conflicts with it.
    let plan = fx.integrate(base, base, &cands, false);
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(1, "merge_conflict", pairs(&[("f", "both modified")]))]
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
    assert_eq!(plan.applied, vec![1]);
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("f", "both modified")]))]
    );
    let expected = fx.tree(&[
        ("f", F(&text(&[(4, "user")]))),
        ("lib", F(&text(&[(12, "one")]))),
    ]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
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
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        seen.push(w.iter().map(|w| w.path.to_string()).collect());
        Ok(w.iter()
            .filter(|w| w.path == "g")
            .map(|w| Blocked {
                path: w.path.clone(),
                reason: BlockReason::UntrackedInTheWay,
            })
            .collect())
    };
    let plan = integrate::integrate(&fx.repo, base, base, &cands, false, &mut check).unwrap();
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
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        calls += 1;
        Ok(w.iter()
            .filter(|w| w.path == "g")
            .map(|w| Blocked {
                path: w.path.clone(),
                reason: BlockReason::FolderInTheWay,
            })
            .collect())
    };
    let plan = integrate::integrate(&fx.repo, base, base, &cands, false, &mut check).unwrap();
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
    let plan = integrate::integrate(&fx.repo, base, base, &cands, false, &mut check).unwrap();
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
    let plan = integrate::integrate(&fx.repo, base, s, &cands, false, &mut check).unwrap();
    assert_eq!(calls, 0);
    // Task 1 made the user's very edit: it applies, writing nothing.
    assert_eq!(plan.applied, vec![1]);
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("f", "both modified")]))]
    );
    assert!(plan.writes.is_empty());
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
    assert_eq!(plan.applied, vec![0]);
    assert_eq!(
        refused(&plan),
        vec![(1, "merge_conflict", pairs(&[("n", "added by them")]))]
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
    let mut check = |w: &[PathWrite]| -> Result<Vec<Blocked>> {
        Ok(w.iter()
            .filter(|w| w.path == "b")
            .map(|w| Blocked {
                path: w.path.clone(),
                reason: BlockReason::ChangedSinceSnapshot,
            })
            .collect())
    };
    let plan = integrate::integrate(&fx.repo, base, s, &cands, false, &mut check).unwrap();
    assert_eq!(
        refused(&plan),
        vec![(0, "source_changed", pairs(&[("b", "changed during apply")]))]
    );
    assert_eq!(plan.applied, vec![1]);
    let expected = fx.tree(&[("b", F(&text(&[]))), ("c", F("c by one\n"))]);
    assert_eq!(writes(&plan), fx.writes_between(s, expected));
    let changed: Vec<(usize, Vec<String>)> = plan
        .changed
        .iter()
        .map(|(t, p)| (*t, p.iter().map(|p| p.to_string()).collect()))
        .collect();
    assert_eq!(changed, vec![(1, vec!["c".to_string()])]);

    // Without the check, both apply and task 0's change of `F` is `b`.
    let plan = fx.integrate(base, s, &cands, false);
    assert_eq!(plan.applied, vec![0, 1]);
    let changed: Vec<(usize, Vec<String>)> = plan
        .changed
        .iter()
        .map(|(t, p)| (*t, p.iter().map(|p| p.to_string()).collect()))
        .collect();
    assert_eq!(
        changed,
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
    let plan = integrate::integrate(&fx.repo, base, base, &cands, false, &mut check).unwrap();
    assert_eq!(plan.applied, vec![1]);
    let got = refused(&plan);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (0, "write_failed"));
    assert_eq!(writes(&plan), fx.writes_between(base, p1));
}
