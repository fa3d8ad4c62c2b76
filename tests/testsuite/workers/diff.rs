//! `git delegate diff` and `git delegate path` (design §3.16): a task's
//! changes as `git diff` prints them, computed without writing anything;
//! a task's working folder.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::fixtures::{field_strs, prepare, roots};
use crate::common::procs::{alive, tty_nr};
use crate::common::Env;

/// A repository with a few files, a batch of two tasks; returns
/// (repo, baseline commit, task roots).
fn setup(env: &Env) -> (PathBuf, String, Vec<PathBuf>) {
    let repo = env.repo("proj");
    std::fs::write(
        repo.join("a.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    )
    .unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/b.txt"), "b\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(env, &repo, &["-n", "2"]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let roots = roots(&doc);
    (repo, baseline, roots)
}

/// Edits, an add, a delete, a binary add, an exec bit, a symlink.
fn work(ws: &Path) {
    std::fs::write(
        ws.join("a.txt"),
        "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\n",
    )
    .unwrap();
    std::fs::write(ws.join("new.txt"), "fresh\n").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 3, 255, 0, 7, 8, 9]).unwrap();
    let mut perm = std::fs::metadata(ws.join("run.sh")).unwrap().permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(ws.join("run.sh"), perm).unwrap();
    std::os::unix::fs::symlink("sub/b.txt", ws.join("link")).unwrap();
    std::fs::write(ws.join("sub/b.txt"), "b\nc\n").unwrap();
}

/// git's own diff of the baseline against the workspace as `git add -A`
/// would take it (computed by the test, with the git CLI, on a copy of the
/// workspace's index).
fn git_diff(env: &Env, ws: &Path, baseline: &str, extra: &[&str]) -> String {
    let tree = env.oracle_tree(ws);
    let mut args = vec!["diff", "--no-renames"];
    args.extend_from_slice(extra);
    args.push(baseline);
    args.push(&tree);
    env.git(ws, args)
}

/// What `diff` must leave alone: refs, index bytes, workspace files.
fn fingerprint(env: &Env, repo: &Path, ws: &Path) -> (String, Vec<u8>, String) {
    let refs = env.git(repo, ["for-each-ref"]);
    let git_dir = PathBuf::from(env.git(ws, ["rev-parse", "--absolute-git-dir"]).trim());
    let index = std::fs::read(git_dir.join("index")).unwrap_or_default();
    let mut files = String::new();
    for name in ["a.txt", "new.txt", "blob.bin", "run.sh", "sub/b.txt"] {
        let p = ws.join(name);
        let m = std::fs::metadata(&p).unwrap();
        files.push_str(&format!(
            "{name} {:o} {:?}\n",
            m.permissions().mode(),
            std::fs::read(&p).unwrap()
        ));
    }
    (refs, index, files)
}

#[test]
fn diff_is_byte_equal_to_git_diff_and_changes_nothing() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    let before = fingerprint(&env, &repo, &roots[0]);
    let objects_before = env.git(&repo, ["count-objects", "-v"]);
    let ours = env.delegate(&repo, ["diff", "1"]).expect(0).stdout;
    let names = env
        .delegate(&repo, ["diff", "1", "--name-status"])
        .expect(0)
        .stdout;
    let stat = env
        .delegate(&repo, ["diff", "1", "--stat"])
        .expect(0)
        .stdout;
    let doc = env.delegate(&repo, ["diff", "--json"]).expect(0).json();
    // Nothing was written: refs, the workspace's index, its files, objects.
    assert_eq!(fingerprint(&env, &repo, &roots[0]), before);
    assert_eq!(env.git(&repo, ["count-objects", "-v"]), objects_before);

    assert!(!ours.is_empty());
    // As `git diff` prints it: abbreviated `index` lines, a binary file's
    // `Binary files ... differ` line; with --binary (and --full-index) as
    // git prints those.
    assert_eq!(ours, git_diff(&env, &roots[0], &baseline, &[]));
    assert_has(&ours, "Binary files /dev/null and b/blob.bin differ");
    for flags in [
        &["--binary"][..],
        &["--full-index"],
        &["--full-index", "--binary"],
    ] {
        let mut args = vec!["diff", "1"];
        args.extend_from_slice(flags);
        let with = env.delegate(&repo, &args).expect(0).stdout;
        assert_eq!(
            with,
            git_diff(&env, &roots[0], &baseline, flags),
            "{flags:?}"
        );
    }
    // core.abbrev is git's.
    env.git(&repo, ["config", "core.abbrev", "12"]);
    let twelve = env.delegate(&repo, ["diff", "1"]).expect(0).stdout;
    assert_has(&twelve, "index 2019eda92304..");
    assert_eq!(twelve, git_diff(&env, &roots[0], &baseline, &[]));
    env.git(&repo, ["config", "--unset", "core.abbrev"]);
    assert_eq!(
        names,
        git_diff(&env, &roots[0], &baseline, &["--name-status"])
    );
    assert_eq!(stat, git_diff(&env, &roots[0], &baseline, &["--stat"]));

    assert_eq!(doc["schema"], "git-delegate/v1");
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["name"], "1");
    assert_eq!(tasks[1]["paths"].as_array().unwrap().len(), 0);
    let paths: Vec<(String, String)> = tasks[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("a.txt", "modified"),
        ("blob.bin", "added"),
        ("gone.txt", "deleted"),
        ("link", "added"),
        ("new.txt", "added"),
        ("run.sh", "modified"),
        ("sub/b.txt", "modified"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(paths, want);
}

#[test]
fn diff_of_several_tasks_heads_each_and_filters_paths() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    std::fs::write(roots[1].join("sub/b.txt"), "task two\n").unwrap();
    // A change too wide for 80 columns: git scales the bars.
    let many: String = (0..150).map(|i| format!("line {i}\n")).collect();
    std::fs::write(
        roots[1].join("a-rather-long-file-name-for-the-stat-column.txt"),
        many,
    )
    .unwrap();
    std::fs::write(roots[1].join("a.txt"), "one\n").unwrap();
    let stat = env
        .delegate(&repo, ["diff", "2", "--stat"])
        .expect(0)
        .stdout;
    assert_eq!(stat, git_diff(&env, &roots[1], &baseline, &["--stat"]));
    let all = env.delegate(&repo, ["diff"]).expect(0).stdout;
    let one = git_diff(&env, &roots[0], &baseline, &[]);
    let two = git_diff(&env, &roots[1], &baseline, &[]);
    assert_eq!(all, format!("# task 1\n{one}# task 2\n{two}"));
    let only = env
        .delegate(&repo, ["diff", "1", "--name-status", "--", "sub/"])
        .expect(0)
        .stdout;
    assert_eq!(only, "M\tsub/b.txt\n");
    // `-- PATH` is relative to the current folder, as with git; run from
    // inside a workspace, the batch is found all the same.
    let from_sub = env
        .delegate(&repo.join("sub"), ["diff", "1", "--name-status", "--", "."])
        .expect(0)
        .stdout;
    assert_eq!(from_sub, "M\tsub/b.txt\n");
    let up = env
        .delegate(
            &roots[1].join("sub"),
            ["diff", "1", "--name-status", "--", "../a.txt"],
        )
        .expect(0)
        .stdout;
    assert_eq!(up, "M\ta.txt\n");
    env.delegate(&repo, ["diff", "1", "--", "../x"]).expect(2);
    let unknown = env.delegate(&repo, ["diff", "nope", "--json"]).expect(2);
    assert_eq!(unknown.json()["error"]["code"], "delegate::unknown_task");
    // A task that is no longer open is refused by name, never read.
    env.delegate(&repo, ["apply", "--only", "2", "--json"])
        .expect(0);
    let closed = env.delegate(&repo, ["diff", "2", "--json"]).expect(2);
    assert_eq!(closed.json()["error"]["code"], "delegate::task_not_open");
    // By default, only the open tasks.
    let doc = env.delegate(&repo, ["diff", "--json"]).expect(0).json();
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(doc["tasks"][0]["name"], "1");
}

#[test]
fn path_from_the_source_and_from_inside_a_workspace() {
    let (env, repo) = Env::with_repo("proj");
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/f"), "f\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "sub"]);
    let doc = prepare(&env, &repo.join("sub"), &["-n", "2"]);
    let cwd2 = doc["tasks"][1]["cwd"].as_str().unwrap().to_string();
    let root1 = PathBuf::from(doc["tasks"][0]["root"].as_str().unwrap());
    assert!(cwd2.ends_with("/sub"), "{cwd2}");
    let out = env.delegate(&repo, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Inside a workspace, without TASK: that workspace's task.
    let cwd1 = doc["tasks"][0]["cwd"].as_str().unwrap().to_string();
    let out = env.delegate(&root1, ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    let out = env.delegate(&root1.join("sub"), ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    // Another task named from inside a workspace.
    let out = env.delegate(&root1, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Unknown task: exit 2; the source without TASK: exit 2.
    let r = env.delegate(&repo, ["path", "9", "--json"]).expect(2);
    assert_eq!(r.json()["error"]["code"], "delegate::unknown_task");
    env.delegate(&repo, ["path"]).expect(2);
}

/// Every file under `root` (`.git` left out) with its mode and bytes.
fn tree_bytes(root: &Path) -> Vec<(String, u32, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u32, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.file_name().unwrap() == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if m.is_dir() {
                walk(root, &p, out);
            } else if m.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((rel, 0o120000, target.to_string_lossy().as_bytes().to_vec()));
            } else {
                out.push((
                    rel,
                    m.permissions().mode() & 0o111,
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Three tasks and the user's own edits: task 1 applies, task 2 changes
/// the line task 1 changed (`merge_conflict`), task 3 the line the user
/// changed (`source_changed`). `--source` is what the real apply then
/// writes: its patch, applied with `git apply` to a copy of the source,
/// gives the bytes the real apply leaves; it changes nothing itself.
#[test]
fn diff_source_is_what_apply_writes_and_changes_nothing() {
    let (env, repo) = Env::with_repo("proj");
    let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("a.txt"), &lines).unwrap();
    std::fs::write(repo.join("user.txt"), "mine\n").unwrap();
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(repo.join("old.txt"), "old\n").unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let doc = prepare(&env, &repo, &["-n", "3"]);
    let roots: Vec<PathBuf> = roots(&doc);
    // Task 1: an edit, an add, a binary, an exec bit, a delete, a symlink.
    std::fs::write(
        roots[0].join("a.txt"),
        lines.replace("line 2\n", "line two\n"),
    )
    .unwrap();
    std::fs::write(roots[0].join("new.txt"), "fresh\n").unwrap();
    std::fs::write(roots[0].join("blob.bin"), [0u8, 1, 2, 255, 0, 9]).unwrap();
    let mut perm = std::fs::metadata(roots[0].join("run.sh"))
        .unwrap()
        .permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(roots[0].join("run.sh"), perm).unwrap();
    std::fs::remove_file(roots[0].join("old.txt")).unwrap();
    std::os::unix::fs::symlink("new.txt", roots[0].join("link")).unwrap();
    // Task 2: the same line as task 1, otherwise.
    std::fs::write(
        roots[1].join("a.txt"),
        lines.replace("line 2\n", "line 2 by two\n"),
    )
    .unwrap();
    std::fs::write(roots[1].join("two.txt"), "two\n").unwrap();
    // Task 3: the line the user changes.
    std::fs::write(
        roots[2].join("a.txt"),
        lines.replace("line 15\n", "line 15 by three\n"),
    )
    .unwrap();
    // The user keeps working: the line task 3 changes, and a file no task
    // touches.
    std::fs::write(
        repo.join("a.txt"),
        lines.replace("line 15\n", "line 15 by me\n"),
    )
    .unwrap();
    std::fs::write(repo.join("user.txt"), "mine, changed\n").unwrap();

    let refs_before = env.git(&repo, ["for-each-ref"]);
    let objects_before = env.git(&repo, ["count-objects", "-v"]);
    let index_before = std::fs::read(repo.join(".git/index")).unwrap();
    let files_before = tree_bytes(&repo);
    let plain = env.delegate(&repo, ["diff", "--source"]).expect(0).stdout;
    let run = env
        .delegate(&repo, ["diff", "--source", "--binary"])
        .expect(0);
    let patch = run.stdout.clone();
    assert!(
        run.stderr.contains("note: task 2 left out") && run.stderr.contains("merge_conflict"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("note: task 3 left out") && run.stderr.contains("source_changed"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("task 1 "), "{}", run.stderr);
    let names = env
        .delegate(&repo, ["diff", "--source", "--name-status"])
        .expect(0)
        .stdout;
    assert_eq!(
        names,
        "M\ta.txt\nA\tblob.bin\nA\tlink\nA\tnew.txt\nD\told.txt\nM\trun.sh\n"
    );
    let doc = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(0)
        .json();
    // Tasks named in another order (or twice) are integrated in task order,
    // as apply does.
    let named = env
        .delegate(&repo, ["diff", "--source", "--binary", "3", "2", "1", "2"])
        .expect(0)
        .stdout;
    assert_eq!(named, patch);
    // Nothing was written: refs, objects, the index, the working tree.
    assert_eq!(env.git(&repo, ["for-each-ref"]), refs_before);
    assert_eq!(env.git(&repo, ["count-objects", "-v"]), objects_before);
    assert_eq!(
        std::fs::read(repo.join(".git/index")).unwrap(),
        index_before
    );
    assert_eq!(tree_bytes(&repo), files_before);
    assert_eq!(doc["source"], true);
    let fates: Vec<(String, String, String)> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let paths = field_strs(&doc["paths"], "path");
    assert_eq!(
        paths,
        ["a.txt", "blob.bin", "link", "new.txt", "old.txt", "run.sh"]
    );

    // The oracle: the patch applied by git to a copy of the source.
    let copy = env.path().join("copy");
    let cp = std::process::Command::new("cp")
        .args(["-a"])
        .arg(&repo)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let patch_file = env.path().join("source.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    env.git(&copy, ["add", "-A"]);
    let s_tree = env.git(&copy, ["write-tree"]).trim().to_string();
    env.git(&copy, ["apply", patch_file.to_str().unwrap()]);
    env.git(&copy, ["add", "-A"]);
    let f_tree = env.git(&copy, ["write-tree"]).trim().to_string();
    // git's own diff of the working tree before and after: the same bytes,
    // plain and coloured.
    let git_says = |extra: &[&str]| {
        let mut args = vec!["diff", "--binary", "--no-renames"];
        args.extend_from_slice(extra);
        args.push(&s_tree);
        args.push(&f_tree);
        env.git(&copy, args)
    };
    assert_eq!(patch, git_says(&[]));
    let painted = env
        .delegate(&repo, ["diff", "--source", "--binary", "--color=always"])
        .expect(0)
        .stdout;
    assert_eq!(painted, git_says(&["--color=always"]));
    // Without --binary, as plain `git diff` prints the same change.
    let git_plain = env.git(&copy, ["diff", "--no-renames", &s_tree, &f_tree]);
    assert_eq!(plain, git_plain);

    // The real apply: the same tasks out, the same bytes written.
    let applied = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    let real: Vec<(String, String, String)> = applied["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(fates, real);
    assert_eq!(
        fates.iter().map(|f| f.1.as_str()).collect::<Vec<_>>(),
        ["applied", "conflict", "conflict"]
    );
    assert_eq!(tree_bytes(&repo), tree_bytes(&copy));
    // The user's edits are still there, in both.
    let a = std::fs::read_to_string(repo.join("a.txt")).unwrap();
    assert!(
        a.contains("line two\n") && a.contains("line 15 by me\n"),
        "{a}"
    );
}

/// `--color=always` prints what `git diff --color=always` prints, byte for
/// byte: bold headers, cyan hunk lines with the function name plain, red
/// and green lines, whitespace errors (trailing blanks, a space before a
/// tab, blank lines added at the end) on red; binary patches plain.
#[test]
fn colour_is_byte_equal_to_git_diff_color() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    let ws = &roots[0];
    let ws2 = &roots[1];
    // Whitespace errors of every kind, a CR, blank lines at the end, a
    // hunk below a function line ("two").
    std::fs::write(
        ws2.join("a.txt"),
        "one\ntwo\nthree\nfour\nfive\nsix  \n \tseven\n\tx\ny\r\n\n \nz\n\n\n",
    )
    .unwrap();
    std::fs::write(ws2.join("blank-end.txt"), "x\n\n\n").unwrap();
    std::fs::write(ws2.join("no-newline.txt"), "last").unwrap();
    std::fs::write(ws2.join("space name.txt"), "n\n").unwrap();
    std::fs::write(
        ws2.join("sub/b.txt"),
        (1..=30)
            .map(|i| format!("  item {i}\n"))
            .collect::<String>()
            + "tail\n",
    )
    .unwrap();
    for (i, root) in [ws, ws2].iter().enumerate() {
        let ours = env
            .delegate(&repo, ["diff", &(i + 1).to_string(), "--color=always"])
            .expect(0)
            .stdout;
        let tree = env.oracle_tree(root);
        let want = env.git(
            root,
            ["diff", "--no-renames", "--color=always", &baseline, &tree],
        );
        assert_has(&ours, "\x1b[32m");
        assert_eq!(ours, want, "task {}", i + 1);
    }
    // --stat's graph and a binary file's sizes, as git colours them.
    let ours = env
        .delegate(&repo, ["diff", "1", "--stat", "--color=always"])
        .expect(0)
        .stdout;
    let want = git_diff(&env, ws, &baseline, &["--stat", "--color=always"]);
    assert_has(&ours, "\x1b[31m");
    assert_eq!(ours, want);
    // Piped, colour stays off (`auto`).
    let plain = env.delegate(&repo, ["diff", "1"]).expect(0).stdout;
    assert!(!plain.contains('\x1b'));
    let mut cmd = env.delegate_cmd(&repo);
    cmd.env_remove("NO_COLOR")
        .env("GIT_CONFIG_PARAMETERS", "'color.diff'='always'")
        .args(["diff", "1"]);
    let forced = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert_has(&forced, "\x1b[1mdiff --git");
    // color.diff takes the place of color.ui, as in git.
    let mut cmd = env.delegate_cmd(&repo);
    cmd.env_remove("NO_COLOR")
        .env(
            "GIT_CONFIG_PARAMETERS",
            "'color.ui'='always' 'color.diff'='never'",
        )
        .args(["diff", "1"]);
    let off = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert_eq!(off, plain);
}

/// Write an executable script through a child process. Written from this
/// process, the file's descriptor could be inherited by a child another
/// test thread forks at that moment, and exec'ing the script would then
/// fail with ETXTBSY ("text file busy") while that child lives.
fn write_script(path: &Path, text: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the script");
    assert!(child.wait().expect("wait for sh").success());
}

/// Run `git delegate ARGS` in `dir` on a terminal (`script` opens a pty;
/// `setsid` gives it its own session), with the harness' environment and
/// `extra` on top (`None` removes a variable). Returns what the terminal
/// showed.
fn on_terminal(env: &Env, dir: &Path, args: &str, extra: &[(&str, Option<&str>)]) -> String {
    let base = env.delegate_cmd(dir);
    let mut cmd = std::process::Command::new("setsid");
    cmd.env_clear();
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    for (k, v) in extra {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let line = format!("exec {} {args}", env!("CARGO_BIN_EXE_git-delegate"));
    let out = cmd
        .current_dir(dir)
        .args(["script", "-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run script");
    assert!(
        out.status.success(),
        "{line}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// On a terminal the patch goes through the pager git would choose
/// (GIT_PAGER here, with LESS=FRX and LV=-c set for it), coloured as git
/// colours for a pager; `--no-pager`, `pager.diff = false`, `cat`, a pipe
/// and `--json` page nothing.
#[test]
fn a_terminal_gets_the_pager_git_would_choose() {
    let env = Env::new();
    let (repo, baseline, roots) = setup(&env);
    work(&roots[0]);
    let got = env.path().join("paged");
    let pager = env.path().join("pager.sh");
    write_script(
        &pager,
        &format!(
            "#!/bin/sh\ncat > '{}'\necho \"LESS=$LESS LV=$LV\" > '{}.env'\n",
            got.display(),
            got.display()
        ),
    );
    let pager_s = pager.to_str().unwrap();
    let env_file = env.path().join("paged.env");
    let plain = git_diff(&env, &roots[0], &baseline, &[]);

    on_terminal(&env, &repo, "diff 1", &[("GIT_PAGER", Some(pager_s))]);
    assert_eq!(std::fs::read_to_string(&got).unwrap(), plain);
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        "LESS=FRX LV=-c\n"
    );
    std::fs::remove_file(&got).unwrap();

    // Without NO_COLOR, colour is on for the pager, as git's is; the
    // user's LESS stays theirs; core.pager when GIT_PAGER is unset.
    env.git(&repo, ["config", "core.pager", pager_s]);
    on_terminal(
        &env,
        &repo,
        "diff 1",
        &[("NO_COLOR", None), ("LESS", Some("-S"))],
    );
    let tree = env.oracle_tree(&roots[0]);
    let coloured = env.git(
        &roots[0],
        ["diff", "--no-renames", "--color=always", &baseline, &tree],
    );
    assert_eq!(std::fs::read_to_string(&got).unwrap(), coloured);
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        "LESS=-S LV=-c\n"
    );
    std::fs::remove_file(&got).unwrap();

    // No pager: --no-pager, pager.diff = false, GIT_PAGER=cat (what `git
    // --no-pager delegate` sets); the patch goes to the terminal itself.
    let shown = on_terminal(&env, &repo, "diff 1 --no-pager", &[]);
    assert_has(&shown, "diff --git a/a.txt b/a.txt");
    let shown = on_terminal(&env, &repo, "diff 1", &[("GIT_PAGER", Some("cat"))]);
    assert_has(&shown, "diff --git a/a.txt b/a.txt");
    env.git(&repo, ["config", "pager.diff", "false"]);
    on_terminal(&env, &repo, "diff 1", &[]);
    env.git(&repo, ["config", "--unset", "pager.diff"]);
    on_terminal(&env, &repo, "diff 1 --json", &[]);
    assert!(!got.exists(), "a pager ran");
    // A Ctrl-C while the pager runs is the pager's: the command waits for
    // it (as git does) rather than dying and leaving it on the terminal.
    let ctrl_c = env.path().join("ctrl-c.sh");
    write_script(
        &ctrl_c,
        &format!(
            "#!/bin/sh\ntrap '' INT\nkill -INT 0\nsleep 1\ncat > '{}'\n",
            got.display()
        ),
    );
    on_terminal(
        &env,
        &repo,
        "diff 1",
        &[("GIT_PAGER", Some(ctrl_c.to_str().unwrap()))],
    );
    assert_eq!(std::fs::read_to_string(&got).unwrap(), plain);
    std::fs::remove_file(&got).unwrap();
    // A pager with shell syntax runs through `sh -c`, as git runs it.
    let shell = format!("cat > '{}'", got.display());
    on_terminal(&env, &repo, "diff 1", &[("GIT_PAGER", Some(&shell))]);
    assert_eq!(std::fs::read_to_string(&got).unwrap(), plain);
    std::fs::remove_file(&got).unwrap();
    // Piped: never.
    let mut cmd = env.delegate_cmd(&repo);
    cmd.env("GIT_PAGER", pager_s).args(["diff", "1"]);
    let out = cmd.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), plain);
    assert!(!got.exists(), "a pager ran");
}

fn cwd_is(pid: u32, dir: &Path) -> bool {
    std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir)
}

/// `--source` leaves out what apply leaves out beyond merge conflicts: a
/// task whose workspace has a process on a terminal (which neither stops:
/// it stays alive), a task whose new file an untracked file of the user's
/// is in the way of; keeps `-- PATH`; shows the batch's own source when
/// run from inside a workspace.
#[test]
fn diff_source_leaves_out_what_apply_would_and_filters_paths() {
    let env = Env::new();
    let (repo, _baseline, roots) = setup(&env);
    // Task 2 gets the terminal process.
    let ws3 = roots[1].clone();
    work(&roots[0]);
    std::fs::write(ws3.join("late.txt"), "late\n").unwrap();
    // The user's ignored file where task 1 adds one.
    std::fs::write(repo.join(".gitignore"), "new.txt\n").unwrap();
    std::fs::write(repo.join("new.txt"), "the user's own\n").unwrap();
    let mut term = std::process::Command::new("setsid")
        .args(["script", "-qc", "exec sleep 300", "/dev/null"])
        .current_dir(&ws3)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn script");
    let real = std::fs::canonicalize(&ws3).unwrap();
    let mut pid = 0;
    for _ in 0..600 {
        pid = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|&p| cwd_is(p, &real) && tty_nr(p).is_some_and(|t| t != 0))
            .unwrap_or(0);
        if pid != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_ne!(pid, 0, "no terminal process in the workspace");

    let run = env.delegate(&repo, ["diff", "--source"]).expect(0);
    assert!(
        run.stderr
            .contains("note: task 1 left out, as apply would leave it (would_overwrite_untracked: new.txt (untracked file in the way))"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("note: task 2 left out") && run.stderr.contains("processes_running"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
    let doc = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(0)
        .json();
    assert_eq!(doc["tasks"][0]["reason"], "would_overwrite_untracked");
    assert_eq!(doc["tasks"][1]["reason"], "processes_running");
    assert_eq!(doc["tasks"][1]["status"], "failed");
    assert!(
        doc["tasks"][1]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{pid} sleep 300")),
        "{doc:#}"
    );
    assert_eq!(doc["paths"].as_array().unwrap().len(), 0);
    assert!(alive(pid), "diff --source stopped the terminal process");

    // With the untracked file gone, task 1 applies; `-- PATH` keeps part
    // of its result; from inside a workspace, the same source is shown.
    std::fs::remove_file(repo.join("new.txt")).unwrap();
    std::fs::remove_file(repo.join(".gitignore")).unwrap();
    let names = env
        .delegate(
            &repo,
            ["diff", "--source", "--name-status", "--", "sub", "new.txt"],
        )
        .expect(0)
        .stdout;
    assert_eq!(names, "A\tnew.txt\nM\tsub/b.txt\n");
    let here = env.delegate(&repo, ["diff", "--source"]).expect(0).stdout;
    let there = env
        .delegate(&roots[0], ["diff", "--source"])
        .expect(0)
        .stdout;
    assert_has(&here, "diff --git a/new.txt b/new.txt");
    assert_eq!(here, there);
    // The real apply agrees: task 1 applied, task 2 failed, process alive.
    let applied = env.delegate(&repo, ["apply", "--json"]).expect(1).json();
    assert_eq!(applied["tasks"][0]["status"], "applied");
    assert_eq!(applied["tasks"][1]["reason"], "processes_running");
    assert!(alive(pid));
    let _ = term.kill();
    let _ = term.wait();
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
}

/// An apply killed during its write-back leaves part of its result in the
/// working tree: `diff --source` cannot say what apply would do, says so
/// (`delegate::writeback_pending`, exit 3, as `apply --dry-run`), and
/// changes nothing (the journal stays for the next mutating command).
#[test]
fn diff_source_refuses_while_a_write_back_is_left_over() {
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new();
    let (repo, _baseline, roots) = setup(&env);
    work(&roots[0]);
    let out = env
        .delegate_cmd(&repo)
        .args(["apply", "--json"])
        .env("GIT_DELEGATE_FAULT", "after-rename:2")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    let before = tree_bytes(&repo);
    let run = env
        .delegate(&repo, ["diff", "--source", "--json"])
        .expect(3);
    let doc = run.json();
    assert_eq!(
        doc["error"]["code"], "delegate::writeback_pending",
        "{doc:#}"
    );
    assert!(doc["error"]["pending_writebacks"].is_array(), "{doc:#}");
    assert_eq!(tree_bytes(&repo), before);
    // The plain diff of a task still works: it reads only the workspace.
    env.delegate(&repo, ["diff", "1"]).expect(0);
    // The next apply rolls it back and finishes the job.
    env.delegate(&repo, ["apply"]).expect(0);
}
