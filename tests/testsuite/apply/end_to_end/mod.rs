//! `git delegate apply` (design §3.2) end to end, on real repositories.
//! Here: what the files share; the tests are in `merge` (what comes back),
//! `processes` (what still runs in a workspace), `options` (`--only`,
//! `--discard`, `--keep`, `--dry-run`, the output), `nested` (repositories
//! and batches inside a workspace) and `failures` (what fails, what is left).

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::files::{digest, lines, lines_with, os, read_lossy};
use crate::common::fixtures::{
    commit_files, index_bytes, prepare_roots, strings, task, wait_until,
};
use crate::common::procs::{alive, tty_nr};
use crate::common::Env;
use serde_json::Value;

mod failures;
mod merge;
mod nested;
mod options;
mod processes;

fn apply(env: &Env, repo: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["apply", "--json"];
    all.extend_from_slice(args);
    env.delegate(repo, all).expect(code).json()
}

fn worktree_list(env: &Env, repo: &Path) -> String {
    env.git(repo, ["worktree", "list", "--porcelain"])
}

fn repo_with_lines(env: &Env) -> PathBuf {
    let repo = env.repo("proj");
    commit_files(env, &repo, &[("f.txt", &lines(10))], "lines");
    repo
}
