//! Ignored files carried by policy into worktree workspaces (design §3.9):
//! nothing without a pattern; `.worktreeinclude`, `workspace.copy-ignored`
//! and `--copy-ignored` add up; cloned on a reflink filesystem, copied
//! elsewhere; symlinks and executable bits kept; they stay ignored in the
//! workspace and never change its snapshot; a failure undoes the prepare.

use crate::common::files::read;
use crate::common::files::read_bytes;

use std::path::{Path, PathBuf};

use crate::common::fixtures::{prepare, roots};
use crate::common::mounts as sc;
use crate::common::Env;

fn baseline_tree(env: &Env, repo: &Path, doc: &serde_json::Value) -> String {
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    env.git(repo, ["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_string()
}

/// The workspace shows nothing to git and snapshots to the baseline tree.
fn assert_stays_ignored(env: &Env, repo: &Path, ws: &Path, doc: &serde_json::Value) {
    assert_eq!(
        env.git(ws, ["status", "--porcelain", "--untracked-files=all"]),
        "",
        "carried files must stay ignored in {}",
        ws.display()
    );
    let snap = env.delegate(ws, ["snapshot"]).expect(0);
    assert_eq!(snap.stdout.trim(), baseline_tree(env, repo, doc));
}

fn size(p: &Path) -> u64 {
    std::fs::symlink_metadata(p).unwrap().len()
}

#[test]
fn nothing_is_carried_without_a_pattern() {
    let env = Env::new();
    let repo = sc::project_with_ignored(&env, "proj");
    let doc = prepare(&env, &repo, &["-n", "2"]);
    for (t, ws) in doc["tasks"].as_array().unwrap().iter().zip(roots(&doc)) {
        let c = &t["carried_ignored"];
        assert_eq!(c["files"], 0, "{c}");
        assert_eq!(c["bytes"], 0, "{c}");
        assert_eq!(c["cloned"], 0, "{c}");
        assert_eq!(c["copied"], 0, "{c}");
        for p in ["node_modules", ".env", "prod.env", "sub/dev.env", "build"] {
            assert!(
                ws.join(p).symlink_metadata().is_err(),
                "{p} was carried without a pattern"
            );
        }
        assert_eq!(read(&ws.join("untracked.txt")), "untracked\n");
        assert_stays_ignored(&env, &repo, &ws, &doc);
    }
}

/// `.worktreeinclude` + config + CLI patterns, the later winning (`!prod.env`).
fn prepare_with_all_three(env: &Env, repo: &Path) -> serde_json::Value {
    std::fs::write(
        repo.join(".worktreeinclude"),
        "# dependencies, installed once\nnode_modules/\n\n",
    )
    .unwrap();
    let git_dir = PathBuf::from(env.git(repo, ["rev-parse", "--absolute-git-dir"]).trim());
    std::fs::write(
        git_dir.join("delegate.toml"),
        "[workspace]\ncopy-ignored = [\"*.env\"]\n",
    )
    .unwrap();
    env.delegate(
        repo,
        [
            "prepare",
            "-n",
            "2",
            "--copy-ignored",
            "!prod.env",
            "--copy-ignored",
            "/build/out.o",
            "--json",
        ],
    )
    .expect(0)
    .json()
}

const CARRIED_FILES: [&str; 6] = [
    "node_modules/pkg/index.js",
    "node_modules/pkg/big.bin",
    "node_modules/pkg/run.sh",
    ".env",
    "sub/dev.env",
    "build/out.o",
];

fn check_carried(env: &Env, repo: &Path, doc: &serde_json::Value) -> Vec<serde_json::Value> {
    let bytes: u64 = CARRIED_FILES.iter().map(|f| size(&repo.join(f))).sum();
    let mut stats = Vec::new();
    for (t, ws) in doc["tasks"].as_array().unwrap().iter().zip(roots(doc)) {
        let c = t["carried_ignored"].clone();
        assert_eq!(c["files"], 7, "6 files and 1 symlink: {c}");
        assert_eq!(c["symlinks"], 1, "{c}");
        assert_eq!(c["bytes"], bytes, "{c}");
        assert_eq!(
            c["cloned"].as_u64().unwrap() + c["copied"].as_u64().unwrap(),
            6,
            "{c}"
        );
        for f in CARRIED_FILES {
            assert_eq!(read_bytes(&ws.join(f)), read_bytes(&repo.join(f)), "{f}");
        }
        assert_eq!(sc::mode(&ws.join("node_modules/pkg/run.sh")), 0o755);
        assert_eq!(sc::mode(&ws.join(".env")), sc::mode(&repo.join(".env")));
        let tool = ws.join("node_modules/.bin/tool");
        assert!(tool.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_link(&tool).unwrap(),
            PathBuf::from("../pkg/run.sh")
        );
        assert!(
            ws.join("prod.env").symlink_metadata().is_err(),
            "`!prod.env` given last must win over `*.env`"
        );
        // Symlinks are recreated, never followed: the link's target was carried on its own.
        assert!(ws.join("node_modules/pkg/run.sh").is_file());
        assert_stays_ignored(env, repo, &ws, doc);
        stats.push(c);
    }
    assert_eq!(
        stats[0], stats[1],
        "every workspace receives the same files"
    );
    stats
}

#[test]
fn worktreeinclude_config_and_cli_patterns_add_up_copied_without_reflink() {
    let Some(env) = sc::no_reflink_env("carry: copied without reflink") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    let doc = prepare_with_all_three(&env, &repo);
    for c in check_carried(&env, &repo, &doc) {
        assert_eq!(c["cloned"], 0, "this filesystem cannot clone: {c}");
        assert_eq!(c["copied"], 6, "{c}");
    }
    // The source's ignored files are untouched.
    assert_eq!(read(&repo.join(".env")), "TOKEN=dev\n");
}

#[test]
fn carried_files_are_cloned_on_a_reflink_filesystem() {
    let Some(env) = sc::reflink_env("carry: cloned on XFS") else {
        return;
    };
    let repo = sc::project_with_ignored(&env, "proj");
    let doc = prepare_with_all_three(&env, &repo);
    for (c, ws) in check_carried(&env, &repo, &doc).iter().zip(roots(&doc)) {
        assert_eq!(c["cloned"], 6, "{c}");
        assert_eq!(c["copied"], 0, "{c}");
        assert!(
            sc::shares_extents(&ws.join("node_modules/pkg/big.bin")),
            "a cloned file shares its extents with the source"
        );
    }
    // Human output reports what was carried and how.
    let out = env
        .delegate(&repo, ["prepare", "--copy-ignored", "node_modules/"])
        .expect(0);
    assert!(
        out.stdout.contains("carried ignored: 7 files")
            && out.stdout.contains("(6 cloned, 1 symlink)"),
        "{}",
        out.stdout
    );
}

#[test]
fn patterns_with_newlines_and_scratch_with_copy_ignored_are_refused() {
    let env = Env::new();
    let repo = sc::project_with_ignored(&env, "proj");
    let r = env
        .delegate(&repo, ["prepare", "--copy-ignored", "a\nb", "--json"])
        .expect(2);
    assert_eq!(r.json()["error"]["code"], "delegate::bad_pattern");
    let r = env
        .delegate(
            &repo,
            [
                "prepare",
                "--mode",
                "scratch",
                "--copy-ignored",
                ".env",
                "--json",
            ],
        )
        .expect(2);
    assert_eq!(r.json()["error"]["code"], "delegate::bad_pattern");
    assert!(env.private_refs(&repo).is_empty());
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_failure_while_carrying_undoes_the_prepare() {
    let env = Env::new();
    let repo = sc::project_with_ignored(&env, "proj");
    std::fs::write(repo.join("build/huge.o"), vec![1u8; 4 << 20]).unwrap();
    // A workspace root on a 1 MiB tmpfs: the checkout fits, the carried 4 MiB do not.
    let small = env.path().join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        sc::skip(
            "carry: failure undoes the prepare",
            "cannot mount a small tmpfs (needs root)",
        );
        return;
    }
    let _guard = Mount(small.clone());
    let git_dir = repo.join(".git");
    std::fs::write(
        git_dir.join("delegate.toml"),
        format!("[workspace]\nroot = \"{}\"\n", small.display()),
    )
    .unwrap();
    let r = env
        .delegate(
            &repo,
            ["prepare", "-n", "2", "--copy-ignored", "build/", "--json"],
        )
        .expect(3);
    let err = &r.json()["error"];
    assert_eq!(err["code"], "delegate::disk_full", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no space left on device"),
        "{err}"
    );
    assert!(
        env.private_refs(&repo).is_empty(),
        "the baseline ref is removed"
    );
    let batches = git_dir.join("delegate/batches");
    assert!(
        sc::tree_listing(&batches).is_empty(),
        "batch state left: {:?}",
        sc::tree_listing(&batches)
    );
    assert!(
        sc::tree_listing(&small).is_empty(),
        "workspaces left: {:?}",
        sc::tree_listing(&small)
    );
    let wts = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(wts.matches("worktree ").count(), 1, "{wts}");
    assert!(sc::tree_listing(&git_dir.join("worktrees")).is_empty());
    // And the next prepare works.
    std::fs::remove_file(repo.join("build/huge.o")).unwrap();
    env.delegate(&repo, ["prepare", "--copy-ignored", "build/", "--json"])
        .expect(0);
}
