//! Man pages, completions and help (design §3.8): the committed files are what
//! the current code generates, man and git find the installed pages, bash
//! completes `git-delegate` and `git delegate` (through git's own
//! completion), and the help texts are short with -h and long with --help.
use crate::common::files::read_bytes;
use crate::common::AsEnvUser;

use crate::common::fixtures::checkout;
use crate::common::procs::{git_completion_script, have};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const REGENERATE: &str = "run scripts/generate and commit man/ and completions/";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_git-delegate")
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run git-delegate")
}

#[test]
fn committed_man_pages_are_what_the_code_generates() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(&["man", "--install", tmp.path().to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let mut stale = Vec::new();
    let mut generated = Vec::new();
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let fresh = read_bytes(&tmp.path().join(&name));
        match std::fs::read(checkout().join("man").join(&name)) {
            Ok(committed) if committed == fresh => {}
            Ok(_) => stale.push(format!("man/{name} differs")),
            Err(_) => stale.push(format!("man/{name} is missing")),
        }
        generated.push(name);
    }
    for entry in std::fs::read_dir(checkout().join("man")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !generated.contains(&name) {
            stale.push(format!("man/{name} is no longer generated"));
        }
    }
    assert!(
        stale.is_empty(),
        "committed man pages are stale ({}): {REGENERATE}",
        stale.join(", ")
    );
    generated.sort();
    let expected: Vec<String> = std::iter::once("git-delegate.1".to_string())
        .chain(
            [
                "apply",
                "branch",
                "completions",
                "config",
                "diff",
                "drop",
                "exec",
                "gc",
                "hook",
                "hooks",
                "join",
                "man",
                "path",
                "prepare",
                "refresh",
                "renew",
                "run",
                "status",
                "submit",
                "undo",
            ]
            .iter()
            .map(|s| format!("git-delegate-{s}.1")),
        )
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(generated, expected);
}

#[test]
fn man_prints_the_committed_main_page_byte_for_byte() {
    let out = run(&["man"]);
    assert!(out.status.success());
    let committed = read_bytes(&checkout().join("man/git-delegate.1"));
    assert!(
        out.stdout == committed,
        "`git delegate man` differs from man/git-delegate.1: {REGENERATE}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH COMMANDS",
        ".SH CONFIGURATION",
        ".SH FILES",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(text.contains(section), "main page lacks {section}");
    }
    // Every key of design §9 with its default, and the aliases example.
    for key in [
        "workspace.mode",
        "workspace.root",
        "workspace.copy\\-ignored",
        "lease.ttl",
        "apply.stop\\-processes",
        "apply.strict",
        "gc.keep\\-failed",
        "hooks.stale\\-leases",
        "hooks.forbid\\-commit",
        "lock.timeout",
        "refs/pi\\-delegate/",
        "alias.fan",
        "git\\-worktree",
    ] {
        assert!(text.contains(key), "main page lacks {key}");
    }
    // Nothing that changes from build to build.
    let th = text.lines().find(|l| l.starts_with(".TH ")).unwrap();
    assert_eq!(
        th,
        format!(
            ".TH GIT-DELEGATE 1  \"git-delegate {}\" \"git-delegate manual\"",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn committed_completions_are_what_the_code_generates() {
    let mut stale = Vec::new();
    for (shell, file) in [
        ("bash", "git-delegate.bash"),
        ("zsh", "_git-delegate"),
        ("fish", "git-delegate.fish"),
        ("elvish", "git-delegate.elv"),
        ("powershell", "_git-delegate.ps1"),
    ] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "completions {shell}: {out:?}");
        assert!(!out.stdout.is_empty());
        match std::fs::read(checkout().join("completions").join(file)) {
            Ok(committed) if committed == out.stdout => {}
            Ok(_) => stale.push(format!("completions/{file} differs")),
            Err(_) => stale.push(format!("completions/{file} is missing")),
        }
    }
    assert!(
        stale.is_empty(),
        "committed completions are stale ({}): {REGENERATE}",
        stale.join(", ")
    );
}

/// A folder laid out like an installation prefix: `bin/git-delegate` (a
/// hard link to, or copy of, the built binary) and, after
/// `man --install`, `share/man/man1/`.
fn install_prefix(env: &crate::common::Env) -> PathBuf {
    let prefix = env.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let exe = prefix.join("bin/git-delegate");
    if std::fs::hard_link(bin(), &exe).is_err() {
        // By `cp`, as `common::procs::reachable_binary` copies (ETXTBSY).
        let cp = Command::new("cp").arg(bin()).arg(&exe).status().unwrap();
        assert!(cp.success());
    }
    prefix
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

#[test]
fn man_install_defaults_to_share_man_beside_the_executable_and_man_finds_it() {
    let env = crate::common::Env::new();
    let prefix = install_prefix(&env);
    let path = path_with(&prefix.join("bin"));
    let out = Command::new(prefix.join("bin/git-delegate"))
        .args(["man", "--install"])
        .env("PATH", &path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = prefix.join("share/man/man1/git-delegate.1");
    assert_eq!(
        read_bytes(&page),
        read_bytes(&checkout().join("man/git-delegate.1"))
    );
    assert!(prefix
        .join("share/man/man1/git-delegate-prepare.1")
        .is_file());

    if !have("man") {
        eprintln!("SKIPPED: `man` is not installed; cannot check that man finds the pages");
        return;
    }
    // man-db maps PATH entries X/bin to X/share/man: no MANPATH needed.
    let found = Command::new("man")
        .args(["-w", "git-delegate"])
        .env("PATH", &path)
        .env_remove("MANPATH")
        .output()
        .unwrap();
    assert!(found.status.success(), "{found:?}");
    assert_eq!(
        PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()),
        page
    );
    // With MANPATH naming the folder, too.
    let found = Command::new("man")
        .args(["-w", "git-delegate-prepare"])
        .env("MANPATH", prefix.join("share/man"))
        .output()
        .unwrap();
    assert_eq!(
        PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()),
        prefix.join("share/man/man1/git-delegate-prepare.1"),
        "{found:?}"
    );
    // `git help delegate` and `git delegate --help` (which git rewrites into
    // `git help delegate`) open the page.
    for args in [&["help", "delegate"][..], &["delegate", "--help"][..]] {
        let out = env
            .git_cmd(env.path())
            .args(args)
            .env("PATH", &path)
            .env_remove("MANPATH")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .env("MAN_KEEP_FORMATTING", "0")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("Hand one exact snapshot"),
            "git {args:?} did not show the manual:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn help_is_short_with_h_and_long_with_help() {
    let short = String::from_utf8(run(&["-h"]).stdout).unwrap();
    let long = String::from_utf8(run(&["--help"]).stdout).unwrap();
    assert!(short.contains("Commands:") && short.contains("prepare"));
    assert!(!short.contains("Exit status"), "{short}");
    assert!(long.contains("Exit status") && long.contains("Workflow:"));
    assert!(short.lines().count() < long.lines().count());

    let help_prepare = run(&["help", "prepare"]);
    let prepare_help = run(&["prepare", "--help"]);
    let prepare_h = run(&["prepare", "-h"]);
    assert!(help_prepare.status.success() && prepare_help.status.success());
    assert_eq!(help_prepare.stdout, prepare_help.stdout);
    let long = String::from_utf8(prepare_help.stdout).unwrap();
    let short = String::from_utf8(prepare_h.stdout).unwrap();
    assert!(long.contains("Examples:") && long.contains("git config alias.fan"));
    assert!(!short.contains("Examples:"), "{short}");
    // Every option name and type is still there.
    for opt in [
        "--count <N>",
        "--mode <MODE>",
        "--label <TEXT>",
        "--ttl <DURATION>",
        "--owner-pid <PID>",
        "--forbid-commit",
        "--json",
    ] {
        assert!(short.contains(opt), "prepare -h lacks {opt}:\n{short}");
    }
    // The global --color is shown once, in the top-level help, not as the
    // same block in every subcommand's help; every subcommand takes it.
    for top in [run(&["-h"]), run(&["--help"])] {
        let text = String::from_utf8_lossy(&top.stdout).into_owned();
        assert_eq!(text.matches("--color <WHEN>").count(), 1, "{text}");
    }
    for sub in [
        "apply",
        "status",
        "gc",
        "drop",
        "renew",
        "hook",
        "hooks",
        "man",
        "completions",
    ] {
        let out = run(&["help", sub]);
        assert!(out.status.success(), "help {sub}");
        for help in [out.stdout.clone(), run(&[sub, "-h"]).stdout] {
            let text = String::from_utf8_lossy(&help).into_owned();
            assert!(
                !text.contains("--color"),
                "{sub}'s help repeats --color:\n{text}"
            );
        }
        let colored = run(&[sub, "--color", "never", "--help"]);
        assert!(colored.status.success(), "{sub} --color never: {colored:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Examples:"),
            "help {sub} has no examples"
        );
    }
}

/// Run `bash` with git's completion and ours loaded, and a function `t`
/// that completes a command line the way readline would and prints COMPREPLY
/// joined with `|`.
fn bash_complete(env: &crate::common::Env, lines: &[&str]) -> Option<Vec<String>> {
    if !have("bash") {
        eprintln!("SKIPPED: bash is not installed");
        return None;
    }
    let Some(git_completion) = git_completion_script() else {
        eprintln!("SKIPPED: git's bash completion (git-completion.bash) is not on this machine");
        return None;
    };
    let mut script = format!(
        "source '{}'\nsource '{}'\n",
        git_completion.display(),
        checkout().join("completions/git-delegate.bash").display()
    );
    script.push_str(
        r#"t() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    local first="${COMP_WORDS[0]}"
    if [ "$first" = git ]; then __git_wrap__git_main; else _git__delegate "$first" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; fi
    local IFS='|'; echo "${COMPREPLY[*]}"
}
"#,
    );
    for line in lines {
        script.push_str(&format!("t {line}\n"));
    }
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .current_dir(env.path())
        .env_user(env)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn bash_completes_git_delegate_and_git_delegate_through_gits_completion() {
    let env = crate::common::Env::new();
    env.git(
        env.path(),
        ["config", "--global", "alias.fan", "delegate prepare -n 4"],
    );
    let Some(got) = bash_complete(
        &env,
        &[
            "git delegate pr",
            "git delegate ''",
            "git delegate prepare --la",
            "git delegate prepare --mode ''",
            "git delegate --color=al",
            "git delegate hooks ''",
            "git delegate hooks install --f",
            "git -C /tmp delegate st",
            "git fan --ow",
            "git-delegate pr",
            "git-delegate apply --d",
            "git-delegate completions ''",
        ],
    ) else {
        return;
    };
    let sets: Vec<Vec<&str>> = got.iter().map(|l| l.split('|').collect()).collect();
    // Through git: finished words carry their own space (git uses -o nospace).
    assert_eq!(sets[0], ["prepare "]);
    for sub in [
        "prepare ",
        "apply ",
        "status ",
        "gc ",
        "drop ",
        "renew ",
        "hook ",
        "hooks ",
        "man ",
        "completions ",
    ] {
        assert!(sets[1].contains(&sub), "{sub:?} not in {:?}", sets[1]);
    }
    assert!(!sets[1].contains(&"snapshot "), "hidden plumbing offered");
    assert_eq!(sets[2], ["--label "]);
    assert_eq!(sets[3], ["worktree ", "scratch "]);
    assert_eq!(sets[4], ["always "]);
    assert!(sets[5].contains(&"install "), "{:?}", sets[5]);
    assert_eq!(sets[6], ["--force "]);
    assert_eq!(sets[7], ["status "]);
    // An alias of `delegate prepare ...` completes prepare's options.
    assert_eq!(sets[8], ["--owner-pid "]);
    // The executable itself.
    assert_eq!(sets[9], ["prepare"]);
    assert_eq!(sets[10], ["--discard", "--dry-run"]);
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        assert!(sets[11].contains(&shell), "{:?}", sets[11]);
    }
}

/// Drive an interactive bash in a pseudo-terminal (through `script`), type
/// a partial command line and TAB, and return what the terminal showed.
#[test]
fn bash_completes_subcommands_and_options_in_an_interactive_shell() {
    if !have("script") || !have("bash") {
        eprintln!("SKIPPED: `script` or bash is not installed; no pseudo-terminal to test in");
        return;
    }
    let Some(git_completion) = git_completion_script() else {
        eprintln!("SKIPPED: git's bash completion (git-completion.bash) is not on this machine");
        return;
    };
    let env = crate::common::Env::new();
    let rc = env.path().join("bashrc");
    std::fs::write(
        &rc,
        format!(
            "PS1='READY> '\nsource '{}'\nsource '{}'\n",
            git_completion.display(),
            checkout().join("completions/git-delegate.bash").display()
        ),
    )
    .unwrap();
    let mut child = Command::new("script")
        .args([
            "-qfc",
            &format!("bash --noprofile --rcfile '{}' -i", rc.display()),
            "/dev/null",
        ])
        .current_dir(env.path())
        .env_user(&env)
        .env("TERM", "dumb")
        .env("INPUTRC", "/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (seen, reader) = crate::common::procs::read_in_background(stdout);
    let wait_for = |needle: &str, from: usize| -> Option<usize> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            {
                let s = seen.lock().unwrap();
                let text = String::from_utf8_lossy(&s[from.min(s.len())..]).into_owned();
                if let Some(i) = text.find(needle) {
                    return Some(from + i + needle.len());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    };
    let transcript = || String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();

    let mut at =
        wait_for("READY> ", 0).unwrap_or_else(|| panic!("no prompt from bash:\n{}", transcript()));
    for (typed, expect) in [
        ("git delegate pre\t", "git delegate prepare "),
        ("--own\t", "--owner-pid "),
    ] {
        stdin.write_all(typed.as_bytes()).unwrap();
        stdin.flush().unwrap();
        at = wait_for(expect, at).unwrap_or_else(|| {
            panic!(
                "typing {typed:?} did not complete to {expect:?}:\n{:?}",
                transcript()
            )
        });
    }
    // Clear the line, then leave.
    stdin.write_all(b"\x15exit\n").unwrap();
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
    let _ = reader.join();
}
