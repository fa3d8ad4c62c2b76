//! Sparse checkouts (design §3.15): the baseline keeps what the source's
//! sparse checkout leaves out at its index content, workspaces hold what
//! the source holds (cone and non-cone, `git sparse-checkout list` equal),
//! `prepare --sparse` narrows them, and a change outside the source's
//! sparse checkout is a conflict `outside_sparse_checkout`, never written.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::{prepare, roots};
use crate::common::Env;

/// A repository with files at the top and in `a/`, `a/x/`, `b/`, `c/d/`.
fn tree(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    for (p, c) in [
        ("top", "top\n"),
        ("a/1", "a1\n"),
        ("a/x/1", "ax1\n"),
        ("b/2", "b2\n"),
        ("b/keep/3", "b3\n"),
        ("c/3", "c3\n"),
        ("c/d/3", "cd3\n"),
    ] {
        let f = repo.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, c).unwrap();
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    repo
}

/// Files on disk below `root` (relative, sorted), `.git` left out.
fn files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_name() == ".git" {
                continue;
            }
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn index_bytes(env: &Env, repo: &Path) -> Vec<u8> {
    let git_dir = PathBuf::from(env.git(repo, ["rev-parse", "--absolute-git-dir"]).trim());
    read_bytes(&git_dir.join("index"))
}

/// The repository's shared `config` file.
fn config_bytes(env: &Env, repo: &Path) -> Vec<u8> {
    let common = env.git(
        repo,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    read_bytes(&Path::new(common.trim()).join("config"))
}

/// Prepare two tasks in a sparse `repo`, compare the workspaces with the
/// source, then: task 1 edits a file outside the sparse checkout (and one
/// inside), task 2 one inside; apply.
fn round_trip(env: &Env, repo: &Path, outside: &str, inside: &str, expect_list: &[&str]) {
    let index_before = index_bytes(env, repo);
    let config_before = config_bytes(env, repo);
    let doc = prepare(env, repo, &["-n", "2"]);
    let sparse: Vec<&str> = doc["sparse"]
        .as_array()
        .expect("a sparse batch document carries `sparse`")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(sparse, expect_list);
    // The baseline keeps the skip-worktree entries: a clean sparse source's
    // baseline is HEAD's tree.
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(repo, ["rev-parse", &format!("{baseline}^{{tree}}")]),
        env.git(repo, ["rev-parse", "HEAD^{tree}"])
    );
    let ws = roots(&doc);
    let src_list = env.git(repo, ["sparse-checkout", "list"]);
    let src_flags = env.git(repo, ["ls-files", "-t"]);
    for w in &ws {
        assert_eq!(
            files(w),
            files(repo),
            "workspace {} holds what the source holds",
            w.display()
        );
        assert_eq!(env.git(w, ["sparse-checkout", "list"]), src_list);
        assert_eq!(env.git(w, ["ls-files", "-t"]), src_flags);
        assert_eq!(env.git(w, ["status", "--porcelain"]), "");
        // A stat cache from the start: the first snapshot reads no file.
        let snap = env.delegate(w, ["snapshot"]).expect(0);
        assert_has(&snap.stderr, "hashed 0 ");
        assert_eq!(
            snap.stdout.trim(),
            env.git(repo, ["rev-parse", &format!("{baseline}^{{tree}}")])
                .trim()
        );
    }
    let snap = env.delegate(repo, ["snapshot"]).expect(0);
    assert_has(&snap.stderr, "hashed 0 ");
    assert!(!ws[0].join(outside).exists());
    std::fs::create_dir_all(ws[0].join(outside).parent().unwrap()).unwrap();
    std::fs::write(ws[0].join(outside), "worker 1\n").unwrap();
    std::fs::write(ws[0].join(inside), "worker 1 inside\n").unwrap();
    std::fs::write(ws[1].join(inside), "worker 2\n").unwrap();
    // What apply would do, as its dry run and `diff --source` tell it.
    let dry = env
        .delegate(repo, ["apply", "--dry-run", "--json"])
        .expect(1)
        .json();
    assert_eq!(dry["tasks"][0]["reason"], "outside_sparse_checkout");
    assert_eq!(dry["tasks"][1]["status"], "applied");
    let preview = env
        .delegate(repo, ["diff", "--source", "--json"])
        .expect(0)
        .json();
    let t = &preview["tasks"][0];
    assert_eq!(t["reason"], "outside_sparse_checkout", "{preview}");
    assert_eq!(t["conflicts"][0]["path"], outside);
    let apply = env.delegate(repo, ["apply", "--json"]).expect(1).json();
    let t1 = &apply["tasks"][0];
    assert_eq!(t1["status"], "conflict");
    assert_eq!(t1["reason"], "outside_sparse_checkout");
    assert_eq!(t1["conflicts"][0]["path"], outside);
    assert_eq!(t1["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(apply["tasks"][1]["status"], "applied");
    assert_eq!(read(&repo.join(inside)), "worker 2\n");
    assert!(
        !repo.join(outside).exists(),
        "nothing written outside the sparse checkout"
    );
    assert_eq!(
        index_bytes(env, repo),
        index_before,
        "the user's index is unchanged"
    );
    // Task 2's workspace went with its registration; task 1's stays.
    let listed = env.git(repo, ["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(&ws[1].display().to_string()), "{listed}");
    assert!(listed.contains(&ws[0].display().to_string()), "{listed}");
    assert_eq!(config_bytes(env, repo), config_before);
    // The task keeps its work and its workspace.
    assert_eq!(read(&ws[0].join(outside)), "worker 1\n");
}

#[test]
fn a_cone_sparse_source_gets_cone_workspaces_and_outside_edits_conflict() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(&repo, ["sparse-checkout", "set", "a", "c/d"]);
    assert!(!repo.join("b").exists());
    round_trip(&env, &repo, "b/2", "a/1", &["a", "c/d"]);
}

#[test]
fn a_non_cone_sparse_source_gets_its_patterns_and_new_files_outside_conflict() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(
        &repo,
        [
            "sparse-checkout",
            "set",
            "--no-cone",
            "/*",
            "!/b/",
            "/b/keep/",
        ],
    );
    assert!(!repo.join("b/2").exists());
    assert!(repo.join("b/keep/3").exists());
    // A new file where the patterns leave the tree out.
    round_trip(
        &env,
        &repo,
        "b/new",
        "b/keep/3",
        &["/*", "!/b/", "/b/keep/"],
    );
}

#[test]
fn an_edit_of_a_skipped_file_conflicts_in_a_non_cone_source_too() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(&repo, ["sparse-checkout", "set", "--no-cone", "/*", "!/c/"]);
    round_trip(&env, &repo, "c/d/3", "a/x/1", &["/*", "!/c/"]);
}

#[test]
fn sparse_narrows_the_workspaces_of_a_full_source() {
    let env = Env::new();
    let repo = tree(&env);
    let config_before = read_bytes(&repo.join(".git/config"));
    let doc = prepare(&env, &repo, &["--sparse", "a/x"]);
    assert_eq!(doc["sparse"], serde_json::json!(["a/x"]));
    let ws = &roots(&doc)[0];
    // Cone rules: the files at the top and directly in `a` come too.
    assert_eq!(files(ws), ["README", "a/1", "a/x/1", "top"]);
    // Without extensions.worktreeConfig: skip-worktree bits and the
    // workspace's own sparse-checkout file, never `.git/config`.
    assert_eq!(read_bytes(&repo.join(".git/config")), config_before);
    let flags = env.git(ws, ["ls-files", "-t"]);
    assert_has(&flags, "S b/2\n");
    assert_has(&flags, "H a/x/1\n");
    assert_has(&flags, "H a/1\n");
    assert_has(&flags, "S c/d/3\n");
    assert_eq!(env.git(ws, ["status", "--porcelain"]), "");
    let wt_git = PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim());
    assert_eq!(
        read(&wt_git.join("info/sparse-checkout")),
        "/*\n!/*/\n/a/\n!/a/*/\n/a/x/\n"
    );
    // The source is whole: work anywhere applies, a skipped file included.
    std::fs::write(ws.join("a/x/1"), "inside\n").unwrap();
    std::fs::create_dir_all(ws.join("b")).unwrap();
    std::fs::write(ws.join("b/2"), "outside the workspace's cone\n").unwrap();
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied");
    assert_eq!(read(&repo.join("b/2")), "outside the workspace's cone\n");
    // Untouched files outside the workspace's cone stay as they were.
    assert_eq!(read(&repo.join("c/d/3")), "cd3\n");
}

#[test]
fn sparse_narrows_within_a_cone_source_and_per_worktree_config_is_used() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(&repo, ["sparse-checkout", "set", "a", "c/d"]);
    let doc = env
        .delegate(
            &repo,
            [
                "prepare", "-n", "2", "--sparse", "a/x", "--sparse", "b", "--json",
            ],
        )
        .expect(0)
        .json();
    // `b` is outside the source's cone: only `a/x` stays.
    assert_eq!(doc["sparse"], serde_json::json!(["a/x"]));
    for ws in roots(&doc) {
        assert_eq!(files(&ws), ["README", "a/1", "a/x/1", "top"]);
        assert_eq!(env.git(&ws, ["sparse-checkout", "list"]), "a/x\n");
        assert_eq!(env.git(&ws, ["status", "--porcelain"]), "");
    }
    // The source's own configuration is what it was.
    assert_eq!(env.git(&repo, ["sparse-checkout", "list"]), "a\nc/d\n");
    // The human text says what the workspaces hold.
    let text = env
        .delegate(&repo, ["prepare", "--label", "human", "--sparse", "c"])
        .expect(0);
    assert_has(&text.stdout, "\nSparse workspaces: c/d\n");
}

#[test]
fn a_full_source_without_sparse_has_no_sparse_field() {
    let env = Env::new();
    let repo = tree(&env);
    let doc = prepare(&env, &repo, &[]);
    assert!(doc.get("sparse").is_none());
    assert_eq!(files(&roots(&doc)[0]), files(&repo));
}

#[test]
fn a_sparse_pattern_that_is_not_a_folder_is_refused() {
    let env = Env::new();
    let repo = tree(&env);
    for bad in ["a/*", "../x", "", "!a"] {
        let run = env
            .delegate(&repo, ["prepare", "--sparse", bad, "--json"])
            .expect(2);
        assert_eq!(
            run.json()["error"]["code"],
            "delegate::bad_pattern",
            "{bad:?}"
        );
    }
    assert!(env.private_refs(&repo).is_empty());
}

#[test]
fn refresh_keeps_a_narrowed_workspace_narrow() {
    let env = Env::new();
    let repo = tree(&env);
    let doc = prepare(&env, &repo, &["--sparse", "a"]);
    let ws = roots(&doc).remove(0);
    std::fs::write(ws.join("a/x/1"), "worker\n").unwrap();
    // The user changes a file inside the workspace's cone and one outside.
    std::fs::write(repo.join("a/1"), "user a1\n").unwrap();
    std::fs::write(repo.join("c/d/3"), "user cd3\n").unwrap();
    let r = env.delegate(&repo, ["refresh", "--json"]).expect(0).json();
    assert_eq!(r["tasks"][0]["state"], "open", "{r}");
    assert_eq!(read(&ws.join("a/1")), "user a1\n");
    assert!(
        !ws.join("c").exists(),
        "nothing written outside the workspace's cone"
    );
    let flags = env.git(&ws, ["ls-files", "-t", "c/d/3"]);
    assert_eq!(flags, "S c/d/3\n");
    // Its index entry is at the new base's content.
    assert_eq!(
        env.git(&ws, ["rev-parse", ":c/d/3"]),
        env.git(&repo, ["hash-object", "c/d/3"])
    );
    assert_eq!(env.git(&ws, ["status", "--porcelain"]), " M a/x/1\n");
    let apply = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(apply["tasks"][0]["status"], "applied");
    assert_eq!(apply["applied_paths"], serde_json::json!(["a/x/1"]));
    assert_eq!(read(&repo.join("c/d/3")), "user cd3\n");
}

#[test]
fn the_hint_for_work_outside_the_sparse_checkout_works_as_printed() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(&repo, ["sparse-checkout", "set", "a"]);
    let doc = prepare(&env, &repo, &[]);
    let ws = roots(&doc).remove(0);
    std::fs::create_dir_all(ws.join("c/d")).unwrap();
    std::fs::write(ws.join("c/d/3"), "worker\n").unwrap();
    let out = env.delegate(&repo, ["apply"]).expect(1);
    let widen = crate::common::printed_command(&out.stdout, "git sparse-checkout add");
    assert_eq!(widen, "git sparse-checkout add c/d");
    env.sh(&repo, &widen).expect(0);
    let again = crate::common::printed_command(&out.stdout, "git delegate apply");
    env.sh(&repo, &again).expect(0);
    assert_eq!(read(&repo.join("c/d/3")), "worker\n");
}

#[test]
fn a_sparse_index_source_works_the_same() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(
        &repo,
        ["sparse-checkout", "set", "--sparse-index", "a", "c/d"],
    );
    // The index holds `b/` as one sparse folder entry.
    assert!(env.git(&repo, ["ls-files", "--sparse"]).contains("b/\n"));
    round_trip(&env, &repo, "b/keep/3", "a/x/1", &["a", "c/d"]);
}

#[test]
fn a_sparse_index_source_with_staged_changes_is_snapshotted_like_git_add() {
    let env = Env::new();
    let repo = tree(&env);
    env.git(&repo, ["sparse-checkout", "set", "--sparse-index", "a"]);
    std::fs::write(repo.join("a/1"), "staged\n").unwrap();
    env.git(&repo, ["add", "a/1"]);
    std::fs::write(repo.join("a/new"), "untracked\n").unwrap();
    let index_before = index_bytes(&env, &repo);
    let doc = prepare(&env, &repo, &[]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    let ls = env.git(&repo, ["ls-tree", "-r", "--name-only", baseline]);
    assert_eq!(
        ls,
        "README\na/1\na/new\na/x/1\nb/2\nb/keep/3\nc/3\nc/d/3\ntop\n"
    );
    assert_eq!(
        env.git(&repo, ["show", &format!("{baseline}:a/1")]),
        "staged\n"
    );
    assert_eq!(env.git(&repo, ["show", &format!("{baseline}:b/2")]), "b2\n");
    assert_eq!(index_bytes(&env, &repo), index_before);
}

#[test]
fn a_sparse_linked_worktree_source_passes_its_own_configuration_on() {
    let env = Env::new();
    let main = tree(&env);
    let linked = env.path().join("linked");
    crate::common::fixtures::worktree_add(&env, &main, &linked);
    env.git(&linked, ["sparse-checkout", "set", "c"]);
    // The main worktree stays whole.
    assert!(main.join("b/2").exists());
    round_trip(&env, &linked, "a/x/1", "c/d/3", &["c"]);
    assert_eq!(read(&main.join("c/d/3")), "cd3\n");
}
