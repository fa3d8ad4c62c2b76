//! Path bombs (design §3.18 "Limits", "Bounded work on remote bytes"): a
//! proposal whose tree names one subtree a thousand times at each of three
//! levels, a billion paths from a few KB of objects, written straight into
//! the bare remote with git plumbing as an attacker would; and a path
//! longer than `PATH_MAX`, which git fetches but cannot check out. Every command
//! that walks a proposal's trees (apply plain, `--dry-run`, `--verify`,
//! `--discard`, `--kept`, `--from-undo`, `undo`, `branch`, `status
//! --fetch`, gc's rescue) refuses it for its task alone as `invalid_path`,
//! under an address-space limit far below what expanding it takes, while
//! the other tasks land.
use crate::common::files::read_bytes;
use crate::common::fixtures::task_root;
use crate::common::{assert_has, Run};

use super::*;

/// The address-space limit the bomb's commands run under (`ulimit -v`,
/// KiB): 4 GB, where expanding a billion paths takes hundreds.
const LIMIT_KIB: &str = "4000000";

/// Run git-delegate `args` in `dir` as `env`, under [`LIMIT_KIB`] and a
/// timeout (a guard against a hang only: killed, it exits 137).
fn limited(env: &Env, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = env.command("sh", dir);
    cmd.arg("-c")
        .arg(format!(
            "ulimit -v {LIMIT_KIB} && exec timeout -s KILL 600 \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_git-delegate"))
        .args(args);
    Run::from(cmd.output().expect("run sh"))
}

/// What the bottom of a bomb holds: a file, or an empty folder (git cannot
/// check one out, but a tree object can name it).
#[derive(Clone, Copy)]
enum Leaf {
    File,
    EmptyFolder,
}

/// A tree naming one subtree `fan` times at each of `depth` levels (the
/// lowest naming `leaf` `fan` times): `fan^depth` paths from `depth + 1`
/// objects, written in `repo` with `git mktree`. Its id.
fn nest(env: &Env, repo: &Path, fan: usize, depth: usize, leaf: Leaf) -> String {
    let (mut mode, mut kind, mut id) = match leaf {
        Leaf::File => (
            "100644",
            "blob",
            git_in(env, repo, &["hash-object", "-w", "--stdin"], b"boom\n"),
        ),
        Leaf::EmptyFolder => (
            "040000",
            "tree",
            git_in(
                env,
                repo,
                &["hash-object", "-t", "tree", "-w", "--stdin"],
                b"",
            ),
        ),
    };
    for level in 0..depth {
        let listing: String = (0..fan)
            .map(|i| format!("{mode} {kind} {id}\tn{level}-{i}\n"))
            .collect();
        id = git_in(env, repo, &["mktree"], listing.as_bytes());
        (mode, kind) = ("040000", "tree");
    }
    id
}

impl Remote {
    /// The attacker writes, straight into the bare remote, task `task`'s
    /// proposal: the batch's baseline with a folder `bomb` holding a
    /// 1000 x 1000 x 1000 nest over `leaf`. The commit.
    fn bomb(&self, id: &str, task: &str, leaf: Leaf) -> String {
        let a = &self.attacker;
        let base = self.baseline_in_remote(id);
        let folder = nest(a, &self.bare, 1000, 3, leaf);
        let commit = with_folder(a, &self.bare, &base, "bomb", &folder);
        a.git(
            &self.bare,
            [
                "update-ref",
                &format!("refs/pi-delegate/batches/{id}/tasks/{task}/proposal"),
                &commit,
            ],
        );
        commit
    }
}

/// `bomb` of `doc` refused as a path bomb, its ref kept, with no patch.
fn assert_bomb_refused(doc: &Value) {
    let bomb = task(doc, "bomb");
    assert_eq!(bomb["status"], "conflict", "{bomb}");
    assert_eq!(bomb["reason"], "invalid_path", "{bomb}");
    assert_eq!(
        bomb["conflicts"][0]["reason"], "too many changed paths (more than 1000000)",
        "{bomb}"
    );
    let at = bomb["conflicts"][0]["path"].as_str().unwrap();
    assert!(at.starts_with("bomb/"), "{bomb}");
}

#[test]
fn a_billion_path_bomb_is_refused_alone_in_bounded_memory_by_every_command() {
    let t = remote_setup();
    let doc = t.prepare(&["bomb", "good", "here", "--local", "here"]);
    let id = doc["batch"].as_str().unwrap().to_string();
    let here = task_root(&doc, 2);
    std::fs::write(here.join("here.txt"), "local work\n").unwrap();
    let commit = t.bomb(&id, "bomb", Leaf::File);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let json = |args: &[&str], code: i32| -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        limited(&t.user, &t.src, &all).expect(code).json()
    };

    // The dry run says so, writing nothing.
    let dry = json(&["apply", &id, "--dry-run"], 1);
    assert_bomb_refused(&dry);
    assert!(absent(&t.src, "good.txt") && absent(&t.src, "here.txt"));
    // `status --fetch` lists what was submitted (the remote is only listed).
    let status = json(&["status", "--fetch"], 0);
    let tasks = status["batches"][0]["tasks"].as_array().unwrap();
    let bomb = tasks.iter().find(|x| x["name"] == "bomb").unwrap();
    assert_eq!(bomb["submitted"], true, "{status}");
    // `branch` refuses the task, naming why.
    let run = limited(&t.user, &t.src, &["branch", "bomb", "--json"]).expect(3);
    let e = run.json()["error"].clone();
    assert_eq!(e["code"], "delegate::invalid_path", "{e}");
    assert_has(e["message"].as_str().unwrap(), "too many changed paths");
    // Apply with a verification: the others land, the bomb is refused.
    let doc = json(&["apply", &id, "--verify", "true"], 1);
    assert_bomb_refused(&doc);
    assert!(task(&doc, "bomb")["proposal_ref"].is_string(), "{doc}");
    assert!(task(&doc, "bomb")["patch"].is_null(), "{doc}");
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert_eq!(task(&doc, "here")["status"], "applied", "{doc}");
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
    assert_eq!(read_bytes(&t.src.join("here.txt")), b"local work\n");
    assert!(absent(&t.src, "bomb"));
    // Again, plain: still refused alone.
    assert_bomb_refused(&json(&["apply", &id], 1));
    // Discarded, its submission is kept (the ref alone)...
    let doc = json(&["apply", &id, "--discard", "bomb"], 0);
    assert_eq!(task(&doc, "bomb")["status"], "discarded", "{doc}");
    let kept = task(&doc, "bomb")["proposal_ref"]
        .as_str()
        .unwrap()
        .to_string();
    let tree = |r: &str| t.user.git(&t.src, ["rev-parse", &format!("{r}^{{tree}}")]);
    assert_eq!(tree(&kept), tree(&commit));
    // ... and `apply --kept` refuses it the same way, keeping it.
    let doc = json(&["apply", "--kept", &kept], 1);
    assert_bomb_refused(&doc);
    assert!(absent(&t.src, "bomb"));
    assert_eq!(tree(&kept), tree(&commit));
}

#[test]
fn a_bomb_of_empty_folders_is_refused_too() {
    // No file at all: a billion folders, which git never checks out but a
    // tree diff would walk.
    let t = remote_setup();
    let id = t.prepare(&["bomb", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.bomb(&id, "bomb", Leaf::EmptyFolder);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    let doc = limited(&t.user, &t.src, &["apply", &id, "--json"])
        .expect(1)
        .json();
    assert_bomb_refused(&doc);
    assert_eq!(task(&doc, "good")["status"], "applied", "{doc}");
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
}

#[test]
fn gc_rescues_a_stale_bomb_as_its_ref_alone_in_bounded_memory() {
    let t = remote_setup();
    let id = t.prepare(&["bomb", "good", "--ttl", "1s"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    let commit = t.bomb(&id, "bomb", Leaf::File);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    crate::common::fixtures::wait_stale(&t.user, &t.src, &id);
    let gc = limited(&t.user, &t.src, &["gc", "--json"]).expect(0).json();
    let rescued = gc["rescued"].as_array().unwrap();
    assert_eq!(rescued.len(), 2, "{gc}");
    let kept = format!("refs/pi-delegate/batches/{id}/tasks/bomb/proposal");
    assert_eq!(t.user.git(&t.src, ["rev-parse", &kept]).trim(), commit);
    // gc's document names no patch for the bomb (none is written), and
    // the good one's patch, which is there.
    for r in rescued {
        match r["task"].as_str() {
            Some("bomb") => assert!(r.get("patch").is_none(), "{gc:#}"),
            _ => {
                let patch = r["patch"].as_str().unwrap_or_else(|| panic!("{gc:#}"));
                assert!(std::path::Path::new(patch).is_file(), "{gc:#}");
            }
        }
    }
    // Kept with no patch (it would be as large as the bomb).
    let status = t
        .user
        .delegate(&t.src, ["status", "--json"])
        .expect(0)
        .json();
    let entry = status["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["ref"] == kept.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{kept} not kept: {status}"));
    assert!(entry["patch"].is_null(), "{entry}");
    // The good one's work lands from its kept proposal; the bomb is refused.
    let good = format!("refs/pi-delegate/batches/{id}/tasks/good/proposal");
    limited(&t.user, &t.src, &["apply", "--kept", &good]).expect(0);
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
    let doc = limited(&t.user, &t.src, &["apply", "--kept", &kept, "--json"])
        .expect(1)
        .json();
    assert_bomb_refused(&doc);
}

/// Undo entries moved to a bomb by a worker sharing the repository: undo
/// and `apply --from-undo` refuse them in bounded memory.
#[test]
fn undo_and_apply_from_undo_refuse_a_bomb_in_bounded_memory() {
    let AppliedOne {
        env,
        src,
        id,
        ws2,
        apply_id,
        ..
    } = applied_one();
    let base = env.git(
        &ws2,
        [
            "rev-parse",
            &format!("refs/pi-delegate/batches/{id}/baseline"),
        ],
    );
    let folder = nest(&env, &ws2, 1000, 3, Leaf::File);
    let bomb = with_folder(&env, &ws2, base.trim(), "bomb", &folder);
    // The entry's `F` (what the apply left) moved to the bomb.
    let entry = format!("refs/pi-delegate/undo/{apply_id}/entry");
    let real = env.git(&ws2, ["rev-parse", &entry]);
    env.git(&ws2, ["update-ref", &entry, &bomb]);
    let run = limited(&env, &src, &["undo", "--json"]).expect(3);
    invalid_path_error(&run, "too many changed paths");
    assert!(absent(&src, "bomb"));
    // Back as it was: undone, then its kept proposal moved to the bomb.
    env.git(&ws2, ["update-ref", &entry, real.trim()]);
    env.delegate(&src, ["undo", "--json"]).expect(0);
    env.git(
        &ws2,
        [
            "update-ref",
            &format!("refs/pi-delegate/undo/{apply_id}/tasks/1"),
            &bomb,
        ],
    );
    let doc = limited(&env, &src, &["apply", "--from-undo", &apply_id, "--json"])
        .expect(1)
        .json();
    let t = &doc["tasks"][0];
    assert_eq!(t["reason"], "invalid_path", "{doc}");
    assert_eq!(
        t["conflicts"][0]["reason"], "too many changed paths (more than 1000000)",
        "{doc}"
    );
    assert!(absent(&src, "bomb"));
}

#[test]
fn a_path_longer_than_any_system_call_takes_is_refused_alone() {
    // 20 folders of 250 bytes: a path of 5020 bytes, which git fetches but
    // no system call takes (`PATH_MAX`), so git cannot check it out.
    let t = remote_setup();
    let id = t.prepare(&["deep", "good"])["batch"]
        .as_str()
        .unwrap()
        .to_string();
    t.nested(&id, "deep", &"d".repeat(250), 20);
    t.push(&id, "good", vec![(b"good.txt", Node::File(b"good\n"))]);
    for args in [
        vec!["apply", &id, "--dry-run", "--json"],
        vec!["apply", &id, "--json"],
    ] {
        let doc = t.user.delegate(&t.src, &args).expect(1).json();
        let deep = task(&doc, "deep");
        assert_eq!(deep["status"], "conflict", "{deep}");
        assert_eq!(deep["reason"], "invalid_path", "{deep}");
        assert_eq!(
            deep["conflicts"][0]["reason"], "path longer than 4095 bytes",
            "{deep}"
        );
    }
    assert_eq!(read_bytes(&t.src.join("good.txt")), b"good\n");
    assert!(absent(&t.src, &"d".repeat(250)));
}

#[test]
fn a_kept_proposal_nested_thousands_deep_is_refused_without_a_crash() {
    // A worker sharing the repository writes a kept proposal (of a batch
    // that is gone) with a file below 3000 folders: git writes it locally
    // (only its upload-pack refuses to send it), and no walk of it may
    // recurse on the thread's stack.
    let (env, src) = Env::with_repo("src");
    let head = env.git(&src, ["rev-parse", "HEAD"]);
    let name = "refs/pi-delegate/batches/11111111-2222-3333-4444-555555555555/tasks/x/proposal";
    nested_commit(&env, &src, name, head.trim(), ("d", 3000));
    for args in [
        vec!["apply", "--kept", name, "--dry-run", "--json"],
        vec!["apply", "--kept", name, "--json"],
    ] {
        let doc = env.delegate(&src, &args).expect(1).json();
        let x = task(&doc, "x");
        assert_eq!(x["status"], "conflict", "{x}");
        assert_eq!(x["reason"], "invalid_path", "{x}");
        assert_eq!(
            x["conflicts"][0]["reason"], "path longer than 4095 bytes",
            "{x}"
        );
    }
    assert!(absent(&src, "d"));
    assert_eq!(read_bytes(&src.join("README")), b"hello\n");
}

#[test]
fn a_kept_proposal_made_on_a_bomb_lands_only_its_own_change_in_bounded_memory() {
    // A worker sharing the repository writes a kept proposal whose tree is
    // its parent's plus one file, the parent holding the bomb: small
    // against its base, a billion paths against the source. Its change is
    // the one file; nothing walks the bomb.
    let (env, src) = Env::with_repo("src");
    let head = env.git(&src, ["rev-parse", "HEAD"]);
    let folder = nest(&env, &src, 1000, 3, Leaf::File);
    let base = with_folder(&env, &src, head.trim(), "bomb", &folder);
    let commit = commit_on(&env, &src, &base, vec![(b"new.txt", Node::File(b"new\n"))]);
    let name = "refs/pi-delegate/batches/11111111-2222-3333-4444-555555555555/tasks/x/proposal";
    env.git(&src, ["update-ref", name, &commit]);
    let doc = limited(&env, &src, &["apply", "--kept", name, "--json"])
        .expect(0)
        .json();
    assert_eq!(
        doc["applied_paths"],
        serde_json::json!(["new.txt"]),
        "{doc}"
    );
    assert_eq!(read_bytes(&src.join("new.txt")), b"new\n");
    assert!(absent(&src, "bomb"));
}
