//! The pre-push guard (design §3.19) through the hook `git delegate hooks
//! install` writes and a real `git push` to a bare remote: a push that
//! would publish the user's uncommitted or untracked files is refused,
//! however a worker re-made the commits that carry them (a tag, a squash,
//! an amend, a cherry-pick, a rebase); the user's own work passes, the
//! files they since committed themselves included; a check that cannot be
//! made refuses the push with the way out.

use std::path::Path;

use super::{one_task, push, with_remote};
use crate::common::assert_has;
use crate::common::fixtures::{set_config, write};
use crate::common::{Env, Run};

/// The worker's own branch `name`, made in its workspace on the baseline,
/// with one commit of its work.
fn worker_branch(env: &Env, ws: &Path, name: &str) {
    write(&ws.join("new.rs"), "fn main() {}\n");
    env.git(ws, ["checkout", "-q", "-b", name]);
    env.git(ws, ["add", "new.rs"]);
    env.git(ws, ["commit", "-q", "-m", "agent work"]);
}

/// The push was refused by the hook, with the way out, and the remote has
/// no `remote_ref`.
fn refused(env: &Env, out: &Run, bare: &Path, remote_ref: &str) {
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_has(&out.stdout, "push refused");
    assert_has(&out.stdout, "--no-verify");
    let refs = env.git(bare, ["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.lines().any(|r| r == remote_ref), "{refs}");
}

#[test]
fn pre_push_refuses_a_workers_branch_on_the_baseline_and_passes_the_clean_one() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    assert!(repo.join(".git/hooks/pre-push").exists());
    let (doc, ws, task) = one_task(&env, &repo, &["--label", "feat"]);
    // The worker makes its own branch in its workspace, on the baseline.
    worker_branch(&env, &ws, "agent/x");
    let out = push(&env, &repo, "origin agent/x");
    refused(&env, &out, &bare, "refs/heads/agent/x");
    assert_has(&out.stdout, "refs/heads/agent/x");
    assert_has(&out.stdout, &format!("git delegate branch {task} --batch"));

    // The clean branch goes through, without secret.env.
    env.delegate(&repo, ["branch", &task, "agent/clean"])
        .expect(0);
    let out = push(&env, &repo, "origin agent/clean");
    assert_eq!(out.code, 0, "{}", out.stdout);
    let files = env.git(&bare, ["ls-tree", "-r", "--name-only", "agent/clean"]);
    assert_eq!(files, "README\na.txt\nnew.rs\n");

    // An ordinary push passes.
    write(&repo.join("b.txt"), "b\n");
    env.git(&repo, ["add", "b.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "b"]);
    assert_eq!(push(&env, &repo, "origin main").code, 0);
    // refs/pi-delegate/ pushes pass (prepare --remote's own).
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let out = push(
        &env,
        &repo,
        &format!("origin {baseline}:refs/pi-delegate/x/baseline"),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);

    // warn: passes with the warning; ignore: passes silently. Set while
    // the batch is open, each holds once the user confirms the file
    // (design §3.18 "Commands from the shared git dir").
    set_config(&repo, "[hooks]\nprivate-baselines = \"warn\"\n");
    env.delegate(&repo, ["config", "--trust"]).expect(0);
    let out = push(&env, &repo, "origin agent/x");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_has(&out.stdout, "git delegate branch");
    env.git(&bare, ["update-ref", "-d", "refs/heads/agent/x"]);
    env.git(&repo, ["update-ref", "-d", "refs/remotes/origin/agent/x"]);
    set_config(&repo, "[hooks]\nprivate-baselines = \"ignore\"\n");
    env.delegate(&repo, ["config", "--trust"]).expect(0);
    let out = push(&env, &repo, "origin agent/x");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.stdout.contains("git-delegate"), "{}", out.stdout);
}

#[test]
fn a_tag_is_peeled_annotated_nested_or_of_a_blob() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, task) = one_task(&env, &repo, &[]);
    worker_branch(&env, &ws, "agent/x");
    env.git(&ws, ["tag", "-a", "-m", "one", "v1", "agent/x"]);
    env.git(&ws, ["tag", "-a", "-m", "two", "v2", "v1"]);
    let secret = env.git(&ws, ["rev-parse", "agent/x:secret.env"]);
    env.git(&ws, ["tag", "secret", secret.trim()]);
    for tag in ["v1", "v2", "secret"] {
        let remote_ref = format!("refs/tags/{tag}");
        let out = push(&env, &repo, &format!("origin {remote_ref}"));
        refused(&env, &out, &bare, &remote_ref);
        assert_has(&out.stdout, &remote_ref);
        assert_has(&out.stdout, &format!("git delegate branch {task} --batch"));
    }
    // All tags at once, from the workspace: refused too.
    let out = push(&env, &ws, "origin --tags");
    refused(&env, &out, &bare, "refs/tags/v1");
    // The way out the refusal names publishes them.
    let out = push(&env, &repo, "--no-verify origin refs/tags/v2");
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn commits_re_made_by_the_worker_are_known_by_their_content() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (doc, ws, _) = one_task(&env, &repo, &[]);
    let baseline = doc["baseline"]["commit"].as_str().unwrap().to_string();
    let head = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();
    // Each starts from the baseline checked out, as the workspace was made.
    let made = [
        (
            "agent/squash",
            "git reset -q --soft HEAD~1 && git checkout -q -b agent/squash && \
             echo w > new.rs && git add new.rs && git commit -q -m squashed"
                .to_string(),
        ),
        (
            "agent/amend",
            "git checkout -q -b agent/amend && git commit -q --amend --reset-author -m 'my work'"
                .to_string(),
        ),
        (
            "agent/pick",
            format!(
                "git checkout -q -b agent/pick {head} && git cherry-pick -n {baseline} && \
                 git commit -q -m picked"
            ),
        ),
        (
            "agent/rebase",
            format!(
                "git checkout -q -b agent/rebase && echo w > new.rs && git add new.rs && \
                 git commit -q -m work && git rebase -q --force-rebase \
                 --exec 'git commit -q --amend --reset-author -m rebased' {head}"
            ),
        ),
    ];
    for (branch, script) in &made {
        env.git(&ws, ["checkout", "-q", "--detach", &baseline]);
        let out = env.sh(&ws, &format!("{{ {script}; }} 2>&1"));
        assert_eq!(out.code, 0, "{branch}: {}", out.stdout);
        // No commit of it is a git-delegate baseline any more.
        let authors = env.git(&ws, ["log", "--format=%ae", &format!("{head}..{branch}")]);
        assert!(
            !authors.contains("git-delegate@localhost"),
            "{branch}: {authors}"
        );
        let remote_ref = format!("refs/heads/{branch}");
        // Pushed from the workspace, as a worker would, and from the source.
        for dir in [&ws, &repo] {
            let out = push(&env, dir, &format!("origin {branch}"));
            refused(&env, &out, &bare, &remote_ref);
            assert_has(&out.stdout, "secret.env");
        }
    }
}

#[test]
fn the_users_own_work_passes_the_once_private_files_included() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, _) = one_task(&env, &repo, &[]);
    worker_branch(&env, &ws, "agent/x");
    // An honest push of the user's own work.
    write(&repo.join("b.txt"), "b\n");
    env.git(&repo, ["add", "b.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "b"]);
    let out = push(&env, &repo, "origin main");
    assert_eq!(out.code, 0, "{}", out.stdout);
    // The user commits the once-private files themselves, on a branch they
    // then leave: it passes.
    env.git(&repo, ["checkout", "-q", "-b", "mine"]);
    env.git(&repo, ["add", "a.txt", "secret.env"]);
    env.git(&repo, ["commit", "-q", "-m", "mine"]);
    env.git(&repo, ["checkout", "-q", "main"]);
    let out = push(&env, &repo, "origin mine");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        env.git(&bare, ["show", "mine:secret.env"]),
        "TOKEN=hunter2\n"
    );
    // On the checked-out branch, then changed again: both commits pass.
    env.git(&repo, ["merge", "-q", "--ff-only", "mine"]);
    write(&repo.join("a.txt"), "rewritten\n");
    env.git(&repo, ["commit", "-q", "-am", "later"]);
    let out = push(&env, &repo, "origin main");
    assert_eq!(out.code, 0, "{}", out.stdout);
    // The worker's branch on the baseline is still refused.
    let out = push(&env, &ws, "origin agent/x");
    refused(&env, &out, &bare, "refs/heads/agent/x");
}

#[test]
fn a_check_that_cannot_be_made_refuses_the_push_with_the_way_out() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, _) = one_task(&env, &repo, &[]);
    write(&repo.join("b.txt"), "b\n");
    env.git(&repo, ["add", "b.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "b"]);
    env.git(&repo, ["branch", "honest"]);
    // A record that cannot be read.
    let record = repo.join(".git/delegate/private-blobs");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, format!("{text}not a blob\n{text}")).unwrap();
    let out = push(&env, &repo, "origin honest");
    refused(&env, &out, &bare, "refs/heads/honest");
    assert_has(&out.stdout, "cannot check the push");
    assert_has(&out.stdout, "private-blobs cannot be read: line");
    assert_has(&out.stdout, "hooks.private-baselines = \"warn\"");
    let confirm = confirm_command(&out.stdout);
    // The ways out it names work: --no-verify, then "warn", confirmed as
    // printed (a batch is open).
    let out = push(&env, &repo, "--no-verify origin honest");
    assert_eq!(out.code, 0, "{}", out.stdout);
    set_config(&repo, "[hooks]\nprivate-baselines = \"warn\"\n");
    env.sh(&repo, &confirm).expect(0);
    let out = push(&env, &repo, "origin main");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_has(&out.stdout, "pushed unchecked");
    std::fs::write(&record, &text).unwrap();
    std::fs::remove_file(repo.join(".git/delegate.toml")).unwrap();
    env.sh(&repo, &confirm).expect(0);

    // An object the check needs is missing: refused with the reason.
    write(&ws.join("c.txt"), "c\n");
    env.git(&ws, ["checkout", "-q", "-b", "agent/broken"]);
    env.git(&ws, ["add", "c.txt"]);
    env.git(&ws, ["commit", "-q", "-m", "c"]);
    let tree = env.git(&ws, ["rev-parse", "agent/broken^{tree}"]);
    let tree = tree.trim();
    std::fs::remove_file(repo.join(format!(".git/objects/{}/{}", &tree[..2], &tree[2..]))).unwrap();
    let out = push(&env, &repo, "origin agent/broken");
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_has(&out.stdout, "cannot check the push");
    assert_has(&out.stdout, tree);
    assert_has(&out.stdout, "--no-verify");
}

#[test]
fn files_a_refresh_brings_are_known_too() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, task) = one_task(&env, &repo, &[]);
    let head = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();
    // A file the user makes after prepare reaches the worker through refresh.
    write(&repo.join("later.env"), "LATER=1\n");
    env.delegate(&repo, ["refresh", &task]).expect(0);
    assert_eq!(
        crate::common::files::read(&ws.join("later.env")),
        "LATER=1\n"
    );
    // The worker takes that file alone onto HEAD, in a commit of its own.
    let script = format!(
        "git checkout -q -b agent/later {head} && git checkout HEAD@{{1}} -- later.env && \
         git commit -q -m later"
    );
    env.sh(&ws, &script).expect(0);
    let files = env.git(&ws, ["show", "--name-only", "--format=", "agent/later"]);
    assert_eq!(files, "later.env\n");
    let out = push(&env, &ws, "origin agent/later");
    refused(&env, &out, &bare, "refs/heads/agent/later");
    assert_has(&out.stdout, "later.env");
}

#[test]
fn gc_forgets_what_ended_batches_recorded_after_90_days() {
    let env = Env::new();
    let (repo, _bare) = with_remote(&env);
    let doc = crate::common::fixtures::prepare(&env, &repo, &[]);
    let open = doc["batch"].as_str().unwrap().to_string();
    let record = repo.join(".git/delegate/private-blobs");
    let text = std::fs::read_to_string(&record).unwrap();
    let mine: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(mine.len(), 2, "{text}");
    // Entries 91 days old: of a batch that ended, and of the open one.
    let old = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 91 * 24 * 3600;
    let gone = format!(
        "{} {old} 00000000-0000-4000-8000-000000000000",
        "1".repeat(40)
    );
    let kept = format!("{} {old} {open}", "2".repeat(40));
    std::fs::write(&record, format!("{text}{gone}\n{kept}\n")).unwrap();
    env.delegate(&repo, ["gc", "--dry-run"]).expect(0);
    assert!(std::fs::read_to_string(&record).unwrap().contains(&gone));
    env.delegate(&repo, ["gc"]).expect(0);
    let after = std::fs::read_to_string(&record).unwrap();
    assert!(!after.contains(&gone), "{after}");
    assert!(after.contains(&kept), "{after}");
    for line in mine {
        assert!(after.contains(line), "{after}");
    }
}

/// The confirmation command a refusal names ("confirmed with `CMD`").
fn confirm_command(stdout: &str) -> String {
    let at = stdout
        .find("confirmed with `")
        .unwrap_or_else(|| panic!("no confirmation command in:\n{stdout}"));
    let rest = &stdout[at + "confirmed with `".len()..];
    rest[..rest.find('`').unwrap()].to_string()
}

/// A worker that relaxes the guard in the shared `delegate.toml` while its
/// batch is open (`hooks.private-baselines = "ignore"`) relaxes nothing
/// (design §3.18 "Commands from the shared git dir"): the push of its
/// branch is refused as the user confirmed, the hook saying the value was
/// left out; once the user confirms the file as printed, it holds.
#[test]
fn a_relaxed_guard_a_worker_plants_holds_only_once_confirmed() {
    let env = Env::new();
    let (repo, bare) = with_remote(&env);
    let (_, ws, _) = one_task(&env, &repo, &[]);
    worker_branch(&env, &ws, "agent/x");
    let common = env.git(
        &ws,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    std::fs::write(
        std::path::Path::new(common.trim()).join("delegate.toml"),
        "[hooks]\nprivate-baselines = \"ignore\"\n",
    )
    .unwrap();
    for from in [&repo, &ws] {
        let out = push(&env, from, "origin agent/x");
        refused(&env, &out, &bare, "refs/heads/agent/x");
        assert_has(&out.stdout, "hooks.private-baselines = `ignore`");
        assert_has(&out.stdout, "is not what you confirmed");
    }
    let out = push(&env, &ws, "origin agent/x");
    env.sh(&ws, &confirm_command(&out.stdout)).expect(0);
    let out = push(&env, &repo, "origin agent/x");
    assert_eq!(out.code, 0, "{}", out.stdout);
}
