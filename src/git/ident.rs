//! The `ident` attribute on the way to the working tree, byte for byte as
//! git writes it (design §3.15 "The `ident` attribute"): `$Id$` becomes
//! `$Id: <blob id> $` (gix writes `$Id: <blob id>$`), an expanded id that
//! crept into a blob is expanded again, and only `ident` set (not
//! `ident=<value>`, which gix also expands) counts.
//!
//! Owns: the expansion (`expand`, git's `ident_to_worktree`), a smudge that
//! runs the rest of the filters (`eol`, `working-tree-encoding`, a filter
//! driver, in git's order) through gix with its own `ident` step turned
//! off (`Smudge`), and putting that right in a fresh checkout gix made
//! (`fix_checkout`, whose error is `IdentError`: the checkout or file, the
//! gix or I/O error as its cause).
//! Never: touches a file it did not find needing it, or any path outside
//! the checkout it is given (no symlink is followed at the end of one);
//! words a help line or decides an error code (`ops::explain` does).

use std::io::Write;
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::filter::plumbing::pipeline::convert::{to_worktree, ToWorktreeOutcome};

/// Why [`fix_checkout`] failed. The message is the `Display` followed by
/// the cause, as `ops::explain` words it.
#[derive(Debug, thiserror::Error)]
pub enum IdentError {
    /// The attributes, a blob or a filter of the checkout at `root`.
    #[error("cannot check out {}", root.display())]
    Git {
        root: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// The smudged bytes of a file of the checkout at `root` (a filter
    /// driver's output failing).
    #[error("cannot check out {}", root.display())]
    Smudge {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing a put-right file back.
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Whether `src` could hold anything `ident` expands (`$Id` starts each).
pub fn may_expand(src: &[u8]) -> bool {
    src.find(b"$Id").is_some()
}

/// git's `ident_to_worktree`: every `$Id$`, and every `$Id:...$` on one
/// line without a space before its last character, becomes `$Id: <id> $`
/// with `<id>` the blob id of all of `src`. `None` when nothing would
/// change.
pub fn expand(src: &[u8], hash: gix::hash::Kind) -> Option<Vec<u8>> {
    if !has_ident(src) {
        return None;
    }
    let id = gix::objs::compute_hash(hash, gix::objs::Kind::Blob, src).ok()?;
    let hex = id.to_string();
    let mut out = Vec::with_capacity(src.len() + hex.len() + 3);
    let mut rest = src;
    // Step 1: up to and including the next `$`.
    while let Some(dollar) = rest.find_byte(b'$') {
        out.extend_from_slice(&rest[..=dollar]);
        rest = &rest[dollar + 1..];
        // Step 2: `Id$` or `Id:...$`?
        if rest.len() < 3 || &rest[..2] != b"Id" {
            continue;
        }
        // Step 3: past `Id$`, or `Id:...$` when it is git's.
        match rest[2] {
            b'$' => rest = &rest[3..],
            b':' => {
                let Some(end) = rest[3..].find_byte(b'$').map(|e| e + 3) else {
                    // An incomplete keyword, and no `$` after it.
                    break;
                };
                if rest[3..end].contains(&b'\n') {
                    continue;
                }
                // A space before the one just ahead of the closing `$`:
                // another system's id, kept.
                if end > 4 && rest[4..end - 1].contains(&b' ') {
                    continue;
                }
                rest = &rest[end + 1..];
            }
            _ => continue,
        }
        // Step 4: the id.
        out.extend_from_slice(b"Id: ");
        out.extend_from_slice(hex.as_bytes());
        out.extend_from_slice(b" $");
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// git's `count_ident` > 0: a `$Id$`, or a `$Id:` closed by `$` on its line.
fn has_ident(src: &[u8]) -> bool {
    let mut rest = src;
    while let Some(at) = rest.find(b"$Id") {
        rest = &rest[at + 3..];
        match rest.first() {
            Some(b'$') => return true,
            Some(b':') => match rest[1..].find_byteset(b"$\n") {
                Some(i) if rest[1 + i] == b'$' => return true,
                Some(i) => rest = &rest[1 + i..],
                None => return false,
            },
            _ => {}
        }
    }
    false
}

/// The attributes gix's filters read, in its order, with `ident` in the
/// second place replaced by a name no attribute can have (so gix never
/// expands), and `ident` itself last, for us.
const ATTRS: [&str; 7] = [
    "crlf",
    "ident is ours",
    "filter",
    "eol",
    "text",
    "working-tree-encoding",
    "ident",
];

/// The worktree form of blobs as git writes it: `ident` here, the other
/// filters through gix (with their attributes from the same stack gix's
/// pipeline would use).
pub struct Smudge<'r> {
    repo: &'r gix::Repository,
    inner: gix::filter::plumbing::Pipeline,
    stack: gix::worktree::Stack,
    attrs: gix::attrs::search::Outcome,
}

impl<'r> Smudge<'r> {
    /// The same filters as `pipeline` (a copy: its own filter processes).
    pub fn new(pipeline: &gix::filter::Pipeline<'r>) -> Smudge<'r> {
        let repo = pipeline.repo;
        let (inner, stack) = pipeline.clone().into_parts();
        let mut attrs = gix::attrs::search::Outcome::default();
        attrs.initialize_with_selection(stack.attributes_collection(), ATTRS);
        Smudge {
            repo,
            inner,
            stack,
            attrs,
        }
    }

    /// Write `src`'s worktree form for the path `rela` into `out`.
    pub fn write(
        &mut self,
        src: &[u8],
        rela: &BStr,
        out: &mut dyn Write,
    ) -> std::result::Result<(), Failed> {
        let entry = self
            .stack
            .at_entry(rela, None, &self.repo.objects)
            .map_err(|e| Failed::Filter(gix::Error::from_error(e)))?;
        entry.matching_attributes(&mut self.attrs);
        // git expands only where `ident` is set (`ATTR_TRUE`).
        let ident = self
            .attrs
            .iter_selected()
            .nth(6)
            .is_some_and(|m| matches!(m.assignment.state, gix::attrs::StateRef::Set));
        let expanded = if ident {
            expand(src, self.repo.object_hash())
        } else {
            None
        };
        let src = expanded.as_deref().unwrap_or(src);
        let attrs = &self.attrs;
        let opts = to_worktree::Options {
            can_delay: gix::filter::plumbing::driver::apply::Delay::Forbid,
            ..Default::default()
        };
        let mut converted: ToWorktreeOutcome<'_, '_> = self
            .inner
            .convert_to_worktree(src, rela, &mut |_, a| a.clone_from(attrs), opts)
            .map_err(Failed::Filter)?;
        // Never delayed (`Delay::Forbid`): read at once.
        std::io::copy(&mut converted, out)
            .map(|_| ())
            .map_err(Failed::Write)
    }
}

/// Why [`Smudge::write`] failed: a filter (or its attributes), or the
/// writing (which may also be a filter driver's output failing).
#[derive(Debug)]
pub enum Failed {
    Filter(gix::Error),
    Write(std::io::Error),
}

/// Put right the files of a checkout gix just made of `index` in `root`
/// where `ident` applies (or gix's expansion does but git's does not),
/// rewriting each with git's bytes and giving its entry the new stat data.
/// Costs one attribute lookup per file only where an `ident` attribute is
/// named at all (in a `.gitattributes` of `index`, or in the attributes
/// outside the tree), and a blob read where it applies.
pub fn fix_checkout(
    repo: &gix::Repository,
    index: &mut gix::index::State,
    root: &Path,
) -> Result<(), IdentError> {
    use gix::index::entry::{Flags, Mode};
    let git = |source: gix::Error| IdentError::Git {
        root: root.to_path_buf(),
        source,
    };
    let stack = repo
        .attributes_only(
            index,
            gix::worktree::stack::state::attributes::Source::IdMapping,
        )
        .map_err(git)?
        .detach();
    let pipeline = gix::filter::Pipeline::new(repo, stack).map_err(git)?;
    if !named_anywhere(repo, index, &pipeline) {
        return Ok(());
    }
    let mut smudge = Smudge::new(&pipeline);
    let mut lookup = pipeline.into_parts().1;
    let mut out = lookup.selected_attribute_matches(["ident"]);
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for e in entries.iter_mut() {
        if e.stage_raw() != 0
            || e.flags.contains(Flags::SKIP_WORKTREE)
            || !matches!(e.mode, Mode::FILE | Mode::FILE_EXECUTABLE)
        {
            continue;
        }
        let rela = e.path_in(paths);
        let named = lookup
            .at_entry(rela, Some(e.mode), &repo.objects)
            .map(|p| {
                p.matching_attributes(&mut out);
                out.iter_selected()
                    .next()
                    .is_some_and(|m| m.assignment.state.is_set())
            })
            .map_err(|err| git(gix::Error::from_error(err)))?;
        if !named {
            continue;
        }
        let blob = repo.find_blob(e.id).map_err(git)?;
        if !may_expand(&blob.data) {
            continue;
        }
        let mut bytes = Vec::with_capacity(blob.data.len() + 64);
        smudge
            .write(&blob.data, rela, &mut bytes)
            .map_err(|f| match f {
                Failed::Filter(err) => git(err),
                Failed::Write(source) => IdentError::Smudge {
                    root: root.to_path_buf(),
                    source,
                },
            })?;
        let path = root.join(crate::sys::paths::to_os(rela));
        let io = |source: std::io::Error| IdentError::Write {
            path: path.clone(),
            source,
        };
        let file = rustix::fs::open(
            &path,
            rustix::fs::OFlags::WRONLY
                | rustix::fs::OFlags::TRUNC
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|err| io(err.into()))?;
        let mut file = std::fs::File::from(file);
        file.write_all(&bytes).map_err(io)?;
        let md = file.metadata().map_err(io)?;
        e.stat = crate::git::stat::of_metadata(&md);
    }
    Ok(())
}

/// Whether any attribute source of this checkout names `ident`: a
/// `.gitattributes` of `index`, or the attribute files outside the tree
/// (`info/attributes`, `core.attributesFile`, the system's), which the
/// stack has read once it stands at the root.
fn named_anywhere(
    repo: &gix::Repository,
    index: &gix::index::State,
    pipeline: &gix::filter::Pipeline<'_>,
) -> bool {
    let in_tree = index.entries().iter().any(|e| {
        let path = e.path(index);
        (path == ".gitattributes" || path.ends_with(b"/.gitattributes"))
            && repo
                .find_blob(e.id)
                .map(|b| b.data.find(b"ident").is_some())
                .unwrap_or(true)
    });
    if in_tree {
        return true;
    }
    let mut stack = pipeline.clone().into_parts().1;
    if stack.at_entry("x", None, &repo.objects).is_err() {
        return true;
    }
    let named = stack
        .attributes_collection()
        .iter()
        .any(|(name, _)| name == "ident");
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(src: &[u8]) -> String {
        gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, src)
            .unwrap()
            .to_string()
    }

    #[test]
    fn expands_as_git_does() {
        let k = gix::hash::Kind::Sha1;
        assert_eq!(expand(b"nothing\n", k), None);
        assert_eq!(expand(b"$Id\n$Id:\nx$\n", k), None);
        let src = b"a $Id$ b\n";
        assert_eq!(
            expand(src, k).unwrap(),
            format!("a $Id: {} $ b\n", hex(src)).into_bytes()
        );
        // Expanded ids that crept in are expanded again; another
        // system's (a space inside) is kept; `$Id$Id$` is one id and `Id$`.
        let src = b"$Id: old$ $Id: older $ $Id: Foreign Id $ $Id$Id$";
        let h = hex(src);
        assert_eq!(
            String::from_utf8(expand(src, k).unwrap()).unwrap(),
            format!("$Id: {h} $ $Id: {h} $ $Id: Foreign Id $ $Id: {h} $Id$")
        );
        // An incomplete keyword ends the expansion.
        let src = b"$Id$ $Id: open";
        assert_eq!(
            String::from_utf8(expand(src, k).unwrap()).unwrap(),
            format!("$Id: {} $ $Id: open", hex(src))
        );
    }
}
