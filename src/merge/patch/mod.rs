//! Patches: a binary, full-index diff between two trees that
//! `git apply --3way` accepts (the recovery form of a proposal), and the
//! same diff as plain `git diff` prints it (`Form`, for `git delegate diff`).
//!
//! Owns: rendering a diff of two trees as git patch text, in the form
//! `git diff --full-index --binary --no-renames` prints: `diff --git`
//! headers with C-quoted odd names (as with `core.quotePath=true`), mode
//! lines, full `index` lines, unified text hunks with 3 lines of context,
//! and `GIT binary patch` literal blocks (zlib + git's base85) for binary
//! files. A type change (file <-> symlink) is a deletion and an addition.
//! A blob of more than 8 MiB ([`crate::git::blob::STREAM_ABOVE`]) is never read
//! into the patch: its change is git's `Binary files a/x and b/x differ`
//! line under the full `index` line, which `git apply` (and `--3way`)
//! applies by taking the new blob from the object store, where the
//! proposal ref keeps it (a literal of a 1 GiB file would be a patch of
//! more than a gigabyte, built in memory).
//! For a terminal, the same text painted as `git diff --color` paints it
//! (`paint_change`; the colours are `paint`'s, in this folder).
//! Never: touches the working tree or refs.

use std::io::Write as _;
use std::path::Path;

use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::git::diff::{self, PathChange};
use crate::merge::MergeError;

type Result<T, E = MergeError> = std::result::Result<T, E>;

/// How a patch is written: as `git diff` prints it (abbreviated `index`
/// lines, `Binary files ... differ` for binary files), or with
/// `--full-index` and `--binary` (what `git apply` takes for binary
/// files, and the form of the patches kept beside proposals). As in git,
/// a binary patch's `index` line has full ids even without --full-index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    pub full_index: bool,
    pub binary: bool,
}

impl Form {
    /// `git diff --full-index --binary`: the kept patches' form.
    pub const FULL: Form = Form {
        full_index: true,
        binary: true,
    };
    /// `git diff` with git's defaults.
    pub const GIT_DIFF: Form = Form {
        full_index: false,
        binary: false,
    };
}

/// Lines of context around each text hunk.
const CONTEXT: u32 = 3;
/// How much of a blob git looks at to decide that it is binary.
const FIRST_FEW_BYTES: usize = 8000;

/// Write the patch from `old_tree` to `new_tree` to `out` (temp + rename).
/// A proposal past the bound of design §3.18 "Limits" has no patch (it
/// would be as large as what its tree expands to): nothing is written, and
/// a patch left at `out` by an earlier proposal is removed, so that it
/// never stands beside this one.
pub fn write_patch(
    repo: &gix::Repository,
    old_tree: ObjectId,
    new_tree: ObjectId,
    out: &Path,
) -> Result<()> {
    let text = match diff::bounded(repo, old_tree, new_tree) {
        Ok(changes) => render_changes(repo, &changes, Form::FULL)?,
        Err(diff::DiffError::TooMany { .. }) => return Ok(crate::sys::fs::remove_file(out)?),
        Err(e) => return Err(e.into()),
    };
    Ok(crate::sys::fs::write_atomic(out, &text)?)
}

/// The patch of `changes` (from [`diff::trees`], possibly a subset) as bytes.
pub fn render_changes(
    repo: &gix::Repository,
    changes: &[PathChange],
    form: Form,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let ids = Ids::new(repo, form);
    for change in changes {
        render_change(repo, change, &mut out, &ids)?;
    }
    Ok(out)
}

/// `plain`, the patch of one `change` as [`render_changes`] renders it,
/// as `git diff --color=always` prints it with git's default colours and
/// whitespace rules (`core.whitespace` unset): headers bold, `@@` lines
/// cyan, removed lines red, added lines green with whitespace errors
/// (trailing blanks, a space before a tab in the indent, blank lines added
/// at the end of the file) on a red background; binary patches plain.
/// Byte-equal to git's output for the same change.
pub fn paint_change(repo: &gix::Repository, change: &PathChange, plain: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    paint::section(plain, blank_at_eof_of(repo, change)?, &mut out);
    Ok(out)
}

/// git's `check_blank_at_eof` for one change: where added blank lines
/// start being "blank at end of file" errors, as (preimage, postimage)
/// line thresholds; `None` when no added line can be one.
fn blank_at_eof_of(repo: &gix::Repository, c: &PathChange) -> Result<Option<(u32, u32)>> {
    let text = |side: Option<(EntryKind, ObjectId)>| -> Result<Option<Vec<u8>>> {
        match side {
            None => Ok(Some(Vec::new())),
            Some((kind, id)) if too_big(repo, kind, id)? => Ok(None),
            Some((kind, id)) => Ok(Some(content(repo, kind, id)?)),
        }
    };
    let old = match (c.old, c.new) {
        (Some((ok, _)), Some((nk, _))) if !same_type(ok, nk) => None,
        (old, _) => old,
    };
    let (Some(o), Some(n)) = (text(old)?, text(c.new)?) else {
        return Ok(None);
    };
    if is_binary(&o) || is_binary(&n) {
        return Ok(None);
    }
    Ok(paint::blank_at_eof(&o, &n))
}

fn mode(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Blob => "100644",
        EntryKind::BlobExecutable => "100755",
        EntryKind::Link => "120000",
        EntryKind::Commit => "160000",
        EntryKind::Tree => "040000",
    }
}

/// Same kind of object on both sides, so a content diff makes sense.
fn same_type(a: EntryKind, b: EntryKind) -> bool {
    let class = |k: EntryKind| match k {
        EntryKind::Blob | EntryKind::BlobExecutable => 0,
        EntryKind::Link => 1,
        EntryKind::Commit => 2,
        EntryKind::Tree => 3,
    };
    class(a) == class(b)
}

/// Object ids as the `index` lines of a [`Form`] show them: full, or
/// abbreviated as git abbreviates them (`core.abbrev`, else its "auto"
/// length from the number of packed objects, at least 7; longer where a
/// prefix is not unique in the object store; the null id as that many
/// zeros).
struct Ids<'r> {
    repo: &'r gix::Repository,
    full: bool,
    /// Binary files as `GIT binary patch` literals (`--binary`).
    binary: bool,
}

impl<'r> Ids<'r> {
    fn new(repo: &'r gix::Repository, form: Form) -> Ids<'r> {
        Ids {
            repo,
            full: form.full_index,
            binary: form.binary,
        }
    }

    /// `id` for an `index` line; `full` where the file's patch needs it
    /// (git writes the ids of a binary patch in full).
    fn show(&self, id: ObjectId, full: bool) -> String {
        if self.full || full {
            return id.to_string();
        }
        let len = self.auto_len().min(id.kind().len_in_hex());
        if id.is_null() {
            return "0".repeat(len);
        }
        // An object only in object memory (a workspace's new file) is
        // not in the store: its prefix of the default length is unique
        // there.
        match self
            .repo
            .find_object(id)
            .ok()
            .and_then(|o| o.id().shorten().ok())
        {
            Some(prefix) => prefix.to_string(),
            None => id.to_hex_with_len(len).to_string(),
        }
    }

    fn auto_len(&self) -> usize {
        let configured = self
            .repo
            .config_snapshot()
            .string("core.abbrev")
            .and_then(|v| {
                use gix::bstr::ByteSlice;
                v.to_str().ok().and_then(|v| v.trim().parse::<usize>().ok())
            });
        if let Some(n) = configured {
            return n.max(4);
        }
        let count = self.repo.objects.packed_object_count().unwrap_or(0);
        ((64 - count.leading_zeros()).div_ceil(2)).max(7) as usize
    }
}

fn render_change(
    repo: &gix::Repository,
    c: &PathChange,
    out: &mut Vec<u8>,
    ids: &Ids<'_>,
) -> Result<()> {
    let path = c.path.as_slice();
    match (c.old, c.new) {
        (Some((ok, oid)), Some((nk, nid))) if same_type(ok, nk) => {
            header(out, path);
            if ok != nk {
                let _ = writeln!(out, "old mode {}", mode(ok));
                let _ = writeln!(out, "new mode {}", mode(nk));
            }
            if oid != nid {
                let big = too_big(repo, ok, oid)? || too_big(repo, nk, nid)?;
                let texts = if big {
                    None
                } else {
                    Some((content(repo, ok, oid)?, content(repo, nk, nid)?))
                };
                // git writes a binary patch's ids in full (--binary).
                let full = match &texts {
                    Some((o, n)) => ids.binary && (is_binary(o) || is_binary(n)),
                    None => ids.binary,
                };
                let (o, n) = (ids.show(oid, full), ids.show(nid, full));
                if ok == nk {
                    let _ = writeln!(out, "index {o}..{n} {}", mode(nk));
                } else {
                    let _ = writeln!(out, "index {o}..{n}");
                }
                match texts {
                    None => by_id(out, path, true, true),
                    Some((old, new)) => body(out, path, Some(&old), Some(&new), ids.binary),
                }
            }
        }
        (Some(old), Some(new)) => {
            whole(repo, out, path, old, false, ids)?;
            whole(repo, out, path, new, true, ids)?;
        }
        (None, Some(new)) => whole(repo, out, path, new, true, ids)?,
        (Some(old), None) => whole(repo, out, path, old, false, ids)?,
        (None, None) => {}
    }
    Ok(())
}

/// A file that only one side has: added (`new` side) or deleted.
fn whole(
    repo: &gix::Repository,
    out: &mut Vec<u8>,
    path: &[u8],
    (kind, id): (EntryKind, ObjectId),
    added: bool,
    ids: &Ids<'_>,
) -> Result<()> {
    header(out, path);
    let big = too_big(repo, kind, id)?;
    let data = if big {
        Vec::new()
    } else {
        content(repo, kind, id)?
    };
    // git writes a binary patch's ids in full (--binary).
    let full = ids.binary && (big || is_binary(&data));
    let null = ids.show(ObjectId::null(id.kind()), full);
    let shown = ids.show(id, full);
    if added {
        let _ = writeln!(out, "new file mode {}", mode(kind));
        let _ = writeln!(out, "index {null}..{shown}");
    } else {
        let _ = writeln!(out, "deleted file mode {}", mode(kind));
        let _ = writeln!(out, "index {shown}..{null}");
    }
    if big {
        by_id(out, path, !added, added);
        return Ok(());
    }
    if !data.is_empty() {
        let (old, new) = if added {
            (None, Some(&data[..]))
        } else {
            (Some(&data[..]), None)
        };
        body(out, path, old, new, ids.binary);
    }
    Ok(())
}

/// A blob too big to be written into the patch: more than
/// [`crate::git::blob::STREAM_ABOVE`] bytes.
fn too_big(repo: &gix::Repository, kind: EntryKind, id: ObjectId) -> Result<bool> {
    if !matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable) {
        return Ok(false);
    }
    let size = crate::git::blob::size(repo, id)
        .map_err(|source| MergeError::PatchObject { id, source })?;
    Ok(size > crate::git::blob::STREAM_ABOVE)
}

/// The content part of a big blob's change: git's "Binary files ...
/// differ" line, without data. The full `index` line above names both
/// blobs, and `git apply` (with or without `--3way`) takes the new one from
/// the object store, where the proposal ref keeps it.
fn by_id(out: &mut Vec<u8>, path: &[u8], old: bool, new: bool) {
    out.extend_from_slice(b"Binary files ");
    if old {
        out.extend_from_slice(&quote_prefixed(b"a/", path));
    } else {
        out.extend_from_slice(b"/dev/null");
    }
    out.extend_from_slice(b" and ");
    if new {
        out.extend_from_slice(&quote_prefixed(b"b/", path));
    } else {
        out.extend_from_slice(b"/dev/null");
    }
    out.extend_from_slice(b" differ\n");
}

fn header(out: &mut Vec<u8>, path: &[u8]) {
    out.extend_from_slice(b"diff --git ");
    out.extend_from_slice(&quote_prefixed(b"a/", path));
    out.push(b' ');
    out.extend_from_slice(&quote_prefixed(b"b/", path));
    out.push(b'\n');
}

/// What git diffs for an entry: a blob's bytes, a symlink's target, a
/// submodule's "Subproject commit" line.
fn content(repo: &gix::Repository, kind: EntryKind, id: ObjectId) -> Result<Vec<u8>> {
    if kind == EntryKind::Commit {
        return Ok(format!("Subproject commit {id}\n").into_bytes());
    }
    let obj = repo
        .find_object(id)
        .map_err(|source| MergeError::PatchObject { id, source })?;
    Ok(obj.detach().data)
}

/// `prefix` + `path`, C-quoted as a whole the way git quotes names when
/// `core.quotePath` is true: control characters, `"`, `\`, DEL and bytes
/// of 0x80 and above need quoting; spaces do not.
pub fn quote_prefixed(prefix: &[u8], path: &[u8]) -> Vec<u8> {
    let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f;
    let mut out = Vec::with_capacity(prefix.len() + path.len() + 2);
    if !path.iter().any(|&b| needs(b)) {
        out.extend_from_slice(prefix);
        out.extend_from_slice(path);
        return out;
    }
    out.push(b'"');
    for &b in prefix.iter().chain(path) {
        match b {
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b if needs(b) => {
                let _ = write!(out, "\\{b:03o}");
            }
            b => out.push(b),
        }
    }
    out.push(b'"');
    out
}

/// git's diff colours, applied to plain patch text (see
/// [`paint_change`]).
mod paint;

/// The content part: text hunks or a binary patch.
mod body;
use body::*;

#[cfg(test)]
mod tests {
    use super::*;
    use gix::bstr::ByteSlice;

    #[test]
    fn base85_matches_git() {
        // git's encode_85 of "hello" (as used in binary patches).
        let mut out = Vec::new();
        encode_85(&mut out, b"\0\0\0\0");
        assert_eq!(out, b"00000");
        out.clear();
        encode_85(&mut out, &[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(out, b"|NsC0");
    }

    #[test]
    fn quoting_follows_git() {
        assert_eq!(quote_prefixed(b"a/", b"with space"), b"a/with space");
        assert_eq!(quote_prefixed(b"a/", b"tab\there"), b"\"a/tab\\there\"");
        assert_eq!(
            quote_prefixed(b"b/", b"caf\xc3\xa9"),
            b"\"b/caf\\303\\251\""
        );
        assert_eq!(quote_prefixed(b"a/", b"q\"b\\"), b"\"a/q\\\"b\\\\\"");
    }

    #[test]
    fn hunk_ranges_and_missing_newline() {
        let mut out = Vec::new();
        hunks(&mut out, b"", b"x");
        assert_eq!(
            out.to_str().unwrap(),
            "@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
        );
        out.clear();
        hunks(
            &mut out,
            b"1\n2\n3\n4\n5\n6\n7\n8\n",
            b"1\n2\n3\n4\nfive\n6\n7\n8\n",
        );
        assert_eq!(
            out.to_str().unwrap(),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }
}
