//! apply reads the source only at the paths the proposals touch (module
//! `touched`), and where that could differ from merging with a snapshot of
//! the whole source it takes the whole snapshot. Every scenario here runs
//! twice, once forced onto the whole snapshot
//! (`GIT_DELEGATE_FULL_SOURCE_SNAPSHOT`), and both runs must give the same
//! statuses, reasons, conflicts, written paths and working tree.

use crate::common::files::read;
use crate::common::files::read_bytes;
use crate::common::fixtures::task_root;

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::files::{lines, with_line};
use crate::common::fixtures::{prepare, roots};
use crate::common::Env;
use serde_json::Value;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Every name, type, mode bit and byte below `dir`, `.git` left out.
fn digest(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if d == dir && e.file_name() == ".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let what = if md.file_type().is_symlink() {
                format!("L {}", std::fs::read_link(&p).unwrap().display())
            } else if md.is_dir() {
                stack.push(p.clone());
                "D".to_string()
            } else {
                format!(
                    "F {:o} {}",
                    md.mode() & 0o111,
                    String::from_utf8_lossy(&read_bytes(&p))
                )
            };
            out.push((rel, what));
        }
    }
    out.sort();
    out
}

/// What must agree between the two runs.
fn outcome(code: i32, doc: &Value, repo: &Path) -> (i32, Vec<Value>, Value, Vec<(String, String)>) {
    let tasks = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t["name"], "status": t["status"], "reason": t["reason"],
                "conflicts": t["conflicts"], "proposed": t["proposed_paths"],
                "applied": t["applied_paths"],
            })
        })
        .collect();
    (code, tasks, doc["applied_paths"].clone(), digest(repo))
}

/// A repository with `f.txt` (20 lines), `g.txt`, `tool.sh`, `link`, a
/// folder `d/` and `.gitignore` ignoring `*.log`; `setup` makes the
/// baseline's dirty state, `work` edits the two workspaces, `meanwhile` the
/// source after prepare. Returns the outcome of `apply --json ARGS`.
fn scenario(
    full: bool,
    args: &[&str],
    setup: &dyn Fn(&Env, &Path),
    work: &dyn Fn(&[PathBuf]),
    meanwhile: &dyn Fn(&Env, &Path),
) -> (i32, Vec<Value>, Value, Vec<(String, String)>) {
    let (env, repo) = Env::with_repo("proj");
    write(&repo.join("f.txt"), &lines(20));
    write(&repo.join("g.txt"), "g\n");
    write(&repo.join("tool.sh"), "#!/bin/sh\n");
    write(&repo.join("d/inner.txt"), "inner\n");
    write(&repo.join(".gitignore"), "*.log\n");
    symlink("g.txt", repo.join("link")).unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "base"]);
    setup(&env, &repo);
    let doc = prepare(&env, &repo, &["-n", "2"]);
    let ws: Vec<PathBuf> = roots(&doc);
    work(&ws);
    meanwhile(&env, &repo);
    let index_before = read_bytes(&repo.join(".git/index"));
    let mut cmd = env.delegate_cmd(&repo);
    cmd.arg("apply").arg("--json").args(args);
    if full {
        cmd.env("GIT_DELEGATE_FULL_SOURCE_SNAPSHOT", "1");
    }
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(read_bytes(&repo.join(".git/index")), index_before);
    outcome(code, &doc, &repo)
}

fn both_ways(
    args: &[&str],
    setup: &dyn Fn(&Env, &Path),
    work: &dyn Fn(&[PathBuf]),
    meanwhile: &dyn Fn(&Env, &Path),
) -> (i32, Vec<Value>, Value, Vec<(String, String)>) {
    let touched = scenario(false, args, setup, work, meanwhile);
    let full = scenario(true, args, setup, work, meanwhile);
    assert_eq!(
        touched, full,
        "reading the touched paths only differs from the whole snapshot"
    );
    touched
}

fn nothing(_: &Env, _: &Path) {}

fn statuses(r: &(i32, Vec<Value>, Value, Vec<(String, String)>)) -> Vec<String> {
    r.1.iter()
        .map(|t| {
            format!(
                "{} {}",
                t["status"].as_str().unwrap(),
                t["reason"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

#[test]
fn same_and_other_lines_untouched_files_and_strict() {
    let work = |ws: &[PathBuf]| {
        write(&ws[0].join("f.txt"), &with_line(&lines(20), 2, "task one"));
        write(&ws[1].join("f.txt"), &with_line(&lines(20), 18, "task two"));
        write(&ws[1].join("new/deep/file.txt"), "new\n");
    };
    // The user edits another line of f.txt, the line task 2 edits in
    // another way, and files no task touches.
    let meanwhile = |_: &Env, repo: &Path| {
        let mut t = with_line(&lines(20), 10, "user ten");
        t = with_line(&t, 18, "user eighteen");
        write(&repo.join("f.txt"), &t);
        write(&repo.join("g.txt"), "user g\n");
        write(&repo.join("elsewhere.txt"), "untracked\n");
        std::fs::remove_file(repo.join("d/inner.txt")).unwrap();
    };
    let r = both_ways(&[], &nothing, &work, &meanwhile);
    assert_eq!(statuses(&r), ["applied -", "conflict source_changed"]);
    let r = both_ways(&["--strict"], &nothing, &work, &meanwhile);
    assert_eq!(
        statuses(&r),
        ["conflict source_changed", "conflict source_changed"]
    );
}

#[test]
fn deletions_renames_and_additions_in_the_source() {
    let work = |ws: &[PathBuf]| {
        write(&ws[0].join("f.txt"), &with_line(&lines(20), 2, "task one"));
        write(&ws[1].join("added.txt"), "task's\n");
        std::fs::remove_file(ws[1].join("g.txt")).unwrap();
    };
    // The user renames f.txt (the merge follows it, with the whole
    // snapshot), adds added.txt too, and edits g.txt the task deletes.
    let meanwhile = |env: &Env, repo: &Path| {
        env.git(repo, ["mv", "f.txt", "renamed.txt"]);
        write(&repo.join("added.txt"), "user's\n");
        write(&repo.join("g.txt"), "user g\n");
    };
    let r = both_ways(&[], &nothing, &work, &meanwhile);
    assert_eq!(statuses(&r)[1], "conflict source_changed");
    // Deleted by the user, edited by the task; same addition on both sides.
    let work = |ws: &[PathBuf]| {
        write(&ws[0].join("f.txt"), &with_line(&lines(20), 2, "task one"));
        write(&ws[1].join("same.txt"), "same\n");
    };
    let meanwhile = |_: &Env, repo: &Path| {
        std::fs::remove_file(repo.join("f.txt")).unwrap();
        write(&repo.join("same.txt"), "same\n");
    };
    both_ways(&[], &nothing, &work, &meanwhile);
    // The task renames f.txt (and edits it); the user edits another line of
    // it in place: the rename carries the user's line along.
    let work = |ws: &[PathBuf]| {
        std::fs::remove_file(ws[0].join("f.txt")).unwrap();
        write(
            &ws[0].join("moved.txt"),
            &with_line(&lines(20), 2, "task one"),
        );
    };
    let meanwhile = |_: &Env, repo: &Path| {
        write(
            &repo.join("f.txt"),
            &with_line(&lines(20), 19, "user nineteen"),
        );
    };
    let r = both_ways(&[], &nothing, &work, &meanwhile);
    assert_eq!(statuses(&r)[0], "applied -");
    let moved =
        r.3.iter()
            .find(|(p, _)| p == "moved.txt")
            .map(|(_, w)| w.clone());
    let both = with_line(&with_line(&lines(20), 2, "task one"), 19, "user nineteen");
    assert_eq!(moved, Some(format!("F 0 {both}")));
    assert!(!r.3.iter().any(|(p, _)| p == "f.txt"), "{:?}", r.3);
}

#[test]
fn things_in_the_way_folders_files_ignored_and_links() {
    let work = |ws: &[PathBuf]| {
        write(&ws[0].join("out.log"), "task log\n");
        write(&ws[0].join("x/y.txt"), "task\n");
        write(&ws[1].join("z.txt"), "task z\n");
        std::fs::remove_file(ws[1].join("link")).unwrap();
        symlink("f.txt", ws[1].join("link")).unwrap();
    };
    // An ignored file, a file where the task needs a folder, a folder where
    // the task puts a file, and the symlink retargeted by the user too.
    let meanwhile = |_: &Env, repo: &Path| {
        write(&repo.join("out.log"), "user log\n");
        write(&repo.join("x"), "a file\n");
        write(&repo.join("z.txt/inside.txt"), "folder\n");
        std::fs::remove_file(repo.join("link")).unwrap();
        symlink("tool.sh", repo.join("link")).unwrap();
    };
    let r = both_ways(&[], &nothing, &work, &meanwhile);
    assert!(
        statuses(&r).iter().all(|s| s.starts_with("conflict")),
        "{r:?}"
    );
    // The symlink retargeted on both sides, alone (no folder in the way).
    let work_link = |ws: &[PathBuf]| {
        std::fs::remove_file(ws[0].join("link")).unwrap();
        symlink("f.txt", ws[0].join("link")).unwrap();
        write(&ws[1].join("f.txt"), &with_line(&lines(20), 3, "task"));
    };
    let user_link = |_: &Env, repo: &Path| {
        std::fs::remove_file(repo.join("link")).unwrap();
        symlink("tool.sh", repo.join("link")).unwrap();
    };
    let r = both_ways(&[], &nothing, &work_link, &user_link);
    assert_eq!(statuses(&r), ["conflict source_changed", "applied -"]);
    // A file the source ignores (by a .gitignore the user added) where a
    // task adds one.
    let work_new = |ws: &[PathBuf]| write(&ws[0].join("d/new.txt"), "task\n");
    let user_ignored = |_: &Env, repo: &Path| {
        write(&repo.join("d/.gitignore"), "new.txt\n");
        write(&repo.join("d/new.txt"), "user's, ignored\n");
    };
    let r = both_ways(&[], &nothing, &work_new, &user_ignored);
    assert_eq!(statuses(&r)[0], "conflict would_overwrite_untracked");
}

#[test]
fn modes_staged_states_and_filters() {
    // Baseline: a staged edit and CRLF text.
    let setup = |env: &Env, repo: &Path| {
        write(&repo.join(".gitattributes"), "*.crlf text eol=crlf\n");
        write(&repo.join("w.crlf"), "a\r\nb\r\nc\r\nd\r\ne\r\n");
        env.git(repo, ["add", ".gitattributes", "w.crlf"]);
        env.git(repo, ["commit", "-q", "-m", "crlf"]);
        write(&repo.join("g.txt"), "staged g\n");
        env.git(repo, ["add", "g.txt"]);
    };
    let work = |ws: &[PathBuf]| {
        write(&ws[0].join("w.crlf"), "A\r\nb\r\nc\r\nd\r\ne\r\n");
        write(&ws[0].join("tool.sh"), "#!/bin/sh\necho task\n");
        write(&ws[1].join("g.txt"), "task g\n");
    };
    // CRLF edits merge; an exec bit the user set; g.txt no longer tracked
    // (still on disk, not ignored: still in the source).
    let meanwhile = |env: &Env, repo: &Path| {
        write(&repo.join("w.crlf"), "a\r\nb\r\nc\r\nd\r\nE\r\n");
        let p = repo.join("tool.sh");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        env.git(repo, ["rm", "-q", "--cached", "g.txt"]);
    };
    let r = both_ways(&[], &setup, &work, &meanwhile);
    assert_eq!(statuses(&r), ["applied -", "applied -"]);

    // git told not to trust exec bits (or symlinks) on disk: the user's
    // chmod of a touched file is no change of the source.
    let setup = |env: &Env, repo: &Path| {
        env.git(repo, ["config", "core.fileMode", "false"]);
    };
    let work = |ws: &[PathBuf]| write(&ws[0].join("tool.sh"), "#!/bin/sh\necho task\n");
    let meanwhile = |_: &Env, repo: &Path| {
        let p = repo.join("tool.sh");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let r = both_ways(&[], &setup, &work, &meanwhile);
    assert_eq!(statuses(&r), ["applied -", "no_changes -"]);
    // The file keeps its permission bits (design §7 "Modes"): the result's
    // exec bit is S's as git sees it (the bit is not trusted), so the
    // user's chmod on disk stays.
    let tool =
        r.3.iter()
            .find(|(p, _)| p == "tool.sh")
            .map(|(_, w)| w.as_str());
    assert_eq!(tool, Some("F 111 #!/bin/sh\necho task\n"));

    // An intent-to-add entry on a touched path.
    let setup = |env: &Env, repo: &Path| {
        write(&repo.join("ita.txt"), "ita\n");
        env.git(repo, ["add", "-N", "ita.txt"]);
    };
    let work = |ws: &[PathBuf]| write(&ws[1].join("ita.txt"), "task ita\n");
    let meanwhile = |_: &Env, repo: &Path| write(&repo.join("ita.txt"), "ita\nuser\n");
    both_ways(&[], &setup, &work, &meanwhile);
}

#[test]
fn a_file_elsewhere_that_cannot_be_read_no_longer_blocks_apply() {
    // A clean filter that fails, on a file no task touches: the whole
    // snapshot cannot be taken, the touched paths can.
    let (env, repo) = Env::with_repo("proj");
    write(&repo.join("f.txt"), &lines(5));
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "base"]);
    // The user's driver, there at prepare (design §3.18: only those run).
    env.git(&repo, ["config", "filter.boom.clean", "false"]);
    env.git(&repo, ["config", "filter.boom.required", "true"]);
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    write(&ws.join("f.txt"), &with_line(&lines(5), 1, "task"));
    write(&repo.join(".gitattributes"), "boom.txt filter=boom\n");
    write(&repo.join("boom.txt"), "cannot be cleaned\n");
    let mut cmd = env.delegate_cmd(&repo);
    cmd.args(["apply", "--json"])
        .env("GIT_DELEGATE_FULL_SOURCE_SNAPSHOT", "1");
    let out = cmd.output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "the whole snapshot read boom.txt"
    );
    let run = env.delegate(&repo, ["apply", "--json"]).expect(0).json();
    assert_eq!(run["tasks"][0]["status"], "applied");
    assert_eq!(read(&repo.join("f.txt")), with_line(&lines(5), 1, "task"));
}
