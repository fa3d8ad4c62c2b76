//! Files as tests read, write and compare them: the tree below a folder
//! (`tree`, `entries_below`), reading (`read`, `read_lossy`), text made to
//! order (`lines`, `with_line`, `noise_files`), modes and hook scripts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every path below `root` (its `.git` left out): mode and bytes (a
/// symlink's target, nothing for a folder).
pub type Tree = std::collections::BTreeMap<Vec<u8>, (u32, Vec<u8>)>;

pub fn tree(root: &Path) -> Tree {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if dir == root && e.file_name() == ".git" {
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if md.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec()
            } else if md.is_dir() {
                stack.push(p);
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(rel, (md.permissions().mode(), bytes));
        }
    }
    out
}

/// The paths whose mode or bytes differ between `a` and `b`, and, marked
/// `-`, those only `b` has.
pub fn tree_differences(a: &Tree, b: &Tree) -> Vec<String> {
    let mut d: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect();
    d.extend(
        b.keys()
            .filter(|k| !a.contains_key(*k))
            .map(|k| format!("-{}", String::from_utf8_lossy(k))),
    );
    d
}

/// Everything below `root` (relative paths, folders included, symlinks not
/// followed, a folder that cannot be read passed over) with its metadata
/// and content: a file's bytes, a symlink's target, nothing for a folder.
/// With `skip_top_git`, a `.git` folder right below `root` is left out.
pub fn entries_below(
    root: &Path,
    skip_top_git: bool,
) -> Vec<(PathBuf, std::fs::Metadata, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if skip_top_git
                && dir == root
                && p.file_name().is_some_and(|n| n == ".git")
                && p.is_dir()
            {
                continue;
            }
            let m = p.symlink_metadata().unwrap();
            let content = if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if m.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                stack.push(p.clone());
                Vec::new()
            };
            out.push((p.strip_prefix(root).unwrap().to_path_buf(), m, content));
        }
    }
    out
}

/// A file's text, panicking with its path when it cannot be read.
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A file's bytes, panicking with its path when it cannot be read.
pub fn read_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A file's bytes as text, invalid UTF-8 replaced.
pub fn read_lossy(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned()
}

/// `n` lines `line 1` .. `line n`.
pub fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// `n` lines `line I`, line `which` (from 1) replaced by `new`.
pub fn lines_with(n: usize, which: usize, new: &str) -> String {
    with_line(&lines(n), which, new)
}

/// `text` with its line `which` (from 1) replaced by `new`.
pub fn with_line(text: &str, which: usize, new: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == which {
                format!("{new}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// Set a file's mode bits.
pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Write an executable hook script, making its folders.
pub fn write_hook(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Bytes as an OS string.
pub fn os(bytes: &[u8]) -> &std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(bytes)
}

/// `len` random-looking (incompressible) bytes from the xorshift64 state
/// `state`, which goes on from where they end.
pub fn xorshift_bytes(state: &mut u64, len: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() < len {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// `n` files `<prefix>0`.. of `size` random-looking (incompressible) bytes.
pub fn noise_files(dir: &Path, prefix: &str, n: usize, size: usize) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ (n as u64) ^ prefix.len() as u64;
    for i in 0..n {
        let bytes = xorshift_bytes(&mut state, size);
        std::fs::write(dir.join(format!("{prefix}{i}")), bytes).unwrap();
    }
}

/// Every byte, name, type and exec bit below `dir` (with `skip_git`, a `.git` right below `dir` left out), as one byte string to compare.
pub fn digest(dir: &Path, skip_git: bool) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if skip_git && p.file_name().is_some_and(|n| n == ".git") && d == dir {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                stack.push(p.clone());
            }
            entries.push((p, md));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, md) in entries {
        out.extend_from_slice(p.strip_prefix(dir).unwrap().as_os_str().as_bytes());
        out.push(0);
        if md.file_type().is_symlink() {
            out.extend_from_slice(b"L");
            out.extend_from_slice(std::fs::read_link(&p).unwrap().as_os_str().as_bytes());
        } else if md.is_dir() {
            out.extend_from_slice(b"D");
        } else {
            out.extend_from_slice(
                format!("F{:o}", std::os::unix::fs::MetadataExt::mode(&md) & 0o111).as_bytes(),
            );
            out.extend_from_slice(&std::fs::read(&p).unwrap());
        }
        out.push(0);
    }
    out
}
