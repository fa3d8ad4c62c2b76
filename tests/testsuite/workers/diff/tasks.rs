//! A task's diff, byte-equal to `git diff` (with its flags and
//! `core.abbrev`), of several tasks and of some paths; it writes nothing.

use super::*;

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
