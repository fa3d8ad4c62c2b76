//! Filter and merge drivers prepare did not record never run (design
//! §3.18 "Drivers"): a worker shares the source's config, so it can define
//! `filter.evil.smudge` (or `.clean`, or `merge.evil.driver`) and name it in
//! a `.gitattributes` of its proposal or in the shared `info/attributes`;
//! apply then passes the content through unfiltered (and merges with git's
//! text merge), as git does for an undefined driver, and says which driver
//! it left out. A driver recorded at prepare still runs (the LFS tests of
//! `sources`, and `a_recorded_driver_still_runs` here).

use crate::common::fixtures::id;
use crate::common::fixtures::task_root;
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::{lines, read, with_line};
use crate::common::fixtures::{commit_files, prepare};
use crate::common::remote::Two;
use crate::common::Env;

fn prepare_one(env: &Env, repo: &Path) -> (String, PathBuf) {
    let doc = prepare(env, repo, &[]);
    (id(&doc), task_root(&doc, 0))
}

/// The common dir, as a worker finds it from its workspace.
fn common_dir(env: &Env, ws: &Path) -> PathBuf {
    let dir = env.git(
        ws,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    std::fs::canonicalize(dir.trim()).unwrap()
}

/// A command that leaves `marker` behind and upper-cases its input.
fn evil(marker: &Path) -> String {
    format!("touch '{}'; tr a-z A-Z", marker.display())
}

#[test]
fn a_filter_a_local_worker_defines_is_not_run_by_apply() {
    let (env, repo) = Env::with_repo("proj");
    let (_, ws) = prepare_one(&env, &repo);
    let marker = env.path().join("pwned");
    // The worker, from its workspace: the config is the source's.
    env.git(&ws, ["config", "filter.evil.smudge", &evil(&marker)]);
    env.git(&ws, ["config", "filter.evil.clean", &evil(&marker)]);
    env.git(&ws, ["config", "filter.evil.required", "true"]);
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
    std::fs::write(ws.join("new.txt"), "hello\n").unwrap();
    std::fs::write(ws.join("README"), "changed\n").unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert!(!marker.exists(), "the worker's filter ran: {}", run.stderr);
    // Its config keys are side effects naming the driver left out.
    let doc = run.json();
    let named: Vec<(String, String)> = doc["side_effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "config")
        .map(|e| {
            (
                e["detail"].as_str().unwrap_or("").to_string(),
                e["driver"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for key in [
        "filter.evil.smudge",
        "filter.evil.clean",
        "filter.evil.required",
    ] {
        assert!(
            named.contains(&(key.to_string(), "filter.evil".to_string())),
            "{key} not named with its driver: {named:?}"
        );
    }
    assert_eq!(read(&repo.join("new.txt")), "hello\n");
    assert_eq!(read(&repo.join("README")), "changed\n");
    // "hello" both ways: neither the clean filter (the blob would say
    // HELLO) nor the smudge ran.
    assert_has(&run.stderr, "the filter.evil driver was not run");
}

#[test]
fn a_changed_filter_command_is_not_run_and_a_recorded_one_is() {
    let (env, repo) = Env::with_repo("proj");
    let ran = env.path().join("user-filter-ran");
    // The user's own driver, there at prepare: it keeps running.
    env.git(
        &repo,
        [
            "config",
            "filter.mine.smudge",
            &format!("touch '{}'; cat", ran.display()),
        ],
    );
    env.git(&repo, ["config", "filter.mine.clean", "cat"]);
    env.git(&repo, ["config", "filter.other.smudge", "cat"]);
    let (_, ws) = prepare_one(&env, &repo);
    std::fs::remove_file(&ran).ok();
    let marker = env.path().join("pwned");
    // The worker changes another recorded driver's command.
    env.git(&ws, ["config", "filter.other.smudge", &evil(&marker)]);
    std::fs::write(
        ws.join(".gitattributes"),
        "*.mine filter=mine\n*.other filter=other\n",
    )
    .unwrap();
    std::fs::write(ws.join("a.mine"), "mine\n").unwrap();
    std::fs::write(ws.join("b.other"), "other\n").unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert!(!marker.exists(), "the changed filter ran: {}", run.stderr);
    assert!(
        ran.exists(),
        "the recorded filter did not run: {}",
        run.stderr
    );
    assert_eq!(read(&repo.join("b.other")), "other\n");
    assert_eq!(read(&repo.join("a.mine")), "mine\n");
    assert_has(&run.stderr, "filter.other");
    assert!(!run.stderr.contains("filter.mine"), "{}", run.stderr);
}

/// A source with `x.txt` (10 lines) and one task whose worker defines the
/// merge driver `evil` (it touches the returned marker), sets it for `x.txt`
/// in the shared `info/attributes` and changes line 10: the env, the
/// source, the workspace and the marker.
fn worker_merge_driver() -> (Env, PathBuf, PathBuf, PathBuf) {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[("x.txt", &lines(10))], "x");
    let (_, ws) = prepare_one(&env, &repo);
    let marker = env.path().join("pwned");
    let common = common_dir(&env, &ws);
    env.git(
        &ws,
        [
            "config",
            "merge.evil.driver",
            &format!("touch '{}'; cp %B %A", marker.display()),
        ],
    );
    std::fs::create_dir_all(common.join("info")).unwrap();
    std::fs::write(common.join("info/attributes"), "x.txt merge=evil\n").unwrap();
    std::fs::write(ws.join("x.txt"), with_line(&lines(10), 10, "worker")).unwrap();
    (env, repo, ws, marker)
}

#[test]
fn a_merge_driver_a_local_worker_defines_is_not_run_on_a_path_both_sides_changed() {
    let (env, repo, _, marker) = worker_merge_driver();
    // The user changes the same file meanwhile, elsewhere in it.
    std::fs::write(repo.join("x.txt"), with_line(&lines(10), 1, "user")).unwrap();

    let run = env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert!(
        !marker.exists(),
        "the worker's merge driver ran: {}",
        run.stderr
    );
    assert_eq!(
        read(&repo.join("x.txt")),
        with_line(&with_line(&lines(10), 1, "user"), 10, "worker")
    );
    assert_has(&run.stderr, "merge.evil");
}

/// The remote, the user's clone (`x.txt` of 10 lines committed and pushed)
/// and a worker's machine.
fn two() -> Two {
    Two::with(|user, src| {
        std::fs::write(src.join("x.txt"), lines(10)).unwrap();
        user.git(src, ["add", "x.txt"]);
        user.git(src, ["commit", "-q", "-m", "x"]);
    })
}

impl Two {
    /// Prepare one remote task, join it and let `work` change the clone,
    /// then submit; returns the batch id.
    fn proposal(&self, work: impl FnOnce(&Path)) -> String {
        let doc = self
            .user
            .delegate(&self.src, ["prepare", "--remote", "origin", "--json", "r"])
            .expect(0)
            .json();
        let id = id(&doc);
        let joined = self
            .worker
            .delegate(self.worker.path(), ["join", &self.url, &id, "r", "--json"])
            .expect(0)
            .json();
        let ws = PathBuf::from(joined["root"].as_str().unwrap());
        work(&ws);
        self.worker.delegate(&ws, ["submit", "--json"]).expect(0);
        id
    }
}

#[test]
fn a_remote_proposal_naming_an_unrecorded_filter_is_written_unfiltered() {
    let t = two();
    let marker = t.user.path().join("pwned");
    let id = t.proposal(|ws| {
        std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
        std::fs::write(ws.join("new.txt"), "hello\n").unwrap();
        std::fs::write(ws.join("x.txt"), with_line(&lines(10), 10, "worker")).unwrap();
    });
    // A driver defined after prepare (by a local worker, say).
    t.user
        .git(&t.src, ["config", "filter.evil.smudge", &evil(&marker)]);
    t.user
        .git(&t.src, ["config", "filter.evil.clean", &evil(&marker)]);

    let run = t.user.delegate(&t.src, ["apply", &id, "--json"]).expect(0);
    assert!(
        !marker.exists(),
        "the unrecorded filter ran: {}",
        run.stderr
    );
    assert_eq!(read(&t.src.join("new.txt")), "hello\n");
    assert_eq!(
        read(&t.src.join("x.txt")),
        with_line(&lines(10), 10, "worker")
    );
    assert_has(&run.stderr, "filter.evil");
}

#[test]
fn a_remote_proposal_on_a_path_both_sides_changed_runs_no_unrecorded_merge_driver() {
    let t = two();
    let marker = t.user.path().join("pwned");
    let id = t.proposal(|ws| {
        std::fs::write(ws.join("x.txt"), with_line(&lines(10), 10, "worker")).unwrap();
    });
    t.user.git(
        &t.src,
        [
            "config",
            "merge.evil.driver",
            &format!("touch '{}'; cp %B %A", marker.display()),
        ],
    );
    std::fs::write(t.src.join(".git/info/attributes"), "x.txt merge=evil\n").unwrap();
    std::fs::write(t.src.join("x.txt"), with_line(&lines(10), 1, "user")).unwrap();

    let run = t.user.delegate(&t.src, ["apply", &id, "--json"]).expect(0);
    assert!(
        !marker.exists(),
        "the unrecorded merge driver ran: {}",
        run.stderr
    );
    assert_eq!(
        read(&t.src.join("x.txt")),
        with_line(&with_line(&lines(10), 1, "user"), 10, "worker")
    );
    assert_has(&run.stderr, "merge.evil");
}

#[test]
fn refresh_runs_no_merge_driver_a_worker_defines() {
    let (env, repo, ws, marker) = worker_merge_driver();
    std::fs::write(repo.join("x.txt"), with_line(&lines(10), 1, "user")).unwrap();

    let run = env.delegate(&repo, ["refresh", "--json"]);
    assert!(
        !marker.exists(),
        "the worker's merge driver ran: {}",
        run.stderr
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        read(&ws.join("x.txt")),
        with_line(&with_line(&lines(10), 1, "user"), 10, "worker")
    );
    assert_has(&run.stderr, "merge.evil");
}
