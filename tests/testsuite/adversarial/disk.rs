//! Adversarial cases: a full disk (see mod.rs). The small filesystem is a
//! tmpfs that `scripts/small-fs` mounts (as root; `.ci/run` does it) and
//! names in `GIT_DELEGATE_SMALL_FS_DIR`. Without it these tests say SKIPPED,
//! and fail under `CI=true`. They fill that filesystem, so they run one at
//! a time (`common::mounts::Small` holds the lock every test that fills a
//! small filesystem takes), each in its own folder there, removed at the end.
use crate::common::files::read_bytes;
use crate::common::fixtures::task_root;

use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::{digest, noise_files};
use crate::common::fixtures::{common_dir_as_printed, error_parts, prepare, set_workspace_root};
use crate::common::mounts::Small;
use crate::common::Env;

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// Nothing of git-delegate left: no private refs, no registrations, no batch state.
fn nothing_left(env: &Env, repo: &Path) {
    let common = common_dir_as_printed(env, repo);
    assert_eq!(env.private_refs(repo), Vec::<String>::new(), "private refs");
    assert_eq!(listing(&common.join("worktrees")), Vec::<PathBuf>::new());
    assert_eq!(
        listing(&common.join("delegate/batches")),
        Vec::<PathBuf>::new(),
        "batch state"
    );
}

/// `prepare --json -n 2` fails with `delegate::disk_full`, its message
/// naming ENOSPC: (the run, the message, the help).
#[track_caller]
fn prepare_runs_out_of_space(env: &Env, repo: &Path) -> (crate::common::Run, String, String) {
    let run = env
        .delegate(repo, ["prepare", "--json", "-n", "2"])
        .expect(3);
    let (code, message, help) = error_parts(&run);
    assert_eq!(code, "delegate::disk_full", "{}", run.stdout);
    assert!(
        message.contains("no space left on device (ENOSPC"),
        "{message}"
    );
    (run, message, help)
}

#[test]
fn prepare_onto_a_full_workspace_root_names_enospc_and_leaves_nothing() {
    let Some(small) = Small::full_disk("prepare_onto_a_full_workspace_root") else {
        return;
    };
    let (env, repo) = Env::with_repo("src");
    noise_files(&repo, "f", 40, 20_000);
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    let root = small.path().join("root");
    set_workspace_root(&repo, &root);
    small.fill(64 << 10);

    let (run, message, help) = prepare_runs_out_of_space(&env, &repo);
    assert_has(&message, root.to_str().unwrap());
    assert_has(&help, "free space on");
    assert_has(&help, "workspace.root");
    assert_has(&run.stderr, "delegate::disk_full");
    nothing_left(&env, &repo);
    for base in listing(&root) {
        assert_eq!(listing(&base), Vec::<PathBuf>::new(), "{}", base.display());
    }
}

#[test]
fn prepare_of_a_source_on_a_full_disk_names_enospc_not_an_unreadable_file() {
    let Some(small) = Small::full_disk("prepare_of_a_source_on_a_full_disk") else {
        return;
    };
    let env = Env::new();
    let repo = env.repo_at(&small.path().join("src"), &[("README", "hello\n")]);
    // Untracked files: prepare stores them as blobs in the source's objects.
    noise_files(&repo, "new", 40, 20_000);
    // The delegate.toml confirmed (design §3.18) is recorded by the first
    // command that looks: here, before the disk fills.
    env.delegate(&repo, ["config"]).expect(0);
    small.fill(0);
    let before = digest(&repo, true);

    let (_, message, help) = prepare_runs_out_of_space(&env, &repo);
    assert_has(&message, "objects");
    assert!(!help.contains("readable"), "{help}");
    assert_has(&help, "free space on");
    std::fs::remove_file(&small.fill).unwrap();
    nothing_left(&env, &repo);
    assert_eq!(listing(&env.workspace_root()), Vec::<PathBuf>::new());
    assert!(digest(&repo, true) == before, "the source changed");
}

#[test]
fn apply_onto_a_full_source_disk_rolls_back_and_names_enospc() {
    let Some(small) = Small::full_disk("apply_onto_a_full_source_disk") else {
        return;
    };
    let env = Env::new();
    let repo = env.repo_at(
        &small.path().join("src"),
        &[("a.txt", "one\n"), ("b.txt", "two\n")],
    );
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    // The task edits a.txt and adds 3 MiB of binary: tiny as a blob and
    // as a binary patch, too big for what is left when it is written back
    // (not all zeros: whole blocks of zeros are written as holes, taking no
    // space).
    std::fs::write(ws.join("a.txt"), "one, edited\n").unwrap();
    std::fs::write(ws.join("big.bin"), b"x\0".repeat(3 << 19)).unwrap();
    small.fill(1 << 20);
    let before = digest(&repo, true);

    // Exit 3 (design §3 "Exit status"), the error in the apply document,
    // its help naming the full filesystem's mount point.
    let run = env.delegate(&repo, ["apply", "--json"]).expect(3);
    let out = run.json();
    assert_eq!(out["error"]["code"], "delegate::disk_full", "{out:#}");
    assert_has(
        out["error"]["help"].as_str().unwrap_or_default(),
        &format!(
            "the filesystem mounted at {}",
            std::path::Path::new(
                &std::env::var_os("GIT_DELEGATE_SMALL_FS_DIR").unwrap_or_default()
            )
            .display()
        ),
    );
    let t = &out["tasks"][0];
    assert_eq!(t["status"], "failed", "{out:#}");
    assert_eq!(t["reason"], "write_failed", "{out:#}");
    let message = t["message"].as_str().unwrap_or_default();
    assert_has(message, "no space left on device");
    assert_has(message, "rolled back");
    assert_has(&run.stderr, "no space left on device");
    assert!(digest(&repo, true) == before, "the source changed");
    let batch_dir = common_dir_as_printed(&env, &repo).join(format!(
        "delegate/batches/{}",
        doc["batch"].as_str().unwrap()
    ));
    assert!(!batch_dir.join("writeback.journal").exists());
    // The work is kept: the workspace still holds it.
    assert_eq!(read_bytes(&ws.join("a.txt")), b"one, edited\n");
    // With space again, the same apply writes it.
    std::fs::remove_file(&small.fill).unwrap();
    env.delegate(&repo, ["apply", "--json"]).expect(0);
    assert_eq!(read_bytes(&repo.join("a.txt")), b"one, edited\n");
    assert_eq!(read_bytes(&repo.join("big.bin")).len(), 3 << 20);
}

#[test]
fn apply_that_cannot_record_a_proposal_on_a_full_disk_names_enospc_and_keeps_the_work() {
    let Some(small) = Small::full_disk("apply_that_cannot_record_a_proposal_on_a_full_disk") else {
        return;
    };
    let env = Env::new();
    let repo = env.repo_at(&small.path().join("src"), &[("a.txt", "one\n")]);
    let doc = prepare(&env, &repo, &["-n", "1"]);
    let ws = task_root(&doc, 0);
    // Incompressible: its blob does not fit in what is left.
    noise_files(&ws, "big", 1, 2 << 20);
    std::fs::write(ws.join("a.txt"), "one, edited\n").unwrap();
    small.fill(256 << 10);
    let before = digest(&repo, true);

    let run = env.delegate(&repo, ["apply", "--json"]).expect(1);
    let out = run.json();
    let t = &out["tasks"][0];
    assert_eq!(t["status"], "failed", "{out:#}");
    assert_eq!(t["reason"], "snapshot_failed", "{out:#}");
    let message = t["message"].as_str().unwrap_or_default();
    assert_has(message, "no space left on device");
    assert!(!message.contains("cannot read"), "{message}");
    assert!(digest(&repo, true) == before, "the source changed");
    assert_eq!(read_bytes(&ws.join("a.txt")), b"one, edited\n");
    assert!(ws.join("big0").exists());
}
