//! The git commands git-delegate runs for a remote batch (design §3.18
//! "What apply runs"): hooks are off through one more `GIT_CONFIG_COUNT`
//! entry, after the caller's own entries, which stay in force; and the
//! fetch never recurses into submodules, whatever `fetch.recurseSubmodules`
//! says.

use crate::common::fixtures::id;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::files::{read, write_hook};
use crate::common::remote::Two;
use crate::common::Run;

/// The remote (a bare repository), the user's clone pushed to it, and a
/// worker's machine.
fn two() -> Two {
    Two::with(|_, _| {})
}

/// `cmd` with one configuration entry given through the environment, as a
/// caller (a wrapper script, CI) may give it.
fn with_entry<'a>(cmd: &'a mut Command, key: &str, value: &str) -> &'a mut Command {
    cmd.env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", key)
        .env("GIT_CONFIG_VALUE_0", value)
}

impl Two {
    /// The worker joins `task` of batch `id` from the real URL, changes
    /// README and submits.
    fn join_and_submit(&self, id: &str, task: &str) {
        let doc = self
            .worker
            .delegate(self.worker.path(), ["join", &self.url, id, task, "--json"])
            .expect(0)
            .json();
        let ws = PathBuf::from(doc["root"].as_str().unwrap());
        std::fs::write(ws.join("README"), "from the worker\n").unwrap();
        self.worker.delegate(&ws, ["submit", "--json"]).expect(0);
    }
}

/// The batch's remote is named by a URL that only the caller's
/// `GIT_CONFIG_*` entry (`url.REAL.insteadOf`) makes reachable: the fetch
/// apply runs reaches it, so the entry stayed in force beside
/// `core.hooksPath=/dev/null`; a `reference-transaction` hook planted in the
/// shared hooks folder, which that fetch would run, never runs.
#[test]
fn an_inherited_config_entry_stays_in_force_for_the_fetch_and_a_planted_hook_does_not_run() {
    let t = two();
    let fake = "fake-remote://project";
    let key = format!("url.{}.insteadOf", t.url);
    let out = Run::from(
        with_entry(&mut t.user.delegate_cmd(&t.src), &key, fake)
            .args(["prepare", "--remote", fake, "--json", "r"])
            .output()
            .unwrap(),
    )
    .expect(0);
    let id = out.json()["batch"].as_str().unwrap().to_string();
    t.join_and_submit(&id, "r");
    let marker = t.user.path().join("hook-ran");
    write_hook(
        &t.src.join(".git/hooks/reference-transaction"),
        &format!("#!/bin/sh\ntouch '{}'\ncat >/dev/null\n", marker.display()),
    );
    let run = Run::from(
        with_entry(&mut t.user.delegate_cmd(&t.src), &key, fake)
            .args(["apply", &id, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(read(&t.src.join("README")), "from the worker\n");
    assert!(!marker.exists(), "the planted hook ran: {}", run.stderr);
    // The hook is a real one: git's own fetch runs it.
    t.user
        .git(&t.src, ["fetch", "-q", &t.url, "main:refs/heads/probe"]);
    assert!(marker.exists(), "the hook does not run under git either");
}

/// With `fetch.recurseSubmodules=true` in the user's config, apply's fetch
/// of a remote proposal fetches nothing into the source's submodules: a
/// commit made upstream of the submodule after prepare stays unfetched.
#[test]
fn the_remote_fetch_never_recurses_into_submodules() {
    let t = two();
    let upstream = t.user.repo("upstream");
    t.user.git(
        &t.src,
        [
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            upstream.to_str().unwrap(),
            "sub",
        ],
    );
    t.user.git(&t.src, ["commit", "-q", "-m", "sub"]);
    t.user.git(&t.src, ["push", "-q", "origin", "main"]);
    t.user.git(
        &t.src,
        ["config", "--global", "protocol.file.allow", "always"],
    );
    t.user
        .git(&t.src, ["config", "fetch.recurseSubmodules", "true"]);
    let doc = t
        .user
        .delegate(&t.src, ["prepare", "--remote", "origin", "--json", "r"])
        .expect(0)
        .json();
    let id = id(&doc);
    std::fs::write(upstream.join("later.txt"), "later\n").unwrap();
    t.user.git(&upstream, ["add", "later.txt"]);
    t.user.git(&upstream, ["commit", "-q", "-m", "later"]);
    let later = t.user.git(&upstream, ["rev-parse", "HEAD"]);
    t.join_and_submit(&id, "r");
    let sub = t.src.join("sub");
    let has_later = |dir: &Path| {
        t.user
            .git_cmd(dir)
            .args(["cat-file", "-e", later.trim()])
            .status()
            .unwrap()
            .success()
    };
    assert!(!has_later(&sub));
    let run = t.user.delegate(&t.src, ["apply", &id, "--json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(read(&t.src.join("README")), "from the worker\n");
    assert!(
        !has_later(&sub),
        "apply's fetch recursed into the submodule"
    );
    // The setting is real: git's own fetch of the superproject recurses.
    t.user.git(&t.src, ["fetch", "-q", &t.url]);
    assert!(has_later(&sub), "git's fetch does not recurse either");
    let _ = &t.bare;
}
