//! Adversarial cases: env (see main.rs).

use crate::common::Env;

fn task_root(doc: &serde_json::Value, i: usize) -> std::path::PathBuf {
    std::path::PathBuf::from(doc["tasks"][i]["root"].as_str().unwrap())
}

/// Found while testing `GIT_INDEX_FILE` from a subfolder: prepare run below
/// the root lost staged files outside the caller's folder from the baseline
/// (gix's default pathspec matches only below the cwd).
#[test]
fn staged_files_outside_the_callers_folder_are_in_the_baseline() {
    let env = Env::new();
    let repo = env.repo("src");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/s.txt"), "s\n").unwrap();
    std::fs::write(repo.join("staged.txt"), "staged\n").unwrap();
    env.git(&repo, ["add", "staged.txt"]);
    let doc = env.delegate(&repo.join("sub"), ["prepare", "--json"]).expect(0).json();
    let baseline = doc["baseline"]["commit"].as_str().unwrap();
    assert_eq!(
        env.git(&repo, ["rev-parse", &format!("{baseline}^{{tree}}")]).trim(),
        env.oracle_tree(&repo)
    );
    assert_eq!(
        std::fs::read(task_root(&doc, 0).join("staged.txt")).unwrap(),
        b"staged\n"
    );
}
