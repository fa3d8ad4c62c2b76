//! `git delegate path`: a task's working folder, from the source and from
//! inside a workspace.

use super::*;
use crate::common::fixtures::commit_files;
use crate::common::fixtures::task_root;

#[test]
fn path_from_the_source_and_from_inside_a_workspace() {
    let (env, repo) = Env::with_repo("proj");
    commit_files(&env, &repo, &[("sub/f", "f\n")], "sub");
    let doc = prepare(&env, &repo.join("sub"), &["-n", "2"]);
    let cwd2 = doc["tasks"][1]["cwd"].as_str().unwrap().to_string();
    let root1 = task_root(&doc, 0);
    assert!(cwd2.ends_with("/sub"), "{cwd2}");
    let out = env.delegate(&repo, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Inside a workspace, without TASK: that workspace's task.
    let cwd1 = doc["tasks"][0]["cwd"].as_str().unwrap().to_string();
    let out = env.delegate(&root1, ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    let out = env.delegate(&root1.join("sub"), ["path"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd1}\n"));
    // Another task named from inside a workspace.
    let out = env.delegate(&root1, ["path", "2"]).expect(0).stdout;
    assert_eq!(out, format!("{cwd2}\n"));
    // Unknown task: exit 2; the source without TASK: exit 2.
    let r = env.delegate(&repo, ["path", "9", "--json"]).expect(2);
    assert_eq!(r.json()["error"]["code"], "delegate::unknown_task");
    env.delegate(&repo, ["path"]).expect(2);
}
