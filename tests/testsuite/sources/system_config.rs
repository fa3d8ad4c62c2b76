//! The system config file is the one the user's git reads (design §3.15
//! "Git's config files"): git's is decided when git is built
//! (`$(sysconfdir)/gitconfig`), not `/etc/gitconfig` wherever git is. A git
//! built elsewhere is made here by a wrapper on PATH whose compiled-in
//! default is a file of the test's (`GIT_CONFIG_SYSTEM` unless the caller
//! set it, as git's own default); `/etc/gitconfig` itself is only ever
//! replaced inside a private mount namespace, never on the machine.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::files::{chmod, read};
use crate::common::fixtures::{commit_files, prepare_batch};
use crate::common::procs::{git_path, have};
use crate::common::{Env, Run};

/// A git "built" with its system config at `<env>/prefix/etc/gitconfig`:
/// its folder of `bin/git` (first on PATH for git-delegate), and that file
/// (not made). Each `git var` it answers is logged in `<env>/var.log`.
fn git_built_elsewhere(env: &Env) -> (PathBuf, PathBuf) {
    let prefix = env.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("etc")).unwrap();
    let system = prefix.join("etc/gitconfig");
    let git = prefix.join("bin/git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\n\
             [ \"$1\" = var ] && echo \"$*\" >> '{log}'\n\
             : \"${{GIT_CONFIG_SYSTEM:={system}}}\"\n\
             export GIT_CONFIG_SYSTEM\n\
             exec '{real}' \"$@\"\n",
            log = env.path().join("var.log").display(),
            system = system.display(),
            real = git_path(),
        ),
    )
    .unwrap();
    chmod(&git, 0o755);
    (prefix.join("bin"), system)
}

/// git-delegate as the user runs it: no system-config variable of the
/// test harness, `bin` first on PATH.
fn delegate(env: &Env, repo: &Path, bin: &Path, args: &[&str]) -> Command {
    let mut cmd = env.delegate_cmd(repo);
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&env.path_with_delegate())),
    )
    .unwrap();
    cmd.env_remove("GIT_CONFIG_NOSYSTEM")
        .env_remove("GIT_CONFIG_SYSTEM")
        .env("PATH", path)
        .args(args);
    cmd
}

fn run(cmd: &mut Command) -> Run {
    Run::from(cmd.output().expect("run git-delegate"))
}

/// A repository whose `.gitattributes` puts `*.txt` through the filter
/// `up` (which only a system config defines), and an untracked `x.txt`.
fn filtered_repo(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    commit_files(
        env,
        &repo,
        &[(".gitattributes", "*.txt filter=up\n")],
        "attrs",
    );
    std::fs::write(repo.join("x.txt"), "hello\n").unwrap();
    repo
}

const UP: &str = "[filter \"up\"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n";

/// The blob of `x.txt` in the baseline prepare made.
fn baseline_x(env: &Env, repo: &Path, out: &Run) -> String {
    let doc = out.json();
    let commit = doc["baseline"]["commit"].as_str().unwrap().to_string();
    env.git(repo, ["cat-file", "-p", &format!("{commit}:x.txt")])
}

#[test]
fn the_system_config_is_the_file_the_users_git_reads() {
    let env = Env::new();
    let repo = filtered_repo(&env);
    let (bin, system) = git_built_elsewhere(&env);
    std::fs::write(&system, UP).unwrap();
    // git, as built, runs the filter: that is what a snapshot must hold.
    let git = delegate(
        &env,
        &repo,
        &bin,
        &["hash-object", "--path", "x.txt", "x.txt"],
    );
    let git = Command::new("git")
        .args(git.get_args())
        .env_clear()
        .envs(git.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(git.status.success(), "{git:?}");
    let want = String::from_utf8(git.stdout).unwrap();
    let out = run(&mut delegate(
        &env,
        &repo,
        &bin,
        &["prepare", "--json", "-n", "1"],
    ))
    .expect(0);
    assert_eq!(baseline_x(&env, &repo, &out), "HELLO\n");
    let doc = out.json();
    let commit = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{commit}:x.txt")]),
        want,
        "the baseline holds what git add would store"
    );
    // git was asked once; the next commands read the answer kept for it.
    run(&mut delegate(&env, &repo, &bin, &["status"])).expect(0);
    run(&mut delegate(&env, &repo, &bin, &["status"])).expect(0);
    assert_eq!(read(&env.path().join("var.log")), "var GIT_CONFIG_SYSTEM\n");
    let batch = doc["batch"].as_str().unwrap();
    run(&mut delegate(&env, &repo, &bin, &["drop", batch])).expect(0);

    // GIT_CONFIG_SYSTEM names the file, as for git: no question asked.
    let elsewhere = env.path().join("other-gitconfig");
    std::fs::write(&elsewhere, UP.replace("tr a-z A-Z", "tr a-z x")).unwrap();
    let mut cmd = delegate(&env, &repo, &bin, &["prepare", "--json", "-n", "1"]);
    let out = run(cmd.env("GIT_CONFIG_SYSTEM", &elsewhere)).expect(0);
    assert_eq!(baseline_x(&env, &repo, &out), "xxxxx\n");
    let batch = out.json()["batch"].as_str().unwrap().to_string();
    run(&mut delegate(&env, &repo, &bin, &["drop", &batch])).expect(0);
    // GIT_CONFIG_NOSYSTEM: none at all.
    let mut cmd = delegate(&env, &repo, &bin, &["prepare", "--json", "-n", "1"]);
    let out = run(cmd.env("GIT_CONFIG_NOSYSTEM", "1")).expect(0);
    assert_eq!(baseline_x(&env, &repo, &out), "hello\n");
    assert_eq!(read(&env.path().join("var.log")), "var GIT_CONFIG_SYSTEM\n");
}

/// Run `cmd` in a private mount namespace where `/etc/gitconfig` is `file`
/// (the machine's `/etc` is untouched); `None` where that cannot be made.
fn with_etc_gitconfig(cmd: Command, file: &Path) -> Option<Run> {
    let ok = Path::new("/etc/gitconfig").is_file()
        && have("unshare")
        && Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "true"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut outer = Command::new("unshare");
    outer
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("mount --bind \"$0\" /etc/gitconfig && exec \"$@\"")
        .arg(file)
        .arg(program)
        .args(args);
    outer.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            outer.env(k, v);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        outer.current_dir(dir);
    }
    Some(run(&mut outer))
}

#[test]
fn an_etc_gitconfig_git_does_not_read_defines_no_driver_for_apply_kept() {
    let env = Env::new();
    let repo = env.repo("proj");
    let (bin, system) = git_built_elsewhere(&env);
    assert!(!system.exists(), "git's own system config is absent");
    // A kept proposal whose batch is gone: apply --kept lets no config
    // driver run, and names each one it left out.
    let (_, ws) = prepare_batch(&env, &repo, &["-n", "1"]);
    std::fs::write(ws[0].join("README"), "the worker's\n").unwrap();
    env.delegate(&repo, ["apply", "--discard", "1"]).expect(0);
    let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
    let name = st["kept"][0]["name"].as_str().unwrap().to_string();
    // What a distribution's git-lfs package writes to /etc/gitconfig.
    let etc = env.path().join("etc-gitconfig");
    std::fs::write(
        &etc,
        "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\
         \tprocess = git-lfs filter-process\n\trequired = true\n",
    )
    .unwrap();
    let cmd = delegate(&env, &repo, &bin, &["apply", "--kept", &name]);
    let Some(out) = with_etc_gitconfig(cmd, &etc) else {
        eprintln!("SKIPPED: an_etc_gitconfig_git_does_not_read...: no private mount namespace (unshare) here");
        return;
    };
    let out = out.expect(0);
    assert!(!out.stderr.contains("driver was not run"), "{}", out.stderr);
    assert_eq!(read(&repo.join("README")), "the worker's\n");
}
