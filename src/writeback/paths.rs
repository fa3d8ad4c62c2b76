//! The write-back's helpers for `/`-separated paths relative to the
//! working tree's root: a path's parent and name, joining them, the
//! folders above a path, its depth.
//!
//! Owns: these computations on byte paths.
//! Never: touches the disk (`dirs` does).

use gix::bstr::{BStr, BString, ByteSlice};

/// `(parent, name)` of a `/`-separated relative path (`parent` empty at the root).
pub(super) fn split(path: &BStr) -> (&BStr, &BStr) {
    match path.rfind_byte(b'/') {
        Some(i) => (path[..i].as_bstr(), path[i + 1..].as_bstr()),
        None => (b"".as_bstr(), path),
    }
}

pub(super) fn join(dir: &BStr, name: &BStr) -> BString {
    let mut out = BString::from(dir);
    if !out.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// The folders above `path`, shallowest first (`a`, `a/b` for `a/b/c`).
pub(super) fn parents(path: &BStr) -> impl Iterator<Item = &BStr> {
    path.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'/')
        .map(move |(i, _)| path[..i].as_bstr())
}

/// The folders above `dir` and `dir` itself (nothing for the root).
pub(super) fn parents_and_self(dir: &BStr) -> impl Iterator<Item = &BStr> {
    parents(dir).chain((!dir.is_empty()).then_some(dir))
}

pub(super) fn depth(path: &BStr) -> usize {
    path.iter().filter(|&&b| b == b'/').count()
}
