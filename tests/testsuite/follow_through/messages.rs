//! Messages a newcomer tripped on (issue 23 item 9), each checked by its
//! exact text and, where it prints a command, by running that command as
//! printed.
use crate::common::files::read_bytes;
use crate::common::fixtures::id;

use crate::common::fixtures::{paused_at, prepare_roots};
use std::path::Path;

use crate::common::assert_has;
use crate::common::{printed_command, Env};

fn prepare(env: &Env, repo: &Path, label: &str) -> String {
    let doc = env
        .delegate(repo, ["prepare", "--json", "-n", "1", "--label", label])
        .expect(0)
        .json();
    id(&doc)
}

fn open_batches(env: &Env, repo: &Path) -> Vec<String> {
    let doc = env.delegate(repo, ["status", "--json"]).expect(0).json();
    doc["batches"].as_array().unwrap().iter().map(id).collect()
}

#[test]
fn drop_without_a_batch_lists_the_open_ones_and_the_printed_command_drops_one() {
    let (env, repo) = Env::with_repo("r");
    // No batch: said so, exit 2.
    let none = env.delegate(&repo, ["drop"]).expect(2);
    assert!(
        none.stderr.contains("delegate::usage") && none.stderr.contains("no open batch"),
        "{}",
        none.stderr
    );
    let one = prepare(&env, &repo, "one");
    let two = prepare(&env, &repo, "two");
    let run = env.delegate(&repo, ["drop"]).expect(2);
    assert_has(&run.stderr, "delegate::usage");
    assert!(
        run.stderr.contains(&format!("{} (one)", &one[..8]))
            && run.stderr.contains(&format!("{} (two)", &two[..8])),
        "{}",
        run.stderr
    );
    // Nothing was dropped by the bare command.
    assert_eq!(open_batches(&env, &repo).len(), 2);
    let cmd = printed_command(&run.stderr, "git delegate drop");
    env.sh(&repo, &cmd).expect(0);
    let left = open_batches(&env, &repo);
    assert_eq!(left.len(), 1, "{cmd}");
    // With --json the error is the one document on stdout.
    let doc = env.delegate(&repo, ["drop", "--json"]).expect(2).json();
    assert_eq!(doc["error"]["code"], "delegate::usage");
}

#[test]
fn path_and_diff_with_several_batches_say_they_take_batch_and_the_hint_works() {
    let (env, repo) = Env::with_repo("r");
    let one = prepare(&env, &repo, "one");
    let two = prepare(&env, &repo, "two");
    for args in [
        vec!["path", "1"],
        vec!["diff", "1"],
        vec!["diff", "--source"],
    ] {
        let run = env.delegate(&repo, &args).expect(2);
        assert!(
            run.stderr.contains("delegate::ambiguous_batch") && run.stderr.contains("--batch"),
            "{args:?}: {}",
            run.stderr
        );
        let start = format!("git delegate {}", args.join(" "));
        let cmd = printed_command(&run.stderr, &start);
        assert!(
            cmd.ends_with(&format!("--batch {}", &one[..8]))
                || cmd.ends_with(&format!("--batch {}", &two[..8])),
            "{cmd}"
        );
        env.sh(&repo, &cmd).expect(0);
    }
}

#[test]
fn an_expired_lease_is_said_once() {
    let (env, repo) = Env::with_repo("r");
    env.delegate(&repo, ["prepare", "-n", "1", "--ttl", "1s"])
        .expect(0);
    // Wait for the lease to expire (an event status reports).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let doc = env.delegate(&repo, ["status", "--json"]).json();
        if doc["batches"][0]["lease"]["state"] == "expired" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never expired");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let text = env.delegate(&repo, ["status"]).stdout;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("lease "))
        .unwrap_or_else(|| panic!("no lease line in:\n{text}"));
    assert!(
        line.trim_start().starts_with("lease expired ") && line.ends_with(" ago"),
        "{line}"
    );
    assert!(!line.contains("expired, expired"), "{line}");
}

#[test]
fn a_sparse_file_lands_with_its_holes() {
    use std::os::unix::fs::MetadataExt;
    let (env, repo) = Env::with_repo("r");
    let ws = prepare_roots(&env, &repo, &["-n", "1"]).1.remove(0);
    // 64 MiB, all holes but a head and a tail, as `truncate` makes it.
    let big = ws.join("disk.img");
    {
        use std::io::{Seek, Write};
        let mut f = std::fs::File::create(&big).unwrap();
        f.write_all(b"head").unwrap();
        f.seek(std::io::SeekFrom::Start((64 << 20) - 4)).unwrap();
        f.write_all(b"tail").unwrap();
    }
    let allocated = |p: &Path| std::fs::metadata(p).unwrap().blocks() * 512;
    if allocated(&big) >= 8 << 20 {
        eprintln!("SKIPPED: this filesystem keeps no holes");
        return;
    }
    let want = env.git(&ws, ["hash-object", "disk.img"]);
    env.delegate(&repo, ["apply"]).expect(0);
    let landed = repo.join("disk.img");
    assert_eq!(std::fs::metadata(&landed).unwrap().len(), 64 << 20);
    assert_eq!(env.git(&repo, ["hash-object", "disk.img"]), want);
    assert!(
        allocated(&landed) < 8 << 20,
        "{} bytes allocated for a 64 MiB file that is almost all holes",
        allocated(&landed)
    );
}

/// Where the column holding `word` starts in the line of `task`.
fn column(text: &str, task: &str, word: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("task {task} ")) && l.contains(word))
        .unwrap_or_else(|| panic!("no line of task {task} with {word:?} in:\n{text}"));
    line.find(word).unwrap_or_default()
}

#[test]
fn a_failed_worker_is_named_once_and_its_row_lines_up() {
    let (env, repo) = Env::with_repo("r");
    let run = env.delegate(
        &repo,
        [
            "run",
            "-n",
            "2",
            "--",
            "sh",
            "-c",
            "echo x > f$GIT_DELEGATE_TASK; [ $GIT_DELEGATE_TASK = 1 ]",
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let text = &run.stdout;
    assert!(!text.contains("worker_failed worker_failed"), "{text}");
    assert_has(text, "worker_failed its worker exited with status 1");
    // The details of both rows start in one column.
    assert_eq!(
        column(text, "1", "1 path written"),
        column(text, "2", "its worker exited"),
        "{text}"
    );
    let status = env.delegate(&repo, ["status"]).stdout;
    assert!(!status.contains("(worker_failed)"), "{status}");
    assert_eq!(
        column(&status, "1", "0 changed"),
        column(&status, "2", "1 changed"),
        "{status}"
    );
}

#[test]
fn a_killed_refresh_is_told_as_a_refresh_of_the_workspace() {
    use std::process::Stdio;
    let (env, repo) = Env::with_repo("r");
    let ws = prepare_roots(&env, &repo, &["-n", "1"]).1.remove(0);
    std::fs::write(ws.join("task.txt"), "the task's\n").unwrap();
    // A change of the user's that the refresh brings into the workspace.
    std::fs::write(repo.join("user.txt"), "the user's\n").unwrap();
    let mut refresh = env.delegate_cmd(&repo);
    refresh
        .args(["refresh", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = paused_at(&env, refresh, "writeback-after-temp-files");
    child.kill().unwrap();
    child.wait().unwrap();
    let gc = env.delegate(&repo, ["gc"]);
    assert!(
        gc.stderr
            .contains("rolled back an interrupted refresh of batch")
            && gc
                .stderr
                .contains("workspace is as it was before that refresh"),
        "{}",
        gc.stderr
    );
    assert!(
        !gc.stderr
            .contains("the working tree is as it was before that apply"),
        "{}",
        gc.stderr
    );
    assert!(!ws.join("user.txt").exists());
    assert_eq!(read_bytes(&repo.join("user.txt")), b"the user's\n");
}
