//! `git delegate apply`'s human text says exactly what happened (design
//! §3.2, §3.16): the paths per task (the first 20 and a count, all with
//! `-v`), "would write" in a dry run and "written" only after a real one,
//! and what became of each workspace (`--keep` keeps them, and says how to
//! remove them; without it they are removed, or parked idle in the pool).
use crate::common::files::read_bytes;

use std::path::{Path, PathBuf};

use crate::common::fixtures::roots;
use crate::common::Env;

struct Batch {
    short: String,
    roots: Vec<PathBuf>,
}

/// A repository with a batch of `tasks`; task 1 writes `f01`..`f23`, task 2
/// writes `two`, the others nothing.
fn setup(env: &Env, tasks: &[&str]) -> (PathBuf, Batch) {
    setup_with(env, tasks, None)
}

/// [`setup`] with `delegate.toml` written before the prepare (a change
/// while the batch lives would be a side effect apply warns about).
fn setup_with(env: &Env, tasks: &[&str], config: Option<&str>) -> (PathBuf, Batch) {
    let repo = std::fs::canonicalize(env.repo("src")).unwrap();
    if let Some(toml) = config {
        crate::common::fixtures::config(env, &repo, toml);
    }
    let mut args = vec!["prepare", "--json"];
    args.extend_from_slice(tasks);
    let doc = env.delegate(&repo, args).expect(0).json();
    let roots: Vec<PathBuf> = roots(&doc);
    for i in 1..=23 {
        std::fs::write(roots[0].join(format!("f{i:02}")), format!("{i}\n")).unwrap();
    }
    std::fs::write(roots[1].join("two"), "two\n").unwrap();
    let short = doc["batch"].as_str().unwrap()[..8].to_string();
    (repo, Batch { short, roots })
}

fn listed(from: usize, to: usize) -> String {
    (from..=to).map(|i| format!("      f{i:02}\n")).collect()
}

fn human(env: &Env, repo: &Path, args: &[&str], code: i32) -> String {
    let mut all = vec!["apply"];
    all.extend_from_slice(args);
    let run = env.delegate(repo, all).expect(code);
    assert_eq!(run.stderr, "", "nothing on stderr");
    // The undo entry's id is random: shown as ID.
    let mut lines: Vec<String> = run.stdout.lines().map(str::to_string).collect();
    for l in lines.iter_mut() {
        if let Some(rest) = l.strip_prefix("Apply ") {
            if let Some((id, tail)) = rest.split_once(' ') {
                if id.len() == 8 && id.bytes().all(|c| c.is_ascii_hexdigit()) {
                    *l = format!("Apply ID {tail}");
                }
            }
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn dry_run_lists_the_first_20_paths_and_says_would_write() {
    let env = Env::new();
    let (repo, b) = setup(&env, &["a", "b", "c"]);
    let text = human(&env, &repo, &["--dry-run"], 0);
    let expected = format!(
        "Dry run of apply for batch {short} (nothing was changed):\n\
         \x20 task a  applied    would write 23 paths\n\
         {first}\
         \x20     ... and 3 more paths (--verbose lists them all)\n\
         \x20 task b  applied    would write 1 path\n\
         \x20     two\n\
         \x20 task c  no_changes\n\
         Would write 24 paths in {src}.\n\
         Would remove the workspaces of tasks a, b, c.\n\
         Batch {short} would be done and removed.\n",
        short = b.short,
        first = listed(1, 20),
        src = repo.display(),
    );
    assert_eq!(text, expected);
    assert!(!text.contains("written"), "{text}");
    // Nothing changed.
    assert!(!repo.join("two").exists());
    assert!(b.roots.iter().all(|r| r.is_dir()));

    // -v / --verbose: every path.
    for flag in ["-v", "--verbose"] {
        let text = human(&env, &repo, &["--dry-run", flag], 0);
        assert!(text.contains(&listed(1, 23)), "{text}");
        assert!(!text.contains("more path"), "{text}");
    }

    // With --keep, the workspaces of applied and no_changes tasks would be
    // kept, not removed.
    let text = human(&env, &repo, &["--dry-run", "--keep"], 0);
    let tail = format!(
        "Would write 24 paths in {src}.\n\
         Would keep the workspace of task a as an ordinary worktree the batch no longer owns: {a}\n\
         Would keep the workspace of task b as an ordinary worktree the batch no longer owns: {b}\n\
         Would keep the workspace of task c as an ordinary worktree the batch no longer owns: {c}\n\
         Batch {short} would be done; its refs and state would be removed.\n",
        src = repo.display(),
        a = b.roots[0].display(),
        b = b.roots[1].display(),
        c = b.roots[2].display(),
        short = b.short,
    );
    assert!(text.ends_with(&tail), "{text}");
    assert!(!text.contains("Would remove"), "{text}");
}

#[test]
fn apply_says_written_and_that_the_workspaces_were_removed() {
    let env = Env::new();
    let (repo, b) = setup(&env, &["a", "b"]);
    let text = human(&env, &repo, &[], 0);
    let expected = format!(
        "Apply of batch {short}:\n\
         \x20 task a  applied    23 paths written\n\
         {first}\
         \x20     ... and 3 more paths (--verbose lists them all)\n\
         \x20 task b  applied    1 path written\n\
         \x20     two\n\
         Wrote 24 paths in {src}.\n\
         Removed the workspaces of tasks a, b.\n\
         Batch {short} is done and removed.\n\
         Apply ID recorded: `git delegate undo` takes it back.\n",
        short = b.short,
        first = listed(1, 20),
        src = repo.display(),
    );
    assert_eq!(text, expected);
    assert_eq!(read_bytes(&repo.join("two")), b"two\n");
    assert!(b.roots.iter().all(|r| !r.exists()));
}

#[test]
fn apply_says_which_workspaces_it_parked_in_the_pool_and_which_it_removed() {
    let env = Env::new();
    // Room for one idle workspace (design §3.20): a's is parked, b's removed.
    let (repo, b) = setup_with(&env, &["a", "b"], Some("[workspace]\npool = 1\n"));
    let text = human(&env, &repo, &[], 0);
    let tail = format!(
        "Wrote 24 paths in {src}.\n\
         Removed the workspace of task b.\n\
         Parked the workspace of task a idle in the pool (workspace.pool): the next prepare reuses it.\n\
         Batch {short} is done and removed.\n",
        short = b.short,
        src = repo.display(),
    );
    assert!(text.contains(&tail), "{text}");
    // What it says is true: one idle workspace, registered and locked for the pool.
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("locked git-delegate pool").count(),
        1,
        "{list}"
    );
    let status = env.delegate(&repo, ["status"]).expect(0).stdout;
    assert!(status.contains("1 idle workspace in the pool"), "{status}");
    // ...and the next prepare reuses it.
    let doc = env
        .delegate(&repo, ["prepare", "--json", "c"])
        .expect(0)
        .json();
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert!(!list.contains("locked git-delegate pool"), "{list}");
    assert!(crate::common::fixtures::task_root(&doc, 0)
        .join("two")
        .is_file());
}

#[test]
fn apply_keep_says_the_workspaces_stay_and_its_hint_removes_them() {
    let env = Env::new();
    let (repo, b) = setup(&env, &["a", "b"]);
    let text = human(&env, &repo, &["--keep", "-v"], 0);
    let kept = |name: &str, root: &Path| {
        format!(
            "Kept the workspace of task {name} as an ordinary worktree the batch no longer owns: {root}\n\
             \x20 when you are done with it: git worktree remove --force {root}\n",
            root = root.display()
        )
    };
    let expected = format!(
        "Apply of batch {short}:\n\
         \x20 task a  applied    23 paths written\n\
         {all}\
         \x20 task b  applied    1 path written\n\
         \x20     two\n\
         Wrote 24 paths in {src}.\n\
         {ka}{kb}\
         Batch {short} is done; its refs and state are removed.\n\
         Apply ID recorded: `git delegate undo` takes it back.\n",
        short = b.short,
        all = listed(1, 23),
        src = repo.display(),
        ka = kept("a", &b.roots[0]),
        kb = kept("b", &b.roots[1]),
    );
    assert_eq!(text, expected);
    assert!(!text.contains("Removed"), "{text}");
    // What it says is true: the workspaces are there, with their work...
    assert_eq!(read_bytes(&b.roots[1].join("two")), b"two\n");
    // ...and the printed command, run as printed, removes one.
    let hint = text
        .lines()
        .find_map(|l| l.strip_prefix("  when you are done with it: "))
        .unwrap();
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c").arg(hint).current_dir(&repo);
    let out = sh
        .env("GIT_CONFIG_GLOBAL", env.path().join("gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{hint}: {out:?}");
    assert!(!b.roots[0].exists());
    let list = env.git(&repo, ["worktree", "list", "--porcelain"]);
    assert!(!list.contains(&b.roots[0].display().to_string()), "{list}");
}

#[test]
fn apply_only_and_discard_say_what_happened_to_each_task() {
    let env = Env::new();
    let (repo, b) = setup(&env, &["a", "b", "c"]);
    // --only b: a and c stay open, b's workspace is removed.
    let text = human(&env, &repo, &["--only", "b"], 0);
    let expected = format!(
        "Apply of batch {short}:\n\
         \x20 task b  applied    1 path written\n\
         \x20     two\n\
         Wrote 1 path in {src}.\n\
         Removed the workspace of task b.\n\
         Batch {short} stays open for tasks a, c.\n\
         Apply ID recorded: `git delegate undo` takes it back.\n",
        short = b.short,
        src = repo.display(),
    );
    assert_eq!(text, expected);
    assert!(!b.roots[1].exists() && b.roots[0].is_dir() && b.roots[2].is_dir());

    // A dry run of discarding a: nothing would be written, and its work
    // would be kept.
    let text = human(
        &env,
        &repo,
        &["--dry-run", "--discard", "a", "--only", "c"],
        0,
    );
    let expected = format!(
        "Dry run of apply for batch {short} (nothing was changed):\n\
         \x20 task a  discarded\n\
         \x20     its work would be kept as a proposal ref and patch until gc.keep-failed passes\n\
         \x20 task c  no_changes\n\
         Would write 0 paths in {src}.\n\
         Would remove the workspaces of tasks a, c.\n\
         Batch {short} would be done and removed.\n",
        short = b.short,
        src = repo.display(),
    );
    assert_eq!(text, expected);
    assert!(b.roots[0].is_dir() && b.roots[2].is_dir());

    // The real thing: a's work is kept (said with its ref and patch), c had
    // none; both workspaces are removed and the batch is done.
    let text = human(&env, &repo, &["--discard", "a", "--only", "c"], 0);
    let kept = env.git(
        &repo,
        ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
    );
    let proposal = kept
        .lines()
        .find(|r| r.ends_with("/tasks/a/proposal"))
        .unwrap_or_else(|| panic!("no kept proposal of a: {kept}"));
    let head = format!(
        "Apply of batch {short}:\n\
         \x20 task a  discarded\n\
         \x20     its work is kept until ",
        short = b.short
    );
    assert!(text.starts_with(&head), "{text}");
    assert!(
        text.contains(&format!("      proposal:  {proposal}\n")),
        "{text}"
    );
    let tail = format!(
        "\x20 task c  no_changes\n\
         Wrote 0 paths in {src}.\n\
         Removed the workspaces of tasks a, c.\n\
         Batch {short} is done and removed.\n",
        short = b.short,
        src = repo.display(),
    );
    assert!(text.ends_with(&tail), "{text}");
    assert!(!b.roots[0].exists() && !b.roots[2].exists());
}
