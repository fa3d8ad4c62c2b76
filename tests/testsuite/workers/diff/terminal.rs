//! On a terminal: colour as git colours it, and the pager git would
//! choose.

use super::*;
use crate::common::files::read;

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
    assert_eq!(read(&got), plain);
    assert_eq!(read(&env_file), "LESS=FRX LV=-c\n");
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
    assert_eq!(read(&got), coloured);
    assert_eq!(read(&env_file), "LESS=-S LV=-c\n");
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
    assert_eq!(read(&got), plain);
    std::fs::remove_file(&got).unwrap();
    // A pager with shell syntax runs through `sh -c`, as git runs it.
    let shell = format!("cat > '{}'", got.display());
    on_terminal(&env, &repo, "diff 1", &[("GIT_PAGER", Some(&shell))]);
    assert_eq!(read(&got), plain);
    std::fs::remove_file(&got).unwrap();
    // Piped: never.
    let mut cmd = env.delegate_cmd(&repo);
    cmd.env("GIT_PAGER", pager_s).args(["diff", "1"]);
    let out = cmd.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), plain);
    assert!(!got.exists(), "a pager ran");
}
