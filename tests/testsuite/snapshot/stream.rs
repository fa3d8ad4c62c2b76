//! Big files are streamed into the object store (never held in memory
//! whole) and still give exactly the tree `git add -A` gives, with the
//! executable bit; files that a clean filter changes take the ordinary path.

use crate::common::fixtures::*;

/// Deterministic bytes that no eol conversion would touch.
fn binary(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn big_files_match_git_add_all() {
    let (env, repo) = Env::with_repo("big");
    let nine_mib = 9 << 20;
    std::fs::write(repo.join("tracked.bin"), binary(nine_mib, 1)).unwrap();
    // Text that `* text=auto eol=crlf` converts: the filtered path.
    let text: String = (0..900_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("text.txt"), &text).unwrap();
    write(&repo.join(".gitattributes"), "*.txt text=auto eol=crlf\n");
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "big"]);
    // Modified in place, grown, made executable; a new big file; the text
    // file rewritten with CRLF endings (cleaned back to LF).
    let mut changed = binary(nine_mib + 17, 2);
    changed[4096] ^= 1;
    std::fs::write(repo.join("tracked.bin"), &changed).unwrap();
    set_exec(&repo.join("tracked.bin"), true);
    std::fs::write(
        repo.join("untracked.bin"),
        binary(nine_mib / 2 + (4 << 20), 3),
    )
    .unwrap();
    std::fs::write(
        repo.join("text.txt"),
        text.replace('\n', "\r\n") + "more\r\n",
    )
    .unwrap();
    let (tree, hashed) = snapshot(&env, &repo);
    assert!(hashed >= 3, "hashed {hashed}");
    assert_eq!(tree, env.oracle_tree(&repo));
    let mode = env.git(&repo, ["ls-tree", &tree, "tracked.bin"]);
    assert!(mode.starts_with("100755 "), "{mode}");
}
