//! Terminal behaviour: closed pipes end output quietly, progress appears on
//! a terminal's stderr and never in pipes or with --json, and colour follows
//! --color > NO_COLOR > git's color.ui > terminal detection (design §3).
use crate::common::files::read_bytes;
use crate::common::fixtures::run_with_stdout_closed;
use crate::common::AsEnvUser;

use crate::common::procs::have;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

fn quote(s: &OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"))
}

/// Run the binary with `args` in `dir` inside a pseudo-terminal (stdin,
/// stdout and stderr all the terminal) through `script`, with the test
/// environment plus `extra` (a value of None removes the variable). Returns
/// everything the terminal showed, or None when `script` is missing.
fn in_terminal(
    env: &crate::common::Env,
    dir: &Path,
    args: &[&str],
    extra: &[(&str, Option<&str>)],
) -> Option<String> {
    if !have("script") {
        eprintln!("SKIPPED: `script` is not installed; no pseudo-terminal to test in");
        return None;
    }
    let template = env.delegate_cmd(dir);
    let mut line = quote(template.get_program());
    for a in args {
        line.push(' ');
        line.push_str(&quote(OsStr::new(a)));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qfec", &line, "/dev/null"])
        .current_dir(dir)
        .env_clear()
        .stdin(Stdio::null());
    for (k, v) in template.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("TERM", "xterm");
    for (k, v) in extra {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().expect("run script");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run the binary with pipes for stdout and stderr, with the test
/// environment plus `extra`.
fn piped(
    env: &crate::common::Env,
    dir: &Path,
    args: &[&str],
    extra: &[(&str, Option<&str>)],
) -> crate::common::Run {
    let mut cmd = env.delegate_cmd(dir);
    cmd.args(args);
    for (k, v) in extra {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    crate::common::Run::from(cmd.output().unwrap())
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    for i in 0..3 {
        env.delegate(&repo, ["prepare", "--label", &format!("l{i}")])
            .expect(0);
    }
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["man"],
        &["completions", "bash"],
        &["--help"],
        &["help", "prepare"],
    ] {
        // The reading end is closed before the command writes anything.
        let out = run_with_stdout_closed(&env, &repo, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} wrote to stderr: {stderr}");
    }
    // And as people meet it: `git delegate status | head -1`.
    let bin = env!("CARGO_BIN_EXE_git-delegate");
    for args in ["status", "man", "completions bash"] {
        let out = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "set -o pipefail; {} {args} | head -1",
                    quote(OsStr::new(bin))
                ),
            ])
            .current_dir(&repo)
            .env("NO_COLOR", "1")
            .env_user(&env)
            .env("XDG_DATA_HOME", env.data_home())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args} | head -1: {stderr}");
        assert!(stderr.is_empty(), "{args} | head -1: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    }
}

/// Progress bytes: a carriage return or an escape sequence.
fn has_progress_bytes(s: &str) -> bool {
    s.contains('\r') || s.contains('\x1b')
}

#[test]
fn progress_shows_on_a_terminal_and_never_in_pipes_or_json() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    std::fs::write(repo.join("README"), "changed\n").unwrap();
    // No delay, so that progress shows however fast this machine is.
    let now = [("GIT_DELEGATE_PROGRESS_DELAY", Some("0"))];

    if let Some(screen) = in_terminal(&env, &repo, &["prepare", "-n", "2"], &now) {
        assert!(
            screen.contains("Snapshotting the working tree")
                && screen.contains("Checking out 2 workspaces"),
            "no progress on the terminal: {screen:?}"
        );
        // Erased again: the line is cleared after the last frame.
        assert!(screen.contains("\r\x1b[2K"), "{screen:?}");
        assert!(screen.contains("Prepared batch"), "{screen:?}");
        let screen = in_terminal(&env, &repo, &["prepare", "--json"], &now).unwrap();
        assert!(
            !screen.contains("Snapshotting") && !screen.contains('\x1b'),
            "progress with --json: {screen:?}"
        );
        assert!(screen.contains("\"schema\""), "{screen:?}");
    }

    for args in [&["prepare", "-n", "2"][..], &["prepare", "--json"]] {
        let run = piped(&env, &repo, args, &now);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            !has_progress_bytes(&run.stdout) && !has_progress_bytes(&run.stderr),
            "{args:?} piped:\nstdout {:?}\nstderr {:?}",
            run.stdout,
            run.stderr
        );
    }
    // stdout piped, stderr a terminal, --json: still no progress.
    if have("script") {
        let template = env.delegate_cmd(&repo);
        let out_file = env.path().join("doc.json");
        let line = format!(
            "{} prepare --json > {}",
            quote(template.get_program()),
            quote(out_file.as_os_str())
        );
        let mut cmd = Command::new("script");
        cmd.args(["-qfec", &line, "/dev/null"])
            .current_dir(&repo)
            .env_clear()
            .stdin(Stdio::null());
        for (k, v) in template.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        let out = cmd
            .env("TERM", "xterm")
            .env("GIT_DELEGATE_PROGRESS_DELAY", "0")
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&out.stdout);
        assert!(!screen.contains("Snapshotting"), "{screen:?}");
        let doc: serde_json::Value = serde_json::from_slice(&read_bytes(&out_file)).unwrap();
        assert_eq!(doc["schema"], "git-delegate/v1");
    }
}

/// Whether text carries SGR colour or emphasis.
fn coloured(s: &str) -> bool {
    s.contains("\x1b[1m") || s.contains("\x1b[3") || s.contains("\x1b[0m")
}

#[test]
fn colour_follows_flag_then_no_color_then_color_ui_then_terminal() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    env.delegate(&repo, ["prepare"]).expect(0);
    let unset = ("NO_COLOR", None);
    let set = ("NO_COLOR", Some("1"));
    let status = |args: &[&str], extra: &[(&str, Option<&str>)]| {
        let mut all = vec!["status"];
        all.extend_from_slice(args);
        piped(&env, &repo, &all, extra)
    };

    // Piped, nothing said: no colour.
    assert!(!coloured(&status(&[], &[unset]).stdout));
    // --color=always wins over a pipe and over NO_COLOR.
    assert!(coloured(&status(&["--color=always"], &[unset]).stdout));
    assert!(coloured(&status(&["--color", "always"], &[set]).stdout));
    // color.ui = always wins over the pipe...
    env.git(&repo, ["config", "color.ui", "always"]);
    assert!(coloured(&status(&[], &[unset]).stdout));
    // ...but NO_COLOR wins over color.ui, and --color=never over everything.
    assert!(!coloured(&status(&[], &[set]).stdout));
    assert!(!coloured(&status(&["--color=never"], &[unset]).stdout));
    // `git -c color.ui=never delegate` is honoured too.
    let run = env
        .git_cmd(&repo)
        .env_remove("NO_COLOR")
        .env("PATH", crate::common::path_with_delegate())
        .args(["-c", "color.ui=never", "delegate", "status"])
        .output()
        .unwrap();
    assert!(run.status.success());
    assert!(!coloured(&String::from_utf8_lossy(&run.stdout)));

    // On a terminal: colour unless NO_COLOR or color.ui say no.
    env.git(&repo, ["config", "--unset", "color.ui"]);
    if let Some(screen) = in_terminal(&env, &repo, &["status"], &[unset]) {
        assert!(coloured(&screen), "{screen:?}");
        let screen = in_terminal(&env, &repo, &["status"], &[set]).unwrap();
        assert!(!coloured(&screen), "{screen:?}");
        env.git(&repo, ["config", "color.ui", "false"]);
        let screen = in_terminal(&env, &repo, &["status"], &[unset]).unwrap();
        assert!(
            !coloured(&screen),
            "color.ui=false on a terminal: {screen:?}"
        );
        let screen = in_terminal(&env, &repo, &["status", "--color=always"], &[unset]).unwrap();
        assert!(coloured(&screen), "{screen:?}");
        env.git(&repo, ["config", "--unset", "color.ui"]);
    }

    // Diagnostics (miette) and the parser's messages follow the same rules.
    let err = status(&["nope-batch", "--color=always"], &[set]);
    assert_eq!(err.code, 2);
    assert!(err.stderr.contains('\x1b'), "{:?}", err.stderr);
    let err = status(&["nope-batch"], &[unset]);
    assert!(!err.stderr.contains('\x1b'), "{:?}", err.stderr);
    let err = status(&["--bogus", "--color=always"], &[unset]);
    assert_eq!(err.code, 2);
    assert!(err.stderr.contains('\x1b'), "{:?}", err.stderr);
    let err = status(&["--bogus"], &[unset]);
    assert!(!err.stderr.contains('\x1b'), "{:?}", err.stderr);
    if let Some(screen) = in_terminal(&env, &repo, &["status", "nope-batch"], &[unset]) {
        assert!(
            screen.contains('\x1b'),
            "no colour for a diagnostic on a terminal: {screen:?}"
        );
        let screen = in_terminal(
            &env,
            &repo,
            &["status", "nope-batch", "--color=never"],
            &[unset],
        )
        .unwrap();
        assert!(!screen.contains('\x1b'), "{screen:?}");
        let screen = in_terminal(
            &env,
            &repo,
            &["status", "--bogus", "--color=never"],
            &[unset],
        )
        .unwrap();
        assert!(!screen.contains('\x1b'), "{screen:?}");
    }
}
