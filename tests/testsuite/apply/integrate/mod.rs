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
//!
//! Here: the fixture (`Fx`) and the readings of a plan; the tests are in
//! `merge3`, `tasks` (proposals, the source, `--strict`) and `blocked`
//! (the write-back check).

use crate::common::succeed_with_input;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::Env;
use git_delegate::error::Result;
use git_delegate::merge::integrate::{self, Candidate, Merge, Plan};
use git_delegate::writeback::{BlockReason, Blocked, PathWrite};
use gix::bstr::BString;
use gix::ObjectId;

mod blocked;
mod merge3;
mod tasks;

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
        cmd.args(args);
        let out = succeed_with_input(cmd, stdin, &format!("git {args:?}"));
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

/// A refusal as a test writes it: (task, reason, [(path, why)]).
type Expected<'a> = (usize, &'static str, &'a [(&'a str, &'a str)]);

/// Assert the tasks a plan applied and its refusals.
#[track_caller]
fn assert_outcome(plan: &Plan, applied: &[usize], refusals: &[Expected]) {
    assert_eq!(plan.applied, applied);
    let want: Vec<Refusal> = refusals
        .iter()
        .map(|(t, r, c)| (*t, *r, pairs(c)))
        .collect();
    assert_eq!(refused(plan), want);
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}
