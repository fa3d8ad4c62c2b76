//! Dynamic completion (design §3.8): the hidden `git delegate __complete`
//! names the open batches (labels and ids) and task names, and says "no
//! file names" for values that are none (`--ttl`); the committed bash script
//! asks it, also through git's own bash completion (`git delegate <TAB>`),
//! which an interactive bash in a pseudo-terminal proves.

use crate::common::AsEnvUser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::path_with_delegate;
use crate::common::procs::{git_completion_script, have};
use crate::common::{Env, Run};

fn complete(env: &Env, dir: &Path, words: &[&str]) -> Run {
    let mut args = vec!["__complete", "--"];
    args.extend_from_slice(words);
    env.delegate(dir, args)
}

fn lines(run: &Run) -> Vec<&str> {
    run.stdout.lines().collect()
}

/// A repository with batch `alpha` (tasks lint, docs) and batch `beta`
/// (tasks 1, 2, 3); returns the repository and the two ids.
fn two_batches(env: &Env) -> (PathBuf, String, String) {
    let repo = env.repo("src");
    let id = |args: &[&str]| {
        let mut all = vec!["prepare", "--json"];
        all.extend_from_slice(args);
        env.delegate(&repo, all).expect(0).json()["batch"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let alpha = id(&["lint", "docs", "--label", "alpha"]);
    let beta = id(&["-n", "3", "--label", "beta"]);
    (repo, alpha, beta)
}

/// Tab after `line` (a `--ttl` value) offers no file name (git's
/// completion falls back to them); `done` marks the end of the output.
#[track_caller]
fn assert_no_file_names(pty: &mut Pty, line: &str, done: &str) {
    let shown = pty.tab(line, done);
    assert!(
        !shown.contains("zzfile-unique"),
        "--ttl offered a file name:\n{shown:?}"
    );
}

#[test]
fn complete_names_open_batches_and_tasks_and_no_files_for_values_that_are_none() {
    let env = Env::new();
    let (repo, alpha, beta) = two_batches(&env);
    let ids = {
        let mut v = [alpha.clone(), beta.clone()];
        // Oldest first, as `status` lists them (created in this order, but
        // in the same second the ids break the tie).
        let created = |id: &str| {
            let doc = env
                .delegate(&repo, ["status", "--json", id])
                .expect(0)
                .json();
            doc["batches"][0]["created_at"]
                .as_str()
                .unwrap()
                .to_string()
        };
        v.sort_by_key(|id| (created(id), id.clone()));
        v
    };

    // A BATCH: labels, then ids.
    for words in [
        &["apply", ""][..],
        &["status", ""],
        &["drop", ""],
        &["renew", ""],
        &["diff", "--batch", ""],
        &["path", "--batch="],
        &["--color", "never", "apply", ""],
    ] {
        let run = complete(&env, &repo, words).expect(0);
        let mut expected: Vec<&str> = ids
            .iter()
            .map(|id| if *id == alpha { "alpha" } else { "beta" })
            .collect();
        expected.extend(ids.iter().map(String::as_str));
        assert_eq!(lines(&run), expected, "{words:?}");
    }
    // Filtered by what is typed, shell quoting left out; an id by its prefix.
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "'al"]).expect(0)),
        ["alpha"]
    );
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "'alpha'", "--only", "l"]).expect(0)),
        ["lint"]
    );
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "al"]).expect(0)),
        ["alpha"]
    );
    assert_eq!(
        lines(&complete(&env, &repo, &["drop", &beta[..6]]).expect(0)),
        [beta.as_str()]
    );

    // Task names of the batch on the command line.
    for (words, expected) in [
        (&["apply", "alpha", "--only", ""][..], &["lint", "docs"][..]),
        (&["apply", "beta", "--discard", ""], &["1", "2", "3"]),
        (&["apply", "beta", "--only", "=", ""], &["1", "2", "3"]),
        (&["apply", "alpha", "--only=d"], &["docs"]),
        (&["diff", "--batch", "alpha", ""], &["lint", "docs"]),
        (&["diff", "--batch=beta", "1", ""], &["1", "2", "3"]),
        (&["path", "--batch", "beta", "2"], &["2"]),
    ] {
        let run = complete(&env, &repo, words).expect(0);
        assert_eq!(lines(&run), expected, "{words:?}");
    }

    // No batch named among several: every open batch's tasks, oldest
    // batch first.
    let mut all = vec!["lint", "docs", "1", "2", "3"];
    if ids[0] == beta {
        all.rotate_left(2);
    }
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "--only", ""]).expect(0)),
        all
    );

    // Values that are no file names: exit 0, nothing offered.
    for words in [
        &["prepare", "--ttl", ""][..],
        &["prepare", "--label", "x"],
        &["prepare", "--owner-pid", ""],
        &["prepare", "-n", ""],
        &["renew", "--ttl", ""],
    ] {
        let run = complete(&env, &repo, words).expect(0);
        assert_eq!(run.stdout, "", "{words:?}");
    }

    // Elsewhere the static script completes: exit 1, nothing printed.
    for words in [
        &[""][..],
        &["ap"],
        &["apply", "--d"],
        &["prepare", ""],
        &["prepare", "--mode", ""],
        &["completions", ""],
        &["hooks", ""],
        &["man", "--install", ""],
        &["diff", "--", ""],
    ] {
        let run = complete(&env, &repo, words).expect(1);
        assert_eq!(run.stdout, "", "{words:?}");
        assert_eq!(run.stderr, "", "{words:?}");
    }

    // Outside a repository: nothing to offer, and no error.
    let run = complete(&env, env.path(), &["apply", ""]).expect(0);
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    // The hidden command is not offered as a subcommand.
    let run = complete(&env, &repo, &["__c"]).expect(1);
    assert_eq!(run.stdout, "");
}

/// Skip loudly, or fail under CI (where .ci/run provides what is missing).
fn skip(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why} (CI=true: .ci/run must provide it)");
    }
    eprintln!("SKIPPED: {why}");
}

fn committed(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file)
}

/// An interactive shell in a pseudo-terminal (through `script`), driven by
/// typing and waiting for what the terminal shows.
struct Pty {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    at: usize,
}

impl Pty {
    fn spawn(shell: &str, env: &Env, dir: &Path, vars: &[(&str, &std::ffi::OsStr)]) -> Pty {
        let mut cmd = Command::new("script");
        cmd.args(["-qfc", shell, "/dev/null"])
            .current_dir(dir)
            .env("PATH", path_with_delegate())
            .env_user(env)
            .env("XDG_DATA_HOME", env.data_home())
            .env("TERM", "dumb")
            .env("INPUTRC", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (seen, reader) = crate::common::procs::read_in_background(stdout);
        let mut pty = Pty {
            child,
            stdin,
            seen,
            reader: Some(reader),
            at: 0,
        };
        pty.wait_for("READY> ");
        pty
    }

    fn transcript(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Wait (generously) until the terminal shows `needle` after what was
    /// already matched.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            {
                let s = self.seen.lock().unwrap();
                let text = String::from_utf8_lossy(&s[self.at.min(s.len())..]).into_owned();
                if let Some(i) = text.find(needle) {
                    self.at += i + needle.len();
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the terminal never showed {needle:?}:\n{:?}",
            self.transcript()
        );
    }

    fn type_(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Type `text` and wait until the terminal shows `expect`.
    fn expect(&mut self, text: &str, expect: &str) {
        self.type_(text);
        self.wait_for(expect);
    }

    /// Type `partial` and TAB, clear the line and print a marker: what the
    /// terminal showed in between (the completion, or none).
    fn tab(&mut self, partial: &str, marker: &str) -> String {
        let before = self.at;
        self.type_(&format!("{partial}\t\x15echo {marker}\n"));
        self.wait_for(&format!("{marker}\r\n"));
        let s = self.seen.lock().unwrap();
        String::from_utf8_lossy(&s[before..self.at]).into_owned()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\x15exit\n");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// A repository with batch `refactor-login` (tasks parser-task,
/// lexer-task) and batch `other` (task lint), and a file `zzfile-unique` a
/// file-name fallback would offer.
fn labelled_repo(env: &Env) -> PathBuf {
    let repo = env.repo("src");
    env.delegate(
        &repo,
        [
            "prepare",
            "parser-task",
            "lexer-task",
            "--label",
            "refactor-login",
        ],
    )
    .expect(0);
    env.delegate(&repo, ["prepare", "lint", "--label", "other"])
        .expect(0);
    std::fs::write(repo.join("zzfile-unique"), "").unwrap();
    repo
}

#[test]
fn git_delegate_tab_completes_a_batch_label_in_an_interactive_bash() {
    if !have("script") || !have("bash") {
        return skip("`script` or bash is not installed; no pseudo-terminal to test in");
    }
    let Some(git_completion) = git_completion_script() else {
        return skip("git's bash completion (git-completion.bash) is not on this machine");
    };
    let env = Env::new();
    let repo = labelled_repo(&env);
    let rc = env.path().join("bashrc");
    std::fs::write(
        &rc,
        format!(
            "PS1='READY> '\nsource '{}'\nsource '{}'\n",
            git_completion.display(),
            committed("git-delegate.bash").display()
        ),
    )
    .unwrap();
    let shell = format!("bash --noprofile --rcfile '{}' -i", rc.display());
    let mut pty = Pty::spawn(&shell, &env, &repo, &[]);
    // A batch label, through git's completion (`_git_delegate`), then its
    // task names.
    pty.expect(
        "git delegate apply ref\t",
        "git delegate apply refactor-login ",
    );
    pty.expect("--only pa\t", "--only parser-task ");
    pty.expect("\x15echo ONE-DONE\n", "ONE-DONE\r\n");
    // `--ttl` offers no file names (git's completion falls back to them).
    assert_no_file_names(&mut pty, "git delegate prepare --ttl zz", "TWO-DONE");
    // A control: a value that is a path still completes file names.
    let shown = pty.tab("git delegate man --install zz", "THREE-DONE");
    assert!(
        shown.contains("zzfile-unique"),
        "no file names at all?\n{shown:?}"
    );
    // The executable itself completes the same way.
    pty.expect("git-delegate drop oth\t", "git-delegate drop other ");
    assert_no_file_names(&mut pty, "\x15git-delegate prepare --ttl zz", "FOUR-DONE");
}

#[test]
fn zsh_completes_batch_labels_and_tasks() {
    if !have("script") || !have("zsh") {
        return skip("`script` or zsh is not installed");
    }
    let env = Env::new();
    let repo = labelled_repo(&env);
    let zdot = env.path().join("zdot");
    let fpath = env.path().join("zfunc");
    std::fs::create_dir_all(&zdot).unwrap();
    std::fs::create_dir_all(&fpath).unwrap();
    std::fs::copy(committed("_git-delegate"), fpath.join("_git-delegate")).unwrap();
    std::fs::write(
        zdot.join(".zshrc"),
        format!(
            "PS1='READY> '\nunsetopt beep\nfpath=('{}' $fpath)\nautoload -U compinit; compinit -u -D\n",
            fpath.display()
        ),
    )
    .unwrap();
    let mut pty = Pty::spawn("zsh -i", &env, &repo, &[("ZDOTDIR", zdot.as_os_str())]);
    pty.expect(
        "git-delegate apply ref\t",
        "git-delegate apply refactor-login ",
    );
    pty.expect("--only pa\t", "--only parser-task ");
    pty.expect("\x15echo ONE-DONE\n", "ONE-DONE\r\n");
    pty.expect("git-delegate diff --batch other \t", "--batch other lint ");
    pty.expect("\x15echo TWO-DONE\n", "TWO-DONE\r\n");
    assert_no_file_names(&mut pty, "git-delegate prepare --ttl zz", "THREE-DONE");
}

#[test]
fn fish_completes_batch_labels_and_tasks() {
    if !have("fish") {
        return skip("fish is not installed");
    }
    let env = Env::new();
    let repo = labelled_repo(&env);
    let script = format!(
        "source '{}'\nfor l in 'git-delegate apply ref' 'git-delegate apply refactor-login --only ' 'git-delegate apply other --discard=' 'git-delegate diff --batch other ' 'git-delegate prepare --ttl zz'\n    echo \"== $l\"\n    complete -C \"$l\"\nend\n",
        committed("git-delegate.fish").display()
    );
    let out = Command::new("fish")
        .args(["--no-config", "-c", &script])
        .current_dir(&repo)
        .env("PATH", path_with_delegate())
        .env_user(&env)
        .env("XDG_DATA_HOME", env.data_home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    // Candidates, without the descriptions fish adds after a tab.
    let got: Vec<String> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        got,
        [
            "== git-delegate apply ref",
            "refactor-login",
            "== git-delegate apply refactor-login --only ",
            "lexer-task",
            "parser-task",
            "== git-delegate apply other --discard=",
            "--discard=lint",
            "== git-delegate diff --batch other ",
            "lint",
            "== git-delegate prepare --ttl zz",
        ],
        "{text}"
    );
}

/// `git -C DIR delegate ...` completes DIR's batches (git's completion
/// passes its -C on), and a label with a space is offered quoted.
#[test]
fn git_dash_c_completes_that_repositorys_batches() {
    if !have("bash") {
        return skip("bash is not installed");
    }
    let Some(git_completion) = git_completion_script() else {
        return skip("git's bash completion (git-completion.bash) is not on this machine");
    };
    let (env, repo) = Env::with_repo("src");
    env.delegate(&repo, ["prepare", "--label", "with space"])
        .expect(0);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_git-delegate"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let script = format!(
        r#"source '{}'
source '{}'
t() {{
    COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
    COMP_LINE="$*"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=()
    __git_wrap__git_main
    local IFS='|'; echo "${{COMPREPLY[*]}}"
}}
t git -C '{repo}' delegate apply wi
t git delegate apply wi
t git -C '{repo}' delegate apply 'with space' --only ''
"#,
        git_completion.display(),
        committed("git-delegate.bash").display(),
        repo = repo.display(),
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .current_dir(env.path())
        .env("PATH", path)
        .env_user(&env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let got: Vec<&str> = text.lines().collect();
    // Through git, finished words carry their own space (git uses -o nospace).
    assert_eq!(got, ["with\\ space ", "", "1 "], "{text}");
}

/// The arguments of refresh, undo and apply's --kept / --from-undo /
/// --verify-* complete with what they take: tasks, undo ids (not undone for
/// `undo`, undone for `--from-undo`), kept proposals' names, nothing.
#[test]
fn complete_names_refresh_tasks_undo_entries_and_kept_proposals() {
    let (env, repo) = Env::with_repo("src");
    let doc = env
        .delegate(
            &repo,
            ["prepare", "lint", "docs", "--label", "alpha", "--json"],
        )
        .expect(0)
        .json();
    let root = |i: usize| PathBuf::from(doc["tasks"][i]["root"].as_str().unwrap());
    std::fs::write(root(0).join("lint.txt"), "lint\n").unwrap();
    std::fs::write(root(1).join("docs.txt"), "docs\n").unwrap();
    assert_eq!(
        lines(&complete(&env, &repo, &["refresh", ""]).expect(0)),
        ["lint", "docs"]
    );
    assert_eq!(
        lines(&complete(&env, &repo, &["refresh", "--batch", "al"]).expect(0)),
        ["alpha"]
    );
    // Task docs is discarded (kept), task lint applied (an undo entry).
    let applied = env
        .delegate(&repo, ["apply", "--discard", "docs", "--json"])
        .expect(0)
        .json();
    let id = applied["apply_id"].as_str().unwrap().to_string();
    let status = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let kept = status["kept"][0]["name"].as_str().unwrap().to_string();
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "--kept", ""]).expect(0)),
        [kept.as_str()]
    );
    assert_eq!(
        lines(&complete(&env, &repo, &["undo", ""]).expect(0)),
        [id.as_str()]
    );
    assert!(lines(&complete(&env, &repo, &["apply", "--from-undo", ""]).expect(0)).is_empty());
    env.delegate(&repo, ["undo"]).expect(0);
    assert!(lines(&complete(&env, &repo, &["undo", ""]).expect(0)).is_empty());
    assert_eq!(
        lines(&complete(&env, &repo, &["apply", "--from-undo", ""]).expect(0)),
        [id.as_str()]
    );
    // Values that are none: no candidates, and no file names either.
    for words in [
        &["apply", "--verify-timeout", ""][..],
        &["apply", "--verify-jobs", ""],
        &["apply", "--verify", ""],
    ] {
        assert!(
            lines(&complete(&env, &repo, words).expect(0)).is_empty(),
            "{words:?}"
        );
    }
}
